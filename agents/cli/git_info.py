"""Git look-ups about the code: the commit that a run directory (``agents.training.run_dir.code_version``) and a
tournament's ``results.json`` (``agents.evaluation.report``) record.

Both ask git about the repository holding ``train.py`` and ``agents/`` (``ROOT``), and get None without git, outside
a repository or on an error: the version is recorded when it can be, never required.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__all__ = ["ROOT", "git", "short_commit"]


ROOT = Path(__file__).resolve().parents[2]
"""The folder holding ``train.py`` and ``agents/``: git is asked about the repository it is in."""


def git(*args: str, timeout: float = 20) -> str | None:
    """The output of ``git ARGS`` run in the project's folder; None without git, outside a repository or on error."""
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, timeout=timeout, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode(errors="replace")


@functools.lru_cache(maxsize=1)
def short_commit() -> str | None:
    """The abbreviated commit of the code (``git rev-parse --short HEAD``), or None; ``results.json`` records it."""
    out = git("rev-parse", "--short", "HEAD", timeout=5)
    return (out.strip() or None) if out is not None else None
