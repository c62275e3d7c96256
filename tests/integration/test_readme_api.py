"""Every Python block of the README runs as written, in order, in one namespace — or is marked
``<!-- readme-skip: reason -->`` (it needs a service the suite starts elsewhere) and says why."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"(?:<!-- (readme-test|readme-skip)([^>]*)-->\s*)?```python\n(.*?)```", re.S)


def blocks() -> list[tuple[str | None, str, str]]:
    text = README.read_text(encoding="utf-8")
    return [(m.group(1), (m.group(2) or "").strip(), m.group(3)) for m in BLOCK.finditer(text)]


def test_every_block_is_run_or_skipped_with_a_reason() -> None:
    found = blocks()
    assert len(found) >= 7
    unmarked = [code.splitlines()[0] for kind, _, code in found if kind is None]
    assert not unmarked, f"README Python blocks neither run nor marked readme-skip: {unmarked}"
    for kind, reason, code in found:
        if kind == "readme-skip":
            assert reason.startswith(":") and len(reason) > 20, f"readme-skip without a reason: {code.splitlines()[0]}"
    assert sum(kind == "readme-test" for kind, _, _ in found) >= 4


def test_readme_blocks_run() -> None:
    namespace: dict[str, object] = {"__name__": "readme"}
    for kind, _, code in blocks():
        if kind == "readme-test":
            exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - the README is ours
    orders = namespace["orders"]
    rows = {r["id"]: r["amount"] for r in orders.read().to_pylist()}  # type: ignore[attr-defined]
    # 1 deleted (5.0); 2 updated then deleted by the merge; 3 upserted to 8.0; 4 inserted (1.0) then + 1 by the
    # merge (not matched by source); 9 inserted; the LazyFrame write added nothing (no id > 100)
    assert rows == {3: 8.0, 4: 2.0, 9: 3.0}
