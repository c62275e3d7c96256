"""What every benchmark suite takes (which peers run) and gives back (results, notes, facts)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench import delta_peer
from bench.harness import Result, cannot_run
from bench.peers import Runtime, engine_name

# Rust before Python: the cheap peer first, so a capped run still shows the strongest one.
RUNTIMES: tuple[Runtime, ...] = ("rust", "python")


@dataclass(frozen=True, slots=True, kw_only=True)
class Peers:
    """Which peers a suite runs; laketide and the floors always run."""

    deltalake: bool = True
    pypaimon: bool = True
    pypaimon_rust: bool = True
    # Pure-Python pypaimon takes ~20 us per written row: above this size it is reported as skipped, with the
    # reason, so the default run stays within its time budget (raise it with --pypaimon-max-rows).
    pypaimon_max_rows: int = 100_000
    # Commit latency: peers stop at this history length (deltalake and pypaimon slow down with history, so a
    # 1000-commit history for every peer would double the suite's time); laketide runs the whole history.
    max_peer_commits: int = 500

    @staticmethod
    def floors_only() -> Peers:
        return Peers(deltalake=False, pypaimon=False, pypaimon_rust=False)

    def pypaimon_runtimes(self, rows: int) -> Iterator[tuple[Runtime, str | None]]:
        """Each pypaimon runtime this run includes, with the reason it is skipped at ``rows`` (or None)."""
        if self.pypaimon_rust:
            yield "rust", None
        if self.pypaimon:
            skip = None if rows <= self.pypaimon_max_rows else (
                f"skipped at {rows:,} rows: pure-Python pypaimon runs only up to --pypaimon-max-rows="
                f"{self.pypaimon_max_rows:,} to keep the default run short")
            yield "python", skip

    def delta_skip(self) -> str | None:
        """None when deltalake runs, else why not (it is then reported per workload)."""
        return delta_peer.available() if self.deltalake else None


@dataclass
class SuiteRun:
    """A suite's results at one size plus notes (checks, fallbacks) and facts (versions, options)."""

    results: list[Result] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def skip(self, engine: str, rows: Mapping[str, int], reason: str) -> None:
        self.results += [cannot_run(w, engine, n, reason) for w, n in rows.items()]


def pypaimon_engine(runtime: Runtime) -> str:
    return engine_name(runtime)
