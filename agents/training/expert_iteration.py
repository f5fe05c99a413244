"""Expert iteration: the network learns from the search that uses it (``az``), and the search improves with it.

One iteration:

1. **export** the current network as a torch-free bot directory (``nets/iter_K``);
2. **self-play with search**: the teacher (``az:path=nets/iter_K,...``: sampled-deal search with the network's
   rollouts and prior) plays every seat of ``hands`` fresh hands, on ``workers`` processes (both cores); every
   decision gives ``(observation, mask, the search's action, the hand's margin for the acting side)``;
3. **distil**: the actor is fitted to the search's actions (cross-entropy) and the critic to the margins (mean
   squared error) on the newest ``window`` iterations of data;
4. **evaluate** the network alone (argmax, no search) on the same fixed duplicate deals every iteration against
   ``eval_opponents``; ``eval.jsonl`` and ``eval.png`` as ``train.py`` writes them, ``x`` = positions distilled.

The run directory holds everything needed to resume (``--resume RUN``): ``state.json`` (iterations done, wall
clock), ``last.zip`` (a ``train.py``-format checkpoint: weights and JSON metadata only, loaded without running code),
the data of the window (``data/iter_K.npz``) and the exported networks. ``epochs: 0`` only collects: the network
stays as it started (pure DAgger labelling with ``explore``) and every iteration's data is kept, for
``python -m agents.training.distil``; ``eval_deals: 0`` skips the evaluations. ``max_minutes`` stops a leg after the
iteration that crosses it, so long recipes run as resumed legs of at most 2.5 hours (``configs/exit.yaml``).
Ctrl-C, SIGTERM and SIGHUP stop a leg (exit status 130, 143, 129) keeping every finished iteration; the one that
was running is redone by the next leg.

    python -m agents.training.expert_iteration --config configs/exit.yaml               # a leg
    python -m agents.training.expert_iteration --resume runs/classic__exit__0           # the next leg
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import io
import json
import multiprocessing as mp
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from agents.base import path_kind
from agents.cli.atomic import write_atomic
from agents.cli.settings import (
    ConfigError,
    YamlFileError,
    add_field_options,
    cli_overrides,
    config_yaml,
    load_config,
    read_yaml_mapping,
    setting,
    short_repr,
)
from agents.cli.shell import python_command
from agents.cli.signals import StopSignals, exit_status, signal_name
from scopa_env.rules import get_rules

if TYPE_CHECKING:
    from agents.nets.weights import Layers

__all__ = ["ExItConfig", "ExpertIteration", "main"]

CONFIG_FIX = "give a YAML file of expert-iteration settings, e.g. configs/exit.yaml"
"""What a bad ``--config`` file's message asks for instead (``YamlFileError.describe``)."""
DATA_FIELDS = ("obs", "mask", "action", "ret", "values")
"""The arrays of an iteration's data (``data/iter_K.npz``); ``values`` (the teacher's action values) only with
``soft_temperature`` or ``explore``."""
DATA_EXPANSION = 256
"""How many times its size (plus 1 MiB) an iteration's data file may expand when read (``weights.read_npz``): its
observations compress 15-30 times; a zip bomb expands a thousandfold."""


