"""Handing a table to other Arrow engines: Arrow C streams, polars (eager and lazy), DuckDB.

Everything streams batch by batch from the splits of one pinned snapshot; nothing is collected unless asked.
polars' lazy scan is an IO plugin: polars pushes its projection and predicate down, the predicate is translated
(as far as it can be) into a laketide predicate that prunes partitions and files from metadata, and polars applies
its own predicate on what is read, so the result is exactly polars' semantics.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.exceptions import UnsupportedFeatureError
from laketide.expr import Leaf, Op, Predicate, and_, bind, negate, or_

if TYPE_CHECKING:
    import duckdb
    import polars as pl

    from laketide.table.read import TableScan
    from laketide.table.table import Table

__all__ = ["batch_reader", "polars_lazy", "polars_predicate", "register_duckdb"]

_CMP = {"Eq": Op.EQ, "NotEq": Op.NE, "Lt": Op.LT, "LtEq": Op.LE, "Gt": Op.GT, "GtEq": Op.GE}
_FLIP = {Op.EQ: Op.EQ, Op.NE: Op.NE, Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE}


def batch_reader(scan: TableScan) -> pa.RecordBatchReader:
    """A streaming reader over the scan's splits (files are opened as the consumer pulls batches)."""
    return pa.RecordBatchReader.from_batches(scan.output_schema, scan.to_batches())


def _import(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise UnsupportedFeatureError(f"{module} is not installed: pip install 'laketide[{extra}]'") from e


# -- polars -------------------------------------------------------------------------------------------------------
def polars_lazy(table: Table, *, snapshot_id: int | None = None) -> pl.LazyFrame:
    """A LazyFrame over the table at ``snapshot_id`` (default: the latest now, pinned for every collect)."""
    polars = _import("polars", "polars")
    from polars.io.plugins import register_io_source

    pinned = snapshot_id if snapshot_id is not None else table.snapshot_manager.latest_snapshot_id()
    schema = table.scan(snapshot_id=pinned).output_schema if pinned is not None else table.arrow_schema
    types = {f.name: f.type for f in schema}

    def source(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
               batch_size: int | None) -> Iterator[pl.DataFrame]:
        wanted = set(with_columns) if with_columns is not None else set(schema.names)
        if predicate is not None:
            wanted |= set(predicate.meta.root_names())
        if pinned is None:
            return
        pushed = polars_predicate(predicate, types) if predicate is not None else None
        scan = table.scan(columns=[n for n in schema.names if n in wanted], where=pushed, snapshot_id=pinned)
        remaining = n_rows
        for batch in scan.to_batches():
            df = polars.from_arrow(batch)
            if predicate is not None:
                df = df.filter(predicate)  # polars' own semantics decide; the pushed predicate only pruned
            if with_columns is not None:
                df = df.select(with_columns)
            if remaining is not None:
                if remaining <= 0:
                    return
                df = df.head(remaining)
                remaining -= df.height
            if df.height:
                yield df

    empty = polars.from_arrow(schema.empty_table())
    return register_io_source(source, schema=empty.schema)


def polars_predicate(expr: pl.Expr, types: dict[str, pa.DataType]) -> Predicate | None:
    """A laketide predicate true wherever ``expr`` is (possibly on more rows), or None when nothing translates.

    Reads polars' serialized expression tree; unknown nodes only weaken the pushed-down filter.
    """
    try:
        tree = json.loads(expr.meta.serialize(format="json"))
        pred, _exact = _translate(tree)
        return bind(pred, types) if pred is not None else None
    except Exception:  # noqa: BLE001 - pushdown is an optimisation: polars filters the rows itself
        return None


def _translate(node: Any) -> tuple[Predicate | None, bool]:
    """(a predicate implied by ``node`` — None: no restriction —, whether it is exactly ``node``)."""
    if not isinstance(node, dict) or len(node) != 1:
        return None, False
    kind, body = next(iter(node.items()))
    if kind == "BinaryExpr":
        op = body.get("op")
        if op in ("And", "LogicalAnd"):
            (a, ea), (b, eb) = _translate(body["left"]), _translate(body["right"])
            parts = [p for p in (a, b) if p is not None]
            return (and_(*parts) if len(parts) > 1 else (parts[0] if parts else None)), ea and eb
        if op in ("Or", "LogicalOr"):
            (a, ea), (b, eb) = _translate(body["left"]), _translate(body["right"])
            if a is None or b is None:
                return None, False
            return or_(a, b), ea and eb
        if op in _CMP:
            left, right = body["left"], body["right"]
            if _column(left) is not None and _literal(right) is not None:
                return Leaf(_CMP[op], _column(left), (_literal(right)[0],)), True  # type: ignore[arg-type,index]
            if _column(right) is not None and _literal(left) is not None:
                return Leaf(_FLIP[_CMP[op]], _column(right), (_literal(left)[0],)), True  # type: ignore[arg-type,index]
        return None, False
    if kind == "Function":
        function = body.get("function", {})
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        inputs = body.get("input", [])
        if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1 and _column(inputs[0]) is not None:
            op = Op.IS_NULL if boolean == "IsNull" else Op.IS_NOT_NULL
            return Leaf(op, _column(inputs[0]), ()), True  # type: ignore[arg-type]
        between = boolean.get("IsBetween") if isinstance(boolean, dict) else None
        if isinstance(between, dict) and len(inputs) == 3 and _column(inputs[0]) is not None:
            lo, hi = _literal(inputs[1]), _literal(inputs[2])
            if lo is not None and hi is not None:
                closed = between.get("closed")
                name = _column(inputs[0])
                low = Leaf(Op.GE if closed in ("Both", "Left") else Op.GT, name, lo)  # type: ignore[arg-type]
                high = Leaf(Op.LE if closed in ("Both", "Right") else Op.LT, name, hi)  # type: ignore[arg-type]
                return and_(low, high), True
        if boolean == "Not" and len(inputs) == 1:
            child, exact = _translate(inputs[0])
            return (negate(child), True) if child is not None and exact else (None, False)
    return None, False


def _column(node: Any) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("Column"), str):
        return str(node["Column"])
    return None


