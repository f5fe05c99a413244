"""A tournament's settings: ``EvalConfig``, every setting checked alike from Python, YAML and the command line.

``check_setting`` checks one setting (its type, its range, what it must go with) and says the fix in a
``SettingError``; ``EvalConfig`` checks them one by one when built and together (``check``), and reads a YAML
config (``from_yaml``). ``agents.evaluation.tournament.run_tournament`` plays what it describes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from agents.cli.settings import YamlFileError, read_yaml_mapping, setting, short_repr
from agents.errors import TournamentError
from agents.evaluation.deals import MODES
from agents.evaluation.schedule import (
    has_partners,
)
from scopa_env.errors import whole_number
from scopa_env.rules import get_rules, variant_names

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_DEALS",
    "DEFAULT_SPRT_BATCH",
    "MAX_BOOTSTRAP",
    "MAX_CONFIG_BYTES",
    "MAX_DEALS",
    "MAX_SEED",
    "START_METHODS",
    "WORKERS_PER_CORE",
    "EvalConfig",
    "SettingError",
    "check_setting",
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


class SettingError(TournamentError):
    """An ``EvalConfig`` setting with a bad value. ``name`` is the setting, ``detail`` says the value, what is wrong
    and the fix (without the name, so that the caller can say where it came from: a config file key, an option)."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


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
    if not whole_number(value):
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
