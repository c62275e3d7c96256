"""Key pruning below the merge: the compiled statistics test, Parquet row groups pruned by statistics, KeyFilter."""

from __future__ import annotations

import io

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from laketide.expr import FieldStats, Leaf, Op, and_, col, may_match, parse_where
from laketide.format import file_format
from laketide.meta.bucket import bucket_of_values
from laketide.scan.bucket_pruning import select_buckets
from laketide.scan.key_filter import KeyFilter
from laketide.scan.stats_test import StatsTest
from laketide.types import BigIntType, DoubleType, VarCharType

_bounds = st.tuples(st.integers(-50, 50), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1]))


@given(values=st.lists(st.integers(-60, 60), max_size=40), bounds=_bounds, nulls=st.integers(0, 3),
       other=st.integers(-60, 60))
def test_stats_test_answers_as_may_match(values, bounds, nulls, other) -> None:  # noqa: ANN001
    pred = and_(Leaf(Op.IN, "k", tuple(values)), col("j") >= other) if values else col("j") >= other
    stats = {"k": FieldStats(min=bounds[0], max=bounds[1], null_count=nulls),
             "j": FieldStats(min=bounds[0], max=bounds[1], null_count=0)}
    assert StatsTest(pred).may_match(stats, 10) == may_match(pred, stats, 10)


@given(values=st.lists(st.text(alphabet="abc", max_size=3), min_size=4, max_size=20),
       lo=st.text(alphabet="abc", max_size=3), hi=st.text(alphabet="abc", max_size=3))
def test_stats_test_on_strings(values, lo, hi) -> None:  # noqa: ANN001
    lo, hi = min(lo, hi), max(lo, hi)
    pred = Leaf(Op.IN, "s", tuple(values))
    stats = {"s": FieldStats(min=lo, max=hi, null_count=0)}
    assert StatsTest(pred).may_match(stats, 5) == may_match(pred, stats, 5)


def test_stats_test_falls_back_for_mixed_or_unknown() -> None:
    mixed = Leaf(Op.IN, "k", (1, 2.5, 3, 4))
    assert StatsTest(mixed).may_match({"k": FieldStats(min=10, max=20)}, 5) is False
    assert StatsTest(mixed).may_match({}, 5) is True
    only_nulls = Leaf(Op.IN, "k", (1, 2, 3, 4))
    assert StatsTest(only_nulls).may_match({"k": FieldStats(null_count=5)}, 5) is False
    # stats of another kind than the values (a date column read as a string): answered by may_match
    assert StatsTest(only_nulls).may_match({"k": FieldStats(min="1", max="9", null_count=0)}, 5) \
        == may_match(only_nulls, {"k": FieldStats(min="1", max="9", null_count=0)}, 5)


def _three_row_groups() -> bytes:
    schema = pa.schema([("_KEY_k", pa.int64()), ("k", pa.int64()), ("v", pa.string())])
    out = io.BytesIO()
    batches = [pa.record_batch([ids, ids, [f"{i:03d}" for i in ids]], schema=schema)
               for ids in (list(range(start, start + 100)) for start in (0, 100, 200))]
    # A row group is cut every parquet.block.size Arrow bytes: exactly one batch's worth.
    block = str(batches[0].nbytes)
    writer = file_format("parquet").open_writer(out, schema, compression="zstd", options={"parquet.block.size": block})
    for batch in batches:
        writer.write_batch(batch)
    writer.close()
    return out.getvalue()


def test_parquet_read_pruned_decodes_only_kept_row_groups() -> None:
    data = _three_row_groups()
    asked: list[tuple[object, object, int]] = []

    def keep(stats_of, num_rows: int) -> bool:  # noqa: ANN001
        s = stats_of("_KEY_k")
        asked.append((s.min, s.max, num_rows))
        return s.max >= 150 and stats_of("missing") is None

    got = list(file_format("parquet").read_pruned(io.BytesIO(data), keep=keep, columns=["k", "v"]))
    assert asked == [(0, 99, 100), (100, 199, 100), (200, 299, 100)]
    # Positions in the file, so deletion vectors still line up; consecutive kept groups come from one reader.
    assert [(pos, b.num_rows) for pos, b in got] == [(100, 200)]
    assert pa.Table.from_batches([b for _, b in got]).column("k").to_pylist() == list(range(100, 300))


def test_key_filter_prunes_row_groups_and_rows() -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    kf = KeyFilter.of(parse_where("k IN (5, 150, 151, 152) AND v = 'x'"), key_names=["k"], schema=schema)
    assert kf is not None and kf.fields == {"k"}  # the value part stays for after the merge
    test = kf.row_group_test({"k": "k"}, {"k": BigIntType()})
    kept = [(pos, b.num_rows) for pos, b in file_format("parquet").read_pruned(io.BytesIO(_three_row_groups()),
                                                                                 keep=test)]
    assert kept == [(0, 200)]  # groups 0 and 1, read by one reader
    batch = pa.record_batch([[5, 6, 150], ["a", "b", "c"]], schema=schema)
    assert kf.apply(batch).column("k").to_pylist() == [5, 150]
    # a type whose Parquet statistics are not trusted keeps every row group
    assert kf.row_group_test({"k": "k"}, {"k": DoubleType()})(lambda name: FieldStats(min=0, max=1), 10)
    assert KeyFilter.of(parse_where("v = 'x'"), key_names=["k"], schema=schema) is None
    assert KeyFilter.of(parse_where("k = 1 OR v = 'x'"), key_names=["k"], schema=schema) is None
    strings = KeyFilter.of(parse_where("s = 'm'"), key_names=["s"], schema=pa.schema([("s", pa.string())]))
    assert strings is not None
    s_test = strings.row_group_test({"s": "s_old"}, {"s": VarCharType()})  # a renamed column: the file's name
    assert not s_test(lambda name: FieldStats(min="a", max="c") if name == "_KEY_s_old" else None, 3)
    assert s_test(lambda name: FieldStats(min="a", max="z") if name == "s_old" else None, 3)  # thin mode


