"""The architecture's layers hold (docs/architecture.md): `lint-imports` checks the contracts in pyproject.toml."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)


def test_layers_are_kept() -> None:
    proc = _lint_imports(REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The check can fail: the metadata layer importing the table facade is reported."""
    shutil.copytree(REPO / "laketide", tmp_path / "laketide", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    snapshot = tmp_path / "laketide" / "meta" / "snapshot.py"
    snapshot.write_text(snapshot.read_text() + "\n\ndef _upward():\n    from laketide.table.table import Table\n\n"
                        "    return Table\n")
    proc = _lint_imports(tmp_path)
    assert proc.returncode != 0
    assert "BROKEN" in proc.stdout and "laketide.meta.snapshot -> laketide.table.table" in proc.stdout


def test_the_core_never_imports_pyspark(tmp_path: Path) -> None:
    shutil.copytree(REPO / "laketide", tmp_path / "laketide", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    scan = tmp_path / "laketide" / "scan" / "split.py"
    scan.write_text(scan.read_text() + "\n\nimport pyspark  # noqa: E402,F401\n")
    proc = _lint_imports(tmp_path)
    assert proc.returncode != 0
    assert "laketide.scan.split -> pyspark" in proc.stdout
