"""``python -m agents.nets.export``: torch vs ONNX vs numpy round trip, the ONNX interface, the model card, ratings,
errors.

The checkpoints are tiny MaskablePPO models saved the way ``train.py`` saves them
(``agents.nets.checkpoint.save_checkpoint`` with its ``scopa_meta.json``). The round trip uses one whose weights are
redrawn large, so its probabilities are far from uniform and a wrong layer, activation or mask shows.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from agents.base import MODEL_CARD, AgentSpecError, make_agent  # noqa: E402
from agents.nets import export  # noqa: E402
from agents.nets.bot import Bot  # noqa: E402
from agents.nets.card import ratings_from_results  # noqa: E402
from agents.nets.export import check_arguments, export_checkpoint  # noqa: E402
from agents.nets.export_onnx import DEFAULT_CHECK_ROWS, ExportCheckError, sample_inputs, torch_probs  # noqa: E402
from agents.nets.mlp import ExportError  # noqa: E402
from agents.nets.weights import ONNX, WEIGHTS  # noqa: E402
from scopa_env.engine import observation  # noqa: E402
from scopa_env.rules import get_rules  # noqa: E402

TOL = 1e-5


def make_checkpoint(
    path: Path,
    variant: str = "classic",
    hidden: tuple[int, ...] = (32, 32),
    activation: Any = None,
    learn_steps: int = 0,
    scale: float = 0.0,
    seed: int = 0,
    meta: bool = True,
) -> Path:
    """A tiny MaskablePPO checkpoint; ``scale`` > 0 redraws the policy weights from N(0, scale^2)."""
    from sb3_contrib import MaskablePPO

    from agents.nets.checkpoint import checkpoint_meta, save_checkpoint
    from scopa_env.envs.gym import ScopaEnv

    env = ScopaEnv(variant, opponents="random")
    kwargs: dict[str, Any] = {"net_arch": list(hidden)}
    if activation is not None:
        kwargs["activation_fn"] = activation
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, policy_kwargs=kwargs, seed=seed, device="cpu"
    )
    if learn_steps:
        model.learn(learn_steps)
    if scale:
        gen = torch.Generator().manual_seed(seed)
        params = itertools.chain(
            model.policy.mlp_extractor.policy_net.parameters(), model.policy.action_net.parameters()
        )
        with torch.no_grad():
            for p in params:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)
    if meta:
        save_checkpoint(model, path, checkpoint_meta(variant, model.num_timesteps, kind="test", config={"seed": seed}))
    else:
        model.save(str(path))
    return path


@pytest.fixture(scope="module")
def sharp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(checkpoint, export dir) of a model with large random weights."""
    d = tmp_path_factory.mktemp("sharp")
    ckpt = make_checkpoint(d / "sharp.zip", scale=0.5, seed=3)
    export_checkpoint(ckpt, d / "bot", check_rows=256)
    return ckpt, d / "bot"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(checkpoint, results.json, export dir) of a model trained 128 steps, rated by evaluate's tournament and
    exported through the command line."""
    from agents.evaluation.eval_config import EvalConfig
    from agents.evaluation.report import write_outputs
    from agents.evaluation.tournament import run_tournament

    d = tmp_path_factory.mktemp("trained")
    ckpt = make_checkpoint(d / "best.zip", learn_steps=128, seed=1)
    cfg = EvalConfig(
        variant="classic", gauntlet=str(ckpt), agents=["random"], mode="hands", deals=16, workers=1, seed=5
    )
    write_outputs(run_tournament(cfg), d / "eval", plots=False)
    cfg = EvalConfig(variant="classic", gauntlet=str(ckpt), agents=["greedy"], mode="hands", deals=8, workers=1)
    write_outputs(run_tournament(cfg), d / "eval2", plots=False)
    results = [str(d / "eval" / "results.json"), str(d / "eval2" / "results.json")]
    rc = export.main([str(ckpt), "--out", str(d / "bot"), "--ratings", *results, "--name", "t", "--note", "a note"])
    assert rc == 0
    return ckpt, d / "eval" / "results.json", d / "bot"


def _inputs(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Real and random observations, plus one single-legal-action row per action and all-legal rows."""
    rules = get_rules("classic")
    obs, mask = sample_inputs(rules, rows, seed)
    rng = np.random.default_rng(seed)
    d, size = rules.num_cards, observation.observation_size(rules)
    single_obs = rng.random((d, size), dtype=np.float32)
    all_obs = rng.random((8, size), dtype=np.float32)
    return (
        np.concatenate([obs, single_obs, all_obs]),
        np.concatenate([mask, np.eye(d, dtype=np.bool_), np.ones((8, d), dtype=np.bool_)]),
    )


