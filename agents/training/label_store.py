"""Compact search labels: a labelling leg kept as game records plus the teacher's values, small enough to commit.

An expert-iteration run keeps every labelled decision whole in ``RUN/data/iter_K.npz``: the observation, the legal
mask, the action played and the teacher's value of every action, about 9 MB per 100,000 decisions. Refitting on *all*
the labels is what made each scopone leg gain (``docs/strength.md``), and ``runs/`` does not outlive a session. A
labels file keeps what cannot be recomputed and replays the rest:

- the deals (each self-play task's first deal seed and its number of hands) and every action played, in the order
  the game driver asked for them: replaying those actions on the same deals with the same driver
  (``imitation.teacher_games``) gives back every observation and legal mask, in the same row order;
- the teacher's values of the legal actions only, as each row's best value (float32) and every legal action's gap
  below it (float16: a gap of 1 point is kept to 0.0005, so the soft targets of ``search_labels.soft_targets`` move
  by less than 0.1%).

That is about a seventh of the size (13 bytes a scopone decision against 91). ``pack`` replays every task while it
packs and refuses a run whose replay does not give back its stored rows exactly; ``distil`` reads labels files
wherever it reads run directories, in any mix.

    python -m agents.training.label_store runs/scopone-scientifico__dagger__4 --out labels/scopone-dagger-4.npz
    python -m agents.training.distil labels/scopone-dagger-4.npz runs/scopone-scientifico__dagger__5 --out runs/fit

The file is a plain ``.npz`` of arrays with a JSON header naming its variant, the observation version it was
replayed with, and where its rows came from. Labels files are shared, so they are read as data only
(``agents.nets.weights.read_npz``: no Python objects, every member's size checked against ``MAX_LABEL_BYTES`` and
``LABEL_EXPANSION`` times the file's size before it is read) and checked before any replay (``_check_label_arrays``);
a run directory's ``config.yaml`` and data files alike (``read_run``, ``read_run_data``), and ``--out`` before the
replay (``check_out``). Every refusal is one ``ConfigError`` line naming the file (``docs/safety.md``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.cli.settings import (
    ConfigError,
    YamlFileError,
    add_field_options,
    parse_options,
    path_arguments,
    read_yaml_mapping,
    setting,
    short_repr,
)
from scopa_env.errors import ScopaEnvError
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import VARIANTS, Rules, get_rules

__all__ = [
    "FORMAT",
    "LABELLING_KEYS",
    "MAX_LABEL_BYTES",
    "check_out",
    "labelling_settings",
    "load_label_file",
    "min_decisions",
    "pack_runs",
    "read_header",
    "read_run",
    "read_run_config",
    "read_run_data",
    "replay_tasks",
    "run_data_files",
    "write_label_file",
]

FORMAT = "scopa-labels"
VERSION = 1
_ITER = re.compile(r"iter_(\d+)\.npz")


class _Replay(Policy):
    """Plays stored actions, in the order the driver asks for them (every seat, every game of a task)."""

    name = "replay"
    needs_obs = False

    def __init__(self, rules: Rules, actions: npt.NDArray[np.int64]) -> None:
        super().__init__(rules)
        self.actions, self.used = actions, 0

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        n = len(batch)
        if self.used + n > self.actions.size:
            raise ValueError("the stored actions ran out before the hands ended")
        out = self.actions[self.used : self.used + n]
        self.used += n
        return out


def replay_tasks(
    rules: Rules,
    first: npt.NDArray[np.uint64],
    hands: npt.NDArray[np.int64],
    action: npt.NDArray[np.int64],
    progress: Callable[[int], None] | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """Every row's (observation, legal mask, rows of each task) from replaying ``action`` on the tasks' deals: task
    ``i`` is hands ``first[i]`` .. ``first[i] + hands[i] - 1`` on one driver, as ``search_labels.labelled_hands``
    played them. Raises ``ValueError`` when an action is illegal where it is replayed or the actions do not end the
    hands exactly."""
    from agents.training.imitation import teacher_games

    obs_l, mask_l, rows = [], [], np.zeros(first.size, dtype=np.int64)
    used = 0
    for i, (lo, n) in enumerate(zip(first.tolist(), hands.tolist(), strict=True)):
        replay = _Replay(rules, action[used:])
        try:
            obs, mask, played, _ = teacher_games(rules, replay, np.arange(lo, lo + n, dtype=np.uint64), None)
        except ValueError as e:  # core.IllegalActionError is one
            raise ValueError(f"task {i} (deals {lo}..{lo + n - 1}) does not replay: {e}") from e
        obs_l.append(obs)
        mask_l.append(mask)
        rows[i] = played.size
        used += played.size
        if progress is not None:
            progress(n)
    if used != action.size:
        raise ValueError(f"the hands ended after {used:,} of the {action.size:,} stored actions")
    return np.concatenate(obs_l), np.concatenate(mask_l), rows


def _pack_values(
    values: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float16]]:
    """(each row's best legal value, 0 for a row with none; every legal action's value minus it, row by row)."""
    top = np.max(np.where(mask, values, -np.inf), axis=1, initial=-np.inf)  # values are finite or -inf
    top[~np.isfinite(top)] = 0.0
    gaps = (values.astype(np.float64) - top[:, None])[mask]
    return top.astype(np.float32), gaps.astype(np.float16)


def _unpack_values(
    top: npt.NDArray[np.float32], gaps: npt.NDArray[np.float16], mask: npt.NDArray[np.bool_]
) -> npt.NDArray[np.float32]:
    values = np.full(mask.shape, -np.inf, dtype=np.float32)
    values[mask] = (np.repeat(top, mask.sum(axis=1)) + gaps.astype(np.float32)).astype(np.float32)
    return values


MAX_LABEL_BYTES = 1 << 30
"""The most a labels file's arrays may take once read: 1 GiB (some 65 million decisions; a committed leg holds 0.3
million in 5 MB)."""
LABEL_EXPANSION = 64
"""How many times its size (plus 1 MiB) a labels file may expand when read: the committed ones expand 1.3 times, a
zip bomb a thousand."""
MAX_RUN_HANDS = 1_000_000
"""The most hands of one iteration a run's ``config.yaml`` may declare (expert iteration plays 2,000 by default)."""
MAX_RUN_CONFIG_BYTES = 1 << 20
"""The largest run ``config.yaml`` read (an expert-iteration run writes about 1 KiB)."""
RUN_FIX = "give expert-iteration run directories as expert_iteration wrote them (runs/<variant>__<name>__<seed>)"
_LAST_DEAL = 2**64 - 1
"""The largest deal seed (deal seeds are uint64)."""


