"""Per-data-file indexes (bloom filter, bitmap, bit-sliced index) in Paimon's exact bytes, and their evaluation.

Writing::

    spec = parse_file_index_options(table_options, fields=file_fields)      # once per table / schema
    builder = FileIndexBuilder(spec, fields=file_fields)                      # once per data file
    builder.write(batch) ...                                                   # every batch written to it
    container = builder.finish()                                               # bytes or None
    if container is not None: embedded if spec.embed(len(container)) else sidecar f"{file}{INDEX_FILE_SUFFIX}"

Reading::

    container = FileIndexContainer(embedded_bytes_or_ranged_reader, path=..., size=...)
    evaluation = evaluate_file_index(container, predicate, fields=file_fields)
    evaluation.result  # SKIP / REMAIN / ROWS (row positions, exact or a superset)

Paimon: org.apache.paimon.fileindex (FileIndexFormat, FileIndexPredicate, bloomfilter, bitmap, bsi)
"""

from laketide.index.file_index.base import ColumnIndexReader
from laketide.index.file_index.bitmap import BITMAP, BitmapIndexReader, BitmapIndexWriter, bitmap_supports
from laketide.index.file_index.bloom import BLOOM_FILTER, BloomFilterReader, BloomFilterWriter, bloom_supports
from laketide.index.file_index.bsi import BSI, BsiIndexReader, BsiIndexWriter, bsi_supports
from laketide.index.file_index.builder import FileIndexBuilder, build_file_index
from laketide.index.file_index.container import (
    INDEX_FILE_SUFFIX,
    KNOWN_INDEX_TYPES,
    FileIndexContainer,
    FileIndexEntry,
    java_container_order,
    write_container,
)
from laketide.index.file_index.evaluate import FileIndexEvaluation, IndexUse, evaluate_file_index, push_not
from laketide.index.file_index.result import FileIndexResult, ResultKind
from laketide.index.file_index.spec import (
    IN_MANIFEST_THRESHOLD,
    ColumnIndexSpec,
    FileIndexSpec,
    parse_file_index_options,
)

__all__ = [
    "BITMAP",
    "BLOOM_FILTER",
    "BSI",
    "IN_MANIFEST_THRESHOLD",
    "INDEX_FILE_SUFFIX",
    "KNOWN_INDEX_TYPES",
    "BitmapIndexReader",
    "BitmapIndexWriter",
    "BloomFilterReader",
    "BloomFilterWriter",
    "BsiIndexReader",
    "BsiIndexWriter",
    "ColumnIndexReader",
    "ColumnIndexSpec",
    "FileIndexBuilder",
    "FileIndexContainer",
    "FileIndexEntry",
    "FileIndexEvaluation",
    "FileIndexResult",
    "FileIndexSpec",
    "IndexUse",
    "ResultKind",
    "bitmap_supports",
    "bloom_supports",
    "bsi_supports",
    "build_file_index",
    "evaluate_file_index",
    "java_container_order",
    "parse_file_index_options",
    "push_not",
    "write_container",
]
