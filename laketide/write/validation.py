"""Can laketide write this table? The one validation that ``create_table`` and ``Table.alter`` run.

Every rule raises a typed error naming the table and the option or column, before any file is written: a schema
that passes can be written by laketide and read by Java. It lives in the write layer because the rules reach
into the merge engines and the file formats.

Paimon: schema.SchemaValidation#validateTableSchema (run on create and on every schema change)
"""

from __future__ import annotations

import io

import pyarrow as pa

from laketide.exceptions import (
    InvalidOptionError,
    LaketideError,
    SchemaError,
    UnsupportedFeatureError,
    UnsupportedOptionError,
)
from laketide.format import file_format
from laketide.index.file_index.writer import file_index_spec
from laketide.meta.external_paths import external_roots
from laketide.scan.blob_read import blob_columns
from laketide.meta.manifest_io import encode_records
from laketide.meta.manifest_schema import MANIFEST_ENTRY
from laketide.mergetree.engines import check_engine_options
from laketide.io.kv import kv_schema
from laketide.options import (
    ChangelogProducer,
    CoreOptions,
    MergeEngine,
    check_write_options,
    unsupported_write_options,
    check_unknown_options,
)
from laketide.schema.field_options import check_field_options
from laketide.schema.table_schema import TableSchema
from laketide.types import ArrayType, BlobType, DataType, MapType, MultisetType, RowType, to_arrow_schema

__all__ = ["validate_table_schema", "SYSTEM_FIELD_NAMES", "KEY_FIELD_PREFIX"]

# Columns Paimon's files and system tables use for themselves (Paimon: SpecialFields.SYSTEM_FIELD_NAMES).
SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})
KEY_FIELD_PREFIX = "_KEY_"


def validate_table_schema(schema: TableSchema, *, table_name: str, previous: TableSchema | None = None) -> None:
    """Raise unless laketide can write ``schema``; ``previous`` is the schema an alter replaces.

    On an alter, options laketide cannot write with are refused only when the alter sets or changes them: a
    Java-written table that carries one can still evolve (and be read), it just cannot be written.
    """
    options = _options(schema, table_name)
    _check_columns(schema, table_name)
    changed = None if previous is None else [k for k, v in schema.options.items() if previous.options.get(k) != v]
    check_write_options(schema.options, table_name=table_name, keys=changed)
    _check_bucket(schema, options, table_name)
    _check_fields(schema, options, table_name)
    _check_retention(options, table_name)
    _check_deletion_vectors(options, table_name, previous)
    _check_changelog_producer(schema, options, table_name)
    _check_changelog_retention(options, table_name)
    _check_external_paths(options, table_name)
    if changed is None or {"row-tracking.enabled", "data-evolution.enabled", "bucket"} & set(changed):
        _check_row_tracking(schema, options, table_name)
    file_index_spec(schema, table_name=table_name)  # unknown column, type an index cannot take, bad option
    try:
        check_engine_options(schema)
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e
    unsupported = unsupported_write_options(schema.options)
    if not any(entry.key in ("file.format", "manifest.format") for _, entry in unsupported):
        _check_formats(schema, options, table_name)
    # Only once the schema is accepted; a typo is refused, a foreign key kept with a warning.
    check_unknown_options(schema.options, table_name=table_name, keys=changed)


def _check_row_tracking(schema: TableSchema, options: CoreOptions, table_name: str) -> None:
    # Paimon: SchemaValidation#validateRowTracking.
    if options.row_tracking_enabled and (schema.primary_keys or options.bucket != -1):
        raise InvalidOptionError(
            f"Table {table_name}: 'row-tracking.enabled' needs an append table (no primary key) with bucket = -1")
    if options.data_evolution_enabled and not options.row_tracking_enabled:
        raise InvalidOptionError(
            f"Table {table_name}: 'data-evolution.enabled' needs 'row-tracking.enabled' = 'true'")


def _check_external_paths(options: CoreOptions, table_name: str) -> None:
    # A root without a scheme, no root left for the strategy, weights that do not fit: Java's checks.
    external_roots(options, table_name=table_name)


def _options(schema: TableSchema, table_name: str) -> CoreOptions:
    try:
        return schema.core_options
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e


def check_blob_columns(schema: TableSchema, table_name: str) -> None:
    """BLOB columns as Java's SchemaValidation accepts them on an append table (data evolution on, other columns,
    not a partition key); what laketide does not write (BLOB inside ARRAY / MAP / ROW, BLOB in a primary-key
    table) is refused."""
    blobs = blob_columns(schema.fields)
    if not blobs:
        return
    nested = [f.name for f in schema.fields if f.name in blobs and not isinstance(f.type, BlobType)]
    if nested:
        raise UnsupportedFeatureError(
            f"Table {table_name}: columns {nested} hold BLOB inside ARRAY / MAP / ROW; laketide writes only "
            f"top-level BLOB columns")
    if schema.primary_keys:
        raise UnsupportedFeatureError(
            f"Table {table_name}: BLOB columns {blobs} in a primary-key table are not written by laketide")
    if not schema.core_options.data_evolution_enabled:
        raise InvalidOptionError(
            f"Table {table_name}: 'data-evolution.enabled' must be 'true' for a table with BLOB columns {blobs}")
    if len(blobs) == len(schema.fields):
        raise SchemaError(f"Table {table_name}: a table with BLOB columns {blobs} must have other columns")
    in_partition = [b for b in blobs if b in schema.partition_keys]
    if in_partition:
        raise SchemaError(f"Table {table_name}: BLOB columns {in_partition} cannot be partition keys")


