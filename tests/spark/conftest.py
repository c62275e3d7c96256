"""One real local SparkSession for the whole test session (2 cores), and per-test warehouses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.conftest import pypaimon  # noqa: F401 - the cross-check fixture, shared as is

pyspark = pytest.importorskip("pyspark", reason="pyspark is part of the test extra: pip install -e '.[test]'")

# PySpark 4.3 warns about pandas 3 on every Arrow hop; it is not ours to fix.
_PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.filterwarnings(_PANDAS_WARNING))


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    import os
    import warnings

    import laketide.spark

    # Spark's Python workers find installed data source packages (pyspark_laketide) on their path; an editable
    # install of this checkout does not put it there, so the workers get the checkout, as an install would.
    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        session = laketide.spark.session("local[2]", app_name="laketide-tests",
                                         conf={"spark.sql.shuffle.partitions": "4"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture()
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "warehouse")


@pytest.fixture()
def cat(wh: str):  # noqa: ANN201
    import laketide

    c = laketide.load_catalog(warehouse=wh)
    c.create_database("db", exist_ok=True)
    return c
