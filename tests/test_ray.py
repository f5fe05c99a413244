"""Tournaments and teacher data on a real two-node Ray cluster (``ray.cluster_utils.Cluster`` on this machine): the
results equal those of one process for the same seed, also when a worker process is killed mid-tournament and its
task retried; without Ray installed ``--ray`` says how to install it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evaluate
from agents.errors import TournamentError
from agents.evaluation.eval_config import EvalConfig, SettingError, check_setting
from agents.evaluation.tournament import run_tournament

KILL_PLUGIN = '''"""A test agent: greedy, except that the first time it acts in a Ray worker it kills that worker."""
import os
from pathlib import Path

from agents.base import register_agent
from agents.baselines.greedy import GreedyAgent

HERE = Path(__file__).parent


class KillOnce(GreedyAgent):
    def act(self, batch):
        if os.getpid() != int((HERE / "driver.pid").read_text()):  # never the test process itself
            try:
                fd = os.open(HERE / "killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass  # killed once already: this is the retry, play on
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os._exit(1)  # the worker process dies mid-task, as if killed
        return super().act(batch)


@register_agent("killonce", "greedy that kills its Ray worker process once (tests/test_ray.py)")
def _make(rules, seed=None):
    return KillOnce(rules, seed)
'''


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ray_plugin")
    (d / "scopa_killonce_plugin.py").write_text(KILL_PLUGIN)
    (d / "driver.pid").write_text(str(os.getpid()))
    return d


@pytest.fixture(scope="module")
def cluster(plugin_dir: Path) -> Iterator[str]:
    """A head node and a second node (one CPU each) on this machine, this process connected; yields the address."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(plugin_dir), *([saved] if saved else [])])  # the nodes' workers
    sys.path.insert(0, str(plugin_dir))  # this process (the --workers 1 reference runs)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        c.add_node(num_cpus=1)
        ray.init(address=c.address, include_dashboard=False, log_to_driver=False)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        yield str(c.address)
    finally:
        ray.shutdown()
        c.shutdown()
        sys.path.remove(str(plugin_dir))
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def _same_results(a: Path, b: Path) -> None:
    ra, rb = (json.loads((p / "results.json").read_text()) for p in (a, b))
    assert ra["status"] == rb["status"] == "complete"
    for key in ("pairings", "ratings", "agents", "deals", "games", "sprt"):
        assert ra[key] == rb[key], key
    for name in ("pairings.csv", "crosstable.csv", "ratings.csv"):
        assert (a / name).read_text() == (b / name).read_text(), name


def test_tournament_on_two_nodes_equals_one_worker(cluster: str, tmp_path: Path) -> None:
    common = ["--agents", "random", "greedy", "expert", "--hands", "24", "--batch", "4", "--seed", "11"]
    common += ["--bootstrap", "30", "--no-plot", "--quiet", "--no-progress"]
    out1, outr = tmp_path / "one", tmp_path / "ray"
    assert evaluate.main([*common, "--workers", "1", "--out", str(out1), "--records", str(tmp_path / "1.jsonl")]) == 0
    argv = [*common, "--ray", cluster, "--workers", "0", "--out", str(outr), "--records", str(tmp_path / "r.jsonl")]
    assert evaluate.main(argv) == 0
    _same_results(out1, outr)
    assert (tmp_path / "1.jsonl").read_text() == (tmp_path / "r.jsonl").read_text()  # records in schedule order
    res = json.loads((outr / "results.json").read_text())
    assert res["config"]["ray"] == cluster and res["speed"]["workers"] == 2  # both nodes' CPUs


def test_sprt_on_ray_decides_as_one_worker(cluster: str) -> None:
    cfg = {"gauntlet": "expert", "agents": ["random"], "deals": 400, "batch": 20, "sprt": (0, 100), "bootstrap": 0}
    one = run_tournament(EvalConfig(**cfg, workers=1))
    on_ray = run_tournament(EvalConfig(**cfg, workers=2, ray=cluster))
    assert one.sprt is not None and on_ray.sprt is not None
    assert one.sprt.decision == on_ray.sprt.decision != "inconclusive"
    assert np.array_equal(one.pairings[0].half_points, on_ray.pairings[0].half_points)


