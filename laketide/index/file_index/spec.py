"""Which file indexes a table asks for (``file-index.*`` options), checked against its columns.

Options, as Paimon names them:

* ``file-index.<type>.columns`` = ``a,b`` for each index type (``bloom-filter``, ``bitmap``, ``bsi``);
* ``file-index.<type>.<column>.<option>`` per column: ``bloom-filter``: ``items`` (default 1000000), ``fpp``
  (default 0.1); ``bitmap``: ``version`` (1 or 2, default 2), ``index-block-size`` (default ``16kb``);
* ``file-index.in-manifest-threshold`` (default ``500 B``): an index container up to this size is embedded in
  the manifest entry, a larger one is written as ``<data file>.index``;
* ``file-index.read.enabled`` (read side, default true) is not part of the spec.

Validation is Java's (SchemaValidation#validateFileIndex, FileIndexOptions) plus laketide's own refusals:
index types and per-column options laketide cannot write are errors, never silently ignored.

Paimon: org.apache.paimon.fileindex.FileIndexOptions
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from laketide.exceptions import InvalidOptionError, UnsupportedOptionError
from laketide.index.file_index import bitmap, bloom, bsi
from laketide.options import parse_memory_size
from laketide.types import DataType

__all__ = [
    "ColumnIndexSpec",
    "FileIndexSpec",
    "IN_MANIFEST_THRESHOLD",
    "parse_file_index_options",
    "supports",
]

PREFIX: Final = "file-index."
IN_MANIFEST_THRESHOLD: Final = "file-index.in-manifest-threshold"
READ_ENABLED: Final = "file-index.read.enabled"
DEFAULT_IN_MANIFEST_THRESHOLD: Final = 500

_OPTION_KEYS: Final[dict[str, tuple[str, ...]]] = {
    bloom.BLOOM_FILTER: bloom.OPTION_KEYS,
    bitmap.BITMAP: bitmap.OPTION_KEYS,
    bsi.BSI: bsi.OPTION_KEYS,
}
_SUPPORTS = {
    bloom.BLOOM_FILTER: bloom.bloom_supports,
    bitmap.BITMAP: bitmap.bitmap_supports,
    bsi.BSI: bsi.bsi_supports,
}
# Index types Java knows and laketide does not write.
_JAVA_ONLY: Final = frozenset({"range-bitmap"})


def _check_table_level_key(key: str, parts: list[str]) -> None:
    # Java ignores a key it does not read; a misspelled one ('file-index.bloom-filter.column',
    # 'file-index.read.enabeld') would silently build or read no index, so it is refused.
    if len(parts) == 2 and (parts[0] in _OPTION_KEYS or parts[0] in _JAVA_ONLY):
        raise InvalidOptionError(f"unknown file index option {key!r} (did you mean '{PREFIX}{parts[0]}.columns'?)")
    if key in (IN_MANIFEST_THRESHOLD, READ_ENABLED):
        return
    close = difflib.get_close_matches(key, [IN_MANIFEST_THRESHOLD, READ_ENABLED], n=1, cutoff=0.8)
    if close:
        raise InvalidOptionError(f"unknown file index option {key!r} (did you mean {close[0]!r}?)")


def supports(index_type: str, dt: DataType) -> bool:
    """Whether an index of ``index_type`` can be built over a column of type ``dt``."""
    check = _SUPPORTS.get(index_type)
    return check is not None and check(dt)


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnIndexSpec:
    """One index to build: its type, the column, and that index's options (keys without the prefix)."""

    column: str
    index_type: str
    options: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class FileIndexSpec:
    """Every index a data file of the table gets, and where the container goes (embedded or sidecar)."""

    indexes: tuple[ColumnIndexSpec, ...] = ()
    in_manifest_threshold: int = DEFAULT_IN_MANIFEST_THRESHOLD

    @property
    def empty(self) -> bool:
        return not self.indexes

    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.column for s in self.indexes))

    def embed(self, container_size: int) -> bool:
        """Whether a container of this many bytes goes into the manifest entry (Java: size <= threshold)."""
        return container_size <= self.in_manifest_threshold


