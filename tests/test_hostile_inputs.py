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


def _fake_rllib_checkpoint(folder: Path, head_width: int = 40, **meta_changes: object) -> Path:
    """An exported RLlib module as ``agents.rllib_agent.export_module`` writes it: a one-layer encoder and a head."""
    import json

    import torch

    from scopa_env import core
    from scopa_env.rules import get_rules

    rules = get_rules("classic")
    size = core.observation_size(rules)
    state = {
        "encoder.actor_encoder.net.mlp.0.weight": torch.zeros(8, size),
        "encoder.actor_encoder.net.mlp.0.bias": torch.zeros(8),
        "pi.net.mlp.0.weight": torch.zeros(head_width, 8),
        "pi.net.mlp.0.bias": torch.zeros(head_width),
    }
    meta: dict[str, object] = {
        "format": 1,
        "kind": "rllib-ppo-module",
        "variant": "classic",
        "obs_version": core.observation_version(rules),
        "obs_size": size,
        "num_cards": head_width,
        "module_id": "shared",
        "fcnet_activation": "tanh",
        "head_fcnet_activation": "tanh",
    }
    meta.update(meta_changes)
    meta = {k: v for k, v in meta.items() if v is not None}
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(state, folder / "scopa_rllib_module.pt")
    (folder / "scopa_rllib_module.json").write_text(json.dumps(meta))
    return folder


def test_an_rllib_module_of_the_right_shape_plays(tmp_path: Path) -> None:
    from agents.base import make_agent

    folder = _fake_rllib_checkpoint(tmp_path / "ok")
    cfg = EvalConfig(agents=[f"rllib:path={folder}", "random"], deals=2, workers=1)
    from agents.tournament import run_tournament

    assert run_tournament(cfg, progress=False).config.agents[0] == f"rllib:path={folder}"
    assert make_agent(f"rllib:path={folder}", "classic") is not None


@pytest.mark.parametrize(
    ("head", "changes", "message"),
    [
        (10, {}, r"num_cards 10, where this code's classic has 40"),
        (40, {"num_cards": None}, r"lacks num_cards"),
        (40, {"num_cards": "40"}, r"num_cards '40'"),
        (40, {"obs_version": "2"}, r"obs_version '2', where this code's classic has 2"),
        (40, {"format": "x"}, r"format 'x', not a whole number"),
        (40, {"variant": "cirulla"}, r"trained for variant 'cirulla'.*--variant cirulla"),
        (10, {"num_cards": 40}, r"policy head has 10 outputs, not 40 cards"),
    ],
)
def test_a_bad_rllib_module_is_refused_when_built(tmp_path: Path, head: int, changes: dict, message: str) -> None:
    from agents.base import AgentSpecError, make_agent

    folder = _fake_rllib_checkpoint(tmp_path / "bad", head_width=head, **changes)
    with pytest.raises(AgentSpecError, match=message):
        make_agent(f"rllib:path={folder}", "classic")
