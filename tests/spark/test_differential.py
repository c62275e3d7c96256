"""Differential test: random sequences of writes and reads on a laketide table and on an oracle return the same rows.

Append tables are compared with Spark's own Parquet source written by the same Spark operations (its save modes
and ``partitionOverwriteMode`` are the reference); primary-key tables with a dict of the latest row per key.
Reads go through DataFrames that are kept and reused across later steps (filters, projections, views, SQL,
new commits in between): each action must return what the oracle returns for a fresh load.

``LAKETIDE_NIGHTLY=1`` runs 200 examples (``LAKETIDE_SPARK_EXAMPLES`` sets any number); the default run 30.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
import laketide.spark as ls

EXAMPLES = int(os.environ.get("LAKETIDE_SPARK_EXAMPLES", "200" if os.environ.get("LAKETIDE_NIGHTLY") else "30"))

DDL = "id long, v string, dt string"
ARROW = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
PK_ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])

# Each filter as Spark SQL (what the DataFrames run) and as Python (the oracle; the same three-valued logic).
FILTERS: dict[str | None, Any] = {
    None: lambda r: True,
    "id < 10": lambda r: r["id"] < 10,
    "id >= 25": lambda r: r["id"] >= 25,
    "dt = 'd1'": lambda r: r["dt"] == "d1",
    "dt IN ('d0', 'd2') AND id > 5": lambda r: r["dt"] in ("d0", "d2") and r["id"] > 5,
    "v LIKE 'a%'": lambda r: r["v"] is not None and r["v"].startswith("a"),
    "v IS NULL": lambda r: r["v"] is None,
    "id % 3 = 0": lambda r: r["id"] % 3 == 0,
    "id > 1000": lambda r: r["id"] > 1000,
    "NOT (dt = 'd0') OR v = 'b'": lambda r: r["dt"] != "d0" or r["v"] == "b",
}
PROJECTIONS = [None, ("id",), ("id", "dt"), ("v", "dt")]
ACTIONS = ["collect", "count", "arrow", "sql", "distinct_dt"]

row = st.tuples(st.integers(0, 39), st.sampled_from(["a", "ab", "b", None]), st.sampled_from(["d0", "d1", "d2", "d3"]))
rows = st.lists(row, max_size=12)
write = st.one_of(
    st.tuples(st.just("append"), rows),
    st.tuples(st.just("append_raw"), rows),
    st.tuples(st.just("commit_outside"), rows),  # a commit by another writer (laketide's core, no Spark)
    st.tuples(st.just("overwrite"), rows),
    st.tuples(st.just("overwrite_dynamic"), rows),
    st.tuples(st.just("overwrite_dynamic_conf"), rows),
    st.tuples(st.just("overwrite_partition"), st.sampled_from(["d0", "d1", "d2", "d3"]), st.integers(0, 39),
              st.sampled_from(["a", None])),
)
# A view filters with DataFrame.where, or (``True``) with laketide.spark.read(where=...), which also prunes in
# laketide when laketide's filter syntax reads the expression: the same rows either way.
new_view = st.tuples(st.just("view"), st.sampled_from(list(FILTERS)), st.sampled_from(PROJECTIONS), st.booleans())
act = st.tuples(st.just("act"), st.integers(0, 7), st.sampled_from(ACTIONS))
steps = st.lists(st.one_of(write, new_view, act), min_size=1, max_size=7)


@dataclass
class View:
    where: str | None
    columns: tuple[str, ...] | None
    df: Any  # the laketide DataFrame, loaded once and reused

    def apply(self, df: Any) -> Any:
        if self.where:
            df = df.where(self.where)
        return df.select(*self.columns) if self.columns else df

    def expected(self, state: list[dict], action: str) -> list[tuple]:
        """What ``action`` returns on a fresh load of ``state`` (the oracle's rows), computed in Python."""
        keep = FILTERS[self.where]
        columns = self.columns or ("id", "v", "dt")
        out = [tuple(r[c] for c in columns) for r in state if keep(r)]
        if action in ("collect", "arrow"):
            return normalized(out)
        if action == "count":
            return [(len(out),)]
        if action == "sql":
            return [(len(out), len({r[0] for r in out if r[0] is not None}))]
        return normalized(list({(r[-1],) for r in out}))


def normalized(values: list[tuple]) -> list[tuple]:
    return sorted(values, key=lambda r: tuple((v is None, v) for v in r))


def run_action(spark, df, action: str, name: str) -> list[tuple]:  # noqa: ANN001
    if action == "collect":
        return normalized([tuple(r) for r in df.collect()])
    if action == "count":
        return [(df.count(),)]
    if action == "arrow":
        t = df.toArrow()
        return normalized(list(zip(*[t.column(i).to_pylist() for i in range(t.num_columns)])) if t.num_columns else [])
    if action == "sql":
        df.createOrReplaceTempView(name)
        return [tuple(spark.sql(f"SELECT count(*) AS n, count(DISTINCT {df.columns[0]}) AS d FROM {name}").first())]
    assert action == "distinct_dt"
    return normalized([tuple(r) for r in df.select(df.columns[-1]).distinct().collect()])


class AppendOracle:
    """Spark's Parquet source, written with the same Spark calls (the reference for save modes); its files are
    read back with pyarrow (a Spark job per check would double the test's time)."""

    def __init__(self, spark, path: str) -> None:  # noqa: ANN001
        self.spark, self.path = spark, path
        spark.createDataFrame([], DDL).write.partitionBy("dt").parquet(path)

    def state(self) -> list[dict]:
        import pyarrow.dataset as ds

        data = ds.dataset(self.path, format="parquet", partitioning="hive")
        if not data.files:
            return []
        return data.to_table(columns=["id", "v", "dt"]).to_pylist()

    def write(self, df: Any, mode: str, *, dynamic: bool = False) -> None:
        df.write.mode(mode).option("partitionOverwriteMode", "dynamic" if dynamic else "static") \
            .partitionBy("dt").parquet(self.path)

    def overwrite_partition(self, df: Any, dt: str) -> None:
        shutil.rmtree(os.path.join(self.path, f"dt={dt}"), ignore_errors=True)  # INSERT OVERWRITE PARTITION
        df.write.mode("append").partitionBy("dt").parquet(self.path)


class KeyOracle:
    """The latest row of each primary key (id)."""

    def __init__(self, spark) -> None:  # noqa: ANN001
        self.spark = spark
        self.rows: dict[int, tuple] = {}

    def state(self) -> list[dict]:
        return [dict(zip(("id", "v", "dt"), r)) for r in self.rows.values()]

    def upsert(self, new: list[tuple]) -> None:
        for r in new:
            self.rows[r[0]] = r


def apply_write(spark, kind: str, step: tuple, table: laketide.Table, wh: str, oracle: Any) -> None:  # noqa: ANN001
    op = step[0]
    data = [(r[0], r[1], r[2]) for r in step[1]] if op != "overwrite_partition" else []
    if op == "overwrite_partition":
        dt, i, v = step[1], step[2], step[3]
        data = [(i, v, dt), (i + 1, None, dt)]
    df = spark.createDataFrame(data, DDL)
    if kind == "pk":
        if op.startswith("overwrite"):
            return  # upserts are the primary-key case; overwrites are covered by the append table
        if op == "commit_outside":
            table.write(pa.Table.from_pylist([dict(zip(("id", "v", "dt"), r)) for r in data], schema=PK_ARROW))
        elif op == "append_raw":
            df.write.format("laketide").option("warehouse", wh).mode("append").save(table.name)
        else:
            ls.write(df, table.name, warehouse=wh)
        oracle.upsert(data)  # one row per key in a write (_one_row_per_key): Spark's tasks have no order
        return
    if op == "append":
        ls.write(df, table.name, warehouse=wh)
        oracle.write(df, "append")
    elif op == "append_raw":
        df.write.format("laketide").option("warehouse", wh).mode("append").save(table.name)
        oracle.write(df, "append")
    elif op == "commit_outside":
        table.write(pa.Table.from_pylist([dict(zip(("id", "v", "dt"), r)) for r in data], schema=ARROW))
        oracle.write(df, "append")
    elif op == "overwrite":
        ls.write(df, table.name, warehouse=wh, mode="overwrite")
        oracle.write(df, "overwrite")
    elif op == "overwrite_dynamic":
        df.write.format("laketide").option("warehouse", wh).option("partitionOverwriteMode", "dynamic") \
            .mode("overwrite").save(table.name)
        oracle.write(df, "overwrite", dynamic=True)
    elif op == "overwrite_dynamic_conf":
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        try:
            ls.write(df, table.name, warehouse=wh, mode="overwrite")
        finally:
            spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
        oracle.write(df, "overwrite", dynamic=True)
    else:
        ls.write(df, table.name, warehouse=wh, mode="overwrite", partition={"dt": step[1]})
        oracle.overwrite_partition(df, step[1])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(["append", "pk"]), plan=steps)