def min_decisions(rules: Rules) -> int:
    """The fewest decisions a hand of ``rules`` takes: every card dealt to a player is played by one."""
    return rules.deck.num_cards - rules.table_cards


def _variant(found: dict[str, Any], where: str) -> str:
    """The variant that a run's config or a labels file's header (``where``) names; ``ConfigError`` unless known."""
    if "variant" not in found:
        raise ConfigError(f"{where} names no variant (damaged, or not written by this project)")
    variant = found["variant"]
    if not isinstance(variant, str) or variant not in VARIANTS:
        known = ", ".join(VARIANTS)
        raise ConfigError(f"{where} names variant {short_repr(variant)}, not one this version knows ({known})")
    return variant


def _whole(config: Path, settings: dict[str, Any], key: str, lo: int, hi: int | None = None) -> int:
    """The whole-number setting ``key`` of a run's config, in ``lo..hi``; ``ConfigError`` saying what is wrong."""
    value = settings.get(key)
    if type(value) is not int or value < lo or (hi is not None and value > hi):
        within = f"in {lo:,}..{hi:,}" if hi is not None else f">= {lo:,}"
        got = "nothing" if key not in settings else short_repr(value)
        raise ConfigError(f"run config {config}: {key} must be a whole number {within}, got {got}; {RUN_FIX}")
    return value


def read_run_config(run: Path) -> tuple[str, dict[str, Any]]:
    """The variant and the settings of the run directory ``run``'s ``config.yaml`` (read with
    ``agents.cli.settings.read_yaml_mapping``); ``ConfigError`` for a folder without one, a file that cannot be read or
    is no mapping, or a variant this version does not know."""
    config = run / "config.yaml"
    if not config.exists():
        raise ConfigError(f"{run}: no config.yaml; {RUN_FIX}")
    try:
        settings = read_yaml_mapping(config, max_bytes=MAX_RUN_CONFIG_BYTES)
    except YamlFileError as e:
        raise ConfigError(e.describe(RUN_FIX, what="run config")) from None
    return _variant(settings, f"run config {config}"), settings


