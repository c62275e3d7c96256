"""DDL: CREATE DATABASE / TABLE (also AS SELECT), ALTER TABLE, DROP TABLE, SHOW, DESCRIBE, SHOW CREATE TABLE.

Column types are Spark's (parsed by Spark: ``StructType.fromDDL``) and become laketide types through the same
Arrow mapping the data source uses (laketide.spark.types). The primary key is ``TBLPROPERTIES ('primary-key'=...)``
as in paimon-spark, or ``PRIMARY KEY (a, b) NOT ENFORCED`` in the column list.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.exceptions import SqlError, TableAlreadyExistsError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from sqlglot import exp

    from laketide.spark.sql.context import SqlContext

__all__ = ["create", "alter", "drop", "describe", "show", "unset_properties"]


def _spark_type_sql(dtype: exp.DataType) -> str:
    return dtype.sql(dialect="spark")


def _arrow_schema(ctx: SqlContext, columns: list[tuple[str, str, bool, str | None]]) -> pa.Schema:
    from pyspark.sql.types import StructType

    from laketide.spark.types import spark_arrow_schema

    ddl = ", ".join(f"`{n}` {t}{' NOT NULL' if not nullable else ''}" for n, t, nullable, _ in columns)
    try:
        struct: Any = StructType.fromDDL(ddl)
    except Exception as e:  # Spark's parser error: one line, naming the columns
        raise SqlError(f"laketide SQL: Spark cannot read the column types ({ddl}): {str(e).splitlines()[0]}") from None
    schema = spark_arrow_schema(struct)
    fields = []
    for f, (_, _, _, comment) in zip(schema, columns, strict=True):
        fields.append(f.with_metadata({b"comment": comment.encode()}) if comment else f)
    return pa.schema(fields)


def _properties(node: exp.Expression | None) -> tuple[dict[str, str], list[str], str | None]:
    """(TBLPROPERTIES, PARTITIONED BY columns, COMMENT) of a CREATE statement."""
    from sqlglot import exp

    props: dict[str, str] = {}
    partitions: list[str] = []
    comment = None
    for p in node.expressions if node is not None else []:
        if isinstance(p, exp.PartitionedByProperty):
            partitions = [c.name for c in p.this.expressions]
        elif isinstance(p, exp.FileFormatProperty):
            fmt = p.this.name.lower()
            if fmt != "paimon":
                raise SqlError(f"laketide SQL: USING {fmt} is not a laketide table (use USING paimon or no USING)")
        elif isinstance(p, exp.SchemaCommentProperty):
            comment = p.this.name
        elif isinstance(p, exp.Property):
            props[p.this.name if isinstance(p.this, exp.Literal) else p.name] = p.args["value"].name
        else:
            raise SqlError(f"laketide SQL: unsupported table clause {p.sql(dialect='spark')!r}")
    return props, partitions, comment


def _split_keys(text: str | None) -> list[str]:
    return [k.strip() for k in (text or "").split(",") if k.strip()]


def create(ctx: SqlContext, tree: exp.Create) -> DataFrame:
    from sqlglot import exp

    kind = str(tree.args.get("kind") or "").upper()
    exists_ok = bool(tree.args.get("exists"))
    if kind in ("DATABASE", "SCHEMA"):
        ctx.catalog.create_database(tree.this.name, exist_ok=exists_ok)
        return ctx.result([], "result boolean")
    if kind != "TABLE":
        raise SqlError(f"laketide SQL: CREATE {kind} is not supported (CREATE DATABASE / CREATE TABLE)")
    if tree.args.get("replace"):
        raise SqlError("laketide SQL: CREATE OR REPLACE TABLE is not supported; DROP TABLE first")
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    name = ctx.name_of(target)
    props, partitions, comment = _properties(tree.args.get("properties"))
    pk = _split_keys(props.pop("primary-key", None))
    if "partition" in props:  # paimon's own option spelling of PARTITIONED BY
        partitions = partitions or _split_keys(props.pop("partition"))
    columns: list[tuple[str, str, bool, str | None]] = []
    if isinstance(tree.this, exp.Schema):
        for col in tree.this.expressions:
            if isinstance(col, exp.PrimaryKey):
                declared = [c.name for c in col.expressions]
                if pk and pk != declared:
                    raise SqlError(f"laketide SQL: table {name}: PRIMARY KEY {declared} differs from "
                                   f"'primary-key'={','.join(pk)}")
                pk = declared
                continue
            if not isinstance(col, exp.ColumnDef):
                raise SqlError(f"laketide SQL: unsupported column clause {col.sql(dialect='spark')!r}")
            nullable, col_comment = True, None
            for c in col.args.get("constraints") or []:
                if isinstance(c.kind, exp.NotNullColumnConstraint):
                    nullable = bool(c.kind.args.get("allow_null"))
                elif isinstance(c.kind, exp.CommentColumnConstraint):
                    col_comment = c.kind.this.name
                elif isinstance(c.kind, exp.PrimaryKeyColumnConstraint):
                    pk = pk or [col.name]
                else:
                    raise SqlError(f"laketide SQL: unsupported column constraint {c.sql(dialect='spark')!r}")
            columns.append((col.name, _spark_type_sql(col.args["kind"]), nullable, col_comment))
    query = tree.args.get("expression")
    if query is not None and columns:
        raise SqlError("laketide SQL: CREATE TABLE ... AS SELECT takes its columns from the query; drop the list")
    if ctx.catalog.table_exists(name):
        if exists_ok:
            return ctx.result([], "result boolean")
        raise TableAlreadyExistsError(f"Table {name} already exists in {ctx.opts['warehouse']}")
    if query is not None:
        return _create_as_select(ctx, name, query, pk, partitions, props)
    names = [c[0] for c in columns]
    for what, keys in (("primary key", pk), ("partition", partitions)):
        missing = [k for k in keys if k not in names]
        if missing:
            raise SqlError(f"laketide SQL: table {name}: {what} columns {missing} are not among its columns {names}")
    # Primary-key columns are NOT NULL in Paimon.
    columns = [(n, t, nullable and n not in pk, c) for n, t, nullable, c in columns]
    ctx.catalog.create_table(name, _arrow_schema(ctx, columns), primary_key=pk or None,
                             partition_keys=partitions or None, options=props, comment=comment)
    return ctx.result([], "result boolean")


def _create_as_select(ctx: SqlContext, name: str, query: exp.Expression, pk: list[str], partitions: list[str],
                      props: dict[str, str]) -> DataFrame:
    from laketide.spark.api import write
    from laketide.spark.sql.query import run_query

    df = run_query(ctx, query)
    write(df, name, warehouse=ctx.opts["warehouse"], mode="errorifexists", primary_key=pk or None,
          partition_keys=partitions or None, table_options=props, options=_catalog_options(ctx))
    return ctx.result([], "result boolean")


def _catalog_options(ctx: SqlContext) -> dict[str, str]:
    return {k: v for k, v in ctx.opts.items() if k != "warehouse"}


def alter(ctx: SqlContext, tree: exp.Alter) -> DataFrame:
    from sqlglot import exp

    from laketide.schema.changes import (
        AddColumn, DropColumn, Move, RenameColumn, SetOption, UpdateColumnComment, UpdateColumnType,
    )

    if str(tree.args.get("kind") or "").upper() != "TABLE":
        raise SqlError("laketide SQL: only ALTER TABLE is supported")
    name = ctx.name_of(tree.this)
    table = ctx.require_table(name)
    changes: list[Any] = []
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.AlterRename):
            ctx.catalog.rename_table(name, ctx.name_of(action.this))
            return ctx.result([], "result boolean")
        if isinstance(action, (exp.ColumnDef, exp.Schema)):
            for col in action.expressions if isinstance(action, exp.Schema) else [action]:
                comment = next((c.kind.this.name for c in col.args.get("constraints") or []
                                if isinstance(c.kind, exp.CommentColumnConstraint)), None)
                field = _arrow_schema(ctx, [(col.name, _spark_type_sql(col.args["kind"]), True, None)])[0]
                move = None
                position = col.args.get("position")
                if position is not None:
                    where = str(position.args.get("position")).upper()
                    move = Move.first() if where == "FIRST" else Move.after(position.this.name)
                changes.append(AddColumn(name=col.name, type=field.type, comment=comment, move=move))
        elif isinstance(action, exp.Drop):
            changes.extend(DropColumn(c.name) for c in action.args.get("tables") or [])  # sqlglot: "tables"
        elif isinstance(action, exp.RenameColumn):
            changes.append(RenameColumn(action.this.name, action.args["to"].name))
        elif isinstance(action, exp.AlterColumn):
            if action.args.get("dtype") is not None:
                field = _arrow_schema(ctx, [(action.this.name, _spark_type_sql(action.args["dtype"]), True, None)])[0]
                changes.append(UpdateColumnType(action.this.name, field.type))
            elif action.args.get("comment") is not None:
                changes.append(UpdateColumnComment(action.this.name, action.args["comment"].name))
            else:
                raise SqlError(f"laketide SQL: unsupported ALTER COLUMN {action.sql(dialect='spark')!r}")
        elif isinstance(action, exp.AlterSet):
            for props in action.expressions:
                for p in props.expressions:
                    changes.append(SetOption(p.this.name if isinstance(p.this, exp.Literal) else p.name,
                                             p.args["value"].name))
        else:
            raise SqlError(f"laketide SQL: unsupported ALTER TABLE action {action.sql(dialect='spark')!r}")
    table.alter(*changes)
    return ctx.result([], "result boolean")


def unset_properties(ctx: SqlContext, text: str) -> DataFrame:
    from laketide.schema.changes import RemoveOption
    from laketide.spark.sql.parse import _UNSET

    m = _UNSET.match(text)
    assert m is not None
    import sqlglot

    name = ctx.name_of(sqlglot.exp.to_table(m.group("table"), dialect="spark"))
    keys = [k.strip().strip("'\"`") for k in m.group("keys").split(",") if k.strip()]
    ctx.require_table(name).alter(*[RemoveOption(k) for k in keys])
    return ctx.result([], "result boolean")


def drop(ctx: SqlContext, tree: exp.Drop) -> DataFrame:
    kind = str(tree.args.get("kind") or "").upper()
    exists_ok = bool(tree.args.get("exists"))
    if kind in ("DATABASE", "SCHEMA"):
        ctx.catalog.drop_database(tree.this.name, ignore_missing=exists_ok, cascade=bool(tree.args.get("cascade")))
    elif kind == "TABLE":
        for t in tree.args.get("tables") or []:  # sqlglot keeps DROP TABLE's names under "tables"
            name = ctx.name_of(t)
            if not exists_ok:
                ctx.require_table(name)
            ctx.catalog.drop_table(name, ignore_missing=exists_ok)
    else:
        raise SqlError(f"laketide SQL: DROP {kind} is not supported")
    return ctx.result([], "result boolean")


def describe(ctx: SqlContext, tree: exp.Describe) -> DataFrame:
    from laketide.spark.types import spark_schema

    name = ctx.name_of(tree.this)
    table = ctx.require_table(name)
    rows: list[tuple[str, str, str | None]] = []
    for f, sf in zip(table.arrow_schema, spark_schema(table.arrow_schema).fields, strict=True):
        comment = (f.metadata or {}).get(b"comment")
        rows.append((f.name, sf.dataType.simpleString(), comment.decode() if comment else None))
    if table.partition_keys:
        rows.append(("# Partition Information", "", None))
        rows.extend((k, "", None) for k in table.partition_keys)
    if str(tree.args.get("style") or "").upper() in ("EXTENDED", "FORMATTED"):
        rows.append(("", "", None))
        rows.append(("# Detailed Table Information", "", None))
        rows.append(("Name", name, None))
        rows.append(("Location", table.path, None))
        rows.append(("Primary key", ",".join(table.primary_keys), None))
        rows.append(("Table Properties", ", ".join(f"{k}={v}" for k, v in sorted(table.schema.options.items())),
                     None))
    return ctx.result(rows, "col_name string, data_type string, comment string")


def show_create_table(ctx: SqlContext, name: str) -> str:
    """CREATE TABLE text that recreates the table's columns, keys, partitioning and options."""
    from laketide.spark.types import spark_schema

    table = ctx.require_table(name)
    cols = []
    for f, sf in zip(table.arrow_schema, spark_schema(table.arrow_schema).fields, strict=True):
        comment = (f.metadata or {}).get(b"comment")
        text = f"  `{f.name}` {sf.dataType.simpleString().upper()}{'' if f.nullable else ' NOT NULL'}"
        if comment:
            text += " COMMENT " + _quote(comment.decode())
        cols.append(text)
    out = f"CREATE TABLE {name} (\n" + ",\n".join(cols) + ")\nUSING paimon\n"
    if table.partition_keys:
        out += "PARTITIONED BY (" + ", ".join(f"`{k}`" for k in table.partition_keys) + ")\n"
    if table.schema.comment:
        out += f"COMMENT {_quote(table.schema.comment)}\n"
    options = dict(table.schema.options)
    if table.primary_keys:
        options["primary-key"] = ",".join(table.primary_keys)
    if options:
        out += "TBLPROPERTIES (\n" + ",\n".join(f"  {_quote(k)} = {_quote(v)}" for k, v in sorted(options.items()))
        out += ")\n"
    return out


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_SHOW_TABLES = re.compile(r"^TABLES(?:\s+(?:IN|FROM)\s+`?(?P<db>[\w]+)`?)?$", re.I)
_SHOW_CREATE = re.compile(r"^CREATE\s+TABLE\s+(?P<table>\S+)$", re.I)


