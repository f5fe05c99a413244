"""Train a Scopa bot by self-play: MaskablePPO on the batched vector env against a PFSP league.

    python train.py                                         # configs/default.yaml: classic, ~20 min on 2 CPU cores
    python train.py --config configs/strong.yaml --total-steps 2e7
    python train.py --variant scopa-a-quattro --config configs/quattro.yaml
    python train.py --resume runs/classic__default__0__20260101-120000
    python train.py --help                                  # every option, its meaning and default

The learner (sb3-contrib ``MaskablePPO``, ``MlpPolicy``) plays ``num_envs`` games at once in one
``scopa_env.gym.ScopaVecEnv``. Its opponents come from a league (``agents.league``): the baselines plus frozen
snapshots of the learner taken every ``snapshot_every`` steps, sampled with priority to those it does not beat yet
(prioritized fictitious self-play). In team variants the learner plays every seat of its side.

Each run writes ``runs/<variant>__<name>__<seed>__<time>/``:

======================  ============================================================================================
``config.yaml``         the resolved config (every field)
``version.json``        code version (git commit, dirty flag and diff hash), library versions, command line
``history.jsonl``       one line per start, resume, interrupt and finish
``events.out.tfevents``  TensorBoard: ``charts/`` (steps/s, episode results), ``losses/``, ``league/``, ``eval/``
``eval.jsonl``          one line per evaluation: step, wall-clock seconds, margins against each eval opponent
``last.zip``            the latest checkpoint, with the state needed to resume the run exactly
``best.zip``            the checkpoint with the best evaluation margin against the last of ``eval_opponents``
``checkpoints/``        ``step_<steps>.zip`` every ``checkpoint_every`` steps (the newest ``keep_checkpoints``)
======================  ============================================================================================

Checkpoints are ``model.save`` zips plus ``scopa_meta.json`` (variant, observation version, steps, config, code
version), written atomically; ``make_agent("runs/<run>/best.zip", rules)`` plays them. Ctrl-C stops at the next
step and saves ``last.zip`` (as of the start of the current rollout) before exiting; ``--resume`` continues the
run with the same results as an uninterrupted one for the same seed, up to floating-point noise.
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import datetime as _dt
import hashlib
import inspect
import itertools
import json
import math
import os
import platform
import random
import signal
import subprocess
import sys
import textwrap
import time
import typing
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from agents import safe_state
from agents.base import AgentSpecError, Policy, make_agent
from agents.shaping import ShapedRewards, potential_coefficients
from scopa_env import core
from scopa_env.rules import Rules, get_rules

__all__ = [
    "ConfigError",
    "EvalResult",
    "RunDirError",
    "ShapedRewards",
    "TrainConfig",
    "Trainer",
    "build_parser",
    "config_from_dict",
    "duplicate_eval",
    "load_config",
    "main",
    "potential_coefficients",
]

ROOT = Path(__file__).resolve().parent


def _config_dir() -> Path:
    """The shipped configs: ``configs/`` beside this file in a checkout, else the installed ``scopa_configs``."""
    here = ROOT / "configs"
    if (here / "default.yaml").is_file():
        return here
    try:
        import scopa_configs  # type: ignore[import-not-found]  # configs/ as installed by pip

        return Path(scopa_configs.__file__).resolve().parent
    except ImportError:  # pragma: no cover - neither a checkout nor an install
        return here


CONFIG_DIR = _config_dir()
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"


def shipped_config(name: str) -> Path | None:
    """The shipped config called ``name`` (``strong``, ``strong.yaml``), or None."""
    stem = name.removesuffix(".yaml")
    path = CONFIG_DIR / f"{stem}.yaml"
    return path if stem and "/" not in stem and "\\" not in stem and path.is_file() else None


RESUME_MEMBER = "scopa_resume.npz"
"""Zip member of ``last.zip`` and the step checkpoints holding the env, league, random states and counters (for
``--resume``), written by ``agents.safe_state`` (plain data: reading it never runs code)."""
LEGACY_RESUME_MEMBER = "scopa_resume.pkl"
"""The pickle older versions wrote instead; refused (a pickle can run code when it is read)."""
MODEL_COUNTERS = (
    "_n_updates",
    "_episode_num",
    "_last_obs",
    "_last_episode_starts",
    "_last_original_obs",
    "ep_info_buffer",
    "ep_success_buffer",
)
"""The ``MaskablePPO`` attributes besides weights and optimizer that a resumed run restores."""
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""Signals that make the trainer save ``last.zip`` and exit (128 + the signal's number)."""
RESUMABLE_FIELDS = ("total_steps", "progress", "torch_threads")
"""Config fields a resumed run may change; the others must match the run's saved config."""


LIMITS = (
    ("num_envs", 1 << 20, "the vector env's limit"),
    ("eval_deals", 1_000_000, "each evaluation plays them all"),
    ("pretrain_hands", 10_000_000, "the warm start keeps every decision in memory"),
    ("max_snapshots", 1_000, "each snapshot is a copy of the network"),
    ("total_steps", 10**12, "more than any run can reach"),
    ("n_epochs", 1_000, "each PPO update would take hours"),
    ("pretrain_epochs", 1_000, "the warm start would take hours"),
    ("max_hands", 1_000_000, "a match never lasts that long"),
    ("torch_threads", 1_024, "more threads than any machine has"),
    ("win_rate_window", 10**9, "the league would never notice a change"),
    ("exact_endgame", 1_000, "no hand has that many plies"),
    ("snapshot_every", 10**12, "more than any run can reach"),
    ("eval_every", 10**12, "more than any run can reach"),
    ("checkpoint_every", 10**12, "more than any run can reach"),
    ("keep_checkpoints", 1_000_000, "each is a file of its own"),
    ("endgame_plies", 1_000, "no hand has that many plies"),
)
"""(field, largest value, why) for config fields whose size is only bounded by memory or time."""
MAX_ROLLOUT = 1 << 22
"""The largest ``num_envs * n_steps``."""


class ConfigError(ValueError):
    """A config file or option that is invalid: unknown key, bad value, or a conflict with a resumed run."""


class RunDirError(RuntimeError):
    """A run directory that cannot be created, written or resumed."""


class StopTraining(Exception):
    """Raised inside an evaluation when Ctrl-C asked the run to stop."""


# --------------------------------------------------------------------------------------------------- config


