"""Data-file codecs (Parquet, ORC, Avro) and column statistics: pure codecs, no Paimon metadata.

This package is the only home of pyarrow.parquet, pyarrow.orc and fastavro for data files.
"""

from __future__ import annotations

from laketide.format.avro import AVRO_RECORD_NAME, AvroFormat, arrow_schema_from_avro, avro_schema
from laketide.format.base import FileFormat, FormatWriter, file_format
from laketide.format.orc import OrcFormat
from laketide.format.parquet import ParquetFormat
from laketide.format.stats import (
    METADATA_STATS_MODE_KEY,
    ColumnStats,
    StatsMode,
    StatsModeKind,
    collect_stats,
    field_stats_mode_key,
    merge_column_stats,
    merge_stats,
    parse_stats_mode,
    truncate_max,
    truncate_min,
)

__all__ = [
    "AVRO_RECORD_NAME",
    "METADATA_STATS_MODE_KEY",
    "AvroFormat",
    "ColumnStats",
    "FileFormat",
    "FormatWriter",
    "OrcFormat",
    "ParquetFormat",
    "StatsMode",
    "StatsModeKind",
    "arrow_schema_from_avro",
    "avro_schema",
    "collect_stats",
    "field_stats_mode_key",
    "file_format",
    "merge_column_stats",
    "merge_stats",
    "parse_stats_mode",
    "truncate_max",
    "truncate_min",
]