@dataclasses.dataclass
class ExItConfig:
    """Settings of an expert-iteration run (``python -m agents.training.expert_iteration --help``)."""

    variant: str = setting("classic", "variant to train")
    init: str = setting(
        "agents/bots/classic", "network to start from: a bot export directory or a train.py checkpoint (.zip)"
    )
    teacher: str = setting(
        "az:worlds=16,prior=0.5",
        "the search that labels the positions: an az spec (path= is set to the network) or a pimc spec",
    )
    soft_temperature: float = setting(
        0.0,
        "0: fit the actor to the teacher's moves (argmax); T > 0: to the softmax at T of the teacher's action "
        "values (its mean margins plus prior: the search's calculation, not only its choice)",
    )
    explore: float = setting(
        0.0, "share of the self-play decisions played by the current network instead of the teacher (DAgger)"
    )
    iterations: int = setting(6, "iterations in all (a leg may stop earlier: max_minutes)")
    hands: int = setting(2000, "hands of search self-play per iteration (fresh deals every iteration)")
    chunk: int = setting(50, "hands per self-play task (the unit of work of a worker)")
    workers: int = setting(2, "processes playing the self-play (1: this process)")
    window: int = setting(2, "newest iterations of data the network is fitted on")
    epochs: int = setting(
        2, "passes over the window's data per iteration (0: collect only: the network stays fixed, all data kept)"
    )
    learning_rate: float = setting(3e-4, "Adam learning rate of the distillation")
    batch_size: int = setting(1024, "rows per gradient step")
    value_coef: float = setting(0.5, "weight of the critic's loss")
    eval_deals: int = setting(400, "duplicate deals of each evaluation (both seatings; 0: no evaluation)")
    eval_opponents: list[str] = setting(
        default_factory=lambda: ["greedy", "expert", "pimc"], doc="opponents of the network in every evaluation"
    )
    eval_endgame: int = setting(0, "the evaluated network plays the last N plies exactly (0: the network alone)")
    seed: int = setting(0, "seed of the self-play deals (iteration K uses its own range) and of the training")
    max_minutes: float = setting(150.0, "stop this leg after the iteration that passes this many minutes")
    run_root: str = setting("runs", "folder of the run directories")
    name: str = setting("exit", "run name: the run directory is RUN_ROOT/<variant>__<name>__<seed>")
    progress: bool = setting(True, "print a line per stage")

    def __post_init__(self) -> None:
        try:
            get_rules(self.variant)
        except ValueError as e:
            text = str(e) if len(self.variant) <= 60 else f"unknown variant {short_repr(self.variant)}"
            raise ConfigError(f"variant: {text}") from None
        if not self.name or not all(c.isalnum() or c in "-_." for c in self.name) or "__" in self.name:
            raise ConfigError(  # the run directory's name, and part of the teacher's path= spec
                f"name must be letters, digits, '-', '_' or '.' without '__', got {short_repr(self.name)}"
            )
        for key in ("iterations", "hands", "chunk", "workers", "window", "batch_size"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("epochs", "eval_deals"):
            if getattr(self, key) < 0:
                raise ConfigError(
                    f"{key} must be >= 0 (0: {'collect only' if key == 'epochs' else 'no evaluation'}), "
                    f"got {getattr(self, key)}"
                )
        if self.epochs == 0 and not self.labels:
            raise ConfigError("epochs: 0 collects the teacher's action values: set soft_temperature > 0 or explore > 0")
        if self.learning_rate <= 0 or self.max_minutes <= 0 or self.value_coef < 0:
            raise ConfigError("learning_rate and max_minutes must be > 0 and value_coef >= 0")
        if self.teacher.split(":", 1)[0] not in ("az", "pimc"):
            raise ConfigError(
                "teacher must be an az or a pimc spec (az:worlds=16,..., pimc:worlds=256,...), got "
                f"{short_repr(self.teacher)}"
            )
        if self.teacher.startswith("az") and "path=" in self.teacher:
            raise ConfigError("teacher: leave path= out; the run sets it to the current network every iteration")
        if self.soft_temperature < 0 or not 0.0 <= self.explore <= 1.0:
            raise ConfigError(
                f"soft_temperature must be >= 0 and explore in [0, 1], got {self.soft_temperature} and {self.explore}"
            )

    @property
    def labels(self) -> bool:
        """Whether the self-play keeps the teacher's action values (soft targets) or plays the network's moves."""
        return self.soft_temperature > 0 or self.explore > 0


# --------------------------------------------------------------------------------------------------- networks


def _init_policy(cfg: ExItConfig) -> Any:
    """The SB3 actor-critic policy to train: the actor from ``cfg.init``; the critic from it too when it has one.

    ``cfg.init`` is read by ``agents.nets.weights``: a checkpoint's state dict (actor and critic), or a bot's network
    (``open_network``: the actor only, the critic then starts with the actor's hidden sizes)."""
    from agents.nets.checkpoint import policy_from_layers, policy_from_weights
    from agents.nets.mlp import ACTIVATIONS
    from agents.nets.weights import check_meta, open_network, read_activation, read_checkpoint_meta, read_weights

    rules = get_rules(cfg.variant)
    src = Path(cfg.init)
    if path_kind(src) == "checkpoint":
        meta = read_checkpoint_meta(src)
        check_meta(meta, rules, src)
        return policy_from_weights(read_weights(src), read_activation(src, meta), rules, src)
    bot = open_network(rules, src)  # its layers are (weight (in, out), bias)
    return policy_from_layers(rules, [(w.T, b) for w, b in bot.layers], ACTIVATIONS[bot.activation].torch)


def actor_layers(policy: Any) -> tuple[Layers, str]:
    """The actor as ``(weight (out, in), bias)`` layers and the bot's activation name."""
    from agents.nets.checkpoint import ActorNet
    from agents.nets.mlp import extract_mlp

    return extract_mlp(ActorNet.from_sb3(policy))


def activation_name(policy: Any) -> str:
    """The ``train.py`` config name of the policy's activation (``relu``, ``tanh``, ...)."""
    from agents.nets.mlp import TORCH_ACTIVATIONS

    cls = type(policy.activation_fn()).__name__ if isinstance(policy.activation_fn, type) else "ReLU"
    return TORCH_ACTIVATIONS.get(cls, cls.lower())


def save_policy_checkpoint(policy: Any, path: Path, meta: dict[str, Any]) -> Path:
    """A ``train.py``-format checkpoint holding only ``policy.pth`` (weights) and ``scopa_meta.json``."""
    import torch

    from agents.nets.weights import META_NAME, POLICY_MEMBER

    weights = io.BytesIO()
    torch.save(policy.state_dict(), weights)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(POLICY_MEMBER, weights.getvalue())
        archive.writestr(META_NAME, json.dumps(meta, indent=1, sort_keys=True, default=str))
    return write_atomic(path, buf.getvalue())


# --------------------------------------------------------------------------------------------------- self-play


def iteration_first_deal(seed: int, k: int) -> int:
    """The deal seed of hand 0 of iteration ``k``'s self-play in a run of ``seed`` (hand ``h`` is this plus ``h``;
    ``agents.training.label_store`` replays them)."""
    return seed * 1_000_003 + (k + 1) * 10_000_000


def _selfplay_chunk(
    variant: str, teacher: str, seed: int, lo: int, hi: int, student: str | None = None, explore: float = 0.0
) -> tuple[npt.NDArray[Any], ...]:
    """Hands ``lo`` to ``hi - 1`` of one iteration's self-play (a worker task; the teacher is cached per process).

    With ``student`` (an agent spec) the teacher's action values are kept as well (``search_labels``) and the
    student plays a share ``explore`` of the decisions."""
    if student is not None:
        from agents.training.search_labels import labelled_hands

        return labelled_hands(variant, teacher, student, explore, seed, lo, hi)
    from agents.training.imitation import teacher_batch_remote

    return teacher_batch_remote(variant, teacher, seed, lo, hi)


# --------------------------------------------------------------------------------------------------- the run


class ExpertIteration:
    """An expert-iteration run in ``run_dir`` (new, or resumed from its ``state.json``)."""

    def __init__(self, cfg: ExItConfig, run_dir: Path, stop: StopSignals | None = None) -> None:
        self.stop = stop
        """The command's stop signals (``agents.cli.signals.StopSignals``), checked between the stages of an iteration,
        because a signal handler's exception can be lost."""
        self.cfg = cfg
        self.rules = get_rules(cfg.variant)
        self.run_dir = run_dir
        self.state_path = run_dir / "state.json"
        if self.state_path.exists():
            self.state: dict[str, Any] = json.loads(self.state_path.read_text())
        else:
            self.state = {"iteration": 0, "positions": 0, "wall_s": 0.0}

    def _check_stop(self) -> None:
        if self.stop is not None:
            self.stop.check()

    def log(self, text: str) -> None:
        if self.cfg.progress:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    def _policy(self) -> Any:
        last = self.run_dir / "last.zip"
        if self.state["iteration"] > 0 and last.exists():
            return _init_policy(dataclasses.replace(self.cfg, init=str(last)))
        return _init_policy(self.cfg)

    def _export(self, policy: Any, k: int) -> Path:
        from agents.nets.bot import new_card, write_numpy_export

        layers, activation = actor_layers(policy)
        card = new_card(self.rules, layers, activation, name=f"{self.cfg.variant}-exit-{k}")
        return write_numpy_export(self.run_dir / "nets" / f"iter_{k}", card, layers, activation)

    def _selfplay(self, net_dir: Path, k: int) -> dict[str, npt.NDArray[Any]]:
        cfg = self.cfg
        teacher = cfg.teacher
        if teacher.startswith("az"):
            teacher = f"{teacher}{',' if ':' in teacher else ':'}path={net_dir}"
        seed = iteration_first_deal(cfg.seed, k)
        starts = list(range(0, cfg.hands, cfg.chunk))
        extra: tuple[Any, ...] = ()
        if cfg.labels:
            extra = (f"bot:path={net_dir},prefer=numpy,endgame={cfg.eval_endgame}", cfg.explore)
        args = [(cfg.variant, teacher, seed, lo, min(cfg.hands, lo + cfg.chunk), *extra) for lo in starts]
        t0 = time.perf_counter()
        from tqdm import tqdm

        bar = tqdm(total=cfg.hands, desc=f"iteration {k} search self-play", unit="hand", disable=not cfg.progress)
        chunks = []
        with bar:
            if cfg.workers == 1:
                results: Any = (_selfplay_chunk(*a) for a in args)
                for a, chunk in zip(args, results, strict=True):
                    chunks.append(chunk)
                    bar.update(a[4] - a[3])
                    self._check_stop()
            else:
                ctx = mp.get_context("spawn")
                with cf.ProcessPoolExecutor(cfg.workers, mp_context=ctx) as pool:
                    try:
                        for a, chunk in zip(args, pool.map(_selfplay_chunk, *zip(*args, strict=True)), strict=True):
                            chunks.append(chunk)
                            bar.update(a[4] - a[3])
                            self._check_stop()
                    except BaseException:  # stopped: drop the queued chunks (the running ones end on their own)
                        pool.shutdown(wait=False, cancel_futures=True)
                        raise
        data = {name: np.concatenate([c[i] for c in chunks]) for i, name in enumerate(DATA_FIELDS[: len(chunks[0])])}
        n = len(data["action"])
        self.log(
            f"iteration {k}: {cfg.hands} hands of search self-play, {n} decisions, {time.perf_counter() - t0:.0f} s"
        )
        return data

    def _fit(self, policy: Any, k: int) -> dict[str, float]:
        from agents.nets.weights import read_npz
        from agents.training.imitation import TeacherData, pretrain_policy

        cfg = self.cfg
        parts = []
        for j in range(max(0, k - cfg.window + 1), k + 1):
            path = self.run_dir / "data" / f"iter_{j}.npz"
            if path.exists():
                try:  # data only, every size checked first (a resumed run's files may be damaged)
                    z = read_npz(path, max_ratio=DATA_EXPANSION)
                except (OSError, ValueError) as e:
                    raise ConfigError(f"{path}: cannot be read as this run's data file: {e}") from None
                parts.append({name: z[name] for name in DATA_FIELDS if name in z})
        data = TeacherData(
            np.concatenate([p["obs"] for p in parts]).astype(np.float32),
            np.concatenate([p["mask"] for p in parts]),
            np.concatenate([p["action"] for p in parts]).astype(np.int64),
            np.concatenate([p["ret"] for p in parts]).astype(np.float32),
        )
        targets = None
        if cfg.soft_temperature > 0:
            from agents.training.search_labels import soft_targets

            if any("values" not in p for p in parts):
                raise ConfigError("soft_temperature > 0 needs the teacher's action values; this window has none")
            values = np.concatenate([p["values"] for p in parts])
            targets = soft_targets(values, data.mask, data.action, cfg.soft_temperature)
        t0 = time.perf_counter()
        stats = pretrain_policy(
            policy,
            data,
            targets=targets,
            epochs=cfg.epochs,
            batch_size=cfg.batch_size,
            learning_rate=cfg.learning_rate,
            value_coef=cfg.value_coef,
            seed=cfg.seed + k,
        )
        self.log(
            f"iteration {k}: fitted {len(data)} rows x {cfg.epochs} epochs in {time.perf_counter() - t0:.0f} s "
            f"(policy loss {stats['policy_loss']:.3f}, accuracy {stats['accuracy']:.3f}, "
            f"value loss {stats['value_loss']:.3f})"
        )
        return {**stats, "rows": float(len(data))}

    def _evaluate(self, net_dir: Path, k: int) -> dict[str, Any]:
        from agents.base import make_agent
        from agents.training.duplicate_eval import EVAL_CHUNK, duplicate_eval

        cfg = self.cfg
        margins: dict[str, Any] = {}
        if cfg.eval_deals == 0:
            return margins
        agent = make_agent(f"bot:path={net_dir},prefer=numpy,endgame={cfg.eval_endgame}", self.rules, seed=cfg.seed)
        for spec in cfg.eval_opponents:
            opponent = make_agent(spec, self.rules, seed=cfg.seed)
            t0 = time.perf_counter()
            r = duplicate_eval(self.rules, agent, opponent, cfg.eval_deals, seed=77_000_000, chunk=EVAL_CHUNK)
            self.log(f"iteration {k}: {cfg.eval_deals} deals against {spec} ({time.perf_counter() - t0:.0f} s)")
            margins[spec] = dataclasses.asdict(r)
            margins[spec]["opponent"] = spec
        summary = ", ".join(f"{s} {m['margin']:+.3f} [{m['low']:+.2f}, {m['high']:+.2f}]" for s, m in margins.items())
        self.log(f"iteration {k}: network alone vs {summary}")
        return margins

    def run(self) -> int:
        from agents.training.curves import plot_eval_curves, read_eval_log
        from agents.training.run_dir import append_jsonl

        cfg = self.cfg
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.yaml").write_text(config_yaml(cfg))
        leg_start = time.perf_counter()
        wall0 = float(self.state["wall_s"])
        policy = self._policy()
        exported: Path | None = None  # the export of the policy as it is now, when this leg already wrote it
        if self.state["iteration"] == 0 and not (self.run_dir / "eval.jsonl").exists():
            exported = net = self._export(policy, 0)
            record = {"step": 0, "iteration": 0, "elapsed_s": wall0, "margins": self._evaluate(net, 0)}
            append_jsonl(self.run_dir / "eval.jsonl", record)
        while self.state["iteration"] < cfg.iterations:
            k = int(self.state["iteration"])
            net = exported if exported is not None else self._export(policy, k)  # the policy as it is now
            data = self._selfplay(net, k)
            self._check_stop()
            (self.run_dir / "data").mkdir(exist_ok=True)
            buf = io.BytesIO()  # written whole or not at all: a leg stopped mid-write leaves no damaged iter_K.npz
            np.savez_compressed(buf, **data)  # type: ignore[arg-type]
            write_atomic(self.run_dir / "data" / f"iter_{k}.npz", buf.getvalue())
            positions = int(self.state["positions"]) + len(data["action"])
            if cfg.epochs == 0:  # collect only: the network stays as it is, and every iteration's data is kept
                fit: dict[str, float] = {"rows": float(len(data["action"]))}
                exported = new_net = net
            else:
                stale = self.run_dir / "data" / f"iter_{k - cfg.window}.npz"
                stale.unlink(missing_ok=True)
                fit = self._fit(policy, k)
                exported = new_net = self._export(policy, k + 1)
            elapsed = wall0 + time.perf_counter() - leg_start
            margins = self._evaluate(new_net, k + 1)
            self._check_stop()  # a signal whose exception was lost: this iteration is not kept either
            record = {"step": positions, "iteration": k + 1, "elapsed_s": elapsed, "fit": fit, "margins": margins}
            # last.zip and state.json are written together, after everything else of the iteration: a leg stopped
            # before them resumes this iteration from the network it started with (never fitting it twice).
            save_policy_checkpoint(policy, self.run_dir / "last.zip", self._meta(policy, positions, k + 1))
            self.state = {"iteration": k + 1, "positions": positions, "wall_s": elapsed}
            write_atomic(self.state_path, json.dumps(self.state, indent=1).encode())
            append_jsonl(self.run_dir / "eval.jsonl", record)
            if margins:
                plot_eval_curves(
                    read_eval_log(self.run_dir / "eval.jsonl"),
                    self.run_dir / "eval.png",
                    title=f"{self.run_dir.name}: network alone",
                )
            if (time.perf_counter() - leg_start) / 60 >= cfg.max_minutes and self.state["iteration"] < cfg.iterations:
                self.log(f"leg over ({cfg.max_minutes:g} minutes); resume with --resume {self.run_dir}")
                return 0
        self.log(f"done: {cfg.iterations} iterations; the network is {self.run_dir / 'last.zip'}")
        return 0

    def _meta(self, policy: Any, positions: int, iteration: int) -> dict[str, Any]:
        from agents.nets.checkpoint import checkpoint_meta

        config = {"activation": activation_name(policy), "algorithm": "expert-iteration"}
        return checkpoint_meta(
            self.rules, positions, kind="last", iteration=iteration, config=config, exit=dataclasses.asdict(self.cfg)
        )


# --------------------------------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m agents.training.expert_iteration",
        description="Expert iteration: distil the az search (network rollouts and prior) back into the network.",
    )
    p.add_argument("--config", metavar="FILE.yaml", help="read settings from YAML (e.g. configs/exit.yaml)")
    p.add_argument("--resume", metavar="RUN", help="continue the run in this directory (its config.yaml is used)")
    add_field_options(p.add_argument_group("settings"), ExItConfig)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        values: dict[str, Any] = {}
        source = "defaults"
        if args.resume:
            run = Path(args.resume)
            if not (run / "config.yaml").is_file():
                raise ConfigError(f"--resume {run}: no config.yaml there; give a run directory of this command")
            values, source = read_yaml_mapping(run / "config.yaml"), str(run / "config.yaml")
        elif args.config:
            values, source = read_yaml_mapping(args.config), args.config
        cfg = load_config(ExItConfig, values, source, cli_overrides(ExItConfig, args))
    except YamlFileError as e:
        fix = "give a run directory of this command" if args.resume else CONFIG_FIX
        print(f"error: {e.describe(fix, 'run config' if args.resume else 'config file')}", file=sys.stderr)
        return 2
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    run_dir = Path(args.resume) if args.resume else Path(cfg.run_root) / f"{cfg.variant}__{cfg.name}__{cfg.seed}"
    if not args.resume and (run_dir / "state.json").exists():
        print(f"error: {run_dir} already holds a run; continue it with --resume {run_dir}", file=sys.stderr)
        return 2
    from agents.cli.threads import pin_blas_threads

    pin_blas_threads()  # one BLAS thread per process, inherited by the self-play workers
    try:
        with StopSignals() as stop:  # Ctrl-C, SIGTERM, SIGHUP
            return ExpertIteration(cfg, run_dir, stop=stop).run()
    except ConfigError as e:  # a damaged file of the run (its data, a network): the saved iterations are kept
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        state = run_dir / "state.json"
        done = json.loads(state.read_text())["iteration"] if state.is_file() else 0
        status = exit_status(e)
        print(
            f"interrupted ({signal_name(status - 128)}): {done} iteration(s) of {run_dir} are saved; the next "
            f"leg redoes the one that was running: "
            f"{python_command('-m', 'agents.training.expert_iteration', '--resume', Path(run_dir))}",
            file=sys.stderr,
        )
        return status


if __name__ == "__main__":
    sys.exit(main())