@dataclass
class TrainConfig:
    """Everything a training run depends on; ``configs/default.yaml`` spells out these defaults."""

    name: str = "default"
    """Run name: the second part of the run directory's name (letters, digits, - and _)."""
    variant: str = "classic"
    """Variant to train (scopa_env.rules.VARIANTS), e.g. classic, scopa-a-quattro, scopone-scientifico."""
    seed: int = 0
    """Seed of the network initialisation, the training games and the sampling (same seed, same run)."""
    total_steps: int = 12_000_000
    """Training steps (learner decisions, summed over all envs); scientific notation such as 2e7 is accepted."""
    device: str = "cpu"
    """Torch device for the learner: cpu, cuda or auto."""
    torch_threads: int = 1
    """Torch CPU threads of the learner (0 leaves torch's default)."""

    num_envs: int = 512
    """Games played at once in the batched vector env (one learner decision each per step)."""
    reward: str = "points"
    """points: each hand's margin (learner side minus best other side) at its end; match: +1/-1 per match."""
    episode: str = "hand"
    """hand: an episode is one hand (dense signal, fast); match: play to the variant's target."""
    max_hands: int = 100
    """Hands after which a match episode is cut off (episode=match only)."""
    learner_seat: str = "rotate"
    """Learner's seat: rotate (over episodes), random, or a seat number."""
    partner: str = "self"
    """Team variants: self (the learner plays every seat of its side) or an agent spec for its teammates."""

    n_steps: int = 64
    """PPO rollout length per env: each update uses num_envs * n_steps steps."""
    batch_size: int = 512
    """PPO minibatch size (must divide num_envs * n_steps)."""
    n_epochs: int = 2
    """PPO passes over each rollout."""
    learning_rate: float = 1e-3
    """Adam learning rate at the start."""
    lr_end_fraction: float = 0.2
    """Learning rate at the end as a fraction of learning_rate (linear in between; 1 keeps it constant)."""
    shaping: float = 1.0
    """Weight of the potential-based shaping reward (captured card values and scope, own side minus others; 0: off)."""
    gamma: float = 1.0
    """Discount factor (1: a hand's points count fully, whenever they come)."""
    gae_lambda: float = 0.5
    """GAE lambda (short: the shaped rewards carry the credit, the critic the rest; less variance)."""
    clip_range: float = 0.2
    """PPO clipping of the probability ratio."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    max_grad_norm: float = 0.5
    """Gradient norm clipping."""
    target_kl: float | None = None
    """Stop an update's epochs early when the KL divergence exceeds this (null: never)."""
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layer sizes of the policy and value networks (separate networks of this shape)."""
    activation: str = "relu"
    """Hidden activation: relu or tanh."""

    pretrain_teacher: str = "expert"
    """Agent spec whose play the policy imitates before self-play (warm start; '' or none: start from scratch)."""
    pretrain_hands: int = 30_000
    """Hands of teacher self-play recorded for the warm start (about 37 decisions each)."""
    pretrain_epochs: int = 4
    """Passes over the teacher's decisions (cross-entropy for the actor, returns for the critic)."""
    baselines: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """Agent specs that stay in the league for the whole run (e.g. random greedy expert)."""
    snapshot_every: int = 1_000_000
    """Steps between frozen snapshots of the learner added to the league."""
    max_snapshots: int = 6
    """Snapshots kept in the league (the oldest is dropped)."""
    snapshot_sample: bool = False
    """Snapshots sample their moves from the policy instead of playing its most probable move."""
    pfsp_power: float = 2.0
    """PFSP weight of an opponent the learner beats with rate p: (1 - p) ** pfsp_power."""
    pfsp_floor: float = 0.05
    """Smallest PFSP weight, so beaten opponents are still met now and then."""
    self_play_fraction: float = 0.2
    """Share of episodes played against the newest snapshot, whatever its PFSP weight."""
    win_rate_window: int = 4000
    """Episodes over which the league tracks the learner's win rate against each opponent."""
    snapshot_share: float = 1.0
    """Largest total share of episodes played against snapshots, self-play included (1: no cap)."""

    init_from: str = ""
    """A train.py checkpoint (same variant and net_arch) whose weights start the run; needs pretrain_teacher: none."""
    exact_endgame: int = 0
    """Solve open end games exactly when at most this many plies are left, in training and by checkpoints (0: off)."""
    endgame_coef: float = 0.0
    """Weight of the end-game distillation: -log P(a best move of the exact solver) on open end games (0: off)."""
    endgame_plies: int = 8
    """Open end games (every card known) with at most this many moves left are labelled by the solver."""
    endgame_fraction: float = 0.5
    """Share of the learner's open end-game decisions of each rollout that the solver labels."""

    eval_every: int = 1_000_000
    """Steps between evaluations on fixed duplicate deals."""
    eval_deals: int = 500
    """Deals per evaluation; each is played once per seat rotation (points per hand, 95% interval)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy", "expert"])
    """Agent specs evaluated against, weakest first: best.zip is chosen by the margin against the last one."""
    eval_seed: int = 1_000_000_000
    """First seed of the evaluation deals (disjoint from the training games)."""

    checkpoint_every: int = 1_000_000
    """Steps between checkpoints (checkpoints/step_<steps>.zip and last.zip)."""
    keep_checkpoints: int = 5
    """step_*.zip files kept in checkpoints/ (the newest)."""
    run_root: str = "runs"
    """Folder that holds the run directories."""
    progress: bool = True
    """Show a progress bar with steps per second and time left."""

    def __post_init__(self) -> None:
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ConfigError(msg)

        try:
            rules = get_rules(self.variant)
        except ValueError as e:
            raise ConfigError(f"variant: {e}") from None
        need(
            bool(self.name) and all(c.isalnum() or c in "-_." for c in self.name) and "__" not in self.name,
            f"name must be letters, digits, '-', '_' or '.' without '__', got {self.name!r}",
        )
        for key in ("total_steps", "num_envs", "n_steps", "batch_size", "n_epochs", "max_hands", "snapshot_every"):
            need(getattr(self, key) >= 1, f"{key} must be a positive integer, got {getattr(self, key)}")
        for key in ("eval_every", "eval_deals", "checkpoint_every", "keep_checkpoints", "win_rate_window"):
            need(getattr(self, key) >= 1, f"{key} must be a positive integer, got {getattr(self, key)}")
        need(self.max_snapshots >= 0, f"max_snapshots must be >= 0, got {self.max_snapshots}")
        for key, most, why in LIMITS:
            need(getattr(self, key) <= most, f"{key} must be at most {most:,} ({why}), got {getattr(self, key):,}")
        need(
            self.rollout_size <= MAX_ROLLOUT,
            f"num_envs * n_steps must be at most {MAX_ROLLOUT:,} (the rollout buffer holds one observation per "
            f"step, about 1.5 KiB each), got {self.num_envs:,} * {self.n_steps:,}",
        )
        need(
            len(self.net_arch) <= 16 and all(1 <= h <= 16_384 for h in self.net_arch),
            f"net_arch must be at most 16 layers of 1 to 16,384 units, got {self.net_arch}",
        )
        need(0 <= self.seed < 2**32, f"seed must be in [0, 2**32) (numpy's global seed range), got {self.seed}")
        need(0 <= self.eval_seed < 2**32, f"eval_seed must be in [0, 2**32), got {self.eval_seed}")
        need(self.torch_threads >= 0, f"torch_threads must be >= 0 (0: torch's default), got {self.torch_threads}")
        need(
            self.device in ("cpu", "cuda", "auto") or self.device.startswith("cuda:"),
            f"device: cpu, cuda or auto, not {self.device!r}",
        )
        need(self.reward in ("points", "match"), f"reward must be 'points' or 'match', got {self.reward!r}")
        need(self.episode in ("hand", "match"), f"episode must be 'hand' or 'match', got {self.episode!r}")
        need(
            self.activation in ACTIVATIONS, f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
        )
        seat_ok = self.learner_seat in ("rotate", "random") or (
            self.learner_seat.isdigit() and int(self.learner_seat) < rules.num_players
        )
        need(
            seat_ok,
            f"learner_seat must be rotate, random or a seat 0..{rules.num_players - 1}, got {self.learner_seat!r}",
        )
        teams = max(len(s) for s in rules.sides) > 1
        need(
            self.partner == "self" or teams,
            f"partner={self.partner!r} needs a team variant; {self.variant!r} has no teams, use partner: self",
        )
        need(
            self.rollout_size % self.batch_size == 0,
            f"batch_size ({self.batch_size}) must divide num_envs * n_steps ({self.num_envs} * {self.n_steps} = "
            f"{self.rollout_size}); e.g. batch_size {math.gcd(self.rollout_size, 1 << 13)}",
        )
        need(self.learning_rate > 0, f"learning_rate must be positive, got {self.learning_rate}")
        need(0 <= self.lr_end_fraction <= 1, f"lr_end_fraction must be in [0, 1], got {self.lr_end_fraction}")
        need(0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
        need(0 <= self.gae_lambda <= 1, f"gae_lambda must be in [0, 1], got {self.gae_lambda}")
        need(self.clip_range > 0, f"clip_range must be positive, got {self.clip_range}")
        need(self.ent_coef >= 0 and self.vf_coef > 0, "ent_coef must be >= 0 and vf_coef positive")
        need(self.shaping >= 0, f"shaping must be >= 0 (0 turns it off), got {self.shaping}")
        need(
            self.pretrain_hands >= 1 and self.pretrain_epochs >= 1,
            f"pretrain_hands and pretrain_epochs must be >= 1, got {self.pretrain_hands} and {self.pretrain_epochs}",
        )
        need(self.max_grad_norm > 0, f"max_grad_norm must be positive, got {self.max_grad_norm}")
        need(self.target_kl is None or self.target_kl > 0, f"target_kl must be positive or null, got {self.target_kl}")
        need(
            len(self.net_arch) >= 1 and all(n >= 1 for n in self.net_arch),
            f"net_arch: positive sizes, got {self.net_arch}",
        )
        need(self.pfsp_power >= 0, f"pfsp_power must be >= 0, got {self.pfsp_power}")
        need(0 < self.pfsp_floor <= 1, f"pfsp_floor must be in (0, 1], got {self.pfsp_floor}")
        need(0 <= self.self_play_fraction <= 1, f"self_play_fraction must be in [0, 1], got {self.self_play_fraction}")
        need(0 <= self.snapshot_share <= 1, f"snapshot_share must be in [0, 1], got {self.snapshot_share}")
        need(self.exact_endgame >= 0, f"exact_endgame must be >= 0 plies (0 turns it off), got {self.exact_endgame}")
        need(
            not (self.exact_endgame and self.endgame_coef),
            "exact_endgame and endgame_coef both act on the open end game: with exact_endgame the solver plays it, "
            "so there is nothing to distil; set endgame_coef: 0",
        )
        need(self.endgame_coef >= 0, f"endgame_coef must be >= 0 (0 turns it off), got {self.endgame_coef}")
        need(self.endgame_plies >= 1, f"endgame_plies must be a positive integer, got {self.endgame_plies}")
        need(0 < self.endgame_fraction <= 1, f"endgame_fraction must be in (0, 1], got {self.endgame_fraction}")
        need(bool(self.baselines) or self.max_snapshots > 0, "the league needs baselines or max_snapshots > 0")
        need(bool(self.eval_opponents), "eval_opponents must name at least one agent (e.g. greedy)")
        need(
            not (self.init_from and self.pretrain_teacher.strip().lower() not in ("", "none")),
            f"init_from and pretrain_teacher both set the starting weights (init_from {self.init_from!r}, "
            f"pretrain_teacher {self.pretrain_teacher!r}); with init_from set pretrain_teacher: none "
            "(--pretrain-teacher none)",
        )

    @property
    def rules(self) -> Rules:
        """The variant's rules."""
        return get_rules(self.variant)

    @property
    def rollout_size(self) -> int:
        """Steps per PPO update: num_envs * n_steps."""
        return self.num_envs * self.n_steps

    @property
    def best_opponent(self) -> str:
        """The eval opponent whose margin chooses best.zip (the last, strongest one)."""
        return self.eval_opponents[-1]

    @property
    def seat(self) -> str | int:
        """``learner_seat`` as the env wants it."""
        return int(self.learner_seat) if self.learner_seat.isdigit() else self.learner_seat

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


