"""``laketide.spark.read(..., native=True)``: Spark's own Parquet reader for the splits that need no merge.

laketide plans the snapshot (partition / file pruning with ``where`` when laketide's filter syntax reads it); a
(partition, bucket) group whose files can be read as they are goes to ``spark.read.parquet``:

- append tables; primary-key buckets that are fully compacted (one file above level 0 with no retract rows);
  deletion-vector tables, whose deleted rows are removed with an anti-join on Spark's
  ``_metadata.file_name`` / ``_metadata.row_index``;
- files of an older schema when the columns map by field id as a plain rename or an added column (the added
  one is null); a changed type sends the group to laketide's reader, which casts as Paimon does;
- only local paths, or object-store URIs for which the Spark session has a Hadoop file system.

Every other group (level-0 files, several sorted runs, ORC / Avro files, types Spark reads differently such as
nanosecond timestamps or TIME) is read by the "laketide" Python source pinned to the same snapshot and restricted
to those groups, and the two parts are unioned by column name. Data files hold every table column (partition
columns included) under its name; the key-value system columns (``_KEY_*``, ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``) are simply not in the declared read schema.

The DataFrame is fixed when it is made: the planned snapshot's file list. It sees no later commit, and its files
may be gone once compaction and snapshot expiry remove them (the default reader re-plans at every action).

Paimon: paimon-spark PaimonScan with raw-convertible splits read by Spark's ParquetFileFormat
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.spark.options import GROUPS_OPTION, TableRef, encode_groups

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["NativePlan", "native_read", "plan_native"]


@dataclass(frozen=True, slots=True)
class FileSet:
    """Data files of one schema, read natively with that schema's column names."""

    schema_id: int
    paths: tuple[str, ...]
    deleted: tuple[tuple[str, Any], ...]  # (file name, deleted row positions as a numpy array) of files with DVs


@dataclass(frozen=True, slots=True)
class NativePlan:
    """What a native read does with the planned snapshot."""

    snapshot_id: int | None
    file_sets: tuple[FileSet, ...]
    python_groups: tuple[tuple[bytes, int], ...]  # (partition, bucket) groups laketide's reader must read

    @property
    def native_files(self) -> int:
        return sum(len(s.paths) for s in self.file_sets)


def _spark_readable(t: pa.DataType) -> bool:
    """Types Spark's Parquet reader returns with the values laketide's reader gives."""
    if pa.types.is_timestamp(t):
        return t.unit in ("ms", "us")  # nanoseconds: Spark has no such type
    if pa.types.is_time(t) or pa.types.is_duration(t) or pa.types.is_interval(t):
        return False
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _spark_readable(t.value_type)
    if pa.types.is_map(t):
        return _spark_readable(t.key_type) and _spark_readable(t.item_type)
    if pa.types.is_struct(t):
        return all(_spark_readable(t.field(i).type) for i in range(t.num_fields))
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_decimal(t) or pa.types.is_date32(t))


def _column_map(scan: Any, output: pa.Schema, schema_id: int, cache: dict[int, dict[str, str | None] | None]
                ) -> dict[str, str | None] | None:
    """Output column -> its name in files of ``schema_id`` (None: added since, read as null); None if a type
    changed (laketide's reader casts those)."""
    if schema_id in cache:
        return cache[schema_id]
    from laketide.types import to_arrow_schema

    current = scan.schema
    old = current if schema_id == current.id else scan.table.schema_manager.schema(schema_id)
    old_types = {f.name: f.type for f in to_arrow_schema(old.row_type)}
    mapping: dict[str, str | None] = {}
    for name in output.names:
        found = old.field_by_id(current.field(name).id)
        if found is not None and not old_types[found.name].equals(output.field(name).type):
            cache[schema_id] = None
            return None
        mapping[name] = None if found is None else found.name
    cache[schema_id] = mapping
    return mapping


def _file_columns(scan: Any, schema_id: int) -> list[str]:
    """The data columns files of ``schema_id`` hold (besides the key-value system columns)."""
    schema = scan.schema if schema_id == scan.schema.id else scan.table.schema_manager.schema(schema_id)
    return [f.name for f in schema.fields]


