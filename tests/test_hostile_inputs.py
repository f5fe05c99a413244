"""Hostile inputs (the reliability issue's list): each gives a clear error or a correct result, never a traceback,
code run from a file, or a changed state."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import evaluate
from agents.errors import TournamentError
from agents.evaluation.eval_config import EvalConfig
from agents.nets.mlp import ExportError


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
    """An exported RLlib module as ``agents.nets.rllib.export_module`` writes it: a one-layer encoder and a head."""
    import json

    import torch

    from scopa_env.engine import observation
    from scopa_env.rules import get_rules

    rules = get_rules("classic")
    size = observation.observation_size(rules)
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
        "obs_version": observation.observation_version(rules),
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
    from agents.evaluation.tournament import run_tournament

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


# ------------------------------------------------------------------------------------------- checkpoints, resume


def _rewrite_member(path: Path, member: str, change: object) -> None:
    """Replace one member of a checkpoint zip with ``change(old bytes) -> new bytes``."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info.filename) for info in archive.infolist()}
    members[member] = change(members[member])  # type: ignore[operator]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _edit_meta(**changes: object) -> object:
    import json

    def change(raw: bytes) -> bytes:
        return json.dumps({**json.loads(raw), **changes}).encode()

    return change


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "x"}, r"has format 'x', not a whole number"),
        ({"obs_version": "2"}, r"has obs_version '2', not a whole number"),
        ({"num_cards": 40.5}, r"has num_cards 40.5, not a whole number"),
        ({"variant": ["classic"]}, r"has variant \['classic'\], not a variant name"),
    ],
)
def test_bad_checkpoint_metadata_is_named_by_every_loader(
    smoke_run: Path, tmp_path: Path, changes: dict, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    import train
    from agents.base import AgentSpecError, make_agent

    ckpt = Path(shutil.copy(smoke_run / "best.zip", tmp_path / "best.zip"))
    _rewrite_member(ckpt, "scopa_meta.json", _edit_meta(**changes))
    with pytest.raises(AgentSpecError, match=message):
        make_agent(str(ckpt), "classic")
    smoke = str(Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml")
    args = ["--config", smoke, "--run-root", str(tmp_path / "runs"), "--init-from", str(ckpt), "--total-steps", "64"]
    assert train.main([*args, "--pretrain-teacher", "none"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("not a whole number" in err or "not a variant name" in err)


def test_a_checkpoint_cut_short_says_so(smoke_run: Path, tmp_path: Path) -> None:
    from agents.base import AgentSpecError, make_agent

    data = (smoke_run / "best.zip").read_bytes()
    for cut in (30, 200, len(data) // 1000):  # the reader then finds the zip of the weights stored inside
        short = tmp_path / f"cut{cut}.zip"
        short.write_bytes(data[:-cut])
        with pytest.raises(AgentSpecError, match=r"cut short|not a zip archive"):
            make_agent(str(short), "classic")
    short.write_bytes(data[:-200])
    with pytest.raises(AgentSpecError, match=r"is cut short \(the end of the file is missing"):
        make_agent(str(short), "classic")


@pytest.mark.parametrize(
    ("key", "value"),
    [("best_margin", {"a": 1}), ("handled_step", "4096"), ("elapsed_s", None), ("last_eval", [1])],
)
def test_a_resume_state_with_values_of_the_wrong_kind_is_passed_over(
    smoke_run: Path, tmp_path: Path, key: str, value: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    import train
    from agents.training import safe_state

    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))

    def change(raw: bytes) -> bytes:
        blob = safe_state.loads(raw)
        blob["state"][key] = value
        return safe_state.dumps(blob)

    _rewrite_member(run / "last.zip", "scopa_resume.npz", change)
    assert train.main(["--resume", str(run), "--total-steps", "4096"]) == 0  # the intact step file at 4,096
    err = capsys.readouterr().err
    assert f"last.zip: its resume state has {key}" in err and "Traceback" not in err
    for p in (run / "checkpoints").iterdir():
        _rewrite_member(p, "scopa_resume.npz", change)
    _rewrite_member(run / "last.zip", "scopa_resume.npz", change)
    assert train.main(["--resume", str(run), "--total-steps", "8192"]) == 2
    err = capsys.readouterr().err
    assert "no intact checkpoint" in err and "Traceback" not in err


def _npz_claiming(shape: tuple[int, ...], name: str = "w0", extra: dict | None = None) -> bytes:
    """An .npz whose member ``name`` has a header claiming ``shape`` (float32) over 1,000 zero bytes of data."""
    import io
    import zipfile

    import numpy as np

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for key, value in (extra or {}).items():
            with archive.open(f"{key}.npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(value))
        with archive.open(f"{name}.npy", "w") as member:
            np.lib.format.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False, "shape": shape})
            member.write(bytes(1000))
    return buf.getvalue()


def test_an_npz_is_read_only_after_every_member_size_is_checked(tmp_path: Path) -> None:
    import io
    import zipfile

    import numpy as np

    from agents.nets.weights import read_npz

    with pytest.raises(ValueError, match=r"member 'w0.npy' claims an array of shape \(200000, 200000\)"):
        read_npz(_npz_claiming((200000, 200000)))  # 149 GiB claimed: refused before numpy allocates it
    with pytest.raises(ValueError, match=r"would take more than 999 bytes \(reached at member 'w0.npy'"):
        read_npz(_npz_claiming((250,)), max_bytes=999)
    buf = io.BytesIO()
    np.savez(buf, a=np.array([1, None], dtype=object))
    with pytest.raises(ValueError, match=r"'a.npy' holds Python objects"):
        read_npz(buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("run.py", "print('hi')")
    with pytest.raises(ValueError, match=r"member 'run.py' is not a .npy array"):
        read_npz(buf.getvalue())
    with pytest.raises(ValueError, match=r"not a readable .npz archive"):
        read_npz(b"PK\x03\x04 not really a zip")
    arrays = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array("relu")}
    np.savez_compressed(tmp_path / "ok.npz", **arrays)  # deflated members are read too
    got = read_npz(tmp_path / "ok.npz")
    assert sorted(got) == ["a", "b"] and np.array_equal(got["a"], arrays["a"]) and str(got["b"]) == "relu"


def test_a_bot_whose_weights_claim_a_huge_layer_is_refused(tmp_path: Path) -> None:
    import json
    import shutil

    from agents.nets.bot import Bot
    from agents.nets.bot_search import BotError

    bot = Path(shutil.copytree(Path(__file__).resolve().parents[1] / "agents" / "bots" / "classic", tmp_path / "bot"))
    (bot / "policy.npz").write_bytes(_npz_claiming((200000, 200000), extra={"activation": "relu", "num_layers": 1}))
    card = json.loads((bot / "model_card.json").read_text())
    card.get("files", {}).pop("policy.npz", None)  # a crafted bot would carry a matching sha256
    (bot / "model_card.json").write_text(json.dumps(card))
    with pytest.raises(BotError, match=r"cannot read the weights .*policy.npz: member 'w0.npy' claims an array"):
        Bot.load(bot, prefer="numpy")


def _claim_size(path: Path, member: str, size: int) -> None:
    """Make the zip ``path``'s central directory say ``member`` expands to ``size`` bytes (a zip bomb's record)."""
    data = bytearray(path.read_bytes())
    i = data.find(b"PK\x01\x02")
    while data[i + 46 : i + 46 + int.from_bytes(data[i + 28 : i + 30], "little")] != member.encode():
        i = data.find(b"PK\x01\x02", i + 4)
        assert i >= 0, f"no {member} in {path}"
    data[i + 24 : i + 28] = size.to_bytes(4, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("member", ["policy.pth", "scopa_meta.json"])
def test_a_checkpoint_member_that_would_expand_past_its_ceiling_is_refused(
    smoke_run: Path, tmp_path: Path, member: str
) -> None:
    import shutil

    from agents.base import AgentSpecError, make_agent

    ckpt = Path(shutil.copy(smoke_run / "best.zip", tmp_path / "best.zip"))
    _claim_size(ckpt, member, 0xF0000000)
    with pytest.raises(AgentSpecError, match=rf"its {member} would expand to 4,026,531,840 bytes, more than"):
        make_agent(str(ckpt), "classic")


def test_a_resume_state_claiming_a_huge_array_is_passed_over(
    smoke_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    import train

    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    _rewrite_member(run / "last.zip", "scopa_resume.npz", lambda raw: _npz_claiming((200000, 200000), "a0"))
    assert train.main(["--resume", str(run), "--total-steps", "4096"]) == 0  # the intact step file at 4,096
    err = capsys.readouterr().err
    assert "last.zip" in err and "claims an array" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------------------ export


def test_export_without_the_export_extra_says_how_and_writes_nothing(
    smoke_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.nets import export

    monkeypatch.setitem(sys.modules, "onnxscript", None)
    out = tmp_path / "bot"
    with pytest.raises(SystemExit) as stop:
        export.main([str(smoke_run / "best.zip"), "--out", str(out)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "needs onnxscript" in err and "pip install" in err and "Traceback" not in err
    assert not out.exists()


def test_an_export_that_fails_leaves_no_empty_folder(
    smoke_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.nets import export

    def fail(*args: object, **kwargs: object) -> None:
        raise ExportError("the ONNX writer failed")

    monkeypatch.setattr(export, "write_onnx", fail)
    out = tmp_path / "new" / "bot"
    with pytest.raises(ExportError, match="ONNX writer failed"):
        export.export_checkpoint(smoke_run / "best.zip", out)
    assert not out.exists()
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    with pytest.raises(ExportError):
        export.export_checkpoint(smoke_run / "best.zip", keep, force=True)
    assert sorted(p.name for p in keep.iterdir()) == ["notes.txt"]  # the user's folder and file are kept


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"median_ms": NaN}', "NaN or an infinite number"),
        ('{"median_ms": 1.0, "p99_ms": Infinity}', "NaN or an infinite number"),
        ('{"a": -Infinity}', "NaN or an infinite number"),
    ],
)
def test_export_cost_refuses_nan(tmp_path: Path, text: str, message: str) -> None:
    from agents.nets.card import read_provenance
    from agents.nets.mlp import ExportArgumentError

    cost = tmp_path / "cost.json"
    cost.write_text(text)
    with pytest.raises(ExportArgumentError, match=message):
        read_provenance(cost=cost)
    with pytest.raises(ExportArgumentError, match=message):
        read_provenance(cost={"median_ms": float("nan")})
    assert read_provenance(cost={"median_ms": 0.5}) == {"cost_per_move": {"median_ms": 0.5}}


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "not a regular file"), ("/tmp", "a folder")])
def test_export_commands_from_a_device_or_folder_says_what_it_is(path: str, kind: str) -> None:
    from agents.nets.card import read_provenance
    from agents.nets.mlp import ExportArgumentError

    if not Path(path).exists():
        pytest.skip(f"{path} does not exist on this system")
    with pytest.raises(ExportArgumentError, match=kind):
        read_provenance(commands=path)
    with pytest.raises(ExportArgumentError, match="no such file"):
        read_provenance(commands="/no/such/commands.txt")


# ----------------------------------------------------------------------------------------------- saved states


@pytest.mark.parametrize(
    "text",
    [
        '{"variant":' + "[" * 4000,
        '{"variant":' + "[" * 100_000 + "]" * 100_000 + "}",
        '["' + "[" * 10 + '", ' + '"' + "{" * 10 + '"]',
        "[" + '"' + '{\\"a\\":' * 100_000 + '"]',
    ],
)
def test_deeply_nested_saved_games_are_a_format_error(text: str) -> None:
    from scopa_env.records.state_io import StateFormatError, state_from_json, state_from_record

    with pytest.raises(StateFormatError):
        state_from_json(text)
    with pytest.raises(StateFormatError):
        state_from_json(text.encode())
    with pytest.raises(StateFormatError):
        state_from_record(text)


# ------------------------------------------------------------------------------------------------------ lax APIs


def test_a_gymnasium_id_refuses_another_variant() -> None:
    import gymnasium

    import scopa_env  # noqa: F401  # registers the ids

    with pytest.raises(ValueError, match=r"scopa/Classic-v0 is the 'classic' env.*scopa/ScopaAQuattro-v0"):
        gymnasium.make("scopa/Classic-v0", variant="scopa-a-quattro")
    env = gymnasium.make("scopa/Classic-v0", variant="classic", opponents="greedy")
    assert env.unwrapped.rules.name == "classic"
    env = gymnasium.make("scopa/ScopaAQuattro-v0")
    assert env.unwrapped.rules.name == "scopa-a-quattro"


def test_the_vector_env_takes_one_action_per_env_only() -> None:
    import numpy as np

    from scopa_env.envs.gym import ScopaVecEnv

    venv = ScopaVecEnv("classic", num_envs=4, opponents="random", seed=0)
    obs = venv.reset()
    actions = venv.action_masks().argmax(axis=1)
    for bad in (actions.reshape(2, 2), actions[:2], np.concatenate([actions, actions]), actions.reshape(1, 4)):
        with pytest.raises(ValueError, match=r"expected 4 actions .* got an array of shape"):
            venv.step(bad)
    assert np.array_equal(venv.games.observe(), obs)  # nothing was played by the refused calls
    venv.step(actions.reshape(4, 1))  # a column of actions is one per env


@pytest.mark.parametrize("variant", ["classic", "scopa-a-quattro", "cirulla", "simple-3"])
def test_seeded_random_agents_play_a_game_alike_in_any_batch(variant: str) -> None:
    import numpy as np

    from scopa_env.games import driver
    from scopa_env.games.policy import RandomAgent
    from scopa_env.rules import get_rules

    rules = get_rules(variant)
    lineup = [[seat % 2 for seat in range(rules.num_players)]]

    def agents() -> list[RandomAgent]:
        return [RandomAgent(rules, 3), RandomAgent(rules, 4)]

    batch = driver.play(rules, agents(), lineup * 10, np.arange(10), mode="hands", record=True)
    for seed in (0, 4, 9):
        alone = driver.play(rules, agents(), lineup, [seed], mode="hands", record=True)
        assert alone.records[0] == batch.records[seed]
        assert np.array_equal(alone.hand_points[0], batch.hand_points[seed])
    reversed_order = driver.play(rules, agents(), lineup * 10, np.arange(10)[::-1], mode="hands", record=True)
    by_seed = {r["seed"]: r for r in reversed_order.records}
    assert [by_seed[r["seed"]] for r in batch.records] == batch.records
    other_seed = driver.play(rules, [RandomAgent(rules, 5), RandomAgent(rules, 4)], lineup * 10, np.arange(10))
    assert not np.array_equal(other_seed.hand_points, batch.hand_points)  # the agent's seed still matters


def test_the_single_game_draws_equal_the_batched_streams() -> None:
    """``position_key`` / ``position_random`` (the single-game envs' Python-int draws) give PositionStreams' numbers."""
    import numpy as np

    from scopa_env.engine import core
    from scopa_env.games.policy import PositionStreams, position_key, position_random
    from scopa_env.rules import get_rules

    rules = get_rules("classic")
    state = core.reset(rules, np.array([5, 9, 2**63 + 7], dtype=np.uint64))
    for g in range(3):
        streams = PositionStreams(np.uint64(12345), state, np.array([g]))
        parts = (
            int(state.hand_no[g]),
            int(state.deal_no[g]),
            int(state.stock_pos[g]),
            int(state.hands[g].sum()),
            int(state.picked[g].sum()),
            int(state.phase[g]),
            int(state.current[g]),
        )
        h = position_key(12345, int(state.seed[g]), parts)
        assert h == int(streams.keys[0])
        assert streams.random((1, 40))[0].tolist() == position_random(h, 1, 40)
        assert streams.rows(np.array([0])).random((1, 40))[0].tolist() == position_random(h, 1, 40, sub=True)
