"""Data source options: which catalog and table a Spark read or write addresses, and how.

Options are case-insensitive (Spark lowercases them). Catalog options are ``warehouse``, ``metastore`` and any
``catalog.<key>``; the table comes from ``load("db.t")`` / ``save("db.t")`` or the ``table`` option.

Every option is listed below with the operations that honour it; any other option is refused with an
InvalidOptionError naming it (an option laketide accepted and ignored would silently do the wrong thing).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from laketide.exceptions import InvalidOptionError, NoSuchTableError, ReadOnlyTableError

if TYPE_CHECKING:
    from laketide.catalog import Catalog
    from laketide.table.table import Table

__all__ = [
    "AUDIT_LOG",
    "Operation",
    "ROWKIND",
    "SUPPORTED_OPTIONS",
    "TableRef",
    "absolute_warehouse",
    "bool_option",
    "check_options",
    "int_option",
    "table_ref",
]

AUDIT_LOG = "audit_log"  # the change view of a table: its rows with a leading `rowkind` column
ROWKIND = "rowkind"

Operation = Literal["read", "stream read", "write", "stream write", "compact"]

# Where the table is (every operation).
_TARGET = ("path", "table", "warehouse", "metastore")  # and catalog.<key>
_TIME_TRAVEL = ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis", "scan.timestamp", "scan.version")
# Internal: set by laketide.spark.write / write_stream, never by users (see laketide.spark.writer).
ROUTED = "laketide.routed"
KEY_INDEX_BASE = "laketide.key-index-base"
# A cross-partition write whose tasks assign (ROUTED = assign): how many assigners, the partitions the rows'
# locations index (laketide.spark.cross_partition.cross_partition_keyed).
ASSIGN = "laketide.assign"
# The snapshot a Spark-evaluated UPDATE / MERGE read: its commit fails if the written buckets changed since.
READ_BASE_SNAPSHOT = "laketide.read-base-snapshot"
COMMIT_IDENTIFIER = "commit.identifier"
TEST_FAIL_AFTER_COMMIT = "laketide.test.fail-after-commit-batch"
# Internal: set by laketide.spark.read(native=True) on the Python part of a pinned read: the (partition, bucket)
# groups it reads (the others are read by Spark's Parquet reader; see laketide.spark.native_read).
GROUPS_OPTION = "laketide.read.groups"

SUPPORTED_OPTIONS: dict[Operation, frozenset[str]] = {
    # columns: projection; where: a laketide filter (partition / file pruning + exact filter), part of the
    # DataFrame like its columns; scan.*: time travel (the read is pinned to that snapshot).
    "read": frozenset({*_TARGET, "columns", "where", *_TIME_TRAVEL, GROUPS_OPTION}),
    "stream read": frozenset({
        *_TARGET, "columns", "scan.mode", "scan.snapshot-id", "scan.timestamp-millis", "consumer-id",
        "consumer.ignore-progress",
        "read.stream.maxfilespertrigger", "maxfilespertrigger", "read.stream.maxrowspertrigger",
        "maxrowspertrigger",
    }),
    # partitionOverwriteMode: static | dynamic (mode("overwrite") only); overwrite-partition: k=v,k2=v2 (the
    # static partition mode("overwrite") replaces; every row must belong to it); commit.user + commit.identifier:
    # an exactly-once commit (a replay with the same pair is not committed twice).
    "write": frozenset({
        *_TARGET, "partitionoverwritemode", "overwrite-partition", "commit.user", COMMIT_IDENTIFIER, ROUTED,
        KEY_INDEX_BASE, ASSIGN, READ_BASE_SNAPSHOT,
    }),
    # queryName: Spark's own (it names the query; Spark passes it to the sink as an option).
    "stream write": frozenset({*_TARGET, "checkpointlocation", "queryname", "commit.user", ROUTED,
                               TEST_FAIL_AFTER_COMMIT}),
    # laketide.spark.compact: the table only (what to compact are its keyword arguments).
    "compact": frozenset(_TARGET),
}


def check_options(options: Mapping[str, str], operation: Operation, *, table: str | None = None) -> None:
    """Refuse options ``operation`` does not honour (InvalidOptionError naming them and the table)."""
    allowed = SUPPORTED_OPTIONS[operation]
    unknown = sorted(k for k in options if k.lower() not in allowed and not k.lower().startswith("catalog."))
    if not unknown:
        return
    name = table or options.get("path") or options.get("table") or "?"
    elsewhere = {k: [op for op, keys in SUPPORTED_OPTIONS.items() if k.lower() in keys] for k in unknown}
    hints = "; ".join(f"{k!r} is a {' / '.join(ops)} option" for k, ops in elsewhere.items() if ops)
    raise InvalidOptionError(
        f"laketide: {operation} of table {name} does not take option(s) {unknown}"
        + (f" ({hints})" if hints else "")
        + f"; it takes {sorted(k for k in allowed if not k.startswith('laketide.'))} and catalog.<key>"
    )


def absolute_warehouse(warehouse: str) -> str:
    """A local warehouse as an absolute path (executors run elsewhere); URIs (``s3://``, ``file:/``) as given."""
    if "://" in warehouse or warehouse.startswith("file:"):
        return warehouse
    return os.path.abspath(os.path.expanduser(warehouse))


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRef:
    """Enough to open a table anywhere (driver or executor): picklable, no open handles."""

    warehouse: str
    metastore: str
    catalog_options: tuple[tuple[str, str], ...]
    database: str
    table: str
    system_table: str | None = None
    branch: str | None = None

    @property
    def name(self) -> str:
        """``db.t``, or ``db.t$branch_b`` for a branch (reads and writes go to the branch)."""
        base = f"{self.database}.{self.table}"
        return f"{base}$branch_{self.branch}" if self.branch else base

    @property
    def full_name(self) -> str:
        return f"{self.name}${self.system_table}" if self.system_table else self.name

    def catalog(self) -> Catalog:
        from laketide.catalog import load_catalog
        from laketide.fs import file_io_for

        options: dict[str, Any] = dict(self.catalog_options)
        # Opening a catalog creates its warehouse directory: a misspelled warehouse must not become an empty one.
        # A REST catalog's warehouse is a name the server resolves, not a path.
        if self.metastore != "rest" and not file_io_for(self.warehouse, **options).exists(self.warehouse):
            raise NoSuchTableError(
                f"Table {self.full_name} does not exist: warehouse {self.warehouse} does not exist"
            )
        return load_catalog(self.warehouse, metastore=self.metastore, **options)

    def data_table(self) -> Table:
        from laketide.table.table import Table

        t = self.catalog().table(self.name)
        assert isinstance(t, Table)
        return t

    def writable(self) -> TableRef:
        """This reference, refused (ReadOnlyTableError) if it names a system table."""
        if self.system_table is not None:
            raise ReadOnlyTableError(
                f"Table {self.full_name} is a system table: it is read-only; write to {self.name}"
            )
        return self


def table_ref(options: Mapping[str, str]) -> TableRef:
    from laketide.catalog import Identifier

    name = options.get("path") or options.get("table")
    if not name:
        raise InvalidOptionError("laketide: name the table, e.g. load('db.t') / save('db.t') or option('table', ...)")
    warehouse = options.get("warehouse")
    if not warehouse:
        raise InvalidOptionError(
            f"laketide: option 'warehouse' is required for table {name} (or pass warehouse= to laketide.spark.session)"
        )
    ident = Identifier.parse(name)
    metastore = options.get("metastore") or "filesystem"
    extra = tuple(sorted((k[len("catalog."):], v) for k, v in options.items() if k.lower().startswith("catalog.")))
    return TableRef(
        warehouse=warehouse if metastore == "rest" else absolute_warehouse(warehouse), metastore=metastore,
        catalog_options=extra, database=ident.database, table=ident.table,
        system_table=ident.system_table.lower() if ident.system_table else None, branch=ident.branch,
    )


def refuse_time_travel(options: Mapping[str, str], ref: TableRef) -> None:
    """Writes go to the latest snapshot: a time-travel reference (scan.snapshot-id ...) is read-only."""
    given = [k for k in _TIME_TRAVEL if options.get(k) not in (None, "")]
    if given:
        raise ReadOnlyTableError(
            f"Table {ref.full_name}: {given} pin a snapshot for reading; a time-travel reference is read-only "
            f"(writes always go on top of the latest snapshot)"
        )


def int_option(options: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        raw = options.get(name)
        if raw is not None and str(raw).strip() != "":
            try:
                return int(raw)
            except ValueError as e:
                raise InvalidOptionError(f"laketide: option {name!r} must be an integer, got {raw!r}") from e
    return None


def bool_option(options: Mapping[str, str], name: str, *, default: bool = False) -> bool:
    raw = options.get(name)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise InvalidOptionError(f"laketide: option {name!r} must be true or false, got {raw!r}")
    return value == "true"


def lowered(options: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {k.lower(): v for k, v in options}


def encode_groups(groups: Sequence[tuple[bytes, int]]) -> str:
    """(partition bytes, bucket) groups as an option value: ``hex:bucket;hex:bucket``."""
    return ";".join(f"{partition.hex()}:{bucket}" for partition, bucket in groups)


def decode_groups(value: str, *, table: str) -> frozenset[tuple[bytes, int]]:
    out = set()
    for item in filter(None, value.split(";")):
        hexed, _, bucket = item.partition(":")
        try:
            out.add((bytes.fromhex(hexed), int(bucket)))
        except ValueError:
            raise InvalidOptionError(f"laketide: table {table}: option {GROUPS_OPTION} is internal; "
                                     f"{item!r} is not a group laketide wrote") from None
    return frozenset(out)
