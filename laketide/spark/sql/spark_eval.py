"""UPDATE / MERGE INTO whose conditions or values laketide's own expressions cannot evaluate (``upper(v)``,
``concat(a, '-', b)``, ``CASE WHEN``, ``coalesce``, date functions, ``||`` ...): Spark evaluates the statement,
laketide applies its effect as one commit.

The target is the snapshot planned now (pinned), the source is the statement's query; one Spark SQL query joins
them and gives, per joined row, the first WHEN clause that applies (a CASE over the clauses in order, as SQL
MERGE) and every target column's new value. Then:

- primary-key tables: the changed rows (new full rows, +I; deleted keys, -D) go through the Spark write path
  (``laketide.spark.write``'s routing, a ``row-kind`` column) in Spark tasks: nothing is collected to the driver.
  The commit is refused (CommitConflictError, nothing committed) when a bucket it writes changed after the planned
  snapshot (laketide.table.change_base; later commits are caught by the committer's sequence check);
- append tables: copy-on-write needs each changed row's file, so the target is read on the driver with row
  positions (laketide.table.precomputed), handed to Spark as a DataFrame, and only the changed rows (position +
  new values) and inserted rows come back; the rewrite of the touched files is one commit that fails with
  CommitConflictError when a concurrent commit removed one of them.

A target row matched by more than one source row fails with MergeSourceError before anything is written, as the
fast path (and Spark's MERGE) does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from laketide.exceptions import MergeSourceError, PredicateError, SchemaError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from laketide.spark.sql.context import SqlContext
    from laketide.table.dml import ChangeResult
    from laketide.table.table import Table

__all__ = ["Clause", "laketide_reads_merge", "laketide_reads_update", "spark_merge", "spark_update"]

_T = "__lt_t"  # marker columns: which side of the join a row has
_S = "__lt_s"
_CLAUSE = "__lt_clause"  # index of the clause a joined row takes (-1: none)
_MATCHED = "__lt_matched"


@dataclass(frozen=True, slots=True)
class Clause:
    """One WHEN clause in Spark SQL text: ``values`` maps target columns to expressions (None: ``*``)."""

    kind: str  # matched | not_matched | not_matched_by_source
    action: str  # update | delete | insert
    condition: str | None
    values: Mapping[str, str] | None


# -- which path --------------------------------------------------------------------------------------------------
def _parses(fn: Any, *args: Any, **kwargs: Any) -> bool:
    try:
        fn(*args, **kwargs)
    except PredicateError:
        return False
    return True


def laketide_reads_update(table: Table, values: Mapping[str, str], where: str | None) -> bool:
    """Whether laketide's own expressions read every SET value and the WHERE (then the fast path runs)."""
    from laketide.expr import parse_where
    from laketide.expr.values import parse_value_expression

    types = {f.name: f.type for f in table.arrow_schema}
    if where is not None and where.strip().upper() != "TRUE" and not _parses(parse_where, where, types):
        return False
    return all(_parses(parse_value_expression, v, types, context="update") for k, v in values.items()
               if k in types)


def laketide_reads_merge(table: Table, source_types: Mapping[str, Any], clauses: Sequence[Clause], *,
                         target_alias: str, source_alias: str) -> bool:
    """The same for a MERGE: conditions over both sides, values over both sides (inserts: the source only)."""
    import re

    from laketide.expr import parse_where
    from laketide.expr.values import parse_value_expression

    target = {f"{target_alias}.{f.name}": f.type for f in table.arrow_schema}
    source = {f"{source_alias}.{k}": t for k, t in source_types.items()}
    both = {**target, **source}
    qualified = re.compile(rf"\b({re.escape(source_alias)}|{re.escape(target_alias)})\.(\w+)")
    for c in clauses:
        if c.condition is not None:
            parts = c.condition.split("'")
            parts[::2] = [qualified.sub(lambda m: f"`{m.group(1)}.{m.group(2)}`", p) for p in parts[::2]]
            if not _parses(parse_where, "'".join(parts), both):
                return False
        scope = source if c.action == "insert" else both
        for v in (c.values or {}).values():
            if not _parses(parse_value_expression, v, scope, context="merge"):
                return False
    return True


