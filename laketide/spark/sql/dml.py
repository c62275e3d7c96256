"""DML: INSERT INTO / OVERWRITE through the Spark write path; UPDATE / DELETE / MERGE INTO through the table's
row-level operations (laketide.table.dml / merge), each one commit.

Fast path: when laketide's own expressions read every condition and value (comparisons, AND / OR / NOT, IN,
IS NULL, LIKE, BETWEEN, arithmetic), MERGE's source is evaluated by Spark and collected to the driver as Arrow and
the merge builder joins it with the target in Arrow. Anything else (Spark functions, CASE, ``||`` ...) is
evaluated by Spark (spark_eval.py) and applied as one laketide commit. ``SET spark.laketide.sql.evaluate-in-spark
= true`` sends every UPDATE / MERGE that way: for primary-key tables nothing is then collected to the driver (a
source too big for the driver's memory), at the cost of a Spark join (slower on one machine, see
bench/spark_sql.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from laketide.exceptions import SqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from sqlglot import exp

    from laketide.spark.sql.context import SqlContext
    from laketide.spark.sql.spark_eval import Clause
    from laketide.table.dml import ChangeResult

__all__ = ["insert", "update", "delete", "merge"]

_CHANGE_SCHEMA = "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long"


def _sql(node: exp.Expression, *, unqualify: bool = False) -> str:
    from sqlglot import exp

    if unqualify:
        node = node.transform(lambda n: exp.column(n.name, quoted=n.this.quoted) if isinstance(n, exp.Column)
                              else n)
    return node.sql(dialect="spark")


def _change_result(ctx: SqlContext, r: ChangeResult) -> DataFrame:
    deleted = r.rows_deleted or 0
    return ctx.result([(r.rows_inserted + r.rows_updated + deleted, r.rows_updated, deleted, r.rows_inserted)],
                      _CHANGE_SCHEMA)


def insert(ctx: SqlContext, tree: exp.Insert) -> DataFrame:
    from pyspark.sql import functions as F  # noqa: N812
    from sqlglot import exp

    from laketide.spark.api import write
    from laketide.spark.sql.query import run_query
    from laketide.spark.types import spark_schema

    target = tree.this
    listed: list[str] | None = None
    if isinstance(target, exp.Schema):
        listed = [c.name for c in target.expressions]
        target = target.this
    name = ctx.name_of(target)
    table = ctx.require_table(name)
    types = {f.name: f.dataType for f in spark_schema(table.arrow_schema).fields}
    static: dict[str, Any] = {}
    spec = target.args.get("partition")
    for item in spec.expressions if spec is not None else []:
        if isinstance(item, exp.EQ):
            key = item.this.name
            if key not in table.partition_keys:
                raise SqlError(f"laketide SQL: INSERT into {name}: {key} is not a partition column "
                               f"(partition columns: {list(table.partition_keys)})")
            static[key] = item.expression.name
    columns = [c for c in (listed or list(types)) if c not in static]
    unknown = [c for c in columns if c not in types]
    if unknown:
        raise SqlError(f"laketide SQL: INSERT into {name}: unknown columns {unknown} (table columns: {list(types)})")
    query = tree.expression
    df = run_query(ctx, query)
    if len(df.columns) != len(columns):
        raise SqlError(f"laketide SQL: INSERT into {name}: the query gives {len(df.columns)} columns, the table "
                       f"takes {len(columns)} {columns}")
    given = {c: F.col(f"`{src}`") for c, src in zip(columns, df.columns, strict=True)}
    given.update({k: F.lit(v) for k, v in static.items()})
    df = df.select(*[(given[c] if c in given else F.lit(None)).cast(t).alias(c) for c, t in types.items()])
    overwrite = bool(tree.args.get("overwrite"))
    opts = {k: v for k, v in ctx.opts.items() if k != "warehouse"}
    write(df, name, warehouse=ctx.opts["warehouse"], mode="overwrite" if overwrite else "append",
          partition=static if overwrite and static else None, options=opts)
    return ctx.result([], _CHANGE_SCHEMA)


def update(ctx: SqlContext, tree: exp.Update) -> DataFrame:
    name = ctx.name_of(tree.this)
    table = ctx.require_table(name)
    values = {eq.this.name: _sql(eq.expression, unqualify=True) for eq in tree.expressions}
    where = tree.args.get("where")
    condition = _sql(where.this, unqualify=True) if where is not None else None
    from laketide.spark.sql.spark_eval import laketide_reads_update, spark_update

    if values and (_in_spark(ctx) or not laketide_reads_update(table, values, condition)):
        return _change_result(ctx, spark_update(ctx, name, table, values, condition))
    return _change_result(ctx, table.update(values, where=condition))


def delete(ctx: SqlContext, tree: exp.Delete) -> DataFrame:
    name = ctx.name_of(tree.this)
    table = ctx.require_table(name)
    where = tree.args.get("where")
    return _change_result(ctx, table.delete(_sql(where.this, unqualify=True) if where is not None else "TRUE"))


def _alias(node: exp.Expression, default: str) -> str:
    alias = node.args.get("alias")
    return alias.name if alias is not None and alias.name else default


def _join_columns(on: exp.Expression, target: str, source: str) -> list[str] | None:
    """``t.a = s.a AND t.b = s.b`` -> [a, b]; None when the condition is anything else."""
    from sqlglot import exp

    names = []
    for part in on.flatten() if isinstance(on, exp.And) else [on]:
        if not (isinstance(part, exp.EQ) and isinstance(part.this, exp.Column)
                and isinstance(part.expression, exp.Column) and part.this.name == part.expression.name):
            return None
        if {part.this.table, part.expression.table} != {target, source}:
            return None
        names.append(part.this.name)
    return names


EVALUATE_IN_SPARK = "spark.laketide.sql.evaluate-in-spark"


def _in_spark(ctx: SqlContext) -> bool:
    """Whether the session asks for Spark-evaluated UPDATE / MERGE even where laketide's expressions suffice."""
    value = ctx.spark.conf.get(EVALUATE_IN_SPARK, "false") or "false"
    if value.strip().lower() not in ("true", "false"):
        raise SqlError(f"laketide SQL: {EVALUATE_IN_SPARK} must be true or false, not {value!r}")
    return value.strip().lower() == "true"


