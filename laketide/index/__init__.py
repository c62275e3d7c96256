"""Table and file indexes: deletion vectors (hash index and file indexes follow)."""

from laketide.index.deletion_vectors import (
    DeletionVector,
    DeletionVectorIndex,
    read_dv,
    read_dv_index_file,
    write_dv_index_file,
)

__all__ = ["DeletionVector", "DeletionVectorIndex", "read_dv", "read_dv_index_file", "write_dv_index_file"]
