"""The DataFrame-level API: write, read, stream and expose laketide tables as Spark views.

    laketide.spark.write(df, "db.t", warehouse=wh, mode="append")
    laketide.spark.read(spark, "db.t", warehouse=wh, where="dt = '2026-11-21'", snapshot_id=3)
    laketide.spark.write_stream(df, "db.t", warehouse=wh, checkpoint=cp)
    laketide.spark.read_stream(spark, "db.t", warehouse=wh, scan_mode="latest")
    laketide.spark.register_views(spark, warehouse=wh)        # spark.sql("SELECT * FROM `db.t`")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from laketide.spark.options import AUDIT_LOG
from laketide.spark.writer import BUCKET_COLUMN, KEY_INDEX_BASE, key_index_option
from laketide.write.bucket_assigner import dynamic_bucket_mode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

__all__ = ["read", "read_stream", "register_views", "sql", "with_buckets", "write", "write_stream"]

WriteMode = Literal["append", "overwrite"]


def _options(warehouse: str | None, options: Mapping[str, Any] | None) -> dict[str, str]:
    out = {k: str(v) for k, v in (options or {}).items()}
    if warehouse is not None:
        out["warehouse"] = warehouse
    return out


def _table(name: str, warehouse: str | None, options: Mapping[str, str]) -> Any:
    from laketide.spark.options import table_ref

    opts = dict(options)
    opts["path"] = name
    if warehouse is None and "warehouse" not in opts:
        from laketide.spark.session import _registered_warehouse

        wh = _registered_warehouse()
        if wh is not None:
            opts["warehouse"] = wh
    return table_ref(opts).data_table()


def with_buckets(df: DataFrame, table: Any, *, num_tasks: int | None = None) -> DataFrame:
    """``df`` with each row's bucket (Java's hash, vectorized), repartitioned so one task owns a bucket.

    The bucket is a scalar Arrow UDF over the bucket-key columns only: Spark ships just those to Python and back,
    not the whole row (measured as fast as the same murmur hash written as a Spark expression). Rows then go to
    their task by id (``repartitionById``), not by a second hash: bucket ``b`` of an unpartitioned table is task
    ``b``, so no two buckets share a task while another task idles.
    """
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    from laketide.meta.bucket import bucket_ids
    from laketide.types import to_arrow_type

    n = table.options.bucket
    part_keys = list(table.partition_keys)
    if n == -1 and table.primary_keys:  # dynamic buckets: assigner stage first (laketide.spark.writer)
        from laketide.spark.writer import with_dynamic_buckets

        return with_dynamic_buckets(df, table, num_tasks=num_tasks)
    if n <= 0:
        return df  # unaware-bucket append table: any task may write anywhere
    keys = list(table.schema.bucket_keys())
    key_types = [table.schema.field(k).type for k in keys]
    arrow_types = [to_arrow_type(t) for t in key_types]

    def bucket_of(*columns: pa.Array) -> pa.Array:
        cols = [c.cast(t) for c, t in zip(columns, arrow_types)]
        return pa.array(bucket_ids(pa.table(cols, names=keys), keys, key_types, n), pa.int32())

    make_udf: Any = arrow_udf  # its stubs know no variadic scalar functions
    bucketed = df.withColumn(BUCKET_COLUMN, make_udf(bucket_of, IntegerType())(*[df[k] for k in keys]))
    if num_tasks is None:
        shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
        num_tasks = n if not part_keys else max(shuffle, 1)
    if not part_keys:
        return bucketed.repartitionById(num_tasks, BUCKET_COLUMN)
    # (partition, bucket) -> one task: Spark's own hash of the partition values (in the JVM), then the bucket.
    task = F.pmod(F.hash(*part_keys).cast("bigint") * n + F.col(BUCKET_COLUMN), F.lit(num_tasks)).cast("int")
    return bucketed.repartitionById(num_tasks, task)


def write(
    df: DataFrame,
    name: str,
    *,
    warehouse: str | None = None,
    mode: WriteMode = "append",
    dynamic_partition_overwrite: bool = False,
    partition: Mapping[str, object] | None = None,
    num_tasks: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> None:
    """Write ``df`` into table ``name`` as one snapshot (``mode="overwrite"``: the whole table, the partitions
    ``df`` touches with ``dynamic_partition_overwrite``, or the static ``partition``)."""
    if mode not in ("append", "overwrite"):
        raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    opts = _options(warehouse, options)
    table = _table(name, warehouse, opts)
    if mode == "overwrite" and dynamic_partition_overwrite:
        opts["partitionOverwriteMode"] = "dynamic"
    if partition:
        opts["overwrite-partition"] = ",".join(f"{k}={v}" for k, v in partition.items())
    if dynamic_bucket_mode(table.schema) == "cross-partition":
        from laketide.spark.cross_partition import cross_partition_routed

        with cross_partition_routed(df, table, num_tasks=num_tasks) as (routed, report):
            _save(routed, name, mode, {**opts, KEY_INDEX_BASE: key_index_option(report.key_index_base)})
        return
    _save(with_buckets(df, table, num_tasks=num_tasks), name, mode, opts)


def _save(df: DataFrame, name: str, mode: str, options: Mapping[str, str]) -> None:
    writer = df.write.format("laketide").mode(mode)
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(name)


def read(
    spark: SparkSession,
    name: str,
    *,
    warehouse: str | None = None,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    timestamp_ms: int | None = None,
    native: bool | None = None,
    options: Mapping[str, Any] | None = None,
) -> DataFrame:
    """Table ``name`` (or ``db.t$snapshots`` ...) as a DataFrame; ``where`` is Spark SQL, pushed down where it can.

    Append tables whose files need no laketide logic (local Parquet files of the read schema, no deletion
    vectors) may be read by Spark's own Parquet reader: ``native=True`` whenever possible, ``None`` (default)
    only for unpartitioned tables, ``False`` never. Spark knows nothing of laketide's partitions, so a filter
    applied later to a native read prunes row groups but not partitions: partitioned tables keep the laketide
    source by default.
    """
    opts = _options(warehouse, options)
    if native is not False and "$" not in name:
        df = _native_read(spark, name, warehouse=warehouse, options=opts, columns=columns,
                          snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms, partitioned=bool(native))
        if df is not None:
            return df.where(where) if where else df
    if columns is not None:
        opts["columns"] = ",".join(columns)
    for key, value in (("scan.snapshot-id", snapshot_id), ("scan.tag-name", tag),
                       ("scan.timestamp-millis", timestamp_ms)):
        if value is not None:
            opts[key] = str(value)
    df = spark.read.format("laketide").options(**opts).load(name)
    return df.where(where) if where else df


def _native_read(
    spark: SparkSession,
    name: str,
    *,
    warehouse: str | None,
    options: Mapping[str, str],
    columns: Sequence[str] | None,
    snapshot_id: int | None,
    tag: str | None,
    timestamp_ms: int | None,
    partitioned: bool,
) -> DataFrame | None:
    """The table through ``spark.read.parquet`` of its planned files, or None if a file needs laketide's reader."""
    from laketide.spark.types import spark_schema

    table = _table(name, warehouse, options)
    if table.primary_keys or table.options.file_format != "parquet" or "://" in table.path.replace("file://", ""):
        return None
    if table.partition_keys and not partitioned:
        return None
    # ``where`` is Spark SQL: Spark evaluates it (and prunes row groups with it); laketide's parser is not asked to
    # agree with Spark's on every expression, so files are planned unfiltered.
    scan = table.scan(snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    splits = scan.plan()
    schema_id = scan.schema.id
    for split in splits:
        if split.deletion_files is not None and any(d is not None for d in split.deletion_files):
            return None
        if any(f.schema_id != schema_id or not f.file_name.endswith(".parquet") for f in split.files):
            return None  # older schemas need laketide's evolution by field id
    paths = [p.replace("file://", "", 1) for split in splits for p in split.file_paths()]
    if not paths:
        return None
    # The declared schema is laketide's: no footer inference, and the same types as the Python source.
    df = spark.read.schema(spark_schema(scan.output_schema)).parquet(*paths)
    return df.select(*columns) if columns is not None else df


def read_stream(
    spark: SparkSession,
    name: str,
    *,
    warehouse: str | None = None,
    scan_mode: str | None = None,
    changes: bool | None = None,
    options: Mapping[str, Any] | None = None,
) -> DataFrame:
    """A streaming DataFrame of the table's new rows; ``changes`` (default: primary-key tables) reads the audit
    log, i.e. every change with its ``rowkind``."""
    opts = _options(warehouse, options)
    if scan_mode is not None:
        opts["scan.mode"] = scan_mode
    if changes is None:
        changes = bool(_table(name, warehouse, opts).primary_keys)
    source = f"{name}${AUDIT_LOG}" if changes and "$" not in name else name
    return spark.readStream.format("laketide").options(**opts).load(source)


def write_stream(
    df: DataFrame,
    name: str,
    *,
    warehouse: str | None = None,
    checkpoint: str,
    trigger: Mapping[str, Any] | None = None,
    query_name: str | None = None,
    num_tasks: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> StreamingQuery:
    """Start a streaming query appending ``df`` to table ``name`` exactly once per micro-batch.

    ``trigger`` is passed to ``DataStreamWriter.trigger`` (e.g. ``{"availableNow": True}``).
    """
    opts = _options(warehouse, options)
    table = _table(name, warehouse, opts)
    if dynamic_bucket_mode(table.schema) == "cross-partition":
        # The key lookup joins each micro-batch with the table as it is then: a batch write per micro-batch,
        # committed under (query, batch id) like the sink's commits.
        writer: DataStreamWriter = df.writeStream.foreachBatch(
            _cross_partition_batch(name, warehouse, opts, checkpoint=checkpoint, num_tasks=num_tasks)
        ).option("checkpointLocation", checkpoint)
    else:
        writer = (
            with_buckets(df, table, num_tasks=num_tasks).writeStream.format("laketide").outputMode("append")
            .option("checkpointLocation", checkpoint)
        )
        for k, v in opts.items():
            writer = writer.option(k, v)
    if trigger:
        writer = writer.trigger(**trigger)
    if query_name:
        writer = writer.queryName(query_name)
    return writer.start(name)


def _cross_partition_batch(name: str, warehouse: str | None, options: Mapping[str, str], *, checkpoint: str,
                           num_tasks: int | None) -> Any:
    from laketide.spark.cross_partition import cross_partition_routed
    from laketide.exceptions import CommitError
    from laketide.spark.options import int_option
    from laketide.spark.writer import COMMIT_IDENTIFIER, TEST_FAIL_AFTER_COMMIT, committed_before, query_commit_user

    fail_after = int_option(options, TEST_FAIL_AFTER_COMMIT)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        opts = dict(options)
        opts["commit.user"] = user = query_commit_user({"checkpointlocation": checkpoint, **options})
        opts[COMMIT_IDENTIFIER] = str(batch_id)
        table = _table(name, warehouse, opts)  # as it is now: earlier batches have committed
        if committed_before(table, user, batch_id):
            return  # Spark replays a batch whose commit landed before a crash
        with cross_partition_routed(batch, table, num_tasks=num_tasks) as (routed, report):
            _save(routed, name, "append", {**opts, KEY_INDEX_BASE: key_index_option(report.key_index_base)})
        if batch_id == fail_after:
            raise CommitError(f"test hook: failing after the laketide commit of batch {batch_id}")

    return write_batch


def register_views(
    spark: SparkSession,
    *,
    warehouse: str | None = None,
    databases: Sequence[str] | None = None,
    system_tables: Sequence[str] = ("snapshots", "schemas", "options", AUDIT_LOG),
    options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Register every table as a temporary view named ``db.t`` (and ``db.t$snapshots`` ...); returns the names.

    Spark's temporary views have one-part names, so query them quoted: ``SELECT * FROM `db.t```. A view is
    planned once (Spark caches a Python source's plan in the relation): call again, or use :func:`sql`, to see
    newer snapshots.
    """
    from laketide.catalog import load_catalog

    opts = _options(warehouse, options)
    wh = opts.get("warehouse")
    if wh is None:
        from laketide.spark.session import _registered_warehouse

        wh = _registered_warehouse()
        if wh is None:
            raise ValueError("register_views needs warehouse= (or laketide.spark.session(warehouse=...))")
        opts["warehouse"] = wh
    cat = load_catalog(wh, metastore=opts.get("metastore", "filesystem"))
    names = []
    for db in databases or cat.list_databases():
        for t in cat.list_tables(db):
            base = f"{db}.{t}"
            for view in (base, *(f"{base}${s}" for s in system_tables)):
                spark.read.format("laketide").options(**opts).load(view).createOrReplaceTempView(f"`{view}`")
                names.append(view)
    return names


def sql(
    spark: SparkSession,
    query: str,
    *,
    warehouse: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> DataFrame:
    """Run ``query`` after (re)registering fresh views of the tables it names (`db.t`, `db.t$snapshots` ...)."""
    import re

    from laketide.catalog import load_catalog

    opts = _options(warehouse, options)
    wh = opts.get("warehouse")
    if wh is None:
        from laketide.spark.session import _registered_warehouse

        wh = _registered_warehouse()
        if wh is None:
            raise ValueError("sql needs warehouse= (or laketide.spark.session(warehouse=...))")
        opts["warehouse"] = wh
    cat = load_catalog(wh, metastore=opts.get("metastore", "filesystem"))
    for name in sorted(set(re.findall(r"`([A-Za-z0-9_]+\.[A-Za-z0-9_]+(?:\$[A-Za-z_]+)?)`", query))):
        base = name.split("$", 1)[0]
        if cat.table_exists(base):
            spark.read.format("laketide").options(**opts).load(name).createOrReplaceTempView(f"`{name}`")
    return spark.sql(query)