def _equalities(on: exp.Expression, target: str, source: str) -> bool:
    """Whether ``on`` is ``t.a = s.b AND ...`` (what the merge builder joins on); anything else: Spark joins."""
    from sqlglot import exp

    for part in on.flatten() if isinstance(on, exp.And) else [on]:
        if not (isinstance(part, exp.EQ) and isinstance(part.this, exp.Column)
                and isinstance(part.expression, exp.Column)
                and {part.this.table, part.expression.table} == {target, source}):
            return False
    return True


def merge(ctx: SqlContext, tree: exp.Merge) -> DataFrame:
    from sqlglot import exp

    from laketide.spark.sql.query import run_query

    name = ctx.name_of(tree.this)
    table = ctx.require_table(name)
    target_alias = _alias(tree.this, tree.this.name)
    using = tree.args["using"]
    if isinstance(using, exp.Subquery):
        source_alias = _alias(using, "source")
        source_query = using.this
    elif isinstance(using, exp.Table):
        source_alias = _alias(using, using.name)
        bare = using.copy()
        bare.set("alias", None)
        source_query = exp.select("*").from_(bare)
    else:
        raise SqlError(f"laketide SQL: MERGE INTO {name}: unsupported source {using.sql(dialect='spark')!r}")
    if source_alias == target_alias:
        raise SqlError(f"laketide SQL: MERGE INTO {name}: give the source an alias other than {target_alias!r}")
    source_df = run_query(ctx, source_query)
    on = tree.args["on"]
    clauses = _clauses(name, tree)
    from laketide.spark.sql.spark_eval import laketide_reads_merge, spark_merge
    from laketide.spark.types import spark_arrow_schema

    source_types = {f.name: f.type for f in spark_arrow_schema(source_df.schema)}
    keys = _join_columns(on, target_alias, source_alias)
    if _in_spark(ctx) or not (keys or _equalities(on, target_alias, source_alias)) or not laketide_reads_merge(
            table, source_types, clauses, target_alias=target_alias, source_alias=source_alias):
        return _change_result(ctx, spark_merge(ctx, name, table, source_df, _sql(on), clauses,
                                               target_alias=target_alias, source_alias=source_alias))
    source = source_df.toArrow()
    builder = table.merge(source, on=keys, predicate=None if keys else _sql(on), source_alias=source_alias,
                          target_alias=target_alias)
    add = {
        ("matched", "delete"): lambda c: builder.when_matched_delete(c.condition),
        ("not_matched_by_source", "delete"): lambda c: builder.when_not_matched_by_source_delete(c.condition),
        ("matched", "update"): lambda c: (builder.when_matched_update_all(c.condition) if c.values is None
                                          else builder.when_matched_update(c.values, c.condition)),
        ("not_matched_by_source", "update"): lambda c: builder.when_not_matched_by_source_update(
            c.values or {}, c.condition),
        ("not_matched", "insert"): lambda c: (builder.when_not_matched_insert_all(c.condition) if c.values is None
                                              else builder.when_not_matched_insert(c.values, c.condition)),
    }
    for c in clauses:
        add[(c.kind, c.action)](c)
    return _change_result(ctx, builder.execute())


