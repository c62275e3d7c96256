"""The Spark-native write path: Spark's own Parquet writer encodes the data files, rows never enter Python.

``laketide.spark.write(..., native=True)`` takes this path for the tables whose files Spark can write as
laketide's writer would: same columns, types, required-ness, field ids and timestamp unit, same metadata
(``native_write_blocker`` names why not otherwise). It is opt-in: measured on local[2] (bench/spark_bench.py) it is
slower than the Python writer, because Spark's row-wise shuffle sort and the two windows below cost more than
Arrow's vectorized sort and pyarrow's encode in the Python workers. The steps:

1. the bucket of each row is computed in the JVM (laketide.spark.jvm_bucket; else a scalar Arrow UDF over the
   bucket-key columns only, see ``with_buckets``), rows are hash-partitioned by (partition, bucket);
2. primary-key tables: one sort of each (partition, bucket) by key and input order feeds two windows: the last
   row of each key is kept (the deduplicate engine's result within one write: level-0 files hold one row per key)
   and the rows are numbered from above every sequence number of the table's live files; the key-value layout
   (``_KEY_<k>``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, value columns, Paimon's field ids) is a projection;
3. Spark writes Parquet (``partitionBy`` the bucket and aliases of the partition columns, so every file holds
   one (partition, bucket) and keeps its partition columns) into a staging directory inside the table directory,
   with the table's codec, field ids and timestamp unit;
4. each file is described from its Parquet footer (``FileStore.describe_written_file_from_footer``: the
   row-group statistics where they equal laketide's own stats; read back are only float columns, bounds a row
   group left out, and the first / last row's key and partition) — by the driver in local mode, else by small
   Python tasks next to the data; the driver renames each file into its bucket directory under a Paimon
   data-file name and commits everything as one snapshot through the normal commit (conflict checks, the
   (commit user, identifier) pair of an exactly-once write).

A failed Spark job leaves no snapshot: Spark removes its task output, the driver deletes the staging directory,
and files renamed before a failed commit are deleted (or, if the driver dies, stay orphans in bucket directories
that ``remove_orphan_files`` removes). Renames are cheap on local file systems and HDFS; on object stores they are
copies, so tables there keep the Python path.

Paimon: paimon-spark's SparkWrite (Spark writes rows; Paimon's writers encode them) is the other design; here the
encode is Spark's and only the metadata is laketide's.
"""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.commit_message import CommitMessage, WriteOrigin
from laketide.options import ChangelogProducer, MergeEngine
from laketide.spark.options import TableRef
from laketide.spark.types import spark_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["native_write_blocker", "native_write", "NATIVE_CODECS"]

BUCKET = "__laketide_bucket"
ORDER = "__laketide_order"
NEXT_KEY = "__laketide_next_key"
PART_PREFIX = "__laketide_p"
# Table codec -> Spark's Parquet codec name (both name the same Parquet compression codec).
NATIVE_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "none": "uncompressed",
                 "uncompressed": "uncompressed"}
_KEY_TYPES = ("IntegerType", "LongType", "ShortType", "ByteType", "StringType", "DateType", "BooleanType")
_UNTRUNCATED = 2**31 - 1  # parquet-mr's Integer.MAX_VALUE: statistics are not truncated
_PLAIN_TYPES = _KEY_TYPES + ("FloatType", "DoubleType", "BinaryType", "TimestampNTZType", "TimestampType")