# -- Spark evaluation ---------------------------------------------------------------------------------------------
@contextmanager
def _views(ctx: SqlContext, **frames: DataFrame) -> Iterator[dict[str, str]]:
    names = {k: f"__laketide_{k}_{uuid.uuid4().hex}" for k in frames}
    try:
        for k, df in frames.items():
            df.createOrReplaceTempView(names[k])
        yield names
    finally:
        for n in names.values():
            ctx.spark.catalog.dropTempView(n)


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@contextmanager
def _spark_errors(name: str, verb: str) -> Iterator[None]:
    """Errors out of Spark as one typed laketide line naming the table: a laketide error a Spark task raised
    (e.g. a NOT NULL column given null) as itself, Spark's own (unknown column or function, a cast that fails
    under ANSI mode) as PredicateError."""
    from pyspark.errors.exceptions.captured import CapturedException

    from laketide.exceptions import LaketideError
    from laketide.spark.errors import laketide_error_in

    try:
        yield
    except LaketideError:
        raise
    except Exception as e:  # any error Spark raised may carry ours
        found = laketide_error_in(e)
        if found is not None:
            raise found from e
        if not isinstance(e, CapturedException):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PredicateError(f"laketide SQL: {verb} on table {name}: {first}") from None


def _target_df(ctx: SqlContext, table: Table, name: str, snapshot_id: int | None) -> DataFrame:
    from laketide.spark.api import read

    if snapshot_id is None:
        from laketide.spark.types import spark_schema

        return ctx.spark.createDataFrame([], spark_schema(table.arrow_schema))
    opts = {k: v for k, v in ctx.opts.items() if k != "warehouse"}
    return read(ctx.spark, name, warehouse=ctx.opts["warehouse"], snapshot_id=snapshot_id, options=opts)


def _cast_columns(df: DataFrame, table: Table, extra: Sequence[str]) -> DataFrame:
    from pyspark.sql import functions as F  # noqa: N812

    from laketide.spark.types import spark_schema

    fields = spark_schema(table.arrow_schema).fields
    return df.select(*[F.col(_q(f.name)).cast(f.dataType).alias(f.name) for f in fields], *[F.col(c) for c in extra])


def spark_update(ctx: SqlContext, name: str, table: Table, values: Mapping[str, str],
                 where: str | None) -> ChangeResult:
    """UPDATE evaluated by Spark: the matching rows with their new values, then one laketide commit."""
    with _spark_errors(name, "update"):
        return _update(ctx, name, table, values, where)


def _update(ctx: SqlContext, name: str, table: Table, values: Mapping[str, str], where: str | None) -> ChangeResult:
    from laketide.table.dml import check_engine

    names = table.arrow_schema.names
    unknown = [k for k in values if k not in names]
    if unknown:
        raise SchemaError(f"update on table {name}: unknown columns {unknown}; columns are {names}")
    keys = sorted(set(values) & set(table.primary_keys))
    if keys:
        raise SchemaError(f"update on table {name}: column(s) {keys} are part of the primary key; delete the row "
                          f"and write the new one instead")
    check_engine(table, verb="update", deletes_only=False)
    cond = where if where is not None and where.strip().upper() != "TRUE" else "TRUE"
    select = ", ".join(f"({values[n]}) AS {_q(n)}" if n in values else _q(n) for n in names)
    if table.primary_keys:
        base = _base(table)
        with _views(ctx, target=_target_df(ctx, table, name, base)) as v:
            changed = ctx.spark.sql(f"SELECT {select} FROM {v['target']} WHERE {cond}")
            changed = _cast_columns(changed, table, [])
        return _write_pk(ctx, table, name, base, changed, kinds=None, counts=None, verb="update")
    from laketide.table.precomputed import POSITION, rewrite_append, target_rows

    target = target_rows(table, verb="update")
    with _views(ctx, target=_arrow_df(ctx, target.rows)) as v:
        changed = ctx.spark.sql(f"SELECT {select}, {POSITION} FROM {v['target']} WHERE {cond}")
        rows = _cast_columns(changed, table, [POSITION]).toArrow()
    positions = rows.column(POSITION).to_numpy()
    return rewrite_append(table, target, positions, rows.drop_columns([POSITION]), updated=rows.num_rows,
                          deleted=0, inserted=0)


def _arrow_df(ctx: SqlContext, rows: Any) -> DataFrame:
    from laketide.spark.types import spark_schema

    if rows.num_rows == 0:
        return ctx.spark.createDataFrame([], spark_schema(rows.schema))
    return ctx.spark.createDataFrame(rows)


def _base(table: Table) -> int | None:
    s = table.latest_snapshot()
    return None if s is None else s.id


# -- MERGE --------------------------------------------------------------------------------------------------------
def _kind_sql(kind: str, target_alias: str, source_alias: str) -> str:
    t, s = f"{_q(target_alias)}.{_T}", f"{_q(source_alias)}.{_S}"
    return {"matched": f"({t} IS NOT NULL AND {s} IS NOT NULL)",
            "not_matched": f"({t} IS NULL AND {s} IS NOT NULL)",
            "not_matched_by_source": f"({t} IS NOT NULL AND {s} IS NULL)"}[kind]


