"""The DataFrame-level API: write, read, stream and expose laketide tables as Spark views.

    laketide.spark.write(df, "db.t", warehouse=wh, mode="append")
    laketide.spark.read(spark, "db.t", warehouse=wh, where="dt = '2026-11-21'", snapshot_id=3)
    laketide.spark.write_stream(df, "db.t", warehouse=wh, checkpoint=cp)
    laketide.spark.read_stream(spark, "db.t", warehouse=wh, scan_mode="latest")
    laketide.spark.register_views(spark, warehouse=wh)        # spark.sql("SELECT * FROM `db.t`")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, NoSuchTableError, TableAlreadyExistsError, UnsupportedFeatureError
from laketide.spark.errors import typed_errors
from laketide.spark.options import AUDIT_LOG, TableRef, absolute_warehouse, check_options, table_ref
from laketide.spark.types import spark_name
from laketide.spark.writer import (
    BUCKET_COLUMN,
    RESERVED_PREFIX,
    ROUTED,
    ROUTED_BUCKET,
    ROUTED_OWNED,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter

__all__ = ["SAVE_MODES", "read", "read_stream", "register_views", "with_buckets", "write", "write_stream"]

# Spark's save modes (and its aliases): errorifexists / ignore create the table when it is absent; append and
# overwrite need it to exist (a misspelled name fails instead of creating a table).
WriteMode = Literal["errorifexists", "error", "ignore", "append", "overwrite"]
SAVE_MODES = {"errorifexists": "errorifexists", "error": "errorifexists", "default": "errorifexists",
              "ignore": "ignore", "append": "append", "overwrite": "overwrite"}


def _options(warehouse: str | None, options: Mapping[str, Any] | None) -> dict[str, str]:
    out = {k: str(v) for k, v in (options or {}).items()}
    if warehouse is not None:
        out["warehouse"] = warehouse
    return out


def resolve_table(spark: SparkSession | None, name: str, warehouse: str | None,
             options: Mapping[str, Any] | None) -> tuple[dict[str, str], TableRef]:
    """The data source options of a helper call (warehouse made explicit and absolute) and its table."""
    from laketide.spark.session import registered_warehouse, ensure_registered, session_defaults

    opts = _options(warehouse, options)
    if spark is not None:
        ensure_registered(spark)
        for k, v in session_defaults(spark).items():
            if not any(o.lower() == k for o in opts):
                opts[k] = v
    if not any(k.lower() == "warehouse" for k in opts):
        wh = registered_warehouse()
        if wh is not None:
            opts["warehouse"] = wh
    for k in [k for k in opts if k.lower() == "warehouse"]:
        opts[k] = absolute_warehouse(opts[k])
    ref = table_ref({**{k.lower(): v for k, v in opts.items()}, "path": name})
    return opts, ref


def _table(name: str, warehouse: str | None, options: Mapping[str, str]) -> Any:
    return resolve_table(None, name, warehouse, options)[1].data_table()


@contextmanager
def _spark_errors() -> Iterator[None]:
    with typed_errors():
        yield


def with_buckets(df: DataFrame, table: Any, *, num_tasks: int | None = None) -> DataFrame:
    """``df`` with each row's bucket (Java's hash, vectorized), repartitioned so one task owns a bucket.

    The bucket is a Java UDF (laketide.spark.jvm_bucket: rows stay in the JVM), or where it does not apply a
    scalar Arrow UDF over the bucket-key columns only (Spark ships just those to Python and back). Rows then go to
    their task by id (``repartitionById``), not by a second hash: bucket ``b`` of an unpartitioned table is task
    ``b``, so no two buckets share a task while another task idles.
    """
    return routed_to_owners(df, table, num_tasks=num_tasks, bucket_column=True)[0]


def routed_to_owners(df: DataFrame, table: Any, *, num_tasks: int | None = None,
                     bucket_column: bool = False) -> tuple[DataFrame, str | None]:
    """``df`` shuffled so that one task owns each bucket (as ``with_buckets``), and how the writer tasks are told
    (the ``ROUTED`` option's value; None: any task may write anywhere).

    Without ``bucket_column`` a fixed bucket computed in the JVM only picks each row's task: the shuffle carries
    no bucket column and the writer tasks get none in their Arrow batches (they compute fixed buckets themselves
    anyway). Measured on local[2], 500k rows into a noop sink: the column cost ~0.1 s of JVM CPU against the same
    shuffle keyed by the expression.
    """
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    router = table.store.bucket_router()
    n = router.num_buckets
    part_keys = list(table.partition_keys)
    if router.mode in ("dynamic", "cross-partition"):  # assigner stage first (laketide.spark.writer)
        from laketide.spark.writer import with_dynamic_buckets

        return with_dynamic_buckets(df, table, num_tasks=num_tasks), ROUTED_BUCKET
    if router.mode != "fixed":  # unaware-bucket append table: any task may write anywhere
        return (df.repartition(num_tasks) if num_tasks is not None else df), None

    from laketide.spark.jvm_bucket import jvm_bucket_sql

    key_types = [table.schema.field(k).type for k in router.key_columns]
    bucket_sql = jvm_bucket_sql(df, router.key_columns, key_types, n)
    if num_tasks is None:
        shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
        num_tasks = n if not part_keys else max(shuffle, 1)
    if bucket_sql is None or bucket_column:
        if bucket_sql is None:  # key types the Java UDF does not encode, or no JDK: the same hash in Python
            make_udf: Any = arrow_udf  # its stubs know no variadic scalar functions
            bucket = make_udf(router.buckets, IntegerType())(*[df[spark_name(k)] for k in router.key_columns])
        else:
            bucket = F.expr(bucket_sql)
        df = df.withColumn(BUCKET_COLUMN, bucket)
        bucket_sql, routing = spark_name(BUCKET_COLUMN), ROUTED_BUCKET
    else:
        routing = ROUTED_OWNED
    if not part_keys:
        return df.repartitionById(num_tasks, F.expr(bucket_sql)), routing
    # (partition, bucket) -> one task: Spark's own hash of the partition values (in the JVM), then the bucket.
    # One parsed expression: each Column operation would be ~10 py4j round trips.
    partition_hash = f"CAST(hash({', '.join(spark_name(p) for p in part_keys)}) AS BIGINT)"
    task = F.expr(f"CAST(pmod({partition_hash} * {n} + {bucket_sql}, {int(num_tasks)}) AS INT)")
    return df.repartitionById(num_tasks, task), routing


def write(
    df: DataFrame,
    name: str,
    *,
    warehouse: str | None = None,
    mode: WriteMode = "append",
    dynamic_partition_overwrite: bool | None = None,
    partition: Mapping[str, object] | None = None,
    num_tasks: int | None = None,
    options: Mapping[str, Any] | None = None,
    primary_key: Sequence[str] | None = None,
    partition_keys: Sequence[str] | None = None,
    table_options: Mapping[str, Any] | None = None,
    native: bool | None = None,
) -> None:
    """Write ``df`` into table ``name`` as one snapshot, with Spark's save modes.

    ``mode``: ``append`` (the default here) and ``overwrite`` need the table; ``errorifexists`` creates it
    (from ``df``'s schema, ``primary_key``, ``partition_keys``, ``table_options``) or fails with
    TableAlreadyExistsError; ``ignore`` creates it or does nothing. ``overwrite`` replaces the whole table, the
    static ``partition`` (every row must belong to it), or with dynamic partition overwrite only the partitions
    ``df`` has rows in: ``dynamic_partition_overwrite=True``, or (when None) the ``partitionOverwriteMode`` option
    or Spark's ``spark.sql.sources.partitionOverwriteMode`` conf, as for Spark's own sources.

    ``native=True`` lets Spark's own Parquet writer encode the files (laketide.spark.native_write) and refuses
    tables or DataFrames it cannot write exactly (UnsupportedFeatureError naming the reason). It is opt-in: on
    local[2] it measured slower than laketide's Python writer (Spark's row sort and windows cost more than Arrow's
    sort and encode; see bench/spark_bench.py).
    """
    with _spark_errors():
        _write(df, name, warehouse=warehouse, mode=mode, dynamic_partition_overwrite=dynamic_partition_overwrite,
               partition=partition, num_tasks=num_tasks, options=options, primary_key=primary_key,
               partition_keys=partition_keys, table_options=table_options, native=native)


def _save_mode(mode: str) -> str:
    found = SAVE_MODES.get(str(mode).lower())
    if found is None:
        raise InvalidOptionError(
            f"laketide.spark.write: mode must be one of {sorted(set(SAVE_MODES))}, not {mode!r}"
        )
    return found


def _write(
    df: DataFrame, name: str, *, warehouse: str | None, mode: str, dynamic_partition_overwrite: bool | None,
    partition: Mapping[str, object] | None, num_tasks: int | None, options: Mapping[str, Any] | None,
    primary_key: Sequence[str] | None, partition_keys: Sequence[str] | None, table_options: Mapping[str, Any] | None,
    native: bool | None = None,
) -> None:
    mode = _save_mode(mode)
    spark = df.sparkSession
    opts, ref = resolve_table(spark, name, warehouse, options)
    ref.writable()
    from laketide.spark.options import refuse_time_travel

    refuse_time_travel({k.lower(): v for k, v in opts.items()}, ref)
    check_options(opts, "write", table=ref.name)
    internal = [k for k in opts if k.lower().startswith("laketide.")]
    if internal:
        raise InvalidOptionError(f"laketide.spark.write of table {ref.name}: {internal} are internal options")
    if num_tasks is not None and num_tasks < 1:
        raise InvalidOptionError(f"laketide.spark.write of table {ref.name}: num_tasks must be >= 1, not {num_tasks}")
    reserved = [c for c in df.columns if c.startswith(RESERVED_PREFIX)]
    if reserved:
        raise InvalidOptionError(
            f"laketide.spark.write of table {ref.name}: columns {reserved} use the prefix {RESERVED_PREFIX!r}, "
            f"which laketide keeps for its own routing columns"
        )
    overwrite_option = next((v for k, v in opts.items() if k.lower() == "partitionoverwritemode"), None)
    if mode != "overwrite":
        given = [k for k, v in (("partition", partition), ("dynamic_partition_overwrite", dynamic_partition_overwrite),
                                ("partitionOverwriteMode", overwrite_option)) if v is not None]
        if given:
            raise InvalidOptionError(
                f"laketide.spark.write of table {ref.name}: {given} only apply to mode='overwrite', not {mode!r}"
            )
    if partition is not None and dynamic_partition_overwrite:
        raise InvalidOptionError(
            f"laketide.spark.write of table {ref.name}: give partition= or dynamic_partition_overwrite=True, not both"
        )
    catalog = ref.catalog()
    created = False
    if not catalog.table_exists(ref.name):
        if mode in ("append", "overwrite"):
            raise NoSuchTableError(
                f"Table {ref.name} does not exist in {ref.warehouse} (mode={mode!r} writes into an existing table; "
                f"mode='errorifexists' or 'ignore' creates it)"
            )
        _create_table(catalog, ref, df, primary_key=primary_key, partition_keys=partition_keys,
                      table_options=table_options)
        created = True
    else:
        if mode == "errorifexists":
            raise TableAlreadyExistsError(
                f"Table {ref.name} already exists in {ref.warehouse} (mode='errorifexists'; use 'append', "
                f"'overwrite' or 'ignore')"
            )
        if mode == "ignore":
            return
        _check_definition(catalog.table(ref.name), primary_key=primary_key, partition_keys=partition_keys,
                          table_options=table_options)
    table = ref.data_table()
    save_mode = "overwrite" if mode == "overwrite" else "append"
    if mode == "overwrite" and partition is None:
        dynamic = dynamic_partition_overwrite
        if dynamic is None:
            setting = overwrite_option or spark.conf.get("spark.sql.sources.partitionOverwriteMode") or "static"
            dynamic = str(setting).strip().lower() == "dynamic"
        if dynamic:
            opts = {k: v for k, v in opts.items() if k.lower() != "partitionoverwritemode"}
            opts["partitionOverwriteMode"] = "dynamic"
    if partition:
        opts["overwrite-partition"] = ",".join(f"{k}={v}" for k, v in partition.items())
    try:
        if native and _write_natively(df, ref, table, save_mode, opts, num_tasks, required=native):
            return
        if table.store.bucket_mode == "cross-partition":
            from laketide.spark.cross_partition import cross_partition_keyed

            # One shuffle to the task owning each key's buckets, which assigns and writes in one Python pass.
            with cross_partition_keyed(df, table, num_tasks=num_tasks) as (by_key, routing, _):
                _save(by_key, name, save_mode, {**opts, **routing})
            return
        routed_df, routed_by = routed_to_owners(df, table, num_tasks=num_tasks)
        if routed_by is not None:
            opts[ROUTED] = routed_by
        _save(routed_df, name, save_mode, opts)
    except BaseException:
        if created and table.latest_snapshot() is None:
            catalog.drop_table(ref.name, ignore_missing=True)  # a failed write changes nothing
        raise


def _write_natively(df: DataFrame, ref: TableRef, table: Any, save_mode: str, opts: Mapping[str, str],
                    num_tasks: int | None, *, required: bool | None) -> bool:
    """Write through Spark's Parquet writer if that is exact for this table and DataFrame (True: written)."""
    from laketide.spark.native_write import native_write, native_write_blocker
    from laketide.spark.options import COMMIT_IDENTIFIER, int_option
    from laketide.spark.writer import query_commit_user

    reason = native_write_blocker(df, table, mode=save_mode, options=opts)
    if reason is not None:
        if required:
            raise UnsupportedFeatureError(f"laketide.spark.write of table {ref.name}: native=True, but {reason}")
        return False
    lowered = {k.lower(): v for k, v in opts.items()}
    identifier = int_option(lowered, COMMIT_IDENTIFIER)
    if identifier is None and lowered.get("commit.user"):
        raise InvalidOptionError(
            f"laketide: option commit.user of the write to table {ref.name} needs commit.identifier (the pair "
            f"makes the commit exactly-once)"
        )
    commit_key = None if identifier is None else (query_commit_user(lowered), identifier)
    native_write(df, ref, table, num_tasks=num_tasks, commit_key=commit_key)
    return True


def _create_table(catalog: Any, ref: TableRef, df: DataFrame, *, primary_key: Sequence[str] | None,
                  partition_keys: Sequence[str] | None, table_options: Mapping[str, Any] | None) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(df.schema, timezone="UTC", prefers_large_types=False)
    # Spark marks most columns nullable; primary keys must not be.
    pk = set(primary_key or ())
    schema = pa.schema([f.with_nullable(False) if f.name in pk else f for f in schema])
    catalog.create_table(ref.name, schema, primary_key=list(primary_key) if primary_key else None,
                         partition_keys=list(partition_keys) if partition_keys else None,
                         options=dict(table_options or {}))


def _check_definition(table: Any, *, primary_key: Sequence[str] | None, partition_keys: Sequence[str] | None,
                      table_options: Mapping[str, Any] | None) -> None:
    """Definition arguments describe the table a write creates: given for an existing table, they must match."""
    wrong = []
    if primary_key is not None and list(primary_key) != list(table.primary_keys):
        wrong.append(f"primary_key={list(primary_key)} (the table has {list(table.primary_keys)})")
    if partition_keys is not None and list(partition_keys) != list(table.partition_keys):
        wrong.append(f"partition_keys={list(partition_keys)} (the table has {list(table.partition_keys)})")
    for k, v in (table_options or {}).items():
        if table.schema.options.get(k) != str(v):
            wrong.append(f"table option {k}={v!r} (the table has {table.schema.options.get(k)!r})")
    if wrong:
        raise InvalidOptionError(
            f"laketide.spark.write: table {table.name} exists and differs from what the write describes: "
            + "; ".join(wrong) + " (alter the table instead)"
        )


def _save(df: DataFrame, name: str, mode: str, options: Mapping[str, str]) -> None:
    from laketide.spark.arrow_batches import uncapped_arrow_batches

    writer = df.write.format("laketide").mode(mode)
    for k, v in options.items():
        writer = writer.option(k, v)
    with uncapped_arrow_batches(df):  # Spark's per-row byte check costs the hand-over to Python dearly
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
    native: bool = False,
    options: Mapping[str, Any] | None = None,
) -> DataFrame:
    """Table ``name`` (or ``db.t$snapshots`` ...) as a DataFrame.

    Every action on it reads the table's latest snapshot (or the pinned ``snapshot_id`` / ``tag`` /
    ``timestamp_ms``). ``where`` is Spark SQL applied by Spark; when laketide's filter syntax reads it too it
    also prunes partitions and files (Spark's own filters are not pushed into the source: see
    laketide.spark.reader).

    ``native=True`` plans the snapshot now and reads every split that needs no merge with Spark's own Parquet
    reader (append tables, fully compacted primary-key buckets, deletion-vector tables, older-schema files a
    rename / added column maps, partitions pruned by ``where``); the other buckets are read by the laketide source
    pinned to the same snapshot, and the two are unioned (see laketide.spark.native_read). Faster, but the
    DataFrame is pinned to that snapshot: it sees no later commit, and fails once compaction and snapshot expiry
    remove its files.
    """
    with _spark_errors():
        opts, ref = resolve_table(spark, name, warehouse, options)
        check_options(opts, "read", table=ref.full_name)
        if native and ref.system_table is None:
            from laketide.spark.native_read import native_read

            prune = where if where and _laketide_reads(ref, where) else None
            df = native_read(spark, ref, columns=columns, where=prune, snapshot_id=snapshot_id, tag=tag,
                             timestamp_ms=timestamp_ms, options=opts)
            if df is not None:
                return df.where(where) if where else df
        if columns is not None:
            opts["columns"] = ",".join(columns)
        for key, value in (("scan.snapshot-id", snapshot_id), ("scan.tag-name", tag),
                           ("scan.timestamp-millis", timestamp_ms)):
            if value is not None:
                opts[key] = str(value)
        if where and ref.system_table is None and _laketide_reads(ref, where):
            opts["where"] = where
        df = spark.read.format("laketide").options(**opts).load(name)
        return df.where(where) if where else df


