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


@pytest.mark.skipif(
    not SPEC.is_file(),
    reason="compares docs/rules.md with the rules' source text, ../shared/RULES.md next to the repository folder, "
    "which only the project's own workspace has; a clone checks the copy's sections instead (the tests below)",
)
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


COMMAND_PAGES = [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]
"""Pages whose shell commands a reader copies: they run from the repository root after the README's set-up."""


def _shell_lines(text: str) -> list[str]:
    """The lines of the bash / sh / unlabelled code blocks of a Markdown page."""
    blocks = re.findall(r"^```(bash|sh|console|)\n(.*?)^```", text, flags=re.S | re.M)
    return [line for _, body in blocks for line in body.splitlines()]


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda p: p.name)
def test_commands_use_the_projects_python(page: Path) -> None:
    """After the README's set-up a bare ``python`` is not the project's ``.venv`` (no torch there): every command
    says ``.venv/bin/python`` (or a make target), in code blocks and inline."""
    text = page.read_text()
    bare = [line for line in _shell_lines(text) if re.match(r"\s*python3? ", line)]
    if page.name != "architecture.md":  # its file table names each module's command; it has no commands to copy
        bare += re.findall(r"`python3? (?:-m |train\.py|evaluate\.py|bench/)[^`]*`", text)
    assert not bare, f"{page.name}: commands with a bare python (write .venv/bin/python): {bare[:5]}"


def test_readme_links_lead_to_files_of_the_repository() -> None:
    """The README's links into docs/ work on GitHub: each names a file that exists (anchors aside)."""
    text = (ROOT / "README.md").read_text()
    links = [link.split("#")[0] for link in re.findall(r"\]\(([^)]+)\)", text) if "://" not in link]
    missing = [link for link in links if link and not (ROOT / link).exists()]
    assert links and not missing, f"README.md links to missing files: {missing}"
