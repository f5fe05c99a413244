"""Duplicate-deal tournaments between agents: scheduling, batched play over worker processes, deal files, outputs.

A *deal* is a game seed: the core deals every hand of a game from it (``core.reset(rules, seeds)``). Each deal of a
pairing is played once per *rotation* of the sides between the two agents, so luck of the cards cancels inside
the group of games that share the deal (RULES.md section 2 for seats and sides):

- two sides (classic, teams of two): both ways round, ``A B`` then ``B A``;
- more sides (simple-3, simple-6-teams, ...): the agents take alternate sides, ``A B A ...``, and every cyclic
  rotation of that pattern *and* of its complement ``B A B ...`` is played (distinct ones only). Each side
  position then holds each agent equally often, and A and B hold the same number of sides in total. So
  simple-3 plays 6 games per deal, simple-4 and simple-8 play 2;
- an agent occupies every seat of its side (teams variants).

``run_tournament(EvalConfig(...))`` schedules a round robin (or a gauntlet: one candidate against every other
agent), splits every pairing into tasks of ``batch`` deals, plays each task through ``agents.arena.play`` with all
of a rotation's games in one batch, spreads the tasks over worker processes and reduces the games to per-deal
margins and scores for ``agents.ratings``. Results are reproducible for a seed, agent list and batch size,
whatever the number of workers: every task reseeds its agents from ``(seed, pairing, first deal, rotation)``.

    result = run_tournament(EvalConfig(variant="classic", agents=["random", "greedy"], deals=200, workers=1))
    paths = write_outputs(result, "runs/eval_demo")
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from agents.arena import play
from agents.base import AgentSpecError, Policy, make_agent, parse_spec
from agents.ratings import (
    SPRT,
    DealHistogram,
    PairingStats,
    RatingTable,
    SPRTResult,
    bootstrap_ratings,
    pairing_stats,
)
from scopa_env import core
from scopa_env.rules import Rules, get_rules, variant_names
from scopa_env.shuffle import splitmix64

__all__ = [
    "DEALS_FORMAT",
    "MODES",
    "RESULTS_FORMAT",
    "AgentEntry",
    "Deals",
    "EvalConfig",
    "PairingResult",
    "SettingError",
    "TournamentError",
    "TournamentInterrupted",
    "TournamentResult",
    "build_agent",
    "check_setting",
    "checkpoint_steps",
    "load_results",
    "make_entries",
    "parse_agent_arg",
    "play_task",
    "print_report",
    "run_tournament",
    "seat_lineups",
    "side_patterns",
    "write_outputs",
]

MODES = ("hands", "matches")
"""``hands``: one hand per game, points per hand; ``matches``: whole matches to the variant's target."""
DEALS_FORMAT = "scopa-deals"
"""``format`` field of a deal file."""
RESULTS_FORMAT = "scopa-eval"
"""``format`` field of ``results.json``."""
MAX_DEAL_SEED = 2**53
"""Generated deal seeds are below this, so they survive any JSON reader (JavaScript's exact integers)."""
DEFAULT_DEALS = 1000
"""Deals per pairing when neither a count nor a deal file is given."""
DEFAULT_BATCH = 500
"""Deals per task by default."""
DEFAULT_SPRT_BATCH = 100
"""Deals per task by default in SPRT mode."""
MAX_SEED = 2**64
"""Seeds are whole numbers in [0, MAX_SEED)."""
MAX_DEALS = 10_000_000
"""Most deals per pairing (a pairing's per-deal results stay in memory, about 40 bytes a deal)."""
MAX_BOOTSTRAP = 100_000
"""Most bootstrap replicates (each holds a k x k table of every pairing's score)."""
WORKERS_PER_CORE = 8
"""``workers`` asks for at most this many processes per core."""
START_METHODS = ("spawn", "forkserver", "fork")
"""Multiprocessing start methods the workers may use."""
MAX_CONFIG_BYTES = 1_000_000
"""Largest YAML config file read (a config is a few lines)."""
PARTIAL_EVERY = 1.0
"""Seconds between two writes of the results so far while a tournament with an output folder plays."""
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
"""Signals that stop a tournament cleanly (``run_tournament(..., handle_signals=True)``), where the OS has them."""
_LABEL_RE = re.compile(r"^([A-Za-z][\w.+-]*)=(.+)$")
_STEP_RE = re.compile(r"step[_-]?(\d+)", re.IGNORECASE)


class TournamentError(ValueError):
    """A tournament that cannot run as configured; the message says what was wrong and how to fix it."""


class SettingError(TournamentError):
    """An ``EvalConfig`` setting with a bad value. ``name`` is the setting, ``detail`` says the value, what is wrong
    and the fix (without the name, so that the caller can say where it came from: a config file key, an option)."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


class TournamentInterrupted(KeyboardInterrupt):
    """A signal (Ctrl-C, SIGTERM, SIGHUP) stopped ``run_tournament``.

    ``result`` holds the games finished before it (``partial`` is True; None if none was scheduled yet) and
    ``paths`` the files written for them (empty without an output folder).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.result: TournamentResult | None = None
        self.paths: dict[str, Path] = {}

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    def __str__(self) -> str:
        return f"stopped by {self.signal_name}"


# --------------------------------------------------------------------------------------------------- deals


@dataclass(frozen=True)
class Deals:
    """The deals (game seeds) of an evaluation, savable to and loadable from a JSON deal file."""

    variant: str
    """Variant the deals were made for."""
    mode: str
    """``hands`` or ``matches``."""
    seeds: npt.NDArray[np.uint64]
    """(n,) uint64 game seeds, unique."""
    source: str = ""
    """Where they came from: ``seed 0`` or a file path."""

    def __len__(self) -> int:
        return int(self.seeds.size)

    @staticmethod
    def generate(variant: str, mode: str, count: int, seed: int) -> Deals:
        """``count`` deal seeds drawn from ``seed`` (SplitMix64, below ``MAX_DEAL_SEED``)."""
        if count < 1:
            raise TournamentError(f"the number of deals must be >= 1, got {count}")
        with np.errstate(over="ignore"):
            base = splitmix64(np.array([seed], dtype=np.uint64))
            seeds = splitmix64((base + np.arange(count, dtype=np.uint64)).astype(np.uint64)) % np.uint64(MAX_DEAL_SEED)
        if np.unique(seeds).size != count:  # never seen; guards the bookkeeping, which keys games by seed
            raise TournamentError(f"seed {seed} gave repeated deals; use another --seed")
        return Deals(variant, mode, seeds, f"seed {seed}")

    def take(self, count: int) -> Deals:
        """The first ``count`` deals."""
        if not 1 <= count <= len(self):
            raise TournamentError(
                f"asked for {count} deals but {self.source or 'the deal set'} has {len(self)}; ask for at most "
                f"{len(self)} or make a bigger deal file with --save-deals"
            )
        return Deals(self.variant, self.mode, self.seeds[:count], self.source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": DEALS_FORMAT,
            "version": 1,
            "variant": self.variant,
            "mode": self.mode,
            "seeds": [int(s) for s in self.seeds],
        }

    def save(self, path: str | Path) -> Path:
        """Write the deal file (JSON), atomically: a file already there is replaced only once the new one is whole."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(path, json.dumps(self.to_dict()) + "\n")
        return path

    @staticmethod
    def load(path: str | Path) -> Deals:
        """Read and check a deal file written by ``save`` (or by hand: ``{"variant", "mode", "seeds"}``)."""
        path = Path(path)
        fix = "make one with evaluate.py --save-deals FILE"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TournamentError(f"deal file {path} does not exist; {fix}") from None
        except IsADirectoryError:
            raise TournamentError(f"deal file {path} is a folder, not a file; give the deal file's path") from None
        except (OSError, ValueError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise TournamentError(f"deal file {path} is not readable JSON ({e}); {fix}") from None
        except RecursionError:
            raise TournamentError(f"deal file {path} is not a deal file (JSON nested too deeply); {fix}") from None
        if not isinstance(data, dict):
            raise TournamentError(f"deal file {path} must hold a JSON object, got {type(data).__name__}; {fix}")
        if data.get("format", DEALS_FORMAT) != DEALS_FORMAT:
            raise TournamentError(f"deal file {path}: format is {data.get('format')!r}, not {DEALS_FORMAT!r}; {fix}")
        variant, mode, seeds = data.get("variant"), data.get("mode"), data.get("seeds")
        if not isinstance(variant, str):
            raise TournamentError(f"deal file {path}: 'variant' must be a variant name; {fix}")
        if mode not in MODES:
            raise TournamentError(f"deal file {path}: 'mode' must be one of {MODES}, got {mode!r}; {fix}")
        ok = isinstance(seeds, list) and seeds and all(type(s) is int and 0 <= s < 2**64 for s in seeds)
        if not ok:
            raise TournamentError(f"deal file {path}: 'seeds' must be a non-empty list of integers in [0, 2^64); {fix}")
        arr = np.array(seeds, dtype=np.uint64)
        if np.unique(arr).size != arr.size:
            raise TournamentError(f"deal file {path}: 'seeds' repeats some seeds; every deal must be distinct")
        return Deals(variant, mode, arr, str(path))


# --------------------------------------------------------------------------------------------------- rotations


def side_patterns(num_sides: int) -> list[tuple[int, ...]]:
    """Agent slot (0 = A, 1 = B) of each side, for every game of a deal group (see the module docstring).

    >>> side_patterns(2)
    [(0, 1), (1, 0)]
    >>> side_patterns(3)
    [(0, 1, 0), (1, 0, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 1, 0)]
    """
    if num_sides < 2:
        raise ValueError(f"a pairing needs at least two sides, got {num_sides}")
    out: list[tuple[int, ...]] = []
    for first in (0, 1):
        base = [(first + i) % 2 for i in range(num_sides)]
        for r in range(num_sides):
            pat = tuple(base[(i + r) % num_sides] for i in range(num_sides))
            if pat not in out:
                out.append(pat)
    return out


def seat_lineups(rules: Rules) -> npt.NDArray[np.int64]:
    """(L, num_players) int64: agent slot of every seat in each rotation; a side's agent fills all its seats."""
    side_of = np.asarray(rules.seat_side, dtype=np.int64)
    return np.array([np.asarray(p, dtype=np.int64)[side_of] for p in side_patterns(rules.num_sides)])


