"""Hostile inputs (the reliability issue's list): each gives a clear error or a correct result, never a traceback,
code run from a file, or a changed state."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import evaluate
from agents.tournament import EvalConfig, TournamentError


def _marker_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A plugin module that leaves a file behind when imported (its import-time code ran)."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    marker = tmp_path / "ran.txt"
    name = f"hostile_marker_{tmp_path.name.replace('-', '_')}"
    (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.syspath_prepend(str(folder))
    return name, marker


def test_a_config_file_cannot_import_a_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name, marker = _marker_plugin(tmp_path, monkeypatch)
    config = tmp_path / "eval.yaml"
    config.write_text(f"agents: [random, greedy]\nplugins: [{name}]\n")
    out = tmp_path / "out"
    assert evaluate.main(["--config", str(config), "--hands", "2", "--out", str(out), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert "names plugins" in err and f"--plugin {name}" in err and "--trust-config-plugins" in err
    assert "Traceback" not in err
    assert not marker.exists() and name not in sys.modules
    with pytest.raises(TournamentError, match="names plugins"):
        EvalConfig.from_yaml(config)


def test_plugins_from_the_command_line_or_a_trusted_config_are_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, marker = _marker_plugin(tmp_path, monkeypatch)
    config = tmp_path / "eval.yaml"
    config.write_text(f"agents: [random, greedy]\nplugins: [{name}]\n")
    assert EvalConfig.from_yaml(config, trust_plugins=True).plugins == [name]
    assert EvalConfig.from_yaml(tmp_path / "eval.yaml", {"plugins": [name]}, trust_plugins=True).plugins == [name]
    plain = tmp_path / "plain.yaml"
    plain.write_text("agents: [random, greedy]\n")
    args = ["--config", str(plain), "--plugin", name, "--hands", "2", "--workers", "1", "--no-plot", "--quiet"]
    assert evaluate.main([*args, "--out", str(tmp_path / "out")]) == 0
    assert marker.read_text() == "ran"