def run_data_files(run: Path) -> list[tuple[Path, int]]:
    """The run's data files (``data/iter_K.npz``) and their iterations, in ``distil.load_labels``' order (sorted by
    name); ``ConfigError`` when there is none or one is a folder."""
    out = []
    for path in sorted((run / "data").glob("iter_*.npz")):
        match = _ITER.fullmatch(path.name)
        if match is None:
            continue
        if not path.is_file():
            what = "a folder" if path.is_dir() else "not a regular file"
            raise ConfigError(f"{path} is {what}, not a data file; move it away or remove it")
        out.append((path, int(match.group(1))))
    if not out:
        raise ConfigError(f"no data/iter_K.npz in {run}")
    return out


def read_run(run: Path) -> tuple[str, list[tuple[Path, int, npt.NDArray[np.uint64], npt.NDArray[np.int64]]]]:
    """A run's variant and, per data file (``run_data_files``), its path, iteration and tasks' first deals and
    hands. Raises ``ConfigError`` for a folder that is not an expert-iteration run, a ``config.yaml`` that is not one
    (``read_run_config``; ``seed``, ``hands`` and ``chunk`` checked) and data files whose names or deal seeds cannot
    be right; nothing is allocated beyond the config's checked sizes."""
    from agents.training.expert_iteration import iteration_first_deal

    variant, settings = read_run_config(run)
    config = run / "config.yaml"
    seed = _whole(config, settings, "seed", 0)
    hands = _whole(config, settings, "hands", 1, MAX_RUN_HANDS)
    chunk = min(_whole(config, settings, "chunk", 1), hands)
    out = []
    for path, k in run_data_files(run):
        base = iteration_first_deal(seed, k)
        if base + hands - 1 > _LAST_DEAL:
            raise ConfigError(
                f"{path}: iteration {k:,} of a run of seed {seed:,} would deal past seed 2**64 - 1: the file's name "
                "or the config's seed is wrong"
            )
        starts = np.arange(0, hands, chunk, dtype=np.int64)
        out.append((path, k, (base + starts.astype(np.uint64)).astype(np.uint64), np.minimum(chunk, hands - starts)))
    return variant, out


def read_run_data(path: Path, rules: Rules, hands: int | None = None) -> dict[str, npt.NDArray[Any]]:
    """The rows (``obs``, ``mask``, ``action``, ``values``) of a run's data file ``path``, read as data only
    (``agents.nets.weights.read_npz``: every size checked before anything is allocated) and checked: the members
    there, of one length, of the shapes and kinds ``rules`` give, the teacher's values without NaN or +inf, and
    (with ``hands``, the run's hands an iteration) enough decisions for that many hands. ``ConfigError`` otherwise."""
    from agents.nets.weights import read_npz
    from agents.training.expert_iteration import DATA_EXPANSION
    from scopa_env.engine.observation import observation_size

    try:
        data = read_npz(path, max_ratio=DATA_EXPANSION)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot be read as a run's data file: {e}") from None
    if "values" not in data:
        raise ConfigError(f"{path} holds no action values: the run needs soft_temperature > 0 or explore > 0")
    missing = [k for k in ("obs", "mask", "action") if k not in data]
    if missing:
        raise ConfigError(f"{path} lacks its {', '.join(missing)}: not a data file of expert iteration, or damaged")
    n = data["action"].shape[0] if data["action"].ndim == 1 else -1
    shapes = {
        "obs": ((n, observation_size(rules)), "f"),
        "mask": ((n, rules.num_actions), "b"),
        "action": ((n,), "iu"),
        "values": ((n, rules.num_actions), "f"),
    }
    for key, (shape, kinds) in shapes.items():
        a = data[key]
        if a.shape != shape or a.dtype.kind not in kinds:
            raise ConfigError(
                f"{path}: its {key} array is {a.dtype} of shape {a.shape}, where a {rules.name} data file of "
                f"{max(n, 0):,} decisions has {shape} (damaged, or of another observation version)"
            )
    if np.isnan(data["values"]).any() or np.isposinf(data["values"]).any():
        raise ConfigError(f"{path}: its teacher values hold NaN or +inf (damaged, or a diverged search)")
    if hands is not None and n < hands * min_decisions(rules):
        raise ConfigError(
            f"{path} holds {n:,} decisions, fewer than the {hands:,} hands of the run's config.yaml take (at least "
            f"{min_decisions(rules)} each): the config or the data file is wrong"
        )
    return {k: data[k] for k in shapes}


