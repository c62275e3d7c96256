"""Parquet data files written into a native Arrow stream (LocalFileIO.open_native_output): the same bytes as
through the Python stream, the same exclusive creation and clean-up, and wrapped file systems (fault injection)
keep their Python streams."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import FileAlreadyExistsError
from laketide.fs.failing import FailingFileIO
from laketide.fs.local import LocalFileIO
from laketide.format.parquet import ParquetFormat


def _rows(n: int) -> pa.Table:
    rng = np.random.default_rng(n)
    return pa.table({
        "k": pa.array(np.arange(n), pa.int64()),
        "s": pa.array([f"name-{i % 97}" for i in range(n)]),
        "d": pa.array(rng.random(n)),
    })


@pytest.mark.parametrize("options", [{}, {"parquet.block.size": "65536"}, {"parquet.enable.dictionary": "true"}])
def test_native_and_python_streams_give_the_same_bytes(tmp_path: Path, options: dict[str, str]) -> None:
    fio, fmt, rows = LocalFileIO(), ParquetFormat(), _rows(50_000)
    out_py, out_native = str(tmp_path / "py.parquet"), str(tmp_path / "native.parquet")
    sizes = []
    for stream in (fio.open_output(out_py), fio.open_native_output(out_native)):
        writer = fmt.open_writer(stream, rows.schema, compression="zstd", options=options)
        for batch in rows.to_batches(max_chunksize=7_000):
            writer.write_batch(batch)
            sizes.append(writer.bytes_written())
        writer.close()
        stream.close()
    assert fio.read_bytes(out_native) == fio.read_bytes(out_py)
    half = len(sizes) // 2
    assert sizes[:half] == sizes[half:]  # rolling at target-file-size sees the same estimates


def test_native_output_refuses_a_taken_path_and_leaves_it(tmp_path: Path) -> None:
    fio = LocalFileIO()
    path = str(tmp_path / "a" / "taken.parquet")
    fio.write_bytes(path, b"old")
    with pytest.raises(FileAlreadyExistsError, match="taken.parquet"):
        fio.open_native_output(path)
    assert fio.read_bytes(path) == b"old"


def test_native_output_creates_parents_and_closes_twice(tmp_path: Path) -> None:
    fio = LocalFileIO()
    path = str(tmp_path / "x" / "y" / "f.bin")
    out = fio.open_native_output(path)
    out.write(b"abc")
    out.close()
    out.close()
    assert fio.read_bytes(path) == b"abc"


def test_wrapped_file_systems_keep_python_streams(tmp_path: Path) -> None:
    # Fault injection wraps every write: a native stream would bypass it.
    assert FailingFileIO(LocalFileIO()).open_native_output(str(tmp_path / "f")) is None


def test_pk_table_files_written_natively_read_back_and_an_abort_leaves_none(tmp_path: Path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    rows = _rows(20_000)
    t = cat.create_table("db.t", rows.schema, primary_key=["k"], options={"bucket": "3"})
    t.write(rows)
    t.write(rows.slice(0, 5_000))
    assert t.read().sort_by("k").to_pydict() == rows.to_pydict()
    files = sorted(p.name for p in Path(t.path.removeprefix("file://")).glob("**/data-*"))
    # Written (each bucket flushed as it went) but never committed: abort deletes the new files.
    w = t.store.new_write()
    w.write(rows.slice(0, 9_000), final=True)
    assert len(sorted(Path(t.path.removeprefix("file://")).glob("**/data-*"))) > len(files)
    w.abort()
    assert sorted(p.name for p in Path(t.path.removeprefix("file://")).glob("**/data-*")) == files
    assert t.read().sort_by("k").to_pydict() == rows.to_pydict()
