"""Snapshot files: ``snapshot/snapshot-N`` JSON with Paimon's field names.

Paimon: org.apache.paimon.Snapshot
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from laketide.exceptions import CorruptMetadataError
from laketide.meta.json_util import jackson_dumps

__all__ = ["CommitKind", "Snapshot"]

CURRENT_SNAPSHOT_VERSION = 3


class CommitKind(enum.Enum):
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int
    delta_record_count: int
    version: int = CURRENT_SNAPSHOT_VERSION
    uuid: str | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    writer_version: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    next_row_id: int | None = None
    # Fields written by other Paimon versions that we do not model; kept so nothing is lost on a rewrite.
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:  # one line: the dataclass default spells out every manifest list
        import datetime as _dt

        when = _dt.datetime.fromtimestamp(self.time_millis / 1000, _dt.UTC).isoformat(timespec="milliseconds")
        return (f"Snapshot(id={self.id}, kind={self.commit_kind.value}, time={when}, schema_id={self.schema_id}, "
                f"records={self.total_record_count} (delta {self.delta_record_count:+d}), "
                f"commit_user={self.commit_user!r})")

    def to_json(self) -> str:
        # Order and null-omission follow Java's @JsonInclude(NON_NULL) annotations.
        d: dict[str, Any] = {"version": self.version}
        if self.uuid is not None:
            d["uuid"] = self.uuid
        d["id"] = self.id
        d["schemaId"] = self.schema_id
        d["baseManifestList"] = self.base_manifest_list
        _put(d, "baseManifestListSize", self.base_manifest_list_size)
        d["deltaManifestList"] = self.delta_manifest_list
        _put(d, "deltaManifestListSize", self.delta_manifest_list_size)
        _put(d, "changelogManifestList", self.changelog_manifest_list)
        _put(d, "changelogManifestListSize", self.changelog_manifest_list_size)
        _put(d, "indexManifest", self.index_manifest)
        d["commitUser"] = self.commit_user
        _put(d, "writerVersion", self.writer_version)
        d["commitIdentifier"] = self.commit_identifier
        d["commitKind"] = self.commit_kind.value
        d["timeMillis"] = self.time_millis
        d["totalRecordCount"] = self.total_record_count
        d["deltaRecordCount"] = self.delta_record_count
        _put(d, "changelogRecordCount", self.changelog_record_count)
        _put(d, "watermark", self.watermark)
        _put(d, "statistics", self.statistics)
        _put(d, "properties", self.properties)
        _put(d, "nextRowId", self.next_row_id)
        for k, v in self.extra.items():
            d.setdefault(k, v)
        return jackson_dumps(d)

    @classmethod
    def from_json(cls, text: str | bytes, *, path: str = "<snapshot>") -> Snapshot:
        try:
            d = json.loads(text)
            if not isinstance(d, dict):
                raise ValueError("not a JSON object")
            known = {
                "version", "uuid", "id", "schemaId", "baseManifestList", "baseManifestListSize",
                "deltaManifestList", "deltaManifestListSize", "changelogManifestList",
                "changelogManifestListSize", "indexManifest", "commitUser", "writerVersion",
                "commitIdentifier", "commitKind", "timeMillis", "totalRecordCount", "deltaRecordCount",
                "changelogRecordCount", "watermark", "statistics", "properties", "nextRowId",
            }
            watermark = d.get("watermark")
            return cls(
                version=int(d.get("version", 1)),
                uuid=d.get("uuid"),
                id=int(d["id"]),
                schema_id=int(d["schemaId"]),
                base_manifest_list=d["baseManifestList"],
                base_manifest_list_size=d.get("baseManifestListSize"),
                delta_manifest_list=d["deltaManifestList"],
                delta_manifest_list_size=d.get("deltaManifestListSize"),
                changelog_manifest_list=d.get("changelogManifestList"),
                changelog_manifest_list_size=d.get("changelogManifestListSize"),
                index_manifest=d.get("indexManifest"),
                commit_user=d["commitUser"],
                writer_version=d.get("writerVersion"),
                commit_identifier=int(d["commitIdentifier"]),
                commit_kind=CommitKind(d["commitKind"]),
                time_millis=int(d["timeMillis"]),
                # Snapshots of Paimon < 0.8 may lack record counts.
                total_record_count=int(d.get("totalRecordCount") or 0),
                delta_record_count=int(d.get("deltaRecordCount") or 0),
                changelog_record_count=d.get("changelogRecordCount"),
                watermark=None if watermark is None else int(watermark),
                statistics=d.get("statistics"),
                properties=d.get("properties"),
                next_row_id=d.get("nextRowId"),
                extra={k: v for k, v in d.items() if k not in known},
            )
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptMetadataError(f"Cannot parse snapshot file {path}: {e!r}", path=path) from e


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        d[key] = value