def _check_columns(schema: TableSchema, table_name: str) -> None:
    check_blob_columns(schema, table_name)
    seen: set[str] = set()
    for f in schema.fields:
        if not f.name or not f.name.strip():
            raise SchemaError(f"Table {table_name}: column names must not be empty or blank; columns are "
                              f"{schema.field_names}")
        if f.name in seen:
            raise SchemaError(f"Table {table_name}: column {f.name!r} appears twice")
        seen.add(f.name)
        if f.name in SYSTEM_FIELD_NAMES or f.name.startswith(KEY_FIELD_PREFIX):
            raise SchemaError(
                f"Table {table_name}: column {f.name!r} is reserved for Paimon's own fields "
                f"({sorted(SYSTEM_FIELD_NAMES)} and names starting with {KEY_FIELD_PREFIX!r}); rename it"
            )
        _check_nested_names(f.type, f"{table_name}.{f.name}", table_name)


def _check_nested_names(t: DataType, where: str, table_name: str) -> None:
    if isinstance(t, RowType):
        names = [f.name for f in t.fields]
        if any(not n or not n.strip() for n in names):
            raise SchemaError(f"Table {table_name}: struct column {where} has an empty field name: {names}")
        if len(set(names)) != len(names):
            raise SchemaError(f"Table {table_name}: struct column {where} repeats a field name: {names}")
        for f in t.fields:
            _check_nested_names(f.type, f"{where}.{f.name}", table_name)
    elif isinstance(t, (ArrayType, MultisetType)):
        _check_nested_names(t.element, where, table_name)
    elif isinstance(t, MapType):
        _check_nested_names(t.key, where, table_name)
        _check_nested_names(t.value, where, table_name)


def _check_bucket(schema: TableSchema, options: CoreOptions, table_name: str) -> None:
    bucket = options.bucket
    raw_key = schema.options.get("bucket-key")
    if bucket == -1:
        if raw_key is not None:
            raise InvalidOptionError(
                f"Table {table_name}: cannot define 'bucket-key' with bucket = -1; remove it or set a bucket number"
            )
        if not schema.primary_keys and options.full_compaction_delta_commits is not None:
            raise InvalidOptionError(
                f"Table {table_name}: an append table with bucket = -1 cannot use 'full-compaction.delta-commits'"
            )
        return
    if bucket == -2 and schema.primary_keys:
        return  # postpone bucket mode: readable; writing it is refused by the unsupported-options check
    if bucket < 1:
        raise InvalidOptionError(f"Table {table_name}: 'bucket' must be -1 or greater than 0, got {bucket}")
    if not schema.primary_keys and not raw_key:
        raise InvalidOptionError(
            f"Table {table_name}: define a 'bucket-key' for a bucketed append table (bucket = {bucket})"
        )
    keys = schema.bucket_keys()
    names = schema.field_names
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise InvalidOptionError(f"Table {table_name}: bucket-key columns {unknown} do not exist; columns are {names}")
    in_partition = [k for k in keys if k in schema.partition_keys]
    if in_partition:
        raise InvalidOptionError(f"Table {table_name}: bucket-key {in_partition} must not be partition keys")
    if schema.primary_keys and not set(keys) <= set(schema.primary_keys):
        raise InvalidOptionError(
            f"Table {table_name}: bucket-key {keys} must be a subset of the primary key {list(schema.primary_keys)}"
        )
    nested = [k for k in keys if isinstance(schema.field(k).type, (ArrayType, MapType, MultisetType, RowType))]
    if nested:
        raise InvalidOptionError(f"Table {table_name}: nested columns {nested} cannot be bucket keys")


def _check_fields(schema: TableSchema, options: CoreOptions, table_name: str) -> None:
    """Options that name columns must name existing ones (Paimon: validateSequenceField, rowkind.field,
    validateFieldsPrefix)."""
    names = schema.field_names
    check_field_options(schema.options, [(f.name, f.type) for f in schema.fields], table_name=table_name)
    sequence = options.sequence_field
    unknown = [f for f in sequence if f not in names]
    if unknown:
        raise InvalidOptionError(
            f"Table {table_name}: option 'sequence.field' names columns {unknown} that do not exist; "
            f"columns are {names}"
        )
    repeated = sorted({f for f in sequence if sequence.count(f) > 1})
    if repeated:
        raise InvalidOptionError(f"Table {table_name}: option 'sequence.field' repeats {repeated}")
    if sequence and not schema.primary_keys:
        raise InvalidOptionError(f"Table {table_name}: option 'sequence.field' needs a primary key")
    rowkind = options.rowkind_field
    if rowkind is not None and rowkind not in names:
        raise InvalidOptionError(
            f"Table {table_name}: option 'rowkind.field' names column {rowkind!r}, which does not exist; "
            f"columns are {names}"
        )


