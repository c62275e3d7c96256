"""Typed table and catalog options with Paimon's keys, defaults and value syntax.

Paimon: org.apache.paimon.CoreOptions, org.apache.paimon.options.ConfigOption,
org.apache.paimon.options.MemorySize, org.apache.paimon.utils.TimeUtils,
org.apache.paimon.options.CatalogOptions.

A table's options travel as a plain ``str -> str`` map (that is what schema-N JSON stores). The classes
here read typed values out of that map without changing it: unknown keys (format options, ``fields.*``
options, options of features laketide does not implement) stay untouched, exactly as Java keeps them.
"""

from __future__ import annotations

import builtins
import difflib
import enum
import functools
import importlib.resources
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from laketide.exceptions import InvalidOptionError, UnsupportedOptionError

__all__ = [
    "UNSUPPORTED_WRITE_OPTIONS",
    "CatalogOptions",
    "ChangelogProducer",
    "ConfigOption",
    "CoreOptions",
    "ExternalPathStrategy",
    "METADATA_STATS_MODE_KEY",
    "MergeEngine",
    "OptionType",
    "StatsMode",
    "StatsModeKind",
    "UnsupportedOption",
    "check_unknown_options",
    "check_write_options",
    "closest_option_key",
    "format_duration",
    "format_memory_size",
    "parse_duration",
    "parse_memory_size",
    "parse_stats_mode",
    "unknown_option_keys",
    "unsupported_write_options",
    "warn_unknown_options",
]

T = TypeVar("T")

_LOG = logging.getLogger(__name__)

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

# Java's parsers read a run of ASCII digits, then a unit label; no sign, no fraction, no underscores.
_AMOUNT = re.compile(r"\s*([0-9]+)\s*(.*?)\s*", re.DOTALL)
_INTEGER = re.compile(r"[+-]?[0-9]+")

_MEMORY_UNITS: dict[str, int] = {
    **dict.fromkeys(("b", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kibibytes"), 1 << 10),
    **dict.fromkeys(("m", "mb", "mebibytes"), 1 << 20),
    **dict.fromkeys(("g", "gb", "gibibytes"), 1 << 30),
    **dict.fromkeys(("t", "tb", "tebibytes"), 1 << 40),
}

# Duration labels -> length in nanoseconds (Paimon: TimeUtils.TimeUnit).
_NANOS_PER_MS = 1_000_000
_DURATION_UNITS: dict[str, int] = {
    **dict.fromkeys(("d", "day", "days"), 86_400_000 * _NANOS_PER_MS),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000 * _NANOS_PER_MS),
    **dict.fromkeys(("min", "m", "minute", "minutes"), 60_000 * _NANOS_PER_MS),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1_000 * _NANOS_PER_MS),
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), _NANOS_PER_MS),
    **dict.fromkeys(("µs", "micro", "micros", "microsecond", "microseconds"), 1_000),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
}


def _split_amount(text: str, what: str) -> tuple[int, str]:
    match = _AMOUNT.fullmatch(text)
    if match is None:
        raise ValueError(f"{what} {text!r} does not start with a non-negative whole number")
    value = int(match.group(1))
    if value > _LONG_MAX:
        raise ValueError(f"{what} {text!r} does not fit in a 64-bit number")
    return value, match.group(2).lower()


def parse_memory_size(text: str) -> int:
    """Parse a Paimon memory size ("128 mb", "64kb", "1 gb", "512") into bytes; a bare number is bytes."""
    value, unit = _split_amount(text, "memory size")
    if unit and unit not in _MEMORY_UNITS:
        raise ValueError(f"unknown memory size unit {unit!r}; use b, kb, mb, gb or tb")
    result = value * _MEMORY_UNITS.get(unit, 1)
    if result > _LONG_MAX:
        raise ValueError(f"memory size {text!r} does not fit in a 64-bit number of bytes")
    return result


def parse_duration(text: str) -> int:
    """Parse a Paimon duration ("1 h", "30 min", "10 s", "100 ms", "1 d") into milliseconds.

    A bare number is milliseconds, as in Java; units finer than a millisecond truncate toward zero.
    """
    value, unit = _split_amount(text, "duration")
    if not unit:
        return value
    if unit not in _DURATION_UNITS:
        raise ValueError(f"unknown duration unit {unit!r}; use d, h, min, s, ms, µs or ns")
    millis = value * _DURATION_UNITS[unit] // _NANOS_PER_MS
    if millis > _LONG_MAX:
        raise ValueError(f"duration {text!r} does not fit in a 64-bit number of milliseconds")
    return millis