def native_write_blocker(df: DataFrame, table: Any, *, mode: str, options: Mapping[str, str]) -> str | None:
    """Why ``df`` cannot be written into ``table`` by Spark's Parquet writer (None: it can, exactly)."""
    from laketide.spark.types import spark_schema

    store = table.store
    opts = store.options
    if mode != "append":
        return "only appends take the native path (overwrites use the Python writer)"
    if opts.file_format != "parquet":
        return f"file.format is {opts.file_format}"
    if "://" in table.path.replace("file://", "", 1):
        return "the table is not on a local file system (renames on object stores are copies)"
    if NATIVE_CODECS.get(opts.file_compression) is None:
        return f"file.compression {opts.file_compression} has no Spark Parquet codec of the same bytes"
    if store.bucket_mode not in ("fixed", "unaware"):
        return f"bucket mode {store.bucket_mode} assigns buckets with the hash index"
    raw = store.schema.options
    if any(k.startswith("file-index.") for k in raw) or any(k.startswith("data-file.external-paths") for k in raw):
        return "file indexes / external data paths are written by laketide's writer"
    if opts.deletion_vectors_enabled:
        return "deletion-vectors tables"
    if table.primary_keys:
        if opts.merge_engine is not MergeEngine.DEDUPLICATE:
            return f"merge-engine {opts.merge_engine} merges rows in laketide's write buffer"
        if opts.changelog_producer is not ChangelogProducer.NONE:
            return f"changelog-producer {opts.changelog_producer}"
        if opts.sequence_field or opts.rowkind_field or opts.data_file_thin_mode:
            return "sequence.field / rowkind.field / data-file.thin-mode"
        if opts.full_compaction_delta_commits is not None:
            return "full-compaction.delta-commits compacts in laketide's writer tasks"
    if any(k.lower() in ("overwrite-partition", "partitionoverwritemode") for k in options):
        return "overwrite options"
    want = spark_schema(table.arrow_schema)
    got = {f.name: f.dataType for f in df.schema.fields}
    if set(got) != set(want.fieldNames()) or len(got) != len(df.schema.fields):
        return "the DataFrame's columns differ from the table's (the Python writer conforms them)"
    units = set()
    for f in want.fields:
        kind = type(f.dataType).__name__
        if got[f.name] != f.dataType:
            return f"column {f.name} is {got[f.name].simpleString()}, the table's is {f.dataType.simpleString()}"
        if kind not in _PLAIN_TYPES:
            return f"column {f.name} of type {f.dataType.simpleString()}"
        if kind.startswith("Timestamp"):
            unit = table.arrow_schema.field(f.name).type.unit
            if kind == "TimestampNTZType" and unit == "ms":  # outputTimestampType covers zoned timestamps only
                return f"column {f.name} is TIMESTAMP(3) without time zone (Spark writes it in microseconds)"
            units.add(unit)
    if units - {"ms", "us"} or len(units) > 1:
        return f"timestamp units {sorted(units)} (Spark writes one of millis / micros per job)"
    for k in table.primary_keys:
        if type(got[k]).__name__ not in _KEY_TYPES:
            return f"primary key {k} of type {got[k].simpleString()} (Spark's ordering may differ from Paimon's)"
    return None


def native_write(df: DataFrame, ref: TableRef, table: Any, *, num_tasks: int | None,
                 commit_key: tuple[str, int] | None = None) -> None:
    """Write ``df`` (checked by ``native_write_blocker``) into ``table`` as one snapshot."""
    from laketide.spark.writer import committed_before, compact_after_commit, _TaskPlan

    if commit_key is not None and committed_before(table, *commit_key):
        return  # the retry of a write that already landed: nothing to write
    latest = table.snapshot_manager.latest_snapshot()
    restored = [] if latest is None else table.plan_to_restore(latest)
    # Above every live sequence number of the table, so above each bucket's (as its writers restore them).
    next_seq = max((e.file.max_sequence_number for e in restored), default=-1) + 1
    base_seq = next_seq if table.primary_keys else 0
    staging = _local(table.store.path_factory.new_staging_dir())
    try:
        _spark_write(df, table, staging, base_seq=base_seq, num_tasks=num_tasks)
        described = _describe(df.sparkSession, ref, staging)
        if not described:
            return  # no rows: no snapshot
        messages = _adopt(table, described, base_seq=0 if table.primary_keys else next_seq,
                          base_snapshot_id=None if latest is None else latest.id)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    try:
        if commit_key is None:
            table.commit(messages)
        elif committed_before(table, *commit_key):
            table.abort(messages)
            return
        else:
            table.commit(messages, commit_user=commit_key[0], commit_identifier=commit_key[1])
    except BaseException:
        table.abort(messages)  # files of a failed commit go; a committed snapshot never names them
        raise
    if _sorted_runs_reach_trigger(table, restored, messages):
        compact_after_commit(table, _TaskPlan(ref=ref), messages)


