"""Table and file indexes: deletion vectors, the dynamic-bucket hash index, per-data-file indexes (``file_index``)."""

from laketide.index.deletion_vectors import (
    DeletionVector,
    DeletionVectorIndex,
    read_dv,
    read_dv_index_file,
    write_dv_index_file,
)

__all__ = ["DeletionVector", "DeletionVectorIndex", "read_dv", "read_dv_index_file", "write_dv_index_file"]
