"""Compact search labels: a labelling leg kept as game records plus the teacher's values, small enough to commit.

An expert-iteration run keeps every labelled decision whole in ``RUN/data/iter_K.npz``: the observation, the legal
mask, the action played and the teacher's value of every action, about 9 MB per 100,000 decisions. Refitting on *all*
the labels is what made each scopone leg gain (``docs/strength.md``), and ``runs/`` does not outlive a session. A
labels file keeps what cannot be recomputed and replays the rest:

- the deals (each self-play task's first deal seed and its number of hands) and every action played, in the order
  the game driver asked for them: replaying those actions on the same deals with the same driver
  (``imitation._teacher_games``) gives back every observation and legal mask, in the same row order;
- the teacher's values of the legal actions only, as each row's best value (float32) and every legal action's gap
  below it (float16: a gap of 1 point is kept to 0.0005, so the soft targets of ``search_labels.soft_targets`` move
  by less than 0.1%).

That is about a seventh of the size (13 bytes a scopone decision against 91). ``pack`` replays every task while it
packs and refuses a run whose replay does not give back its stored rows exactly; ``distil`` reads labels files
wherever it reads run directories, in any mix.

    python -m agents.training.label_store runs/scopone-scientifico__dagger__4 --out labels/scopone-dagger-4.npz
    python -m agents.training.distil labels/scopone-dagger-4.npz runs/scopone-scientifico__dagger__5 --out runs/fit

The file is a plain ``.npz`` of arrays (read with ``allow_pickle=False``: loading it runs no code), with a JSON
header naming its variant, the observation version it was replayed with, and where its rows came from.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env.policy import ActBatch, Policy
from scopa_env.rules import Rules, get_rules
from scopa_env.settings import ConfigError, add_field_options, parse_options, path_arguments, setting

__all__ = ["FORMAT", "load_label_file", "pack_runs", "read_header", "replay_tasks", "write_label_file"]

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
    from agents.training.imitation import _teacher_games

    obs_l, mask_l, rows = [], [], np.zeros(first.size, dtype=np.int64)
    used = 0
    for i, (lo, n) in enumerate(zip(first.tolist(), hands.tolist(), strict=True)):
        replay = _Replay(rules, action[used:])
        try:
            obs, mask, played, _ = _teacher_games(rules, replay, np.arange(lo, lo + n, dtype=np.uint64), None)
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


def _run_tasks(run: Path) -> tuple[str, list[tuple[Path, int, npt.NDArray[np.uint64], npt.NDArray[np.int64]]]]:
    """A run's variant and, per data file (in ``distil.load_labels``' order), its iteration and tasks' deals."""
    import yaml

    from agents.training.expert_iteration import iteration_first_deal

    config_path = run / "config.yaml"
    if not config_path.is_file():
        raise ConfigError(f"{run}: no config.yaml; give expert-iteration run directories (runs/<variant>__<name>__0)")
    cfg = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    variant, seed, hands, chunk = str(cfg["variant"]), int(cfg["seed"]), int(cfg["hands"]), int(cfg["chunk"])
    out = []
    for path in sorted((run / "data").glob("iter_*.npz")):
        match = _ITER.fullmatch(path.name)
        if match is None:
            continue
        k = int(match.group(1))
        base = iteration_first_deal(seed, k)
        starts = np.arange(0, hands, chunk, dtype=np.int64)
        out.append((path, k, (base + starts).astype(np.uint64), np.minimum(chunk, hands - starts)))
    if not out:
        raise ConfigError(f"no data/iter_K.npz in {run}")
    return variant, out


def pack_runs(runs: Sequence[Path], progress: bool = True) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
    """The arrays and header of one labels file holding every data file of ``runs`` (expert-iteration run
    directories of one variant whose data carry the teacher's values), each replayed and checked row for row.
    Raises ``ConfigError`` when a run is not one, or its rows do not replay exactly."""
    from tqdm import tqdm

    from scopa_env.observation import observation_version

    variant = None
    parts: list[dict[str, npt.NDArray[Any]]] = []
    sources: list[dict[str, Any]] = []
    tasks = []
    for run in runs:
        v, files = _run_tasks(run)
        if variant is not None and v != variant:
            raise ConfigError(f"{run} is a {v} run, the others {variant}: one variant per labels file")
        variant = v
        tasks += [(run, *f) for f in files]
    assert variant is not None
    rules = get_rules(variant)
    bar = tqdm(total=int(sum(t[4].sum() for t in tasks)), desc="replaying", unit="hand", disable=not progress)
    with bar:
        for run, path, k, first, hands in tasks:
            with np.load(path, allow_pickle=False) as z:  # data, not weights: arrays only
                if "values" not in z.files:
                    raise ConfigError(
                        f"{path} holds no action values: the run needs soft_temperature > 0 or explore > 0"
                    )
                stored = {name: z[name] for name in ("obs", "mask", "action", "values")}
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

    from scopa_env.atomic import write_atomic

    buf = io.BytesIO()
    np.savez_compressed(buf, header=np.array(json.dumps(header)), **arrays)  # type: ignore[arg-type]
    write_atomic(path, buf.getvalue())
    return path


def read_header(path: Path) -> dict[str, Any]:
    """A labels file's header; raises ``ConfigError`` when ``path`` is not one."""
    try:
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(str(z["header"])) if "header" in z.files else None
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a labels file ({e})") from e
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a labels file (python -m agents.training.label_store writes them)")
    if header.get("version") != VERSION:
        raise ConfigError(f"{path}: labels format version {header.get('version')}, this version reads {VERSION}")
    return header


def load_label_file(
    path: Path, progress: bool = False, variant: str | None = None
) -> tuple[str, dict[str, npt.NDArray[Any]]]:
    """The variant and the rows (``obs``, ``mask``, ``action``, ``values``) of a labels file, replayed; raises
    ``ConfigError`` when it is not one, its actions do not replay on its deals, or (with ``variant``) it holds
    another variant's labels (checked before the replay)."""
    from tqdm import tqdm

    header = read_header(path)
    if variant is not None and header["variant"] != variant:
        raise ConfigError(f"{path} holds {header['variant']} labels, the others {variant}: fit one variant at a time")
    with np.load(path, allow_pickle=False) as z:
        arrays = {name: z[name] for name in ("first", "hands", "rows", "action", "top", "gaps")}
    variant = str(header["variant"])
    rules = get_rules(variant)
    action = arrays["action"].astype(np.int64)
    hands = arrays["hands"].astype(np.int64)
    with tqdm(total=int(hands.sum()), desc=f"replaying {path.name}", unit="hand", disable=not progress) as bar:
        try:
            obs, mask, rows = replay_tasks(rules, arrays["first"], hands, action, bar.update)
        except ValueError as e:
            raise ConfigError(f"{path}: {e}") from e
    if not np.array_equal(rows, arrays["rows"]) or int(mask.sum()) != arrays["gaps"].size:
        raise ConfigError(f"{path}: the replayed decisions differ from the file's (its rows or its values)")
    values = _unpack_values(arrays["top"], arrays["gaps"], mask)
    return variant, {"obs": obs, "mask": mask, "action": action, "values": values}


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
    if opts.out.is_dir():
        parser.error(f"--out {opts.out} is a directory; give a file name (labels.npz)")
    try:
        arrays, header = pack_runs(opts.runs, progress=opts.progress)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = write_label_file(opts.out, arrays, header)
    size = out.stat().st_size
    print(f"wrote {out}: {header['rows']:,} labelled decisions of {header['hands']:,} hands, {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