def show(ctx: SqlContext, text: str) -> DataFrame:
    from laketide.spark.sql.parse import _SHOW
    from laketide.spark.sql.context import DEFAULT_DATABASE

    m = _SHOW.match(text)
    assert m is not None
    rest = " ".join(m.group("rest").split())
    if rest.upper() in ("DATABASES", "SCHEMAS", "NAMESPACES"):
        return ctx.result([(d,) for d in ctx.catalog.list_databases()], "namespace string")
    tables = _SHOW_TABLES.match(rest)
    if tables:
        db = tables.group("db") or DEFAULT_DATABASE
        return ctx.result([(db, t, False) for t in ctx.catalog.list_tables(db)],
                          "namespace string, tableName string, isTemporary boolean")
    create_m = _SHOW_CREATE.match(rest)
    if create_m:
        import sqlglot

        name = ctx.name_of(sqlglot.exp.to_table(create_m.group("table"), dialect="spark"))
        return ctx.result([(show_create_table(ctx, name),)], "createtab_stmt string")
    if rest.upper().startswith("TBLPROPERTIES "):
        import sqlglot

        name = ctx.name_of(sqlglot.exp.to_table(rest.partition(" ")[2].strip(), dialect="spark"))
        return ctx.result(sorted(ctx.require_table(name).schema.options.items()), "key string, value string")
    raise SqlError(f"laketide SQL: unsupported statement SHOW {rest} (SHOW DATABASES / TABLES [IN db] / "
                   f"CREATE TABLE t / TBLPROPERTIES t)")