def _laketide_reads(ref: TableRef, where: str) -> bool:
    """Whether laketide's filter parser reads ``where`` (then it prunes; Spark still filters exactly)."""
    from laketide.exceptions import LaketideError
    from laketide.expr import parse_where

    table = ref.data_table()
    try:
        parse_where(where, {f.name: f.type for f in table.arrow_schema})
    except LaketideError:
        return False
    return True


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
    with _spark_errors():
        opts, ref = resolve_table(spark, name, warehouse, options)
        check_options(opts, "stream read", table=ref.full_name)
        if scan_mode is not None:
            opts["scan.mode"] = scan_mode
        if ref.system_table is not None and changes:
            raise InvalidOptionError(f"laketide.spark.read_stream: {ref.full_name} is a system table; changes= "
                                     f"applies to data tables")
        if changes is None:
            changes = ref.system_table is None and bool(ref.data_table().primary_keys)
        source = f"{name}${AUDIT_LOG}" if changes and ref.system_table is None else name
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
    with _spark_errors():
        opts, ref = resolve_table(df.sparkSession, name, warehouse, options)
        ref.writable()
        check_options(opts, "stream write", table=ref.name)
        internal = [k for k in opts
                    if k.lower().startswith("laketide.") and k.lower() != "laketide.test.fail-after-commit-batch"]
        if internal:
            raise InvalidOptionError(
                f"laketide.spark.write_stream of table {ref.name}: {internal} are internal options")
        reserved = [c for c in df.columns if c.startswith(RESERVED_PREFIX)]
        if reserved:
            raise InvalidOptionError(
                f"laketide.spark.write_stream of table {ref.name}: columns {reserved} use the prefix "
                f"{RESERVED_PREFIX!r}, which laketide keeps for its own routing columns"
            )
        table = ref.data_table()
        if table.store.bucket_mode == "cross-partition":
            # The key lookup joins each micro-batch with the table as it is then: a batch write per micro-batch,
            # committed under (query, batch id) like the sink's commits.
            writer: DataStreamWriter = df.writeStream.foreachBatch(
                _cross_partition_batch(name, opts, checkpoint=checkpoint, num_tasks=num_tasks)
            ).option("checkpointLocation", checkpoint)
        else:
            routed, routed_by = routed_to_owners(df, table, num_tasks=num_tasks)
            if routed_by is not None:
                opts[ROUTED] = routed_by
            writer = routed.writeStream.format("laketide").outputMode("append").option("checkpointLocation", checkpoint)
            for k, v in opts.items():
                writer = writer.option(k, v)
        if trigger:
            writer = writer.trigger(**trigger)
        if query_name:
            writer = writer.queryName(query_name)
        return writer.start(name)


