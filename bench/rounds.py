"""Rounds of the sized suites: each suite's sizes run side by side, round after round, and their samples pool.

The scale target divides one suite's median at the largest size by its median at the one before. Run size by
size (every suite at 2M, then every suite at 8M), the two medians came from processes several minutes apart,
and on a shared VM a slow minute falls on one side only: the same code gave 8M/2M full-read ratios from 2.1x
to 5.1x. Here a suite runs at each size in turn, ``rounds`` times (append 2M, append 8M, append 2M, ...), and
each workload's median is over every round's repetitions, so both sides of a ratio see the same minutes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

from bench.harness import Result


def sized_plan(suites: Iterable[str], sizes: Sequence[int], rounds: int) -> list[tuple[str, int]]:
    """(suite, rows) in run order: suite by suite, its sizes in turn, ``rounds`` times."""
    return [(suite, rows) for suite in suites for _ in range(rounds) for rows in sizes]


def _key(result: dict[str, Any]) -> tuple[Any, ...]:
    return result["workload"], result["engine"], result["rows"], result.get("scale", 0)


def pool(payloads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One payload per (suite, rows), in first-run order: each workload's samples from every round together.

    A round that failed is named in the notes and the others still count; a (suite, rows) whose every round
    failed keeps its first failure.
    """
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for p in payloads:
        groups.setdefault((p["suite"], p["rows"]), []).append(p)
    return [_pool_one(group) for group in groups.values()]


def _pool_one(group: list[dict[str, Any]]) -> dict[str, Any]:
    ran = [p for p in group if "error" not in p]
    if not ran:
        return group[0]
    merged = copy.deepcopy(ran[0])
    by_key = {_key(r): r for r in merged["results"]}
    for p in ran[1:]:
        for r in p["results"]:
            key = _key(r)
            mine = by_key.get(key)
            if mine is None:
                by_key[key] = copy.deepcopy(r)
                merged["results"].append(by_key[key])
            elif mine.get("error") is not None:
                mine.update(copy.deepcopy(r))  # a round that ran it beats one that could not
            elif r.get("error") is None:
                mine["seconds"] = mine["seconds"] + r["seconds"]
                peaks = [x for x in (mine.get("peak_rss_mb"), r.get("peak_rss_mb")) if x is not None]
                mine["peak_rss_mb"] = max(peaks) if peaks else None
        merged["notes"] = list(dict.fromkeys([*merged.get("notes", []), *p.get("notes", [])]))
    # median / min / max / rows per second again, over the pooled samples
    merged["results"] = [Result.from_json(r).to_json() for r in merged["results"]]
    merged["rounds"] = len(ran)
    merged["notes"] = merged.get("notes", []) + [
        f"round {i + 1} of {len(group)} failed: {p['error']}" for i, p in enumerate(group) if "error" in p]
    for total in ("seconds", "wall_s"):  # a failed round has the parent's wall time but no suite seconds
        spent = [p[total] for p in group if total in p]
        if spent:
            merged[total] = sum(spent)
    return merged