def _sorted_runs_reach_trigger(table: Any, restored: Sequence[Any], messages: Sequence[CommitMessage]) -> bool:
    """Whether a bucket this write added a level-0 run to now has ``num-sorted-run.compaction-trigger`` runs: then
    compact as the table's own writers would (fewer runs never need it: reads merge them)."""
    if not table.primary_keys or table.options.write_only:
        return False
    touched = {(m.partition, m.bucket): len(m.new_files) for m in messages}
    level0: dict[tuple[bytes, int], int] = dict.fromkeys(touched, 0)
    levels: dict[tuple[bytes, int], set[int]] = {k: set() for k in touched}
    for e in restored:
        key = (e.partition, e.bucket)
        if key in touched:
            if e.file.level == 0:
                level0[key] += 1
            else:
                levels[key].add(e.file.level)
    trigger = table.options.num_sorted_run_compaction_trigger
    return any(level0[k] + len(levels[k]) + touched[k] >= trigger for k in touched)


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def native_frame(df: DataFrame, table: Any, *, base_seq: int, num_tasks: int | None) -> tuple[DataFrame, list[str]]:
    """``df`` as the rows of the table's data files (key-value layout for primary-key tables, with field ids),
    sorted within (partition, bucket); and the columns to ``partitionBy`` (partition aliases, bucket)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    store = table.store
    router = store.bucket_router()
    writer = store.new_write()  # its layouts (and its refusal of options laketide cannot honour)
    layout = writer.kv_schema if table.primary_keys else writer.arrow_schema
    part_keys = list(table.partition_keys)
    keys = list(store.schema.trimmed_primary_keys) if table.primary_keys else []
    spark = df.sparkSession
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
    rows = df.select(*[_not_null(spark_column(f.name), f.name, table) if not f.nullable else spark_column(f.name)
                       for f in table.arrow_schema])
    if keys:
        rows = rows.withColumn(ORDER, F.monotonically_increasing_id())  # input order: the last row of a key wins
    if router.mode == "fixed":
        from laketide.spark.jvm_bucket import jvm_bucket_column

        bucket = jvm_bucket_column(rows, router.key_columns, [store.schema.field(k).type for k in router.key_columns],
                                   router.num_buckets)
        if bucket is None:  # no Java UDF for these key types (or no JDK): the same hash in Python
            make_udf: Any = arrow_udf
            bucket = make_udf(router.buckets, IntegerType())(*[spark_column(k) for k in router.key_columns])
        rows = rows.withColumn(BUCKET, bucket)
        tasks = num_tasks or (router.num_buckets if not part_keys else max(shuffle, 1))
        if not part_keys and tasks == router.num_buckets:
            rows = rows.repartitionById(tasks, BUCKET)  # bucket b is task b: no two buckets share a task
        else:
            # Hash of (partition, bucket): the windows below and the file writer need no second shuffle.
            rows = rows.repartition(tasks, *[spark_column(p) for p in part_keys], spark_column(BUCKET))
    else:
        rows = rows.withColumn(BUCKET, F.lit(0))
        if num_tasks is not None:
            rows = rows.repartition(num_tasks)
    if keys:
        # One sort of each (partition, bucket) by (key, input order) serves both windows (they ask for the same
        # ordering, so Spark sorts once): a row is its key's last when the next row has another key (keys are
        # never null, so a null lead means no next row); the survivors are numbered in key order.
        group = [spark_column(c) for c in (*part_keys, BUCKET)]
        key = F.struct(*[spark_column(k) for k in keys])
        ordered = Window.partitionBy(*group).orderBy(*[spark_column(k) for k in keys], spark_column(ORDER))
        rows = rows.withColumn(NEXT_KEY, F.lead(key).over(ordered))
        rows = rows.where(F.col(NEXT_KEY).isNull() | (F.col(NEXT_KEY) != key)).drop(NEXT_KEY)
        rows = rows.withColumn("_SEQUENCE_NUMBER", F.row_number().over(ordered).cast("bigint") + F.lit(base_seq - 1))
        rows = rows.withColumn("_VALUE_KIND", F.lit(0).cast("tinyint"))
    aliases = [f"{PART_PREFIX}{i}" for i in range(len(part_keys))]
    out = []
    for field in layout:
        fid = (field.metadata or {}).get(b"PARQUET:field_id")
        source = field.name[len("_KEY_"):] if field.name.startswith("_KEY_") and keys else field.name
        meta = {"parquet.field.id": int(fid)} if fid is not None else {}
        out.append(spark_column(source).alias(field.name, metadata=meta))
    out += [spark_column(p).alias(a) for p, a in zip(part_keys, aliases)] + [spark_column(BUCKET)]
    rows = rows.select(*out).sortWithinPartitions(*aliases, BUCKET, *[spark_column(f"_KEY_{k}") for k in keys])
    return rows, [*aliases, BUCKET]


def _spark_write(df: DataFrame, table: Any, staging: str, *, base_seq: int, num_tasks: int | None) -> None:
    store = table.store
    spark = df.sparkSession
    rows, partition_by = native_frame(df, table, base_seq=base_seq, num_tasks=num_tasks)
    codec = NATIVE_CODECS[store.options.file_compression]
    units = {f.type.unit for f in table.arrow_schema if hasattr(f.type, "unit") and f.type.unit in ("ms", "us")}
    confs = {"spark.sql.parquet.fieldId.write.enabled": "true",
             "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS" if units == {"ms"} else "TIMESTAMP_MICROS"}
    saved = {k: spark.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    try:
        w = rows.write.mode("errorifexists").partitionBy(*partition_by).option("compression", codec)
        # Untruncated footer bounds (parquet-mr's default, pinned against a session setting): the describe step
        # takes min / max from the footer as exact values.
        w = w.option("parquet.statistics.truncate.length", str(_UNTRUNCATED))
        if codec == "zstd":
            w = w.option("parquet.compression.codec.zstd.level", str(store.options.file_compression_zstd_level))
        w.parquet(staging)
    finally:
        for k, old in saved.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def _not_null(column: Any, name: str, table: Any) -> Any:
    """``column`` declared NOT NULL to Spark (so its Parquet column is ``required``, as laketide writes it); a
    null fails the job with a message naming the table and column, as the Python writer refuses it."""
    from pyspark.sql import functions as F  # noqa: N812

    dtype = dict((f.name, f.dataType) for f in df_schema_of(table).fields)[name]
    fail = F.raise_error(F.lit(f"laketide: column {name} of table {table.name} is NOT NULL, the DataFrame has a "
                               f"null in it; nothing was written")).cast(dtype)
    return F.coalesce(column, fail, F.lit(_ZERO[type(dtype).__name__]).cast(dtype)).alias(name)


def df_schema_of(table: Any) -> Any:
    from laketide.spark.types import spark_schema

    return spark_schema(table.arrow_schema)


# A never-used non-null literal per type: it only makes Spark see the column as NOT NULL.
_ZERO: dict[str, Any] = {
    "IntegerType": 0, "LongType": 0, "ShortType": 0, "ByteType": 0, "StringType": "", "BooleanType": False,
    "FloatType": 0.0, "DoubleType": 0.0, "BinaryType": bytearray(), "DateType": datetime.date(1970, 1, 1),
    "TimestampNTZType": datetime.datetime(1970, 1, 1), "TimestampType": datetime.datetime(1970, 1, 1),
}


def _staged_files(staging: str) -> list[tuple[str, int]]:
    """(path, bucket) of every Parquet file Spark committed under ``staging``."""
    out = []
    for root, dirs, files in os.walk(staging):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_temporary"))]
        bucket_dir = os.path.basename(root)
        if not bucket_dir.startswith(f"{BUCKET}="):
            continue
        bucket = int(bucket_dir.split("=", 1)[1])
        out += [(os.path.join(root, f), bucket) for f in files if f.endswith(".parquet") and not f.startswith(".")]
    return sorted(out)


def _describe_in_driver(spark: Any) -> bool:
    """Whether the driver describes the staged files itself: in local mode it shares the executors' machine and
    cores, and a footer costs milliseconds — less than a Spark job of Python tasks (worker start, table load)."""
    return str(spark.sparkContext.master).startswith("local")


def _describe(spark: Any, ref: TableRef, staging: str) -> list[tuple[Any, int]]:
    """Each staged file's DescribedFile, from its footer: in the driver's threads in local mode, else by Python
    tasks next to the data (one file per task)."""
    staged = _staged_files(staging)
    if not staged:
        return []
    if _describe_in_driver(spark):
        store = ref.data_table().store
        threads = min(len(staged), os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=threads) as pool:  # pyarrow reads and decodes without the GIL
            metas = list(pool.map(lambda item: store.describe_written_file_from_footer(item[0]), staged))
        return [(m, bucket) for m, (_, bucket) in zip(metas, staged, strict=True)]

    def describe(item: tuple[str, int]) -> tuple[Any, int]:
        path, bucket = item
        return ref.data_table().store.describe_written_file_from_footer(path), bucket

    rdd = spark.sparkContext.parallelize(staged, len(staged))
    return list(rdd.map(describe).collect())


def _adopt(table: Any, described: Sequence[tuple[Any, int]], *, base_seq: int,
           base_snapshot_id: int | None) -> list[CommitMessage]:
    """Move the described files into their bucket directories under Paimon names; their commit messages."""
    store = table.store
    factory = store.path_factory
    names = factory.new_file_names()
    part_types = list(store.partition_types)
    total = store.options.bucket if store.options.bucket > 0 else 0
    origin = WriteOrigin(table_path=store.table_path, schema_id=store.schema.id,
                         schema_time_ms=store.schema.time_millis, base_snapshot_id=base_snapshot_id)
    grouped: dict[tuple[bytes, int], list[Any]] = {}
    next_seq: dict[tuple[bytes, int], int] = {}
    moved: list[str] = []
    try:
        for d, bucket in described:
            part = serialize_binary_row(list(d.partition_values), part_types)
            bucket_dir = factory.bucket_dir_of(d.partition_values, bucket)
            name = names.new_data_file_name("parquet")
            store.file_io.mkdirs(bucket_dir)
            target = f"{bucket_dir}/{name}"
            if not store.file_io.rename(d.path, target):
                raise OSError(f"could not move {d.path} to {target}")
            moved.append(target)
            meta = replace(d.meta, file_name=name)
            if not table.primary_keys:  # append rows are numbered per bucket in file order
                first = next_seq.get((part, bucket), base_seq)
                meta = replace(meta, min_sequence_number=first, max_sequence_number=first + meta.row_count - 1)
                next_seq[(part, bucket)] = first + meta.row_count
            grouped.setdefault((part, bucket), []).append(meta)
    except BaseException:
        for p in moved:
            store.file_io.delete_quietly(p)
        raise
    return [CommitMessage(partition=part, bucket=bucket, total_buckets=total, new_files=tuple(files), origin=origin)
            for (part, bucket), files in grouped.items()]