def test_torch_onnx_numpy_probabilities_agree(sharp: tuple[Path, Path]) -> None:
    from sb3_contrib import MaskablePPO

    from agents.nets.checkpoint import load_checkpoint_policy

    ckpt, bot_dir = sharp
    rules = get_rules("classic")
    actor, _ = load_checkpoint_policy(ckpt, rules)
    obs, mask = _inputs(1200, seed=7)
    p_torch = torch_probs(actor, obs, mask)
    # the actor + MaskableCategorical is the SB3 policy itself
    model = MaskablePPO.load(str(ckpt), device="cpu")
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.as_tensor(obs), action_masks=mask)
    np.testing.assert_allclose(dist.distribution.probs.numpy(), p_torch, atol=1e-6)
    # the weights are sharp enough for the comparison to mean something
    top = p_torch.max(axis=1)[mask.sum(axis=1) > 1]
    assert 0.3 < top.mean() < 0.99
    for prefer in ("numpy", "onnx"):
        bot = Bot.load(bot_dir, prefer=prefer)
        assert bot.backend == prefer
        p = bot.probs(obs, mask)
        assert p.dtype == np.float32 and p.shape == mask.shape
        assert np.abs(p - p_torch).max() <= TOL, prefer
        assert (p[~mask] == 0).all()
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
        # the single-legal rows put all their mass on that action
        single = mask.sum(axis=1) == 1
        np.testing.assert_allclose(p[single][mask[single]], 1.0, atol=1e-6)


