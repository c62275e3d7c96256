"""NaN and ±0.0 primary keys merge as Java's key comparator makes them: every NaN is one key, -0.0 and 0.0 are two.

Paimon merges with a generated comparator using Double.compare / Float.compare (not the BinaryRow bytes), and
buckets by the hash of the BinaryRow bytes (raw IEEE bits). So within one bucket all NaNs are one key; two NaNs
with different payloads hash apart and may land in different buckets, where they stay two rows (as in Java).
The oracle below is a dict keyed by (bucket of the raw bytes, Java's equality class of the value).
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.meta.binary_row import hash_bytes_by_words, serialize_row
from laketide.meta.bucket import bucket_ids, bucket_of_values
from laketide.mergetree.key_order import order_column, py_key
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND
from laketide.mergetree.merge import DeduplicateMergeFunction, MergeSpec, dedupe, merge_streams
from laketide.types import DoubleType, FloatType, IntType

QUIET_NAN = float("nan")  # 0x7ff8000000000000, Java's Double.NaN
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
PAYLOAD_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000001))[0]  # a signalling NaN's bits
SPECIAL = [QUIET_NAN, NEG_NAN, PAYLOAD_NAN, 0.0, -0.0, math.inf, -math.inf, 1.5, -1.5, 5e-324]


def _bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def java_class(v: float) -> object:
    """Java's Double.compare equality class: all NaNs one class, -0.0 and 0.0 apart."""
    return "NaN" if math.isnan(v) else ("-0.0" if v == 0 and math.copysign(1, v) < 0 else v)


# -- the comparator ------------------------------------------------------------------------------------------------
def test_rank_orders_like_double_compare() -> None:
    values = [QUIET_NAN, -math.inf, -1.5, -0.0, 0.0, 5e-324, 1.5, math.inf, NEG_NAN, PAYLOAD_NAN]
    ranks = order_column(pa.array(values, pa.float64())).to_pylist()
    # Double.compare's order: numbers ascending, -0.0 just below 0.0, every NaN (equal) above +Infinity.
    java = sorted(range(len(values)), key=lambda i: (math.isnan(values[i]), 0.0 if math.isnan(values[i])
                                                     else values[i], math.copysign(1, values[i])))
    assert [ranks[i] for i in java] == sorted(ranks)
    assert len({ranks[i] for i, v in enumerate(values) if math.isnan(v)}) == 1  # every NaN is equal
    assert ranks[3] < ranks[4]  # -0.0 < 0.0
    assert max(ranks) == ranks[0]  # NaN sorts above +Infinity
    # Python-level keys (file min / max keys) agree with the Arrow ranks.
    assert [py_key([v])[0] for v in values] == ranks
    f32 = order_column(pa.array(values, pa.float32())).to_pylist()
    assert sorted(range(len(values)), key=lambda i: (f32[i], i)) == sorted(range(len(values)),
                                                                         key=lambda i: (ranks[i], i))


def test_dedupe_and_streaming_merge_treat_nan_as_one_key_and_signed_zeros_as_two() -> None:
    spec = MergeSpec(key_names=("k",))
    keys = [QUIET_NAN, 0.0, NEG_NAN, -0.0, PAYLOAD_NAN, 0.0, 1.0]
    t = pa.table({"k": pa.array(keys, pa.float64()), SEQUENCE_NUMBER: pa.array(range(len(keys)), pa.int64()),
                  VALUE_KIND: pa.array([0] * len(keys), pa.int8())})
    out = dedupe(t, spec)
    assert [java_class(v) for v in out.column("k").to_pylist()] == ["-0.0", 0.0, 1.0, "NaN"]
    assert out.column(SEQUENCE_NUMBER).to_pylist() == [3, 5, 6, 4]
    # Two runs merged in streaming batches: the same classes.
    run1 = dedupe(t.slice(0, 3), spec)
    run2 = dedupe(t.slice(3), spec)
    merged = pa.concat_tables(list(merge_streams([iter([run1.slice(0, 1), run1.slice(1)]), iter([run2])],
                                                 DeduplicateMergeFunction(spec))))
    assert [java_class(v) for v in merged.column("k").to_pylist()] == ["-0.0", 0.0, 1.0, "NaN"]
    assert merged.column(SEQUENCE_NUMBER).to_pylist() == [3, 5, 6, 4]


