"""Row-level changes vs deltalake on the same data in the same run (issue 21):

- delete 1% of the rows (``id % 100 = 7`` is not expressible for both, so a 1% id range) of a primary-key table and
  of an append table (deltalake has no keys: its delete is always copy-on-write / deletion vectors);
- merge N/4 rows, half of them new keys, into the table (update matched, insert the rest).

Run: ``python -m bench.dml --rows 2000000``. Each measurement is a fresh table built outside the timed part.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

import laketide


def data(rows: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "amount": pa.array(rng.random(rows) * 100),
        "name": pa.array(rng.choice(["alpha", "beta", "gamma", "delta"], rows)),
    })


def source(rows: int) -> pa.Table:
    n = rows // 4  # half existing keys, half new ones
    ids = np.concatenate([np.arange(0, rows, 2 * 2, dtype=np.int64)[: n // 2],
                          np.arange(rows, rows + n - n // 2, dtype=np.int64)])
    return pa.table({"id": ids, "amount": np.full(len(ids), 1.0), "name": pa.array(["src"] * len(ids))})


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def laketide_table(base: pa.Table, *, pk: bool) -> laketide.Table:
    cat = laketide.load_catalog(warehouse=tempfile.mkdtemp(prefix="bench-dml-"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64()), ("name", pa.string())])
    kwargs = {"primary_key": ["id"], "options": {"bucket": "4"}} if pk else {}
    t = cat.create_table("db.t", schema, **kwargs)  # type: ignore[arg-type]
    t.write(base.cast(schema))
    return t


def delta_table(base: pa.Table):  # noqa: ANN201
    from deltalake import DeltaTable, write_deltalake

    path = tempfile.mkdtemp(prefix="bench-delta-")
    write_deltalake(path, base)
    return DeltaTable(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    args = parser.parse_args()
    rows = args.rows
    base = data(rows)
    src = source(rows)
    lo, hi = rows // 2, rows // 2 + rows // 100 - 1
    where = f"id >= {lo} AND id <= {hi}"
    results: list[tuple[str, str, float]] = []
    for pk in (True, False):
        kind = "PK" if pk else "append"
        t = laketide_table(base, pk=pk)
        results.append((f"delete 1% ({kind})", "laketide", timed(lambda t=t: t.delete(where))))
        t = laketide_table(base, pk=pk)
        results.append((f"merge {len(src)} ({kind})", "laketide", timed(
            lambda t=t: t.merge(src, on="id").when_matched_update_all().when_not_matched_insert_all().execute())))
    d = delta_table(base)
    results.append(("delete 1%", "deltalake", timed(lambda: d.delete(where.replace("AND", "and")))))
    d = delta_table(base)
    results.append((f"merge {len(src)}", "deltalake", timed(
        lambda: d.merge(src, predicate="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all().when_not_matched_insert_all().execute())))
    print(f"rows = {rows}")
    for workload, engine, seconds in results:
        print(f"{workload:<28} {engine:<10} {seconds:8.3f} s")


if __name__ == "__main__":
    main()
