"""Primary-key tables whose merges spill: many sorted runs, a tiny merge budget, the same rows as a dict oracle.

``sort-spill-threshold`` = 2 and a ``sort-spill-buffer-size`` of a few KB make every merge of three or more runs
(merge-on-read, the writer's compactions, full compaction) copy all but two runs to spill files and merge in
key-range chunks of a few rows.
"""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int64())])
TIGHT = {"sort-spill-threshold": "2", "sort-spill-buffer-size": "4 kb", "read.batch-size": "3"}

_row = st.tuples(st.integers(0, 60), st.text(alphabet="ab", max_size=9), st.integers(-9, 9))
_commit = st.tuples(st.sampled_from(["upsert", "upsert", "delete", "compact", "full"]),
                    st.lists(_row, min_size=1, max_size=30))


@pytest.mark.parametrize("write_only", [True, False])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(_commit, min_size=3, max_size=10))
def test_spilling_merges_equal_dict_oracle(tmp_path_factory, monkeypatch, write_only: bool, commits) -> None:  # noqa: ANN001
    spill_root = tmp_path_factory.mktemp("spill")
    monkeypatch.setattr(tempfile, "tempdir", str(spill_root))
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    options = {"bucket": "2", "write-buffer-size": "1 kb", "num-sorted-run.compaction-trigger": "3", **TIGHT}
    if write_only:
        options["write-only"] = "true"  # runs pile up at level 0: every read merges all of them
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "s"], options=options)
    oracle: dict[tuple, int] = {}
    for kind, rows in commits:
        if kind in ("compact", "full"):
            t.compact(full=kind == "full")
        else:
            data = pa.table({"k": [r[0] for r in rows], "s": [r[1] for r in rows], "v": [r[2] for r in rows]},
                            schema=SCHEMA)
            w = t.new_write()
            w.write(data) if kind == "upsert" else w.delete(data)
            t.commit(w.prepare_commit())
            w.close()
            for k, s, v in rows:
                if kind == "upsert":
                    oracle[(k, s)] = v
                else:
                    oracle.pop((k, s), None)
        got = t.read().to_pylist()
        assert len(got) == len({(r["k"], r["s"]) for r in got})
        assert {(r["k"], r["s"]): r["v"] for r in got} == oracle
        streamed = [r for b in t.scan().to_batches() for r in b.to_pylist()]
        assert {(r["k"], r["s"]): r["v"] for r in streamed} == oracle
    assert list(spill_root.iterdir()) == []  # every spill directory was removed


def test_many_runs_are_spilled_and_merged_in_small_steps(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from laketide.mergetree import merge, sort_merge

    spilled: list[str] = []
    steps: list[int] = []
    real_spill, real_merge = sort_merge._spill, merge.merge_streams

    def counting_spill(run, path, **kwargs):  # noqa: ANN001, ANN003, ANN202
        spilled.append(path)
        return real_spill(run, path, **kwargs)

    def recording_merge(runs, fn, **kwargs):  # noqa: ANN001, ANN003, ANN202
        for out in real_merge(runs, fn, **kwargs):
            steps.append(out.num_rows)
            yield out

    monkeypatch.setattr(sort_merge, "_spill", counting_spill)
    monkeypatch.setattr(sort_merge, "merge_streams", recording_merge)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "s"],
                         options={"bucket": "1", "write-only": "true", **TIGHT})
    oracle = {}
    for i in range(8):  # eight overlapping level-0 runs
        rows = [(k, "x", i * 100 + k) for k in range(i, 400, 3)]
        t.write(pa.table({"k": [r[0] for r in rows], "s": [r[1] for r in rows], "v": [r[2] for r in rows]},
                         schema=SCHEMA))
        oracle.update({(k, s): v for k, s, v in rows})
    assert {(r["k"], r["s"]): r["v"] for r in t.read().to_pylist()} == oracle
    assert len(spilled) == 6  # all but the two biggest runs
    assert steps and max(steps) < 200  # key-range chunks, not the whole bucket at once
    spilled.clear()
    t.compact(full=True)
    assert len(spilled) == 6
    assert {(r["k"], r["s"]): r["v"] for r in t.read().to_pylist()} == oracle
    assert [p for p in tmp_path.iterdir() if p.name.startswith("laketide-spill-")] == []