ACTIVATIONS = {"relu": "ReLU", "tanh": "Tanh"}
"""Config activation names -> torch.nn class names."""


def field_docs(cls: type = TrainConfig) -> dict[str, str]:
    """The one-line docstring of each dataclass field, read from the class source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, nxt in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(TrainConfig)


def _defaults() -> dict[str, Any]:
    return TrainConfig().to_dict()


def _to_int(key: str, raw: Any) -> int:
    if isinstance(raw, bool):
        raise ConfigError(f"{key} must be an integer, got {raw!r}")
    if isinstance(raw, int):
        return raw
    value: float
    try:
        if isinstance(raw, str):
            try:
                return int(raw.strip())
            except ValueError:
                value = float(raw.strip())
        else:
            value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be an integer (2e7 and 20_000_000 are fine), got {raw!r}") from None
    if not math.isfinite(value) or value != int(value):
        raise ConfigError(f"{key} must be a whole number, got {raw!r}")
    return int(value)


def _to_float(key: str, raw: Any) -> float:
    if isinstance(raw, bool):
        raise ConfigError(f"{key} must be a number, got {raw!r}")
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{key} must be finite, got {raw!r}")
    return value


def _to_bool(key: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ConfigError(f"{key} must be true or false, got {raw!r}")


def convert_value(key: str, raw: Any) -> Any:
    """``raw`` (from YAML or the command line) converted to the type of config field ``key``."""
    types = _field_types()
    if key not in types:
        raise ConfigError(f"unknown config key {key!r}; valid keys: {', '.join(types)}")
    tp = types[key]
    if tp is int:
        return _to_int(key, raw)
    if tp is float:
        return _to_float(key, raw)
    if tp is bool:
        return _to_bool(key, raw)
    if tp is str:
        if raw is None or isinstance(raw, (list, dict)):
            raise ConfigError(f"{key} must be a string, got {raw!r}")
        return str(raw)
    if tp == (float | None):
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null", "")):
            return None
        return _to_float(key, raw)
    if tp in (list[int], list[str]):
        items: list[Any]
        if isinstance(raw, (list, tuple)):
            items = list(raw)
        elif isinstance(raw, str):
            items = [x for x in raw.split(",") if x.strip()] if tp == list[int] else [raw]
        else:
            items = [raw]
        if tp == list[int]:
            return [_to_int(key, x) for x in items]
        if any(isinstance(x, (list, dict)) or x is None for x in items):
            raise ConfigError(f"{key} must be a list of strings, got {raw!r}")
        return [str(x).strip() for x in items]
    raise ConfigError(f"config field {key} has an unsupported type {tp}")  # pragma: no cover


def config_from_dict(values: dict[str, Any], source: str = "config") -> TrainConfig:
    """A ``TrainConfig`` from raw values; unknown keys and bad values raise ``ConfigError`` naming ``source``."""
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: expected a mapping of config keys to values, got {type(values).__name__}")
    valid = [f.name for f in dataclasses.fields(TrainConfig)]
    unknown = [k for k in values if k not in valid]
    if unknown:
        raise ConfigError(
            f"{source}: unknown config key(s) {', '.join(map(repr, unknown))}; valid keys: {', '.join(valid)}"
        )
    try:
        return TrainConfig(**{k: convert_value(k, v) for k, v in values.items()})
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML config file (empty file: {}); raises ``ConfigError`` for a missing or bad file."""
    p = Path(path)
    if not p.exists():  # --config strong: the shipped configs/strong.yaml
        p = shipped_config(str(path)) or p
    if p.is_dir():
        raise ConfigError(f"config file {str(p)!r} is a directory; give a YAML file, e.g. configs/default.yaml")
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} does not exist; see configs/ for examples")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))  # plain data only: no Python objects, no code
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {str(p)!r} cannot be read ({e}); give a readable UTF-8 YAML file") from None
    except RecursionError:
        raise ConfigError(f"config file {str(p)!r} nests too deeply to be a config") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {str(p)!r} is not valid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold a mapping of keys to values, got {type(data).__name__}")
    return data


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The config of a YAML file (default ``configs/default.yaml``) with ``overrides`` applied on top."""
    source = str(path or DEFAULT_CONFIG)
    values = read_yaml(path or DEFAULT_CONFIG)
    try:
        return config_from_dict({**values, **(overrides or {})}, source=source)
    except ConfigError as e:
        if not overrides:
            raise
        try:
            config_from_dict(values, source=source)
        except ConfigError:
            raise e from None
        raise ConfigError(str(e).replace(f"{source}: ", "command line: ", 1)) from None  # the file alone is fine


def config_yaml(cfg: TrainConfig) -> str:
    """The config as YAML, one commented line per field (the docstring), in field order."""
    docs = field_docs()
    lines = []
    for key, value in cfg.to_dict().items():
        text = yaml.safe_dump({key: value}, default_flow_style=True, width=1000).strip()
        if text.startswith("{") and text.endswith("}"):
            text = text[1:-1]
        lines.append(f"{text}  # {docs.get(key, '')}".rstrip())
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser: --config, --resume, --print-config and one option per config field."""
    p = argparse.ArgumentParser(
        prog="train.py",
        description="Train a Scopa bot by self-play (MaskablePPO against a PFSP league). Options override the "
        "config file (default configs/default.yaml); integers accept scientific notation (--total-steps 2e7).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  python train.py\n  python train.py --config configs/strong.yaml --total-steps 2e7\n"
        "  python train.py --resume runs/classic__default__0__20260101-120000",
    )
    shipped = ", ".join(sorted(x.stem for x in CONFIG_DIR.glob("*.yaml")))
    p.add_argument(
        "--config",
        metavar="FILE.yaml",
        help=f"YAML config file, or the name of a shipped one ({shipped}); default: default",
    )
    p.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last.zip")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    docs, types, defaults = field_docs(), _field_types(), _defaults()
    group = p.add_argument_group("config fields (also valid as YAML keys, with _ instead of -)")
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        default = defaults[f.name]
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
        help_text = f"{docs.get(f.name, '')} (default: {shown})".replace("%", "%%")
        tp = types[f.name]
        if tp is bool:
            group.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=help_text
            )
        elif tp in (list[int], list[str]):
            group.add_argument(flag, dest=f.name, nargs="+", metavar="X", default=argparse.SUPPRESS, help=help_text)
        else:
            group.add_argument(flag, dest=f.name, metavar=f.name.upper(), default=argparse.SUPPRESS, help=help_text)
    return p


def parse_cli(argv: Sequence[str] | None) -> tuple[argparse.Namespace, dict[str, Any]]:
    """(namespace, explicit config overrides): only the fields given on the command line, converted."""
    ns = build_parser().parse_args(argv)
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    raw = {k: v for k, v in vars(ns).items() if k in names}
    overrides = {}
    for k, v in raw.items():
        if isinstance(v, list) and _field_types()[k] == list[int]:
            v = [x for item in v for x in str(item).split(",") if x.strip()]
        try:
            overrides[k] = convert_value(k, v)
        except ConfigError as e:
            raise ConfigError(f"--{k.replace('_', '-')}: {e}") from None
    return ns, overrides


# --------------------------------------------------------------------------------------------------- evaluation


@dataclass
class EvalResult:
    """Margin of a policy against one opponent on duplicate deals (points per hand, learner side minus the other)."""

    opponent: str
    """Spec of the opponent."""
    margin: float
    """Mean margin per hand over the deals."""
    low: float
    """Lower end of the 95% interval (normal approximation over deals)."""
    high: float
    """Upper end of the 95% interval."""
    win_rate: float
    """Share of hands the learner's side won outright (ties count half)."""
    deals: int
    """Deals played (each once per seat rotation)."""
    hands: int
    """Hands played."""
    seconds: float
    """Wall-clock time of the evaluation."""