# -- bucket hashing: the raw bits, as Java's BinaryRowWriter writes them -----------------------------------------
def test_bucket_hash_uses_raw_ieee_bits() -> None:
    values = SPECIAL
    t = pa.table({"k": pa.array(values, pa.float64())})
    got = bucket_ids(t, ["k"], [DoubleType()], 12345).tolist()
    for v, b in zip(values, got, strict=True):
        # A BinaryRow of one DOUBLE: 8 header bytes, then the raw bits little-endian (doubleToRawLongBits).
        raw = bytes(8) + struct.pack("<Q", _bits(v))
        assert serialize_row([v], [DoubleType()]) == raw
        h = hash_bytes_by_words(raw)
        assert b == abs(int(np.fmod(h, 12345))) == bucket_of_values([v], [DoubleType()], num_buckets=12345)
    assert got[3] != got[4]  # 0.0 and -0.0: different bytes, different hash (Java too)
    f = pa.table({"k": pa.array([QUIET_NAN, -0.0, 0.0], pa.float32())})
    bits32 = [0x7FC00000, 0x80000000, 0]
    expected = [abs(int(np.fmod(hash_bytes_by_words(bytes(8) + struct.pack("<Q", b)), 97))) for b in bits32]
    assert bucket_ids(f, ["k"], [FloatType()], 97).tolist() == expected


# -- a primary-key table against a dict oracle -------------------------------------------------------------------
_key = st.sampled_from(SPECIAL)
_op = st.tuples(st.sampled_from(["upsert", "upsert", "delete", "compact", "full"]),
                st.lists(st.tuples(_key, st.integers(0, 3), st.integers(0, 99)), min_size=1, max_size=12))


@pytest.mark.parametrize("bucket", [1, 3])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=8))
def test_float_keyed_table_equals_java_oracle(tmp_path_factory, bucket: int, ops) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    schema = pa.schema([("k", pa.float64()), ("j", pa.int32()), ("v", pa.int64())])
    # Tiny buffers and batches: many level-0 runs, many merge steps, compactions inside the writer too.
    t = cat.create_table("db.t", schema, primary_key=["k", "j"], options={
        "bucket": str(bucket), "write-buffer-size": "1 kb", "read.batch-size": "1",
        "num-sorted-run.compaction-trigger": "2"})
    oracle: dict[tuple, tuple[float, int]] = {}
    for kind, items in ops:
        if kind in ("compact", "full"):
            t.compact(full=kind == "full")
            continue
        data = pa.table({"k": pa.array([i[0] for i in items], pa.float64()), "j": pa.array([i[1] for i in items],
                         pa.int32()), "v": pa.array([i[2] for i in items], pa.int64())})
        w = t.new_write()
        if kind == "upsert":
            w.write(data)
        else:
            w.delete(data)
        t.commit(w.prepare_commit())
        w.close()
        for k, j, v in items:
            where = bucket_of_values([k, j], [DoubleType(), IntType()], num_buckets=bucket)
            ident = (where, java_class(k), j)
            if kind == "upsert":
                oracle[ident] = (k, v)
            else:
                oracle.pop(ident, None)
    got: dict[tuple, tuple[float, int]] = {}
    for r in t.read().to_pylist():
        where = bucket_of_values([r["k"], r["j"]], [DoubleType(), IntType()], num_buckets=bucket)
        ident = (where, java_class(r["k"]), r["j"])
        assert ident not in got, f"key {ident} read twice"
        got[ident] = (r["k"], r["v"])
    assert {k: v[1] for k, v in got.items()} == {k: v[1] for k, v in oracle.items()}
    # The row kept for a key is the newest one, so its key carries the newest write's bits (payload and sign).
    assert {k: _bits(v[0]) for k, v in got.items()} == {k: _bits(v[0]) for k, v in oracle.items()}


@pytest.mark.parametrize("bucket", ["1", "-1"])
def test_nan_and_signed_zero_upserts_with_float32_and_dynamic_buckets(tmp_path, bucket: str) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("k", pa.float32()), ("v", pa.int64())]), primary_key=["k"],
                         options={"bucket": bucket})

    def write(keys: list[float], values: list[int]) -> None:
        t.write(pa.table({"k": pa.array(keys, pa.float32()), "v": pa.array(values, pa.int64())}))

    write([QUIET_NAN, 0.0, -0.0, QUIET_NAN], [1, 2, 3, 4])
    write([QUIET_NAN, -0.0], [5, 6])
    expected = {"NaN": 5, 0.0: 2, "-0.0": 6}
    assert {java_class(r["k"]): r["v"] for r in t.read().to_pylist()} == expected
    assert t.read().num_rows == 3
    t.compact(full=True)
    assert {java_class(r["k"]): r["v"] for r in t.read().to_pylist()} == expected
    assert t.read().num_rows == 3