def _join_type(clauses: Sequence[Clause]) -> str:
    by_source = any(c.kind == "not_matched_by_source" for c in clauses)
    not_matched = any(c.kind == "not_matched" for c in clauses)
    return {(True, True): "FULL OUTER", (True, False): "LEFT OUTER", (False, True): "RIGHT OUTER",
            (False, False): "INNER"}[(by_source, not_matched)]


def _value(table: Table, c: Clause, column: str, source_columns: Sequence[str], target_alias: str,
           source_alias: str) -> str:
    t = f"{_q(target_alias)}.{_q(column)}"
    if c.action == "delete":
        return t
    if c.values is None:  # UPDATE SET * / INSERT *
        if c.action == "update" and column in table.primary_keys:
            return t
        if column not in source_columns:
            raise SchemaError(f"merge into table {table.name}: *_all clauses take every column from the source, "
                              f"which lacks {column!r}")
        return f"{_q(source_alias)}.{_q(column)}"
    if column in c.values:
        return f"({c.values[column]})"
    return t if c.action == "update" else "NULL"


def spark_merge(ctx: SqlContext, name: str, table: Table, source: DataFrame, on: str, clauses: Sequence[Clause], *,
                target_alias: str, source_alias: str) -> ChangeResult:
    """MERGE evaluated by Spark (see the module docstring), one laketide commit."""
    with _spark_errors(name, "merge"):
        return _merge(ctx, name, table, source, on, clauses, target_alias=target_alias, source_alias=source_alias)


def _merge(ctx: SqlContext, name: str, table: Table, source: DataFrame, on: str, clauses: Sequence[Clause], *,
           target_alias: str, source_alias: str) -> ChangeResult:
    from pyspark import StorageLevel

    from laketide.table.dml import check_engine

    names = table.arrow_schema.names
    keys = set(table.primary_keys)
    for c in clauses:
        unknown = [k for k in (c.values or {}) if k not in names]
        if unknown:
            raise SchemaError(f"merge into table {name}: unknown columns {unknown}; columns are {names}")
        if c.action == "update" and c.values is not None and keys & set(c.values):
            raise SchemaError(f"merge into table {name}: cannot update primary-key columns "
                              f"{sorted(keys & set(c.values))}")
    if any(c.action != "insert" for c in clauses):
        check_engine(table, verb="merge", deletes_only=all(c.action != "update" for c in clauses))
    pk = bool(table.primary_keys)
    base = _base(table)  # the snapshot planned now: the target is read pinned to it
    append_target = None
    if pk:
        target = _target_df(ctx, table, name, base)
    else:
        from laketide.table.precomputed import target_rows

        append_target = target_rows(table, verb="merge")
        target = _arrow_df(ctx, append_target.rows)
    from laketide.table.precomputed import POSITION

    ta, sa = _q(target_alias), _q(source_alias)
    full = [f"WHEN {_kind_sql(c.kind, target_alias, source_alias)}" + (f" AND ({c.condition})" if c.condition else "")
            for c in clauses]
    clause_case = "CASE " + " ".join(f"{w} THEN {i}" for i, w in enumerate(full)) + " ELSE -1 END"
    outputs = []
    for n in names:
        t = f"{ta}.{_q(n)}"
        whens = " ".join(f"{w} THEN {_value(table, c, n, source.columns, target_alias, source_alias)}"
                         for w, c in zip(full, clauses, strict=True))
        outputs.append(f"CASE {whens} ELSE {t} END AS {_q(n)}")
    ids = [_q(k) for k in table.primary_keys] if pk else [POSITION]
    extra = [] if pk else [f"{ta}.{POSITION} AS {POSITION}"]
    with _views(ctx, target=target, source=source) as v:
        # The user's aliases name the two sides in conditions and values.
        matched = _kind_sql("matched", target_alias, source_alias)
        query = (f"SELECT {', '.join(outputs + extra)}, {clause_case} AS {_CLAUSE}, {matched} AS {_MATCHED} "
                 f"FROM (SELECT *, true AS {_T} FROM {v['target']}) AS {ta} "
                 f"{_join_type(clauses)} JOIN (SELECT *, true AS {_S} FROM {v['source']}) AS {sa} ON ({on})")
        joined = ctx.spark.sql(query)
    joined = joined.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # One job: how many joined rows are matches, how many distinct target rows they match (more rows than
        # targets: a target row matched twice), and how many rows each clause takes.
        matched_ids = f"CASE WHEN {_MATCHED} THEN struct({', '.join(ids)}) END"
        stats = joined.selectExpr(
            f"count_if({_MATCHED}) AS matched", f"count(DISTINCT {matched_ids}) AS targets",
            *[f"count_if({_CLAUSE} = {i}) AS c{i}" for i in range(len(clauses))]).collect()[0]
        if stats["matched"] != stats["targets"]:
            raise MergeSourceError(
                f"merge into table {name}: {stats['matched'] - stats['targets']} more matches than target rows: "
                f"target rows are matched by more than one source row (on {on}); deduplicate the source first. "
                f"Nothing was changed.")
        counts = {"update": 0, "delete": 0, "insert": 0}
        for i, c in enumerate(clauses):
            counts[c.action] += int(stats[f"c{i}"])
        changed = joined.where(f"{_CLAUSE} >= 0")
        deletes = [i for i, c in enumerate(clauses) if c.action == "delete"]
        if pk:
            return _write_pk(ctx, table, name, base, _cast_columns(changed, table, [_CLAUSE]), kinds=deletes,
                             counts=counts, verb="merge")
        assert append_target is not None
        rows = _cast_columns(changed, table, [POSITION, _CLAUSE]).toArrow()
    finally:
        joined.unpersist()
    return _rewrite(table, append_target, rows, deletes, counts)


