"""MERGE INTO / UPDATE / DELETE through laketide.spark.sql against a pandas oracle over seeded random data,
for an append table, fixed- and dynamic-bucket primary-key tables and a partitioned primary-key table."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pytest

import laketide.spark as lts

KINDS = {
    "append": "",
    "fixed": "TBLPROPERTIES ('primary-key'='id', 'bucket'='2')",
    "dynamic": "TBLPROPERTIES ('primary-key'='id', 'bucket'='-1')",
    "partitioned": "PARTITIONED BY (p) TBLPROPERTIES ('primary-key'='id,p', 'bucket'='1')",
}


def _values(df: pd.DataFrame) -> str:
    return ", ".join(f"({r.id}, {r.n}, '{r.p}')" for r in df.itertuples())


def _read(cat: Any, name: str) -> list[tuple]:
    return sorted((r["id"], r["n"], r["p"]) for r in cat.table(name).read().to_pylist())


def _rows(df: pd.DataFrame) -> list[tuple]:
    return sorted((int(r.id), int(r.n), str(r.p)) for r in df.itertuples())


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df[["id", "n", "p"]].astype({"id": "int64", "n": "int64"}).sort_values(["id", "p"]).reset_index(drop=True)


@pytest.mark.parametrize("kind", list(KINDS))
def test_merge_update_delete_match_pandas(spark: Any, wh: str, cat: Any, kind: str) -> None:
    rng = random.Random(f"sql-oracle-{kind}")  # seeded: the same data every run
    name = f"db.o_{kind}"
    # The partition follows from the key: MERGE joins on id alone, so each id lives in one partition.
    target = pd.DataFrame({"id": range(40)})
    target["n"] = [rng.randint(0, 100) for _ in range(len(target))]
    target["p"] = ["a" if i % 2 else "b" for i in target["id"]]
    sql = lts.use_sql(spark, warehouse=wh)
    sql(f"CREATE TABLE {name} (id BIGINT NOT NULL, n BIGINT NOT NULL, p STRING NOT NULL) {KINDS[kind]}")
    sql(f"INSERT INTO {name} VALUES {_values(target)}")

    ids = rng.sample(range(20, 70), 25)  # about half new keys
    source = pd.DataFrame({"id": ids, "n": [rng.randint(0, 100) for _ in ids]})
    source["p"] = ["a" if i % 2 else "b" for i in source["id"]]
    sql(f"MERGE INTO {name} t USING (SELECT * FROM VALUES {_values(source)} AS s(id, n, p)) s ON t.id = s.id "
        f"WHEN MATCHED AND s.n < 30 THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET n = s.n + t.n "
        f"WHEN NOT MATCHED AND s.n > 10 THEN INSERT *")
    both = target.merge(source, on=["id", "p"], how="outer", suffixes=("", "_s"), indicator=True)
    matched = both["_merge"] == "both"
    deleted = matched & (both["n_s"] < 30)
    updated = matched & ~deleted
    inserted = (both["_merge"] == "right_only") & (both["n_s"] > 10)
    both.loc[updated, "n"] = both.loc[updated, "n"] + both.loc[updated, "n_s"]
    both.loc[inserted, "n"] = both.loc[inserted, "n_s"]
    oracle = both[(both["_merge"] == "left_only") | updated | inserted]
    assert _read(cat, name) == _rows(oracle)

    sql(f"UPDATE {name} SET n = n * 2 WHERE n > 50 AND p = 'a'")
    oracle = _sorted(oracle)
    hit = (oracle["n"] > 50) & (oracle["p"] == "a")
    oracle.loc[hit, "n"] = oracle.loc[hit, "n"] * 2
    assert _read(cat, name) == _rows(oracle)

    sql(f"DELETE FROM {name} WHERE n BETWEEN 20 AND 60")
    oracle = oracle[~oracle["n"].between(20, 60)]
    assert _read(cat, name) == _rows(oracle)


SPARK_KINDS = {**KINDS, "partitioned_append": "PARTITIONED BY (p)"}


def _tagged(df: pd.DataFrame) -> str:
    return ", ".join(f"({r.id}, {r.n}, '{r.p}', {repr(r.tag) if isinstance(r.tag, str) else 'NULL'})"
                     for r in df.itertuples())


def _s(value: Any) -> str | None:
    """A string cell, or None for NULL (pandas may hold it as None or NaN)."""
    return value if isinstance(value, str) else None


def _read_tagged(cat: Any, name: str) -> list[tuple]:
    return sorted((r["id"], r["n"], r["p"], r["tag"]) for r in cat.table(name).read().to_pylist())


def _rows_tagged(df: pd.DataFrame) -> list[tuple]:
    return sorted((int(r.id), int(r.n), str(r.p), r.tag if isinstance(r.tag, str) else None) for r in df.itertuples())


@pytest.mark.parametrize("kind", list(SPARK_KINDS))
def test_spark_functions_match_pandas(spark: Any, wh: str, cat: Any, kind: str) -> None:
    """Conditions and values laketide's expressions cannot evaluate (Spark functions, CASE, ||): Spark evaluates
    them, laketide commits once; the result matches pandas."""
    rng = random.Random(f"sql-spark-oracle-{kind}")
    name = f"db.s_{kind}"
    words = ["ab", "Cd", "eF", None, "gh"]
    target = pd.DataFrame({"id": range(40)})
    target["n"] = [rng.randint(0, 100) for _ in range(len(target))]
    target["p"] = ["a" if i % 2 else "b" for i in target["id"]]
    target["tag"] = pd.Series([rng.choice(words) for _ in range(len(target))], dtype=object)
    sql = lts.use_sql(spark, warehouse=wh)
    sql(f"CREATE TABLE {name} (id BIGINT NOT NULL, n BIGINT NOT NULL, p STRING NOT NULL, tag STRING) "
        f"{SPARK_KINDS[kind]}")
    sql(f"INSERT INTO {name} VALUES {_tagged(target)}")
    before = cat.table(name).latest_snapshot().id

    ids = rng.sample(range(20, 70), 25)
    source = pd.DataFrame({"id": ids, "n": [rng.randint(0, 100) for _ in ids]})
    source["p"] = ["a" if i % 2 else "b" for i in source["id"]]
    source["tag"] = pd.Series([rng.choice(words) for _ in ids], dtype=object)
    sql(f"MERGE INTO {name} t USING (SELECT * FROM VALUES {_tagged(source)} AS s(id, n, p, tag)) s "
        f"ON t.id = s.id "
        f"WHEN MATCHED AND abs(s.n - t.n) < 15 THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET n = greatest(s.n, t.n), tag = concat(coalesce(t.tag, '?'), '+', s.tag) "
        f"WHEN NOT MATCHED AND s.n > 10 THEN INSERT (id, n, p, tag) VALUES (s.id, s.n * 2, s.p, upper(s.tag))")
    assert cat.table(name).latest_snapshot().id == before + 1  # one commit
    both = target.merge(source, on=["id", "p"], how="outer", suffixes=("", "_s"), indicator=True)
    matched = both["_merge"] == "both"
    deleted = matched & ((both["n_s"] - both["n"]).abs() < 15)
    updated = matched & ~deleted
    inserted = (both["_merge"] == "right_only") & (both["n_s"] > 10)
    both["tag"] = both["tag"].astype(object)
    # concat with a NULL argument is NULL (Spark), so is upper(NULL)
    both.loc[updated, "tag"] = [f"{_s(t) or '?'}+{u}" if _s(u) else None
                                for t, u in zip(both.loc[updated, "tag"], both.loc[updated, "tag_s"], strict=True)]
    both.loc[updated, "n"] = both.loc[updated, ["n", "n_s"]].max(axis=1)
    both.loc[inserted, "n"] = both.loc[inserted, "n_s"] * 2
    both.loc[inserted, "tag"] = [u.upper() if _s(u) else None for u in both.loc[inserted, "tag_s"]]
    oracle = both[(both["_merge"] == "left_only") | updated | inserted][["id", "n", "p", "tag"]].copy()
    assert _read_tagged(cat, name) == _rows_tagged(oracle)

    sql(f"UPDATE {name} SET tag = CASE WHEN n > 50 THEN 'big' ELSE lower(tag) || '!' END "
        f"WHERE length(coalesce(tag, '')) > 0 AND p = 'a'")
    oracle = oracle.reset_index(drop=True)
    hit = oracle["tag"].map(lambda t: bool(_s(t))) & (oracle["p"] == "a")
    oracle.loc[hit, "tag"] = [("big" if n > 50 else t.lower() + "!")
                              for n, t in zip(oracle.loc[hit, "n"], oracle.loc[hit, "tag"], strict=True)]
    assert _read_tagged(cat, name) == _rows_tagged(oracle)

    # NOT MATCHED BY SOURCE with a Spark condition, and a join condition the merge builder cannot read.
    keep = oracle.sample(n=10, random_state=7)
    sql(f"MERGE INTO {name} t USING (SELECT * FROM VALUES {_tagged(keep)} AS s(id, n, p, tag)) s "
        f"ON t.id = s.id AND t.p = s.p AND s.n >= 0 "
        f"WHEN MATCHED THEN UPDATE SET n = t.n + 1 "
        f"WHEN NOT MATCHED BY SOURCE AND t.n % 2 = 0 AND startswith(coalesce(t.tag, 'x'), 'b') THEN DELETE "
        f"WHEN NOT MATCHED BY SOURCE THEN UPDATE SET tag = nvl(t.tag, 'none')")
    kept = oracle["id"].isin(keep["id"])
    gone = ~kept & (oracle["n"] % 2 == 0) & oracle["tag"].map(lambda t: (_s(t) or "x").startswith("b"))
    oracle.loc[kept, "n"] = oracle.loc[kept, "n"] + 1
    rest = ~kept & ~gone
    oracle.loc[rest, "tag"] = oracle.loc[rest, "tag"].map(lambda t: _s(t) or "none")
    oracle = oracle[~gone]
    assert _read_tagged(cat, name) == _rows_tagged(oracle)


@pytest.mark.parametrize("kind", ["append", "dynamic"])
def test_evaluate_in_spark_matches_the_fast_path(spark: Any, wh: str, cat: Any, kind: str) -> None:
    """``spark.laketide.sql.evaluate-in-spark``: statements laketide could evaluate go through Spark, same rows."""
    from laketide.exceptions import SqlError

    rng = random.Random(f"sql-in-spark-{kind}")
    target = pd.DataFrame({"id": range(30)})
    target["n"] = [rng.randint(0, 100) for _ in range(len(target))]
    target["p"] = ["a" if i % 2 else "b" for i in target["id"]]
    ids = rng.sample(range(15, 45), 15)
    source = pd.DataFrame({"id": ids, "n": [rng.randint(0, 100) for _ in ids]})
    source["p"] = ["a" if i % 2 else "b" for i in source["id"]]
    sql = lts.use_sql(spark, warehouse=wh)
    statements = [
        "MERGE INTO {t} t USING (SELECT * FROM VALUES " + _values(source) + " AS s(id, n, p)) s ON t.id = s.id "
        "WHEN MATCHED AND s.n < 30 THEN DELETE WHEN MATCHED THEN UPDATE SET n = s.n + t.n "
        "WHEN NOT MATCHED AND s.n > 10 THEN INSERT *",
        "UPDATE {t} SET n = n * 2 WHERE n > 50 AND p = 'a'",
    ]
    results = []
    for mode in ("false", "true"):
        name = f"db.e_{kind}_{mode}"
        sql(f"CREATE TABLE {name} (id BIGINT NOT NULL, n BIGINT NOT NULL, p STRING NOT NULL) {KINDS[kind]}")
        sql(f"INSERT INTO {name} VALUES {_values(target)}")
        spark.conf.set("spark.laketide.sql.evaluate-in-spark", mode)
        try:
            for s in statements:
                sql(s.format(t=name))
        finally:
            spark.conf.unset("spark.laketide.sql.evaluate-in-spark")
        results.append(_read(cat, name))
    assert results[0] == results[1]
    spark.conf.set("spark.laketide.sql.evaluate-in-spark", "maybe")
    try:
        with pytest.raises(SqlError, match="evaluate-in-spark"):
            sql(statements[1].format(t=f"db.e_{kind}_true"))
    finally:
        spark.conf.unset("spark.laketide.sql.evaluate-in-spark")
