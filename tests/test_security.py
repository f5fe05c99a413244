"""No file runs code when it is loaded: payloads planted in every kind of file, through every entry point.

Each payload, when unpickled (or, for YAML, constructed), creates a marker file. The first test proves the planted
checkpoint payload is real (SB3's own loader runs it); every other test loads the file through one of the
project's entry points and checks that the marker never appears.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

import train
from agents.base import AgentSpecError, make_agent
from agents.training import safe_state
from agents.training.run_dir import LEGACY_RESUME_MEMBER, RESUME_MEMBER
from agents.training.safe_state import StateFileError
from agents.training.trainer import Trainer
from scopa_env.engine import core, observation
from scopa_env.rules import get_rules
from tests.helpers import decisions, random_positions

ROOT = Path(__file__).resolve().parents[1]
SMOKE = str(ROOT / "configs" / "smoke.yaml")


class _Touch:
    """Unpickling this creates ``path`` (a stand-in for any code an attacker would run)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def payload(marker: Path) -> bytes:
    return pickle.dumps(_Touch(marker))


def rewrite_zip(path: Path, changes: dict[str, bytes | None]) -> None:
    """Replace (or with None, drop) members of the zip at ``path``."""
    with zipfile.ZipFile(path) as z:
        members = {name: z.read(name) for name in z.namelist()}
    for name, data in changes.items():
        if data is None:
            members.pop(name, None)
        else:
            members[name] = data
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def plant_in_data(path: Path, marker: Path) -> Path:
    """Add one cloudpickled key to the SB3 ``data`` member: the checkpoint still loads and plays normally."""
    with zipfile.ZipFile(path) as z:
        data = json.loads(z.read("data"))
    data["notes"] = {":type:": "<class 'str'>", ":serialized:": base64.b64encode(payload(marker)).decode()}
    rewrite_zip(path, {"data": json.dumps(data).encode()})
    return path