# --------------------------------------------------------------------------------------------------- agents


@dataclass(frozen=True)
class AgentEntry:
    """One agent of a tournament."""

    label: str
    """Unique display name."""
    spec: str
    """Spec string for ``agents.base.make_agent`` (a registered name with options, or a file)."""
    steps: int | None = None
    """Training steps, parsed from a checkpoint file name like ``step_000123456.zip``."""


def _looks_like_path(spec: str) -> bool:
    return any(ch in spec for ch in "/\\") or spec.endswith((".zip", ".onnx", ".npz", ".pt"))


def parse_agent_arg(text: str) -> tuple[str | None, str]:
    """``'cand=runs/x/best.zip'`` -> ``('cand', 'runs/x/best.zip')``; a plain spec gets no label.

    A label is a word (letters, digits, ``_ . + -``) before the first ``=``; ``pimc:worlds=12`` has none.
    """
    text = text.strip()
    m = _LABEL_RE.match(text)
    if m and not Path(text).exists():
        return m.group(1), m.group(2).strip()
    return None, text


def checkpoint_steps(spec: str) -> int | None:
    """Training steps in a checkpoint file name (``.../step_000123456.zip`` -> 123456), else None."""
    if not _looks_like_path(spec):
        return None
    m = _STEP_RE.search(Path(spec).stem)
    return int(m.group(1)) if m else None


def _default_label(spec: str) -> str:
    if not _looks_like_path(spec):
        return spec
    p = Path(spec)
    return f"{p.parent.parent.name}/{p.stem}" if p.parent.name == "checkpoints" and p.parent.parent.name else p.stem


def make_entries(args: Sequence[str]) -> list[AgentEntry]:
    """Entries for agent arguments (``spec`` or ``label=spec``); repeated labels get ``#2``, ``#3`` suffixes."""
    entries: list[AgentEntry] = []
    used: set[str] = set()
    for text in args:
        label, spec = parse_agent_arg(text)
        if not spec:
            raise TournamentError(f"agent argument {text!r} has an empty spec; write NAME=SPEC or just SPEC")
        base = label or _default_label(spec)
        label = base
        k = 2
        while label in used:
            label = f"{base}#{k}"
            k += 1
        used.add(label)
        entries.append(AgentEntry(label, spec, checkpoint_steps(spec)))
    return entries


def build_agent(entry: AgentEntry, rules: Rules, seed: int | None = None) -> Policy:
    """Build one agent, turning every failure into a ``TournamentError`` that names the agent and the fix."""
    where = f"agent {entry.label!r}" + (f" (spec {entry.spec!r})" if entry.spec != entry.label else "")
    try:
        agent = make_agent(entry.spec, rules, seed)
    except AgentSpecError as e:
        raise TournamentError(f"{where}: {e}") from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        raise TournamentError(f"{where}: cannot read {e.filename}: {e.strerror}; check the path") from None
    except Exception as e:
        raise TournamentError(
            f"{where} could not be built ({type(e).__name__}: {e}); check the spec and its options "
            "(evaluate.py --list-agents shows the known agents)"
        ) from e
    if not isinstance(agent, Policy):
        raise TournamentError(f"{where}: the factory returned {type(agent).__name__}, not an agents.base.Policy")
    agent_rules = getattr(agent, "rules", rules)
    if isinstance(agent_rules, Rules) and agent_rules.name != rules.name:
        raise TournamentError(
            f"{where} was made for variant {agent_rules.name!r}, not {rules.name!r}; evaluate it with "
            f"--variant {agent_rules.name} or use an agent trained on {rules.name}"
        )
    obs_version = getattr(agent, "obs_version", None)
    if obs_version is not None and obs_version != core.OBS_VERSION:
        raise TournamentError(
            f"{where} expects observation version {obs_version} but the core produces version {core.OBS_VERSION}; "
            "retrain it or use a checkpoint made with this code version"
        )
    return agent


