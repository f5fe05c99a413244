"""train.py: configs and overrides, run directories, smoke runs, checkpoints, TensorBoard, resume and Ctrl-C."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import train
from agents.base import make_agent
from agents.cli.settings import ConfigError
from agents.nets.checkpoint import NeuralPolicy
from agents.nets.weights import read_checkpoint_meta
from agents.training.duplicate_eval import duplicate_eval, rotation_lineups
from agents.training.train_config import (
    DEFAULT_CONFIG,
    TrainConfig,
    config_from_dict,
    field_docs,
    load_config,
    read_yaml,
)
from agents.training.trainer import Trainer
from scopa_env.engine import core, observation
from scopa_env.rules import get_rules
from tests.helpers import checkpoint_weights, play_every_rotation, same_weights, train_smoke

ROOT = Path(__file__).resolve().parents[1]
SMOKE = str(ROOT / "configs" / "smoke.yaml")


def _run_dirs(root: Path, name: str) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and f"__{name}__" in p.name)


# --------------------------------------------------------------------------------------------------- config


def test_default_yaml_spells_out_the_dataclass_defaults() -> None:
    assert load_config() == TrainConfig()
    assert set(read_yaml(DEFAULT_CONFIG)) == {f.name for f in dataclasses.fields(TrainConfig)}


EXIT_CONFIGS = ("exit", "scopone_exit")
"""The configs of ``python -m agents.training.expert_iteration`` (the others are ``train.py``'s)."""


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in (ROOT / "configs").glob("*.yaml") if p.stem not in EXIT_CONFIGS)
)
def test_shipped_configs_load(name: str) -> None:
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    assert cfg.rollout_size % cfg.batch_size == 0
    if name in ("quattro", "cirulla4"):
        assert max(len(s) for s in cfg.rules.sides) == 2 and cfg.partner == "self"
    if name.startswith("cirulla"):
        assert cfg.rules.cirulla and cfg.endgame > 0


@pytest.mark.parametrize("name", EXIT_CONFIGS)
def test_shipped_expert_iteration_configs_load(name: str) -> None:
    from agents.cli.settings import load_config as load_settings
    from agents.cli.settings import read_yaml_mapping
    from agents.training.expert_iteration import ExItConfig

    path = ROOT / "configs" / f"{name}.yaml"
    cfg = load_settings(ExItConfig, read_yaml_mapping(path), str(path), {})
    assert (ROOT / cfg.init).exists() and cfg.teacher.split(":")[0] in ("az", "pimc")


def test_every_field_has_a_docstring_line() -> None:
    docs = field_docs()
    for f in dataclasses.fields(TrainConfig):
        assert docs.get(f.name), f"field {f.name} has no docstring"


def test_cli_overrides_convert_types() -> None:
    _, over = train.parse_cli(
        [
            "--total-steps",
            "2e7",
            "--net-arch",
            "64,32",
            "16",
            "--baselines",
            "random",
            "pimc:worlds=4,depth=2",
            "--no-progress",
            "--target-kl",
            "none",
            "--learning-rate",
            "1e-3",
            "--learner-seat",
            "1",
        ]
    )
    assert over == {
        "total_steps": 20_000_000,
        "net_arch": [64, 32, 16],
        "baselines": ["random", "pimc:worlds=4,depth=2"],
        "progress": False,
        "target_kl": None,
        "learning_rate": 1e-3,
        "learner_seat": "1",
    }
    cfg = load_config(SMOKE, over)
    assert cfg.total_steps == 20_000_000 and cfg.seat == 1 and cfg.name == "smoke"


