"""Reading chosen row groups of a Parquet file in runs of consecutive groups: one batch reader per run.

Primary-key files are cut into ~2 MiB row groups (keyed reads prune by them): ~24k rows each in the benchmark's
files. Opening pyarrow's batch reader once per row group, as pruned and selected reads did, cost a merge read's
decode 25-30% more CPU than one reader over the same groups (the e2e's 8M-row files, all columns: 1.33-1.72 vs
1.04-1.22 CPU s), and gave batches of one group's rows instead of ``batch_size``. A run of consecutive groups is
read by one reader, whose batches may span group boundaries; positions stay exact, since a run has no gap.

Large row groups that one batch could hold several of keep one batch each, as whole-file reads do
(parquet.py ``_read``): a batch spanning such groups is assembled in fresh buffers of its whole size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["group_runs", "read_group_runs"]


def group_runs(groups: Sequence[int]) -> list[list[int]]:
    """Ascending row-group numbers cut into runs of consecutive ones: [0, 1, 2, 5, 6] -> [[0, 1, 2], [5, 6]]."""
    runs: list[list[int]] = []
    for g in groups:
        if runs and runs[-1][-1] == g - 1:
            runs[-1].append(g)
        else:
            runs.append([g])
    return runs


def read_group_runs(
    parquet_file: pq.ParquetFile,
    groups: Sequence[int],
    *,
    counts: np.ndarray,
    columns: list[str],
    batch_size: int,
    whole_groups: bool,
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The batches of row groups ``groups`` (ascending), each with the file position of its first row.

    ``counts``: every row group's row count; ``whole_groups``: one batch per group (large groups, see above).
    """
    starts = np.cumsum(counts) - counts
    runs = [[g] for g in groups] if whole_groups else group_runs(groups)
    for run in runs:
        pos = int(starts[run[0]])
        for batch in parquet_file.iter_batches(batch_size=batch_size, columns=columns, row_groups=run):
            yield pos, batch
            pos += batch.num_rows