def test_killed_worker_is_retried_and_results_are_identical(cluster: str, plugin_dir: Path, tmp_path: Path) -> None:
    common = ["--agents", "killonce", "random", "--hands", "16", "--batch", "4", "--seed", "5", "--bootstrap", "0"]
    common += ["--plugin", "scopa_killonce_plugin", "--no-plot", "--quiet", "--no-progress"]
    out1, outr = tmp_path / "one", tmp_path / "ray"
    assert evaluate.main([*common, "--workers", "1", "--out", str(out1)]) == 0
    assert not (plugin_dir / "killed").exists()  # the test process never kills itself
    assert evaluate.main([*common, "--ray", cluster, "--out", str(outr)]) == 0
    assert (plugin_dir / "killed").exists(), "no worker was killed: the test proves nothing"
    killed_pid = int((plugin_dir / "killed").read_text())
    assert killed_pid != os.getpid()
    _same_results(out1, outr)


def test_teacher_data_on_ray_is_identical(cluster: str) -> None:
    from agents.training.imitation import collect_teacher_data

    # random: a teacher that draws from its generator, so the batches' seeding matters
    here = collect_teacher_data("classic", "random", num_hands=40, seed=2, batch=8)
    seen: list[int] = []
    there = collect_teacher_data("classic", "random", num_hands=40, seed=2, batch=8, ray=cluster, progress=seen.append)
    for name in ("obs", "mask", "action", "ret"):
        assert np.array_equal(getattr(here, name), getattr(there, name)), name
    assert sum(seen) == 40