def test_actions_are_the_torch_argmax(sharp: tuple[Path, Path]) -> None:
    from agents.nets.checkpoint import load_checkpoint_policy

    ckpt, bot_dir = sharp
    actor, _ = load_checkpoint_policy(ckpt, "classic")
    obs, mask = _inputs(800, seed=9)
    p_torch = torch_probs(actor, obs, mask)
    top2 = np.sort(p_torch, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-4  # rows without a near tie
    for prefer in ("numpy", "onnx"):
        actions = Bot.load(bot_dir, prefer=prefer).act(obs, mask)
        assert mask[np.arange(len(actions)), actions].all()
        assert (actions[clear] == p_torch.argmax(axis=1)[clear]).all()


def test_onnx_interface(sharp: tuple[Path, Path]) -> None:
    ort = pytest.importorskip("onnxruntime")
    _, bot_dir = sharp
    sess = ort.InferenceSession(str(bot_dir / ONNX), providers=["CPUExecutionProvider"])
    ins = {i.name: (i.type, i.shape) for i in sess.get_inputs()}
    outs = {o.name: (o.type, o.shape) for o in sess.get_outputs()}
    assert ins["obs"][0] == "tensor(float)" and ins["obs"][1][1] == 336
    assert ins["action_mask"][0] == "tensor(bool)" and ins["action_mask"][1][1] == 40
    assert outs["probs"][0] == "tensor(float)" and outs["action"][0] == "tensor(int64)"
    obs, mask = _inputs(64, seed=2)
    for n in (1, 3, 50):  # the batch axis is dynamic
        probs, action = sess.run(["probs", "action"], {"obs": obs[:n], "action_mask": mask[:n]})
        assert probs.shape == (n, 40) and action.shape == (n,)
        assert (action == probs.argmax(axis=1)).all()


def test_model_card(trained: tuple[Path, Path, Path]) -> None:
    ckpt, results, bot_dir = trained
    card = json.loads((bot_dir / MODEL_CARD).read_text())
    assert card["format"] == "scopa-bot" and card["version"] == 1 and card["name"] == "t"
    assert card["variant"] == "classic" and card["obs_version"] == observation.OBS_VERSION
    assert card["obs_size"] == observation.observation_size("classic") and card["num_cards"] == 40
    assert card["training_steps"] == 128
    arch = card["architecture"]
    assert arch["hidden"] == [32, 32] and arch["activation"] == "tanh" and arch["input"] == 336
    assert arch["parameters"] == 336 * 32 + 32 + 32 * 32 + 32 + 32 * 40 + 40
    datetime.fromisoformat(card["created"])
    assert card["source_checkpoint"]["sha256"] == hashlib.sha256(ckpt.read_bytes()).hexdigest()
    assert card["checkpoint_meta"]["steps"] == 128 and card["training_config"] == {"seed": 1}
    for name in (WEIGHTS, ONNX):
        assert card["files"][name]["sha256"] == hashlib.sha256((bot_dir / name).read_bytes()).hexdigest()
    checks = card["checks"]
    assert checks["max_abs_diff_numpy"] <= TOL and checks["max_abs_diff_onnx"] <= TOL
    assert checks["masked_prob_max"] == 0.0 and checks["rows"] == DEFAULT_CHECK_ROWS
    ratings = card["ratings"]
    assert ratings["source"] == str(results) and ratings["mode"] == "hands" and ratings["deals"] == 16
    assert ratings["seed"] == 5 and ratings["deals_from"] == "seed 5"  # what reproduces the deals
    assert {r["agent"] for r in ratings["ratings"]} == {"best", "random"}
    assert {r["spec"] for r in ratings["ratings"]} == {str(ckpt), "random"}
    assert ratings["pairings"] and {"agent", "opponent", "score"} <= set(ratings["pairings"][0])
    (more,) = card["more_ratings"]  # the second --ratings file
    assert more["deals"] == 8 and {r["agent"] for r in more["ratings"]} == {"best", "greedy"}
    assert card["note"] == "a note"
    assert card["against_expert"] == {"beats_expert": False, "min_deals": 1000, "margins": []}  # never met expert


def test_against_expert_reads_the_bots_margins_from_its_ratings() -> None:
    from agents.nets.card import against_expert

    def pairing(agent: str, opponent: str, deals: int, value: float, low: float, high: float) -> dict:
        return {
            "agent": agent,
            "opponent": opponent,
            "deals": deals,
            "margin": {"value": value, "low": low, "high": high},
        }

    gauntlet = {
        "source": "g",
        "seed": 7,
        "pairings": [pairing("mine", "greedy", 1000, 1, 0.9, 1.1), pairing("mine", "expert", 1000, 0.2, 0.1, 0.3)],
    }
    small = {"source": "s", "pairings": [pairing("expert", "b", 300, -0.5, -0.7, -0.3)]}  # expert first: sign flips
    round_robin = {
        "source": "r",
        "pairings": [
            pairing("greedy", "expert", 1000, -0.2, -0.3, -0.1),
            pairing("x", "greedy", 9, 0, 0, 0),
            pairing("x", "expert", 9, 0, 0, 0),
        ],
    }
    verdict = against_expert("b", [gauntlet, small, round_robin])
    # the gauntlet names the bot 'mine' (its one agent in every pairing); the round robin has no such agent: skipped
    assert verdict["beats_expert"] is True and verdict["min_deals"] == 1000
    assert verdict["margins"] == [
        {"source": "g", "seed": 7, "deals": 1000, "margin": 0.2, "low": 0.1, "high": 0.3},
        {"source": "s", "seed": None, "deals": 300, "margin": 0.5, "low": 0.3, "high": 0.7},
    ]
    assert against_expert("b", [small])["beats_expert"] is False  # above 0, but on fewer than 1,000 deals
    assert against_expert("b", [{"pairings": [pairing("b", "expert", 5000, 0.1, -0.01, 0.2)]}])["beats_expert"] is False


def test_the_card_carries_the_endgame_the_bot_plays_by_default(tmp_path: Path, sharp: tuple[Path, Path]) -> None:
    from agents.base import make_agent
    from agents.nets.weights import read_checkpoint_meta

    ckpt, bot_dir = sharp
    assert json.loads((bot_dir / MODEL_CARD).read_text())["endgame"] == 0  # checkpoints without "endgame"
    assert make_agent(f"bot:path={bot_dir}", "classic").endgame == 0
    meta = read_checkpoint_meta(ckpt)
    trained = tmp_path / "exact.zip"  # as train.py writes it with endgame: 8
    with zipfile.ZipFile(ckpt) as z:
        members = {n: z.read(n) for n in z.namelist() if n != "scopa_meta.json"}
    with zipfile.ZipFile(trained, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
        z.writestr("scopa_meta.json", json.dumps({**meta, "endgame": 8}))
    assert export.main([str(trained), "--out", str(tmp_path / "a"), "--check-rows", "64"]) == 0
    assert json.loads((tmp_path / "a" / MODEL_CARD).read_text())["endgame"] == 8
    bot = make_agent(f"bot:path={tmp_path / 'a'}", "classic")
    assert bot.endgame == 8 and bot.needs_state
    assert make_agent(f"bot:path={tmp_path / 'a'},endgame=0", "classic").endgame == 0
    assert export.main([str(trained), "--out", str(tmp_path / "b"), "--check-rows", "64", "--endgame", "0"]) == 0
    assert make_agent(f"bot:path={tmp_path / 'b'}", "classic").endgame == 0
    assert export.main([str(ckpt), "--out", str(tmp_path / "c"), "--check-rows", "64", "--endgame", "6"]) == 0
    assert make_agent(f"bot:path={tmp_path / 'c'}", "classic").endgame == 6
    with pytest.raises(ExportError, match="--endgame must be >= 0"):
        export_checkpoint(ckpt, tmp_path / "d", check_rows=64, endgame=-1)
    assert not (tmp_path / "d").exists() or not any((tmp_path / "d").iterdir())


def test_ratings_file_errors(tmp_path: Path, trained: tuple[Path, Path, Path]) -> None:
    _, results, _ = trained
    assert ratings_from_results(results.parent, "classic")["ratings"]  # the folder works too
    with pytest.raises(ExportError, match="rates agents in 'classic'"):
        ratings_from_results(results, "scopa-d-assi")
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(ExportError, match=r"not an evaluate\.py results\.json"):
        ratings_from_results(bad, "classic")


def cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The ``error:`` line of a command line that must stop with exit status 2 (argparse style, no traceback)."""
    with pytest.raises(SystemExit) as exc:
        export.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "python -m agents.nets.export: error: " in err and "Traceback" not in err
    return err


def test_cli_refuses_to_overwrite_and_explains(
    tmp_path: Path, trained: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt, _, bot_dir = trained
    assert "already holds an export" in cli_error([str(ckpt), "--out", str(bot_dir)], capsys)
    (tmp_path / "other.txt").write_text("x")
    assert "holds other files (other.txt)" in cli_error([str(ckpt), "--out", str(tmp_path)], capsys)
    assert "does not exist" in cli_error([str(tmp_path / "missing.zip"), "--out", str(tmp_path / "o")], capsys)


def test_every_argument_is_checked_before_any_work(
    tmp_path: Path, sharp: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--tolerance -1`` used to fail only after the whole export and its check (15 s of work)."""
    ckpt, _ = sharp

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the export started despite a bad argument")

    monkeypatch.setattr(export, "export_checkpoint", no_work)
    (tmp_path / "file").write_text("x")
    out = str(tmp_path / "new")
    for extra, message in (
        (["--tolerance", "-1"], r"--tolerance must be a number in \[0, 1\].*got -1\.0"),
        (["--tolerance", "nan"], "--tolerance must be a number"),
        (["--tolerance", "inf"], "--tolerance must be a number"),
        (["--check-rows", "8"], r"--check-rows must be an integer in 16\.\.1048576"),
        (["--check-rows", "1000000000"], "--check-rows must be an integer in 16..1048576"),
        (["--endgame", "-1"], "--endgame must be >= 0 plies"),
        (["--name", " "], "--name must be a non-empty name"),
        (["--ratings", str(tmp_path / "none.json")], "--ratings .*none.json: no such file"),
    ):
        assert re.search(message, cli_error([str(ckpt), "--out", out, *extra], capsys)), extra
    assert "is a file; give a directory" in cli_error([str(ckpt), "--out", str(tmp_path / "file")], capsys)
    assert "is a file, so the directory cannot be made" in cli_error(
        [str(ckpt), "--out", str(tmp_path / "file" / "bot")], capsys
    )
    assert "is a directory without a model_card.json" in cli_error([str(tmp_path), "--out", out], capsys)
    assert not (tmp_path / "new").exists()
    with pytest.raises(export.ExportArgumentError, match="--tolerance must be a number"):
        check_arguments(ckpt, out, tolerance="1e-5")
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):  # ExportArgumentError is a ValueError
        check_arguments(ckpt, out, seed=-1)


def test_checkpoint_without_metadata(tmp_path: Path) -> None:
    ckpt = make_checkpoint(tmp_path / "plain.zip", meta=False)
    with pytest.raises(ValueError, match=r"no scopa_meta\.json"):
        export_checkpoint(ckpt, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unsupported_network_is_refused(tmp_path: Path) -> None:
    # GELU is not in the one activation table (agents.nets.mlp.ACTIVATIONS: no numpy twin), so the checkpoint is
    # refused as soon as it is read, by the exporter and by the agents alike (it used to load and fail at export).
    ckpt = make_checkpoint(tmp_path / "gelu.zip", activation=torch.nn.GELU)
    with pytest.raises(AgentSpecError, match="GELU"):
        export_checkpoint(ckpt, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(AgentSpecError, match="GELU"):
        make_agent(str(ckpt), "classic")


def test_relu_network_round_trip(tmp_path: Path) -> None:
    from agents.nets.checkpoint import load_checkpoint_policy

    ckpt = make_checkpoint(tmp_path / "relu.zip", hidden=(16,), activation=torch.nn.ReLU, scale=0.4, seed=5)
    card = export_checkpoint(ckpt, tmp_path / "out", check_rows=128)
    assert card["architecture"]["activation"] == "relu" and card["architecture"]["hidden"] == [16]
    actor, _ = load_checkpoint_policy(ckpt, "classic")
    obs, mask = _inputs(200, seed=4)
    p = Bot.load(tmp_path / "out", prefer="numpy").probs(obs, mask)
    assert np.abs(p - torch_probs(actor, obs, mask)).max() <= TOL


def test_failed_check_leaves_no_files(
    tmp_path: Path, sharp: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ckpt, _ = sharp
    real = export.check_export

    def off(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**real(*args, **kwargs), "max_abs_diff_numpy": 0.5}  # as if the numpy weights were wrong

    monkeypatch.setattr(export, "check_export", off)
    with pytest.raises(ExportCheckError, match="does not match the torch policy"):
        export_checkpoint(ckpt, tmp_path / "out", check_rows=64)
    assert not (tmp_path / "out").exists()  # nor the folder it made (no empty export directory left behind)
    assert export.main([str(ckpt), "--out", str(tmp_path / "cli"), "--check-rows", "64"]) == 1  # a failed check: 1
    assert "python -m agents.nets.export: error: the exported bot does not match" in capsys.readouterr().err
    assert not (tmp_path / "cli").exists()