def _literal(node: Any) -> tuple[object] | None:
    """(value,) of a plain int / float / string / bool literal node, else None."""
    if not isinstance(node, dict) or "Literal" not in node:
        return None
    lit = node["Literal"]
    for wrapper in ("Dyn", "Scalar"):
        inner = lit.get(wrapper) if isinstance(lit, dict) else None
        if isinstance(inner, dict) and len(inner) == 1:
            (kind, value), = inner.items()
            if kind in ("Int", "Float", "Str", "String", "Boolean") or kind.startswith(("Int", "UInt", "Float")):
                if isinstance(value, (int, float, str, bool)):
                    return (value,)
    return None


# -- duckdb -------------------------------------------------------------------------------------------------------
def register_duckdb(table: Table, con: duckdb.DuckDBPyConnection | None, name: str | None,
                    columns: Sequence[str] | None = None) -> duckdb.DuckDBPyConnection:
    """Register the table's Arrow stream as view ``name`` (default: the table's name) on ``con``."""
    duck = _import("duckdb", "duckdb")
    connection = con if con is not None else duck.connect()
    view = name or table.name.rsplit(".", 1)[-1]
    # A fresh stream per query: a RecordBatchReader could be scanned only once.
    connection.register(view, _StreamSource(table, columns))
    return connection


class _StreamSource:
    """An Arrow PyCapsule stream source: each consumer gets a new stream over the latest snapshot."""

    def __init__(self, table: Table, columns: Sequence[str] | None) -> None:
        self.table = table
        self.columns = columns

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        reader = batch_reader(self.table.scan(columns=self.columns))
        return reader.__arrow_c_stream__(requested_schema)