LABELLING_KEYS = ("teacher", "soft_temperature", "explore", "init", "seed")
"""The settings of a run that say how its labels were made, kept in each source of a labels file's header: the
teacher (a search spec), the soft targets' temperature, the share of decisions the student played, the network it
started from and the run's seed."""


def labelling_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The ``LABELLING_KEYS`` of a run's config (plain values only, a text cut to 200 characters): what made its
    labels, for a labels file's header."""
    out: dict[str, Any] = {}
    for key in LABELLING_KEYS:
        value = settings.get(key)
        if isinstance(value, str):
            out[key] = value[:200]
        elif isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
        elif isinstance(value, float) and np.isfinite(value):
            out[key] = value
    return out


def pack_runs(runs: Sequence[Path], progress: bool = True) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
    """The arrays and header of one labels file holding every data file of ``runs`` (expert-iteration run
    directories of one variant whose data carry the teacher's values), each replayed and checked row for row.
    Raises ``ConfigError`` when a run is not one (``read_run``, ``read_run_data``: checked before any replay), or its
    rows do not replay exactly."""
    from tqdm import tqdm

    from scopa_env.engine.observation import observation_version

    variant = None
    parts: list[dict[str, npt.NDArray[Any]]] = []
    sources: list[dict[str, Any]] = []
    tasks = []
    made_by = {}
    for run in runs:
        v, files = read_run(run)
        if variant is not None and v != variant:
            raise ConfigError(f"{run} is a {v} run, the others {variant}: one variant per labels file")
        variant = v
        made_by[run] = labelling_settings(read_run_config(run)[1])
        tasks += [(run, *f) for f in files]
    assert variant is not None
    rules = get_rules(variant)
    for _, path, _, _, hands in tasks:  # every file checked before the first replay (then read again, one at a time)
        read_run_data(path, rules, int(hands.sum()))
    bar = tqdm(total=int(sum(t[4].sum() for t in tasks)), desc="replaying", unit="hand", disable=not progress)
    with bar:
        for run, path, k, first, hands in tasks:
            stored = read_run_data(path, rules)
            try:
                obs, mask, rows = replay_tasks(rules, first, hands, stored["action"].astype(np.int64), bar.update)
            except ValueError as e:
                raise ConfigError(f"{path}: {e}") from e
            if not (np.array_equal(obs, stored["obs"]) and np.array_equal(mask, stored["mask"])):
                raise ConfigError(f"{path}: replaying its actions does not give back its observations and masks")
            if np.isfinite(np.where(mask, -np.inf, stored["values"])).any():
                raise ConfigError(f"{path}: it values illegal actions")
            top, gaps = _pack_values(stored["values"], mask)
            action = stored["action"].astype(np.uint8)
            parts.append({"first": first, "hands": hands.astype(np.int32), "rows": rows, "action": action})
            parts[-1].update(top=top, gaps=gaps)
            sources.append({"run": str(run), "iteration": k, "rows": int(rows.sum()), "hands": int(hands.sum())})
            sources[-1].update(made_by[run])
    arrays = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    header = {
        "format": FORMAT,
        "version": VERSION,
        "variant": variant,
        "obs_version": observation_version(rules),
        "rows": int(arrays["action"].size),
        "hands": int(arrays["hands"].sum()),
        "sources": sources,
    }
    return arrays, header


def write_label_file(path: Path, arrays: dict[str, npt.NDArray[Any]], header: dict[str, Any]) -> Path:
    """Write a labels file (whole or not at all)."""
    import io

    from agents.cli.atomic import write_atomic

    buf = io.BytesIO()
    np.savez_compressed(buf, header=np.array(json.dumps(header)), **arrays)  # type: ignore[arg-type]
    write_atomic(path, buf.getvalue())
    return path


_MEMBERS = {"first": "iu", "hands": "iu", "rows": "iu", "action": "iu", "top": "f", "gaps": "f"}
"""A labels file's arrays (beside its header) and the kinds of number each holds (numpy ``dtype.kind``)."""


def _read_label_arrays(path: Path, members: Collection[str] | None = None) -> dict[str, npt.NDArray[Any]]:
    """The arrays of the labels file ``path`` (only ``members``, when given), read as data only with every size
    checked first (``agents.nets.weights.read_npz``: at most ``MAX_LABEL_BYTES``, ``LABEL_EXPANSION`` times the
    file); ``ConfigError`` naming the file and what is wrong."""
    from agents.nets.weights import read_npz

    if path.is_dir():
        raise ConfigError(f"{path} is a folder, not a labels file (python -m agents.training.label_store writes them)")
    try:
        return read_npz(path, max_bytes=MAX_LABEL_BYTES, max_ratio=LABEL_EXPANSION, members=members)
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror or e})") from None
    except ValueError as e:
        raise ConfigError(
            f"{path}: not a labels file, or a damaged one: {e}; copy it again or pack it again (python -m "
            "agents.training.label_store)"
        ) from None


