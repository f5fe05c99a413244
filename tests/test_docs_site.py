"""The docs site builds with ``mkdocs build --strict`` (no broken link, anchor or API reference; every page of docs/
in the navigation), with search and an API reference drawn from the docstrings. CI also runs ``make docs``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocstrings", reason="the docs extra is not installed: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml")]
    done = subprocess.run([*cmd, "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_every_page_is_built_and_searchable(site: Path) -> None:
    pages = [p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md")]
    built = [site / ("index.html" if p.name == "index" else p / "index.html") for p in pages]
    assert pages and all(b.is_file() for b in built), [str(b) for b in built if not b.is_file()]
    index = json.loads((site / "search" / "search_index.json").read_text())
    assert any("duplicate deals" in doc["text"] for doc in index["docs"])


def test_the_api_reference_is_drawn_from_the_docstrings(site: Path) -> None:
    core = (site / "api" / "core" / "index.html").read_text()
    assert 'id="scopa_env.core"' in core and "B games of Scopa advance in one call" in core
    agents = (site / "api" / "agents" / "index.html").read_text()
    assert 'id="agents.base.make_agent"' in agents
