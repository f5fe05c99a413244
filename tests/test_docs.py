"""The docs stand on their own: RULES.md is copied into docs/rules.md (verbatim, headings one level down) and no
page links outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT.parent / "shared" / "RULES.md"
MARK = "## RULES.md: the specification"


def _copy() -> str:
    text = (ROOT / "docs" / "rules.md").read_text()
    assert MARK in text, "docs/rules.md lost its copy of RULES.md"
    return text.split(MARK, 1)[1]


@pytest.mark.skipif(not SPEC.is_file(), reason="the specification is not beside this checkout")
def test_the_copy_of_rules_md_is_verbatim() -> None:
    spec = SPEC.read_text().split("\n", 1)[1]
    expected = "\n".join("#" + line if line.startswith("#") else line for line in spec.splitlines()).strip()
    copy = _copy().split("\n", 3)[3].strip()  # after the one-paragraph note
    assert copy == expected


def test_every_section_the_code_cites_is_in_the_copy() -> None:
    copy = _copy()
    cited = set()
    for path in [*ROOT.glob("scopa_env/*.py"), *ROOT.glob("agents/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md"]:
        cited |= {int(n) for n in re.findall(r"RULES\.md,? section (\d+)", path.read_text())}
    headings = {int(n) for n in re.findall(r"^### (\d+)\. ", copy, flags=re.M)}
    assert cited and cited <= headings, f"cited sections {sorted(cited - headings)} are not in docs/rules.md"


def test_no_doc_links_outside_the_repository() -> None:
    for path in [ROOT / "README.md", *ROOT.glob("docs/*.md")]:
        links = re.findall(r"\]\(([^)]+)\)", path.read_text())
        outside = [
            link for link in links if link.startswith("../") and not (path.parent / link).resolve().is_relative_to(ROOT)
        ]
        assert not outside, f"{path.name} links outside the repository: {outside}"