def _header_of(path: Path, member: npt.NDArray[Any] | None) -> dict[str, Any]:
    """The checked header of the labels file ``path`` from its ``header`` member (a JSON string)."""
    if member is None or member.shape != () or member.dtype.kind != "U":
        raise ConfigError(f"{path}: not a labels file (no header; python -m agents.training.label_store writes them)")
    try:
        header = json.loads(str(member))
    except (ValueError, RecursionError):
        raise ConfigError(f"{path}: its header is not JSON (damaged or crafted)") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a labels file (python -m agents.training.label_store writes them)")
    if header.get("version") != VERSION:
        raise ConfigError(
            f"{path}: labels format version {short_repr(header.get('version'))}, this version reads {VERSION}"
        )
    _variant(header, f"{path}: its header")
    for key in ("rows", "hands"):
        if type(header.get(key)) is not int or header[key] < 0:
            raise ConfigError(f"{path}: its header's {key} is {short_repr(header.get(key))}, not a count (damaged)")
    return header


def read_header(path: str | Path) -> dict[str, Any]:
    """A labels file's header; raises ``ConfigError`` when ``path`` is not one (every member's size is checked, only
    the header is read)."""
    path = Path(path)
    return _header_of(path, _read_label_arrays(path, {"header"}).get("header"))


def _check_label_arrays(path: Path, arrays: dict[str, npt.NDArray[Any]], header: dict[str, Any], rules: Rules) -> None:
    """Refuse (``ConfigError``) a labels file whose arrays cannot be what ``pack_runs`` writes, before any replay:
    kinds and lengths, deal seeds in range, every task's decisions at least ``min_decisions`` a hand (so a file
    declaring millions of hands in a few kilobytes is refused at once), the header's counts, actions within the
    rules' and finite teacher values."""
    for name, kinds in _MEMBERS.items():
        a = arrays.get(name)
        if a is None:
            raise ConfigError(f"{path} lacks its {name!r} array (damaged, or not written by label_store)")
        if a.ndim != 1 or a.dtype.kind not in kinds:
            what = "whole numbers" if kinds == "iu" else "floats"
            raise ConfigError(f"{path}: its {name!r} array is {a.dtype} of shape {a.shape}, not a list of {what}")
    first, hands, rows, action = (arrays[k] for k in ("first", "hands", "rows", "action"))
    if not first.size == hands.size == rows.size >= 1:
        raise ConfigError(
            f"{path}: its first, hands and rows arrays hold {first.size}, {hands.size} and {rows.size} entries, where "
            "each task has one in each (damaged)"
        )
    if first.min() < 0:
        raise ConfigError(f"{path}: its 'first' deal seeds include {int(first.min()):,}: deal seeds are 0..2**64 - 1")
    if hands.min() < 1 or hands.max() > action.size:
        raise ConfigError(
            f"{path}: its 'hands' include {int(hands.min() if hands.min() < 1 else hands.max()):,}, where a task "
            f"plays 1..{action.size:,} hands (the file's decisions); damaged or crafted"
        )
    if rows.min() < 0 or rows.max() > action.size or int(rows.sum()) != action.size:
        raise ConfigError(f"{path}: its 'rows' do not add up to its {action.size:,} actions (damaged)")
    hands = hands.astype(np.int64)
    last = first.astype(np.uint64) + (hands - 1).astype(np.uint64)  # wraps around past 2**64 - 1
    if (last < first.astype(np.uint64)).any():
        raise ConfigError(f"{path}: a task's deal seeds run past 2**64 - 1 (damaged or crafted)")
    need = hands * min_decisions(rules)
    short = np.flatnonzero(rows.astype(np.int64) < need)
    if short.size:
        i = int(short[0])
        raise ConfigError(
            f"{path}: task {i} declares {int(hands[i]):,} hands but holds {int(rows[i]):,} decisions, where a "
            f"{rules.name} hand takes at least {min_decisions(rules)} (damaged or crafted)"
        )
    if header["rows"] != action.size or header["hands"] != int(hands.sum()):
        raise ConfigError(
            f"{path}: its header counts {header['rows']:,} rows (decisions) of {header['hands']:,} hands, its arrays "
            f"{action.size:,} of {int(hands.sum()):,} (damaged)"
        )
    bad = int(action.min()) if action.min() < 0 else int(action.max())
    if not 0 <= bad < rules.num_actions:
        raise ConfigError(f"{path}: an action {bad} is not one of {rules.name}'s, 0..{rules.num_actions - 1}")
    top, gaps = arrays["top"], arrays["gaps"]
    if top.size != action.size or not action.size <= gaps.size <= action.size * rules.num_actions:
        raise ConfigError(
            f"{path}: its 'top' ({top.size:,}) and 'gaps' ({gaps.size:,}) do not fit its {action.size:,} decisions "
            "(one best value each, one gap per legal action)"
        )
    if not np.isfinite(top).all() or np.isnan(gaps).any() or np.isposinf(gaps).any():
        raise ConfigError(f"{path}: its teacher values hold NaN or infinite values (damaged, or a diverged search)")
    if (gaps > 0).any():
        raise ConfigError(f"{path}: its 'gaps' include values above their row's best (damaged)")