def test_yaml_accepts_scientific_integers(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("total_steps: 2e7\nsnapshot_every: 1_000_000\neval_every: 5.0e+5\n")
    cfg = load_config(p)
    assert (cfg.total_steps, cfg.snapshot_every, cfg.eval_every) == (20_000_000, 1_000_000, 500_000)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("totl_steps: 100\n", r"unknown config key\(s\) 'totl_steps'; valid keys: name, variant"),
        ("total_steps: 1.5\n", "total_steps must be a whole number"),
        ("total_steps: lots\n", "total_steps must be an integer"),
        ("variant: nope\n", "unknown variant 'nope'"),
        ("batch_size: 1000\n", "batch_size .* must divide"),
        ("reward: money\n", "reward must be"),
        ("progress: maybe\n", "progress must be true or false"),
        ("- a\n- b\n", "mapping"),
        ("partner: greedy\n", "needs a team variant"),
        ("endgame: -1\n", "endgame must be >= 0"),
        ("endgame: 8\ndistill_coef: 1\n", "nothing to distil"),
    ],
)
def test_bad_config_files_fail_with_clear_messages(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_config(p)


def test_field_docs_come_from_the_fields_not_the_source() -> None:
    from agents.cli.settings import field_docs

    for f in dataclasses.fields(TrainConfig):
        assert f.metadata["doc"] and field_docs(TrainConfig)[f.name] == " ".join(f.metadata["doc"].split())


def test_help_works_under_a_profiler() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "cProfile", str(ROOT / "train.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and out.stdout.startswith("usage: train.py"), out.stderr[-2000:]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "1", "--seed", "2"], "argument --seed: got --seed twice"),
        (["--progress", "--no-progress"], "argument --no-progress: got both --progress and --no-progress"),
        (["--net-arch", "8", "--net-arch", "16"], "argument --net-arch: got --net-arch twice"),
        (["--config", "smoke", "--config", "strong"], "argument --config: got --config twice"),
    ],
)
def test_an_option_given_twice_is_refused(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as e:
        train.main([*argv, "--print-config"])
    assert e.value.code == 2
    assert f"train.py: error: {message}; give it once" in capsys.readouterr().err


def test_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        train.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    docs = field_docs()
    for f in dataclasses.fields(TrainConfig):
        assert "--" + f.name.replace("_", "-") in out
        assert docs[f.name].split()[0] in out
    assert "--resume" in out and "--config" in out and "(default: 512)" in out


def test_print_config_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert train.main(["--config", SMOKE, "--total-steps", "3e3", "--print-config"]) == 0
    text = capsys.readouterr().out
    (tmp_path / "c.yaml").write_text(text)
    assert load_config(tmp_path / "c.yaml") == load_config(SMOKE, {"total_steps": 3000})


def test_bad_cli_values_and_unwritable_run_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert train.main(["--config", SMOKE, "--total-steps", "abc"]) == 2
    assert "--total-steps" in capsys.readouterr().err
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert train.main(["--config", SMOKE, "--run-root", str(blocker / "runs")]) == 2
    err = capsys.readouterr().err
    assert "cannot write the run directory" in err and "--run-root" in err
    assert train.main(["--config", SMOKE, "--baselines", "nosuchagent", "--run-root", str(tmp_path)]) == 2
    assert "baselines: unknown agent 'nosuchagent'" in capsys.readouterr().err
    assert not _run_dirs(tmp_path, "smoke")  # failed before creating a run directory


# --------------------------------------------------------------------------------------------------- evaluation


def test_duplicate_eval_cancels_the_cards() -> None:
    greedy = make_agent("greedy", "classic")
    r = duplicate_eval("classic", greedy, make_agent("greedy", "classic"), deals=30, seed=5)
    assert r.margin == 0.0 and r.win_rate == 0.5 and r.hands == 60  # a deterministic agent against itself
    r = duplicate_eval("classic", greedy, make_agent("random", "classic", 0), deals=100, seed=5)
    assert r.low > 0.5 and r.low < r.margin < r.high


def test_rotation_lineups_put_the_agent_on_every_seat_of_a_side() -> None:
    assert rotation_lineups(get_rules("classic")).tolist() == [[0, 1], [1, 0]]
    assert rotation_lineups(get_rules("scopa-a-quattro")).tolist() == [[0, 1, 0, 1], [1, 0, 1, 0]]
    assert rotation_lineups(get_rules("simple-3")).tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]


# --------------------------------------------------------------------------------------------------- runs


def _tags(run: Path) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run))
    ea.Reload()
    return set(ea.Tags()["scalars"])