def parse_file_index_options(
    options: Mapping[str, str], *, fields: Mapping[str, DataType] | None = None
) -> FileIndexSpec:
    """The file indexes ``options`` (a table's options) ask for.

    With ``fields`` (column name -> type), each indexed column must exist and have a type its index
    supports. Raises InvalidOptionError (or UnsupportedOptionError for index kinds laketide cannot write)
    naming the option.
    """
    threshold = DEFAULT_IN_MANIFEST_THRESHOLD
    if IN_MANIFEST_THRESHOLD in options:
        try:
            threshold = parse_memory_size(str(options[IN_MANIFEST_THRESHOLD]))
        except ValueError as e:
            raise InvalidOptionError(f"{IN_MANIFEST_THRESHOLD}: {e}") from e

    declared: dict[tuple[str, str], dict[str, str]] = {}
    for key in sorted(options):
        if not (key.startswith(PREFIX) and key.endswith(".columns")):
            continue
        index_type = key[len(PREFIX) : -len(".columns")]
        _check_index_type(index_type, key)
        for name in str(options[key]).split(","):
            column = name.strip()
            if not column:
                raise InvalidOptionError(f"{key} = {options[key]!r} names an empty column")
            if "[" in column and column.endswith("]"):
                raise UnsupportedOptionError(
                    f"{key} names {column!r}: indexes on map keys are not implemented by laketide"
                )
            declared.setdefault((column, index_type), {})

    for key in sorted(options):
        if not key.startswith(PREFIX) or key.endswith(".columns"):
            continue
        parts = key[len(PREFIX) :].split(".")
        if len(parts) != 3:
            _check_table_level_key(key, parts)
            continue  # not a per-column option (in-manifest-threshold, read.enabled, ...), as in Java
        index_type, column, option = parts
        spec = declared.get((column, index_type))
        if spec is None:
            raise InvalidOptionError(
                f"file index option {key!r}: column {column!r} is not declared in "
                f"'{PREFIX}{index_type}.columns'; add it there first"
            )
        if option not in _OPTION_KEYS.get(index_type, ()):
            known = ", ".join(_OPTION_KEYS.get(index_type, ())) or "none"
            raise InvalidOptionError(f"unknown file index option {key!r}; {index_type} options: {known}")
        spec[option] = str(options[key])

    indexes = []
    for (column, index_type), opts in declared.items():
        if fields is not None:
            dt = fields.get(column)
            if dt is None:
                raise InvalidOptionError(
                    f"'{PREFIX}{index_type}.columns' names column {column!r}, which the table does not have "
                    f"(columns: {', '.join(fields)})"
                )
            if not _SUPPORTS[index_type](dt):
                raise InvalidOptionError(
                    f"column {column!r} of type {dt} cannot carry a {index_type} index "
                    f"('{PREFIX}{index_type}.columns')"
                )
        if index_type == bloom.BLOOM_FILTER:
            bloom.parse_bloom_options(opts, column=column)
        elif index_type == bitmap.BITMAP:
            bitmap.parse_bitmap_options(opts, column=column)
        indexes.append(ColumnIndexSpec(column=column, index_type=index_type, options=dict(opts)))
    return FileIndexSpec(indexes=tuple(indexes), in_manifest_threshold=threshold)


def _check_index_type(index_type: str, key: str) -> None:
    if index_type in _OPTION_KEYS:
        return
    if index_type in _JAVA_ONLY:
        raise UnsupportedOptionError(f"{key}: laketide does not write {index_type} indexes")
    known = ", ".join(_OPTION_KEYS)
    raise InvalidOptionError(f"{key}: unknown file index type {index_type!r} (known: {known})")
