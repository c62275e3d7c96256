"""``lookup-compact``: radical (default) compacts level 0 up at every commit of a lookup table; gentle only when
universal compaction picks something or every ``lookup-compact.max-interval`` triggers (Java's
ForceUpLevel0Compaction)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError
from laketide.options import CoreOptions

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])


def _rows(keys: range, v: int) -> pa.Table:
    return pa.table({"k": list(keys), "v": [v] * len(keys)}, schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path):  # noqa: ANN001, ANN201
    cat = laketide.load_catalog(warehouse=str(tmp_path))
    cat.create_database("db")
    return cat


def _level0_after_each_commit(t, commits: int) -> tuple[list[int], dict[int, int]]:  # noqa: ANN001
    w = t.new_write()
    oracle: dict[int, int] = {}
    level0 = []
    try:
        for i in range(commits):
            keys = range(i * 10, i * 10 + 30)
            w.write(_rows(keys, i))
            t.commit(w.prepare_commit())
            oracle.update({k: i for k in keys})
            level0.append(sum(1 for e in t.file_scan().plan(t.latest_snapshot()) if e.file.level == 0))
    finally:
        w.close()
    return level0, oracle


@pytest.mark.parametrize("mode", [{"deletion-vectors.enabled": "true"}, {"changelog-producer": "lookup"}])
def test_gentle_mode_forces_level0_up_every_max_interval_triggers(catalog, mode) -> None:  # noqa: ANN001
    options = {"bucket": "1", "num-sorted-run.compaction-trigger": "10", **mode}
    radical = catalog.create_table("db.radical", SCHEMA, primary_key=["k"], options=options)
    level0, oracle = _level0_after_each_commit(radical, 6)
    assert level0 == [0] * 6
    gentle = catalog.create_table("db.gentle", SCHEMA, primary_key=["k"], options={
        **options, "lookup-compact": "gentle", "lookup-compact.max-interval": "3"})
    level0, oracle_gentle = _level0_after_each_commit(gentle, 6)
    # max(trigger 10, 3) = 10 triggers: nothing forced within 6 commits; universal picks nothing under 10 runs.
    assert level0 == [1, 2, 3, 4, 5, 6]
    gentle.compact(full=True)
    assert {r["k"]: r["v"] for r in gentle.read().to_pylist()} == oracle_gentle == oracle
    low = catalog.create_table("db.low", SCHEMA, primary_key=["k"], options={
        **options, "num-sorted-run.compaction-trigger": "2", "lookup-compact": "gentle",
        "lookup-compact.max-interval": "3"})
    level0, oracle_low = _level0_after_each_commit(low, 6)
    # The first commit's level 0 waits (one run, one trigger); universal compaction takes it up later.
    assert level0[0] == 1 and 0 in level0, level0
    # Readers see level > 0 only: what they see is right, possibly not everything yet.
    assert {r["k"]: r["v"] for r in low.read().to_pylist()}.items() <= oracle_low.items()


def test_max_interval_follows_java_defaults() -> None:
    assert CoreOptions({}).lookup_compact_max_interval == 10
    assert CoreOptions({"num-sorted-run.compaction-trigger": "3"}).lookup_compact_max_interval == 6
    assert CoreOptions({"lookup-compact.max-interval": "2"}).lookup_compact_max_interval == 5
    assert CoreOptions({"lookup-compact.max-interval": "12"}).lookup_compact_max_interval == 12
    assert not CoreOptions({}).lookup_compact_gentle and CoreOptions({"lookup-compact": "GENTLE"}).lookup_compact_gentle


@pytest.mark.parametrize("key, value", [("lookup-compact", "medium"), ("lookup-compact.max-interval", "0"),
                                        ("lookup-compact.max-interval", "often")])
def test_bad_lookup_compact_options_are_refused(catalog, key: str, value: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match=key):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], options={"bucket": "1", key: value})
    assert "bad" not in catalog.list_tables("db")