def format_memory_size(num_bytes: int) -> str:
    """Render bytes with the largest unit that divides them exactly ("128 mb"), as Java's MemorySize does."""
    for unit, size in (("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if num_bytes and num_bytes % size == 0:
            return f"{num_bytes // size} {unit}"
    return f"{num_bytes} bytes"


def format_duration(millis: int) -> str:
    """Render milliseconds with the largest unit that divides them exactly ("1 h", "30 min", "10 ms")."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if millis and millis % size == 0:
            return f"{millis // size} {unit}"
    return f"{millis} ms"


class OptionType(enum.Enum):
    """How an option's string value is parsed."""

    STRING = "string"
    INT = "int"  # Java int: 32-bit
    LONG = "long"  # Java long: 64-bit
    BOOLEAN = "boolean"
    DOUBLE = "double"  # Java double; finite values only
    MEMORY_SIZE = "memory-size"  # parsed to bytes
    DURATION = "duration"  # parsed to milliseconds
    ENUM = "enum"  # parsed to a member of ConfigOption.enum_class
    LIST = "list"  # comma separated -> list[str]


class MergeEngine(enum.StrEnum):
    """Paimon: CoreOptions.MergeEngine."""

    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATE = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(enum.StrEnum):
    """Paimon: CoreOptions.ChangelogProducer."""

    NONE = "none"
    INPUT = "input"
    FULL_COMPACTION = "full-compaction"
    LOOKUP = "lookup"


class ExternalPathStrategy(enum.StrEnum):
    """How a writer picks one of ``data-file.external-paths`` for a new file.

    Paimon: CoreOptions.ExternalPathStrategy
    """

    NONE = "none"
    SPECIFIC_FS = "specific-fs"
    ROUND_ROBIN = "round-robin"
    ENTROPY_INJECT = "entropy-inject"
    WEIGHTED = "weight-robin"


# A check returns None when the parsed value is fine, else a phrase saying what is expected.
Check = Callable[[Any], "str | None"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigOption(Generic[T]):
    """One option: its key, how to parse it, its default and the keys it falls back to."""

    key: str
    type: OptionType
    default: T | None = None
    description: str = ""
    fallback_keys: tuple[str, ...] = ()
    enum_class: builtins.type[enum.Enum] | None = None
    check: Check | None = field(default=None, compare=False, repr=False)

    def parse(self, raw: str) -> T:
        """Parse a raw string value; InvalidOptionError names the key, the value and what is expected."""
        try:
            value = self._convert(raw)
        except (ValueError, TypeError) as e:
            raise InvalidOptionError(
                f"Option '{self.key}' has invalid value {raw!r}: expected {self._expected()} ({e})"
            ) from e
        if self.check is not None:
            problem = self.check(value)
            if problem is not None:
                raise InvalidOptionError(
                    f"Option '{self.key}' has invalid value {raw!r}: expected {problem}"
                )
        return value

    def _convert(self, raw: str) -> T:
        kind = self.type
        if kind is OptionType.STRING:
            return cast(T, raw)
        if kind in (OptionType.INT, OptionType.LONG):
            text = raw.strip()
            if not _INTEGER.fullmatch(text):
                raise ValueError("not an integer")
            number = int(text)
            low, high = (_INT_MIN, _INT_MAX) if kind is OptionType.INT else (_LONG_MIN, _LONG_MAX)
            if not low <= number <= high:
                raise ValueError(f"out of range [{low}, {high}]")
            return cast(T, number)
        if kind is OptionType.DOUBLE:
            real = float(raw.strip())
            if not math.isfinite(real):
                raise ValueError("not a finite number")
            return cast(T, real)
        if kind is OptionType.BOOLEAN:
            lowered = raw.strip().lower()
            if lowered not in ("true", "false"):
                raise ValueError("not a boolean")
            return cast(T, lowered == "true")
        if kind is OptionType.MEMORY_SIZE:
            return cast(T, parse_memory_size(raw))
        if kind is OptionType.DURATION:
            return cast(T, parse_duration(raw))
        if kind is OptionType.ENUM:
            assert self.enum_class is not None
            wanted = raw.strip().lower()
            for member in self.enum_class:
                if str(member.value).lower() == wanted:
                    return cast(T, member)
            raise ValueError("unknown value")
        if kind is OptionType.LIST:
            if not raw.strip():
                return cast(T, [])
            # Split only: whether names are trimmed differs per key in Java (sequence.field yes, bucket-key no).
            items = raw.split(",")
            if any(not item.strip() for item in items):
                raise ValueError("empty list element")
            return cast(T, items)
        raise AssertionError(kind)

    def _expected(self) -> str:
        if self.type is OptionType.ENUM:
            assert self.enum_class is not None
            return "one of " + ", ".join(repr(m.value) for m in self.enum_class)
        return {
            OptionType.STRING: "a string",
            OptionType.INT: "a 32-bit integer",
            OptionType.LONG: "a 64-bit integer",
            OptionType.BOOLEAN: "'true' or 'false'",
            OptionType.DOUBLE: "a number such as '0.7'",
            OptionType.MEMORY_SIZE: "a memory size such as '128 mb', '64kb' or '1024'",
            OptionType.DURATION: "a duration such as '1 h', '30 min', '10 s' or '100 ms'",
            OptionType.LIST: "a comma separated list of names",
        }[self.type]


def _option(key: str, kind: OptionType, default: Any = None, description: str = "", **extra: Any) -> ConfigOption[Any]:
    return ConfigOption(key=key, type=kind, default=default, description=description, **extra)


def _at_least(minimum: int) -> Check:
    return lambda value: None if value >= minimum else f"a value >= {minimum}"


def _bucket_check(value: int) -> str | None:
    # -1 dynamic bucket, -2 postpone bucket, > 0 fixed bucket (Paimon: SchemaValidation.validateBucket).
    return None if value > 0 or value in (-1, -2) else "-1 (dynamic), -2 (postpone) or a number > 0"


def _one_of(*values: str) -> Check:
    return lambda value: None if str(value).lower() in values else f"one of {', '.join(values)}"


def _absolute_dir(value: str) -> str | None:
    # A relative directory would depend on where each process runs; '..' would leave the chosen directory.
    parts = value.replace("\\", "/").split("/")
    return None if value.startswith("/") and ".." not in parts else "an absolute local directory without '..'"


# Formats Paimon ships a FileFormatFactory for; Java discovers more via SPI, none of which laketide reads.
FILE_FORMATS = frozenset({"parquet", "orc", "avro", "csv", "text", "json", "blob", "row", "mosaic", "lance"})


def _format_check(value: str) -> str | None:
    return None if value.lower() in FILE_FORMATS else "one of " + ", ".join(sorted(FILE_FORMATS))


METADATA_STATS_MODE_KEY = "metadata.stats-mode"
_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")


class StatsModeKind(enum.Enum):
    NONE = "none"
    COUNTS = "counts"
    FULL = "full"
    TRUNCATE = "truncate"


@dataclass(frozen=True, slots=True)
class StatsMode:
    """A parsed stats mode; ``length`` is set for TRUNCATE only."""

    kind: StatsModeKind
    length: int | None = None

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind is StatsModeKind.TRUNCATE else self.kind.value


def parse_stats_mode(text: str, *, key: str = METADATA_STATS_MODE_KEY) -> StatsMode:
    """Parses ``none`` / ``counts`` / ``full`` / ``truncate(N)`` (case-insensitive, N > 0).

    ``key`` names the option in the error raised for a bad value.
    """
    upper = text.upper()
    for kind in (StatsModeKind.NONE, StatsModeKind.COUNTS, StatsModeKind.FULL):
        if upper == kind.value.upper():
            return StatsMode(kind)
    match = _TRUNCATE.fullmatch(upper)
    if match is None:
        raise InvalidOptionError(f"{key}: unknown stats mode {text!r}; expected none, counts, full or truncate(N)")
    length = int(match.group(1))
    if not 0 < length <= 2**31 - 1:
        raise InvalidOptionError(f"{key}: truncate length must be a positive int, got {text!r}")
    return StatsMode(StatsModeKind.TRUNCATE, length)



def _stats_mode_check(value: str) -> str | None:
    try:
        parse_stats_mode(value)
    except InvalidOptionError:
        return "'none', 'counts', 'full' or 'truncate(<n>)' with 0 < n < 2^31"
    return None


def _file_name_part(value: str) -> str | None:
    """A prefix that becomes the start of a file name inside a bucket directory: it must stay one name.

    '/' or '\\' would put files in other directories ("../../x-" outside the warehouse), '..' and a leading '.'
    make names that listings treat as hidden or as parent links, ':' is a URI scheme to Hadoop's Path.
    """
    if not value:
        return "a non-empty file name prefix"
    if any(c in "/\\:" for c in value) or ".." in value or value.startswith("."):
        return "a file name prefix without '/', '\\', ':', '..' or a leading '.'"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "a file name prefix without control characters"
    return None


def _relative_directory(value: str) -> str | None:
    """A directory inside the table: relative, no '..' (it would put data files outside the table)."""
    parts = value.replace("\\", "/").split("/")
    if not value.strip() or value.startswith(("/", "\\")) or "://" in value or any(p in ("", ".", "..") for p in parts):
        return "a relative directory inside the table (no leading '/', no '..', no empty or '.' parts)"
    return None


def _weights_check(value: str) -> str | None:
    try:
        ok = all(int(w.strip()) > 0 for w in value.split(","))
    except ValueError:
        ok = False
    return None if ok else "comma-separated positive whole numbers, one per external path (10,5,15)"


def _sort_order(value: str) -> str | None:
    return None if value in ("ascending", "descending") else "'ascending' or 'descending'"


_OFFSET_ZONE = re.compile(r"[+-]([01][0-9]|2[0-3]):[0-5][0-9]|Z")


def _time_zone_check(value: str) -> str | None:
    if _OFFSET_ZONE.fullmatch(value):
        return None
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(value)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return "a time zone name (Asia/Shanghai, UTC) or an offset such as +08:00"
    return None


def _untrimmed_names(value: list[str]) -> str | None:
    # Java splits bucket-key on ',' without trimming, so " b" would name no column there.
    return "names without surrounding spaces" if any(n != n.strip() for n in value) else None


class _Value(Generic[T]):
    """A read-only accessor for one option: ``opts.bucket`` is ``opts.get(CoreOptions.BUCKET)``."""

    __slots__ = ("_option",)

    def __init__(self, option: ConfigOption[Any]) -> None:
        self._option = option

    def __get__(self, obj: Any, owner: type | None = None) -> T:
        if obj is None:
            return cast(T, self)
        return cast(T, obj.get(self._option))


_S, _I, _L, _B = OptionType.STRING, OptionType.INT, OptionType.LONG, OptionType.BOOLEAN
_D = OptionType.DOUBLE
_MEM, _DUR, _ENUM, _LIST = OptionType.MEMORY_SIZE, OptionType.DURATION, OptionType.ENUM, OptionType.LIST


class CoreOptions:
    """A table's options: the user's ``str -> str`` map plus typed accessors with Paimon's defaults.

    Construction parses every known key that is present, so a malformed value fails fast with
    InvalidOptionError. ``to_map()`` gives back the map unchanged (the form stored in schema JSON).
    """

    BUCKET = _option("bucket", _I, -1, "Bucket number: -1 dynamic, -2 postpone, > 0 fixed.", check=_bucket_check)
    BUCKET_KEY = _option(
        "bucket-key", _LIST, None, "Columns whose hash assigns rows to buckets.", check=_untrimmed_names
    )
    FILE_FORMAT = _option("file.format", _S, "parquet", "Format of data files.", check=_format_check)
    FILE_COMPRESSION = _option("file.compression", _S, "zstd", "Compression of data files.")
    FILE_COMPRESSION_ZSTD_LEVEL = _option("file.compression.zstd-level", _I, 1, "zstd level for data files.")
    TARGET_FILE_SIZE = _option(
        "target-file-size", _MEM, None, "Target data file size; 128 mb for PK tables, 256 mb for append tables.",
        check=_at_least(1),
    )
    # Removed from CoreOptions in recent Paimon (manifests are always Avro there); 0.9-era tables set it.
    MANIFEST_FORMAT = _option("manifest.format", _S, "avro", "Format of manifest files.", check=_format_check)
    MANIFEST_COMPRESSION = _option("manifest.compression", _S, "zstd", "Compression of manifest files.")
    MANIFEST_TARGET_FILE_SIZE = _option(
        "manifest.target-file-size", _MEM, 8 << 20, "Suggested manifest size.", check=_at_least(1)
    )
    MANIFEST_MERGE_MIN_COUNT = _option(
        "manifest.merge-min-count", _I, 30, "Minimum number of manifests to merge.", check=_at_least(1)
    )
    MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = _option(
        "manifest.full-compaction-threshold-size", _MEM, 16 << 20, "Size that triggers a full manifest compaction."
    )
    SNAPSHOT_NUM_RETAINED_MIN = _option(
        "snapshot.num-retained.min", _I, 10, "Minimum completed snapshots to retain.", check=_at_least(1)
    )
    SNAPSHOT_NUM_RETAINED_MAX = _option(
        "snapshot.num-retained.max", _I, _INT_MAX, "Maximum completed snapshots to retain.", check=_at_least(1)
    )
    SNAPSHOT_TIME_RETAINED = _option("snapshot.time-retained", _DUR, 3_600_000, "Max age of retained snapshots.")
    CHANGELOG_NUM_RETAINED_MIN = _option(
        "changelog.num-retained.min", _I, None, "Minimum changelogs to retain (default: snapshot.num-retained.min).",
        check=_at_least(1),
    )
    CHANGELOG_NUM_RETAINED_MAX = _option(
        "changelog.num-retained.max", _I, None, "Maximum changelogs to retain (default: snapshot.num-retained.max).",
        check=_at_least(1),
    )
    CHANGELOG_TIME_RETAINED = _option(
        "changelog.time-retained", _DUR, None, "Max age of retained changelogs (default: snapshot.time-retained)."
    )
    COMMIT_USER_PREFIX = _option("commit.user-prefix", _S, None, "Prefix of generated commit users.")
    COMMIT_MAX_RETRIES = _option("commit.max-retries", _I, 10, "Retries of a failed commit.", check=_at_least(0))
    COMMIT_MIN_RETRY_WAIT = _option("commit.min-retry-wait", _DUR, 10, "Min wait between commit retries.")
    COMMIT_MAX_RETRY_WAIT = _option("commit.max-retry-wait", _DUR, 10_000, "Max wait between commit retries.")
    COMMIT_TIMEOUT = _option("commit.timeout", _DUR, None, "Give up retrying a commit after this long.")
    PARTITION_DEFAULT_NAME = _option(
        "partition.default-name", _S, "__DEFAULT_PARTITION__", "Partition name for null or empty values."
    )
    METADATA_STATS_MODE = _option(
        "metadata.stats-mode", _S, "truncate(16)", "Column stats kept in metadata.", check=_stats_mode_check
    )
    WRITE_BUFFER_SIZE = _option(
        "write-buffer-size", _MEM, 256 << 20, "Memory buffered before a sorted flush.", check=_at_least(1)
    )
    SORT_SPILL_THRESHOLD = _option(
        "sort-spill-threshold", _I, None,
        "Sorted runs a merge reads straight from their files (default num-sorted-run.stop-trigger + 1); the "
        "smallest others are spilled to local disk first.", check=_at_least(2),
    )
    SORT_SPILL_BUFFER_SIZE = _option(
        "sort-spill-buffer-size", _MEM, 64 << 20,
        "Memory a merge of sorted runs may hold: open readers, spilled runs' batches and the rows merged at once.",
        check=_at_least(1),
    )
    WRITE_ONLY = _option(
        "write-only", _B, False, "Skip compaction and expiration.", fallback_keys=("write.compaction-skip",)
    )
    NUM_SORTED_RUN_COMPACTION_TRIGGER = _option(
        "num-sorted-run.compaction-trigger", _I, 5, "Sorted runs that trigger compaction.", check=_at_least(1)
    )
    NUM_SORTED_RUN_STOP_TRIGGER = _option(
        "num-sorted-run.stop-trigger", _I, None, "Sorted runs that stop writes (default trigger + 3).",
        check=_at_least(1),
    )
    NUM_LEVELS = _option("num-levels", _I, None, "LSM levels (default trigger + 1).", check=_at_least(2))
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT = _option(
        "compaction.max-size-amplification-percent", _I, 200, "Size amplification that forces full compaction.",
        check=_at_least(0),
    )
    COMPACTION_SIZE_RATIO = _option(
        "compaction.size-ratio", _I, 1, "Percentage flexibility when comparing sorted run sizes.", check=_at_least(0)
    )
    COMPACTION_SMALL_FILE_RATIO = _option(
        "compaction.small-file-ratio", _D, 0.7, "Files below this share of target-file-size are rewritten.",
        check=lambda v: None if v >= 0 else "a number >= 0",
    )
    COMPACTION_MIN_FILE_NUM = _option(
        "compaction.min.file-num", _I, 5, "Minimum small files of an append compaction.", check=_at_least(1)
    )
    COMPACTION_OPTIMIZATION_INTERVAL = _option(
        "compaction.optimization-interval", _DUR, None, "Force a full compaction this often."
    )
    COMPACTION_FORCE_UP_LEVEL_0 = _option(
        "compaction.force-up-level-0", _B, False, "Compact level 0 away at every compaction."
    )
    FORCE_LOOKUP = _option("force-lookup", _B, False, "Keep level 0 compacted, as a lookup changelog would.")
    LOOKUP_COMPACT = _option(
        "lookup-compact", _S, "radical",
        "radical: level 0 is compacted up at every commit of a lookup table; gentle: only when universal "
        "compaction picks something, or every lookup-compact.max-interval compaction triggers.",
        check=_one_of("radical", "gentle"),
    )
    LOOKUP_COMPACT_MAX_INTERVAL = _option(
        "lookup-compact.max-interval", _I, None,
        "Gentle mode: compaction triggers between forced level-0 compactions (default 2 x "
        "num-sorted-run.compaction-trigger, at least that trigger).", check=_at_least(1),
    )
    LOOKUP_CACHE_MAX_DISK_SIZE = _option(
        "lookup.cache-max-disk-size", _MEM, None,
        "Local disk a table's lookup files may take in one process (default: no limit); the least recently used "
        "are dropped beyond it (and rebuilt when needed).", check=_at_least(1),
    )
    LOOKUP_CACHE_FILE_RETENTION = _option(
        "lookup.cache-file-retention", _DUR, 3_600_000,
        "How long a lookup file nothing has read is kept; a lookup after that rebuilds it from its data file.",
        check=_at_least(1),
    )
    LOOKUP_CACHE_SPILL_COMPRESSION = _option(
        "lookup.cache-spill-compression", _S, "zstd",
        "Compression of Java's spilled lookup cache: zstd, none, lz4 or lzo. laketide's lookup files stay "
        "uncompressed (memory-mapped Arrow), so it checks the value only.", check=_one_of("zstd", "none", "lz4", "lzo"),
    )
    LOOKUP_LOCAL_FILE_TYPE = _option(
        "lookup.local-file-type", _S, "sort",
        "Paimon 0.8-1.x's local lookup file layout: sort or hash. laketide's lookup file is one Arrow file per "
        "data file, rows in the data file's (key) order, probed by hash join: both values are accepted.",
        check=_one_of("sort", "hash"),
    )
    LOCAL_TEMP_DIR = _option(
        "local-temp-dir", _S, None,
        "Local directory for lookup files (default: the system temp dir; Java takes its IOManager's temp dirs).",
        check=_absolute_dir,
    )
    FULL_COMPACTION_DELTA_COMMITS = _option(
        "full-compaction.delta-commits", _I, None, "Force a full compaction every N commits.", check=_at_least(1)
    )
    MERGE_ENGINE = _option(
        "merge-engine", _ENUM, MergeEngine.DEDUPLICATE, "Merge engine of a PK table.", enum_class=MergeEngine
    )
    SEQUENCE_FIELD = _option("sequence.field", _LIST, None, "Fields that order records of one key.")
    # Lower case only: the merge engines compare the raw value, and a spelling they do not match must not pass.
    SEQUENCE_FIELD_SORT_ORDER = _option(
        "sequence.field.sort-order", _S, "ascending", "Whether the largest (ascending) or smallest sequence wins.",
        check=_sort_order,
    )
    ROWKIND_FIELD = _option("rowkind.field", _S, None, "Field carrying the row kind (+I, -U, +U, -D).")
    IGNORE_DELETE = _option(
        "ignore-delete", _B, False, "Drop delete records.",
        fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"),
    )
    DATA_FILE_PREFIX = _option(
        "data-file.prefix", _S, "data-", "File name prefix of data files.", check=_file_name_part
    )
    DATA_FILE_PATH_DIRECTORY = _option(
        "data-file.path-directory", _S, None,
        "Directory (relative to the table) that holds the partition and bucket directories of data files.",
        check=_relative_directory,
    )
    DATA_FILE_EXTERNAL_PATHS = _option(
        "data-file.external-paths", _S, None,
        "Comma-separated roots (with a scheme: file:///x, s3://b/x) new data files are written under.",
    )
    DATA_FILE_EXTERNAL_PATHS_STRATEGY = _option(
        "data-file.external-paths.strategy", _ENUM, ExternalPathStrategy.NONE,
        "How a new data file picks one of 'data-file.external-paths' ('none' ignores them).",
        enum_class=ExternalPathStrategy,
    )
    DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS = _option(
        "data-file.external-paths.specific-fs", _S, None,
        "With strategy 'specific-fs': the scheme (s3, oss, ...) of the external paths to use.",
    )
    DATA_FILE_EXTERNAL_PATHS_WEIGHTS = _option(
        "data-file.external-paths.weights", _S, None,
        "With strategy 'weight-robin': one positive weight per external path, comma-separated.",
        check=_weights_check,
    )
    ROW_TRACKING_ENABLED = _option(
        "row-tracking.enabled", _B, False,
        "Every row of an append table gets a stable _ROW_ID (first_row_id + position).",
    )
    DATA_EVOLUTION_ENABLED = _option(
        "data-evolution.enabled", _B, False,
        "Row-tracking tables may rewrite some columns as files over the same row-id range (stitched on read).",
    )
    BLOB_TARGET_FILE_SIZE = _option(
        "blob.target-file-size", _MEM, None,
        "Target size of a .blob file (BLOB columns); default: the append table's target-file-size.",
        check=_at_least(1),
    )
    INDEX_FILE_IN_DATA_FILE_DIR = _option(
        "index-file-in-data-file-dir", _B, False,
        "Write index files (hash index, deletion vectors) into the bucket directory instead of index/.",
    )
    CHANGELOG_FILE_PREFIX = _option(
        "changelog-file.prefix", _S, "changelog-", "File name prefix of changelog files.", check=_file_name_part
    )
    CHANGELOG_PRODUCER = _option(
        "changelog-producer", _ENUM, ChangelogProducer.NONE, "How changelog files are produced.",
        enum_class=ChangelogProducer,
    )
    DELETION_VECTORS_ENABLED = _option("deletion-vectors.enabled", _B, False, "Write deletion vectors.")
    DELETION_VECTORS_BITMAP64 = _option(
        "deletion-vectors.bitmap64", _B, False, "Write 64-bit (Iceberg-compatible) deletion vectors."
    )
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE = _option(
        "changelog-producer.row-deduplicate", _B, False,
        "Lookup changelog: emit no -U / +U pair when the value did not change.",
    )
    CHANGELOG_PRODUCER_LOOKUP_WAIT = _option(
        "changelog-producer.lookup-wait", _B, True,
        "Lookup changelog: the commit waits for the compaction that produces it (laketide compacts synchronously, "
        "so it always does).", fallback_keys=("lookup-wait",),
    )
    DELETION_VECTORS_MODIFIABLE = _option(
        "deletion-vectors.modifiable", _B, False, "Allow an alter to switch deletion vectors on or off."
    )
    DYNAMIC_BUCKET_TARGET_ROW_NUM = _option(
        "dynamic-bucket.target-row-num", _L, 2_000_000, "Rows per bucket in dynamic bucket mode.", check=_at_least(1)
    )
    DYNAMIC_BUCKET_INITIAL_BUCKETS = _option(
        "dynamic-bucket.initial-buckets", _I, None, "Initial buckets per partition and assigner.", check=_at_least(1)
    )
    DYNAMIC_BUCKET_ASSIGNER_PARALLELISM = _option(
        "dynamic-bucket.assigner-parallelism", _I, None, "Bucket assigner channels.", check=_at_least(1)
    )
    DYNAMIC_BUCKET_MAX_BUCKETS = _option(
        "dynamic-bucket.max-buckets", _I, -1, "Most buckets per partition (-1: unlimited).",
        check=lambda v: None if v == -1 or v > 0 else "-1 (unlimited) or a number > 0",
    )
    CROSS_PARTITION_UPSERT_INDEX_TTL = _option(
        "cross-partition-upsert.index-ttl", _DUR, None, "Forget keys not written for this long."
    )
    FILE_INDEX_IN_MANIFEST_THRESHOLD = _option(
        "file-index.in-manifest-threshold", _MEM, 500, "File indexes up to this size are embedded in the manifest."
    )
    FILE_INDEX_READ_ENABLED = _option("file-index.read.enabled", _B, True, "Use file indexes when reading.")
    SCAN_SNAPSHOT_ID = _option("scan.snapshot-id", _L, None, "Snapshot to read.")
    SCAN_TIMESTAMP_MILLIS = _option(
        "scan.timestamp-millis", _L, None, "Read the latest snapshot at or before this time.",
        fallback_keys=("log.scan.timestamp-millis",),
    )
    SCAN_TAG_NAME = _option("scan.tag-name", _S, None, "Tag to read.")
    SOURCE_SPLIT_TARGET_SIZE = _option(
        "source.split.target-size", _MEM, 128 << 20, "Target size of a read split of a bucket's files.",
        check=_at_least(1),
    )
    SOURCE_SPLIT_OPEN_FILE_COST = _option(
        "source.split.open-file-cost", _MEM, 4 << 20, "Least weight of a file when packing read splits.",
        check=_at_least(1),
    )
    READ_BATCH_SIZE = _option("read.batch-size", _I, 1024, "Rows per read batch.", check=_at_least(1))
    SCAN_TIMESTAMP = _option("scan.timestamp", _S, None, "Read the latest snapshot at or before this local time.")
    SCAN_WATERMARK = _option("scan.watermark", _L, None, "Read the first snapshot whose watermark is at least this.")
    SCAN_VERSION = _option("scan.version", _S, None, "Tag name or snapshot id to read.")
    INCREMENTAL_BETWEEN = _option(
        "incremental-between", _S, None, "Read the changes between two snapshots or tags: 'start,end'."
    )
    INCREMENTAL_BETWEEN_TIMESTAMP = _option(
        "incremental-between-timestamp", _S, None, "Read the changes between two epoch-millis instants: 'start,end'."
    )
    INCREMENTAL_BETWEEN_SCAN_MODE = _option(
        "incremental-between-scan-mode", _S, "auto", "auto, delta, changelog or diff.",
        check=lambda v: None if v.lower() in ("auto", "delta", "changelog", "diff")
        else "one of auto, delta, changelog, diff",
    )
    SCAN_FALLBACK_BRANCH = _option(
        "scan.fallback-branch", _S, None, "Partitions the branch read lacks are read from this branch."
    )
    TAG_AUTOMATIC_CREATION = _option(
        "tag.automatic-creation", _S, "none", "Create tags automatically: none, process-time, watermark, batch.",
        check=lambda v: None if v.lower() in ("none", "process-time", "watermark", "batch")
        else "one of none, process-time, watermark, batch",
    )
    TAG_CREATION_PERIOD = _option(
        "tag.creation-period", _S, "daily", "Period of automatic tags: daily, hourly, two-hours.",
        check=lambda v: None if v.lower() in ("daily", "hourly", "two-hours") else "one of daily, hourly, two-hours",
    )
    TAG_CREATION_DELAY = _option("tag.creation-delay", _DUR, 0, "Delay after a period ends before its tag.")
    TAG_PERIOD_FORMATTER = _option(
        "tag.period-formatter", _S, "with_dashes", "Format of automatic tag names: with_dashes, without_dashes.",
        check=lambda v: None if v.lower() in ("with_dashes", "without_dashes")
        else "one of with_dashes, without_dashes",
    )
    TAG_NUM_RETAINED_MAX = _option(
        "tag.num-retained-max", _I, None, "Most automatically created tags kept.", check=_at_least(1)
    )
    TAG_DEFAULT_TIME_RETAINED = _option(
        "tag.default-time-retained", _DUR, None, "Time a new tag is kept (none: forever)."
    )
    CONSUMER_ID = _option("consumer-id", _S, None, "Records the progress of a streaming reader under this id.")
    CONSUMER_EXPIRATION_TIME = _option(
        "consumer.expiration-time", _DUR, None, "Consumers not updated for this long are removed."
    )
    CONSUMER_MODE = _option(
        "consumer.mode", _S, "exactly-once", "exactly-once or at-least-once.",
        check=lambda v: None if v.lower() in ("exactly-once", "at-least-once") else "exactly-once or at-least-once",
    )
    CONSUMER_IGNORE_PROGRESS = _option(
        "consumer.ignore-progress", _B, False, "Start from the scan options, not the recorded progress."
    )
    DATA_FILE_THIN_MODE = _option("data-file.thin-mode", _B, False, "Do not repeat key columns in PK data files.")
    DISABLE_EXPLICIT_TYPE_CASTING = _option(
        "disable-explicit-type-casting", _B, False,
        "Refuse column type changes that need an explicit cast (e.g. BIGINT -> INT); widening stays allowed.",
    )
    # Java's default is true (its batch writers overwrite only the partitions they write); laketide's
    # Table.write(mode='overwrite') replaces the whole table unless this is set (or partition_overwrite= is given).
    DYNAMIC_PARTITION_OVERWRITE = _option(
        "dynamic-partition-overwrite", _B, None,
        "Overwrite only the partitions the written data has rows in (Table.write: unset means the whole table).",
    )
    # Not a Paimon option: Java takes this zone from the JVM (TimeZone.getDefault()); laketide has no such default.
    LOCAL_TIME_ZONE = _option(
        "local-time-zone", _S, "UTC",
        "Session time zone of casts that need one when reading files written before a column type change "
        "(TIMESTAMP <-> TIMESTAMP_LTZ, TIMESTAMP_LTZ -> DATE / TIME / STRING, INT / BIGINT / DATE -> "
        "TIMESTAMP_LTZ, STRING -> TIMESTAMP_LTZ). An IANA name or an offset such as +08:00.",
        check=_time_zone_check,
    )

    FIELDS_PREFIX = "fields"
    STATS_MODE_SUFFIX = "stats-mode"
    FILE_INDEX_PREFIX = "file-index."

    __slots__ = ("_raw", "_parsed")

    def __init__(self, options: Mapping[str, Any] | CoreOptions | None = None) -> None:
        if isinstance(options, CoreOptions):
            options = options.to_map()
        self._raw: dict[str, str] = _normalize_map(options or {})
        self._parsed: dict[str, Any] = {}
        self.validate()

    @classmethod
    def known_options(cls) -> Iterator[ConfigOption[Any]]:
        """Every option this class declares."""
        for value in vars(cls).values():
            if isinstance(value, ConfigOption):
                yield value

    def validate(self) -> None:
        """Parse every known option present in the map; InvalidOptionError on the first bad value."""
        for option in self.known_options():
            raw_key = self._present_key(option)
            if raw_key is not None:
                self._parsed[option.key] = option.parse(self._raw[raw_key])
        stats_keys = [k for k in self._raw if k.startswith(self.FIELDS_PREFIX + ".")
                      and k.endswith("." + self.STATS_MODE_SUFFIX)]
        for key in stats_keys:
            problem = _stats_mode_check(self._raw[key])
            if problem is not None:
                raise InvalidOptionError(f"Option '{key}' has invalid value {self._raw[key]!r}: expected {problem}")

    def _present_key(self, option: ConfigOption[Any]) -> str | None:
        if option.key in self._raw:
            return option.key
        return next((k for k in option.fallback_keys if k in self._raw), None)

    def get(self, option: ConfigOption[T]) -> T | None:
        """The parsed value of ``option`` (its key, else a fallback key), else its default."""
        if option.key in self._parsed:
            return cast(T, self._parsed[option.key])
        raw_key = self._present_key(option)
        if raw_key is None:
            return option.default
        value = option.parse(self._raw[raw_key])
        self._parsed[option.key] = value
        return value

    def contains(self, option: ConfigOption[Any]) -> bool:
        """Whether the user set ``option`` (under its key or a fallback key)."""
        return self._present_key(option) is not None

    def raw(self, key: str) -> str | None:
        """The user's raw string for any key, known or not."""
        return self._raw.get(key)

    def to_map(self) -> dict[str, str]:
        """The user's map, unchanged: what goes into schema JSON."""
        return dict(self._raw)

    @property
    def external_path_weights(self) -> tuple[int, ...] | None:
        raw = self.get(self.DATA_FILE_EXTERNAL_PATHS_WEIGHTS)
        return None if raw is None else tuple(int(w.strip()) for w in raw.split(","))

    def merged(self, updates: Mapping[str, Any]) -> CoreOptions:
        """A copy with ``updates`` laid over this map (e.g. dynamic options of one read)."""
        return CoreOptions({**self._raw, **_normalize_map(updates)})

    def field_option(self, field_name: str, suffix: str) -> str | None:
        """The raw value of ``fields.<field_name>.<suffix>``, e.g. ``aggregate-function``."""
        return self._raw.get(f"{self.FIELDS_PREFIX}.{field_name}.{suffix}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CoreOptions) and self._raw == other._raw

    def __hash__(self) -> int:
        return hash(frozenset(self._raw.items()))

    def __repr__(self) -> str:
        return f"CoreOptions({self._raw!r})"

    def __getstate__(self) -> dict[str, str]:
        return self._raw

    def __setstate__(self, state: dict[str, str]) -> None:
        self._raw = state
        self._parsed = {}

    # ---- typed accessors (sizes in bytes, durations in milliseconds) --------------------------------

    bucket: _Value[int] = _Value(BUCKET)
    file_compression: _Value[str] = _Value(FILE_COMPRESSION)
    file_compression_zstd_level: _Value[int] = _Value(FILE_COMPRESSION_ZSTD_LEVEL)
    manifest_compression: _Value[str] = _Value(MANIFEST_COMPRESSION)
    manifest_target_file_size: _Value[int] = _Value(MANIFEST_TARGET_FILE_SIZE)
    manifest_merge_min_count: _Value[int] = _Value(MANIFEST_MERGE_MIN_COUNT)
    manifest_full_compaction_threshold_size: _Value[int] = _Value(MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE)
    snapshot_num_retained_min: _Value[int] = _Value(SNAPSHOT_NUM_RETAINED_MIN)
    snapshot_num_retained_max: _Value[int] = _Value(SNAPSHOT_NUM_RETAINED_MAX)
    snapshot_time_retained: _Value[int] = _Value(SNAPSHOT_TIME_RETAINED)
    _changelog_num_retained_min: _Value[int | None] = _Value(CHANGELOG_NUM_RETAINED_MIN)
    _changelog_num_retained_max: _Value[int | None] = _Value(CHANGELOG_NUM_RETAINED_MAX)
    _changelog_time_retained: _Value[int | None] = _Value(CHANGELOG_TIME_RETAINED)

    @property
    def changelog_num_retained_min(self) -> int:
        value = self._changelog_num_retained_min
        return self.snapshot_num_retained_min if value is None else value

    @property
    def changelog_num_retained_max(self) -> int:
        value = self._changelog_num_retained_max
        return self.snapshot_num_retained_max if value is None else value

    @property
    def changelog_time_retained(self) -> int:
        value = self._changelog_time_retained
        return self.snapshot_time_retained if value is None else value

    @property
    def changelog_decoupled(self) -> bool:
        """Changelogs outlive snapshots (Paimon: CoreOptions#changelogLifecycleDecoupled)."""
        return (self.changelog_num_retained_max > self.snapshot_num_retained_max
                or self.changelog_time_retained > self.snapshot_time_retained
                or self.changelog_num_retained_min > self.snapshot_num_retained_min)
    commit_user_prefix: _Value[str | None] = _Value(COMMIT_USER_PREFIX)
    commit_max_retries: _Value[int] = _Value(COMMIT_MAX_RETRIES)
    commit_min_retry_wait: _Value[int] = _Value(COMMIT_MIN_RETRY_WAIT)
    commit_max_retry_wait: _Value[int] = _Value(COMMIT_MAX_RETRY_WAIT)
    # None means no limit (Java returns Long.MAX_VALUE).
    commit_timeout: _Value[int | None] = _Value(COMMIT_TIMEOUT)
    partition_default_name: _Value[str] = _Value(PARTITION_DEFAULT_NAME)
    metadata_stats_mode: _Value[str] = _Value(METADATA_STATS_MODE)
    write_buffer_size: _Value[int] = _Value(WRITE_BUFFER_SIZE)
    sort_spill_buffer_size: _Value[int] = _Value(SORT_SPILL_BUFFER_SIZE)
    write_only: _Value[bool] = _Value(WRITE_ONLY)
    num_sorted_run_compaction_trigger: _Value[int] = _Value(NUM_SORTED_RUN_COMPACTION_TRIGGER)
    compaction_max_size_amplification_percent: _Value[int] = _Value(COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT)
    compaction_size_ratio: _Value[int] = _Value(COMPACTION_SIZE_RATIO)
    full_compaction_delta_commits: _Value[int | None] = _Value(FULL_COMPACTION_DELTA_COMMITS)
    merge_engine: _Value[MergeEngine] = _Value(MERGE_ENGINE)
    rowkind_field: _Value[str | None] = _Value(ROWKIND_FIELD)
    ignore_delete: _Value[bool] = _Value(IGNORE_DELETE)
    data_file_prefix: _Value[str] = _Value(DATA_FILE_PREFIX)
    changelog_file_prefix: _Value[str] = _Value(CHANGELOG_FILE_PREFIX)
    data_file_path_directory: _Value[str | None] = _Value(DATA_FILE_PATH_DIRECTORY)
    data_file_external_paths: _Value[str | None] = _Value(DATA_FILE_EXTERNAL_PATHS)
    external_path_strategy: _Value[ExternalPathStrategy] = _Value(DATA_FILE_EXTERNAL_PATHS_STRATEGY)
    external_specific_fs: _Value[str | None] = _Value(DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS)
    index_file_in_data_file_dir: _Value[bool] = _Value(INDEX_FILE_IN_DATA_FILE_DIR)
    row_tracking_enabled: _Value[bool] = _Value(ROW_TRACKING_ENABLED)
    data_evolution_enabled: _Value[bool] = _Value(DATA_EVOLUTION_ENABLED)
    blob_target_file_size: _Value[int | None] = _Value(BLOB_TARGET_FILE_SIZE)
    compaction_small_file_ratio: _Value[float] = _Value(COMPACTION_SMALL_FILE_RATIO)
    compaction_min_file_num: _Value[int] = _Value(COMPACTION_MIN_FILE_NUM)
    compaction_optimization_interval: _Value[int | None] = _Value(COMPACTION_OPTIMIZATION_INTERVAL)
    compaction_force_up_level_0: _Value[bool] = _Value(COMPACTION_FORCE_UP_LEVEL_0)
    force_lookup: _Value[bool] = _Value(FORCE_LOOKUP)
    lookup_cache_max_disk_size: _Value[int | None] = _Value(LOOKUP_CACHE_MAX_DISK_SIZE)
    lookup_cache_file_retention: _Value[int] = _Value(LOOKUP_CACHE_FILE_RETENTION)
    local_temp_dir: _Value[str | None] = _Value(LOCAL_TEMP_DIR)
    sequence_field_sort_order: _Value[str] = _Value(SEQUENCE_FIELD_SORT_ORDER)
    dynamic_bucket_assigner_parallelism: _Value[int | None] = _Value(DYNAMIC_BUCKET_ASSIGNER_PARALLELISM)
    dynamic_bucket_max_buckets: _Value[int] = _Value(DYNAMIC_BUCKET_MAX_BUCKETS)
    cross_partition_upsert_index_ttl: _Value[int | None] = _Value(CROSS_PARTITION_UPSERT_INDEX_TTL)
    changelog_producer: _Value[ChangelogProducer] = _Value(CHANGELOG_PRODUCER)
    deletion_vectors_enabled: _Value[bool] = _Value(DELETION_VECTORS_ENABLED)
    deletion_vectors_bitmap64: _Value[bool] = _Value(DELETION_VECTORS_BITMAP64)
    deletion_vectors_modifiable: _Value[bool] = _Value(DELETION_VECTORS_MODIFIABLE)
    changelog_producer_row_deduplicate: _Value[bool] = _Value(CHANGELOG_PRODUCER_ROW_DEDUPLICATE)
    changelog_producer_lookup_wait: _Value[bool] = _Value(CHANGELOG_PRODUCER_LOOKUP_WAIT)
    dynamic_bucket_target_row_num: _Value[int] = _Value(DYNAMIC_BUCKET_TARGET_ROW_NUM)
    dynamic_bucket_initial_buckets: _Value[int | None] = _Value(DYNAMIC_BUCKET_INITIAL_BUCKETS)
    file_index_in_manifest_threshold: _Value[int] = _Value(FILE_INDEX_IN_MANIFEST_THRESHOLD)
    file_index_read_enabled: _Value[bool] = _Value(FILE_INDEX_READ_ENABLED)
    scan_snapshot_id: _Value[int | None] = _Value(SCAN_SNAPSHOT_ID)
    scan_timestamp_millis: _Value[int | None] = _Value(SCAN_TIMESTAMP_MILLIS)
    scan_tag_name: _Value[str | None] = _Value(SCAN_TAG_NAME)
    read_batch_size: _Value[int] = _Value(READ_BATCH_SIZE)
    source_split_target_size: _Value[int] = _Value(SOURCE_SPLIT_TARGET_SIZE)
    source_split_open_file_cost: _Value[int] = _Value(SOURCE_SPLIT_OPEN_FILE_COST)
    scan_timestamp: _Value[str | None] = _Value(SCAN_TIMESTAMP)
    scan_version: _Value[str | None] = _Value(SCAN_VERSION)
    scan_watermark: _Value[int | None] = _Value(SCAN_WATERMARK)
    incremental_between: _Value[str | None] = _Value(INCREMENTAL_BETWEEN)
    incremental_between_timestamp: _Value[str | None] = _Value(INCREMENTAL_BETWEEN_TIMESTAMP)
    scan_fallback_branch: _Value[str | None] = _Value(SCAN_FALLBACK_BRANCH)
    tag_creation_delay: _Value[int] = _Value(TAG_CREATION_DELAY)
    tag_num_retained_max: _Value[int | None] = _Value(TAG_NUM_RETAINED_MAX)
    tag_default_time_retained: _Value[int | None] = _Value(TAG_DEFAULT_TIME_RETAINED)
    consumer_id: _Value[str | None] = _Value(CONSUMER_ID)
    consumer_expiration_time: _Value[int | None] = _Value(CONSUMER_EXPIRATION_TIME)
    consumer_ignore_progress: _Value[bool] = _Value(CONSUMER_IGNORE_PROGRESS)

    @property
    def lookup_compact_gentle(self) -> bool:
        return cast(str, self.get(self.LOOKUP_COMPACT)).lower() == "gentle"

    @property
    def lookup_compact_max_interval(self) -> int:
        """Java's CoreOptions#lookupCompactMaxInterval: 2 x the run trigger by default, never below it."""
        trigger = self.num_sorted_run_compaction_trigger
        raw = self.get(self.LOOKUP_COMPACT_MAX_INTERVAL)
        value = trigger * 2 if raw is None else int(raw)
        return max(trigger, value)

    @property
    def incremental_between_scan_mode(self) -> str:
        return cast(str, self.get(self.INCREMENTAL_BETWEEN_SCAN_MODE)).lower()

    @property
    def tag_automatic_creation(self) -> str:
        return cast(str, self.get(self.TAG_AUTOMATIC_CREATION)).lower()

    @property
    def tag_creation_period(self) -> str:
        return cast(str, self.get(self.TAG_CREATION_PERIOD)).lower()

    @property
    def tag_period_formatter(self) -> str:
        return cast(str, self.get(self.TAG_PERIOD_FORMATTER)).lower()

    @property
    def consumer_mode(self) -> str:
        return cast(str, self.get(self.CONSUMER_MODE)).lower()
    data_file_thin_mode: _Value[bool] = _Value(DATA_FILE_THIN_MODE)
    disable_explicit_type_casting: _Value[bool] = _Value(DISABLE_EXPLICIT_TYPE_CASTING)
    local_time_zone: _Value[str] = _Value(LOCAL_TIME_ZONE)
    dynamic_partition_overwrite: _Value[bool | None] = _Value(DYNAMIC_PARTITION_OVERWRITE)

    @property
    def bucket_key(self) -> list[str] | None:
        """None when unset or blank (then the primary key, else the whole row, is the bucket key)."""
        return self.get(self.BUCKET_KEY) or None

    @property
    def file_format(self) -> str:
        return cast(str, self.get(self.FILE_FORMAT)).lower()

    @property
    def manifest_format(self) -> str:
        return cast(str, self.get(self.MANIFEST_FORMAT)).lower()

    def target_file_size(self, *, has_primary_key: bool) -> int:
        """Target data file size in bytes; the default depends on the table kind, as in Java."""
        explicit = self.get(self.TARGET_FILE_SIZE)
        if explicit is not None:
            return cast(int, explicit)
        return (128 << 20) if has_primary_key else (256 << 20)

    def stats_mode(self, field_name: str) -> str:
        """Stats mode of one column: ``fields.<name>.stats-mode``, else ``metadata.stats-mode``."""
        return self.field_option(field_name, self.STATS_MODE_SUFFIX) or self.metadata_stats_mode

    @property
    def num_sorted_run_stop_trigger(self) -> int:
        """Explicit value or trigger + 3, never below the compaction trigger (as in Java)."""
        trigger = self.num_sorted_run_compaction_trigger
        stop = self.get(self.NUM_SORTED_RUN_STOP_TRIGGER)
        return max(trigger, min(trigger + 3, _INT_MAX) if stop is None else stop)

    @property
    def sort_spill_threshold(self) -> int:
        """Explicit value or num-sorted-run.stop-trigger + 1 (as in Java)."""
        threshold = self.get(self.SORT_SPILL_THRESHOLD)
        return min(self.num_sorted_run_stop_trigger + 1, _INT_MAX) if threshold is None else threshold

    @property
    def num_levels(self) -> int:
        """Explicit value or trigger + 1, so that compaction never lands in level 0."""
        levels = self.get(self.NUM_LEVELS)
        return min(self.num_sorted_run_compaction_trigger + 1, _INT_MAX) if levels is None else levels

    @property
    def sequence_field(self) -> list[str]:
        return [name.strip() for name in self.get(self.SEQUENCE_FIELD) or []]

    def file_index_options(self) -> dict[str, str]:
        """Every ``file-index.*`` option, raw (e.g. ``file-index.bloom-filter.columns``)."""
        return {k: v for k, v in self._raw.items() if k.startswith(self.FILE_INDEX_PREFIX)}


# ---- options laketide refuses to write with -----------------------------------------------------------------


def _set(value: str) -> bool:
    return bool(value.strip())


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


def _false(value: str) -> bool:
    return value.strip().lower() == "false"


def _other_than(*accepted: str) -> Callable[[str], bool]:
    return lambda value: value.strip().lower() not in accepted


@dataclass(frozen=True, slots=True, kw_only=True)
class UnsupportedOption:
    """A Paimon table option that changes what writers produce (rows, files, metadata) and that laketide does
    not implement: accepting it would write a table that differs from what the option promises.

    ``key`` may hold ``*`` for one key segment or more (``file-index.*.columns``); ``unsupported`` says which
    values are refused (the others behave as laketide does anyway); ``example`` is one refused value.
    """

    key: str
    reason: str
    example: str
    unsupported: Callable[[str], bool] = field(default=_set, compare=False, repr=False)

    def matches(self, key: str) -> bool:
        if "*" not in self.key:
            return key == self.key
        pattern = ".+".join(re.escape(part) for part in self.key.split("*"))
        return re.fullmatch(pattern, key) is not None



# One entry per key (or key pattern). Options that only tune how work is done (buffers, spilling, parallelism,
# compaction timing, caches) are not here: ignoring them changes no byte a reader sees. Read options are not
# here either. Tables carrying these options (written by Java) stay readable; creating, altering or writing
# them is refused with UnsupportedOptionError naming the option.
UNSUPPORTED_WRITE_OPTIONS: tuple[UnsupportedOption, ...] = (
    UnsupportedOption(key="type", example="format-table", unsupported=_other_than("table"),
                      reason="only plain Paimon tables ('type' = 'table') are implemented"),
    UnsupportedOption(key="bucket", example="-2", unsupported=lambda v: v.strip() == "-2",
                      reason="postpone bucket mode (bucket = -2) is not implemented; use -1 or a bucket number"),
    UnsupportedOption(key="bucket-function.type", example="mod", unsupported=_other_than("default"),
                      reason="only Paimon's default bucket hash is implemented"),
    UnsupportedOption(key="file.format", example="csv", unsupported=_other_than("parquet", "orc", "avro"),
                      reason="laketide writes data files as parquet, orc or avro only"),
    UnsupportedOption(key="manifest.format", example="csv", unsupported=_other_than("avro", "orc", "parquet"),
                      reason="laketide writes manifests as avro, orc or parquet only"),
    UnsupportedOption(key="file.format.per.level", example="0:avro",
                      reason="laketide writes every level in 'file.format'"),
    UnsupportedOption(key="file.compression.per.level", example="0:lz4",
                      reason="laketide compresses every level with 'file.compression'"),
    UnsupportedOption(key="metadata.stats-mode.per.level", example="0:none",
                      reason="laketide keeps the same column stats at every level"),
    UnsupportedOption(key="metadata.stats-keep-first-n-columns", example="2", unsupported=_other_than("-1"),
                      reason="laketide keeps stats of every column 'metadata.stats-mode' names"),
    UnsupportedOption(key="file.suffix.include.compression", example="true", unsupported=_true,
                      reason="laketide names data files without the compression suffix"),
    UnsupportedOption(key="partition.legacy-name", example="false", unsupported=_false,
                      reason="laketide names partition directories the legacy way (Java's toString)"),
    UnsupportedOption(key="ignore-update-before", example="true", unsupported=_true,
                      reason="laketide does not drop -U rows on write"),
    UnsupportedOption(key="primary-key.nullable", example="true", unsupported=_true,
                      reason="laketide makes primary key columns NOT NULL"),
    UnsupportedOption(key="record-level.expire-time", example="1 d",
                      reason="laketide does not expire records during compaction"),
    UnsupportedOption(key="partition.expiration-time", example="7 d",
                      reason="laketide does not expire partitions at commit"),
    UnsupportedOption(key="tag.automatic-creation", example="watermark",
                      unsupported=lambda v: v.strip().lower() == "watermark",
                      reason="laketide creates tags automatically by process time or per batch, not by watermark"),
    UnsupportedOption(key="commit.callbacks", example="com.example.Callback",
                      reason="Java commit callbacks cannot run in laketide"),
    UnsupportedOption(key="tag.callbacks", example="com.example.Callback",
                      reason="Java tag callbacks cannot run in laketide"),
    UnsupportedOption(key="snapshot.ignore-empty-commit", example="false", unsupported=_false,
                      reason="laketide never publishes an empty snapshot"),
    UnsupportedOption(key="sequence.snapshot-ordering", example="true", unsupported=_true,
                      reason="laketide orders records by sequence number, not by snapshot"),
    UnsupportedOption(key="chain-table.enabled", example="true", unsupported=_true,
                      reason="laketide does not implement chain tables"),
    UnsupportedOption(key="blob-field", example="payload", reason="laketide stores no column in blob files"),
    UnsupportedOption(key="blob-descriptor-field", example="payload",
                      reason="laketide stores no column as a blob descriptor"),
    UnsupportedOption(key="vector-field", example="embedding", reason="laketide stores no column in vector files"),
    UnsupportedOption(key="variant.shreddingSchema", example="{}", reason="laketide does not shred variants"),
    UnsupportedOption(key="global-index.enabled", example="true", unsupported=_true,
                      reason="laketide builds no global indexes"),
    UnsupportedOption(key="pk-*.index.columns", example="id", reason="laketide builds no primary-key indexes"),
    UnsupportedOption(key="add-column-before-partition", example="true", unsupported=_true,
                      reason="laketide adds columns where the AddColumn change says"),
    UnsupportedOption(key="branch", example="b1", unsupported=_other_than("main"),
                      reason="laketide writes only the main branch"),
    # Java refuses it too: a filesystem catalog places its tables itself.
    UnsupportedOption(key="path", example="/elsewhere",
                      reason="the filesystem catalog places tables itself; 'path' cannot move one"),
)


def unsupported_write_options(options: Mapping[str, str]) -> list[tuple[str, UnsupportedOption]]:
    """The (key, entry) pairs of ``options`` whose value laketide refuses to write with."""
    found = []
    for key, value in options.items():
        for entry in UNSUPPORTED_WRITE_OPTIONS:
            if entry.matches(key) and entry.unsupported(value):
                found.append((key, entry))
                break
    return found


# Families of keys whose middle part names a column, an index type or a format (Paimon: fields.<col>.<option>,
# file-index.<type>.<...>, the file formats' own '<format>.<option>' settings).
_KEY_FAMILIES = ("fields.", "file-index.", "parquet.", "orc.", "avro.", "csv.", "json.", "text.", "lance.", "blob.")


@functools.cache
def _paimon_option_keys() -> frozenset[str]:
    text = importlib.resources.files("laketide").joinpath("data/paimon_option_keys.txt").read_text("utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


@functools.cache
def _known_keys() -> frozenset[str]:
    own = {k for option in CoreOptions.known_options() for k in (option.key, *option.fallback_keys)}
    return frozenset(own) | _paimon_option_keys()


def unknown_option_keys(options: Mapping[str, str]) -> list[str]:
    """Keys of ``options`` that neither laketide nor Apache Paimon declares (most likely typos)."""
    known = _known_keys()
    return [k for k in options if k not in known and not k.startswith(_KEY_FAMILIES)
            and not any(entry.matches(k) for entry in UNSUPPORTED_WRITE_OPTIONS)]


def closest_option_key(key: str) -> str | None:
    """The known key ``key`` most likely misspells (``merge_engine`` -> ``merge-engine``, ``buckett`` -> ``bucket``),
    or None when none is close."""
    known = sorted(_known_keys())
    spelled = key.strip().lower().replace("_", "-")
    if spelled != key and spelled in _known_keys():
        return spelled
    close = difflib.get_close_matches(spelled, known, n=1, cutoff=0.8)
    return close[0] if close else None


def _foreign(key: str) -> bool:
    """A key of another namespace (``spark.*``, ``flink.*``, ``owner.team``, any dotted family Paimon has no key
    in): user metadata or another engine's setting, never a misspelled Paimon option."""
    family = key.split(".", 1)[0] if "." in key else None
    return family is not None and family not in _known_families()


@functools.cache
def _known_families() -> frozenset[str]:
    return frozenset(k.split(".", 1)[0] for k in _known_keys() if "." in k) | {
        f.rstrip(".") for f in _KEY_FAMILIES}


def check_unknown_options(options: Mapping[str, str], *, table_name: str, keys: Iterable[str] | None = None) -> None:
    """Refuse a misspelled option, keep and warn about a foreign one (only ``keys``, when given).

    A key close to a Paimon or laketide option (not itself one) is a typo that would silently change nothing:
    InvalidOptionError with "did you mean ...?". Other unknown keys are kept, as Java keeps them (user metadata,
    other engines' settings, Paimon options newer than laketide knows), with a warning naming the table.
    """
    wanted = None if keys is None else set(keys)
    typos = []
    for key in unknown_option_keys(options):
        if wanted is not None and key not in wanted:
            continue
        close = None if _foreign(key) else closest_option_key(key)
        if close is not None:
            typos.append(f"{key!r} (did you mean {close!r}?)")
        else:
            _LOG.warning("Table %s: option %r is not a Paimon option; it is kept but has no effect", table_name, key)
    if typos:
        raise InvalidOptionError(
            f"Table {table_name}: unknown option{'s' if len(typos) > 1 else ''} {', '.join(typos)}. A key that is no "
            f"Paimon option is only kept when it is clearly foreign (e.g. 'owner', 'spark.x', 'myapp.team')"
        )


def warn_unknown_options(options: Mapping[str, str], *, table_name: str, keys: Iterable[str] | None = None) -> None:
    """Log a warning for each unknown key (only ``keys``, when given): it is kept in the schema, as Java keeps it,
    but changes nothing laketide or Paimon does, which is rarely what the user meant."""
    wanted = None if keys is None else set(keys)
    for key in unknown_option_keys(options):
        if wanted is not None and key not in wanted:
            continue
        close = closest_option_key(key)
        hint = f"; did you mean {close!r}?" if close else ""
        _LOG.warning("Table %s: option %r is not a Paimon option; it is kept but has no effect%s",
                     table_name, key, hint)


def check_write_options(
    options: Mapping[str, str], *, table_name: str, keys: Iterable[str] | None = None
) -> None:
    """UnsupportedOptionError naming every option in ``options`` (only ``keys``, when given) that laketide
    cannot honour when writing table ``table_name``."""
    wanted = None if keys is None else set(keys)
    found = [(k, e) for k, e in unsupported_write_options(options) if wanted is None or k in wanted]
    if not found:
        return
    details = "; ".join(f"'{k}' = {options[k]!r}: {e.reason}" for k, e in found)
    raise UnsupportedOptionError(
        f"Table {table_name}: laketide cannot write with option{'s' if len(found) > 1 else ''} {details}. "
        f"Remove {'them' if len(found) > 1 else 'it'} (or write this table with Java Paimon); reads still work"
    )


class CatalogOptions:
    """Catalog options (Paimon: org.apache.paimon.options.CatalogOptions); unknown keys are kept."""

    WAREHOUSE = _option("warehouse", _S, None, "Root path of the catalog's warehouse.")
    METASTORE = _option("metastore", _S, "filesystem", "Metastore kind: filesystem or jdbc.")
    URI = _option("uri", _S, None, "Uri of the metastore server or database.")
    LOCK_ENABLED = _option("lock.enabled", _B, None, "Take a catalog lock around commits.")
    LOCK_TYPE = _option("lock.type", _S, None, "Kind of catalog lock.")
    LOCK_CHECK_MAX_SLEEP = _option("lock-check-max-sleep", _DUR, 8_000, "Max sleep between lock checks.")
    LOCK_ACQUIRE_TIMEOUT = _option("lock-acquire-timeout", _DUR, 480_000, "Max wait to acquire the lock.")

    __slots__ = ("_raw",)

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self._raw: dict[str, str] = _normalize_map(options or {})
        for value in vars(type(self)).values():
            if isinstance(value, ConfigOption) and value.key in self._raw:
                value.parse(self._raw[value.key])

    def get(self, option: ConfigOption[T]) -> T | None:
        raw = self._raw.get(option.key)
        return option.default if raw is None else option.parse(raw)

    def to_map(self) -> dict[str, str]:
        return dict(self._raw)

    def __repr__(self) -> str:
        return f"CatalogOptions({self._raw!r})"

    warehouse: _Value[str | None] = _Value(WAREHOUSE)
    uri: _Value[str | None] = _Value(URI)
    lock_enabled: _Value[bool | None] = _Value(LOCK_ENABLED)
    lock_type: _Value[str | None] = _Value(LOCK_TYPE)
    lock_check_max_sleep: _Value[int] = _Value(LOCK_CHECK_MAX_SLEEP)
    lock_acquire_timeout: _Value[int] = _Value(LOCK_ACQUIRE_TIMEOUT)

    @property
    def metastore(self) -> str:
        return cast(str, self.get(self.METASTORE)).lower()


def _normalize_map(options: Mapping[str, Any]) -> dict[str, str]:
    """Keep strings as they are; render Python scalars the way Paimon spells them ('true', '4')."""
    result: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise InvalidOptionError(f"Option keys must be strings, got {key!r}")
        if isinstance(value, str):
            result[key] = value
        elif isinstance(value, bool):
            result[key] = "true" if value else "false"
        elif isinstance(value, int):
            result[key] = str(value)
        elif isinstance(value, enum.Enum) and isinstance(value.value, str):
            result[key] = value.value
        else:
            raise InvalidOptionError(
                f"Option '{key}' has value {value!r} of type {type(value).__name__}: expected a string"
            )
    return result
