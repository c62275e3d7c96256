"""The README's marked Python blocks run as written, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"<!-- readme-test[^>]*-->\s*```python\n(.*?)```", re.S)


def test_readme_blocks_run() -> None:
    blocks = BLOCK.findall(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    namespace: dict[str, object] = {"__name__": "readme"}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - the README is ours
    orders = namespace["orders"]
    rows = {r["id"]: r["amount"] for r in orders.read().to_pylist()}  # type: ignore[attr-defined]
    # 1 deleted (5.0); 2 updated then deleted by the merge; 3 upserted to 8.0; 4 inserted (1.0) then + 1 by the
    # merge (not matched by source); 9 inserted; the LazyFrame write added nothing (no id > 100)
    assert rows == {3: 8.0, 4: 2.0, 9: 3.0}
