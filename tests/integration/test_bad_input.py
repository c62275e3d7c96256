"""Bad data handed to a write or a read is refused with a typed error before anything happens (issue 14, defect 7).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError, SchemaError
from tests.tree import tree

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("seq", pa.int64())])
ROWS = pa.table({"id": [1, 2], "v": ["a", "b"], "seq": [1, 1]}, schema=SCHEMA)


# -- struct columns on write ------------------------------------------------------------------------------------

STRUCT = pa.struct([("a", pa.int32()), ("b", pa.string())])
NESTED = pa.schema([("id", pa.int64()), ("s", STRUCT), ("l", pa.list_(STRUCT))])


@pytest.mark.parametrize("bad", [
    pa.struct([("x", pa.int32()), ("y", pa.string())]),
    pa.struct([("a", pa.int32())]),
    pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.int8())]),
])
def test_struct_with_other_field_names_is_refused(catalog, tmp_path: Path, bad: pa.DataType) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", NESTED)
    before = tree(tmp_path)
    values = [{n: (1 if pa.types.is_integer(bad.field(n).type) else "q") for n in bad.names}]
    good_list = pa.array([[{"a": 1, "b": "z"}]], pa.list_(STRUCT))
    with pytest.raises(SchemaError, match="struct s"):
        t.write(pa.table({"id": [1], "s": pa.array(values, bad), "l": good_list}))
    with pytest.raises(SchemaError, match=r"struct l\[\]"):
        t.write(pa.table({"id": [1], "s": pa.array([{"a": 1, "b": "z"}], STRUCT),
                          "l": pa.array([values], pa.list_(bad))}))
    assert tree(tmp_path) == before and t.latest_snapshot() is None


def test_struct_fields_in_another_order_are_matched_by_name(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", NESTED)
    swapped = pa.struct([("b", pa.string()), ("a", pa.int64())])
    t.write(pa.table({"id": [1], "s": pa.array([{"b": "z", "a": 7}], swapped),
                      "l": pa.array([[{"b": "y", "a": 8}]], pa.list_(swapped))}))
    assert t.read().to_pylist() == [{"id": 1, "s": {"a": 7, "b": "z"}, "l": [{"a": 8, "b": "y"}]}]


# -- time travel by datetime ---------------------------------------------------------------------------------------

def test_timestamp_ms_accepts_datetimes(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA)
    t.write(ROWS)
    first = t.latest_snapshot()
    t.write(ROWS)
    at = dt.datetime.fromtimestamp(first.time_millis / 1000, tz=dt.timezone.utc)
    naive_utc = at.replace(tzinfo=None)
    elsewhere = at.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30)))
    for when in (first.time_millis, at, naive_utc, elsewhere):
        assert t.read(timestamp_ms=when).num_rows == 2
        assert t.scan(timestamp_ms=when).snapshot.id == first.id
    assert t.read().num_rows == 4
    for bad in ("2024-01-01", 1.5, True, dt.date(2024, 1, 1)):
        with pytest.raises(InvalidOptionError, match="timestamp_ms"):
            t.read(timestamp_ms=bad)  # type: ignore[arg-type]


def test_tag_names_cannot_reach_outside_the_table(catalog, tmp_path: Path) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA)
    t.write(ROWS)
    # A snapshot-like file outside the table that '../..' would reach.
    (tmp_path / "tag-x").write_text(Path(t.snapshot_manager.snapshot_path(1)).read_text())
    for bad in ("../../../../tag-x", "a/b", "a\\b", "", " ", "a\nb"):
        with pytest.raises(InvalidOptionError, match="tag name"):
            t.read(tag=bad)
