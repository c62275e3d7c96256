"""LSM compaction: strategies (universal), the per-bucket manager, compaction tasks, append small-file packing."""

from laketide.mergetree.compaction.task import CompactResult, KeyValueRewriter, run_compact_unit
from laketide.mergetree.compaction.universal import (
    CompactUnit,
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    pick_full_compaction,
)

__all__ = [
    "CompactResult",
    "CompactUnit",
    "EarlyFullCompaction",
    "ForceUpLevel0Compaction",
    "KeyValueRewriter",
    "UniversalCompaction",
    "pick_full_compaction",
    "run_compact_unit",
]
