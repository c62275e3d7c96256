"""Fixtures for cross-checks against pypaimon, which lives in its own environment (.venv-pypaimon)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.compat.pypaimon_client import PyPaimon

REPO = Path(__file__).resolve().parents[2]
PYPAIMON_PYTHON_ENV = "LAKETIDE_PYPAIMON_PYTHON"


def _pypaimon_python() -> Path | None:
    configured = os.environ.get(PYPAIMON_PYTHON_ENV)
    candidates = [Path(configured)] if configured else []
    candidates.append(REPO / ".venv-pypaimon" / "bin" / "python")
    return next((path for path in candidates if path.is_file()), None)


@pytest.fixture(scope="session")
def pypaimon() -> PyPaimon:
    """pypaimon behind a subprocess; a missing interop environment fails, never skips."""
    python = _pypaimon_python()
    if python is None:
        pytest.fail(
            f"pypaimon interop environment not found (${PYPAIMON_PYTHON_ENV} unset or missing, "
            f"no {REPO / '.venv-pypaimon'}): run `make interop-setup`",
            pytrace=False,
        )
    return PyPaimon(str(python))
