"""Duplicate-deal tournaments between agents: the settings (``EvalConfig``, checked one by one and together, from
Python, YAML or the command line) and ``run_tournament``, which resolves them, plays the schedule and writes the
results, stopping cleanly on a signal or an error with the results so far.

``run_tournament(EvalConfig(...))`` schedules a round robin (or a gauntlet: one candidate against every other
agent) on duplicate deals with the sides rotated, and reduces the games to per-deal margins and scores for
``agents.evaluation.ratings``. Results are reproducible for a seed, agent list and batch size, whatever the number of
workers. The parts live beside it: ``agents.evaluation.deals`` (the deal set and deal files),
``agents.evaluation.entries`` (agent arguments and building the agents), ``agents.evaluation.schedule`` (rotations,
tasks, playing them, the worker pool), ``agents.evaluation.cluster`` (the same tasks on a Ray cluster: the ``ray``
setting) and ``agents.evaluation.report`` (the results, ``results.json``, the tables and plots); import their names
from them.

    result = run_tournament(EvalConfig(variant="classic", agents=["random", "greedy"], deals=200, workers=1))
    paths = write_outputs(result, "runs/eval_demo")
"""

from __future__ import annotations

import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.base import AgentSpecError, looks_like_path, parse_spec
from agents.cli.settings import YamlFileError, read_yaml_mapping, setting, short_repr
from agents.cli.signals import SignalStop, StopSignals
from agents.errors import TournamentError
from agents.evaluation.deals import MODES, Deals
from agents.evaluation.entries import AgentEntry, build_agent, import_plugins, make_entries
from agents.evaluation.ratings import SPRT, DealHistogram, RatingTable, SPRTResult, bootstrap_ratings, pairing_stats
from agents.evaluation.report import (
    PairingResult,
    TournamentResult,
    write_outputs,
    write_static,
    write_tables,
)
from agents.evaluation.schedule import (
    RecordSink,
    TaskResult,
    TaskRunner,
    game_plan,
    has_partners,
    make_tasks,
    schedule_pairings,
    side_patterns,
)
from scopa_env.games.driver import play
from scopa_env.rules import Rules, get_rules, variant_names

if TYPE_CHECKING:
    from agents.evaluation.cluster import RayTaskRunner

__all__ = [
    "EvalConfig",
    "SettingError",
    "TournamentInterrupted",
    "check_output_file",
    "check_setting",
    "run_tournament",
    "setting_hint",
]

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


class SettingError(TournamentError):
    """An ``EvalConfig`` setting with a bad value. ``name`` is the setting, ``detail`` says the value, what is wrong
    and the fix (without the name, so that the caller can say where it came from: a config file key, an option)."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


class TournamentInterrupted(SignalStop):
    """A signal (``agents.cli.signals.STOP_SIGNALS``: Ctrl-C, SIGTERM, SIGHUP) stopped ``run_tournament``.

    ``result`` holds the games finished before it (``partial`` is True; None if none was scheduled yet) and
    ``paths`` the files written for them (empty without an output folder).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.result: TournamentResult | None = None
        self.paths: dict[str, Path] = {}

    def __str__(self) -> str:
        return f"stopped by {self.signal_name}"


# --------------------------------------------------------------------------------------------------- config


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _shown(value: Any) -> str:
    """A bad value as a message shows it: its repr cut short (``short_repr``: never formatted whole) and, for YAML
    readers, its type."""
    return f"{short_repr(value)} ({type(value).__name__})"