def test_laketide_matches_the_oracle(spark, kind: str, plan: list[tuple]) -> None:  # noqa: ANN001
    root = tempfile.mkdtemp(prefix="lt-diff-")
    try:
        wh = os.path.join(root, "wh")
        cat = laketide.load_catalog(warehouse=wh)
        cat.create_database("db")
        if kind == "pk":
            table = cat.create_table("db.t", PK_ARROW, primary_key=["id"], options={"bucket": "2"})
            oracle: Any = KeyOracle(spark)
            plan = [_one_row_per_key(s) for s in plan]
        else:
            table = cat.create_table("db.t", ARROW, partition_keys=["dt"])
            oracle = AppendOracle(spark, os.path.join(root, "parquet"))
        views = [View(None, None, spark.read.format("laketide").option("warehouse", wh).load("db.t"))]
        for n, step in enumerate(plan):
            if step[0] == "view":
                view = View(step[1], step[2], None)
                if step[3]:
                    loaded = ls.read(spark, "db.t", warehouse=wh, where=step[1])
                    view.df = loaded.select(*step[2]) if step[2] else loaded
                else:
                    view.df = view.apply(spark.read.format("laketide").option("warehouse", wh).load("db.t"))
                views.append(view)
            elif step[0] == "act":
                view = views[step[1] % len(views)]
                got = run_action(spark, view.df, step[2], f"lt_{n}")
                assert got == view.expected(oracle.state(), step[2]), (step, view.where, view.columns)
            else:
                apply_write(spark, kind, step, table, wh, oracle)
        last = views[-1]  # at the end the last kept DataFrame agrees with a fresh load
        assert run_action(spark, last.df, "collect", "end") == last.expected(oracle.state(), "collect")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _one_row_per_key(step: tuple) -> tuple:
    if step[0] in ("append", "append_raw", "commit_outside"):
        seen: dict[int, tuple] = {}
        for r in step[1]:
            seen[r[0]] = r
        return (step[0], list(seen.values()))
    return step
