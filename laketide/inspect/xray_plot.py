"""The x-ray as a picture (matplotlib, headless Agg): one panel per bucket, and the snapshot timeline.

In a bucket's panel each row is a sorted run (level-0 runs on top, the largest level at the bottom), each box a
file spanning its key range (keys placed by rank), labelled with its size and sequence range; a hatched box has
a deletion vector, its darkness the share of rows deleted.
"""

from __future__ import annotations

import math
from typing import Any

from laketide.inspect.xray import BucketXRay, TableXRay, dv_fill

__all__ = ["MAX_PANELS", "save_xray"]

MAX_PANELS = 12
_LEVEL_COLOURS = ["#f28e2b", "#4e79a7", "#59a14f", "#76b7b2", "#edc948", "#b07aa1", "#9c755f", "#bab0ac"]


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{n}B"


def _key_ranks(b: BucketXRay) -> dict[Any, int]:
    keys = {f.min_key_values for f in b.files} | {f.max_key_values for f in b.files}
    ordered = sorted(keys, key=lambda k: tuple((v is None, v) for v in k))
    return {k: i for i, k in enumerate(ordered)}


def _draw_bucket(ax: Any, b: BucketXRay) -> None:
    from matplotlib.patches import Rectangle

    ranks = _key_ranks(b)
    # Append tables (no keys) place a run's files side by side instead of by key range.
    keyless = all(not f.min_key_values for f in b.files)
    width = max(len(run.files) for run in b.runs) if keyless and b.runs else max(len(ranks), 1)
    n = len(b.runs)
    for row, run in enumerate(b.runs):
        y = n - 1 - row
        colour = _LEVEL_COLOURS[run.level % len(_LEVEL_COLOURS)]
        for i, f in enumerate(run.files):
            if keyless:
                x0, x1 = i, i + 1
            else:
                x0 = ranks.get(f.min_key_values, 0)
                x1 = ranks.get(f.max_key_values, width - 1) + 1
            fill = dv_fill(f)
            ax.add_patch(Rectangle((x0, y + 0.1), max(x1 - x0, 0.3), 0.8, facecolor=colour, edgecolor="black",
                                   linewidth=0.6, hatch="//" if fill is not None else None,
                                   alpha=1.0 if fill is None else max(0.25, 1.0 - fill)))
            m = f.entry.file
            ax.text((x0 + x1) / 2, y + 0.5, f"{_human(m.file_size)}\nseq {m.min_sequence_number}-"
                    f"{m.max_sequence_number}", ha="center", va="center", fontsize=6)
    ax.set_xlim(0, width)
    ax.set_ylim(0, max(n, 1))
    ax.set_yticks([n - 1 - i + 0.5 for i in range(n)])
    ax.set_yticklabels([f"L{r.level}" + (f" run {i}" if r.level == 0 else "") for i, r in enumerate(b.runs)],
                       fontsize=7)
    ax.set_xticks([])
    ax.set_xlabel("files" if keyless else "keys (by rank)", fontsize=7)
    where = f"{b.partition} " if b.partition else ""
    ax.set_title(f"{where}bucket {b.bucket}: {len(b.files)} files, {len(b.runs)} sorted runs", fontsize=8)


def _draw_timeline(ax: Any, x: TableXRay) -> None:
    ids = [p.snapshot_id for p in x.timeline]
    added = [p.records_added for p in x.timeline]
    deleted = [-p.records_deleted for p in x.timeline]
    colours = ["#59a14f" if p.commit_kind != "COMPACT" else "#4e79a7" for p in x.timeline]
    ax.bar(ids, added, color=colours, label="records added (blue: compaction)")
    ax.bar(ids, deleted, color="#e15759", label="records removed")
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_xlabel("snapshot", fontsize=7)
    ax.set_title("snapshot timeline", fontsize=8)
    ax.legend(fontsize=6, loc="upper left")
    ax.tick_params(labelsize=6)


def save_xray(x: TableXRay, path: str) -> int:
    """Draw to ``path`` (.png or .svg); returns how many bucket panels were drawn (at most MAX_PANELS)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    buckets = x.buckets[:MAX_PANELS]
    cols = min(3, max(len(buckets), 1))
    rows = math.ceil(len(buckets) / cols) if buckets else 0
    fig = plt.figure(figsize=(5 * cols, 3 * rows + 2.5), dpi=120)
    grid = fig.add_gridspec(rows + 1, cols, height_ratios=[3] * rows + [2.5])
    for i, b in enumerate(buckets):
        _draw_bucket(fig.add_subplot(grid[i // cols, i % cols]), b)
    _draw_timeline(fig.add_subplot(grid[rows, :]), x)
    fig.suptitle(f"{x.table} at snapshot {x.snapshot_id}", fontsize=10)
    fig.tight_layout()
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)
    return len(buckets)