def _clauses(name: str, tree: exp.Merge) -> list[Clause]:
    """The WHEN clauses of a MERGE, in order, as Spark SQL text (refusing actions SQL does not allow)."""
    from sqlglot import exp

    from laketide.spark.sql.spark_eval import Clause

    out = []
    for when in tree.args["whens"].expressions:
        cond = when.args.get("condition")
        condition = _sql(cond) if cond is not None else None
        then = when.args["then"]
        matched, by_source = bool(when.args.get("matched")), bool(when.args.get("source"))
        kind = "matched" if matched else ("not_matched_by_source" if by_source else "not_matched")
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            if kind == "not_matched":
                raise SqlError(f"laketide SQL: MERGE INTO {name}: WHEN NOT MATCHED cannot DELETE")
            out.append(Clause(kind, "delete", condition, None))
        elif isinstance(then, exp.Update):
            sets = then.expressions
            if kind == "not_matched":
                raise SqlError(f"laketide SQL: MERGE INTO {name}: WHEN NOT MATCHED cannot UPDATE")
            if len(sets) == 1 and isinstance(sets[0], exp.Star) or not sets:
                if not matched:
                    raise SqlError(f"laketide SQL: MERGE INTO {name}: UPDATE SET * needs a matched source row")
                out.append(Clause(kind, "update", condition, None))
            else:
                out.append(Clause(kind, "update", condition, {eq.this.name: _sql(eq.expression) for eq in sets}))
        elif isinstance(then, exp.Insert):
            if kind != "not_matched":
                raise SqlError(f"laketide SQL: MERGE INTO {name}: INSERT belongs to WHEN NOT MATCHED")
            if isinstance(then.this, exp.Star) or then.this is None:
                out.append(Clause(kind, "insert", condition, None))
            else:
                cols = [c.name for c in then.this.expressions]
                vals = [_sql(v) for v in then.expression.expressions]
                if len(cols) != len(vals):
                    raise SqlError(f"laketide SQL: MERGE INTO {name}: INSERT lists {len(cols)} columns and "
                                   f"{len(vals)} values")
                out.append(Clause(kind, "insert", condition, dict(zip(cols, vals, strict=True))))
        else:
            raise SqlError(f"laketide SQL: MERGE INTO {name}: unsupported action {then.sql(dialect='spark')!r}")
    return out