def test_smoke_run_writes_a_loadable_checkpoint_and_tensorboard_events(tmp_path: Path) -> None:
    run = train_smoke(tmp_path, "smoke")
    assert run.name.startswith("classic__smoke__0__")
    for name in ("config.yaml", "version.json", "history.jsonl", "eval.jsonl", "last.zip", "best.zip"):
        assert (run / name).is_file(), name
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000002048.zip", "step_000004096.zip"]
    assert load_config(run / "config.yaml") == load_config(SMOKE, {"run_root": str(tmp_path)})
    version = json.loads((run / "version.json").read_text())
    assert version["obs_version"] == observation.OBS_VERSION and "commit" in version
    meta = read_checkpoint_meta(run / "last.zip")
    assert (meta["variant"], meta["obs_version"], meta["steps"], meta["kind"]) == (
        "classic",
        observation.OBS_VERSION,
        4096,
        "last",
    )
    assert meta["config"]["name"] == "smoke"
    evals = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert [e["step"] for e in evals] == [0, 2048, 4096]
    best = read_checkpoint_meta(run / "best.zip")
    assert best["kind"] == "best" and best["steps"] in (0, 2048, 4096)
    assert best["eval"]["margins"]["random"]["margin"] == max(e["margins"]["random"]["margin"] for e in evals)
    # the best checkpoint plays through make_agent (the core raises on an illegal move)
    agent = make_agent(str(run / "best.zip"), "classic", seed=0)
    assert isinstance(agent, NeuralPolicy)
    res = play_every_rotation("classic", agent, make_agent("random", "classic", 1), 10, mode="matches")
    assert (res.winner >= 0).all()
    tags = _tags(run)
    for tag in (
        "charts/steps_per_second",
        "charts/episode_margin",
        "losses/value",
        "losses/entropy",
        "league/prob/random",
        "league/win_rate/random",
        "league/snapshots",
        "eval/margin/random",
    ):
        assert tag in tags, tag


def test_resume_continues_like_an_uninterrupted_run(smoke_run: Path, smoke_half: Path) -> None:
    full, half = smoke_run, smoke_half  # a constant schedule does not depend on total_steps
    assert read_checkpoint_meta(half / "last.zip")["steps"] == 2048
    assert train.main(["--resume", str(half), "--total-steps", "4096"]) == 0
    assert read_checkpoint_meta(half / "last.zip")["steps"] == 4096
    assert same_weights(full / "last.zip", half / "last.zip")
    events = [json.loads(line)["event"] for line in (half / "history.jsonl").read_text().splitlines()]
    assert events == ["start", "finish", "resume", "finish"]
    assert load_config(half / "config.yaml").total_steps == 4096
    assert train.main(["--resume", str(half)]) == 0  # already done: nothing to train


def test_ctrl_c_saves_a_checkpoint_that_resumes_exactly(
    smoke_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = load_config(SMOKE, {"run_root": str(tmp_path), "name": "cut", "lr_end_fraction": 1.0})
    trainer = Trainer.create(cfg)
    original = Trainer.on_step

    def on_step(self: Trainer, local: dict[str, Any]) -> bool:
        if self.model.num_timesteps >= 2560:  # in the middle of the third rollout (1024 steps each)
            self.stop_requested = True
        return original(self, local)

    monkeypatch.setattr(Trainer, "on_step", on_step)
    assert trainer.run() == 130
    monkeypatch.undo()
    (run,) = _run_dirs(tmp_path, "cut")
    assert read_checkpoint_meta(run / "last.zip")["steps"] == 2048  # the start of the interrupted rollout
    assert json.loads((run / "history.jsonl").read_text().splitlines()[-1])["event"] == "interrupt"
    assert train.main(["--resume", str(run)]) == 0
    assert same_weights(smoke_run / "last.zip", run / "last.zip")


def test_endgame_distillation_runs_and_resumes_exactly(smoke_run: Path, tmp_path: Path) -> None:
    fixed = ["--lr-end-fraction", "1", "--distill-coef", "1", "--distill-fraction", "0.5"]
    full = train_smoke(tmp_path, "full", *fixed)
    tags = _tags(full)
    for tag in ("endgame/labels", "endgame/accuracy", "endgame/loss", "endgame/label_seconds"):
        assert tag in tags, tag
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(full))
    ea.Reload()
    labels = [e.value for e in ea.Scalars("endgame/labels")]
    # 64 games x 16 steps per rollout, about 1 learner decision in 6 an open end game, half of them labelled (fewer
    # in the first rollout, which starts with every hand)
    assert len(labels) == 4 and all(0 < n <= 250 for n in labels) and 150 < sum(labels) < 600, labels
    assert not same_weights(full / "last.zip", smoke_run / "last.zip")  # the extra loss changes the training
    half = train_smoke(tmp_path, "half", *fixed, "--total-steps", "2048")
    assert train.main(["--resume", str(half), "--total-steps", "4096"]) == 0
    assert same_weights(full / "last.zip", half / "last.zip")


