"""The docs site builds with ``mkdocs build --strict`` (no broken link, anchor or API reference; every page of docs/
in the navigation), with search and an API reference drawn from the docstrings, and works opened from disk and
offline: its links name files, not folders, and it loads nothing from another server. CI also runs ``make docs``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

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
    built = [site / p.with_suffix(".html") for p in pages]
    assert pages and all(b.is_file() for b in built), [str(b) for b in built if not b.is_file()]
    index = json.loads((site / "search" / "search_index.json").read_text())
    assert any("duplicate deals" in doc["text"] for doc in index["docs"])


def test_the_api_reference_is_drawn_from_the_docstrings(site: Path) -> None:
    core = (site / "api" / "core.html").read_text()
    assert 'id="scopa_env.engine.core"' in core and "B games of Scopa advance in one call" in core
    agents = (site / "api" / "agents.html").read_text()
    assert 'id="agents.base.make_agent"' in agents


def test_every_internal_link_names_a_file(site: Path) -> None:
    """Every link, script, stylesheet and image of every page names a file of the site (a folder link opened from
    disk shows a listing, not its page). 404.html is left out: a server shows it, with links from the site's root."""
    broken: list[str] = []
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")
    for page in pages:
        for ref in re.findall(r'(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8")):
            parts = urlsplit(ref)
            if parts.scheme or parts.netloc or not parts.path:  # another site, mailto:, or #anchor on this page
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {ref}")
    assert len(pages) > 20 and not broken, broken[:20]


def test_nothing_is_loaded_from_another_server(site: Path) -> None:
    """No font server (the theme's ``font: false``) and no script, stylesheet or image from elsewhere: the site
    works offline. Links to other sites (``<a href>``) are fine: they are only followed when clicked."""
    outside: set[str] = set()
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        outside |= set(re.findall(r'<(?:script|img|link)[^>]*?(?:src|href)="(https?://[^"]*)"', text))
        outside |= set(re.findall(r"@import url\((https?://[^)]*)\)", text))
    assert not outside, sorted(outside)[:10]
