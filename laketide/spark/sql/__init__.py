"""Spark SQL as Paimon users write it, run on laketide tables: ``laketide.spark.sql(spark, statement)``.

A statement is parsed with sqlglot (Spark dialect; see parse.py for why) and dispatched: DDL (ddl.py), DML
(dml.py), queries (query.py: laketide tables become temp views, Spark runs the query) and ``CALL sys.*``
(procedures.py). Statements laketide does not own (``SET`` of Spark confs, queries over Spark's own tables)
go to ``spark.sql`` unchanged. Every laketide failure is one typed error (laketide.exceptions); a statement that
fails changes nothing.

In a notebook, ``laketide.spark.use_sql(spark, warehouse=...)`` returns a function ``sql(statement)`` bound to
the session and warehouse (a ``%sql``-style entry), and makes ``spark.laketide_sql`` the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["sql", "use_sql"]


def sql(spark: SparkSession, statement: str, *, warehouse: str | None = None,
        options: Mapping[str, Any] | None = None) -> DataFrame:
    """Run one Spark SQL statement as Paimon users write it (DDL, INSERT, UPDATE / DELETE / MERGE INTO, CALL
    sys.*, queries with time travel) on laketide tables. Returns a DataFrame (commands return a small result
    DataFrame)."""
    from laketide.catalog import load_catalog
    from laketide.spark.api import _view_options
    from laketide.spark.errors import typed_errors
    from laketide.spark.options import check_options
    from laketide.spark.sql.context import SqlContext

    with typed_errors():
        opts = _view_options(spark, warehouse, options)
        check_options(opts, "read", table="(sql)")
        catalog_opts = {k[len("catalog."):]: v for k, v in opts.items() if k.startswith("catalog.")}
        cat = load_catalog(opts["warehouse"], metastore=opts.get("metastore", "filesystem"), **catalog_opts)
        return _dispatch(SqlContext(spark, opts, cat), statement)


def _dispatch(ctx: Any, statement: str) -> DataFrame:
    from sqlglot import exp

    from laketide.exceptions import SqlError
    from laketide.spark.sql import ddl, dml
    from laketide.spark.sql.parse import Command, parse_statement
    from laketide.spark.sql.procedures import call
    from laketide.spark.sql.query import run_query

    tree = parse_statement(statement)
    if isinstance(tree, Command):
        if tree.kind == "CALL":
            return call(ctx, tree.text)
        if tree.kind == "SHOW":
            return ddl.show(ctx, tree.text)
        if tree.kind == "UNSET":
            return ddl.unset_properties(ctx, tree.text)
        return _set(ctx, tree)
    handlers: dict[type, Callable[[Any, Any], DataFrame]] = {
        exp.Create: ddl.create, exp.Alter: ddl.alter, exp.Drop: ddl.drop, exp.Describe: ddl.describe,
        exp.Insert: dml.insert, exp.Update: dml.update, exp.Delete: dml.delete, exp.Merge: dml.merge,
    }
    for kind, handler in handlers.items():
        if isinstance(tree, kind):
            return handler(ctx, tree)
    if isinstance(tree, exp.Query):
        return run_query(ctx, tree)
    raise SqlError(f"laketide SQL: unsupported statement {type(tree).__name__.upper()}: {statement.strip()[:80]!r}")


def _set(ctx: Any, command: Any) -> DataFrame:
    """``SET k=v`` / ``RESET k`` on the session's conf (Spark's own parser refuses keys with ``-``, which
    ``spark.paimon.*`` option keys have)."""
    from laketide.spark.sql.parse import _RESET, _SET

    if command.kind == "RESET":
        reset = _RESET.match(command.text)
        assert reset is not None  # the command was recognized by this pattern
        ctx.spark.conf.unset(reset.group("key"))
        return ctx.result([], "key string, value string")  # type: ignore[no-any-return]
    m = _SET.match(command.text)
    assert m is not None
    key, value = m.group("key").strip("`"), m.group("value").strip().strip("`")
    ctx.spark.conf.set(key, value)
    return ctx.result([(key, value)], "key string, value string")  # type: ignore[no-any-return]


def use_sql(spark: SparkSession, *, warehouse: str | None = None,
            options: Mapping[str, Any] | None = None) -> Callable[[str], DataFrame]:
    """A ``sql(statement)`` function bound to ``spark`` and ``warehouse`` (also set as ``spark.laketide_sql``)."""

    def bound(statement: str) -> DataFrame:
        return sql(spark, statement, warehouse=warehouse, options=options)

    spark.laketide_sql = bound  # type: ignore[attr-defined]
    return bound
