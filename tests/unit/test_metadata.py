"""Snapshot, schema and manifest files: Java-written ones parse, and ours have Java's shape."""

from __future__ import annotations

import gc
import json
import threading
from pathlib import Path

import fastavro
import pytest

from laketide.exceptions import CorruptMetadataError
from laketide.meta.manifest import IndexManifestEntry, ManifestEntry, ManifestFileMeta
from laketide.meta.manifest_io import decode_records, encode_records, read_objects, to_records
from laketide.meta.manifest_schema import INDEX_MANIFEST_ENTRY, MANIFEST_ENTRY, MANIFEST_FILE_META, avro_schema
from laketide.meta.paths import java_to_string, partition_path
from laketide.meta.snapshot import CommitKind, Snapshot
from laketide.schema.table_schema import TableSchema


@pytest.fixture()
def pk_09(compat_dir: Path) -> Path:
    return compat_dir / "tables" / "pk_09.db" / "pk_09"


def test_java_schema_file_round_trips_byte_for_byte(pk_09: Path) -> None:
    text = (pk_09 / "schema" / "schema-0").read_text()
    schema = TableSchema.from_json(text)
    assert schema.primary_keys == ("f0", "f1", "f2")
    assert str(schema.field("f0").type) == "STRING NOT NULL"
    assert schema.to_json() == text


def test_java_snapshot_parses_and_keeps_unknown_fields(pk_09: Path) -> None:
    text = (pk_09 / "snapshot" / "snapshot-8").read_text()
    snap = Snapshot.from_json(text)
    assert snap.id == 8 and snap.commit_kind is CommitKind.COMPACT and snap.delta_record_count == -3
    assert snap.index_manifest == "index-manifest-03e2700b-8409-499b-8c27-a09ccee9348c-1"
    again = json.loads(snap.to_json())
    assert {k: v for k, v in again.items() if v is not None} == {
        k: v for k, v in json.loads(text).items() if v is not None
    }


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"id": 1}', "\x00\x01"])
def test_bad_snapshot_text_names_the_file(text: str) -> None:
    with pytest.raises(CorruptMetadataError, match="snapshot-9"):
        Snapshot.from_json(text, path="/t/snapshot/snapshot-9")


def _java_schema(path: Path) -> dict:
    with path.open("rb") as f:
        return fastavro.reader(f).writer_schema


def _shape(schema: object) -> object:
    """Field names, nesting and Avro types, minus nullability (0.9 made some fields nullable that now are not)."""
    if isinstance(schema, list):
        inner = [s for s in schema if s != "null"]
        return _shape(inner[0])
    if isinstance(schema, dict):
        if schema.get("type") == "record":
            return (schema["name"], [(f["name"], _shape(f["type"])) for f in schema["fields"]])
        if schema.get("type") == "array":
            return ("array", _shape(schema["items"]))
        return schema.get("logicalType", schema["type"])
    return schema


@pytest.mark.parametrize(
    ("prefix", "fields"),
    [("manifest-list-", MANIFEST_FILE_META), ("manifest-8", MANIFEST_ENTRY), ("index-manifest-", INDEX_MANIFEST_ENTRY)],
)
def test_our_avro_schemas_extend_javas(pk_09: Path, prefix: str, fields) -> None:  # noqa: ANN001
    java_file = sorted((pk_09 / "manifest").glob(prefix + "*"))[0]
    java = _shape(_java_schema(java_file))
    ours = _shape(fastavro.parse_schema(avro_schema(fields)))
    java_name = java[0]
    assert ours[0] == java_name == "org.apache.paimon.avro.generated.record"

    def extends(a: object, b: object, where: str) -> None:
        """``b`` (ours) has every field of ``a`` (Java's), in order, with the same types; it may add more."""
        if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], list):
            assert isinstance(b, tuple) and a[0] == b[0], where  # record names follow Java's <parent>_<field>
            assert [n for n, _ in b[1]][: len(a[1])] == [n for n, _ in a[1]], where
            for (name, ta), (_, tb) in zip(a[1], b[1]):
                extends(ta, tb, f"{where}.{name}")
        elif isinstance(a, tuple) and a and a[0] == "array":
            assert isinstance(b, tuple) and b[0] == "array", where
            extends(a[1], b[1], where + "[]")
        else:
            assert a == b, where

    extends(java, ours, java_name)