def _cross_partition_batch(name: str, options: Mapping[str, str], *, checkpoint: str,
                           num_tasks: int | None) -> Any:
    from laketide.exceptions import CommitError
    from laketide.spark.cross_partition import cross_partition_keyed
    from laketide.spark.options import COMMIT_IDENTIFIER, TEST_FAIL_AFTER_COMMIT, int_option
    from laketide.spark.writer import committed_before, query_commit_user

    lowered = {k.lower(): v for k, v in options.items()}
    fail_after = int_option(lowered, TEST_FAIL_AFTER_COMMIT)
    base = {k: v for k, v in options.items() if k.lower() not in (TEST_FAIL_AFTER_COMMIT, "checkpointlocation")}

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        opts = dict(base)
        opts["commit.user"] = user = query_commit_user({"checkpointlocation": checkpoint, **lowered})
        opts[COMMIT_IDENTIFIER] = str(batch_id)
        table = _table(name, None, opts)  # as it is now: earlier batches have committed
        if committed_before(table, user, batch_id):
            return  # Spark replays a batch whose commit landed before a crash
        with cross_partition_keyed(batch, table, num_tasks=num_tasks) as (by_key, routing, _):
            _save(by_key, name, "append", {**opts, **routing})
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

    Spark's temporary views have one-part names, so query them quoted: ``SELECT * FROM `db.t```. A view reads the
    table's latest snapshot at each query, like the DataFrame it was made from.
    """
    from laketide.catalog import load_catalog

    with _spark_errors():
        opts = _view_options(spark, warehouse, options)
        check_options(opts, "read", table="(views)")
        wh = opts["warehouse"]
        cat = load_catalog(wh, metastore=opts.get("metastore", "filesystem"))
        names = []
        for db in databases or cat.list_databases():
            for t in cat.list_tables(db):
                base = f"{db}.{t}"
                for view in (base, *(f"{base}${s}" for s in system_tables)):
                    spark.read.format("laketide").options(**opts).load(view).createOrReplaceTempView(f"`{view}`")
                    names.append(view)
        return names


def _view_options(spark: SparkSession, warehouse: str | None, options: Mapping[str, Any] | None) -> dict[str, str]:
    from laketide.spark.session import registered_warehouse, ensure_registered, session_defaults

    ensure_registered(spark)
    opts = _options(warehouse, options)
    for k, v in session_defaults(spark).items():
        opts.setdefault(k, v)
    if "warehouse" not in opts:
        wh = registered_warehouse()
        if wh is None:
            raise InvalidOptionError("laketide: views need warehouse= (or laketide.spark.session(warehouse=...))")
        opts["warehouse"] = wh
    opts["warehouse"] = absolute_warehouse(opts["warehouse"])
    from laketide.spark.options import TableRef

    # A misspelled warehouse fails here, naming it, instead of showing an empty catalog.
    TableRef(warehouse=opts["warehouse"], metastore=opts.get("metastore", "filesystem"),
             catalog_options=tuple(sorted((k[len("catalog."):], v) for k, v in opts.items()
                                          if k.startswith("catalog."))),
             database="-", table="-").catalog()
    return opts
