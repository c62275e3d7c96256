"""Merging many sorted runs in bounded memory: which runs are spilled, that spilling changes no row, cleanup."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laketide.exceptions import InvalidOptionError
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND
from laketide.mergetree.merge import DeduplicateMergeFunction, MergeSpec
from laketide.mergetree.sort_merge import RunSource, SortMergeSettings, merge_sorted_runs, reader_memory
from laketide.options import CoreOptions

SPEC = MergeSpec(key_names=("k",))


def _run_source(entries: dict[int, int], seq0: int, *, size: int, memory: int = 1, opened: list[int] | None = None,
                fail_after: int | None = None) -> RunSource:
    keys = sorted(entries)
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array([entries[k] for k in keys], pa.int64()),
                      SEQUENCE_NUMBER: pa.array(range(seq0, seq0 + len(keys)), pa.int64()),
                      VALUE_KIND: pa.array([0] * len(keys), pa.int8())})

    def read(batch_rows: int) -> Iterator[pa.Table]:
        if opened is not None:
            opened.append(size)
        for i, start in enumerate(range(0, table.num_rows, max(1, min(batch_rows, 3)))):
            if fail_after is not None and i >= fail_after:
                raise OSError("disk gone")
            yield table.slice(start, 3)

    return RunSource(size=size, memory=memory, read=read)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(st.dictionaries(st.integers(0, 40), st.integers(0, 9), max_size=25), min_size=1, max_size=9),
       threshold=st.integers(2, 5), buffer=st.sampled_from([64, 4096, 1 << 30]))
def test_spilled_merge_equals_dict_oracle(tmp_path, monkeypatch, runs, threshold: int, buffer: int) -> None:  # noqa: ANN001
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    oracle: dict[int, int] = {}
    sources = []
    seq = 0
    for i, entries in enumerate(runs):  # later runs are newer
        sources.append(_run_source(entries, seq, size=(i * 7) % 5 + 1))
        seq += len(entries)
        oracle.update(entries)
    out = list(merge_sorted_runs(sources, DeduplicateMergeFunction(SPEC),
                                 settings=SortMergeSettings(spill_threshold=threshold, buffer_size=buffer)))
    merged = pa.concat_tables(out).to_pylist() if out else []
    assert [r["k"] for r in merged] == sorted(oracle)
    assert {r["k"]: r["v"] for r in merged} == oracle
    assert list(tmp_path.glob("laketide-spill-*")) == []  # spill files removed


def test_biggest_runs_are_read_directly_the_rest_spilled(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    opened: list[int] = []
    sizes = [5, 50, 1, 30, 2]
    sources = [_run_source({k: s for k in range(s % 7, 20, 3)}, 100 * i, size=s, memory=10, opened=opened)
               for i, s in enumerate(sizes)]
    # Threshold 3: the three biggest runs are read straight; the two smallest are first copied to spill files,
    # one at a time, before any direct reader opens.
    merged = list(merge_sorted_runs(sources, DeduplicateMergeFunction(SPEC),
                                    settings=SortMergeSettings(spill_threshold=3, buffer_size=1 << 30)))
    assert opened == [2, 1, 50, 30, 5]
    assert merged
    # The memory budget also limits direct readers: 2 x 10 bytes fit half of a 40-byte budget, a third does not.
    opened.clear()
    list(merge_sorted_runs(sources, DeduplicateMergeFunction(SPEC),
                           settings=SortMergeSettings(spill_threshold=9, buffer_size=40)))
    assert opened == [5, 2, 1, 50, 30]


def test_spill_files_go_when_the_merge_fails_or_is_abandoned(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tight = SortMergeSettings(spill_threshold=2, buffer_size=1 << 20)
    runs = [_run_source({k: i for k in range(i, 30)}, 100 * i, size=10 - i) for i in range(4)]
    merged = merge_sorted_runs(runs, DeduplicateMergeFunction(SPEC), settings=tight)
    next(merged)
    assert len(list(tmp_path.glob("laketide-spill-*/*"))) == 2
    merged.close()  # a reader that stops early (a LIMIT, an exception in the caller)
    assert list(tmp_path.glob("laketide-spill-*")) == []
    failing = runs[:3] + [_run_source({k: 9 for k in range(40)}, 900, size=0, fail_after=2)]
    with pytest.raises(OSError, match="disk gone"):
        list(merge_sorted_runs(failing, DeduplicateMergeFunction(SPEC), settings=tight))
    assert list(tmp_path.glob("laketide-spill-*")) == []


def test_reader_memory_estimate() -> None:
    assert reader_memory([1000, 3000], columns=9) == 6000  # small files: what they hold
    assert reader_memory([10 << 30], columns=9) == 9 * (2 << 20)  # big files: a page and a dictionary per column
    assert reader_memory([], columns=3) == 0


def test_options_default_like_java_and_reject_nonsense() -> None:
    options = CoreOptions({})
    assert options.sort_spill_threshold == options.num_sorted_run_stop_trigger + 1 == 9
    assert options.sort_spill_buffer_size == 64 << 20
    assert CoreOptions({"num-sorted-run.stop-trigger": "20"}).sort_spill_threshold == 21
    assert CoreOptions({"sort-spill-threshold": "3", "sort-spill-buffer-size": "8 mb"}).sort_spill_threshold == 3
    for bad in ({"sort-spill-threshold": "1"}, {"sort-spill-threshold": "x"}, {"sort-spill-buffer-size": "0"}):
        with pytest.raises(InvalidOptionError):
            CoreOptions(bad)
