"""Fixtures shared by every test package."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# CI shares 2 cores with Spark and subprocess peers: a slow draw is load, not a bug. Correctness checks stay on.
settings.register_profile("laketide", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("laketide")

REPO_ROOT = Path(__file__).resolve().parents[1]


def compat_path() -> Path:
    """The Java-written compatibility material (``../shared/compat`` next to the repository)."""
    return REPO_ROOT.parent / "shared" / "compat"


@pytest.fixture(scope="session")
def compat_dir() -> Path:
    """``shared/compat``: Java-written vectors and tables; a missing directory fails, never skips."""
    path = compat_path()
    if not path.is_dir():
        pytest.fail(f"compatibility material not found at {path}", pytrace=False)
    return path


def paimon_cpp_tables() -> Path:
    """Java-written tables from the Paimon C++ port's test data (Apache-2.0), copied into ``tests/data/paimon-cpp``."""
    path = Path(__file__).parent / "data" / "paimon-cpp"
    if not path.is_dir():
        pytest.fail(f"Java-written tables of the Paimon C++ port not found at {path}", pytrace=False)
    return path


@pytest.fixture()
def warehouse(tmp_path: Path) -> str:
    return str(tmp_path / "warehouse")


@pytest.fixture()
def catalog(warehouse: str):  # noqa: ANN201
    import laketide

    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    return cat


@pytest.fixture()
def java_table(tmp_path: Path, compat_dir: Path):  # noqa: ANN201
    """Copy a Java-written table into a temp warehouse (the originals are never touched)."""
    import shutil

    def copy(name: str) -> str:
        src = compat_dir / "tables" / f"{name}.db"
        dst = tmp_path / "java-warehouse" / f"{name}.db"
        shutil.copytree(src, dst)
        return str(tmp_path / "java-warehouse")

    return copy