def test_trainer_labels_the_learners_open_end_games_with_the_solver(tmp_path: Path) -> None:
    from agents.search.endgame import optimal_open_actions, solve_open
    from scopa_env.engine.state_moves import is_open

    cfg = load_config(SMOKE, {"run_root": str(tmp_path), "distill_coef": 1.0, "distill_fraction": 1.0})
    trainer = Trainer.create(cfg)
    env = trainer.env.venv  # under the shaping wrapper
    obs = trainer.env.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):
        before = len(trainer._endgame)
        trainer._label_endgames(obs)
        if len(trainer._endgame) > before:
            o, m, a = trainer._endgame[-1]
            live = np.arange(env.num_envs)
            rows = live[is_open(trainer.rules, env.games.state, live)]
            assert len(a) == rows.size > 0  # every open end game (<= 8 plies left in classic) at fraction 1
            assert np.array_equal(o, obs[rows]) and np.array_equal(m, env.action_masks()[rows])
            assert np.array_equal(a, optimal_open_actions(trainer.rules, env.games.state, rows))
            assert a[np.arange(rows.size), solve_open(trainer.rules, env.games.state, rows)].all()
            assert not (a & ~m).any() and a.any(axis=1).all()
        masks = env.action_masks()
        keys = np.where(masks, rng.random(masks.shape), -1.0)
        obs, *_ = trainer.env.step(keys.argmax(axis=1))
    assert sum(len(e[2]) for e in trainer._endgame) > 50
    assert any((e[2].sum(axis=1) > 1).any() for e in trainer._endgame)  # ties between best moves are common


def test_exact_endgame_run_plays_and_records_the_solved_end_game(tmp_path: Path) -> None:
    from agents.search.endgame import open_endgame_rows, optimal_open_actions

    run = train_smoke(tmp_path, "exact", "--endgame", "8", "--total-steps", "2048")
    assert read_checkpoint_meta(run / "best.zip")["endgame"] == 8
    assert make_agent(str(run / "best.zip"), "classic").endgame == 8  # checkpoints play as they were trained
    assert make_agent(f"neural:path={run / 'best.zip'},endgame=0", "classic").endgame == 0
    assert read_checkpoint_meta(train_smoke(tmp_path, "plain", "--total-steps", "1024") / "best.zip")["endgame"] == 0
    cfg = load_config(SMOKE, {"run_root": str(tmp_path), "name": "masks", "endgame": 8})
    trainer = Trainer.create(cfg)
    env = trainer.env.unwrapped
    trainer.env.reset()
    narrowed = 0
    rng = np.random.default_rng(0)
    for _ in range(30):
        live = np.arange(env.num_envs)
        rows = open_endgame_rows(trainer.rules, env.games.state, live, 8)
        masks = env.action_masks()
        if rows.size:
            assert np.array_equal(masks[rows], optimal_open_actions(trainer.rules, env.games.state, rows))
            legal = core.legal_action_mask(trainer.rules, env.games.state)[rows]
            narrowed += int((masks[rows].sum(1) < legal.sum(1)).sum())
        keys = np.where(masks, rng.random(masks.shape), -1.0)
        trainer.env.step(keys.argmax(axis=1))
    assert narrowed > 20  # the solver rules out real moves, not just nothing
    resumed = Trainer.resume(run, None, {})
    snaps = resumed.league.snapshots
    assert snaps and all(m.policy.endgame == 8 and m.policy.needs_state for m in snaps)
    assert resumed.env.unwrapped.games.mask_filter.plies == 8


