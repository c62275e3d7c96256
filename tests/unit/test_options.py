"""Typed options: Paimon's keys and defaults, Java's value syntax, clear errors for bad values."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from laketide.exceptions import InvalidOptionError
from laketide.options import (
    CatalogOptions,
    ChangelogProducer,
    ConfigOption,
    CoreOptions,
    MergeEngine,
    OptionType,
    format_duration,
    format_memory_size,
    parse_duration,
    parse_memory_size,
)

MB = 1 << 20


def test_defaults_match_paimon() -> None:
    o = CoreOptions({})
    assert o.bucket == -1
    assert o.bucket_key is None
    assert o.file_format == "parquet"
    assert o.file_compression == "zstd"
    assert o.file_compression_zstd_level == 1
    assert o.target_file_size(has_primary_key=True) == 128 * MB
    assert o.target_file_size(has_primary_key=False) == 256 * MB
    assert o.manifest_format == "avro"
    assert o.manifest_compression == "zstd"
    assert o.manifest_target_file_size == 8 * MB
    assert o.manifest_merge_min_count == 30
    assert o.manifest_full_compaction_threshold_size == 16 * MB
    assert o.snapshot_num_retained_min == 10
    assert o.snapshot_num_retained_max == 2**31 - 1
    assert o.snapshot_time_retained == 3_600_000
    assert o.commit_user_prefix is None
    assert o.commit_max_retries == 10
    assert o.commit_min_retry_wait == 10
    assert o.commit_max_retry_wait == 10_000
    assert o.commit_timeout is None
    assert o.partition_default_name == "__DEFAULT_PARTITION__"
    assert o.metadata_stats_mode == "truncate(16)"
    assert o.write_buffer_size == 256 * MB
    assert o.write_only is False
    assert o.num_sorted_run_compaction_trigger == 5
    assert o.num_sorted_run_stop_trigger == 8
    assert o.num_levels == 6
    assert o.merge_engine is MergeEngine.DEDUPLICATE
    assert o.sequence_field == []
    assert o.rowkind_field is None
    assert o.ignore_delete is False
    assert o.data_file_prefix == "data-"
    assert o.changelog_producer is ChangelogProducer.NONE
    assert o.deletion_vectors_enabled is False
    assert o.dynamic_bucket_target_row_num == 2_000_000
    assert o.file_index_in_manifest_threshold == 500
    assert o.file_index_read_enabled is True
    assert o.scan_snapshot_id is None and o.scan_timestamp_millis is None and o.scan_tag_name is None
    assert o.read_batch_size == 1024
    assert o.data_file_thin_mode is False
    assert o.to_map() == {}


def test_typed_values_are_parsed() -> None:
    o = CoreOptions(
        {
            "bucket": "4",
            "bucket-key": "a,b",
            "file.format": "ORC",
            "target-file-size": "64 mb",
            "snapshot.time-retained": "30 min",
            "commit.timeout": "2 s",
            "merge-engine": "Partial-Update",
            "changelog-producer": "lookup",
            "sequence.field": "ts, seq",
            "write-only": "TRUE",
            "num-sorted-run.compaction-trigger": "3",
            "num-sorted-run.stop-trigger": "2",
            "scan.snapshot-id": "9000000000",
            "fields.name.stats-mode": "full",
            "file-index.bloom-filter.columns": "id",
            "file-index.read.enabled": "false",
        }
    )
    assert o.bucket == 4
    assert o.bucket_key == ["a", "b"]
    assert o.file_format == "orc"
    assert o.target_file_size(has_primary_key=True) == 64 * MB
    assert o.target_file_size(has_primary_key=False) == 64 * MB
    assert o.snapshot_time_retained == 30 * 60_000
    assert o.commit_timeout == 2_000
    assert o.merge_engine is MergeEngine.PARTIAL_UPDATE
    assert o.changelog_producer is ChangelogProducer.LOOKUP
    assert o.sequence_field == ["ts", "seq"]
    assert o.write_only is True
    # An explicit stop trigger below the compaction trigger is raised to it, as in Java.
    assert o.num_sorted_run_stop_trigger == 3
    assert o.num_levels == 4
    assert o.scan_snapshot_id == 9_000_000_000
    assert o.stats_mode("name") == "full"
    assert o.stats_mode("other") == "truncate(16)"
    assert o.file_index_options() == {"file-index.bloom-filter.columns": "id", "file-index.read.enabled": "false"}
    assert o.file_index_read_enabled is False


def test_fallback_keys_are_honoured() -> None:
    assert CoreOptions({"write.compaction-skip": "true"}).write_only is True
    assert CoreOptions({"first-row.ignore-delete": "true"}).ignore_delete is True
    assert CoreOptions({"log.scan.timestamp-millis": "123"}).scan_timestamp_millis == 123
    # The main key wins over a fallback.
    assert CoreOptions({"ignore-delete": "false", "partial-update.ignore-delete": "true"}).ignore_delete is False


def test_unknown_keys_are_kept_untouched() -> None:
    user = {"bucket": "2", "bucket-key": "k", "parquet.block.size": "1", "fields.x.aggregate-function": "sum",
            "some.future.option": "???"}
    o = CoreOptions(user)
    assert o.to_map() == user
    assert o.to_map() is not user
    assert o.raw("some.future.option") == "???"
    assert o.field_option("x", "aggregate-function") == "sum"


def test_python_scalars_are_stored_as_paimon_strings() -> None:
    o = CoreOptions({"bucket": 4, "write-only": True, "merge-engine": MergeEngine.FIRST_ROW})
    assert o.to_map() == {"bucket": "4", "write-only": "true", "merge-engine": "first-row"}
    assert o.bucket == 4 and o.write_only is True and o.merge_engine is MergeEngine.FIRST_ROW
    with pytest.raises(InvalidOptionError, match="'bucket'"):
        CoreOptions({"bucket": 1.5})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("bucket", "abc", "integer"),
        ("bucket", "0", "-1 (dynamic)"),
        ("bucket", "-3", "-1 (dynamic)"),
        ("bucket", "99999999999", "32-bit"),
        ("file.format", "csvx", "parquet"),
        ("manifest.format", "xml", "avro"),
        ("merge-engine", "dedup", "'deduplicate'"),
        ("changelog-producer", "always", "'full-compaction'"),
        ("write-buffer-size", "1.5 gb", "memory size"),
        ("write-buffer-size", "12 parsecs", "memory size"),
        ("target-file-size", "-1 mb", "memory size"),
        ("snapshot.time-retained", "1 week", "duration"),
        ("commit.min-retry-wait", "", "duration"),
        ("write-only", "yes", "'true' or 'false'"),
        ("snapshot.num-retained.min", "0", ">= 1"),
        ("metadata.stats-mode", "truncate", "truncate(<n>)"),
        ("fields.f.stats-mode", "partial", "truncate(<n>)"),
        ("bucket-key", "a,,b", "comma separated"),
        ("bucket-key", "a, b", "without surrounding spaces"),
        ("scan.snapshot-id", "1e3", "64-bit integer"),
        ("read.batch-size", "0", ">= 1"),
        ("write-buffer-size", "0", ">= 1"),
        ("target-file-size", "0 kb", ">= 1"),
        ("manifest.target-file-size", "0", ">= 1"),
        ("data-file.prefix", "../../x-", "without '/'"),
        ("data-file.prefix", "", "non-empty"),
        ("changelog-file.prefix", "a\\b", "without '/'"),
        ("data-file.prefix", "x\x00", "control characters"),
        ("sequence.field.sort-order", "DESC", "'descending'"),
        ("compaction.small-file-ratio", "abc", "a number"),
        ("compaction.small-file-ratio", "nan", "a number"),
        ("compaction.small-file-ratio", "-0.5", ">= 0"),
        ("compaction.min.file-num", "0", ">= 1"),
        ("force-lookup", "yes", "'true' or 'false'"),
        ("dynamic-bucket.max-buckets", "0", "-1 (unlimited)"),
        ("cross-partition-upsert.index-ttl", "soon", "duration"),
    ],
)
def test_bad_values_raise_invalid_option_error(key: str, value: str, expected: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        CoreOptions({key: value})
    message = str(info.value)
    assert f"'{key}'" in message
    assert repr(value) in message
    assert expected in message


def test_doubles_parse_like_java() -> None:
    assert CoreOptions({"compaction.small-file-ratio": "0.5"}).get(CoreOptions.COMPACTION_SMALL_FILE_RATIO) == 0.5
    assert CoreOptions({"compaction.small-file-ratio": " 1e-1 "}).get(CoreOptions.COMPACTION_SMALL_FILE_RATIO) == 0.1
    assert CoreOptions({}).get(CoreOptions.COMPACTION_SMALL_FILE_RATIO) == 0.7


def test_blank_bucket_key_means_none() -> None:
    assert CoreOptions({"bucket-key": "  "}).bucket_key is None


def test_bucket_accepts_dynamic_postpone_and_fixed() -> None:
    assert [CoreOptions({"bucket": b}).bucket for b in ("-1", "-2", "1", "+7")] == [-1, -2, 1, 7]


def test_merged_overrides_and_validates() -> None:
    base = CoreOptions({"bucket": "2", "x": "1"})
    merged = base.merged({"scan.tag-name": "t1"})
    assert merged.scan_tag_name == "t1" and merged.bucket == 2
    assert base.scan_tag_name is None
    with pytest.raises(InvalidOptionError):
        base.merged({"bucket": "zero"})


def test_options_pickle_and_compare() -> None:
    o = CoreOptions({"bucket": "3", "merge-engine": "aggregation"})
    clone = pickle.loads(pickle.dumps(o))
    assert clone == o and hash(clone) == hash(o)
    assert clone.merge_engine is MergeEngine.AGGREGATE
    assert CoreOptions({"bucket": "3"}) != o


def test_known_options_have_unique_keys() -> None:
    keys = [opt.key for opt in CoreOptions.known_options()]
    assert len(keys) == len(set(keys)) > 40


def test_config_option_parse_reports_key() -> None:
    opt: ConfigOption[int] = ConfigOption(key="my.size", type=OptionType.MEMORY_SIZE, default=1)
    assert opt.parse("2 kb") == 2048
    with pytest.raises(InvalidOptionError, match="'my.size'"):
        opt.parse("two")


@pytest.mark.parametrize(
    ("text", "size"),
    [("128 mb", 128 * MB), ("64kb", 64 << 10), ("1 gb", 1 << 30), ("1024", 1024), ("7b", 7), ("3 bytes", 3),
     ("2 T", 2 << 40), ("  5 MeBiBytes ", 5 * MB), ("500 B", 500), ("0", 0)],
)
def test_parse_memory_size(text: str, size: int) -> None:
    assert parse_memory_size(text) == size


@pytest.mark.parametrize(
    ("text", "millis"),
    [("1 h", 3_600_000), ("30 min", 1_800_000), ("10 s", 10_000), ("100 ms", 100), ("1 d", 86_400_000),
     ("250", 250), ("2 hours", 7_200_000), ("3m", 180_000), ("5 sec", 5_000), ("1500 µs", 1),
     ("1500 micros", 1), ("999999 ns", 0), ("2 DAYS", 172_800_000)],
)
def test_parse_duration(text: str, millis: int) -> None:
    assert parse_duration(text) == millis


@pytest.mark.parametrize("text", ["", "mb", "-5", "1.5 s", "9223372036854775808", "8388608 tb"])
def test_parse_memory_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_memory_size(text)


_UNIT_BYTES = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}
_UNIT_MILLIS = {"d": 86_400_000, "h": 3_600_000, "min": 60_000, "s": 1_000, "ms": 1}


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_memory_size_format_round_trips(size: int) -> None:
    assert parse_memory_size(format_memory_size(size)) == size


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_duration_format_round_trips(millis: int) -> None:
    assert parse_duration(format_duration(millis)) == millis


@given(st.integers(min_value=0, max_value=2**63 - 1), st.sampled_from(sorted(_UNIT_BYTES)))
def test_memory_size_units_multiply_or_overflow(amount: int, unit: str) -> None:
    expected = amount * _UNIT_BYTES[unit]
    if expected <= 2**63 - 1:
        assert parse_memory_size(f"{amount}{unit}") == expected
    else:
        with pytest.raises(ValueError, match="64-bit"):
            parse_memory_size(f"{amount}{unit}")


@given(st.integers(min_value=0, max_value=2**63 - 1), st.sampled_from(sorted(_UNIT_MILLIS)))
def test_duration_units_multiply_or_overflow(amount: int, unit: str) -> None:
    expected = amount * _UNIT_MILLIS[unit]
    if expected <= 2**63 - 1:
        assert parse_duration(f"{amount} {unit}") == expected
    else:
        with pytest.raises(ValueError, match="64-bit"):
            parse_duration(f"{amount} {unit}")


def test_catalog_options() -> None:
    c = CatalogOptions({"warehouse": "/wh", "lock.enabled": "true", "custom": "kept"})
    assert c.warehouse == "/wh"
    assert c.metastore == "filesystem"
    assert c.uri is None
    assert c.lock_enabled is True
    assert c.lock_acquire_timeout == 8 * 60_000
    assert c.lock_check_max_sleep == 8_000
    assert c.to_map() == {"warehouse": "/wh", "lock.enabled": "true", "custom": "kept"}
    assert CatalogOptions({"metastore": "JDBC", "uri": "sqlite:///m.db"}).metastore == "jdbc"
    with pytest.raises(InvalidOptionError, match="'lock.enabled'"):
        CatalogOptions({"lock.enabled": "maybe"})