def _group_is_native(table: Any, splits: Sequence[Any]) -> bool:
    pk = bool(table.primary_keys)
    for split in splits:
        # Primary keys: no retract rows (laketide's reader drops them; Spark would not) and nothing at level 0;
        # without deletion vectors one sorted run (the file is its merged result), with them every older copy of a
        # key is marked deleted.
        if pk and (not split.raw_convertible
                   or any(f.level == 0 or f.delete_row_count != 0 for f in split.files)):
            return False
        for f in split.files:
            if not f.file_name.endswith(".parquet") or f.external_path is not None:
                return False
    return True


def plan_native(spark: SparkSession, table: Any, scan: Any) -> NativePlan:
    """Split the planned snapshot into natively read file sets and groups left to laketide's reader."""
    output = scan.output_schema
    snapshot_id = scan.snapshot.id if scan.snapshot is not None else None
    splits = scan.plan()
    groups: dict[tuple[bytes, int], list[Any]] = {}
    for s in splits:
        groups.setdefault((s.partition, s.bucket), []).append(s)
    everything_python = (
        not all(_spark_readable(f.type) for f in output)
        or table.options.scan_fallback_branch is not None
        or not _filesystem_known(spark, table.path)
    )
    cache: dict[int, dict[str, str | None] | None] = {}
    python: list[tuple[bytes, int]] = []
    by_schema: dict[int, tuple[list[str], list[tuple[str, Any]]]] = {}
    index_files: dict[str, bytes] = {}  # one read per DV index file
    for group, group_splits in sorted(groups.items()):
        if everything_python or not _group_is_native(table, group_splits) or any(
                _column_map(scan, output, f.schema_id, cache) is None for s in group_splits for f in s.files):
            python.append(group)
            continue
        for split in group_splits:
            dvs = split.deletion_files or (None,) * len(split.files)
            for f, path, dv in zip(split.files, split.file_paths(), dvs, strict=True):
                paths, deleted = by_schema.setdefault(f.schema_id, ([], []))
                paths.append(_uri(path))
                if dv is not None:
                    deleted.append((f.file_name, _deleted_positions(table, dv, index_files)))
    file_sets = tuple(FileSet(sid, tuple(p), tuple(d)) for sid, (p, d) in sorted(by_schema.items()))
    return NativePlan(snapshot_id, file_sets, tuple(python))


def _uri(path: str) -> str:
    # A scheme-less path is local: on a cluster Spark would resolve it against fs.defaultFS (HDFS) otherwise.
    return path if "://" in path else "file://" + path


def _filesystem_known(spark: SparkSession, path: str) -> bool:
    """Whether the session's Hadoop configuration has a file system for ``path``'s scheme (s3a, gs, abfs ...)."""
    if "://" not in path or path.startswith("file://"):
        return True
    scheme = path.split("://", 1)[0]
    jvm: Any = spark._jvm  # type: ignore[attr-defined]
    conf = spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf)
    except Exception:  # noqa: BLE001 - Py4J's error for "No FileSystem for scheme"
        return False
    return True


def _deleted_positions(table: Any, dv: Any, index_files: dict[str, bytes]) -> Any:
    import numpy as np

    from laketide.index.deletion_vectors import read_dv

    data = index_files.get(dv.path)
    if data is None:
        data = index_files[dv.path] = table.file_io.read_bytes(dv.path)
    return np.asarray(read_dv(data, dv.offset, dv.length, path=dv.path).positions(), dtype=np.int64)


def _read_file_set(spark: SparkSession, file_set: FileSet, output: pa.Schema,
                   mapping: Mapping[str, str | None], file_columns: Collection[str]) -> DataFrame:
    """The rows of ``file_set`` under the output schema: one reader call, and one ``toDF`` when names differ.

    Each output column is asked of the files under its name there; a column added since (no name there) under a
    name none of the files' columns (``file_columns``) has, which Spark's Parquet reader reads as nulls of the
    declared type. Names are never parsed (a dot or backtick in one is part of it). Few py4j round trips: a
    ``select`` of aliased columns costs ~20 per column (PySpark records each Column's call site) and was most of
    this read's fixed cost.
    """
    from laketide.spark.types import spark_schema

    read_names = _read_names(mapping, file_columns)
    stored = pa.schema([f.with_name(name) for f, name in zip(output, read_names, strict=True)])
    df = spark.read.schema(spark_schema(stored)).parquet(*file_set.paths)
    if file_set.deleted:
        df = _without_deleted(spark, df, file_set.deleted)
    return df if read_names == output.names else df.toDF(*output.names)


