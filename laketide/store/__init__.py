"""The store layer: one FileStore per (table, schema, branch), between the table facade and the file layers.

Paimon: org.apache.paimon.FileStore
"""

from laketide.store.file_store import AppendOnlyFileStore, BucketMode, FileStore, KeyValueFileStore

__all__ = ["AppendOnlyFileStore", "BucketMode", "FileStore", "KeyValueFileStore"]
