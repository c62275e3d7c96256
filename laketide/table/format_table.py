"""Format tables: a catalog table that is a plain directory of CSV / JSON / Parquet / ORC files with Hive-style
partition directories (``dt=2024-01-01/region=eu/<file>``), readable and writable without Paimon metadata.

Reads list the directory at every call, pruning partition directories by the ``partition`` given; files and
directories whose names start with ``_`` or ``.`` are skipped (staging, as Java's FormatTableScan does). Writes
put one new file per partition (written under a hidden name, then renamed into view); ``overwrite`` replaces a
partition (or the whole table) once the new files are in place. CSV follows Paimon's defaults: no header, ``,``
delimiter, empty string = null (``csv.field-delimiter``, ``csv.include-header``, ``csv.null-literal``).

Paimon: table.FormatTable, table.format.FormatTableScan / FormatTableWrite, utils.PartitionPathUtils
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import SchemaError, UnsupportedFeatureError
from laketide.fs import FileIO
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_schema

__all__ = ["FORMAT_TABLE_TYPE", "FORMATS", "FormatTable", "escape_partition_value"]

FORMAT_TABLE_TYPE = "format-table"
FORMATS = {"parquet": ".parquet", "orc": ".orc", "csv": ".csv", "json": ".json"}
DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"  # partition.default-name: the directory of a null value

# Hive's escaped characters in partition directory names (PartitionPathUtils.CHAR_TO_ESCAPE).
_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}


def escape_partition_value(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "%" and _is_hex(text[i + 1:i + 3]):
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def _textual_in_json(t: pa.DataType) -> bool:
    return bool(pa.types.is_temporal(t) or pa.types.is_decimal(t))


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def check_format_table_schema(schema: TableSchema, table_name: str) -> None:
    fmt = schema.options.get("file.format", "parquet").strip().lower()
    if fmt not in FORMATS:
        raise UnsupportedFeatureError(
            f"Format table {table_name}: file.format {fmt!r} is not supported; use one of {sorted(FORMATS)}")
    if schema.primary_keys:
        raise SchemaError(f"Format table {table_name} cannot have a primary key (it is a plain directory of files)")
    if len(schema.partition_keys) == len(schema.fields):
        raise SchemaError(f"Format table {table_name}: every column is a partition key; no data would be stored")


class FormatTable:
    def __init__(self, *, name: str, location: str, file_io: FileIO, schema: TableSchema) -> None:
        check_format_table_schema(schema, name)
        self.name = name
        self.location = location.rstrip("/")
        self.file_io = file_io
        self.schema = schema
        self.format = schema.options.get("file.format", "parquet").strip().lower()
        self.partition_keys = tuple(schema.partition_keys)
        self.arrow_schema = to_arrow_schema(schema.row_type)
        self.data_schema = pa.schema([f for f in self.arrow_schema if f.name not in self.partition_keys])
        self._delimiter = schema.options.get("csv.field-delimiter", ",")
        self._header = schema.options.get("csv.include-header", "false").strip().lower() == "true"
        self._null = schema.options.get("csv.null-literal", "")

    # -- reading -------------------------------------------------------------------------------------------------
    def read(self, *, partition: Mapping[str, Any] | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows of every data file (of the partitions matching ``partition``, pruned by directory)."""
        self._check_partition(partition)
        parts = [self._read_file(path, spec) for path, spec in self.files(partition)]
        table = pa.concat_tables(parts) if parts else self.arrow_schema.empty_table()
        if columns is not None:
            unknown = [c for c in columns if c not in table.column_names]
            if unknown:
                raise SchemaError(f"Format table {self.name} has no columns {unknown}")
            table = table.select(list(columns))
        return table

    def to_arrow(self, **kwargs: Any) -> pa.Table:
        return self.read(**kwargs)

    def files(self, partition: Mapping[str, Any] | None = None) -> list[tuple[str, dict[str, str | None]]]:
        """(path, partition spec) of every data file, partition directories pruned by ``partition``."""
        wanted = {k: self._dir_value(v) for k, v in (partition or {}).items()}
        out: list[tuple[str, dict[str, str | None]]] = []
        level: list[tuple[str, dict[str, str | None]]] = [(self.location, {})]
        depth = 0
        while level:
            nxt: list[tuple[str, dict[str, str | None]]] = []
            for directory, spec in level:
                for st in self.file_io.list_status(directory):
                    name = st.path.rstrip("/").rsplit("/", 1)[-1]
                    if _hidden(name):
                        continue
                    if not st.is_dir:
                        out.append((st.path, spec))
                        continue
                    if depth < len(self.partition_keys):
                        key = self.partition_keys[depth]
                        k, sep, v = name.partition("=")
                        if not sep or _unescape(k) != key:
                            continue  # not one of this table's partition directories
                        if key in wanted and v != wanted[key]:
                            continue  # pruned
                        value = _unescape(v)
                        nxt.append((st.path, {**spec, key: None if value == DEFAULT_PARTITION_NAME else value}))
                    else:
                        nxt.append((st.path, spec))
            level = nxt
            depth += 1
        return sorted(out, key=lambda item: item[0])

    def _read_file(self, path: str, spec: Mapping[str, str | None]) -> pa.Table:
        data = self.file_io.read_bytes(path)
        table = self._decode(data, path) if data else self.data_schema.empty_table()
        for key in self.partition_keys:
            field = self.arrow_schema.field(key)
            value = spec.get(key)
            column = pa.array([value] * table.num_rows, pa.string())
            try:
                column = column.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaError(f"Format table {self.name}: partition {key}={value!r} of {path} is not "
                                  f"{field.type}: {e}") from e
            table = table.append_column(field, column)
        return table.select(self.arrow_schema.names)

    def _decode(self, data: bytes, path: str) -> pa.Table:
        try:
            if self.format == "parquet":
                import pyarrow.parquet as pq

                table = pq.read_table(io.BytesIO(data))
            elif self.format == "orc":
                import pyarrow.orc as orc

                table = orc.read_table(io.BytesIO(data))
            elif self.format == "csv":
                import pyarrow.csv as csv

                names = self.data_schema.names
                table = csv.read_csv(
                    io.BytesIO(data),
                    read_options=csv.ReadOptions(column_names=None if self._header else names,
                                                 skip_rows=0),
                    parse_options=csv.ParseOptions(delimiter=self._delimiter),
                    convert_options=csv.ConvertOptions(
                        column_types={f.name: f.type for f in self.data_schema}, null_values=[self._null],
                        strings_can_be_null=True, quoted_strings_can_be_null=False, include_columns=names),
                )
            else:
                import pyarrow.json as pj

                # Dates, times and decimals travel as JSON strings (as Java's JSON format writes them): parse them
                # as text, then cast.
                as_text = pa.schema([f.with_type(pa.string()) if _textual_in_json(f.type) else f
                                     for f in self.data_schema])
                table = pj.read_json(io.BytesIO(data), parse_options=pj.ParseOptions(
                    explicit_schema=as_text, unexpected_field_behavior="ignore"))
            return table.select(self.data_schema.names).cast(self.data_schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError, OSError) as e:  # ORC: OSError
            raise SchemaError(f"Format table {self.name}: cannot read {path} as {self.format}: {e}") from e

    # -- writing -------------------------------------------------------------------------------------------------
    def write(self, data: pa.Table, *, overwrite: bool = False,
              partition: Mapping[str, Any] | None = None) -> list[str]:
        """Add ``data`` as new files (one per partition); with ``overwrite`` they replace what ``partition`` (or,
        without it, the whole table) held, deleted once the new files are in place. Returns the new files."""
        self._check_partition(partition)
        rows = self._conform(data)
        if partition:
            self._check_rows_in(rows, partition)
        old = [p for p, _ in self.files(partition)] if overwrite else []
        written = [self._write_group(group, spec) for spec, group in self._groups(rows)]
        for path in old:  # only once the new files are in place
            self.file_io.delete(path)
        return written

    def _check_partition(self, partition: Mapping[str, Any] | None) -> None:
        unknown = [k for k in (partition or {}) if k not in self.partition_keys]
        if unknown:
            raise SchemaError(f"Format table {self.name}: {unknown} are not partition keys {list(self.partition_keys)}")

    def _conform(self, data: pa.Table) -> pa.Table:
        if not isinstance(data, pa.Table):
            raise SchemaError(f"Format table {self.name}: write takes a pyarrow.Table, got {type(data).__name__}")
        missing = [n for n in self.arrow_schema.names if n not in data.column_names]
        extra = [n for n in data.column_names if n not in self.arrow_schema.names]
        if missing or extra:
            raise SchemaError(f"Format table {self.name}: columns {data.column_names} do not match "
                              f"{self.arrow_schema.names} (missing {missing}, unknown {extra})")
        try:
            return data.select(self.arrow_schema.names).cast(self.arrow_schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"Format table {self.name}: data does not fit the table's types: {e}") from e

    def _check_rows_in(self, rows: pa.Table, partition: Mapping[str, Any]) -> None:
        for key, value in partition.items():
            col = rows.column(key)
            ok = pc.is_null(col) if value is None else pc.equal(col, pa.scalar(value).cast(col.type))
            if not pc.all(pc.fill_null(ok, False)).as_py():
                raise SchemaError(f"Format table {self.name}: rows outside partition {dict(partition)} in an "
                                  f"overwrite of that partition")

    def _dir_value(self, value: Any) -> str:
        if value is None:
            return DEFAULT_PARTITION_NAME
        text = value.isoformat() if hasattr(value, "isoformat") else str(value)
        return escape_partition_value(text)

    def _groups(self, rows: pa.Table) -> list[tuple[dict[str, Any], pa.Table]]:
        if not self.partition_keys:
            return [({}, rows)] if rows.num_rows else []
        keys = list(self.partition_keys)
        combos = rows.select(keys).group_by(keys, use_threads=False).aggregate([]).to_pylist()
        groups = []
        for spec in combos:
            mask = None
            for key, value in spec.items():
                col = rows.column(key)
                m = pc.is_null(col) if value is None else pc.fill_null(pc.equal(col, pa.scalar(value, col.type)), False)
                mask = m if mask is None else pc.and_(mask, m)
            groups.append((spec, rows.filter(mask)))
        return groups

    def _write_group(self, group: pa.Table, spec: Mapping[str, Any]) -> str:
        directory = "/".join([self.location, *(f"{escape_partition_value(k)}={self._dir_value(spec[k])}"
                                               for k in self.partition_keys)])
        name = f"data-{uuid.uuid4().hex}-0{FORMATS[self.format]}"
        final, staging = f"{directory}/{name}", f"{directory}/.{name}.inprogress"
        self.file_io.write_bytes(staging, self._encode(group.select(self.data_schema.names)))
        if not self.file_io.rename(staging, final):
            raise SchemaError(f"Format table {self.name}: could not move {staging} to {final}")
        return final

    def _encode(self, table: pa.Table) -> bytes:
        sink = io.BytesIO()
        if self.format == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, sink)
        elif self.format == "orc":
            import pyarrow.orc as orc

            orc.write_table(table, sink)
        elif self.format == "csv":
            import pyarrow.csv as csv

            csv.write_csv(table, sink, write_options=csv.WriteOptions(
                include_header=self._header, delimiter=self._delimiter, quoting_style="needed"))
        else:
            # JSON lines; Arrow has no JSON writer, so each row is one json.dumps (values as Java's JSON format).
            for row in table.to_pylist():
                sink.write((json.dumps(row, default=str, ensure_ascii=False) + "\n").encode())
        return sink.getvalue()