# --------------------------------------------------------------------------------------------------- config


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _shown(value: Any) -> str:
    """A bad value as a message shows it: its repr (cut short) and, for YAML readers, its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def setting_hint(name: str) -> str:
    """What a good value of the ``EvalConfig`` field ``name`` looks like (the fix in its error messages)."""
    hints = {
        "variant": f"give a variant name: {', '.join(variant_names())}",
        "agents": "give a list of agent specs, e.g. [random, greedy, expert] (evaluate.py --list-agents)",
        "gauntlet": "give one agent spec, e.g. runs/<run>/best.zip or cand=expert",
        "mode": f"give one of {', '.join(MODES)}",
        "deals": f"give a whole number of deals per pairing from 1 to {MAX_DEALS:,}, e.g. 1000",
        "seed": "give a whole number from 0 to 2^64 - 1, e.g. 0",
        "deals_file": "give the path of a deal file written by --save-deals",
        "save_deals": "give the path of the deal file to write, e.g. deals.json",
        "workers": f"give a whole number of worker processes from 0 (all cores) to {WORKERS_PER_CORE * _cores()} "
        f"({WORKERS_PER_CORE} per core), e.g. 1",
        "batch": f"give a whole number of deals per task from 1 to {MAX_DEALS:,}, e.g. {DEFAULT_BATCH}",
        "anchor": "give the label or spec of one of the agents, e.g. random",
        "anchor_rating": "give a finite number, e.g. 0",
        "bootstrap": f"give a whole number of bootstrap replicates from 0 (no rating intervals) to "
        f"{MAX_BOOTSTRAP:,}, e.g. 1000",
        "level": "give a confidence level strictly between 0 and 1, e.g. 0.95",
        "sprt": "give two finite Elo values elo0 < elo1, e.g. [0, 20] (or '0,20')",
        "sprt_alpha": "give a probability strictly between 0 and 0.5, e.g. 0.05",
        "sprt_beta": "give a probability strictly between 0 and 0.5, e.g. 0.05",
        "records": "give the path of the .jsonl file to write, e.g. games.jsonl",
        "plugins": "give a list of importable module names, e.g. [my_agents]",
        "start_method": f"give one of {', '.join(START_METHODS)}",
    }
    return hints[name]


def _whole(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise SettingError(name, f"got {_shown(value)}, not a whole number; {setting_hint(name)}")
    if not low <= int(value) <= high:
        raise SettingError(name, f"got {int(value)}, out of range; {setting_hint(name)}")
    return int(value)


def _real(name: str, value: Any, ok: Callable[[float], bool]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SettingError(name, f"got {_shown(value)}, not a number; {setting_hint(name)}")
    x = float(value)
    if not (math.isfinite(x) and ok(x)):
        raise SettingError(name, f"got {x:g}, out of range; {setting_hint(name)}")
    return x


def _text(name: str, value: Any, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise SettingError(name, f"got {_shown(value)}, not {what}; {setting_hint(name)}")
    if not value.strip():
        raise SettingError(name, f"got an empty string; {setting_hint(name)}")
    if "\x00" in value:
        raise SettingError(name, f"got {value!r}, which holds a NUL character; {setting_hint(name)}")
    return value


def _path_text(name: str, value: Any) -> str:
    return _text(name, os.fspath(value) if isinstance(value, os.PathLike) else value, "a path")


def _text_list(name: str, value: Any, item: Callable[[str, Any], str]) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise SettingError(name, f"got {_shown(value)}, not a list; {setting_hint(name)}")
    out = []
    for i, x in enumerate(value):
        try:
            out.append(item(name, x))
        except SettingError as e:
            raise SettingError(name, f"item {i}: {e.detail}") from None
    return out


def _module_name(name: str, value: Any) -> str:
    text = _text(name, value, "a module name")
    if not all(part.isidentifier() for part in text.split(".")):
        raise SettingError(name, f"got {text!r}, not a module name (dotted Python names); {setting_hint(name)}")
    return text


def check_setting(name: str, value: Any) -> Any:
    """``value`` checked and normalized for the ``EvalConfig`` field ``name``.

    Raises ``SettingError`` naming the value, what is wrong and the fix. Used alike for YAML files, the command line
    and Python, so a setting is refused the same way wherever it comes from.
    """
    if name in ("gauntlet", "mode", "deals", "deals_file", "save_deals", "batch", "anchor", "sprt", "records"):
        if value is None:
            return None
    if name == "variant":
        text = _text(name, value, "a variant name")
        try:
            get_rules(text)
        except ValueError as e:
            raise SettingError(name, str(e)) from None
        return text
    if name == "agents":
        return _text_list(name, value, lambda n, x: _text(n, x, "an agent spec"))
    if name in ("gauntlet", "anchor"):
        return _text(name, value, "an agent spec")
    if name == "mode":
        if value not in MODES:
            raise SettingError(name, f"got {_shown(value)}; {setting_hint(name)}")
        return value
    if name in ("deals", "batch"):
        return _whole(name, value, 1, MAX_DEALS)
    if name == "seed":
        return _whole(name, value, 0, MAX_SEED - 1)
    if name in ("deals_file", "save_deals", "records"):
        return _path_text(name, value)
    if name == "workers":
        return _whole(name, value, 0, WORKERS_PER_CORE * _cores())
    if name == "anchor_rating":
        return _real(name, value, lambda x: True)
    if name == "bootstrap":
        return _whole(name, value, 0, MAX_BOOTSTRAP)
    if name == "level":
        return _real(name, value, lambda x: 0.0 < x < 1.0)
    if name in ("sprt_alpha", "sprt_beta"):
        return _real(name, value, lambda x: 0.0 < x < 0.5)
    if name == "sprt":
        pair = value.split(",") if isinstance(value, str) else value
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise SettingError(name, f"got {_shown(value)}, not two Elo values; {setting_hint(name)}")
        elos = []
        for x in pair:
            if isinstance(x, str):
                try:
                    x = float(x)
                except ValueError:
                    raise SettingError(name, f"got {_shown(value)}, not two numbers; {setting_hint(name)}") from None
            if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
                raise SettingError(name, f"got {_shown(value)}, not two numbers; {setting_hint(name)}")
            elos.append(float(x))
        elo0, elo1 = elos
        if not (math.isfinite(elo0) and math.isfinite(elo1)):
            raise SettingError(name, f"got {elo0:g},{elo1:g}; the Elo values must be finite; {setting_hint(name)}")
        if not elo0 < elo1:
            raise SettingError(name, f"got {elo0:g},{elo1:g}, but elo0 < elo1 is needed; {setting_hint(name)}")
        return (elo0, elo1)
    if name == "plugins":
        return _text_list(name, value, _module_name)
    if name == "start_method":
        if value not in START_METHODS:
            raise SettingError(name, f"got {_shown(value)}; {setting_hint(name)}")
        return value
    raise KeyError(name)


@dataclass
class EvalConfig:
    """Settings of one evaluation (``evaluate.py``): loadable from YAML, overridable on the command line."""

    variant: str = "classic"
    """Variant to play (``scopa_env.rules.VARIANTS``)."""
    agents: list[str] = field(default_factory=list)
    """Agent specs (``random``, ``pimc:worlds=12``, a checkpoint path), optionally ``LABEL=SPEC``."""
    gauntlet: str | None = None
    """A candidate spec that plays every agent of ``agents`` (instead of a round robin among ``agents``)."""
    mode: str | None = None
    """``hands`` (one hand per game) or ``matches`` (to the variant's target); None: the deal file's, or hands."""
    deals: int | None = None
    """Deals per pairing, each played in every rotation; None: all of ``deals_file``, or 1000."""
    seed: int = 0
    """Seed of the generated deals and of the agents."""
    deals_file: str | None = None
    """Play the deals of this deal file instead of generating them."""
    save_deals: str | None = None
    """Write the deals to this file before playing (load it later with ``deals_file``)."""
    workers: int = 0
    """Worker processes; 0 = all cores, 1 = play in this process."""
    batch: int | None = None
    """Deals per task (played in every rotation, one batched arena call per rotation); None: 500, or 100 with SPRT
    (the test is checked after every round of tasks, so smaller tasks waste fewer deals once it has decided)."""
    anchor: str | None = None
    """Agent (label or spec) whose rating is fixed; default ``random`` if playing, else the first agent."""
    anchor_rating: float = 0.0
    """The anchor's rating."""
    bootstrap: int = 1000
    """Bootstrap replicates for the rating intervals (0: no intervals)."""
    level: float = 0.95
    """Confidence level of every interval."""
    sprt: tuple[float, float] | None = None
    """``(elo0, elo1)``: stop as soon as the gauntlet candidate is proven better than elo1 or not better than elo0."""
    sprt_alpha: float = 0.05
    """SPRT false-positive rate."""
    sprt_beta: float = 0.05
    """SPRT false-negative rate."""
    records: str | None = None
    """Write the game record (RULES.md section 8) of every game to this ``.jsonl`` file."""
    plugins: list[str] = field(default_factory=list)
    """Modules imported before building agents (in every worker too), to register custom agents."""
    start_method: str = "spawn"
    """Multiprocessing start method of the workers (``spawn`` is safe with torch)."""

    def __post_init__(self) -> None:
        self.check_settings()

    def check_settings(self) -> None:
        """Check and normalize every field on its own (``check_setting``); raises ``SettingError``."""
        for f in fields(self):
            setattr(self, f.name, check_setting(f.name, getattr(self, f.name)))

    @property
    def num_workers(self) -> int:
        """Worker processes asked for (``workers``, with 0 resolved to the number of cores)."""
        return self.workers if self.workers > 0 else _cores()

    def validate(self) -> None:
        """Check the settings, each on its own and together (agents and deal files are checked when the tournament
        starts)."""
        self.check_settings()
        if len(self.agents) + (self.gauntlet is not None) < 2:
            raise TournamentError("give at least two agents (--agents A B ...), or --gauntlet CANDIDATE --agents B")
        if self.gauntlet is not None and not self.agents:
            raise TournamentError("--gauntlet CANDIDATE needs opponents: add --agents SPEC [SPEC ...]")
        if self.sprt is not None:
            if self.gauntlet is None or len(self.agents) != 1:
                raise TournamentError(
                    "--sprt tests one candidate against one baseline: use --gauntlet CANDIDATE --agents BASELINE"
                )
        files = {"deals_file": "--deals", "save_deals": "--save-deals", "records": "--records"}
        given = [(k, os.path.abspath(getattr(self, k))) for k in files if getattr(self, k) is not None]
        for i, (k, path) in enumerate(given):
            for k2, path2 in given[i + 1 :]:
                if path == path2:
                    raise TournamentError(
                        f"{files[k]} and {files[k2]} are the same file {getattr(self, k)}; writing one would "
                        "destroy the other — give them different paths"
                    )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sprt"] = list(self.sprt) if self.sprt is not None else None
        return d

    @staticmethod
    def from_dict(data: dict[str, Any]) -> EvalConfig:
        """Build from a mapping (a YAML file's contents), every value checked; unknown keys are an error."""
        import difflib

        known = [f.name for f in fields(EvalConfig)]
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                if key in ("hands", "matches"):
                    hint = f"write mode: {key} and deals: N for --{key} N; "
                raise TournamentError(
                    f"unknown evaluation setting {key!r}; {hint}the settings are the fields of EvalConfig: "
                    f"{', '.join(known)}"
                )
        return EvalConfig(**{key: check_setting(key, value) for key, value in data.items()})

    @staticmethod
    def from_yaml(path: str | Path) -> EvalConfig:
        """Read the settings from a YAML file (``yaml.safe_load``: plain data only, no Python objects)."""
        import yaml

        path = Path(path)
        fix = "give a YAML file of EvalConfig settings, e.g. 'agents: [random, greedy]' (see docs/evaluate.md)"
        try:
            if path.is_dir():
                raise TournamentError(f"config file {path} is a folder, not a file; {fix}")
            with open(path, "rb") as f:
                raw = f.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                raise TournamentError(f"config file {path} is over {MAX_CONFIG_BYTES:,} bytes; {fix}")
            data = yaml.safe_load(raw.decode("utf-8")) or {}
        except FileNotFoundError:
            raise TournamentError(f"config file {path} does not exist; check the path given to --config") from None
        except OSError as e:
            raise TournamentError(f"config file {path} cannot be read ({e.strerror}); check --config") from None
        except UnicodeDecodeError:
            raise TournamentError(f"config file {path} is not text (not UTF-8); {fix}") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
            problem = getattr(e, "problem", None) or " ".join(str(e).split())
            raise TournamentError(f"config file {path} is not valid YAML ({where}{problem}); {fix}") from None
        except RecursionError:
            raise TournamentError(f"config file {path} is nested too deeply to be a config; {fix}") from None
        if not isinstance(data, dict):
            raise TournamentError(f"config file {path} must hold a mapping of settings, got {_shown(data)}; {fix}")
        try:
            return EvalConfig.from_dict(data)
        except TournamentError as e:
            raise TournamentError(f"config file {path}: {e}") from None


# --------------------------------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """A slice of one pairing's deals, played in every rotation."""

    index: int
    """Position in the schedule (records are written in this order)."""
    pairing: int
    """Index of the pairing."""
    a: int
    """Entry index of agent A (slot 0: the row agent)."""
    b: int
    """Entry index of agent B (slot 1)."""
    first_deal: int
    """Index of the task's first deal in the deal list."""
    seeds: npt.NDArray[np.uint64]
    """(n,) the deals."""
    labels: tuple[str, str]
    """Labels of A and B (for records and messages)."""


@dataclass
class TaskResult:
    """Per-deal results of a task, from agent A's point of view."""

    index: int
    pairing: int
    first_deal: int
    margins: npt.NDArray[np.float64]
    """(n,) A's points per hand minus B's, averaged over the deal's games."""
    half_points: npt.NDArray[np.int64]
    """(n,) A's half points over the deal's games (win 2, draw 1, loss 0 each)."""
    wins: npt.NDArray[np.int64]
    """(n,) games A won."""
    draws: npt.NDArray[np.int64]
    """(n,) games drawn (hands mode: equal points; matches mode: unfinished after ``arena.play``'s hand cap)."""
    hands: npt.NDArray[np.int64]
    """(n,) hands played over the deal's games."""
    decisions: int
    """Agent decisions taken."""
    records: list[dict[str, Any]] | None = None
    """Game records (each with an ``eval`` key: pairing, deal, rotation) if asked for."""

    def head(self, count: int) -> TaskResult:
        """The results of the first ``count`` deals only (SPRT stops mid-task)."""
        recs = None
        if self.records is not None:
            last = self.first_deal + count
            recs = [r for r in self.records if r["eval"]["deal"] < last]
        return TaskResult(
            self.index,
            self.pairing,
            self.first_deal,
            self.margins[:count],
            self.half_points[:count],
            self.wins[:count],
            self.draws[:count],
            self.hands[:count],
            self.decisions,
            recs,
        )


def agent_seed(seed: int, pairing: int, first_deal: int, rotation: int, slot: int) -> int:
    """The seed an agent gets for one rotation of one task (independent of which process plays it)."""
    return int(np.random.SeedSequence([seed, pairing, first_deal, rotation, slot]).generate_state(1, np.uint64)[0])


def _illegal_move_message(err: core.IllegalActionError, task: Task, lineup: npt.NDArray[np.int64]) -> str:
    m = re.search(r"seat (\d+)", str(err))
    culprit = f"{task.labels[0]!r} or {task.labels[1]!r}"
    if m and int(m.group(1)) < lineup.size:
        culprit = repr(task.labels[int(lineup[int(m.group(1))])])
    return (
        f"agent {culprit} made an illegal move in pairing {task.labels[0]} vs {task.labels[1]} ({err}); "
        "an agent must only choose actions allowed by batch.mask — fix the agent"
    )


def play_task(
    rules: Rules,
    agents: tuple[Policy, Policy],
    task: Task,
    seed: int,
    mode: str,
    record: bool = False,
    on_games: Callable[[int], None] | None = None,
) -> TaskResult:
    """Play a task's deals in every rotation (one ``arena.play`` batch per rotation) and reduce them per deal."""
    lineups = seat_lineups(rules)
    patterns = np.array(side_patterns(rules.num_sides), dtype=np.int64)
    n, num_rot = task.seeds.size, len(patterns)
    margins = np.zeros((num_rot, n))
    half = np.zeros((num_rot, n), dtype=np.int64)
    hands = np.zeros((num_rot, n), dtype=np.int64)
    decisions = 0
    records: list[dict[str, Any]] | None = [] if record else None
    deal_of_seed = {int(s): task.first_deal + i for i, s in enumerate(task.seeds)}
    for r in range(num_rot):
        for slot in (0, 1):
            agents[slot].seed(agent_seed(seed, task.pairing, task.first_deal, r, slot))
        table = np.broadcast_to(lineups[r], (n, rules.num_players))
        try:
            res = play(rules, list(agents), table, task.seeds, mode=mode, record=record, on_step=on_games)  # type: ignore[arg-type]
        except core.IllegalActionError as e:
            raise TournamentError(_illegal_move_message(e, task, lineups[r])) from e
        a_sides = patterns[r] == 0
        pts = res.hand_points.astype(np.float64)
        pa, pb = pts[:, a_sides].mean(axis=1), pts[:, ~a_sides].mean(axis=1)
        margins[r] = (pa - pb) / np.maximum(res.hands, 1)
        if mode == "hands":
            half[r] = np.where(pa > pb, 2, np.where(pa == pb, 1, 0))
        else:
            w = res.winner.astype(np.int64)
            half[r] = np.where(w < 0, 1, np.where(patterns[r][np.maximum(w, 0)] == 0, 2, 0))
        hands[r] = res.hands
        decisions += res.decisions
        if records is not None and res.records is not None:
            side_labels = [task.labels[int(x)] for x in patterns[r]]
            for rec in res.records:
                rec["agents"] = side_labels
                rec["eval"] = {"pairing": list(task.labels), "deal": deal_of_seed[int(rec["seed"])], "rotation": r}
                records.append(rec)
    if records is not None:
        records.sort(key=lambda x: (x["eval"]["deal"], x["eval"]["rotation"]))
    return TaskResult(
        task.index,
        task.pairing,
        task.first_deal,
        margins.mean(axis=0),
        half.sum(axis=0),
        (half == 2).sum(axis=0),
        (half == 1).sum(axis=0),
        hands.sum(axis=0),
        decisions,
        records,
    )


# --------------------------------------------------------------------------------------------------- workers

_WORKER: dict[str, Any] = {}
"""State of a worker process: rules, agent entries, seed, mode and the agents built so far (by entry index)."""

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Environment variables that pin BLAS / OpenMP thread pools; workers run with each set to 1."""

_WORKER_BLOCKED = {getattr(signal, n) for n in ("SIGINT", "SIGHUP") if hasattr(signal, n)}
"""Signals blocked while worker processes are started (a started process inherits the block until it ignores them)."""


@contextmanager
def _worker_signals_blocked() -> Iterator[None]:
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_BLOCKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a signal that came meanwhile is delivered now


def _single_thread_env() -> None:
    for var in THREAD_VARS:
        os.environ[var] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _import_plugins(plugins: Sequence[str]) -> None:
    import importlib

    for mod in plugins:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            raise TournamentError(f"plugin module {mod!r} could not be imported ({e}); check --plugin") from None
        except Exception as e:
            raise TournamentError(
                f"plugin module {mod!r} failed while importing ({type(e).__name__}: {e}); fix the module or drop "
                "--plugin"
            ) from e


def _init_worker(variant: str, entries: list[AgentEntry], seed: int, mode: str, plugins: list[str]) -> None:
    # Ctrl-C and a closed terminal reach the whole process group: the main process stops the workers itself and
    # writes the results, so they ignore both (no traceback from every worker). They were blocked while it spawned.
    for name in ("SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_BLOCKED)
    _single_thread_env()
    _import_plugins(plugins)
    _WORKER.update(rules=get_rules(variant), entries=entries, seed=seed, mode=mode, agents={})


def _worker_agent(i: int) -> Policy:
    cache: dict[int, Policy] = _WORKER["agents"]
    if i not in cache:
        entry: AgentEntry = _WORKER["entries"][i]
        try:
            cache[i] = build_agent(entry, _WORKER["rules"], _WORKER["seed"])
        except TournamentError as e:
            raise TournamentError(
                f"in a worker process: {e}. An agent registered only in the main script is unknown to workers: "
                "put it in an importable module and pass --plugin MODULE, or use --workers 1"
            ) from None
        _single_thread_env()  # the agent may have imported torch
    return cache[i]


def _run_in_worker(task: Task, record: bool) -> TaskResult:
    agents = (_worker_agent(task.a), _worker_agent(task.b))
    return play_task(_WORKER["rules"], agents, task, _WORKER["seed"], _WORKER["mode"], record)


class _Runner:
    """Runs tasks in this process (one worker) or in a process pool, yielding results as they finish."""

    def __init__(
        self,
        rules: Rules,
        entries: list[AgentEntry],
        agents: list[Policy],
        config: EvalConfig,
        workers: int,
        bar: Any,
    ) -> None:
        self.rules = rules
        self.entries = entries
        self.agents = agents
        self.config = config
        self.workers = workers
        self.bar = bar
        self.pool: ProcessPoolExecutor | None = None
        self.saved_env: dict[str, str | None] = {}
        self.games_per_deal = len(side_patterns(rules.num_sides))

    def __enter__(self) -> _Runner:
        if self.workers > 1:
            import multiprocessing as mp

            # Workers start on demand while tasks are submitted; they must inherit single-threaded BLAS / OpenMP
            # settings (numpy loads BLAS before any initializer runs, and busy BLAS threads of several workers
            # fight over the cores). The parent's own libraries are loaded already, so this does not affect it.
            self.saved_env = {v: os.environ.get(v) for v in THREAD_VARS}
            os.environ.update({v: "1" for v in THREAD_VARS})

            self.pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=mp.get_context(self.config.start_method),
                initializer=_init_worker,  # type: ignore[arg-type]
                initargs=(  # type: ignore[arg-type]
                    self.rules.name,
                    self.entries,
                    self.config.seed,
                    self.config.mode,
                    self.config.plugins,
                ),
            )
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if self.pool is not None:
            if exc_type is not None:  # interrupted or failed: stop the workers now, not after their current task
                processes = list((getattr(self.pool, "_processes", None) or {}).values())
                for proc in processes:
                    with contextlib.suppress(Exception):
                        proc.terminate()
                for proc in processes:
                    with contextlib.suppress(Exception):
                        proc.join(timeout=10)
            self.pool.shutdown(wait=True, cancel_futures=True)
            for var, value in self.saved_env.items():
                if value is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = value

    def run(self, tasks: Sequence[Task]) -> Iterator[TaskResult]:
        record = self.config.records is not None
        if self.pool is None:
            for t in tasks:
                yield play_task(
                    self.rules,
                    (self.agents[t.a], self.agents[t.b]),
                    t,
                    self.config.seed,
                    self.config.mode or "hands",
                    record,
                    on_games=self._tick,
                )
            return
        with _worker_signals_blocked():  # workers are spawned while tasks are submitted
            futures: dict[Future[TaskResult], Task] = {self.pool.submit(_run_in_worker, t, record): t for t in tasks}
        pending = set(futures)
        # Left early (an error, a signal), the tasks still pending are not cancelled here: __exit__ terminates the
        # workers and the pool fails them all (cancelling them first trips the pool's own clean-up in Python 3.11).
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                try:
                    res = f.result()
                except BrokenProcessPool as e:
                    raise TournamentError(
                        f"a worker process died ({e}); its error is printed above — rerun with --workers 1 to "
                        "get it in this process"
                    ) from e
                self._tick(futures[f].seeds.size * self.games_per_deal)
                yield res

    def _tick(self, n: int) -> None:
        if n and self.bar is not None:
            self.bar.update(n)


class _RecordSink:
    """Writes game records in schedule order, whatever order the tasks finish in."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self.file: io.TextIOBase | None = None
        self.pending: dict[int, list[dict[str, Any]]] = {}
        self.next = 0
        self.count = 0
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.file = open(self.path, "w", encoding="utf-8")
            except OSError as e:
                raise TournamentError(
                    f"cannot write --records {self.path}: {e.strerror}; choose a file path you can write to"
                ) from None

    def put(self, index: int, records: list[dict[str, Any]] | None) -> None:
        if self.file is None:
            return
        self.pending[index] = records or []
        while self.next in self.pending:
            self._write(self.pending.pop(self.next))
            self.next += 1

    def _write(self, records: list[dict[str, Any]]) -> None:
        assert self.file is not None
        for rec in records:
            self.file.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.count += len(records)
        self.file.flush()  # the games of every finished task are on disk, whatever happens next

    def close(self) -> None:
        if self.file is None:
            return
        for i in sorted(self.pending):
            self._write(self.pending.pop(i))
        self.file.close()
        self.file = None


# --------------------------------------------------------------------------------------------------- results


@dataclass
class PairingResult:
    """All the deals of one pairing (A is the row agent) and their statistics."""

    a: int
    """Entry index of the row agent."""
    b: int
    """Entry index of the column agent."""
    margins: npt.NDArray[np.float64]
    """(deals,) A's points per hand minus B's, per deal group."""
    half_points: npt.NDArray[np.int64]
    """(deals,) A's half points per deal group."""
    wins: int
    draws: int
    losses: int
    hands: int
    stats: PairingStats


@dataclass
class TournamentResult:
    """Everything an evaluation produced."""

    config: EvalConfig
    """The settings, resolved (deals count filled in)."""
    entries: list[AgentEntry]
    """The agents, in table order."""
    deals: Deals
    """The deal set (for SPRT, the budget; ``pairings[i].stats.deals`` says how many were played)."""
    rotations: list[tuple[int, ...]]
    """Side patterns played for every deal (``side_patterns``)."""
    pairings: list[PairingResult]
    """One per pairing, in schedule order."""
    ratings: RatingTable
    """Bradley-Terry ratings with bootstrap intervals."""
    anchor: int
    """Entry index of the anchored agent."""
    sprt: SPRTResult | None
    """The SPRT's outcome, in SPRT mode."""
    hands_played: int
    """Hands played, all pairings (including SPRT tasks cut short)."""
    seconds: float
    """Wall-clock time spent playing."""
    workers: int
    """Worker processes used (1: in this process)."""
    records_written: int = 0
    """Game records written to ``config.records``."""
    created: str = ""
    """Start time, ISO 8601."""
    status: str = "complete"
    """``complete``; while playing ``running``; stopped early ``interrupted`` (a signal) or ``failed`` (an error)."""
    games_planned: int = 0
    """Games of the schedule (for SPRT, of the whole budget)."""
    paths: dict[str, Path] = field(default_factory=dict)
    """The files written for it by ``run_tournament(..., out=DIR)``, by kind (as ``write_outputs`` returns them)."""

    @property
    def partial(self) -> bool:
        """True unless every planned game was played (or the SPRT decided): results so far only."""
        return self.status != "complete"

    @property
    def games_played(self) -> int:
        """Games whose results are counted (all pairings)."""
        return sum(p.stats.games for p in self.pairings)

    @property
    def hands_per_second(self) -> float:
        return self.hands_played / self.seconds if self.seconds > 0 else math.nan

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.entries]

    def pairing(self, a: str | int, b: str | int) -> PairingStats:
        """Statistics of the pairing between two agents (labels or indices), from ``a``'s point of view."""
        ia = a if isinstance(a, int) else self.labels.index(a)
        ib = b if isinstance(b, int) else self.labels.index(b)
        for p in self.pairings:
            if (p.a, p.b) == (ia, ib):
                return p.stats
            if (p.a, p.b) == (ib, ia):
                return _flip(p, self.config.level).stats
        raise KeyError(f"no pairing between {a!r} and {b!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``results.json``)."""
        labels = self.labels
        order = self.ratings.order()
        ratings = []
        for rank, i in enumerate(order):
            nxt = order[rank + 1] if rank + 1 < len(order) else None
            games, score = _agent_totals(self, i)
            ratings.append(
                {
                    "rank": rank + 1,
                    "agent": labels[i],
                    "spec": self.entries[i].spec,
                    "steps": self.entries[i].steps,
                    "rating": float(self.ratings.ratings[i]),
                    "low": float(self.ratings.low[i]),
                    "high": float(self.ratings.high[i]),
                    "games": games,
                    "score": score,
                    "los_next": self.ratings.los(i, nxt) if nxt is not None else None,
                }
            )
        return _jsonable(
            {
                "format": RESULTS_FORMAT,
                "version": 1,
                "created": self.created,
                "code_version": _code_version(),
                "partial": self.partial,
                "status": self.status,
                "games": {"planned": self.games_planned, "played": self.games_played},
                "variant": self.config.variant,
                "mode": self.config.mode,
                "config": self.config.to_dict(),
                "deals": {"count": len(self.deals), "source": self.deals.source},
                "rotations": [list(r) for r in self.rotations],
                "agents": [{"label": e.label, "spec": e.spec, "steps": e.steps} for e in self.entries],
                "anchor": {"agent": labels[self.anchor], "rating": self.ratings.anchor_rating},
                "ratings": ratings,
                "pairings": [
                    {"agent": labels[p.a], "opponent": labels[p.b], **p.stats.to_dict()} for p in self.pairings
                ],
                "sprt": self.sprt.to_dict() if self.sprt is not None else None,
                "speed": {
                    "hands": self.hands_played,
                    "seconds": self.seconds,
                    "hands_per_second": self.hands_per_second,
                    "workers": self.workers,
                    "batch": self.config.batch,
                },
                "records": {"path": self.config.records, "count": self.records_written},
            }
        )


def _flip(p: PairingResult, level: float) -> PairingResult:
    """The same pairing from the other agent's point of view."""
    lineups = (p.stats.games // p.stats.deals) if p.stats.deals else 2
    half = 2 * lineups - p.half_points
    stats = pairing_stats(-p.margins, half, lineups, p.losses, p.draws, p.wins, p.hands, level)
    return PairingResult(p.b, p.a, -p.margins, half, p.losses, p.draws, p.wins, p.hands, stats)


def _agent_totals(result: TournamentResult, i: int) -> tuple[int, float | None]:
    games = points = 0.0
    for p in result.pairings:
        if i in (p.a, p.b):
            games += p.stats.games
            mine = p.wins + p.draws / 2.0
            points += mine if i == p.a else p.stats.games - mine
    return int(games), (points / games if games else None)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x


@functools.lru_cache(maxsize=1)
def _code_version() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a ``results.json`` (or the directory holding it) and check its format."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise ValueError(f"{path} is not an evaluate.py results file (format {RESULTS_FORMAT!r})")
    return data


# --------------------------------------------------------------------------------------------------- the run


def _resolve_entries(config: EvalConfig) -> tuple[list[AgentEntry], int | None]:
    args = ([config.gauntlet] if config.gauntlet is not None else []) + list(config.agents)
    entries = make_entries(args)
    return entries, (0 if config.gauntlet is not None else None)


def _resolve_anchor(config: EvalConfig, entries: list[AgentEntry], candidate: int | None) -> int:
    if config.anchor is not None:
        for i, e in enumerate(entries):
            if config.anchor in (e.label, e.spec):
                return i
        raise TournamentError(
            f"anchor {config.anchor!r} is not one of the agents ({', '.join(e.label for e in entries)}); "
            "give --anchor one of those labels"
        )
    for i, e in enumerate(entries):
        if i == candidate or _looks_like_path(e.spec):
            continue
        try:
            if parse_spec(e.spec)[0] == "random":
                return i
        except AgentSpecError:
            continue  # build_agent reports it
    return 1 if candidate == 0 else 0


def _resolve_deals(config: EvalConfig, rules: Rules) -> Deals:
    if config.deals_file is not None:
        deals = Deals.load(config.deals_file)
        if deals.variant != rules.name:
            raise TournamentError(
                f"deal file {config.deals_file} was made for variant {deals.variant!r}, not {rules.name!r}; "
                f"use --variant {deals.variant} or make a new deal file with --save-deals"
            )
        if config.mode is not None and deals.mode != config.mode:
            raise TournamentError(
                f"deal file {config.deals_file} was made for --{deals.mode}, not --{config.mode}; "
                f"use --{deals.mode} or make a new deal file with --save-deals"
            )
        return deals.take(config.deals) if config.deals is not None else deals
    return Deals.generate(rules.name, config.mode or "hands", config.deals or DEFAULT_DEALS, config.seed)


def _schedule(num_entries: int, candidate: int | None) -> list[tuple[int, int]]:
    if candidate is not None:
        return [(candidate, j) for j in range(num_entries) if j != candidate]
    return [(i, j) for i in range(num_entries) for j in range(i + 1, num_entries)]


def _progress_bar(total: int, unit: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=True, dynamic_ncols=True, file=sys.stderr, smoothing=0.1)


class _SignalStop:
    """While active (``enabled``, in the main thread): SIGINT, SIGTERM and SIGHUP raise ``TournamentInterrupted``.

    Inside ``hold()`` (writing results) a signal waits for the block to end; once stopping, further signals are
    ignored, so that the results so far are written whole. The previous handlers come back on exit.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.saved: dict[int, Any] = {}
        self.held = 0
        self.pending: int | None = None
        self.stopping = False

    def __enter__(self) -> _SignalStop:
        if self.enabled:
            for name in STOP_SIGNALS:
                sig = getattr(signal, name, None)
                if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:  # nohup: SIGHUP stays ignored
                    self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.saved.items():
            signal.signal(sig, old)
        self.saved.clear()

    def _handle(self, signum: int, frame: object) -> None:
        if self.stopping:
            return
        if self.held:
            self.pending = self.pending or signum
            return
        self.stopping = True
        raise TournamentInterrupted(signum)

    @contextmanager
    def hold(self) -> Iterator[None]:
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1
        if not self.held and self.pending is not None and not self.stopping:
            self.stopping = True
            raise TournamentInterrupted(self.pending)


def _probe_writable_dir(path: Path, what: str) -> None:
    """Refuse, before anything is played or created, a folder that cannot be made or written (``what``: its option)."""
    try:
        if path.exists() and not path.is_dir():
            raise TournamentError(
                f"{what} {path} is a file, not a folder; give a folder for the results (it is created if missing) "
                "or move the file away"
            )
        anc = path
        while not anc.exists() and anc.parent != anc:
            anc = anc.parent
        if not anc.is_dir():
            raise TournamentError(f"{what} {path}: {anc} is a file, so no folder can be made inside it; choose another")
        if not os.access(anc, os.W_OK | os.X_OK):
            raise TournamentError(f"{what} {path}: {anc} is not writable (permission denied); choose another folder")
    except OSError as e:
        raise TournamentError(f"{what} {path} cannot be checked ({e.strerror}); choose another folder") from None


def _probe_writable_file(path: Path, what: str) -> None:
    """Refuse a file path that is a folder or whose folder cannot be made or written."""
    try:
        if path.is_dir():
            raise TournamentError(f"{what} {path} is a folder; give a file path inside it, e.g. {path / 'games.jsonl'}")
        anc = path.parent
        while not anc.exists() and anc.parent != anc:
            anc = anc.parent
        if not anc.is_dir():
            raise TournamentError(f"{what} {path}: {anc} is a file, not a folder; choose another path")
        if not os.access(anc, os.W_OK | os.X_OK):
            raise TournamentError(f"{what} {path}: {anc} is not writable (permission denied); choose another path")
    except OSError as e:
        raise TournamentError(f"{what} {path} cannot be checked ({e.strerror}); choose another path") from None


def _make_out_dir(path: Path) -> None:
    """Create the output folder and check that a file can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise TournamentError(
            f"cannot write in the output folder {path} (--out): {e.strerror}; choose a folder you can write to"
        ) from None


@dataclass
class _Played:
    """What a tournament has played so far."""

    parts: dict[int, list[TaskResult]]
    """Finished task results by pairing."""
    hands: int = 0
    """Hands played, including SPRT tasks cut short."""
    sprt: SPRTResult | None = None


def run_tournament(
    config: EvalConfig,
    progress: bool = False,
    out: str | Path | None = None,
    plots: bool = True,
    handle_signals: bool = False,
) -> TournamentResult:
    """Play the evaluation ``config`` describes and compute its statistics.

    Every agent is built here first, so an unknown spec, a missing or corrupt checkpoint, or an agent made for
    another variant or observation version raises ``TournamentError`` before any game is played. ``config`` is not
    changed; the result holds a resolved copy (deal count and mode filled in).

    With ``out`` the folder is checked and made before any game, the results so far are written to it while the
    tournament plays (every ``PARTIAL_EVERY`` seconds at most, each file replaced atomically, ``results.json``
    marked ``"partial": true``) and ``write_outputs`` writes the final ones. If a game fails (an illegal move, a
    worker that dies) the results so far are written before the error is raised. A ``KeyboardInterrupt`` (and with
    ``handle_signals``, SIGTERM or SIGHUP) stops the workers and raises ``TournamentInterrupted`` carrying the
    partial result and the paths written.
    """
    config = replace(config, agents=list(config.agents), plugins=list(config.plugins))
    config.validate()
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        _probe_writable_dir(out_dir, "--out")
    for key, option in (("records", "--records"), ("save_deals", "--save-deals")):
        if getattr(config, key) is not None:
            _probe_writable_file(Path(getattr(config, key)), option)
    rules = get_rules(config.variant)
    with _SignalStop(handle_signals) as stop:
        try:
            return _run(config, rules, progress, out_dir, plots, stop)
        except KeyboardInterrupt as e:
            if isinstance(e, TournamentInterrupted):
                raise
            raise TournamentInterrupted(signal.SIGINT) from None


def _run(
    config: EvalConfig, rules: Rules, progress: bool, out: Path | None, plots: bool, stop: _SignalStop
) -> TournamentResult:
    _import_plugins(config.plugins)
    entries, candidate = _resolve_entries(config)
    deals = _resolve_deals(config, rules)
    agents = [build_agent(e, rules, config.seed) for e in entries]
    anchor = _resolve_anchor(config, entries, candidate)
    config.deals = len(deals)
    if config.batch is None:
        config.batch = DEFAULT_BATCH if config.sprt is None else DEFAULT_SPRT_BATCH
    batch = config.batch
    config.mode = deals.mode
    schedule = _schedule(len(entries), candidate)
    rotations = side_patterns(rules.num_sides)
    num_rot = len(rotations)

    tasks: list[Task] = []
    for p, (a, b) in enumerate(schedule):
        for lo in range(0, len(deals), batch):
            seeds = deals.seeds[lo : lo + batch]
            tasks.append(Task(len(tasks), p, a, b, lo, seeds, (entries[a].label, entries[b].label)))
    workers = max(1, min(config.num_workers, len(tasks)))
    created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    played = _Played({p: [] for p in range(len(schedule))})
    t0 = time.perf_counter()

    def result(bootstrap: int, status: str) -> TournamentResult:
        return _make_result(
            config, entries, deals, rotations, schedule, anchor, played, time.perf_counter() - t0, workers,
            sink.count, created, bootstrap, status,
        )  # fmt: skip

    with stop.hold():
        if config.save_deals is not None:
            try:
                deals.save(config.save_deals)
            except OSError as e:
                raise TournamentError(f"cannot write --save-deals {config.save_deals}: {e.strerror}") from None
        static: dict[str, Path] = {}
        if out is not None:
            _make_out_dir(out)
            static = _write_static(config, deals, out)
        sink = _RecordSink(config.records)
    last_write = -math.inf

    def checkpoint() -> None:  # the results so far, at most every PARTIAL_EVERY seconds
        nonlocal last_write
        if out is not None and time.monotonic() - last_write >= PARTIAL_EVERY:
            _write_tables(result(0, "running"), out)
            last_write = time.monotonic()

    unit = "hand" if config.mode == "hands" else "game"
    bar = _progress_bar(len(deals) * num_rot * len(schedule), unit, progress)
    failure: BaseException | None = None
    try:
        with _Runner(rules, entries, agents, config, workers, bar) as runner:
            if config.sprt is None:
                for res in runner.run(tasks):
                    with stop.hold():
                        played.parts[res.pairing].append(res)
                        played.hands += int(res.hands.sum())
                        sink.put(res.index, res.records)
                        checkpoint()
            else:
                sprt = SPRT(config.sprt[0], config.sprt[1], config.sprt_alpha, config.sprt_beta, num_rot)
                counts = np.zeros(2 * num_rot + 1)
                for lo in range(0, len(tasks), workers):
                    rnd = sorted(runner.run(tasks[lo : lo + workers]), key=lambda r: r.index)
                    decision = "inconclusive"
                    with stop.hold():
                        played.hands += sum(int(r.hands.sum()) for r in rnd)
                        for res in rnd:
                            used, _, decision = sprt.scan(res.half_points, counts)
                            res = res.head(used) if used < res.half_points.size else res
                            counts += np.bincount(res.half_points, minlength=counts.size)
                            played.parts[0].append(res)
                            sink.put(res.index, res.records)
                            if decision != "inconclusive":
                                break
                        played.sprt = sprt.result(counts)
                        checkpoint()
                    if decision != "inconclusive":
                        break
    except (KeyboardInterrupt, Exception) as e:
        failure = e
    finally:
        stop.stopping = True  # from here on signals are ignored: the results are being written
        with stop.hold():
            sink.close()
            if bar is not None:
                bar.close()
    if failure is None:
        with stop.hold():
            final = result(config.bootstrap, "complete")
            if out is not None:
                final.paths = write_outputs(final, out, plots=plots)
        return final
    interrupted_ = isinstance(failure, KeyboardInterrupt)
    partial = result(config.bootstrap, "interrupted" if interrupted_ else "failed")
    if out is not None:
        partial.paths = {**static, **_write_tables(partial, out)}
    if not interrupted_:
        if out is None or not isinstance(failure, TournamentError):
            raise failure
        raise TournamentError(
            f"{failure}. The {partial.games_played} games finished before it are saved in {out}/ (results.json, "
            "marked partial)"
        ) from failure
    interrupted = failure if isinstance(failure, TournamentInterrupted) else TournamentInterrupted(signal.SIGINT)
    interrupted.result, interrupted.paths = partial, partial.paths
    raise interrupted


def _partial_ratings(num: int, hist: list[DealHistogram], anchor: int, config: EvalConfig, n_boot: int) -> RatingTable:
    """Ratings of the games played so far; all NaN while the pairings played do not link every agent."""
    try:
        return bootstrap_ratings(num, hist, anchor, config.anchor_rating, n_boot, config.level, config.seed)
    except ValueError:
        nan = np.full(num, np.nan)
        return RatingTable(nan, nan.copy(), nan.copy(), np.zeros((0, num)), anchor, config.anchor_rating)


def _make_result(
    config: EvalConfig,
    entries: list[AgentEntry],
    deals: Deals,
    rotations: list[tuple[int, ...]],
    schedule: list[tuple[int, int]],
    anchor: int,
    played: _Played,
    seconds: float,
    workers: int,
    records_written: int,
    created: str,
    bootstrap: int,
    status: str,
) -> TournamentResult:
    num_rot = len(rotations)
    pairings: list[PairingResult] = []
    for p, (a, b) in enumerate(schedule):
        got = sorted(played.parts[p], key=lambda r: r.first_deal)
        margins = np.concatenate([np.zeros(0)] + [r.margins for r in got])
        half = np.concatenate([np.zeros(0, dtype=np.int64)] + [r.half_points for r in got])
        wins = int(sum(int(r.wins.sum()) for r in got))
        draws = int(sum(int(r.draws.sum()) for r in got))
        hands = int(sum(int(r.hands.sum()) for r in got))
        losses = margins.size * num_rot - wins - draws
        stats = pairing_stats(margins, half, num_rot, wins, draws, losses, hands, config.level)
        pairings.append(PairingResult(a, b, margins, half, wins, draws, losses, hands, stats))
    hist = [DealHistogram.from_half_points(p.a, p.b, p.half_points, num_rot) for p in pairings]
    if status == "complete":
        ratings = bootstrap_ratings(
            len(entries), hist, anchor, config.anchor_rating, bootstrap, config.level, config.seed
        )
    else:
        ratings = _partial_ratings(len(entries), hist, anchor, config, bootstrap)
    return TournamentResult(
        config,
        entries,
        deals,
        rotations,
        pairings,
        ratings,
        anchor,
        played.sprt,
        played.hands,
        seconds,
        workers,
        records_written,
        created,
        status,
        len(deals) * num_rot * len(schedule),
    )


# --------------------------------------------------------------------------------------------------- outputs


def _fmt(x: float | None, digits: int = 2, sign: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "inf" if x is not None and x > 0 else ("-inf" if x is not None and x < 0 else "n/a")
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _pm(value: float, low: float, high: float, digits: int = 2, sign: bool = True) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return _fmt(value, digits, sign)
    return f"{_fmt(value, digits, sign)} ± {(high - low) / 2:.{digits}f}"


def _crosstable(result: TournamentResult) -> list[list[str]]:
    labels = result.labels
    k = len(labels)
    cells = [["" for _ in range(k)] for _ in range(k)]
    for i in range(k):
        cells[i][i] = "—"
    for p in result.pairings:
        s = p.stats
        for i, j, sgn, sc in ((p.a, p.b, 1.0, s.score.value), (p.b, p.a, -1.0, 1.0 - s.score.value)):
            m = s.margin
            lo, hi = sorted((sgn * m.low, sgn * m.high))
            cells[i][j] = f"{_pm(sgn * m.value, lo, hi)} ({100 * sc:.0f}%)"
    return cells


def _table_rows(result: TournamentResult) -> dict[str, tuple[list[str], list[list[str]]]]:
    d = result.to_dict()
    rating_rows = [
        [
            str(r["rank"]),
            r["agent"],
            _fmt(r["rating"], 0),
            f"[{_fmt(r['low'], 0)}, {_fmt(r['high'], 0)}]",
            str(r["games"]),
            f"{100 * r['score']:.1f}%" if r["score"] is not None else "n/a",
            f"{100 * r['los_next']:.0f}%" if r["los_next"] is not None else "",
        ]
        for r in d["ratings"]
    ]
    pairing_rows = []
    for p in result.pairings:
        s = p.stats
        pairing_rows.append(
            [
                result.labels[p.a],
                result.labels[p.b],
                str(s.deals),
                _pm(s.margin.value, s.margin.low, s.margin.high),
                f"{100 * s.score.value:.1f}%",
                f"{s.wins}/{s.draws}/{s.losses}",
                f"{100 * s.win_rate.value:.1f}% [{100 * s.win_rate.low:.1f}, {100 * s.win_rate.high:.1f}]",
                f"{_fmt(s.elo.value, 0, True)} [{_fmt(s.elo.low, 0, True)}, {_fmt(s.elo.high, 0, True)}]",
                f"{100 * s.los:.1f}%" if math.isfinite(s.los) else "n/a",
            ]
        )
    lv = f"{100 * result.config.level:g}%"
    unit = "hand" if result.config.mode == "hands" else "game"
    return {
        "ratings": (
            ["#", "agent", "rating", f"{lv} CI", "games", "score", "LOS next"],
            rating_rows,
        ),
        "pairings": (
            [
                "agent",
                "opponent",
                "deals",
                f"margin ± {lv}",
                "score",
                f"{unit}s W/D/L",
                f"win rate [Wilson {lv}]",
                f"Elo [{lv}]",
                "LOS",
            ],
            pairing_rows,
        ),
        "crosstable": (
            ["", *result.labels],
            [[lab, *row] for lab, row in zip(result.labels, _crosstable(result), strict=True)],
        ),
    }


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _summary_lines(result: TournamentResult) -> list[str]:
    cfg = result.config
    anchor = result.labels[result.anchor]
    deals = f"{len(result.deals)} deals"
    if result.sprt is not None:
        deals = f"{result.sprt.deals} deals of a budget of {len(result.deals)}"
    lines = []
    if result.partial:
        why = {"running": "still playing", "interrupted": "stopped by a signal", "failed": "stopped by an error"}
        lines.append(
            f"PARTIAL RESULTS ({why.get(result.status, result.status)}): {result.games_played} of "
            f"{result.games_planned} planned games played"
        )
    return [
        *lines,
        f"variant {cfg.variant}, {cfg.mode} mode, {deals} ({result.deals.source}) x "
        f"{len(result.rotations)} rotations per pairing, {len(result.pairings)} pairing(s)",
        f"ratings: Bradley-Terry on the logistic Elo scale, {anchor} fixed at {cfg.anchor_rating:g}, "
        f"{result.ratings.samples.shape[0]} bootstrap replicates over deals",
        f"speed: {result.hands_played} hands in {result.seconds:.1f} s = {result.hands_per_second:,.0f} hands/s "
        f"({result.workers} worker(s), {cfg.batch} deals per task)",
    ]


def render_markdown(result: TournamentResult) -> str:
    """The report as Markdown (``report.md``)."""
    tables = _table_rows(result)
    unit = "hand" if result.config.mode == "hands" else "game"
    out = [f"# Evaluation: {result.config.variant}", ""]
    out += [f"- {line}" for line in _summary_lines(result)]
    if result.sprt is not None:
        out += [f"- {result.sprt.describe()}"]
    out += ["", "## Ratings", "", _md_table(*tables["ratings"]), ""]
    out += [
        "## Crosstable",
        "",
        f"Row agent's points per hand minus the column agent's, ± the {100 * result.config.level:g}% interval over "
        f"deals, and the row agent's score per {unit} (win 1, draw 1/2).",
        "",
        _md_table(*tables["crosstable"]),
        "",
    ]
    out += ["## Pairings", "", _md_table(*tables["pairings"]), ""]
    return "\n".join(out)


def print_report(result: TournamentResult, file: Any = None) -> None:
    """Print the ratings, crosstable and pairings as terminal tables (rich)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file)
    if not console.is_terminal:  # a log file or a pipe: do not wrap the tables at 80 columns
        console = Console(file=file, width=160)
    tables = _table_rows(result)
    for line in _summary_lines(result):
        console.print(line, highlight=False)
    if result.sprt is not None:
        console.print(result.sprt.describe(), style="bold", highlight=False)
    titles = {"ratings": "Ratings", "crosstable": "Crosstable (points per hand, score)", "pairings": "Pairings"}
    for key, title in titles.items():
        if key == "crosstable" and len(result.entries) > 10:
            continue  # too wide for a terminal; it is in report.md and crosstable.csv
        header, rows = tables[key]
        t = Table(title=title, title_justify="left")
        for h in header:
            t.add_column(h, overflow="fold")
        for row in rows:
            t.add_row(*row)
        console.print(t)


@contextmanager
def _atomic(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """A file object whose contents replace ``path`` only once written whole (a temporary file, then os.replace)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        with open(tmp, mode) if "b" in mode else open(tmp, mode, encoding="utf-8", newline="") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _atomic_write_text(path: Path, text: str) -> None:
    with _atomic(path) as f:
        f.write(text)


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with _atomic(path) as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows([["" if v is None else v for v in row] for row in rows])


def plot_ratings(result: TournamentResult, path: str | Path) -> Path:
    """PNG of every agent's rating with its interval, best at the top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = result.ratings.order()[::-1]
    r = result.ratings
    y = np.arange(len(order))
    vals = r.ratings[order]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(order) + 1.5))
    if np.isfinite(r.low).all():
        err = np.vstack([vals - r.low[order], r.high[order] - vals])
        ax.errorbar(vals, y, xerr=err, fmt="o", capsize=4)
    else:
        ax.plot(vals, y, "o")
    ax.set_yticks(y, [result.labels[i] for i in order])
    ax.axvline(r.anchor_rating, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(
        f"rating (Elo, {result.labels[result.anchor]} = {r.anchor_rating:g}), {100 * result.config.level:g}% CI"
    )
    ax.set_title(f"{result.config.variant}: {result.config.mode} mode, {len(result.deals)} deals per pairing")
    fig.tight_layout()
    with _atomic(Path(path), "wb") as f:
        fig.savefig(f, dpi=120, format="png")
    plt.close(fig)
    return Path(path)


def plot_steps(result: TournamentResult, path: str | Path) -> Path | None:
    """PNG of checkpoint ratings against training steps (None unless two or more agents carry a step count)."""
    ck = sorted((e.steps, i) for i, e in enumerate(result.entries) if e.steps is not None)
    if len(ck) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = result.ratings
    steps = np.array([s for s, _ in ck], dtype=np.float64)
    idx = [i for _, i in ck]
    vals = r.ratings[idx]
    fig, ax = plt.subplots(figsize=(7, 4))
    if np.isfinite(r.low).all():
        ax.errorbar(steps, vals, yerr=np.vstack([vals - r.low[idx], r.high[idx] - vals]), fmt="o-", capsize=3)
    else:
        ax.plot(steps, vals, "o-")
    for i, e in enumerate(result.entries):
        if e.steps is None:
            ax.axhline(r.ratings[i], ls="--", lw=0.8, color="grey")
            ax.annotate(e.label, (steps[0], r.ratings[i]), textcoords="offset points", xytext=(2, 2), fontsize=8)
    ax.set_xlabel("training steps")
    ax.set_ylabel(f"rating (Elo, {result.labels[result.anchor]} = {r.anchor_rating:g})")
    ax.set_title(f"{result.config.variant}: rating against training steps")
    fig.tight_layout()
    with _atomic(Path(path), "wb") as f:
        fig.savefig(f, dpi=120, format="png")
    plt.close(fig)
    return Path(path)


def write_outputs(result: TournamentResult, out_dir: str | Path, plots: bool = True) -> dict[str, Path]:
    """Write ``results.json``, ``report.md``, ``ratings.csv``, ``pairings.csv``, ``crosstable.csv``, ``deals.json``,
    ``config.yaml`` and the PNG plots into ``out_dir``; returns the paths by kind. Each file is replaced atomically."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = _write_static(result.config, result.deals, out)
    paths.update(_write_tables(result, out))
    if plots:
        paths["ratings_png"] = plot_ratings(result, out / "ratings.png")
        steps_png = plot_steps(result, out / "ratings_vs_steps.png")
        if steps_png is not None:
            paths["steps_png"] = steps_png
    return paths


def _write_static(config: EvalConfig, deals: Deals, out: Path) -> dict[str, Path]:
    """``config.yaml`` and ``deals.json``: known before the first game."""
    import yaml

    paths = {"config": out / "config.yaml", "deals": out / "deals.json"}
    _atomic_write_text(paths["config"], yaml.safe_dump(config.to_dict(), sort_keys=False))
    if not (config.deals_file is not None and _same_file(paths["deals"], Path(config.deals_file))):
        deals.save(paths["deals"])  # (never over the deal file being played, which may hold more deals)
    return paths


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _write_tables(result: TournamentResult, out: Path) -> dict[str, Path]:
    """``results.json``, ``report.md`` and the CSV tables (the files that change while a tournament plays)."""
    paths: dict[str, Path] = {}
    data = result.to_dict()
    paths["json"] = out / "results.json"
    _atomic_write_text(paths["json"], json.dumps(data, indent=1) + "\n")
    paths["markdown"] = out / "report.md"
    _atomic_write_text(paths["markdown"], render_markdown(result))

    rating_keys = ["rank", "agent", "spec", "steps", "rating", "low", "high", "games", "score", "los_next"]
    paths["ratings_csv"] = out / "ratings.csv"
    _write_csv(paths["ratings_csv"], rating_keys, [[r[k] for k in rating_keys] for r in data["ratings"]])

    pair_header = ["agent", "opponent", "deals", "games", "hands"]
    intervals = ("margin", "score", "elo", "win_rate")
    for key in intervals:
        pair_header += [key, f"{key}_low", f"{key}_high"]
    pair_header += ["wins", "draws", "losses", "los"]
    rows = []
    for p in data["pairings"]:
        row = [p["agent"], p["opponent"], p["deals"], p["games"], p["hands"]]
        for key in intervals:
            row += [p[key]["value"], p[key]["low"], p[key]["high"]]
        rows.append([*row, p["wins"], p["draws"], p["losses"], p["los"]])
    paths["pairings_csv"] = out / "pairings.csv"
    _write_csv(paths["pairings_csv"], pair_header, rows)

    num = len(result.entries)
    margin: list[list[Any]] = [[None] * num for _ in range(num)]
    for p in result.pairings:
        if math.isfinite(p.stats.margin.value):  # a pairing not played yet (partial results) has no margin
            margin[p.a][p.b] = p.stats.margin.value
            margin[p.b][p.a] = -p.stats.margin.value
    paths["crosstable_csv"] = out / "crosstable.csv"
    _write_csv(
        paths["crosstable_csv"],
        ["agent", *result.labels],
        [[lab, *row] for lab, row in zip(result.labels, margin, strict=True)],
    )
    return paths