def test_unknown_agent_on_ray_is_a_clean_error(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.base import register_agent
    from agents.baselines.greedy import GreedyAgent

    @register_agent("only_in_main_ray_test")
    def _make(rules: Any, seed: int | None = None) -> GreedyAgent:
        return GreedyAgent(rules, seed)

    argv = ["--agents", "only_in_main_ray_test", "random", "--hands", "4", "--ray", cluster, "--bootstrap", "0"]
    assert evaluate.main([*argv, "--out", str(tmp_path / "o"), "--no-progress", "--quiet", "--no-plot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("evaluate.py: error: ") and "--plugin" in err[-1], err


def test_ray_addresses_are_checked() -> None:
    for good, norm in (("local", "local"), ("AUTO", "auto"), ("127.0.0.1:6379", None), ("ray://head:10001", None)):
        assert check_setting("ray", good) == (norm or good)
    assert check_setting("ray", None) is None
    for bad in ("", "nowhere", "host:", ":6379", 5, ["local"]):
        with pytest.raises(SettingError, match=r"^ray: "):
            check_setting("ray", bad)


def test_without_ray_the_option_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as when it is not installed
    out = tmp_path / "out"
    argv = ["--agents", "random", "greedy", "--hands", "4", "--ray", "local", "--out", str(out), "--no-progress"]
    assert evaluate.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("evaluate.py: error: ") and "pip install" in err[0], err
    assert not out.exists()  # refused before anything was written
    with pytest.raises(TournamentError, match="pip install"):
        from agents.training.imitation import collect_teacher_data

        collect_teacher_data("classic", "greedy", 4, ray="local")
    # and the rest works without it
    assert run_tournament(EvalConfig(agents=["random", "greedy"], deals=4, workers=1, bootstrap=0)).status == "complete"


LOCAL_PLUGIN = """from agents.base import register_agent
from agents.baselines.greedy import GreedyAgent


@register_agent("greedy_from_cwd", "greedy, registered by a plugin module in the working folder")
def _make(rules, seed=None):
    return GreedyAgent(rules, seed)
"""


def test_ray_local_starts_ray_here_and_finds_plugins_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--ray local`` in a fresh process: a one-CPU Ray instance started and stopped by the command, its workers
    importing a plugin module that only the command's import path holds (as the process pool's do)."""
    pytest.importorskip("ray")
    import subprocess

    (tmp_path / "cwd_plugin_mod.py").write_text(LOCAL_PLUGIN)
    common = ["--agents", "greedy_from_cwd", "random", "--hands", "8", "--batch", "4", "--seed", "9"]
    common += ["--bootstrap", "0"]
    common += ["--plugin", "cwd_plugin_mod", "--no-plot", "--quiet", "--no-progress"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert evaluate.main([*common, "--workers", "1", "--out", "one"]) == 0
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTHONPATH")}
    proc = subprocess.run(  # python -m: the working folder is on this process's import path, not on PYTHONPATH
        [sys.executable, "-m", "evaluate", *common, "--ray", "local", "--workers", "1", "--out", "ray"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    _same_results(tmp_path / "one", tmp_path / "ray")


def test_an_address_where_nothing_answers_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "out"
    argv = ["--agents", "random", "greedy", "--hands", "4", "--ray", f"127.0.0.1:{port}", "--out", str(out)]
    assert evaluate.main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("evaluate.py: error: nothing answers at the Ray address"), err
    assert not out.exists()


def _tiny_policy(seed: int = 3) -> Any:
    """A small untrained MaskablePPO policy (smoke-config shape) with seeded weights: the learner of an evaluation."""
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from scopa_env.engine import observation
    from scopa_env.rules import get_rules

    rules = get_rules("classic")
    torch.manual_seed(seed)
    obs = spaces.Box(low=-np.inf, high=np.inf, shape=(observation.observation_size(rules),), dtype=np.float32)
    return MaskableActorCriticPolicy(
        obs, spaces.Discrete(rules.num_cards), lambda _: 0.0, net_arch=[32, 32], activation_fn=torch.nn.ReLU
    )


def test_trainer_evaluation_on_ray_is_identical(cluster: str) -> None:
    """The learner's weights sent as arrays, rebuilt on the workers, the opponents built from their specs: the same
    margins, interval and win rate as ``duplicate_eval(..., chunk=...)`` in this process, chunk by chunk."""
    from agents.base import make_agent
    from agents.nets.checkpoint import NeuralPolicy
    from agents.training.duplicate_eval import duplicate_eval, duplicate_eval_on_ray

    policy = _tiny_policy()
    specs = ["random", "greedy"]
    on_ray = duplicate_eval_on_ray(cluster, "classic", policy, "ReLU", specs, deals=30, seed=11, chunk=8)
    for spec, there in zip(specs, on_ray, strict=True):
        me = NeuralPolicy.from_sb3_policy(policy, "classic", name="learner")
        here = duplicate_eval("classic", me, make_agent(spec, "classic", 11), 30, 11, chunk=8)
        assert (here.opponent, here.deals, here.hands) == (there.opponent, there.deals, there.hands) == (spec, 30, 60)
        for field in ("margin", "low", "high", "win_rate"):
            assert getattr(here, field) == getattr(there, field), (spec, field)
    # a deterministic opponent plays the same moves in one batch: the numbers of an evaluation without Ray
    me = NeuralPolicy.from_sb3_policy(policy, "classic", name="learner")
    whole = duplicate_eval("classic", me, make_agent("greedy", "classic", 11), 30, 11)
    assert (whole.margin, whole.low, whole.win_rate) == (on_ray[1].margin, on_ray[1].low, on_ray[1].win_rate)
    with pytest.raises(TournamentError, match="nope"):
        duplicate_eval_on_ray(cluster, "classic", policy, "ReLU", ["nope"], deals=4, names=["nope"])


def test_train_with_ray_plays_warm_start_and_evaluations_there(cluster: str, tmp_path: Path) -> None:
    """``train.py --ray ADDRESS``: the warm start's teacher games and the evaluations on the cluster, with the numbers
    of a run in one process, against a stochastic eval opponent too (both play the same seeded chunks)."""
    import train

    common = ["--config", "smoke", "--total-steps", "1024", "--eval-opponents", "random", "greedy"]
    common += ["--eval-deals", "120"]
    common += ["--no-progress", "--name", "r"]
    assert train.main([*common, "--run-root", str(tmp_path / "here")]) == 0
    assert train.main([*common, "--run-root", str(tmp_path / "ray"), "--ray", cluster]) == 0
    (here,), (there,) = (list((tmp_path / d).iterdir()) for d in ("here", "ray"))
    assert f"ray: '{cluster}'" in (there / "config.yaml").read_text()
    a, b = (json.loads((d / "pretrain.json").read_text()) for d in (here, there))
    assert (a["decisions"], a["accuracy"]) == (b["decisions"], b["accuracy"])  # the same teacher data, same fit
    evals = [[json.loads(line) for line in (d / "eval.jsonl").read_text().splitlines()] for d in (here, there)]
    assert [e["step"] for e in evals[0]] == [e["step"] for e in evals[1]] and len(evals[0]) >= 2
    for x, y in zip(*evals, strict=True):
        for opponent in ("random", "greedy"):
            for field in ("margin", "low", "high", "win_rate", "hands"):
                assert x["margins"][opponent][field] == y["margins"][opponent][field], (opponent, field)


def test_train_ray_setting_without_ray_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import train

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as when it is not installed
    runs = tmp_path / "runs"
    assert train.main(["--config", "smoke", "--ray", "local", "--run-root", str(runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("train.py: error: ray: ") and "pip install 'scopa[ray]'" in err[0]
    assert not runs.exists()  # refused before the run directory was made
