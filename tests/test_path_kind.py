"""The one path sniffer (``agents.base.path_kind``): what a spec or a ``path`` option names on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.base import looks_like_path, path_kind

ROOT = Path(__file__).resolve().parents[1]


def test_what_each_kind_of_path_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bot = ROOT / "agents" / "bots" / "classic"
    assert path_kind(str(bot)) == "bot" and path_kind(bot) == "bot"
    assert path_kind(str(bot / "policy.npz")) == "bot_file" and path_kind("x/policy.onnx") == "bot_file"
    assert path_kind(str(tmp_path)) == "dir"  # a folder without model_card.json
    assert path_kind("runs/x/best.zip") == "checkpoint" and path_kind("runs/x/best.ZIP") == "checkpoint"
    assert path_kind("best.zip") == "checkpoint" and path_kind("best.ZIP") is None  # the suffix test is exact
    assert path_kind("runs/x/weights.pt") == "file"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mynet").write_text("")
    assert path_kind("mynet") == "file"  # a bare name that exists is a path
    assert path_kind("greedy") is None and path_kind("pimc:worlds=8") is None
    assert not looks_like_path("expert:endgame=4") and looks_like_path("a\\b")


def test_a_name_the_os_refuses_is_no_path() -> None:
    assert path_kind("x" * 5000) is None
