"""The repository stays ruff-clean (rules in pyproject.toml's [tool.ruff]): a finding fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_reports_a_finding(tmp_path: Path) -> None:
    # The check above means something only if ruff, run this way, does flag a bad file.
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 1 and "F401" in proc.stdout, proc.stdout + proc.stderr
