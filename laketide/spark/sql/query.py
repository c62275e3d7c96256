"""Queries: laketide table references become temp views over the laketide data source; Spark runs the rest.

``db.t``, ``db.`t$snapshots```, ``db.`t$branch_b```, ``VERSION AS OF n | 'tag'``, ``TIMESTAMP AS OF '...'``,
``/*+ OPTIONS('k'='v') */`` and the session's ``SET spark.paimon.k=v`` all become data source options.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from laketide.exceptions import InvalidOptionError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from sqlglot import exp

    from laketide.spark.sql.context import SqlContext

__all__ = ["run_query", "spark_views", "table_options"]


def hint_options(tree: exp.Expression) -> dict[str, str]:
    """The ``/*+ OPTIONS('k'='v', ...) */`` hints of ``tree`` (removed from it: Spark does not know them)."""
    from sqlglot import exp

    found: dict[str, str] = {}
    for hint in list(tree.find_all(exp.Hint)):
        rest = []
        for h in hint.expressions:
            if isinstance(h, exp.Anonymous) and h.name.upper() == "OPTIONS":
                for kv in h.expressions:
                    if not (isinstance(kv, exp.EQ) and isinstance(kv.this, exp.Literal)):
                        raise InvalidOptionError(f"laketide SQL: OPTIONS hint takes 'key'='value' pairs, not "
                                                 f"{kv.sql(dialect='spark')}")
                    found[kv.this.this] = kv.expression.name
            else:
                rest.append(h)
        if rest:
            hint.set("expressions", rest)
        else:
            hint.pop()
    return found


def table_options(ctx: SqlContext, node: exp.Table, hints: dict[str, str]) -> dict[str, str]:
    """The read options of one reference: catalog options, session SETs, hints, then its time travel."""
    from sqlglot import exp

    opts = {**ctx.opts, **ctx.session_options(), **hints}
    version = node.args.get("version")
    if version is not None:
        value = version.expression
        kind = str(version.this).upper()
        if kind == "VERSION":
            text = value.name
            if isinstance(value, exp.Literal) and not value.is_string or text.isdigit():
                opts["scan.snapshot-id"] = text
            else:
                opts["scan.tag-name"] = text
        else:
            opts["scan.timestamp-millis"] = str(_millis(ctx, value))
    return opts


def _millis(ctx: SqlContext, value: exp.Expression) -> int:
    from zoneinfo import ZoneInfo

    text = value.name
    if text.isdigit():  # TIMESTAMP AS OF <epoch seconds>, as Spark reads a number
        return int(text) * 1000
    try:
        t = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidOptionError(f"laketide SQL: TIMESTAMP AS OF {text!r} is not 'yyyy-MM-dd HH:mm:ss'") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=ZoneInfo(ctx.spark.conf.get("spark.sql.session.timeZone") or "UTC"))
    return int(t.timestamp() * 1000)


@contextmanager
def spark_views(ctx: SqlContext, tree: exp.Expression) -> Iterator[exp.Expression]:
    """``tree`` with its laketide references replaced by temp views, which are dropped afterwards."""
    from sqlglot import exp

    hints = hint_options(tree)
    views = []
    try:
        for node in list(tree.find_all(exp.Table)):
            if not ctx.is_laketide(node):
                continue
            name = ctx.name_of(node)
            df = ctx.spark.read.format("laketide").options(**table_options(ctx, node, hints)).load(name)
            view = f"__laketide_{uuid.uuid4().hex}"
            df.createOrReplaceTempView(view)
            views.append(view)
            alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name))
            node.replace(exp.Table(this=exp.to_identifier(view), alias=alias))
        yield tree
    finally:
        for view in views:
            ctx.spark.catalog.dropTempView(view)


def run_query(ctx: SqlContext, tree: Any) -> DataFrame:
    with spark_views(ctx, tree) as rewritten:
        df: Any = ctx.spark.sql(rewritten.sql(dialect="spark"))
        df.schema  # noqa: B018 - analyzed now, while the views exist
    result: DataFrame = df
    return result
