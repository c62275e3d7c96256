"""Drive pypaimon's catalogs (in their own environment) with tests/catalog/pypaimon_catalog_driver.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.compat.conftest import PYPAIMON_PYTHON_ENV, _pypaimon_python

DRIVER = Path(__file__).with_name("pypaimon_catalog_driver.py")


class PyPaimonCatalogError(Exception):
    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__(f"{response.get('type')}: {response.get('error')}\n{response.get('traceback', '')}")
        self.type = response.get("type")


class PyPaimonCatalog:
    """One pypaimon catalog (its options); each ``run`` is one subprocess doing ``ops`` in order."""

    def __init__(self, python: str, options: dict[str, str], workdir: Path) -> None:
        self.python, self.options, self.workdir = python, options, workdir

    def run(self, *ops: dict[str, Any]) -> list[Any]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        request = self.workdir / "pypaimon_request.json"
        request.write_text(json.dumps({"catalog": self.options, "ops": list(ops)}), encoding="utf-8")
        done = subprocess.run([self.python, str(DRIVER), str(request)], capture_output=True, text=True,
                              timeout=300, check=False)
        try:
            response = json.loads(done.stdout)
        except json.JSONDecodeError as e:
            raise AssertionError(f"pypaimon driver said nothing parsable:\n{done.stdout}\n{done.stderr}") from e
        if "error" in response:
            raise PyPaimonCatalogError(response)
        return list(response["results"])

    def one(self, op: str, **args: Any) -> Any:
        return self.run({"op": op, **args})[0]


def pypaimon_python() -> str:
    python = _pypaimon_python()
    if python is None:
        pytest.fail(f"pypaimon interop environment not found (${PYPAIMON_PYTHON_ENV}): run `make interop-setup`",
                    pytrace=False)
    return str(python)
