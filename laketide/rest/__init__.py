"""Paimon's REST catalog API: the server (``laketide serve`` / ``python -m laketide.rest``); needs the ``rest``
extra. The laketide client is ``load_catalog(..., metastore="rest")`` (laketide.catalog.rest)."""