def test_init_from_starts_from_the_checkpoints_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = train_smoke(tmp_path, "src", "--total-steps", "1024")
    init = {"run_root": str(tmp_path), "name": "init", "init_from": str(src / "last.zip"), "pretrain_teacher": "none"}
    cfg = load_config(SMOKE, init)
    trainer = Trainer.create(cfg)
    want = checkpoint_weights(src / "last.zip")
    got = trainer.model.policy.state_dict()
    assert all(torch.equal(want[k], got[k]) for k in want)
    assert not (trainer.run_dir / "pretrain.json").exists()  # no warm start over the loaded weights
    capsys.readouterr()
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    for init, match in (
        (tmp_path / "missing.zip", "no checkpoint file"),
        (bad, "corrupt"),
    ):
        argv = ["--config", SMOKE, "--run-root", str(tmp_path), "--name", "x", "--pretrain-teacher", "none"]
        assert train.main([*argv, "--init-from", str(init)]) == 2
        assert match in capsys.readouterr().err, match
    argv = ["--config", SMOKE, "--run-root", str(tmp_path), "--name", "y", "--init-from", str(src / "last.zip")]
    assert train.main(argv) == 2  # the warm start would overwrite the loaded weights: refused, not ignored
    assert "init_from and pretrain_teacher both set the starting weights" in capsys.readouterr().err
    argv += ["--pretrain-teacher", "none"]
    assert train.main([*argv, "--net-arch", "16"]) == 2
    assert "net_arch [32, 32], this config [16]" in capsys.readouterr().err
    assert train.main([*argv, "--activation", "tanh"]) == 2
    assert "activation 'relu'" in capsys.readouterr().err
    assert train.main([*argv, "--variant", "classic-21"]) == 2
    assert "not 'classic-21'" in capsys.readouterr().err