@given(keys=st.lists(st.tuples(st.integers(-2**40, 2**40), st.text(max_size=12)), min_size=1, max_size=60),
       buckets=st.integers(1, 9))
def test_bucket_pruning_of_many_keys_hashes_as_writers_do(keys, buckets) -> None:  # noqa: ANN001
    types = [BigIntType(), VarCharType()]
    pred = and_(Leaf(Op.IN, "a", tuple(k for k, _ in keys)), Leaf(Op.IN, "b", tuple(s for _, s in keys)))
    domains = [sorted({k for k, _ in keys}), sorted({s for _, s in keys})]
    expected = {bucket_of_values([a, b], types, num_buckets=buckets) for a in domains[0] for b in domains[1]}
    got = select_buckets(pred, bucket_keys=["a", "b"], key_types=types, num_buckets=buckets)
    assert got == (expected if len(domains[0]) * len(domains[1]) <= 1000 else None)
    # a value that is not of the key's type is no key at all, whichever path hashes the others
    with_bad = and_(Leaf(Op.IN, "a", (*(k for k, _ in keys), 2**70)), Leaf(Op.IN, "b", tuple(s for _, s in keys)))
    if (len(domains[0]) + 1) * len(domains[1]) <= 1000:
        assert select_buckets(with_bad, bucket_keys=["a", "b"], key_types=types, num_buckets=buckets) == expected


@given(keys=st.lists(st.integers(-3, 40), max_size=30), probe=st.lists(st.integers(-5, 45), min_size=1, max_size=8),
       names=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4))
def test_key_filter_value_sets_filter_as_the_expression(keys, probe, names) -> None:  # noqa: ANN001
    schema = pa.schema([("k", pa.int32()), ("s", pa.string())])
    batch = pa.record_batch([pa.array(keys, pa.int32()), pa.array([names[i % len(names)] for i in range(len(keys))])],
                            schema=schema)
    pred = and_(Leaf(Op.IN, "k", tuple(probe)), Leaf(Op.IN, "s", tuple(names[:2])))
    kf = KeyFilter.of(pred, key_names=["k", "s"], schema=schema)
    assert kf is not None and kf.value_sets is not None
    assert kf.apply(batch).equals(batch.filter(kf.expression))


def test_key_filter_value_sets_only_for_exact_values() -> None:
    schema = pa.schema([("k", pa.int8()), ("s", pa.string())])
    assert KeyFilter.of(col("k") == 5, key_names=["k"], schema=schema).value_sets is not None
    assert KeyFilter.of(col("k") == 500, key_names=["k"], schema=schema).value_sets is None  # beyond int8
    assert KeyFilter.of(col("k") > 5, key_names=["k"], schema=schema).value_sets is None
    stamps = pa.schema([("t", pa.timestamp("ms"))])
    assert KeyFilter.of(col("t") == "2026-11-26 09:00:00", key_names=["t"], schema=stamps).value_sets is None


_cmp_leaf = st.tuples(st.sampled_from([Op.EQ, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN]), st.sampled_from(["k", "s", "d"]),
                      st.integers(-5, 45))


def _literal(field: str, v: int) -> object:
    import datetime as dt

    return {"k": v, "s": f"{v:03d}" if v % 3 else f"{v}", "d": dt.date(2026, 1, 1) + dt.timedelta(days=v)}[field]


@given(keys=st.lists(st.integers(-3, 40), max_size=30), leaves=st.lists(_cmp_leaf, min_size=1, max_size=3))
def test_key_filter_comparisons_filter_as_the_expression(keys, leaves) -> None:  # noqa: ANN001
    import datetime as dt

    schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("d", pa.date32())])
    batch = pa.record_batch([pa.array(keys, pa.int64()), pa.array([_literal("s", k) for k in keys], pa.string()),
                             pa.array([dt.date(2026, 1, 1) + dt.timedelta(days=k) for k in keys], pa.date32())],
                            schema=schema)
    parts = [Leaf(op, f, (_literal(f, v), _literal(f, v + 3)) if op is Op.IN else (_literal(f, v),))
             for op, f, v in leaves]
    pred = parts[0] if len(parts) == 1 else and_(*parts)
    kf = KeyFilter.of(pred, key_names=["k", "s", "d"], schema=schema)
    assert kf is not None and kf.comparisons is not None
    assert kf.apply(batch).equals(batch.filter(kf.expression))


def test_key_filter_comparisons_only_for_exact_values() -> None:
    schema = pa.schema([("k", pa.int8()), ("x", pa.float64())])
    assert KeyFilter.of(col("k") >= 5, key_names=["k"], schema=schema).comparisons is not None
    assert KeyFilter.of(col("k") < 500, key_names=["k"], schema=schema).comparisons is None  # beyond int8
    assert KeyFilter.of(col("x") < 5.0, key_names=["x"], schema=schema).comparisons is None  # floats: NaN order
    assert KeyFilter.of(col("k") != 5, key_names=["k"], schema=schema).comparisons is None
    either = KeyFilter.of((col("k") == 5) | (col("k") > 9), key_names=["k"], schema=schema)
    assert either is not None and either.comparisons is None
