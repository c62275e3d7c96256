"""``CALL sys.<procedure>(...)``: the engine-neutral procedure table (laketide.catalog.procedures), answered with
``result`` rows as paimon-spark does. ``sys.compact`` runs as a Spark job (laketide.spark.compact)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from laketide.catalog.procedures import bind_arguments, parse_partitions, procedure

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from laketide.spark.sql.context import SqlContext

__all__ = ["call"]


def call(ctx: SqlContext, text: str) -> DataFrame:
    from laketide.spark.sql.parse import split_call_arguments

    name, positional, named = split_call_arguments(text)
    proc = procedure(name)
    args = bind_arguments(proc, positional, named)
    if proc.name == "compact" and args.get("order_strategy") in (None, "", "none") and not args.get("where"):
        from laketide.spark.compact import compact

        compact(ctx.spark, str(args["table"]), warehouse=ctx.opts["warehouse"], full=True,
                partitions=parse_partitions(args.get("partitions")),
                options={k: v for k, v in ctx.opts.items() if k != "warehouse"})
        return ctx.result([(True,)], "result boolean")
    values = proc.run(ctx.catalog, args)
    kind = "long" if values and isinstance(values[0], int) and not isinstance(values[0], bool) else "boolean"
    return ctx.result([(v,) for v in values], f"result {kind}")
