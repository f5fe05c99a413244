"""Every Python example of the README and of the examples page it links to (docs/examples.md) runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", ROOT / "docs" / "examples.md")
BLOCKS = [
    (f"{page.relative_to(ROOT)}[python block {i}]", code)
    for page in PAGES
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S))
]


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 3
    assert "docs/examples.md" in (ROOT / "README.md").read_text(encoding="utf-8")  # the README leads to them


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[name for name, _ in BLOCKS])
def test_readme_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    name, code = BLOCKS[index]
    exec(compile(code, name, "exec"), {"__name__": "__readme__"})
