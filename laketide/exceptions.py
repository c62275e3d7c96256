"""One exception tree under :class:`LaketideError`; every domain error names what it is about."""

from __future__ import annotations


class LaketideError(Exception):
    """Root of every error laketide raises on purpose."""


class InvalidOptionError(LaketideError, ValueError):
    """A known table or catalog option has a malformed value."""


class UnsupportedFeatureError(LaketideError, NotImplementedError):
    """A Paimon feature laketide does not implement (yet)."""


class UnsupportedOptionError(InvalidOptionError, UnsupportedFeatureError):
    """A Paimon table option that changes what a writer produces and that laketide does not implement.

    Refused when a table is created or altered, and when a table carrying it is written; reads still work.
    """


class InvalidTypeError(LaketideError, ValueError):
    """A Paimon type string or an Arrow type cannot be mapped."""


class SchemaError(LaketideError, ValueError):
    """A schema is invalid, or data does not match the table's schema."""


class SchemaChangeError(SchemaError):
    """A schema change cannot be applied (unknown column, unsafe type change, ...)."""


class ColumnNotExistError(SchemaChangeError):
    """A schema change names a column the table does not have (Paimon: ColumnNotExistException); ``column`` is its
    name, dotted for a nested field."""

    def __init__(self, message: str, column: str = "") -> None:
        super().__init__(message)
        self.column = column


class ColumnAlreadyExistsError(SchemaChangeError):
    """A schema change adds or renames to a column name the table already has (Paimon:
    ColumnAlreadyExistException)."""

    def __init__(self, message: str, column: str = "") -> None:
        super().__init__(message)
        self.column = column


class SchemaAlreadyExistsError(SchemaChangeError):
    """The schema file a change or a table creation would write is already taken (a concurrent writer)."""


class CastError(SchemaError):
    """A stored value cannot be converted to its column's current type, where Java's cast throws too (an
    unparsable string, a NaN read as DECIMAL, ...); names the value, both types and, when known, the column."""


class MergeSourceError(LaketideError, ValueError):
    """A MERGE source that cannot be applied: two source rows match one target row, or a join key is missing."""


class PredicateError(LaketideError, ValueError):
    """A filter expression cannot be parsed or does not fit the table's columns."""


class CatalogError(LaketideError):
    """Base of catalog-level errors."""


class InvalidIdentifierError(CatalogError, ValueError):
    """A database or table name that cannot name a directory of the warehouse ('..', 'a/b', '', ...)."""


class SystemTableError(CatalogError, ValueError):
    """A catalog verb that changes tables named a system table or a branch (``db.t$snapshots``,
    ``db.t$branch_b``): only data tables are created, dropped, renamed or altered."""


class NoSuchWarehouseError(CatalogError, LookupError):
    """A read-only catalog call found no warehouse directory (read-only calls never create it)."""


class NoSuchDatabaseError(CatalogError, LookupError):
    pass


class NoSuchTableError(CatalogError, LookupError):
    pass


class DatabaseAlreadyExistsError(CatalogError):
    pass


class NoSuchViewError(CatalogError, LookupError):
    pass


class ViewAlreadyExistsError(CatalogError):
    """A view (or a table) already holds the name a view is created or renamed to."""


class TableAlreadyExistsError(CatalogError):
    pass


class DatabaseNotEmptyError(CatalogError):
    pass


class ReadOnlyTableError(CatalogError, PermissionError):
    """A write addressed something only readable: a system table (``db.t$snapshots``) or a time-travel read."""


class TableLocationNotEmptyError(CatalogError, FileExistsError):
    """create_table found a directory without a schema but with snapshots or manifests: the leftovers of another
    table, which a new schema-0 would adopt. Names the path."""


class CorruptMetadataError(LaketideError):
    """A metadata file (snapshot, schema, manifest) is missing, truncated or unparsable; names the file."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class FileIndexCorruptError(CorruptMetadataError):
    """A data file's index (embedded in its manifest entry or a ``<data file>.index`` sidecar) cannot be parsed.

    Names the index (``path``); a read can ignore the index and read the data file instead.
    """


class FileIndexValueError(LaketideError, ValueError):
    """A value a file index type cannot hold (a BSI index: Long.MIN_VALUE, a decimal beyond a long), as in Java."""


class NoSuchSnapshotError(LaketideError, LookupError):
    pass


class FileIOError(LaketideError, OSError):
    """A storage operation failed; carries the path."""


class CommitError(LaketideError):
    """A commit could not be completed."""


class CommitConflictError(CommitError):
    """A concurrent commit removed or changed files this commit depends on."""


class WriteConflictError(CommitConflictError):
    """Refused, changing nothing: the commit's files were written against a table state that a concurrent commit
    has changed since (a bucket's sequence numbers, a dynamic bucket's hash index, a cross-partition key lookup).

    Writing the same rows again from the latest snapshot resolves it; ``Table.write`` does that by itself.
    """


class SequenceConflictError(WriteConflictError):
    """Another writer committed to a bucket after this writer restored its sequence numbers: committing would let
    the earlier write win on keys both wrote (or tie), so the later commit is refused instead."""


class AlreadyCommittedError(CommitError, ValueError):
    """A commit adds a file that a snapshot already holds (the same messages committed twice, e.g. a retry after a
    timeout); nothing changed. Paimon: "Trying to add file ... which is already added"."""


class ForeignCommitMessageError(CommitError, ValueError):
    """Commit messages written for another table (or for a table since dropped and re-created at the same path);
    nothing changed."""


class NotFoundError(FileIOError, FileNotFoundError):
    """A file or directory an operation needs does not exist; the message names the path."""


class FileAlreadyExistsError(FileIOError, FileExistsError):
    """A write without overwrite found the target path already taken; the message names the path."""


class MergeEngineError(LaketideError, ValueError):
    """A merge engine cannot combine the versions of a key (overflow, a retraction it cannot take, bad bytes)."""


class RowKindError(MergeEngineError):
    """Rows of a kind (-U / -D) the table's merge engine does not accept; raised before anything is written."""


class CommitStateUnknownError(CommitError):
    """A commit may or may not have landed (its snapshot publish failed without a clear answer).

    Its files are kept; commit again with the same commit user and identifier: that lands at most once.
    """


class InjectedFaultError(FileIOError):
    """An artificial storage failure raised by laketide.fs.failing.FailingFileIO (tests)."""


class SqlError(LaketideError, ValueError):
    """A SQL statement laketide cannot parse or does not support (laketide.spark.sql)."""


class NoSuchProcedureError(LaketideError, LookupError):
    """``CALL sys.<name>`` of a procedure laketide does not have; the message lists the known ones."""