def test_resume_refuses_another_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = train_smoke(tmp_path, "smoke", "--total-steps", "1024")
    capsys.readouterr()
    assert train.main(["--resume", str(run), "--variant", "scopa-a-quattro"]) == 2
    err = capsys.readouterr().err
    assert "variant='scopa-a-quattro' (the run has 'classic')" in err and "start a new run" in err
    assert train.main(["--resume", str(run), "--config", str(ROOT / "configs" / "quattro.yaml")]) == 2
    assert "variant=" in capsys.readouterr().err
    assert train.main(["--resume", str(tmp_path / "missing")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    assert train.main(["--resume", str(run), "--num-envs", "64"]) == 0  # same value as the run's: fine


def test_team_variant_smoke_run(tmp_path: Path) -> None:
    run = train_smoke(tmp_path, "team", "--variant", "scopa-a-quattro", "--total-steps", "2048")
    agent = make_agent(str(run / "best.zip"), "scopa-a-quattro", seed=0)
    res = play_every_rotation("scopa-a-quattro", agent, make_agent("random", "scopa-a-quattro", 1), 4, mode="hands")
    assert res.hands.sum() == 8


@pytest.mark.slow
def test_a_short_run_beats_random(tmp_path: Path) -> None:
    """Self-play alone (no warm start) learns: 300k steps of the default recipe clearly beat random play."""
    base = TrainConfig()
    opts = {
        "total-steps": "3e5",
        "num-envs": "256",
        "n-steps": "32",
        "batch-size": str(base.batch_size),
        "n-epochs": str(base.n_epochs),
        "learning-rate": str(base.learning_rate),
        "gae-lambda": str(base.gae_lambda),
        "pretrain-teacher": "none",
        "eval-every": "1e5",
        "eval-deals": "100",
        "checkpoint-every": "1e5",
        "snapshot-every": "1e5",
    }
    run = train_smoke(
        tmp_path, "learn", *[x for k, v in opts.items() for x in (f"--{k}", v)], "--net-arch", "128", "128"
    )
    rules = get_rules("classic")
    agent = make_agent(str(run / "best.zip"), rules)
    r = duplicate_eval(rules, agent, make_agent("random", rules, 0), deals=1000, seed=777)
    assert r.low > 0.5, r  # the untrained network is within about 0.2 of random


def _interrupt(cmd: list[str], root: Path, name: str) -> tuple[int, str]:
    """Start ``cmd`` (a smoke run named ``name`` under ``root``) in a session of its own, Ctrl-C it as a terminal
    would (SIGINT to the whole process group) once it has trained a little; (exit status, output)."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        while not (_run_dirs(root, name) and (_run_dirs(root, name)[0] / "eval.jsonl").exists()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.2)
        time.sleep(1.0)  # let it train a little
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out


SIG_ARGS = ["--config", SMOKE, "--total-steps", "1e8", "--eval-every", "1e8", "--checkpoint-every", "1e8"]


def _interrupted_run_resumes_as_printed(out: str, root: Path, name: str) -> None:
    """After a real Ctrl-C of train.py (its output ``out``, its run ``name`` under ``root``): a checkpoint at a rollout
    boundary, and a resume hint that is this interpreter, train.py and its arguments; the arguments run (in this
    process: ``train.main``, what ``python train.py`` calls, without a second start of Python and torch)."""
    import shlex

    (run,) = _run_dirs(root, name)
    assert out.index("run directory:") < out.index("warm start:")  # announced before the wait
    steps = read_checkpoint_meta(run / "last.zip")["steps"]
    assert steps % 1024 == 0  # a rollout boundary
    assert json.loads((run / "history.jsonl").read_text().splitlines()[-1])["event"] == "interrupt"
    hint = out.split("continue with\n", 1)[1].splitlines()[0].strip()
    argv = shlex.split(hint)
    python = Path(sys.executable)
    assert argv[:2] == [str(python.relative_to(ROOT) if python.is_relative_to(ROOT) else python), "train.py"], hint
    assert argv[2:] == ["--resume", str(run)], hint
    assert train.main([*argv[2:], "--total-steps", str(steps + 1024)]) == 0
    assert [json.loads(x)["event"] for x in (run / "history.jsonl").read_text().splitlines()][-1] == "finish"


@pytest.mark.slow
def test_sigint_saves_exits_130_and_its_resume_hint_runs_as_printed(tmp_path: Path) -> None:
    """A real Ctrl-C of a train.py process started directly: status 130, and the run resumes as its hint says. The
    default suite proves the same through ``make train`` (``test_ctrl_c_of_make_train_is_no_make_error``)."""
    cmd = [sys.executable, "train.py", *SIG_ARGS, "--run-root", str(tmp_path), "--name", "sig"]
    rc, out = _interrupt(cmd, tmp_path, "sig")
    assert rc == 130, out
    _interrupted_run_resumes_as_printed(out, tmp_path, "sig")


def test_a_stop_in_the_warm_start_leaves_no_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The warm start shows its progress (plain lines when stderr is no terminal); Ctrl-C during it removes the run
    folder it had announced, which has no checkpoint to resume from."""
    import agents.training.imitation

    def fit(*args: Any, progress: Any = None, **kwargs: Any) -> None:
        progress(100)
        raise KeyboardInterrupt

    monkeypatch.setattr(agents.training.imitation, "pretrain_policy", fit)
    argv = ["--config", SMOKE, "--run-root", str(tmp_path / "runs"), "--name", "early", "--progress"]
    assert train.main(argv) == 130
    out, err = capsys.readouterr()
    assert "run directory:" in out and "warm start: teacher hands: 40/40 hands (100%)" in err, out + err
    assert "removed" in err and "start the run again:" in err, err
    assert not _run_dirs(tmp_path / "runs", "early")


def test_ctrl_c_of_make_train_is_no_make_error(tmp_path: Path) -> None:
    """``make train``, Ctrl-C: train.py saves and exits with 130 (seen through ``PY``, a wrapper around this
    interpreter that notes its status, -2 if a signal killed it, and passes it on; it outlives the Ctrl-C as the
    recipe's shell does), the recipe treats that 130 after a clean stop as success (make says no 'Error 130'), and
    the run resumes as the printed hint says."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    status = tmp_path / "status"
    py = tmp_path / "py"
    py.write_text(
        f"#!{sys.executable}\n"
        "import signal, subprocess, sys\n"
        "signal.signal(signal.SIGINT, lambda *_: None)  # as the recipe's shell: trap : INT\n"
        f"code = subprocess.call([{sys.executable!r}, *sys.argv[1:]])\n"
        f"open({str(status)!r}, 'w').write(str(code))\n"
        "sys.exit(code if code >= 0 else 128 - code)\n"
    )
    py.chmod(0o755)
    args = " ".join([*SIG_ARGS, "--run-root", str(tmp_path), "--name", "make"])
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed", "train", f"PY={py}", f"ARGS={args}"]
    rc, out = _interrupt(cmd, tmp_path, "make")
    assert rc in (0, -2), out  # make itself got the Ctrl-C too (-2: it ends by SIGINT, as it should); 2: an error
    assert status.read_text() == "130", out  # train.py's own exit status (the last command run through PY)
    assert "interrupted: saved" in out and "continue with" in out, out
    assert "Error 130" not in out and "Interrupt" not in out and "***" not in out, out
    _interrupted_run_resumes_as_printed(out, tmp_path, "make")


def test_renamed_config_keys_say_their_new_names_and_old_runs_still_resume() -> None:
    """One name per concept: ``endgame`` (plies solved exactly) as in the agents' option, ``distill_*`` for the
    solver's labels. A config with an old key is refused with its new name; an older run's saved config upgrades."""
    from agents.training.train_config import RENAMED, upgrade_saved_config

    with pytest.raises(ConfigError, match="'exact_endgame' is now 'endgame'"):
        config_from_dict({"exact_endgame": 8}, source="my.yaml")
    old = {"exact_endgame": 8, "endgame_coef": 0.0, "endgame_plies": 6, "endgame_fraction": 0.5, "seed": 3}
    cfg = config_from_dict(upgrade_saved_config(old))
    assert (cfg.endgame, cfg.distill_coef, cfg.distill_endgame, cfg.distill_fraction, cfg.seed) == (8, 0.0, 6, 0.5, 3)
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert set(RENAMED.values()) <= fields and not set(RENAMED) & fields


def test_best_response_recipe_trains_against_the_frozen_network_alone_then_exports_and_rates(tmp_path: Path) -> None:
    """configs/scopone_br.yaml (issue 53's exploitability check), shrunk: every episode is against the frozen
    network (no snapshot ever enters the league), the run checkpoints with that bot in its league and resumes, and
    the commands of the config's header read what it writes (export, then evaluate against the frozen network)."""
    import evaluate
    from agents.nets import export

    config = str(ROOT / "configs" / "scopone_br.yaml")
    small = ["--num-envs", "16", "--pretrain-hands", "20", "--eval-every", "1024", "--eval-deals", "4"]
    small += ["--checkpoint-every", "1024", "--run-root", str(tmp_path)]
    assert train.main(["--config", config, "--total-steps", "1024", *small]) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.name.startswith("scopone-scientifico__scopone_br__")]
    assert train.main(["--resume", str(run), "--total-steps", "2048"]) == 0
    trainer = Trainer.resume(run, None, {})
    frozen = "bot:path=agents/bots/scopone-scientifico,search=false,endgame_worlds=0"
    assert [m.name for m in trainer.league.members] == [frozen]
    evals = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert evals[-1]["step"] >= 2048 and frozen in json.dumps(evals[-1])
    net = tmp_path / "net-br"
    assert export.main([str(run / "best.zip"), "--out", str(net), "--name", "br"]) == 0
    out = tmp_path / "eval"
    argv = ["--variant", "scopone-scientifico", "--agents", f"bot:path={net},search=false", frozen]
    assert evaluate.main([*argv, "--hands", "2", "--seed", "5", "--out", str(out), "--quiet", "--no-plot"]) == 0
    (pairing,) = json.loads((out / "results.json").read_text())["pairings"]
    assert pairing["opponent"].endswith("endgame_worlds=0") and pairing["games"] == 4
