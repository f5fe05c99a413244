"""A training run's directory and files: creating it, the code version it records, its checkpoints' resume state,
finding the newest intact checkpoint to resume from and tidying up after a kill.

``runs/<variant>__<name>__<seed>__<time>/`` holds ``config.yaml``, ``version.json`` (``code_version``),
``history.jsonl``, ``eval.jsonl``, ``last.zip``, ``best.zip`` and ``checkpoints/step_<steps>.zip``; the layout is
described in ``train.py``'s docstring and docs/train.md. ``agents.training.trainer.Trainer`` writes them.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import AgentSpecError
from agents.cli.git_info import git
from agents.cli.shell import TRAIN_PY, python_command
from agents.errors import ScopaError
from agents.training import safe_state
from scopa_env.engine import observation

__all__ = [
    "LEGACY_RESUME_MEMBER",
    "RESUME_MEMBER",
    "RunDirError",
    "append_jsonl",
    "clean_run_dir",
    "code_version",
    "make_run_dir",
    "newest_intact_checkpoint",
    "now",
    "prune_step_files",
    "read_resume_state",
    "step_files",
]

RESUME_MEMBER = "scopa_resume.npz"
"""Zip member of ``last.zip`` and the step checkpoints holding the env, league, random states and counters (for
``--resume``), written by ``agents.training.safe_state`` (plain data: reading it never runs code)."""
LEGACY_RESUME_MEMBER = "scopa_resume.pkl"
"""The pickle older versions wrote instead; refused (a pickle can run code when it is read)."""


class RunDirError(ScopaError, RuntimeError):
    """A run directory that cannot be created, written or resumed."""


def code_version() -> dict[str, Any]:
    """Git commit, dirty flag and diff hash of the code, plus library versions (no git: commit is None)."""
    import sb3_contrib
    import stable_baselines3
    import torch

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain")  # untracked (not ignored) files count as changes too
    diff = git("diff", "HEAD")
    dirty = bool(status and status.strip())
    info = {
        "commit": commit.strip() if commit else None,
        "dirty": dirty,
        "diff_sha256": hashlib.sha256(diff.encode()).hexdigest() if dirty and diff else None,
        "obs_version": observation.OBS_VERSION,
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


def now() -> str:
    """The local time as ISO 8601 with the offset, to the second (history and eval lines, checkpoint metadata)."""
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def make_run_dir(run_root: str | Path, prefix: str) -> Path:
    """Create ``<run_root>/<prefix>__<time>/`` (``-2``, ``-3``, ... added if taken); raises ``RunDirError`` if it
    cannot be written."""
    root = Path(run_root)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{prefix}__{stamp}"
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


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append ``record`` to the JSON-lines file ``path`` as one line."""
    with open(path, "a") as f:
        f.write(json.dumps(record, default=str) + "\n")


def read_optimizer_state(path: Path) -> dict[str, Any]:
    """The optimizer state dict of a checkpoint (``torch.load(weights_only=True)``: no code runs)."""
    from agents.nets.weights import OPTIMIZER_MEMBER, read_torch_member

    member = OPTIMIZER_MEMBER
    state = read_torch_member(path, member, what="an optimizer state")
    if not isinstance(state, dict) or "state" not in state or "param_groups" not in state:
        raise AgentSpecError(f"checkpoint {str(path)!r}: its {member} is not an optimizer state")
    return state


def read_resume_state(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, resume state) of a checkpoint, the resume state with the policy's and the optimizer's state dicts
    as ``"policy_state"`` and ``"optim_state"``; ``RunDirError`` saying what is wrong with it."""
    from agents.nets.weights import POLICY_MEMBER, open_checkpoint, read_checkpoint_meta, read_member, read_weights

    try:
        meta = read_checkpoint_meta(path)
        with open_checkpoint(path) as archive:
            names = archive.namelist()
            if RESUME_MEMBER not in names:
                if LEGACY_RESUME_MEMBER in names:
                    raise RunDirError(
                        f"{path.name} was saved by an older version as a pickle, which can run code when it is "
                        "read, so it is not loaded; start a new run (its weights can seed it: --init-from "
                        f"{path})"
                    )
                raise RunDirError(f"{path.name} holds no resume state ({RESUME_MEMBER})")
            raw = read_member(archive, RESUME_MEMBER, path)
        blob = safe_state.loads(raw)
        if isinstance(blob, dict):
            blob["policy_state"] = read_weights(path, POLICY_MEMBER)
            blob["optim_state"] = read_optimizer_state(path)
    except AgentSpecError as e:
        raise RunDirError(str(e)) from None
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as e:  # CRC, zlib, StateFileError
        raise RunDirError(f"{path.name} is damaged ({type(e).__name__}: {e})") from None
    if not isinstance(blob, dict) or not {"env", "league", "state", "rng", "num_timesteps", "model"} <= set(blob):
        raise RunDirError(f"{path.name}: its resume state lacks parts (damaged or from another version)")
    _check_run_state(blob, path)
    if blob["num_timesteps"] != meta.get("steps", -1):
        raise RunDirError(f"{path.name}: its resume state and metadata disagree on the step")
    return meta, blob


_STATE_NUMBERS = {
    "next_snapshot": int,
    "next_eval": int,
    "next_checkpoint": int,
    "next_composition": int,
    "handled_step": int,
    "best_step": int,
    "best_margin": float,
    "elapsed_s": float,
}
"""The trainer's counters in a resume state (``Trainer.state``) and their kinds, checked when a run is resumed."""


