"""Commands to print as hints, in the form that works as printed from the user's working directory.

A hint such as "export it first: python -m agents.nets.export ..." fails when ``python`` on the user's PATH is not the
interpreter that has the project installed (the README's set-up makes ``.venv``). ``python_command`` writes this
very interpreter instead, relative to the working directory when it is inside it (``.venv/bin/python -m ...`` in
a checkout set up by ``make``).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

__all__ = ["TRAIN_PY", "python_command", "python_path", "shell_command", "shown_path", "train_command"]

_PLACEHOLDER = re.compile(r"[A-Z][A-Z_]*|[\w./=-]*<\w+>[\w./=-]*")
"""Words a hint leaves for the user to fill in (``CHECKPOINT``, ``runs/<run>/best.zip``): written unquoted."""
TRAIN_PY = Path(__file__).resolve().parents[2] / "train.py"
"""train.py, beside the packages in a checkout and in site-packages alike (``py-modules`` installs it there)."""


def shown_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it is inside it, else absolute."""
    cwd = Path.cwd()
    p = Path(path).absolute()
    return str(p.relative_to(cwd)) if p.is_relative_to(cwd) else str(p)


def python_command(*args: str | Path) -> str:
    """The shell command running this interpreter with ``args`` (paths shown relative to the working directory),
    e.g. ``python_command("-m", "agents.nets.export", "CHECKPOINT")`` ->
    ``.venv/bin/python -m agents.nets.export CHECKPOINT``.
    Arguments that are placeholders (``CHECKPOINT``, ``<run>``) are written as given."""
    return " ".join(w if _PLACEHOLDER.fullmatch(w) else shlex.quote(w) for w in [python_path(), *_shown(args)])


def python_path() -> str:
    """This interpreter as a command word: relative to the working directory when inside it (``.venv/bin/python``),
    never a bare name (which the shell would look up on PATH)."""
    python = shown_path(sys.executable) if sys.executable else "python3"
    return python if "/" in python else f"./{python}"


def _shown(args: tuple[str | Path, ...]) -> list[str]:
    return [shown_path(a) if isinstance(a, Path) else a for a in args]


def shell_command(*args: str | Path) -> str:
    """``args`` as one shell command, each word quoted as needed and paths shown relative to the working directory
    (a command a user typed, given back: no placeholders)."""
    return shlex.join(_shown(args))


def train_command(*args: str | Path) -> str:
    """The shell command that runs train.py with ``args`` from the working directory, as a hint to print:
    ``scopa-train ARGS`` when started as that command, else this very interpreter and train.py, each relative to
    the working directory when inside it (``.venv/bin/python train.py ARGS`` in a checkout set up by ``make``)."""
    if sys.argv and Path(sys.argv[0]).name == "scopa-train":
        return shell_command("scopa-train", *args)
    return shell_command(python_path(), TRAIN_PY, *args)