def _check_changelog_producer(schema: TableSchema, options: CoreOptions, table_name: str) -> None:
    # Paimon: SchemaValidation ("Can not set changelog-producer on table without primary keys")
    if options.changelog_producer is not ChangelogProducer.NONE and not schema.primary_keys:
        raise InvalidOptionError(
            f"Table {table_name}: 'changelog-producer' = '{options.changelog_producer.value}' needs a primary key; "
            f"an append table's files are its changelog already"
        )


def _check_changelog_retention(options: CoreOptions, table_name: str) -> None:
    if options.changelog_num_retained_max < options.changelog_num_retained_min:
        raise InvalidOptionError(
            f"Table {table_name}: 'changelog.num-retained.max' ({options.changelog_num_retained_max}) must not be "
            f"below 'changelog.num-retained.min' ({options.changelog_num_retained_min})"
        )
    if options.changelog_decoupled and options.changelog_producer is ChangelogProducer.NONE:
        # Java then keeps the delta files of expired snapshots as the changelog; laketide does not.
        raise UnsupportedOptionError(
            f"Table {table_name}: changelog retention ('changelog.num-retained.min', 'changelog.num-retained.max', "
            f"'changelog.time-retained') longer than snapshot retention needs a "
            f"'changelog-producer' (input, lookup or full-compaction); laketide keeps no changelog for 'none'"
        )


def _check_deletion_vectors(options: CoreOptions, table_name: str, previous: TableSchema | None) -> None:
    # Paimon: SchemaValidation#validateForDeletionVectors, SchemaManager#checkAlterTableOption
    if options.deletion_vectors_enabled and options.changelog_producer is ChangelogProducer.FULL_COMPACTION:
        raise InvalidOptionError(
            f"Table {table_name}: 'deletion-vectors.enabled' = 'true' works with 'changelog-producer' none, input or "
            f"lookup only, not full-compaction"
        )
    if options.deletion_vectors_enabled and options.merge_engine is MergeEngine.FIRST_ROW:
        raise InvalidOptionError(
            f"Table {table_name}: 'deletion-vectors.enabled' = 'true' does not go with 'merge-engine' = "
            f"'first-row': first-row never deletes old data, so it needs no deletion vectors"
        )
    if previous is None or options.deletion_vectors_modifiable:
        return
    before = previous.core_options.deletion_vectors_enabled
    if before != options.deletion_vectors_enabled:
        raise InvalidOptionError(
            f"Table {table_name}: cannot change 'deletion-vectors.enabled' from {str(before).lower()} to "
            f"{str(options.deletion_vectors_enabled).lower()}: without a full compaction first, readers could see "
            f"duplicate rows. Set 'deletion-vectors.modifiable' = 'true' to allow it anyway"
        )


def _check_retention(options: CoreOptions, table_name: str) -> None:
    if options.snapshot_num_retained_min > options.snapshot_num_retained_max:
        raise InvalidOptionError(
            f"Table {table_name}: option 'snapshot.num-retained.min' ({options.snapshot_num_retained_min}) must "
            f"not be larger than 'snapshot.num-retained.max' ({options.snapshot_num_retained_max})"
        )


def _check_formats(schema: TableSchema, options: CoreOptions, table_name: str) -> None:
    """Open (and close) a data-file writer and encode an empty manifest with the table's own settings.

    That is the only honest answer to "can these files be written": the codecs own the lists of compressions,
    format options and column types they take (Paimon: FileFormat#validateDataFields).
    """
    arrow = to_arrow_schema(schema.row_type)
    if schema.primary_keys:
        arrow = kv_schema(arrow, tuple(schema.trimmed_primary_keys), thin=options.data_file_thin_mode)
    try:
        fmt = file_format(options.file_format)
        writer = fmt.open_writer(io.BytesIO(), arrow, compression=options.file_compression, options=schema.options)
        writer.close()
    except LaketideError as e:
        raise _named(e, table_name) from e
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise InvalidOptionError(
            f"Table {table_name}: cannot write {options.file_format} data files with 'file.compression' = "
            f"{options.file_compression!r} and the table's format options: {e}"
        ) from e
    try:
        encode_records([], MANIFEST_ENTRY, fmt=options.manifest_format, compression=options.manifest_compression)
    except LaketideError as e:
        raise _named(e, table_name) from e
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise InvalidOptionError(
            f"Table {table_name}: cannot write {options.manifest_format} manifests with 'manifest.compression' = "
            f"{options.manifest_compression!r}: {e}"
        ) from e


def _named(error: LaketideError, table_name: str) -> LaketideError:
    """The same kind of error, its message prefixed with the table name."""
    message = f"Table {table_name}: {error}"
    if isinstance(error, UnsupportedFeatureError):
        return UnsupportedOptionError(message)
    if isinstance(error, SchemaError):
        return SchemaError(message)
    return InvalidOptionError(message)
