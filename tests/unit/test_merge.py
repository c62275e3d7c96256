"""The streaming merge of sorted runs, and run/section partitioning, against plain-Python oracles."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND
from laketide.mergetree.merge import DeduplicateMergeFunction, MergeSpec, merge_streams, partition_runs

SPEC = MergeSpec(key_names=("a", "b"))


def _run(entries: dict[tuple[int, str], tuple[int, int]], batch: int) -> list[pa.Table]:
    keys = sorted(entries)
    t = pa.table({
        "a": [k[0] for k in keys], "b": [k[1] for k in keys],
        SEQUENCE_NUMBER: [entries[k][0] for k in keys], VALUE_KIND: pa.array([entries[k][1] for k in keys], pa.int8()),
    })
    return [t.slice(i, batch) for i in range(0, t.num_rows, batch)] or [t]


_RUNS = st.lists(st.dictionaries(st.tuples(st.integers(0, 30), st.sampled_from(["", "x", "long-string-key"])),
                                 st.sampled_from([0, 3]), max_size=40), min_size=1, max_size=5)


def _numbered(runs: list[dict]) -> tuple[list[dict], dict[tuple, tuple[int, int]]]:
    """Sequence numbers in run order (later runs are newer) and the newest (seq, kind) per key."""
    seq = 0
    oracle: dict[tuple, tuple[int, int]] = {}
    numbered = []
    for run in runs:
        entries = {}
        for key, kind in run.items():
            entries[key] = (seq, kind)
            seq += 1
        for key, v in entries.items():
            if key not in oracle or oracle[key][0] < v[0]:
                oracle[key] = v
        numbered.append(entries)
    return numbered, oracle


def _as_dict(out: list[pa.Table]) -> dict[tuple, tuple[int, int]]:
    merged = pa.concat_tables(out) if out else pa.table({})
    rows = merged.to_pylist()
    keys = [(r["a"], r["b"]) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)  # key-sorted and unique: writable as one run
    return {(r["a"], r["b"]): (r[SEQUENCE_NUMBER], r[VALUE_KIND]) for r in rows}


@settings(max_examples=60, deadline=None)
@given(runs=_RUNS, batch=st.integers(1, 7), max_bytes=st.one_of(st.none(), st.integers(1, 400)))
def test_merge_streams_in_bounded_steps_keeps_the_newest_row_per_key(runs, batch: int, max_bytes) -> None:  # noqa: ANN001
    numbered, oracle = _numbered(runs)
    streams = [iter(_run(e, batch)) for e in numbered]
    out = list(merge_streams(streams, DeduplicateMergeFunction(SPEC), max_bytes=max_bytes))
    assert _as_dict(out) == oracle
    widths = [t.nbytes / t.num_rows for e in numbered for t in _run(e, batch) if t.num_rows]
    if max_bytes is not None and len(runs) > 1 and widths:
        # A step takes at most max_bytes of rows (as wide as the narrowest batch), or one row per run.
        assert all(t.num_rows <= max(len(runs), max_bytes / min(widths)) for t in out)


@settings(max_examples=60, deadline=None)
@given(
    runs=_RUNS,
    batch=st.integers(1, 7),
)
def test_merge_streams_keeps_the_newest_row_per_key(runs, batch: int) -> None:  # noqa: ANN001
    seq = 0
    oracle: dict[tuple, tuple[int, int]] = {}
    numbered = []
    for run in runs:
        entries = {}
        for key, kind in run.items():
            entries[key] = (seq, kind)
            seq += 1
        for key, v in entries.items():
            if key not in oracle or oracle[key][0] < v[0]:
                oracle[key] = v
        numbered.append(entries)
    streams = [iter(_run(e, batch)) for e in numbered]
    out = [t for t in merge_streams(streams, DeduplicateMergeFunction(SPEC))]
    merged = pa.concat_tables(out) if out else pa.table({})
    got = {(r["a"], r["b"]): (r[SEQUENCE_NUMBER], r[VALUE_KIND]) for r in merged.to_pylist()}
    assert got == oracle
    keys = [(r["a"], r["b"]) for r in merged.to_pylist()]
    assert keys == sorted(keys)  # output stays key-sorted, so it can be written as one run


def test_partition_runs_sections_and_runs() -> None:
    files = {"f1": ((1,), (5,)), "f2": ((6,), (9,)), "f3": ((3,), (7,)), "f4": ((20,), (30,)), "f5": ((8,), (8,))}
    sections = partition_runs(files, lambda f: files[f])
    assert [sorted(f for run in s for f in run) for s in sections] == [["f1", "f2", "f3", "f5"], ["f4"]]
    for section in sections:
        for run in section:
            ranges = sorted(files[f] for f in run)
            assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))  # no overlap inside a run
