"""The store layer: one FileStore per (table, schema, branch), between the table facade and the file layers.

Paimon: org.apache.paimon.FileStore
"""

from laketide.store.file_store import AppendOnlyFileStore, BucketMode, FileStore, KeyValueFileStore
from laketide.store.routing import BucketRouter, DynamicBucketTask

__all__ = ["AppendOnlyFileStore", "BucketMode", "BucketRouter", "DynamicBucketTask", "FileStore", "KeyValueFileStore"]
