"""Commands to print as hints, in the form that works as printed from the user's working directory.

A hint such as "export it first: python -m agents.export ..." fails when ``python`` on the user's PATH is not the
interpreter that has the project installed (the README's set-up makes ``.venv``). ``python_command`` writes this
very interpreter instead, relative to the working directory when it is inside it (``.venv/bin/python -m ...`` in
a checkout set up by ``make``).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

__all__ = ["TRAIN_PY", "python_command", "shown_path"]

TRAIN_PY = Path(__file__).resolve().parents[1] / "train.py"
"""train.py, beside the packages in a checkout and in site-packages alike (``py-modules`` installs it there)."""


def shown_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it is inside it, else absolute."""
    cwd = Path.cwd()
    p = Path(path).absolute()
    return str(p.relative_to(cwd)) if p.is_relative_to(cwd) else str(p)


def python_command(*args: str | Path) -> str:
    """The shell command running this interpreter with ``args`` (paths shown relative to the working directory),
    e.g. ``python_command("-m", "agents.export", "CHECKPOINT")`` -> ``.venv/bin/python -m agents.export CHECKPOINT``.
    Arguments that are placeholders (``CHECKPOINT``, ``<run>``) are written as given."""
    python = shown_path(sys.executable) if sys.executable else "python3"
    if "/" not in python:  # a bare name would be looked up on PATH, not taken from here
        python = f"./{python}"
    words = [python, *(shown_path(a) if isinstance(a, Path) else a for a in args)]
    return " ".join(w if "<" in w or w.isupper() else shlex.quote(w) for w in words)
