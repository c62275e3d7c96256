"""Functions other processes run against a shared catalog (spawned: they open the catalog from its spec)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def create_table(spec: dict[str, Any], name: str, tag: str, barrier: Any) -> str:
    """Create ``name`` with a column named after ``tag`` once both processes are ready; the outcome's name."""
    import laketide

    catalog = laketide.load_catalog(**spec)
    schema = SCHEMA.append(pa.field(f"from_{tag}", pa.int32()))
    barrier.wait()
    try:
        catalog.create_table(name, schema)
    except Exception as e:  # noqa: BLE001 - the type is the answer
        return type(e).__name__
    return "created"


def create_database(spec: dict[str, Any], name: str, barrier: Any) -> str:
    import laketide

    catalog = laketide.load_catalog(**spec)
    barrier.wait()
    try:
        catalog.create_database(name)
    except Exception as e:  # noqa: BLE001 - the type is the answer
        return type(e).__name__
    return "created"


class NoAtomicCreateIO:
    """Factory of a local FileIO without write-if-absent (an object store without conditional puts): snapshot
    publishing is safe only under the catalog lock."""

    @staticmethod
    def make() -> Any:
        from laketide.exceptions import UnsupportedFeatureError
        from laketide.fs.local import LocalFileIO

        class _NoAtomic(LocalFileIO):
            def try_write_atomic(self, path: str, data: bytes) -> bool:
                raise UnsupportedFeatureError(f"no atomic write-if-absent for {path}")

        return _NoAtomic()


def commit_many(spec: dict[str, Any], name: str, writer: int, commits: int, barrier: Any) -> int:
    """``commits`` single-row appends into ``name`` through the catalog (its lock), on a non-atomic store."""
    import laketide

    catalog = laketide.load_catalog(**spec, file_io=NoAtomicCreateIO.make())
    table = catalog.table(name)
    barrier.wait()
    for i in range(commits):
        table.write(pa.table({"id": [writer * 100_000 + i], "v": [f"w{writer}"]}, schema=SCHEMA))
    return commits


def add_columns(spec: dict[str, Any], name: str, tag: str, count: int, barrier: Any) -> list[str]:
    """``count`` alters of ``name``, each adding one column ``<tag>_<i>``; the outcome of each (once both processes
    are ready)."""
    import laketide
    from laketide.schema.changes import AddColumn

    catalog = laketide.load_catalog(**spec)
    barrier.wait()
    outcomes = []
    for i in range(count):
        try:
            catalog.alter_table(name, AddColumn(name=f"{tag}_{i}", type="INT"))
        except Exception as e:  # noqa: BLE001 - the type is the answer
            outcomes.append(type(e).__name__)
        else:
            outcomes.append("altered")
    return outcomes