def _check_run_state(blob: dict[str, Any], path: Path) -> None:
    """``RunDirError`` unless the resume state's step and the trainer's counters have their kinds (a damaged or
    crafted file would otherwise fail with a TypeError in the middle of training)."""

    def bad(what: str, value: Any) -> RunDirError:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return RunDirError(f"{path.name}: its resume state has {what} {shown} (damaged or crafted)")

    if type(blob["num_timesteps"]) is not int:
        raise bad("num_timesteps", blob["num_timesteps"])
    state = blob["state"]
    if not isinstance(state, dict):
        raise bad("a trainer state", state)
    for key, kind in _STATE_NUMBERS.items():
        value = state.get(key, 0)
        ok = type(value) is int if kind is int else isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise bad(key, value)
    if not isinstance(state.get("last_eval", {}), dict):
        raise bad("last_eval", state["last_eval"])


def step_files(ckpt_dir: Path) -> list[tuple[int, Path]]:
    """(steps, path) of the ``step_<steps>.zip`` files in ``ckpt_dir``, oldest first."""
    out = []
    for p in ckpt_dir.glob("step_*.zip") if ckpt_dir.is_dir() else []:
        digits = p.stem.removeprefix("step_")
        if digits.isdigit() and not p.is_dir():  # a folder of that name is no checkpoint (and never pruned)
            out.append((int(digits), p))
    return sorted(out)


def newest_intact_checkpoint(run: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """The checkpoint a resumed run starts from: the newest of last.zip and checkpoints/step_*.zip that reads
    back whole (a kill can leave last.zip older than the newest step file; a damaged file is passed over with a
    message)."""
    from agents.nets.weights import read_checkpoint_meta

    for name in ("last.zip", "best.zip"):  # the run writes these again: a folder in the way would fail later
        if (run / name).is_dir():
            raise RunDirError(
                f"--resume {str(run)!r}: {name} is a folder, where the run keeps a checkpoint file it must write "
                f"again; move it out of the way (e.g. mv {run / name} {run / (name + '.folder')}) and resume again"
            )
    candidates = step_files(run / "checkpoints")
    last = run / "last.zip"
    problems: list[str] = []
    if last.is_file():
        try:
            candidates.append((int(read_checkpoint_meta(last).get("steps", -1)), last))
        except AgentSpecError as e:
            problems.append(f"last.zip: {e}")
    for steps, path in sorted(candidates, key=lambda c: (c[0], c[1] == last), reverse=True):
        try:
            meta, blob = read_resume_state(path)
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
        f"new run ({python_command(TRAIN_PY)}, or --init-from with a best.zip for its weights)"
    )


def prune_step_files(ckpt_dir: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` step files (including ones a killed run left beyond the limit)."""
    files = step_files(ckpt_dir)
    for _, p in files[: max(0, len(files) - keep)]:
        p.unlink(missing_ok=True)


def clean_run_dir(run: Path, step: int, keep: int) -> None:
    """Before a resumed run continues from ``step``: delete temporary files of interrupted writes, step files
    beyond ``keep`` and after ``step`` (they will be written again), and eval.jsonl lines after ``step``."""
    from agents.cli.atomic import write_atomic

    for folder in (run, run / "checkpoints"):
        for tmp in folder.glob(".*.tmp") if folder.is_dir() else []:
            tmp.unlink(missing_ok=True)
    for steps, p in step_files(run / "checkpoints"):
        if steps > step:
            p.unlink(missing_ok=True)
    prune_step_files(run / "checkpoints", keep)
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