def rotation_lineups(rules: Rules) -> npt.NDArray[np.int64]:
    """(S, N) lineups putting agent 0 on every seat of side r (row r) and agent 1 on all the others."""
    side = np.asarray(rules.seat_side)
    return np.array([(side != r).astype(np.int64) for r in range(rules.num_sides)])


def duplicate_eval(
    rules: Rules | str,
    agent: Policy,
    opponent: Policy,
    deals: int,
    seed: int = 0,
    on_step: Any = None,
) -> EvalResult:
    """Play ``deals`` one-hand deals (seeds ``seed..seed+deals-1``), each once per side rotation.

    The margin of a game is the points of ``agent``'s side minus the best other side's; a deal's margin is the mean
    over its rotations, and the interval is over deals (the rotations of a deal share its cards).
    """
    from agents.arena import play
    from scopa_env.scoring import margin_vs_best_other

    rules = get_rules(rules)
    t0 = time.perf_counter()
    rot = rotation_lineups(rules)
    s = rules.num_sides
    seeds = np.repeat(np.arange(deals, dtype=np.uint64) + np.uint64(seed), s)
    lineups = np.tile(rot, (deals, 1))
    res = play(rules, [agent, opponent], lineups, seeds, mode="hands", on_step=on_step)
    learner_side = np.tile(np.arange(s), deals)
    margins = margin_vs_best_other(res.hand_points)[np.arange(seeds.size), learner_side].astype(np.float64)
    per_deal = margins.reshape(deals, s).mean(axis=1)
    mean = float(per_deal.mean())
    half = 1.96 * float(per_deal.std(ddof=1)) / math.sqrt(deals) if deals > 1 else float("nan")
    wins = float(((margins > 0) + 0.5 * (margins == 0)).mean())
    return EvalResult(
        opponent.name, mean, mean - half, mean + half, wins, deals, int(seeds.size), time.perf_counter() - t0
    )


# --------------------------------------------------------------------------------------------------- run directory


def code_version() -> dict[str, Any]:
    """Git commit, dirty flag and diff hash of the code, plus library versions (no git: commit is None)."""
    import sb3_contrib
    import stable_baselines3
    import torch

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, timeout=20, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.decode(errors="replace")

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain")  # untracked (not ignored) files count as changes too
    diff = git("diff", "HEAD")
    dirty = bool(status and status.strip())
    info = {
        "commit": commit.strip() if commit else None,
        "dirty": dirty,
        "diff_sha256": hashlib.sha256(diff.encode()).hexdigest() if dirty and diff else None,
        "obs_version": core.OBS_VERSION,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "argv": sys.argv,
    }
    info["short"] = (info["commit"] or "unknown")[:10] + ("-dirty" if dirty else "")
    return info


def _now() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def make_run_dir(cfg: TrainConfig) -> Path:
    """Create ``<run_root>/<variant>__<name>__<seed>__<time>/``; raises ``RunDirError`` if it cannot be written."""
    root = Path(cfg.run_root)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{cfg.variant}__{cfg.name}__{cfg.seed}__{stamp}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        for k in range(1, 1000):
            run = root / (base if k == 1 else f"{base}-{k}")
            try:
                run.mkdir()
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover
            raise RunDirError(f"too many runs named {base} in {root}")
        probe = run / ".write_test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise RunDirError(
            f"cannot write the run directory under {str(root)!r} ({e.strerror or e}); pass --run-root with a "
            "writable folder"
        ) from None
    return run


def _append_jsonl(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record, default=str) + "\n")


def _read_optimizer_state(path: Path) -> dict[str, Any]:
    """The optimizer state dict of a checkpoint (``torch.load(weights_only=True)``: no code runs)."""
    from agents.neural import read_torch_member

    member = "policy.optimizer.pth"
    state = read_torch_member(path, member, what="an optimizer state")
    if not isinstance(state, dict) or "state" not in state or "param_groups" not in state:
        raise AgentSpecError(f"checkpoint {str(path)!r}: its {member} is not an optimizer state")
    return state


def _read_resume_state(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, resume state) of a checkpoint, the resume state with the policy's and the optimizer's state dicts
    as ``"policy_state"`` and ``"optim_state"``; ``RunDirError`` saying what is wrong with it."""
    from agents.neural import _open_checkpoint, read_checkpoint_meta, read_weights

    try:
        meta = read_checkpoint_meta(path)
        with _open_checkpoint(path) as archive:
            names = archive.namelist()
            if RESUME_MEMBER not in names:
                if LEGACY_RESUME_MEMBER in names:
                    raise RunDirError(
                        f"{path.name} was saved by an older version as a pickle, which can run code when it is "
                        "read, so it is not loaded; start a new run (its weights can seed it: --init-from "
                        f"{path})"
                    )
                raise RunDirError(f"{path.name} holds no resume state ({RESUME_MEMBER})")
            raw = archive.read(RESUME_MEMBER)
        blob = safe_state.loads(raw)
        if isinstance(blob, dict):
            blob["policy_state"] = read_weights(path, "policy.pth")
            blob["optim_state"] = _read_optimizer_state(path)
    except AgentSpecError as e:
        raise RunDirError(str(e)) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:  # CRC / zlib errors, StateFileError
        raise RunDirError(f"{path.name} is damaged ({type(e).__name__}: {e})") from None
    if not isinstance(blob, dict) or not {"env", "league", "state", "rng", "num_timesteps", "model"} <= set(blob):
        raise RunDirError(f"{path.name}: its resume state lacks parts (damaged or from another version)")
    if int(blob["num_timesteps"]) != int(meta.get("steps", -1)):
        raise RunDirError(f"{path.name}: its resume state and metadata disagree on the step")
    return meta, blob


def _step_files(ckpt_dir: Path) -> list[tuple[int, Path]]:
    """(steps, path) of the ``step_<steps>.zip`` files in ``ckpt_dir``, oldest first."""
    out = []
    for p in ckpt_dir.glob("step_*.zip") if ckpt_dir.is_dir() else []:
        digits = p.stem.removeprefix("step_")
        if digits.isdigit():
            out.append((int(digits), p))
    return sorted(out)


def _newest_intact_checkpoint(run: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """The checkpoint a resumed run starts from: the newest of last.zip and checkpoints/step_*.zip that reads
    back whole (a kill can leave last.zip older than the newest step file; a damaged file is passed over with a
    message)."""
    from agents.neural import read_checkpoint_meta

    candidates = _step_files(run / "checkpoints")
    last = run / "last.zip"
    problems: list[str] = []
    if last.is_file():
        try:
            candidates.append((int(read_checkpoint_meta(last).get("steps", -1)), last))
        except AgentSpecError as e:
            problems.append(f"last.zip: {e}")
    for steps, path in sorted(candidates, key=lambda c: (c[0], c[1] == last), reverse=True):
        try:
            meta, blob = _read_resume_state(path)
        except RunDirError as e:
            problems.append(f"{path.relative_to(run)}: {e}")
            continue
        if problems:
            print(
                "train.py: skipped damaged checkpoints:\n  " + "\n  ".join(problems) + f"\nresuming from "
                f"{path.relative_to(run)} (step {steps:,}), the newest intact one",
                file=sys.stderr,
                flush=True,
            )
        return path, meta, blob
    if not candidates and not problems:
        raise RunDirError(
            f"--resume {str(run)!r}: no last.zip nor step checkpoint (the run saved no checkpoint yet); start a new "
            "run instead"
        )
    raise RunDirError(
        f"--resume {str(run)!r}: no intact checkpoint to resume from:\n  " + "\n  ".join(problems) + "\nstart a "
        "new run (python train.py, or --init-from with a best.zip for its weights)"
    )


def _prune_step_files(ckpt_dir: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` step files (including ones a killed run left beyond the limit)."""
    files = _step_files(ckpt_dir)
    for _, p in files[: max(0, len(files) - keep)]:
        p.unlink(missing_ok=True)


def _clean_run_dir(run: Path, step: int, keep: int) -> None:
    """Before a resumed run continues from ``step``: delete temporary files of interrupted writes, step files
    beyond ``keep`` and after ``step`` (they will be written again), and eval.jsonl lines after ``step``."""
    from scopa_env.atomic import write_atomic

    for folder in (run, run / "checkpoints"):
        for tmp in folder.glob(".*.tmp") if folder.is_dir() else []:
            tmp.unlink(missing_ok=True)
    for steps, p in _step_files(run / "checkpoints"):
        if steps > step:
            p.unlink(missing_ok=True)
    _prune_step_files(run / "checkpoints", keep)
    evals = run / "eval.jsonl"
    if evals.is_file():
        kept = []
        for line in evals.read_text().splitlines():
            try:
                record_step = int(json.loads(line).get("step", -1))
            except (ValueError, AttributeError, TypeError):
                continue  # a line cut by a kill
            if record_step <= step:
                kept.append(line)
        write_atomic(evals, ("\n".join(kept) + "\n" if kept else "").encode())


