"""Which catalog a command opens: flags, then a config file, then ``LAKETIDE_WAREHOUSE``.

A config file (TOML, or YAML when PyYAML is installed) holds ``warehouse``, ``metastore``, ``uri`` and a
``storage-options`` table passed to the filesystem (``endpoint_url``, ``key``, ``secret`` for S3).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from laketide.catalog import Catalog, load_catalog
from laketide.exceptions import InvalidOptionError

__all__ = ["catalog_from_args", "parse_pairs", "read_config"]

WAREHOUSE_ENV = "LAKETIDE_WAREHOUSE"
_KNOWN_KEYS = {"warehouse", "metastore", "uri", "storage-options", "storage_options"}


def parse_pairs(pairs: Sequence[str] | None, what: str) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; a pair without '=' names itself in the error."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidOptionError(f"{what} {pair!r} must look like key=value")
        out[key.strip()] = value.strip()
    return out


def read_config(path: str) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise InvalidOptionError(f"Config file {path} does not exist")
    text = p.read_text(encoding="utf-8")
    suffix = p.suffix.lower()
    try:
        if suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise InvalidOptionError(
                    f"Config file {path} is YAML, which needs PyYAML (pip install 'laketide[cli]')"
                ) from None
            data = yaml.safe_load(text)
        else:
            raise InvalidOptionError(f"Config file {path}: use a .toml, .yaml or .yml file")
    except (tomllib.TOMLDecodeError, ValueError) as e:
        if isinstance(e, InvalidOptionError):
            raise
        raise InvalidOptionError(f"Config file {path} is not valid {suffix[1:].upper()}: {e}") from None
    except Exception as e:  # yaml.YAMLError without importing yaml at module level
        raise InvalidOptionError(f"Config file {path} is not valid YAML: {e}".replace("\n", " ")) from None
    if not isinstance(data, Mapping):
        raise InvalidOptionError(f"Config file {path} must hold a table of keys (warehouse = ...)")
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        raise InvalidOptionError(f"Config file {path}: unknown keys {unknown}; known: {sorted(_KNOWN_KEYS)}")
    options = data.get("storage-options", data.get("storage_options", {})) or {}
    if not isinstance(options, Mapping):
        raise InvalidOptionError(f"Config file {path}: storage-options must be a table of key = value")
    return {**{k: data[k] for k in ("warehouse", "metastore", "uri") if k in data}, "storage_options": dict(options)}


def catalog_from_args(args: Any) -> Catalog:
    config = read_config(args.config) if args.config else {}
    warehouse = args.warehouse or config.get("warehouse") or os.environ.get(WAREHOUSE_ENV)
    if not warehouse:
        raise InvalidOptionError(
            f"No warehouse: pass --warehouse, --config FILE or set {WAREHOUSE_ENV}"
        )
    metastore = args.metastore or config.get("metastore") or "filesystem"
    options: dict[str, Any] = dict(config.get("storage_options", {}))
    options.update(parse_pairs(args.storage_option, "--storage-option"))
    uri = args.uri or config.get("uri")
    if uri is not None:
        if metastore == "filesystem":
            raise InvalidOptionError("--uri names a metastore service; the filesystem metastore takes none")
        options["uri"] = uri
    return load_catalog(str(warehouse), metastore=str(metastore), **options)
