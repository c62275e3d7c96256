"""What every statement executor gets: the session, the data source options, the catalog, name resolution."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from laketide.exceptions import InvalidOptionError, NoSuchTableError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from sqlglot import exp

    from laketide.catalog.base import Catalog
    from laketide.table.table import Table

__all__ = ["SqlContext", "SESSION_PREFIX", "DEFAULT_DATABASE"]

SESSION_PREFIX = "spark.paimon."  # SET spark.paimon.<k>=<v>: option <k> for every table this session reads
DEFAULT_DATABASE = "default"


@dataclass
class SqlContext:
    spark: SparkSession
    opts: dict[str, str]  # the laketide data source options (warehouse, metastore, catalog.*)
    catalog: Catalog

    def name_of(self, node: exp.Table) -> str:
        """``db.t`` (or ``db.t$snapshots`` ...) of a table reference; one-part names are in database default."""
        if node.args.get("catalog") is not None:
            raise InvalidOptionError(f"laketide SQL: three-part name {node.sql(dialect='spark')} is not supported; "
                                     f"name tables db.t")
        name = node.name
        db = node.args.get("db")
        if db is not None:
            return f"{db.name}.{name}"
        return name if "." in name else f"{DEFAULT_DATABASE}.{name}"

    def is_laketide(self, node: exp.Table) -> bool:
        """Whether a FROM reference is a laketide table (not a CTE, a temp view or a Spark table)."""
        if node.args.get("db") is None and "." not in node.name:
            return False
        name = self.name_of(node)
        return self.catalog.table_exists(name.split("$", 1)[0])

    def table(self, name: str) -> Table:
        from laketide.table.table import Table

        t = self.catalog.table(name)
        if not isinstance(t, Table):
            raise InvalidOptionError(f"laketide SQL: {name} is a system table; this statement needs a data table")
        return t

    def session_options(self) -> dict[str, str]:
        """``SET spark.paimon.k=v`` of this session, as read options ``k``."""
        conf: dict[str, str] = dict(self.spark.conf.getAll)
        return {k[len(SESSION_PREFIX):]: v for k, v in conf.items() if k.startswith(SESSION_PREFIX)}

    def result(self, rows: Sequence[Sequence[Any]], schema: str) -> DataFrame:
        """A small result DataFrame (``schema`` in Spark DDL), as Spark returns for commands."""
        if not rows:
            from pyspark.sql.types import StructType

            empty: DataFrame = self.spark.createDataFrame([], StructType.fromDDL(schema))  # type: ignore[call-overload]
            return empty
        df: DataFrame = self.spark.createDataFrame([tuple(r) for r in rows], schema)
        return df

    def require_table(self, name: str) -> Table:
        if not self.catalog.table_exists(name.split("$", 1)[0]):
            raise NoSuchTableError(f"Table {name} does not exist in {self.opts['warehouse']}")
        return self.table(name)