def test_java_manifests_decode_and_reencode(pk_09: Path) -> None:
    for path in sorted((pk_09 / "manifest").glob("manifest-8*")):
        entries = [ManifestEntry.from_record(r) for r in decode_records(path.read_bytes(), path=str(path))]
        assert entries
        for fmt in ("avro", "orc", "parquet"):
            data = encode_records(to_records(entries), MANIFEST_ENTRY, fmt=fmt, compression="zstd")
            again = [ManifestEntry.from_record(r) for r in decode_records(data, path=fmt)]
            assert again == entries
    for path in sorted((pk_09 / "manifest").glob("manifest-list-*")):
        metas = [ManifestFileMeta.from_record(r) for r in decode_records(path.read_bytes(), path=str(path))]
        data = encode_records(to_records(metas), MANIFEST_FILE_META, fmt="avro", compression="zstd")
        assert [ManifestFileMeta.from_record(r) for r in decode_records(data, path="x")] == metas
    for path in sorted((pk_09 / "manifest").glob("index-manifest-*")):
        entries = [IndexManifestEntry.from_record(r) for r in decode_records(path.read_bytes(), path=str(path))]
        assert all(e.index_file.index_type == "DELETION_VECTORS" for e in entries)
        data = encode_records(to_records(entries), INDEX_MANIFEST_ENTRY, fmt="avro", compression="zstd")
        assert [IndexManifestEntry.from_record(r) for r in decode_records(data, path="x")] == entries


def test_garbage_manifest_names_the_file() -> None:
    with pytest.raises(CorruptMetadataError, match="manifest-x"):
        decode_records(b"not a manifest", path="/t/manifest/manifest-x")


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_metadata_leaves_the_garbage_collector_as_it_was(pk_09: Path, enabled: bool) -> None:
    """Decoding pauses the collector (planning stays proportional to the files); it must come back as it was,
    also after a corrupt file and when threads decode at once."""
    paths = [str(p) for p in sorted((pk_09 / "manifest").glob("manifest-8*"))]
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        errors: list[BaseException] = []
        gate = threading.Barrier(4)

        def decode() -> None:
            try:
                gate.wait()
                for _ in range(20):
                    for p in paths:
                        assert read_objects(lambda q: Path(q).read_bytes(), p, ManifestEntry.from_record)
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=decode) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert gc.isenabled() is enabled
        with pytest.raises(CorruptMetadataError, match="manifest-x"):
            read_objects(lambda q: b"not a manifest", "/t/manifest/manifest-x", ManifestEntry.from_record)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_partition_paths_follow_java_legacy_names() -> None:
    import datetime as dt
    import decimal

    assert partition_path(["dt", "h"], ["2026-11-21", 7], default_name="__D__") == "dt=2026-11-21/h=7"
    assert partition_path(["p"], [None], default_name="__D__") == "p=__D__"
    assert partition_path(["p"], ["  "], default_name="__D__") == "p=__D__"
    assert partition_path(["p"], ["a/b:c=d%"], default_name="x") == "p=a%2Fb%3Ac%3Dd%25"
    assert java_to_string(dt.date(1970, 1, 11)) == "10"  # DATE is days since epoch in legacy names
    assert java_to_string(dt.datetime(2026, 11, 21, 10, 15)) == "2026-11-21T10:15"
    assert java_to_string(dt.datetime(2026, 11, 21, 10, 15, 0, 120000)) == "2026-11-21T10:15:00.120"
    assert java_to_string(decimal.Decimal("1.50")) == "1.50"
    assert java_to_string(1.0) == "1.0"
    assert java_to_string(1e10) == "1.0E10"
    assert java_to_string(0.0001) == "1.0E-4"
    assert java_to_string(True) == "true"


@pytest.mark.parametrize("enabled", [True, False])
def test_a_scan_plans_with_the_collector_paused_and_restores_it(tmp_path: Path, enabled: bool,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole plan (manifests, merging the entries, splits) runs without collector passes; afterwards the
    collector is as it was, also when planning fails."""
    import pyarrow as pa

    import laketide
    from laketide.scan import file_scan

    catalog = laketide.load_catalog(warehouse=str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([("k", pa.int64())]))
    table.write(pa.table({"k": [1, 2]}))
    table.write(pa.table({"k": [3]}))
    seen: list[bool] = []
    merge = file_scan.merge_entries

    def watching(entries: list[ManifestEntry]) -> list[ManifestEntry]:
        seen.append(gc.isenabled())
        if len(seen) > 1:
            raise RuntimeError("planning failed")
        return merge(entries)

    monkeypatch.setattr(file_scan, "merge_entries", watching)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert sum(s.row_count for s in table.scan().plan()) == 3
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError, match="planning failed"):
            table.scan().plan()
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [False, False]