def load_label_file(
    path: str | Path, progress: bool = False, variant: str | None = None
) -> tuple[str, dict[str, npt.NDArray[Any]]]:
    """The variant and the rows (``obs``, ``mask``, ``action``, ``values``) of a labels file, replayed; raises
    ``ConfigError`` when it is not one, its arrays cannot be right (``_check_label_arrays``: before the replay), its
    actions do not replay on its deals, or (with ``variant``) it holds another variant's labels (also before)."""
    from tqdm import tqdm

    path = Path(path)
    arrays = _read_label_arrays(path)
    header = _header_of(path, arrays.get("header"))
    if variant is not None and header["variant"] != variant:
        raise ConfigError(f"{path} holds {header['variant']} labels, the others {variant}: fit one variant at a time")
    variant = str(header["variant"])
    rules = get_rules(variant)
    _check_label_arrays(path, arrays, header, rules)
    action = arrays["action"].astype(np.int64)
    hands = arrays["hands"].astype(np.int64)
    first = arrays["first"].astype(np.uint64)
    with tqdm(total=int(hands.sum()), desc=f"replaying {path.name}", unit="hand", disable=not progress) as bar:
        try:
            obs, mask, rows = replay_tasks(rules, first, hands, action, bar.update)
        except ValueError as e:
            raise ConfigError(f"{path}: {e}") from e
    if not np.array_equal(rows, arrays["rows"]) or int(mask.sum()) != arrays["gaps"].size:
        raise ConfigError(f"{path}: the replayed decisions differ from the file's (its rows or its values)")
    values = _unpack_values(arrays["top"], arrays["gaps"], mask)
    return variant, {"obs": obs, "mask": mask, "action": action, "values": values}


def check_out(out: Path) -> None:
    """Refuse (a ``ScopaEnvError``), before any replay, a labels file path that cannot be written: not ``.npz``, a
    folder, or whose nearest existing folder is a file or not writable (``tournament.check_output_file``; missing
    folders are made when it is written)."""
    from agents.evaluation.tournament import check_output_file

    if out.suffix != ".npz":
        raise ConfigError(f"--out {out}: a labels file's name ends in .npz (labels.npz)")
    check_output_file(out, "--out", "labels.npz")


@dataclasses.dataclass
class PackOptions:
    """The command line's options (``python -m agents.training.label_store --help``)."""

    runs: list[Path] = path_arguments("runs", "expert-iteration run directories of one variant, whose data hold values")
    out: Path = setting(Path("labels.npz"), "labels file to write (.npz)", parse=Path)
    progress: bool = setting(True, "a progress bar while the runs are replayed")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agents.training.label_store",
        description="Pack expert-iteration runs' labelled decisions (data/iter_K.npz) into one compact labels file: "
        "deals, actions and the teacher's values, replayed and checked row for row. distil reads the file.",
    )
    add_field_options(parser, PackOptions, typed=True, once=False)
    opts = parse_options(parser, PackOptions, list(argv) if argv is not None else None)
    try:
        check_out(opts.out)
        arrays, header = pack_runs(opts.runs, progress=opts.progress)
    except ScopaEnvError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = write_label_file(opts.out, arrays, header)
    size = out.stat().st_size
    print(f"wrote {out}: {header['rows']:,} labelled decisions of {header['hands']:,} hands, {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