def setting_hint(name: str) -> str:
    """What a good value of the ``EvalConfig`` field ``name`` looks like (the fix in its error messages)."""
    hints = {
        "variant": f"give a variant name: {', '.join(variant_names())}",
        "agents": "give a list of agent specs, e.g. [random, greedy, expert] (evaluate.py --list-agents)",
        "gauntlet": "give one agent spec, e.g. runs/<run>/best.zip or cand=expert",
        "partner": "give one agent spec for the teammates of both agents (team variants only), e.g. expert",
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
        "ray": "give local (start Ray on this machine), auto (join this machine's Ray cluster) or a cluster address "
        "HOST:PORT, e.g. 127.0.0.1:6379",
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
        raise SettingError(name, f"got {short_repr(value)}, which holds a NUL character; {setting_hint(name)}")
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
        raise SettingError(
            name, f"got {short_repr(text)}, not a module name (dotted Python names); {setting_hint(name)}"
        )
    return text


def check_setting(name: str, value: Any) -> Any:
    """``value`` checked and normalized for the ``EvalConfig`` field ``name``.

    Raises ``SettingError`` naming the value, what is wrong and the fix. Used alike for YAML files, the command line
    and Python, so a setting is refused the same way wherever it comes from.
    """
    if name in (
        "gauntlet",
        "partner",
        "mode",
        "deals",
        "deals_file",
        "save_deals",
        "batch",
        "anchor",
        "sprt",
        "records",
        "ray",
    ):
        if value is None:
            return None
    if name == "variant":
        text = _text(name, value, "a variant name")
        try:
            get_rules(text)
        except ValueError as e:
            raise SettingError(name, str(e) if len(text) <= 60 else f"got {_shown(text)}, not a variant name") from None
        return text
    if name == "agents":
        return _text_list(name, value, lambda n, x: _text(n, x, "an agent spec"))
    if name in ("gauntlet", "anchor", "partner"):
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
    if name == "ray":
        from agents.evaluation.cluster import check_ray_address  # imports no Ray: the address is checked without it

        try:
            return check_ray_address(_text(name, value, "a Ray address"))
        except ValueError as e:
            raise SettingError(name, str(e)) from None
    raise KeyError(name)


@dataclass
class EvalConfig:
    """Settings of one evaluation (``evaluate.py``): loadable from YAML, overridable on the command line."""

    variant: str = setting("classic", f"Variant to play: {', '.join(variant_names())}.")
    agents: list[str] = setting(
        doc="Agent specs of the round robin, or the gauntlet's opponents (``random``, ``pimc:worlds=12``, a "
        "checkpoint path), optionally ``LABEL=SPEC``.",
        default_factory=list,
        metavar="SPEC",
    )
    gauntlet: str | None = setting(
        None,
        "A candidate spec that plays every agent of ``agents`` (instead of a round robin among ``agents``).",
        metavar="SPEC",
    )
    partner: str | None = setting(
        None,
        "Team variants: an agent spec that plays the teammates of both agents of every pairing (each agent then sits "
        "in one seat of its side, every seat in turn; ``agents.evaluation.schedule.game_plan``); None: an agent "
        "fills its side.",
        metavar="SPEC",
    )
    mode: str | None = setting(
        None,
        "``hands`` (one hand per game) or ``matches`` (to the variant's target); None: the deal file's, or hands. "
        "On the command line ``--hands N`` / ``--matches N`` set it with ``deals``.",
        option=False,
    )
    deals: int | None = setting(
        None, "Deals per pairing, each played in every rotation; None: all of ``deals_file``, or 1000.", option=False
    )
    seed: int = setting(0, "Seed of the generated deals and of the agents.")
    deals_file: str | None = setting(
        None, "Play the deals of this deal file instead of generating them.", option="--deals", metavar="FILE"
    )
    save_deals: str | None = setting(
        None, "Write the deals to this file before playing (load it later with ``deals_file``).", metavar="FILE"
    )
    workers: int = setting(0, "Worker processes; 0 = all cores, 1 = play in this process.")
    batch: int | None = setting(
        None,
        "Deals per task (played in every rotation, one batched arena call per rotation); None: 500, or 100 with SPRT "
        "(the test is checked after every round of tasks, so smaller tasks waste fewer deals once it has decided).",
        metavar="N",
    )
    anchor: str | None = setting(
        None,
        "Agent (label or spec) whose rating is fixed; default ``random`` if playing, else the first agent.",
        metavar="AGENT",
    )
    anchor_rating: float = setting(0.0, "The anchor's rating.", metavar="R")
    bootstrap: int = setting(1000, "Bootstrap replicates for the rating intervals (0: no intervals).", metavar="N")
    level: float = setting(0.95, "Confidence level of every interval.")
    sprt: tuple[float, float] | None = setting(
        None,
        "``(elo0, elo1)``: stop as soon as the gauntlet candidate is proven better than elo1 or not better than elo0 "
        "(a sequential test of ``gauntlet`` against one agent).",
        metavar="ELO0,ELO1",
    )
    sprt_alpha: float = setting(0.05, "SPRT false-positive rate.", metavar="A")
    sprt_beta: float = setting(0.05, "SPRT false-negative rate.", metavar="B")
    records: str | None = setting(
        None, "Write the game record (RULES.md section 8) of every game to this ``.jsonl`` file.", metavar="FILE.jsonl"
    )
    plugins: list[str] = setting(
        doc="Modules imported before building agents (in every worker too), to register custom agents; on the "
        "command line ``--plugin MODULE``, once per module.",
        default_factory=list,
        option="--plugin",
        metavar="MODULE",
        repeat=True,
    )
    start_method: str = setting(
        "spawn",
        f"Multiprocessing start method of the workers: {', '.join(START_METHODS)} (``spawn`` is safe with torch).",
    )
    ray: str | None = setting(
        None,
        "Play the tasks on Ray instead of local processes: ``local`` (start Ray here), ``auto`` (this machine's "
        "cluster) or a cluster address ``HOST:PORT``; ``workers`` is then the most tasks in flight (0: the "
        "cluster's CPUs). Needs ``pip install 'scopa[ray]'`` (docs/ray.md).",
        metavar="ADDRESS",
    )

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
        if self.partner is not None:
            if not has_partners(get_rules(self.variant)):
                raise TournamentError(
                    f"--partner {self.partner}: {self.variant} has no teams, so its players have no partner; drop "
                    "--partner, or play a team variant (scopa-a-quattro, scopone-scientifico, simple-4-teams, ...)"
                )
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
                close = difflib.get_close_matches(str(key)[:40], known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                if key in ("hands", "matches"):
                    hint = f"write mode: {key} and deals: N for --{key} N; "
                raise TournamentError(
                    f"unknown evaluation setting {short_repr(key)}; {hint}the settings are the fields of EvalConfig: "
                    f"{', '.join(known)}"
                )
        return EvalConfig(**{key: check_setting(key, value) for key, value in data.items()})

    @staticmethod
    def from_yaml(path: str | Path, overrides: dict[str, Any] | None = None, trust_plugins: bool = False) -> EvalConfig:
        """Read the settings from a YAML file (``agents.cli.settings.read_yaml_mapping``: plain data only, no Python
        objects, aliases, repeated keys or huge integers), with ``overrides`` (settings given on the command line) on
        top. Every value goes through ``check_setting``; a bad key or value of the file is reported as the file's.

        A config file never runs code: its ``plugins`` (modules that would be imported, so their code would run) are
        refused unless ``trust_plugins`` (``evaluate.py --trust-config-plugins``) confirms them; plugins given in
        ``overrides`` (``--plugin``) come from the user and need no confirmation."""
        path = Path(path)
        fix = "give a YAML file of EvalConfig settings, e.g. 'agents: [random, greedy]' (see docs/evaluate.md)"
        try:
            data = read_yaml_mapping(path, max_bytes=MAX_CONFIG_BYTES)
        except YamlFileError as e:
            if e.kind != "not_mapping" or e.detail:
                raise TournamentError(e.describe(fix)) from None
            data = {}  # an empty list, 0 or false: no settings, as an empty file
        try:
            checked = EvalConfig.from_dict(data)  # the file's settings on their own: an error there is the file's
        except TournamentError as e:
            raise TournamentError(f"config file {path}: {e}") from None
        if checked.plugins and not trust_plugins:
            names = " ".join(f"--plugin {m}" for m in checked.plugins)
            raise TournamentError(
                f"config file {path} names plugins {checked.plugins}: modules that evaluate.py would import, running "
                "their code; a config file is data and runs no code unless you say so. Give them on the command line "
                f"({names}), or confirm the file's with --trust-config-plugins if you trust where it came from"
            )
        return EvalConfig.from_dict({**data, **(overrides or {})})


# --------------------------------------------------------------------------------------------------- the run


def _resolve_entries(config: EvalConfig) -> tuple[list[AgentEntry], int | None]:
    args = ([config.gauntlet] if config.gauntlet is not None else []) + list(config.agents)
    entries = make_entries(args)
    return entries, (0 if config.gauntlet is not None else None)


def _partner_entry(config: EvalConfig, entries: list[AgentEntry]) -> AgentEntry | None:
    """The teammates' agent (``partner``) as an entry of its own: it plays in every pairing but is no rated agent."""
    if config.partner is None:
        return None
    entry = make_entries([config.partner])[0]
    taken = {e.label for e in entries}
    label = entry.label if entry.label not in taken else f"{entry.label} (partner)"
    return AgentEntry(label, entry.spec, entry.steps)


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
        if i == candidate or looks_like_path(e.spec):
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


def _progress_bar(total: int, unit: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=True, dynamic_ncols=True, file=sys.stderr, smoothing=0.1)


def _check_writable_ancestor(start: Path, path: Path, what: str, noun: str) -> None:
    """Refuse ``path`` unless the nearest existing folder at or above ``start`` is a writable folder."""
    anc = start
    while not anc.exists() and anc.parent != anc:
        anc = anc.parent
    if not anc.is_dir():
        made = "so no folder can be made inside it" if noun == "folder" else "not a folder"
        raise TournamentError(f"{what} {path}: {anc} is a file, {made}; choose another {noun}")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise TournamentError(f"{what} {path}: {anc} is not writable (permission denied); choose another {noun}")


def _probe_writable_dir(path: Path, what: str) -> None:
    """Refuse, before anything is played or created, a folder that cannot be made or written (``what``: its option)."""
    try:
        if path.exists() and not path.is_dir():
            raise TournamentError(
                f"{what} {path} is a file, not a folder; give a folder for the results (it is created if missing) "
                "or move the file away"
            )
        _check_writable_ancestor(path, path, what, "folder")
    except OSError as e:
        raise TournamentError(f"{what} {path} cannot be checked ({e.strerror}); choose another folder") from None


def check_output_file(path: Path, what: str, example: str = "games.jsonl") -> None:
    """Refuse, with a ``TournamentError`` naming ``what`` (its option), a file path to write that is a folder or whose
    folder cannot be made or written (``example``: a file name to suggest inside a folder given instead)."""
    try:
        if path.is_dir():
            raise TournamentError(f"{what} {path} is a folder; give a file path inside it, e.g. {path / example}")
        _check_writable_ancestor(path.parent, path, what, "path")
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


def idle_workers_note(tasks: int, workers: int, deals: int, pairings: int, batch: int) -> str:
    """The advice when fewer tasks than workers were made: the ``--batch`` that gives every worker a task."""
    per_pairing = -(-workers // pairings)  # tasks a pairing needs for every worker to get one
    suggest = max(1, -(-deals // per_pairing))
    return (
        f"{tasks} task(s) of up to {batch} deals for {workers} workers: {workers - tasks} worker(s) will have nothing "
        f"to do; --batch {suggest} splits the deals among all of them (results depend on --batch: keep the batch of "
        "an earlier run to compare with it)"
    )


def run_tournament(
    config: EvalConfig,
    progress: bool = False,
    out: str | Path | None = None,
    plots: bool = True,
    handle_signals: bool = False,
    notes: Callable[[str], None] | None = None,
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

    ``notes`` receives advice on the settings that does not stop the run (e.g. more ``workers`` asked for than
    there are tasks).
    """
    config = replace(config, agents=list(config.agents), plugins=list(config.plugins))
    config.validate()
    if config.ray is not None:
        from agents.evaluation.cluster import probe_address, require_ray

        require_ray()  # not installed: say how to install it, before anything is written
        probe_address(config.ray)
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        _probe_writable_dir(out_dir, "--out")
    for key, option in (("records", "--records"), ("save_deals", "--save-deals")):
        if getattr(config, key) is not None:
            check_output_file(Path(getattr(config, key)), option)
    rules = get_rules(config.variant)
    with StopSignals(handle_signals, stop=TournamentInterrupted, once=True) as stop:
        try:
            return _run(config, rules, progress, out_dir, plots, stop, notes)
        except KeyboardInterrupt as e:
            if isinstance(e, TournamentInterrupted):
                raise
            raise TournamentInterrupted(signal.SIGINT) from None


def _run(
    config: EvalConfig,
    rules: Rules,
    progress: bool,
    out: Path | None,
    plots: bool,
    stop: StopSignals,
    notes: Callable[[str], None] | None = None,
) -> TournamentResult:
    import_plugins(config.plugins)
    entries, candidate = _resolve_entries(config)
    partner = _partner_entry(config, entries)
    players = entries + ([partner] if partner is not None else [])  # the partner is built and played, not rated
    partner_index = len(entries) if partner is not None else None
    deals = _resolve_deals(config, rules)
    agents = [build_agent(e, rules, config.seed) for e in players]
    anchor = _resolve_anchor(config, entries, candidate)
    config.deals = len(deals)
    if config.batch is None:
        config.batch = DEFAULT_BATCH if config.sprt is None else DEFAULT_SPRT_BATCH
    batch = config.batch
    config.mode = deals.mode
    schedule = schedule_pairings(len(entries), candidate)
    if partner is None:
        rotations = side_patterns(rules.num_sides)
    else:  # seat lineups: the agent slot of every seat (PARTNER for the teammates)
        rotations = [tuple(int(x) for x in lineup) for lineup in game_plan(rules, partner=True)[0]]
    num_rot = len(rotations)

    tasks = make_tasks(schedule, deals.seeds, batch, [e.label for e in players], partner_index)
    workers = max(1, min(config.num_workers, len(tasks)))
    if notes is not None and config.ray is None and config.workers > len(tasks):  # asked for (0: all cores)
        notes(idle_workers_note(len(tasks), config.num_workers, len(deals), len(schedule), batch))
    if config.ray is not None:  # Ray: the most tasks in flight, 0 = the cluster's CPUs (known once connected)
        workers = config.workers
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
            static = write_static(config, deals, out)
        sink = RecordSink(config.records)
    last_write = -math.inf

    def checkpoint() -> None:  # the results so far, at most every PARTIAL_EVERY seconds
        nonlocal last_write
        if out is not None and time.monotonic() - last_write >= PARTIAL_EVERY:
            write_tables(result(0, "running"), out)
            last_write = time.monotonic()

    unit = "hand" if config.mode == "hands" else "game"
    bar = _progress_bar(len(deals) * num_rot * len(schedule), unit, progress)
    failure: BaseException | None = None
    try:
        runner: TaskRunner | RayTaskRunner
        if config.ray is not None:
            from agents.evaluation.cluster import RayTaskRunner

            runner = RayTaskRunner(
                rules,
                players,
                address=config.ray,
                seed=config.seed,
                mode=deals.mode,
                plugins=config.plugins,
                record=config.records is not None,
                workers=workers,
                bar=bar,
            )
        else:
            runner = TaskRunner(
                rules,
                players,
                agents,
                seed=config.seed,
                mode=deals.mode,
                plugins=config.plugins,
                start_method=config.start_method,
                record=config.records is not None,
                workers=workers,
                bar=bar,
                play_games=play,  # this module's name, looked up now (tests replace agents.evaluation.tournament.play)
                check=stop.check,
            )
        with runner:
            workers = max(1, min(runner.workers, len(tasks)))  # Ray: the cluster's CPUs when workers is 0
            if config.sprt is None:
                for res in runner.run(tasks):
                    with stop.hold():  # its exit raises the stop of a signal that came meanwhile (or was lost)
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
        partial.paths = {**static, **write_tables(partial, out)}
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
