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
