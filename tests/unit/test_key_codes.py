"""key_codes: the direct-table path for integer keys answers exactly what Arrow's hash kernels answer."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from laketide.write import key_codes
from laketide.write.key_codes import encode_keys, has_duplicate_ints, positions_in


def _arrow(kb: pa.Array) -> tuple[list[int], list[object], list[int]]:
    enc = pc.dictionary_encode(kb)
    codes = enc.indices.to_numpy().astype(np.int64)
    first = [int(np.flatnonzero(codes == i)[0]) for i in range(len(enc.dictionary))]
    return codes.tolist(), enc.dictionary.to_pylist(), first


CASES = {
    "dense": lambda rng: rng.integers(0, 3000, 5000),
    "negative": lambda rng: rng.integers(-2500, 10, 4000),
    "distinct shuffled": lambda rng: rng.permutation(6000) + 10**12,
    "sparse (hashed)": lambda rng: rng.integers(-(2**62), 2**62, 3000),
    "at int64 max": lambda rng: np.iinfo(np.int64).max - rng.integers(0, 50, 200),
    "at int64 min": lambda rng: np.iinfo(np.int64).min + rng.integers(0, 50, 200),
    "one": lambda rng: np.array([7]),
    "ascending": lambda rng: np.arange(-100, 5000),
    "distinct at int64 max": lambda rng: np.iinfo(np.int64).max - rng.permutation(300),
    "distinct but one": lambda rng: np.concatenate([rng.permutation(4000), [17]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_encode_keys_equals_dictionary_encode(case: str) -> None:
    rng = np.random.default_rng(len(case))
    kb = pa.array(CASES[case](rng).astype(np.int64))
    got = encode_keys(kb)
    codes, keys, first = _arrow(kb)
    assert got.codes.tolist() == codes and got.keys.to_pylist() == keys and got.first.tolist() == first
    # positions in an index that holds some of the keys and others around them
    index = pa.array(np.unique(np.concatenate([np.asarray(keys)[::3], CASES[case](rng).astype(np.int64)])))
    expected = pc.fill_null(pc.index_in(got.keys, value_set=index), -1).to_numpy().tolist()
    assert positions_in(got.keys, index).tolist() == expected


def test_binary_keys_and_empty_inputs() -> None:
    kb = pa.array([b"b", b"a", b"b", b"c"], pa.large_binary())
    got = encode_keys(kb)
    assert got.codes.tolist() == [0, 1, 0, 2] and got.keys.to_pylist() == [b"b", b"a", b"c"]
    assert got.first.tolist() == [0, 1, 3]
    assert positions_in(got.keys, pa.array([b"c", b"b"], pa.large_binary())).tolist() == [1, -1, 0]
    empty = pa.array([], pa.int64())
    assert positions_in(empty, pa.array([1, 2], pa.int64())).tolist() == []
    assert positions_in(pa.array([1, 2], pa.int64()), empty).tolist() == [-1, -1]
    assert len(encode_keys(empty).keys) == 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_has_duplicate_ints_equals_a_set(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_codes, "CHUNK_ROWS", 1000)  # several chunks per column
    values = CASES[case](np.random.default_rng(len(case))).astype(np.int64)
    got = has_duplicate_ints(values)
    if case == "sparse (hashed)":
        assert got is None  # too wide for a table: the caller sorts
    else:
        assert got == (len(set(values.tolist())) < len(values))


def test_distinct_keys_over_several_chunks_keep_arrival_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_codes, "CHUNK_ROWS", 777)
    values = np.random.default_rng(3).permutation(5000).astype(np.int64) - 2500
    got = encode_keys(pa.array(values))
    assert got.codes.tolist() == list(range(5000)) == got.first.tolist()
    assert got.keys.to_pylist() == values.tolist()
    with pytest.raises(ValueError):
        got.codes[0] = 1  # shared by codes and first: read-only


@pytest.mark.parametrize("case", ["dense", "negative", "distinct shuffled", "at int64 max", "ascending"])
def test_positions_in_a_long_index_over_several_chunks(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_codes, "CHUNK_ROWS", 333)
    rng = np.random.default_rng(len(case) + 1)
    keys = encode_keys(pa.array(CASES[case](rng).astype(np.int64))).keys
    index = pa.array(rng.permutation(np.unique(np.concatenate([np.asarray(keys)[::2],
                                                                CASES[case](rng).astype(np.int64)]))))
    expected = pc.fill_null(pc.index_in(keys, value_set=index), -1).to_numpy().tolist()
    assert positions_in(keys, index).tolist() == expected


def test_chunked_count_and_gather_equal_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_codes, "CHUNK_ROWS", 7)  # several chunks and a partial last one
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 30):
        ids = rng.integers(0, 5, n).astype(np.int32)
        for length in (6, 9):  # a table shorter than a chunk, and one longer (counted in one go)
            assert key_codes.count_ids(ids, length).tolist() == np.bincount(ids, minlength=length).tolist()
        values = rng.integers(-9, 9, 5).astype(np.int32)
        got = key_codes.gather(values, ids)
        assert got.dtype == values.dtype and got.tolist() == values[ids].tolist()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.int64])
def test_present_ids_equal_unique(dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_codes, "CHUNK_ROWS", 7)  # several chunks and a partial last one
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 30):
        ids = rng.integers(0, 12, n).astype(dtype)
        got = key_codes.present_ids(ids, 12)
        assert got.tolist() == np.unique(ids).tolist()


def test_distinct_says_whether_every_row_has_its_own_key() -> None:
    assert encode_keys(pa.array([5, 3, 9], pa.int64())).distinct
    assert not encode_keys(pa.array([5, 3, 5], pa.int64())).distinct
    assert encode_keys(pa.array([b"x", b"y"], pa.large_binary())).distinct
    assert not encode_keys(pa.array([b"x", b"x"], pa.large_binary())).distinct