# --------------------------------------------------------------------------------------------------- trainer


@dataclass
class _ResumePoint:
    """Everything needed to restart training exactly at the start of a rollout."""

    steps: int
    policy_state: dict[str, Any]
    optim_state: dict[str, Any]
    blob: bytes
    """``agents.safe_state`` file of the env, league, counters, model extras and random states."""


def _rng_states() -> dict[str, Any]:
    import torch

    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def _set_rng_states(states: dict[str, Any]) -> None:
    import torch

    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])


class Trainer:
    """One training run: env, league, model, logging and checkpoints. ``Trainer.create`` / ``Trainer.resume``."""

    def __init__(self, cfg: TrainConfig, run_dir: Path) -> None:
        self.cfg = cfg
        self.rules = cfg.rules
        self.run_dir = run_dir
        self.version = code_version()
        self.stop_requested = False
        self.state: dict[str, Any] = {}
        self._point: _ResumePoint | None = None
        self._pending: list[npt.NDArray[np.int64]] = []
        self._endgame: list[tuple[npt.NDArray[Any], ...]] = []
        self._endgame_s = 0.0
        self._endgame_opt: Any = None
        self._rollout_t0 = time.perf_counter()
        self._rollout_steps0 = 0
        self._rollout_end_t = time.perf_counter()
        self._session_t0 = time.perf_counter()
        self.resumed = False
        self._config_changed = False
        self._resume_event: dict[str, Any] | None = None
        self._stop_signal = int(signal.SIGINT)
        self._bar: Any = None
        self.eval_agents: list[Policy] = []
        self.writer: Any = None
        self.model: Any = None
        self.env: Any = None
        self.league: Any = None

    # ------------------------------------------------------------------------------------------------ building

    @classmethod
    def create(cls, cfg: TrainConfig) -> Trainer:
        """A new run: checks the agents, creates the run directory, builds env, league and model."""
        import torch

        if cfg.device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"device {cfg.device!r}: torch sees no CUDA device here; use --device cpu (or auto)")
        rules = cfg.rules
        baselines = [_make(spec, rules, cfg.seed + 101 + i, "baselines") for i, spec in enumerate(cfg.baselines)]
        partner = "self" if cfg.partner == "self" else _make(cfg.partner, rules, cfg.seed + 99, "partner")
        eval_agents = [_make(spec, rules, cfg.eval_seed, "eval_opponents") for spec in cfg.eval_opponents]
        warm_start = cfg.pretrain_teacher.strip().lower() not in ("", "none")  # never with init_from (refused)
        if warm_start:
            _make(cfg.pretrain_teacher, rules, cfg.seed, "pretrain_teacher")  # fail before the run directory exists
        init_state = _init_weights(cfg) if cfg.init_from else None
        run_dir = make_run_dir(cfg)
        self = cls(cfg, run_dir)
        self.eval_agents = eval_agents
        (run_dir / "config.yaml").write_text(config_yaml(cfg))
        (run_dir / "version.json").write_text(json.dumps(self.version, indent=1, default=str) + "\n")
        self._build_new(baselines, partner)
        if init_state is not None:
            try:
                self.model.policy.load_state_dict(init_state)
            except RuntimeError as e:
                first = str(e).strip().splitlines()[0]
                raise ConfigError(
                    f"init_from {cfg.init_from!r}: its network does not fit this config's ({first}); use the "
                    f"checkpoint's net_arch and activation (net_arch is {list(cfg.net_arch)} here)"
                ) from None
            print(f"initial weights: {cfg.init_from} (no warm start)", flush=True)
        elif warm_start:
            self._pretrain()
        return self

    def _pretrain(self) -> None:
        """Warm start: fit the new policy to the teacher's decisions (``agents.imitation``), once per run."""
        from agents.imitation import collect_teacher_data, pretrain_policy

        cfg = self.cfg
        t0 = time.perf_counter()
        print(f"warm start: recording {cfg.pretrain_hands:,} hands of {cfg.pretrain_teacher!r} ...", flush=True)
        data = collect_teacher_data(self.rules, cfg.pretrain_teacher, cfg.pretrain_hands, seed=cfg.seed + 7_000_000)
        stats = pretrain_policy(self.model.policy, data, epochs=cfg.pretrain_epochs, seed=cfg.seed)
        stats.update(decisions=len(data), seconds=round(time.perf_counter() - t0, 1))
        self.state["elapsed_s"] += stats["seconds"]  # milestones count the warm start's wall-clock time too
        (self.run_dir / "pretrain.json").write_text(json.dumps(stats, indent=1) + "\n")
        print(
            f"warm start: {len(data):,} decisions, {cfg.pretrain_epochs} epochs, teacher-move accuracy "
            f"{stats['accuracy']:.1%} ({stats['seconds']:.0f} s)",
            flush=True,
        )

    def _build_new(self, baselines: list[Policy], partner: Policy | str) -> None:
        import torch

        from agents.endgame import ExactEndgameMask
        from agents.league import League
        from scopa_env.gym import ScopaVecEnv

        cfg = self.cfg
        if cfg.torch_threads:
            torch.set_num_threads(cfg.torch_threads)
        self.league = League(
            baselines,
            max_snapshots=cfg.max_snapshots,
            power=cfg.pfsp_power,
            floor=cfg.pfsp_floor,
            self_play_fraction=cfg.self_play_fraction,
            window=cfg.win_rate_window,
            snapshot_share=cfg.snapshot_share,
        )
        self.env = ScopaVecEnv(
            self.rules,
            cfg.num_envs,
            opponents=[m.policy for m in self.league.members] or "random",
            probs=self.league.probs().tolist() if self.league.members else None,
            seed=cfg.seed,
            reward=cfg.reward,  # type: ignore[arg-type]
            episode=cfg.episode,  # type: ignore[arg-type]
            partner=partner,  # type: ignore[arg-type]
            learner_seat=cfg.seat,  # type: ignore[arg-type]
            max_hands=cfg.max_hands,
            mask_filter=ExactEndgameMask(cfg.exact_endgame) if cfg.exact_endgame else None,
        )
        self.league.register_initial_pool()
        if cfg.shaping > 0:
            self.env = ShapedRewards(self.env, self.rules, cfg.shaping, cfg.gamma)
        self.model = self._new_model(self.env)
        self.state = {
            "next_snapshot": cfg.snapshot_every,
            "next_eval": 0,
            "next_checkpoint": cfg.checkpoint_every,
            "handled_step": -1,
            "best_margin": -math.inf,
            "best_step": -1,
            "last_eval": {},
            "elapsed_s": 0.0,
        }
        self._setup_logging()
        self._history("start")

    def _new_model(self, env: Any, setup: bool = True) -> Any:
        """The config's ``MaskablePPO`` on ``env``. ``setup=False``: built the way SB3's ``load`` builds a model
        (spaces taken from ``env``, parameters created without seeding ``env``), for ``_load`` to fill in."""
        import torch
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.utils import LinearSchedule

        cfg = self.cfg
        lr: Any = cfg.learning_rate
        if cfg.lr_end_fraction != 1.0:
            lr = LinearSchedule(cfg.learning_rate, cfg.learning_rate * cfg.lr_end_fraction, 1.0)
        activation = getattr(torch.nn, ACTIVATIONS[cfg.activation])
        model = MaskablePPO(
            "MlpPolicy",
            env if setup else None,  # type: ignore[arg-type]  # SB3's load builds models with env=None too
            learning_rate=lr,
            n_steps=cfg.n_steps,
            batch_size=cfg.batch_size,
            n_epochs=cfg.n_epochs,
            gamma=cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            clip_range=cfg.clip_range,
            ent_coef=cfg.ent_coef,
            vf_coef=cfg.vf_coef,
            max_grad_norm=cfg.max_grad_norm,
            target_kl=cfg.target_kl,
            policy_kwargs={"net_arch": list(cfg.net_arch), "activation_fn": activation},
            seed=cfg.seed,
            device=cfg.device,
            verbose=0,
            _init_setup_model=setup,
        )
        if not setup:
            model.observation_space, model.action_space = env.observation_space, env.action_space
            model.n_envs = env.num_envs
            model._setup_model()
            model.set_env(env, force_reset=False)
        return model

    @classmethod
    def resume(cls, run_dir: str | Path, config_file: str | None, overrides: dict[str, Any]) -> Trainer:
        """Continue the run in ``run_dir`` from its ``last.zip``; the config must agree with the saved one."""

        run = Path(run_dir)
        if not run.is_dir():
            raise RunDirError(f"--resume {str(run)!r}: no such run directory; give a folder under runs/")
        saved_values = read_yaml(run / "config.yaml") if (run / "config.yaml").is_file() else None
        if saved_values is None:
            raise RunDirError(f"--resume {str(run)!r}: no config.yaml there; it is not a train.py run directory")
        saved = config_from_dict(saved_values, source=str(run / "config.yaml"))
        asked = dict(read_yaml(config_file)) if config_file else {}
        asked.update(overrides)
        if config_file:  # validate the file's keys and values on their own
            config_from_dict({**saved_values, **read_yaml(config_file)}, source=config_file)
        conflicts = []
        for key, value in asked.items():
            new = convert_value(key, value)
            if new != getattr(saved, key) and key not in RESUMABLE_FIELDS:
                conflicts.append(f"{key}={new!r} (the run has {getattr(saved, key)!r})")
        if conflicts:
            raise ConfigError(
                f"--resume {str(run)!r}: the run was trained with another config: {'; '.join(conflicts)}. A resumed "
                f"run keeps its config (only {', '.join(RESUMABLE_FIELDS)} may change); drop those options or start "
                "a new run"
            )
        cfg = dataclasses.replace(saved, **{k: convert_value(k, v) for k, v in asked.items() if k in RESUMABLE_FIELDS})
        last, meta, blob = _newest_intact_checkpoint(run)
        if meta["variant"] != cfg.variant:
            raise ConfigError(
                f"--resume {str(run)!r}: {last.name} is for variant {meta['variant']!r}, config says {cfg.variant!r}"
            )
        if meta["obs_version"] != core.OBS_VERSION:
            raise RunDirError(
                f"--resume {str(run)!r}: the run was trained on observation version {meta['obs_version']}, this code "
                f"produces version {core.OBS_VERSION}; it cannot be resumed, start a new run"
            )
        if not os.access(run, os.W_OK):
            raise RunDirError(f"--resume {str(run)!r}: the run directory is not writable")
        eval_agents = [_make(spec, cfg.rules, cfg.eval_seed, "eval_opponents") for spec in cfg.eval_opponents]
        self = cls(cfg, run)
        self.eval_agents = eval_agents
        self.resumed = True
        self._load(blob)
        self._config_changed = cfg != saved
        self._resume_event = {"from_step": int(self.model.num_timesteps), "checkpoint": last.name}
        return self

    def _load(self, blob: dict[str, Any]) -> None:
        """Rebuild env, league, model and random states from a checkpoint's resume state (``_read_resume_state``)."""
        import torch

        if self.cfg.torch_threads:
            torch.set_num_threads(self.cfg.torch_threads)
        self.env, self.league, self.state = blob["env"], blob["league"], blob["state"]
        model = self._new_model(self.env, setup=False)
        try:
            model.policy.load_state_dict(blob["policy_state"])
            model.policy.optimizer.load_state_dict(blob["optim_state"])
        except (RuntimeError, ValueError, KeyError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RunDirError(f"--resume: the checkpoint's weights do not fit the run's config ({first})") from None
        model.num_timesteps = int(blob["num_timesteps"])
        for name in MODEL_COUNTERS:
            setattr(model, name, blob["model"][name])
        self.model = model
        if blob.get("endgame_optimizer") is not None:
            from agents.imitation import actor_optimizer

            self._endgame_opt = actor_optimizer(model.policy, self.cfg.learning_rate)
            self._endgame_opt.load_state_dict(blob["endgame_optimizer"])
        _set_rng_states(blob["rng"])

    def _setup_logging(self) -> None:
        from stable_baselines3.common.logger import Logger
        from torch.utils.tensorboard import SummaryWriter

        self.model.set_logger(Logger(folder=None, output_formats=[]))  # losses are copied into our writer
        self.writer = SummaryWriter(log_dir=str(self.run_dir))

    def _history(self, event: str, **extra: Any) -> None:
        step = int(self.model.num_timesteps) if self.model is not None else 0
        _append_jsonl(self.run_dir / "history.jsonl", {"event": event, "time": _now(), "step": step, **extra})

    # ------------------------------------------------------------------------------------------------ running

    def run(self) -> int:
        """Train to ``total_steps``; returns the process exit status (0 done, 130 interrupted)."""
        from stable_baselines3.common.callbacks import BaseCallback

        trainer = self

        class _Callback(BaseCallback):
            def _on_rollout_start(self) -> None:
                trainer.on_rollout_start()

            def _on_step(self) -> bool:
                return trainer.on_step(self.locals)

            def _on_rollout_end(self) -> None:
                trainer.on_rollout_end()

        cfg, model = self.cfg, self.model
        start = int(model.num_timesteps)
        if start >= cfg.total_steps:
            print(
                f"run {self.run_dir} already has {start:,} of {cfg.total_steps:,} steps; nothing to do "
                "(raise --total-steps to train further)"
            )
            return 0
        if self._resume_event is not None:  # only once a resumed run really trains on (a no-op changes nothing)
            _clean_run_dir(self.run_dir, start, cfg.keep_checkpoints)
            if self._config_changed:
                (self.run_dir / "config.yaml").write_text(config_yaml(cfg))
            self._setup_logging()
            self._history("resume", **self._resume_event)
            self._resume_event = None
        print(f"run directory: {self.run_dir}", flush=True)
        print(
            f"training {cfg.variant} for {cfg.total_steps:,} steps from {start:,}: {cfg.num_envs} envs x {cfg.n_steps} "
            f"steps per update, league {self.league}",
            flush=True,
        )
        self._session_t0 = self._rollout_t0 = time.perf_counter()
        self._rollout_steps0 = start
        self._open_bar(start)
        restore = self._install_sigint()
        status = 0
        try:
            model.learn(
                total_timesteps=cfg.total_steps - start,
                callback=_Callback(),
                log_interval=1,
                reset_num_timesteps=not self.resumed,
                progress_bar=False,
            )
            if self.stop_requested:
                status = self._interrupted()
            else:
                self._finish()
        except (KeyboardInterrupt, StopTraining):
            status = self._interrupted()
        finally:
            restore()
            if self._bar is not None:
                self._bar.close()
            if self.writer is not None:
                self.writer.close()
        return status

    def _install_sigint(self) -> Any:
        """Ctrl-C, SIGTERM and SIGHUP: stop at the next step and save last.zip; a second one stops sooner."""

        def handler(signum: int, frame: Any) -> None:
            if self.stop_requested:  # the second one: stop now (the checkpoint of the rollout's start is saved)
                raise KeyboardInterrupt
            self.stop_requested = True
            self._stop_signal = signum
            name = signal.Signals(signum).name
            self._say(f"{name}: stopping at the next step to save a checkpoint (again to stop sooner)")

        return _handle_signals(STOP_SIGNALS, handler)

    def _interrupted(self) -> int:
        status = 128 + int(self._stop_signal)
        point = self._point
        if point is None:
            self._say("interrupted before the first rollout: no checkpoint to save")
            self._history("interrupt", saved=False)
            return status
        self._write_checkpoint(point)
        self._history("interrupt", saved=True, checkpoint_step=point.steps, signal=signal.Signals(status - 128).name)
        self._say(
            f"interrupted: saved {self.run_dir / 'last.zip'} at step {point.steps:,}; continue with\n"
            f"  python train.py --resume {self.run_dir}"
        )
        return status

    def _finish(self) -> None:
        steps = int(self.model.num_timesteps)
        self._distill_endgames(steps)
        self._flush_episodes()
        self._copy_losses(steps)
        if self.state.get("last_eval", {}).get("step") != steps:
            self._evaluate(steps)
        point = self._capture()
        self._write_checkpoint(point, step_file=True)
        self._history("finish", best_step=self.state["best_step"], best_margin=self.state["best_margin"])
        self._say(
            f"done: {steps:,} steps in {self.state['elapsed_s'] / 60:.1f} min; best.zip from step "
            f"{self.state['best_step']:,} ({self.cfg.best_opponent} margin {self.state['best_margin']:+.3f}); "
            f"{self.run_dir}"
        )

    # ------------------------------------------------------------------------------------------------ callback

    def on_rollout_start(self) -> None:
        """League update, snapshots, evaluation and checkpoints; then remember this point for Ctrl-C."""
        steps = int(self.model.num_timesteps)
        if steps > self._rollout_steps0:
            self._log_speed(steps, time.perf_counter())
        if self.state["handled_step"] == steps:  # just resumed: this point's work is already done
            self._point = self._capture()
            self._rollout_t0, self._rollout_steps0 = time.perf_counter(), steps
            self._label_endgames(self.model._last_obs)
            return
        cfg, st = self.cfg, self.state
        self._distill_endgames(steps)
        self._flush_episodes()
        self._copy_losses(steps)
        if steps >= st["next_snapshot"] and cfg.max_snapshots > 0:
            from agents.neural import NeuralPolicy

            snap = NeuralPolicy.from_sb3_policy(
                self.model.policy,
                self.rules,
                name=f"snapshot@{steps}",
                seed=cfg.seed + steps,
                sample=cfg.snapshot_sample,
                endgame=cfg.exact_endgame,
            )
            self.league.add_snapshot(snap, steps)
            st["next_snapshot"] = (steps // cfg.snapshot_every + 1) * cfg.snapshot_every
        if steps >= st["next_eval"]:
            self._evaluate(steps)
            st["next_eval"] = (steps // cfg.eval_every + 1) * cfg.eval_every
        self.league.publish(self.env)
        self._log_league(steps)
        st["handled_step"] = steps
        step_file = steps >= st["next_checkpoint"]
        if step_file:
            st["next_checkpoint"] = (steps // cfg.checkpoint_every + 1) * cfg.checkpoint_every
        point = self._capture()
        if step_file or not (self.run_dir / "last.zip").is_file():  # a checkpoint from the first rollout on
            self._write_checkpoint(point, step_file)
        self._point = point
        self._rollout_t0, self._rollout_steps0 = time.perf_counter(), steps
        self._label_endgames(self.model._last_obs)

    def on_step(self, local: dict[str, Any]) -> bool:
        """Collect finished episodes and advance the progress bar; False stops training (Ctrl-C)."""
        dones = local["dones"]
        if dones.any():
            infos = local["infos"]
            rows = [
                (i["episode_pool"], i["episode_opponent"], i["episode_result"], i["episode_margin"])
                for i in (infos[j] for j in np.flatnonzero(dones))
                if "episode_result" in i
            ]
            if rows:
                self._pending.append(np.array(rows, dtype=np.int64))
        if local["n_steps"] < self.model.n_steps - 1:  # the last step's positions start the next rollout
            self._label_endgames(local["new_obs"])
        if self._bar is not None:
            self._bar.update(self.env.num_envs)
        return not self.stop_requested

    def on_rollout_end(self) -> None:
        self._rollout_end_t = time.perf_counter()

    # ------------------------------------------------------------------------------------------------ pieces

    def _label_endgames(self, obs: npt.NDArray[np.float32]) -> None:
        """Queue the exact solver's best actions (all of them, when several moves are equally good) for a share of
        the learner's open end-game decisions now pending (``obs``: the learner's observations of the current
        positions); ``_distill_endgames`` trains on them."""
        cfg = self.cfg
        if cfg.endgame_coef <= 0:
            return
        from agents.endgame import open_endgame_rows, optimal_open_actions

        t0 = time.perf_counter()
        games = self.env.unwrapped.games  # the ScopaVecEnv under the shaping wrapper
        live = np.flatnonzero(~games.finished)
        rows = live[open_endgame_rows(self.rules, games.state, live, cfg.endgame_plies)]
        if cfg.endgame_fraction < 1.0 and rows.size:
            rng = np.random.default_rng((cfg.seed, 0xE6D, int(self.model.num_timesteps)))
            rows = rows[rng.random(rows.size) < cfg.endgame_fraction]
        if rows.size:
            best = optimal_open_actions(self.rules, games.state, rows)  # every best action: ties cost nothing
            self._endgame.append((np.array(obs[rows], dtype=np.float32), games.mask[rows].copy(), best))
        self._endgame_s += time.perf_counter() - t0

    def _distill_endgames(self, steps: int) -> None:
        """One pass of the end-game distillation loss over the labels queued during the last rollout."""
        if not self._endgame:
            return
        from agents.imitation import actor_optimizer, distill_actions

        cfg = self.cfg
        obs, mask, best = (np.concatenate([e[i] for e in self._endgame]) for i in range(3))
        self._endgame = []
        t0 = time.perf_counter()
        lr = self.model.policy.optimizer.param_groups[0]["lr"]  # PPO's, on its schedule
        if self._endgame_opt is None:
            self._endgame_opt = actor_optimizer(self.model.policy, lr)
        for group in self._endgame_opt.param_groups:
            group["lr"] = lr
        stats = distill_actions(
            self.model.policy,
            obs,
            mask,
            best,
            coef=cfg.endgame_coef,
            batch_size=cfg.batch_size,
            max_grad_norm=cfg.max_grad_norm,
            seed=cfg.seed * 1_000_003 + steps,
            optimizer=self._endgame_opt,
        )
        w = self.writer
        w.add_scalar("endgame/labels", len(best), steps)
        w.add_scalar("endgame/accuracy", stats["accuracy"], steps)
        w.add_scalar("endgame/loss", stats["loss"], steps)
        w.add_scalar("endgame/label_seconds", self._endgame_s, steps)
        w.add_scalar("endgame/train_seconds", time.perf_counter() - t0, steps)
        self._endgame_s = 0.0

    def _flush_episodes(self) -> None:
        if not self._pending:
            return
        ep = np.concatenate(self._pending)
        self._pending = []
        self.league.record(ep[:, 0], ep[:, 1], ep[:, 2])
        steps = int(self.model.num_timesteps)
        w = self.writer
        w.add_scalar("charts/episodes", ep.shape[0], steps)
        w.add_scalar("charts/episode_result", float(ep[:, 2].mean()), steps)
        w.add_scalar("charts/episode_margin", float(ep[:, 3].mean()), steps)
        w.add_scalar("charts/episode_win_rate", float(((ep[:, 2] + 1) / 2).mean()), steps)

    def _copy_losses(self, steps: int) -> None:
        values = dict(self.model.logger.name_to_value)
        names = {
            "train/policy_gradient_loss": "losses/policy_gradient",
            "train/value_loss": "losses/value",
            "train/entropy_loss": "losses/entropy",
            "train/approx_kl": "losses/approx_kl",
            "train/clip_fraction": "losses/clip_fraction",
            "train/explained_variance": "losses/explained_variance",
            "train/loss": "losses/total",
            "train/learning_rate": "losses/learning_rate",
        }
        for src, dst in names.items():
            if src in values:
                self.writer.add_scalar(dst, float(values[src]), steps)

    def _log_speed(self, steps: int, now: float) -> None:
        n = steps - self._rollout_steps0
        total = max(now - self._rollout_t0, 1e-9)
        rollout = max(self._rollout_end_t - self._rollout_t0, 1e-9)
        w = self.writer
        w.add_scalar("charts/steps_per_second", n / total, steps)
        w.add_scalar("charts/rollout_steps_per_second", n / rollout, steps)
        w.add_scalar("charts/update_seconds", max(now - self._rollout_end_t, 0.0), steps)
        w.add_scalar("charts/elapsed_minutes", self._elapsed() / 60, steps)

    def _log_league(self, steps: int) -> None:
        info = self.league.summary()
        w = self.writer
        w.add_scalar("league/size", info["size"], steps)
        w.add_scalar("league/snapshots", info["snapshots"], steps)
        snaps = [m for m in info["members"] if m["kind"] == "snapshot"]
        for m in info["members"]:
            if m["kind"] == "baseline":
                w.add_scalar(f"league/win_rate/{m['name']}", m["win_rate"], steps)
                w.add_scalar(f"league/prob/{m['name']}", m["prob"], steps)
        if snaps:
            w.add_scalar("league/win_rate/snapshots_mean", float(np.mean([m["win_rate"] for m in snaps])), steps)
            w.add_scalar("league/win_rate/newest_snapshot", snaps[-1]["win_rate"], steps)
            w.add_scalar("league/prob/snapshots", float(sum(m["prob"] for m in snaps)), steps)
        if steps == 0 or steps >= self.state.get("next_composition", 0):  # the text only every snapshot_every
            text = " | ".join(f"{m['name']} p={m['prob']:.2f} win={m['win_rate']:.2f}" for m in info["members"])
            w.add_text("league/composition", text, steps)
            self.state["next_composition"] = (steps // self.cfg.snapshot_every + 1) * self.cfg.snapshot_every

    def _evaluate(self, steps: int) -> None:
        from agents.neural import NeuralPolicy

        cfg = self.cfg
        me = NeuralPolicy.from_sb3_policy(self.model.policy, self.rules, name="learner", endgame=cfg.exact_endgame)

        def check_stop(_: int) -> None:
            if self.stop_requested:
                raise StopTraining

        results = []
        for agent in self.eval_agents:
            agent.seed(cfg.eval_seed)
            r = duplicate_eval(self.rules, me, agent, cfg.eval_deals, cfg.eval_seed, on_step=check_stop)
            results.append(r)
            self.writer.add_scalar(f"eval/margin/{r.opponent}", r.margin, steps)
            self.writer.add_scalar(f"eval/margin_low/{r.opponent}", r.low, steps)
            self.writer.add_scalar(f"eval/win_rate/{r.opponent}", r.win_rate, steps)
        elapsed = self._elapsed()
        key = results[-1]
        record = {
            "step": steps,
            "elapsed_s": round(elapsed, 1),
            "time": _now(),
            "margins": {r.opponent: dataclasses.asdict(r) for r in results},
        }
        _append_jsonl(self.run_dir / "eval.jsonl", record)
        self.state["last_eval"] = {"step": steps, **{r.opponent: r.margin for r in results}}
        self.writer.add_scalar("eval/seconds", sum(r.seconds for r in results), steps)
        improved = key.margin > self.state["best_margin"]
        if improved:
            self.state["best_margin"] = key.margin
            self.state["best_step"] = steps
            self._save(self.run_dir / "best.zip", steps, "best", eval=record)
        self.writer.add_scalar("eval/best_margin", self.state["best_margin"], steps)
        summary = ", ".join(f"{r.opponent} {r.margin:+.3f} [{r.low:+.2f}, {r.high:+.2f}]" for r in results)
        self._say(
            f"step {steps:,} ({elapsed / 60:.1f} min): eval margin per hand vs {summary}{' *best*' if improved else ''}"
        )
        if self._bar is not None:
            self._bar.set_postfix_str(" ".join(f"{r.opponent} {r.margin:+.2f}" for r in results), refresh=False)

    def _meta(self, steps: int, kind: str, **extra: Any) -> dict[str, Any]:
        from agents.neural import checkpoint_meta

        return checkpoint_meta(
            self.rules,
            steps,
            kind=kind,
            run=self.run_dir.name,
            code_version=self.version["short"],
            endgame=self.cfg.exact_endgame,
            config=self.cfg.to_dict(),
            created=_now(),
            **extra,
        )

    def _save(
        self, path: Path, steps: int, kind: str, extra_members: dict[str, bytes] | None = None, **meta: Any
    ) -> None:
        from agents.neural import save_checkpoint

        save_checkpoint(self.model, path, self._meta(steps, kind, **meta), extra_members)

    def _elapsed(self) -> float:
        """Wall-clock seconds of training so far, over all sessions of the run."""
        return float(self.state["elapsed_s"]) + time.perf_counter() - self._session_t0

    def _capture(self) -> _ResumePoint:
        """The state at this rollout boundary: weights, optimizer, and a pickle of everything else."""
        model = self.model
        now = time.perf_counter()
        self.state["elapsed_s"] += now - self._session_t0
        self._session_t0 = now
        blob = safe_state.dumps(
            {
                "env": self.env,
                "league": self.league,
                "state": self.state,
                "rng": _rng_states(),
                "num_timesteps": int(model.num_timesteps),
                "model": {name: getattr(model, name) for name in MODEL_COUNTERS},
                "endgame_optimizer": None if self._endgame_opt is None else self._endgame_opt.state_dict(),
            }
        )
        return _ResumePoint(
            int(model.num_timesteps),
            copy.deepcopy(model.policy.state_dict()),
            copy.deepcopy(model.policy.optimizer.state_dict()),
            blob,
        )

    def _write_checkpoint(self, point: _ResumePoint, step_file: bool = False) -> None:
        """Write last.zip (with the resume state); with ``step_file`` first checkpoints/step_<steps>.zip (with it
        too, so that a step file can stand in for a damaged last.zip), then delete the step files beyond
        ``keep_checkpoints``."""
        model = self.model
        if int(model.num_timesteps) != point.steps:  # interrupted mid-rollout: go back to the point's weights
            model.policy.load_state_dict(point.policy_state)
            model.policy.optimizer.load_state_dict(point.optim_state)
            model.num_timesteps = point.steps
        members = {RESUME_MEMBER: point.blob}
        if step_file:
            ckpt_dir = self.run_dir / "checkpoints"
            self._save(ckpt_dir / f"step_{point.steps:09d}.zip", point.steps, "step", members)
        self._save(self.run_dir / "last.zip", point.steps, "last", members)
        if step_file:
            _prune_step_files(self.run_dir / "checkpoints", self.cfg.keep_checkpoints)

    # ------------------------------------------------------------------------------------------------ output

    def _open_bar(self, start: int) -> None:
        if not self.cfg.progress:
            return
        if not sys.stderr.isatty():  # a log file: plain lines, no carriage returns
            self._bar = _LineProgress(self.cfg.total_steps, start)
            return
        from tqdm import tqdm

        self._bar = tqdm(
            total=self.cfg.total_steps,
            initial=start,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            smoothing=0.05,
            desc=f"{self.cfg.variant}/{self.cfg.name}",
        )

    def _say(self, text: str) -> None:
        if self._bar is not None:
            self._bar.write(text)
        else:
            print(text, flush=True)


class _LineProgress:
    """The progress bar's stand-in when stderr is not a terminal: one line every ``interval`` seconds."""

    def __init__(self, total: int, start: int, interval: float = 60.0) -> None:
        self.total, self.n, self.start, self.interval = total, start, start, interval
        self.t0 = self.last = time.perf_counter()
        self.postfix = ""

    def update(self, n: int) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self.last >= self.interval:
            self.last = now
            rate = (self.n - self.start) / max(now - self.t0, 1e-9)
            left = max(self.total - self.n, 0) / max(rate, 1e-9)
            print(
                f"progress: {self.n:,}/{self.total:,} steps ({100 * self.n / self.total:.0f}%), {rate:,.0f} steps/s, "
                f"{left / 60:.1f} min left{'; ' + self.postfix if self.postfix else ''}",
                file=sys.stderr,
                flush=True,
            )

    def set_postfix_str(self, text: str, refresh: bool = False) -> None:
        self.postfix = text

    def write(self, text: str) -> None:
        print(text, flush=True)

    def close(self) -> None:
        """Nothing to release."""


def _init_weights(cfg: TrainConfig) -> dict[str, Any]:
    """The policy weights of ``cfg.init_from``, checked for the config's variant; ``ConfigError`` otherwise."""
    from agents.neural import check_meta, read_checkpoint_meta, read_weights

    path = Path(cfg.init_from)
    if not path.is_file():
        raise ConfigError(f"init_from: no checkpoint file {str(path)!r}; give a .zip written by train.py (a best.zip)")
    try:
        meta = read_checkpoint_meta(path)
        check_meta(meta, cfg.rules, path)
        theirs = meta.get("config", {})
        for key in ("net_arch", "activation"):
            if key in theirs and theirs[key] != getattr(cfg, key):
                raise ConfigError(
                    f"init_from {str(path)!r}: the checkpoint has {key} {theirs[key]!r}, this config "
                    f"{getattr(cfg, key)!r}; set {key} to the checkpoint's"
                )
        state = read_weights(path)
    except AgentSpecError as e:
        raise ConfigError(f"init_from: {e}") from None
    except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as e:
        raise ConfigError(f"init_from {str(path)!r}: unreadable checkpoint ({e}); the file is corrupt") from None
    return state


def _make(spec: str, rules: Rules, seed: int, what: str) -> Policy:
    try:
        return make_agent(spec, rules, seed)
    except AgentSpecError as e:
        raise ConfigError(f"{what}: {e}") from None


# --------------------------------------------------------------------------------------------------- main


class _SetupInterrupted(KeyboardInterrupt):
    """SIGTERM / SIGHUP during the set-up or the warm start (before the trainer's own handlers are in place)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _handle_signals(signals: Sequence[int], handler: Any) -> Any:
    """Install ``handler`` for ``signals`` (main thread only); returns a function putting the old handlers back."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.signal(sig, handler) for sig in signals}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def _setup_signals() -> Any:
    """Make SIGTERM and SIGHUP interrupt the set-up like Ctrl-C; returns a function putting the old handlers back."""

    def handler(signum: int, frame: Any) -> None:
        raise _SetupInterrupted(signum)

    return _handle_signals([sig for sig in STOP_SIGNALS if sig != signal.SIGINT], handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    restore = _setup_signals()
    try:
        ns, overrides = parse_cli(argv)
        if ns.resume:
            if ns.print_config:
                raise ConfigError("--print-config and --resume do not go together; read RUN_DIR/config.yaml")
            trainer = Trainer.resume(ns.resume, ns.config, overrides)
        else:
            cfg = load_config(ns.config, overrides)
            if ns.print_config:
                print(config_yaml(cfg), end="")
                return 0
            trainer = Trainer.create(cfg)
    except (ConfigError, RunDirError) as e:
        print(f"train.py: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # during the warm start or the set-up: no training state to save yet
        print(
            "train.py: interrupted before training started (set-up or warm start); nothing was saved, start the run "
            "again",
            file=sys.stderr,
        )
        return 128 + (e.signum if isinstance(e, _SetupInterrupted) else int(signal.SIGINT))
    finally:
        restore()
    return trainer.run()


if __name__ == "__main__":
    sys.exit(main())
