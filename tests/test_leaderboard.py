"""bench/leaderboard.py: the page and plot from a tiny run, a stopped run resumed without replaying, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from scopa_bench import leaderboard
from tests.helpers import leaderboard_outputs, pretend_no_shipped_bot


def _run(tmp_path: Path, *extra: str) -> int:
    return leaderboard.main(
        [
            "--variants",
            "classic",
            "simple-3",
            "--agents",
            "bot",
            "pimc:worlds=2,depth=1",
            "greedy",
            "random",
            "--deals",
            "3",
            "--workers",
            "1",
            "--cost-games",
            "2",
            *leaderboard_outputs(tmp_path),
            *extra,
        ]
    )


def test_a_tiny_leaderboard_writes_its_page_and_plot_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pretend_no_shipped_bot(monkeypatch, "simple-3")
    assert _run(tmp_path) == 0
    page = (tmp_path / "docs" / "leaderboard.md").read_text()
    assert "## classic" in page and "## simple-3" in page
    assert "shipped bot `" in page and "no shipped bot for this variant" in page  # simple-3 has none (here)
    classic = page.split("## classic")[1].split("## simple-3")[0]
    rows = [line for line in classic.splitlines() if line.startswith("| ") and not line.startswith("| #")]
    assert [r.split("|")[2].strip() for r in rows] != [] and {r.split("|")[2].strip() for r in rows} == {
        "bot",
        "pimc:worlds=2,depth=1",
        "greedy",
        "random",
    }
    assert "![rating against cost per move" in page and "(img/leaderboard.png)" in page
    png = (tmp_path / "docs" / "img" / "leaderboard.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5_000
    results = tmp_path / "runs" / "classic" / "results.json"
    stamp = results.stat().st_mtime_ns
    capsys.readouterr()
    assert _run(tmp_path) == 0  # everything already played: nothing played again
    assert "already played" in capsys.readouterr().out
    assert results.stat().st_mtime_ns == stamp


def test_a_bad_variant_or_agent_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert leaderboard.main(["--variants", "nope", "--out", str(tmp_path)]) == 2
    assert "error:" in capsys.readouterr().err
    args = ["--variants", "classic", "--agents", "nosuchagent", "random", "--deals", "1", "--out", str(tmp_path)]
    assert leaderboard.main([*args, "--doc", str(tmp_path / "l.md"), "--plot", str(tmp_path / "l.png")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "nosuchagent" in err and "Traceback" not in err