def _read_names(mapping: Mapping[str, str | None], file_columns: Collection[str]) -> list[str]:
    """Per output column, the name to read it by: its name in the files, or an unused one for an added column."""
    taken = {n.lower() for n in file_columns}  # Spark resolves Parquet columns case-insensitively by default
    return [_unused(f"__lt_added_{i}", taken) if src is None else src for i, src in enumerate(mapping.values())]


def _unused(name: str, taken: set[str]) -> str:
    """``name``, prefixed with ``_`` until no column in ``taken`` (lower-cased) has it; then taken too."""
    while name.lower() in taken:
        name = "_" + name
    taken.add(name.lower())
    return name


def _without_deleted(spark: SparkSession, df: DataFrame, deleted: Sequence[tuple[str, Any]]) -> DataFrame:
    """``df`` minus the rows the deletion vectors name: an anti-join on (file name, row index)."""
    import numpy as np
    from pyspark.sql import functions as F  # noqa: N812

    counts = np.array([len(rows) for _, rows in deleted], dtype=np.int64)
    files = pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(len(deleted), dtype=np.int32), counts)),
                                           pa.array([name for name, _ in deleted], pa.string()))
    positions = np.concatenate([rows for _, rows in deleted]) if deleted else np.array([], np.int64)
    # Names no column of the table has (Spark compares them case-insensitively).
    taken = {c.lower() for c in df.columns}
    file_col, row_col = _unused("__lt_file", taken), _unused("__lt_row", taken)
    gone = spark.createDataFrame(pa.table({file_col: files.cast(pa.string()), row_col: pa.array(positions)}))
    # selectExpr: one call, where F.col(...).alias(...) made ~25 py4j round trips per column
    tagged = df.selectExpr("*", f"_metadata.file_name AS {file_col}", f"_metadata.row_index AS {row_col}")
    kept = tagged.join(F.broadcast(gone), on=[file_col, row_col], how="left_anti")
    return kept.drop(file_col, row_col)


def native_read(
    spark: SparkSession,
    ref: TableRef,
    *,
    columns: Sequence[str] | None,
    where: str | None,
    snapshot_id: int | None,
    tag: str | None,
    timestamp_ms: int | None,
    options: Mapping[str, str],
) -> DataFrame | None:
    """The table at one snapshot, natively where possible; None for an empty table or one altered since its last
    commit (then the caller's plain Python source reads it).

    ``where`` (already known to parse as a laketide filter, or None) prunes the planned files; the caller still
    applies it in Spark.
    """
    table = ref.data_table()
    scan = table.scan(columns=list(columns) if columns is not None else None, where=where,
                      snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    if scan.snapshot is None:
        return None
    time_travel = snapshot_id is not None or tag is not None or timestamp_ms is not None
    if not time_travel and scan.schema.id != scan.snapshot.schema_id:
        # Altered since the last commit: a source pinned to that snapshot would show its older schema.
        return None
    plan = plan_native(spark, table, scan)
    output = scan.output_schema
    parts = [_read_file_set(spark, fs, output, _column_map(scan, output, fs.schema_id, {}) or {},
                            _file_columns(scan, fs.schema_id)) for fs in plan.file_sets]
    if plan.python_groups or not parts:  # nothing native: the whole read is the pinned Python source
        opts = dict(options)
        if tag is not None:
            opts["scan.tag-name"] = tag  # a tag's snapshot may be expired from the snapshot directory
        else:
            opts["scan.snapshot-id"] = str(plan.snapshot_id)
        opts[GROUPS_OPTION] = encode_groups(plan.python_groups)
        if columns is not None:
            opts["columns"] = ",".join(columns)
        if where is not None:
            opts["where"] = where
        parts.append(spark.read.format("laketide").options(**opts).load(ref.full_name))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df