@pytest.fixture
def crafted(smoke_run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(a copy of the smoke run's best.zip with a payload in its data member, the payload's marker path)."""
    marker = tmp_path / "pwned"
    ckpt = shutil.copy(smoke_run / "best.zip", tmp_path / "crafted.zip")
    return plant_in_data(Path(ckpt), marker), marker


def test_the_planted_payload_is_real(crafted: tuple[Path, Path]) -> None:
    from stable_baselines3.common.save_util import load_from_zip_file

    ckpt, marker = crafted
    load_from_zip_file(ckpt, device="cpu", print_system_info=False)
    assert marker.exists(), "SB3's loader should run the planted payload (else this file tests nothing)"


def _plays(policy: object, variant: str = "classic") -> None:
    """The policy picks a legal action in each of a few fresh deals."""
    from scopa_env.games.policy import ActBatch

    rules = get_rules(variant)
    state = core.reset(rules, np.arange(4, dtype=np.uint64))
    obs, mask = observation.observe(rules, state), core.legal_action_mask(rules, state)
    actions = policy.act(ActBatch(rules, obs, mask, state, np.arange(4)))  # type: ignore[attr-defined]
    assert mask[np.arange(4), actions].all()


@pytest.mark.parametrize("spec", ["{path}", "neural:path={path}", "neural:path={path},endgame=0"])
def test_make_agent_never_runs_the_payload(crafted: tuple[Path, Path], spec: str) -> None:
    ckpt, marker = crafted
    policy = make_agent(spec.format(path=ckpt), "classic", 0)
    _plays(policy)
    assert not marker.exists()


def test_neural_agent_plays_like_before(smoke_run: Path) -> None:
    """The safe loader rebuilds the same network as SB3's own load (logits equal on real observations)."""
    from sb3_contrib import MaskablePPO

    from agents.base import make_agent
    from agents.nets.checkpoint import NeuralPolicy

    rules = get_rules("classic")
    state = core.reset(rules, np.arange(64, dtype=np.uint64))
    obs = observation.observe(rules, state)
    mask = core.legal_action_mask(rules, state)
    agent = make_agent(f"neural:path={smoke_run / 'best.zip'},endgame=0", rules)
    assert isinstance(agent, NeuralPolicy)
    ours = agent.logits(obs, mask)
    model = MaskablePPO.load(smoke_run / "best.zip", device="cpu")  # trusted file: our own run
    import torch

    with torch.no_grad():
        dist = model.policy.get_distribution(torch.as_tensor(obs), action_masks=mask)
        theirs = dist.distribution.logits.numpy()
    assert np.array_equal(ours.argmax(1), theirs.argmax(1))
    np.testing.assert_allclose(
        np.where(mask, ours - ours.max(1, keepdims=True), 0),
        np.where(mask, theirs - theirs.max(1, keepdims=True), 0),
        atol=1e-5,
    )


def test_evaluate_never_runs_the_payload(crafted: tuple[Path, Path], tmp_path: Path) -> None:
    import evaluate

    ckpt, marker = crafted
    common = ["--variant", "classic", "--hands", "4", "--workers", "1", "--no-plot", "--quiet", "--no-progress"]
    assert evaluate.main(["--gauntlet", str(ckpt), "--agents", "random", "--out", str(tmp_path / "a"), *common]) == 0
    assert evaluate.main(["--agents", str(ckpt), "random", "--out", str(tmp_path / "b"), *common]) == 0
    assert not marker.exists()


def test_export_never_runs_the_payload(crafted: tuple[Path, Path], tmp_path: Path) -> None:
    from agents.nets import export

    ckpt, marker = crafted
    assert export.main([str(ckpt), "--out", str(tmp_path / "bot"), "--check-rows", "64"]) == 0
    assert not marker.exists()
    bot = make_agent(f"bot:path={tmp_path / 'bot'}", "classic", 0)
    _plays(bot)


def test_play_never_runs_the_payload(crafted: tuple[Path, Path]) -> None:
    from agents.play import terminal as play

    ckpt, marker = crafted
    out = io.StringIO()
    play.main(["--opponent", str(ckpt), "--color", "never"], inp=io.StringIO("quit\n"), out=out)
    assert "error" not in out.getvalue().lower()[:200]
    assert not marker.exists()


def test_train_agents_and_init_from_never_run_the_payload(crafted: tuple[Path, Path], tmp_path: Path) -> None:
    ckpt, marker = crafted
    args = ["--config", SMOKE, "--run-root", str(tmp_path / "runs"), "--total-steps", "1024"]
    agents = ["--baselines", str(ckpt), "--eval-opponents", str(ckpt), "--pretrain-teacher", str(ckpt)]
    assert train.main([*args, *agents]) == 0
    assert train.main([*args, "--init-from", str(ckpt), "--pretrain-teacher", "none"]) == 0
    assert not marker.exists()


@pytest.mark.parametrize("member", ["policy.pth", "policy.optimizer.pth"])
def test_a_pickle_in_place_of_the_weights_is_refused(smoke_run: Path, tmp_path: Path, member: str) -> None:
    marker = tmp_path / "pwned"
    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    shutil.rmtree(run / "checkpoints")  # no intact step file to fall back on
    rewrite_zip(run / "last.zip", {member: payload(marker)})
    if member == "policy.pth":
        with pytest.raises(AgentSpecError, match="damaged or holds more than weights"):
            make_agent(str(run / "last.zip"), "classic", 0)
    assert train.main(["--resume", str(run), "--total-steps", "8192"]) == 2
    assert not marker.exists()


def test_resume_refuses_a_pickled_resume_state(smoke_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    marker = tmp_path / "pwned"
    run = Path(shutil.copytree(smoke_run, tmp_path / "run"))
    shutil.rmtree(run / "checkpoints")
    rewrite_zip(run / "last.zip", {RESUME_MEMBER: None, LEGACY_RESUME_MEMBER: payload(marker)})
    assert train.main(["--resume", str(run), "--total-steps", "8192"]) == 2
    err = capsys.readouterr().err
    assert "pickle" in err and "--init-from" in err and "Traceback" not in err
    assert not marker.exists()


@pytest.mark.parametrize(
    "node",
    [
        {"$": "obj", "c": "subprocess:Popen", "i": 0, "d": {"$": "dict", "i": 1, "k": [], "v": []}},
        {"$": "class", "c": "os:system"},
        {"$": "class", "c": "builtins:eval"},
        {"$": "class", "c": "agents.base:make_agent"},  # a project function, not a class
        {"$": "class", "c": "agents.nets.checkpoint:torch"},  # a module the project module imported
        {"$": "obj", "c": "torch.nn.modules.module:Module", "i": 0, "d": {"$": "dict", "i": 1, "k": [], "v": []}},
        {"$": "ntuple", "c": "collections:namedtuple", "v": []},
        {"$": "nd", "i": 0, "a": "__tree__"},
        {"$": "npscalar", "dtype": "O", "v": 1},
        {"$": "bitgen", "i": 0, "name": "os", "state": None},
        {"$": "list", "i": 0, "v": [{"$": "ref", "i": 5}]},
    ],
)
def test_state_files_name_nothing_but_allowed_classes(node: dict) -> None:
    tree = json.dumps({"format": 1, "root": node}).encode()
    buf = io.BytesIO()
    np.savez(buf, __tree__=np.frombuffer(tree, dtype=np.uint8))
    with pytest.raises(StateFileError):
        safe_state.loads(buf.getvalue())


def test_state_files_refuse_what_they_cannot_save_safely() -> None:
    with pytest.raises(TypeError, match=r"root\['f'\]"):
        safe_state.dumps({"f": lambda: 0})
    with pytest.raises(TypeError, match="Python objects"):
        safe_state.dumps(np.array([object()]))
    for bad in (b"", b"not a zip", b"PK\x03\x04" + bytes(100)):
        with pytest.raises(StateFileError):
            safe_state.loads(bad)
    deep = b'{"format": 1, "root": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    buf = io.BytesIO()
    np.savez(buf, __tree__=np.frombuffer(deep, dtype=np.uint8))
    with pytest.raises(StateFileError):
        safe_state.loads(buf.getvalue())


def test_state_files_round_trip_a_trainer_env(smoke_run: Path) -> None:
    """Shared references stay shared, generators keep their stream, arrays and tensors their values."""
    trainer = Trainer.resume(smoke_run, None, {})
    tree = {"env": trainer.env, "league": trainer.league, "again": trainer.league}
    back = safe_state.loads(safe_state.dumps(tree))
    assert back["league"] is back["again"]
    env_members = {id(p) for p in back["env"].unwrapped.games._actors if p is not None}
    assert {id(m.policy) for m in back["league"].members} <= env_members
    assert back["env"].unwrapped.games.rng.random() == trainer.env.unwrapped.games.rng.random()


def test_yaml_configs_never_construct_python_objects(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.yaml"
    evil.write_text(f"name: !!python/object/apply:os.system ['touch {marker}']\n")
    assert train.main(["--config", str(evil), "--run-root", str(tmp_path)]) == 2
    import evaluate

    assert evaluate.main(["--config", str(evil), "--out", str(tmp_path / "e")]) == 2
    assert not marker.exists()


def test_bot_weights_with_pickled_objects_are_refused(tmp_path: Path) -> None:
    from agents.nets.bot import Bot

    marker = tmp_path / "pwned"
    bot_dir = Path(shutil.copytree(ROOT / "agents" / "bots" / "classic", tmp_path / "bot"))
    with np.load(bot_dir / "policy.npz") as f:
        arrays = {k: f[k] for k in f.files}
    arrays["w0"] = np.array([_Touch(marker)], dtype=object)
    np.savez(bot_dir / "policy.npz", **arrays)
    with pytest.raises(Exception) as info:
        Bot.load(bot_dir, prefer="numpy")
    assert "Traceback" not in str(info.value)
    assert not marker.exists()


def test_odd_paths_and_incomplete_bots_give_clean_errors(tmp_path: Path) -> None:
    from agents.nets.bot import Bot
    from agents.nets.bot_search import BotError

    for spec in ("ÿ" * 300, "a\0b", "/" + "x" * 300 + "/best.zip", str(ROOT / "agents" / "bots")):
        with pytest.raises(AgentSpecError):
            make_agent(spec, "classic", 0)
    with pytest.raises(AgentSpecError, match="options given: worlds='abc'"):
        make_agent("pimc:worlds=abc", "classic", 0)
    partial = tmp_path / "bot"
    partial.mkdir()
    shutil.copy(ROOT / "agents" / "bots" / "classic" / "model_card.json", partial)
    with pytest.raises(BotError, match=r"policy\.npz is missing"):
        Bot.load(partial, prefer="numpy")


@pytest.mark.parametrize(
    ("variant", "spec"),
    [
        ("classic", "random"),
        ("classic", "greedy"),
        ("classic", "expert"),
        ("classic", "pimc:worlds=4,endgame=4"),
        ("classic", "pimc:worlds=4,rollout=expert,infer=1"),
        ("classic", "ismcts:iters=8,parallel=4,rollout=expert"),
        ("classic", "az:path=agents/bots/classic,worlds=2,endgame=4"),
        ("scopone-scientifico", "bot:path=agents/bots/scopone-scientifico,search=false"),
    ],
)
def test_every_league_opponent_saves_in_a_checkpoint_and_plays_alike(variant: str, spec: str) -> None:
    """A league member is saved with the run (``safe_state``, no pickle): each kind of agent a config can name as a
    baseline round-trips and decides alike after it; the searches hold their rollout policy by name, and the scopone
    bot's closed end game is a pimc search (a run against it failed at its first checkpoint before)."""
    rules = get_rules(variant)
    agent = make_agent(spec.replace("path=", f"path={ROOT}/"), rules, seed=3)
    back = safe_state.loads(safe_state.dumps({"agent": agent}))["agent"]
    assert type(back) is type(agent)
    st = random_positions(rules, 6, 5, seed=11)
    assert np.array_equal(decisions(agent, rules, st, seed=5, calls=2), decisions(back, rules, st, seed=5, calls=2))