def _rewrite(table: Table, target: Any, rows: Any, deletes: Sequence[int], counts: Mapping[str, int]) -> ChangeResult:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from laketide.table.precomputed import POSITION, rewrite_append

    clause = rows.column(_CLAUSE)
    positions = rows.column(POSITION)
    gone = pc.is_in(clause, value_set=pa.array(list(deletes), pa.int32()))
    changed = positions.filter(pc.is_valid(positions)).to_numpy()
    new_rows = rows.filter(pc.invert(gone)).drop_columns([POSITION, _CLAUSE])
    return rewrite_append(table, target, np.asarray(changed, dtype=np.int64), new_rows,
                          updated=counts["update"], deleted=counts["delete"], inserted=counts["insert"])


def _write_pk(ctx: SqlContext, table: Table, name: str, base: int | None, changed: DataFrame, *,
              kinds: Sequence[int] | None, counts: Mapping[str, int] | None, verb: str) -> ChangeResult:
    """Write the changed rows of a primary-key table (deletes: the clauses ``kinds``) as one Spark job."""
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.types import ByteType

    from laketide.io.kv import RowKind
    from laketide.spark.api import _save, with_buckets
    from laketide.spark.options import READ_BASE_SNAPSHOT, ROUTED
    from laketide.spark.writer import BUCKET_COLUMN, ROUTED_BUCKET, ROUTED_ROW_KIND, ROW_KIND_COLUMN
    from laketide.table.dml import ChangeResult

    if kinds:
        kind = F.when(F.col(_CLAUSE).isin(*kinds), F.lit(int(RowKind.DELETE))).otherwise(F.lit(int(RowKind.INSERT)))
    else:
        kind = F.lit(int(RowKind.INSERT))
    rows = changed.withColumn(ROW_KIND_COLUMN, kind.cast(ByteType()))
    if _CLAUSE in rows.columns:
        rows = rows.drop(_CLAUSE)
    if counts is None:  # UPDATE: every row written is an update
        counts = {"update": rows.count(), "delete": 0, "insert": 0}
        if not counts["update"]:
            return ChangeResult()
    elif not any(counts.values()):
        return ChangeResult()
    before = _base(table)
    if table.store.bucket_mode == "cross-partition":
        return _write_pk_on_driver(table, base, rows, counts, verb=verb)
    opts = {k: v for k, v in ctx.opts.items() if k != "warehouse"}
    opts["warehouse"] = ctx.opts["warehouse"]
    opts[READ_BASE_SNAPSHOT] = str(base or 0)
    routed = with_buckets(rows, table)
    opts[ROUTED] = ",".join([ROUTED_BUCKET] * (BUCKET_COLUMN in routed.columns) + [ROUTED_ROW_KIND])
    from laketide.spark.errors import typed_errors

    with typed_errors():  # a laketide error of a task or of the commit, as itself
        _save(routed, name, "append", opts)
    after = _base(table)
    return ChangeResult(rows_inserted=counts["insert"], rows_updated=counts["update"], rows_deleted=counts["delete"],
                        snapshot_id=after if after != before else None)


def _write_pk_on_driver(table: Table, base: int | None, rows: DataFrame, counts: Mapping[str, int], *,
                        verb: str) -> ChangeResult:
    """Cross-partition tables (their key lookup runs on the driver anyway): the changes are collected here."""
    import pyarrow.compute as pc

    from laketide.io.kv import RowKind
    from laketide.spark.writer import ROW_KIND_COLUMN
    from laketide.table.precomputed import write_keyed

    data = rows.toArrow()
    gone = pc.equal(data.column(ROW_KIND_COLUMN), int(RowKind.DELETE))
    plain = data.drop_columns([ROW_KIND_COLUMN])
    return write_keyed(table, base, plain.filter(pc.invert(gone)), plain.filter(gone), updated=counts["update"],
                       inserted=counts["insert"], verb=verb)
