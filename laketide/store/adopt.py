"""Adopting data files another engine encoded (Spark's own Parquet writer) as this store's level-0 files.

The layouts are the ones ``TableWrite`` gives its file writers, so a described file's metadata equals what
laketide's writer records for the same rows. ``describe_written_file_from_footer`` gives the same metadata from
the Parquet footer, reading back only the columns (and first / last rows) the footer cannot answer for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laketide.io.file_meta import DescribedFile, describe_parquet_file
from laketide.io.footer_file_meta import describe_parquet_footer
from laketide.io.file_writer import KeyLayout, StatsLayout

if TYPE_CHECKING:
    from laketide.store.file_store import FileStore

__all__ = ["DescribedFile", "describe_written_file", "describe_written_file_from_footer"]


def describe_written_file(store: FileStore, path: str, *, first_sequence_number: int = 0) -> DescribedFile:
    stats_layout, key_layout = _layouts(store)
    return describe_parquet_file(
        store.file_io, path, schema_id=store.schema.id, stats_layout=stats_layout,
        partition_keys=tuple(store.schema.partition_keys), key_layout=key_layout,
        first_sequence_number=first_sequence_number,
    )


def describe_written_file_from_footer(store: FileStore, path: str, *, first_sequence_number: int = 0) -> DescribedFile:
    stats_layout, key_layout = _layouts(store)
    return describe_parquet_footer(
        store.file_io, path, schema_id=store.schema.id, stats_layout=stats_layout,
        partition_keys=tuple(store.schema.partition_keys), key_layout=key_layout,
        first_sequence_number=first_sequence_number,
    )


def _layouts(store: FileStore) -> tuple[StatsLayout, KeyLayout | None]:
    schema, options = store.schema, store.options
    stats_layout = StatsLayout(
        names=tuple(schema.field_names),
        types=tuple(f.type for f in schema.fields),
        modes=tuple(options.stats_mode(n) for n in schema.field_names),
    )
    key_layout = None
    if schema.primary_keys:
        key_names = tuple(schema.trimmed_primary_keys)
        key_layout = KeyLayout(
            names=key_names,
            types=tuple(schema.field(k).type for k in key_names),
            modes=tuple(options.stats_mode(k) for k in key_names),
        )
    return stats_layout, key_layout
