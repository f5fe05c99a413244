"""Every shell command of the README and the docs (their ``bash`` / ``sh`` blocks) is run, as far as a test can:

- the project's commands (``.venv/bin/python SCRIPT``, ``.venv/bin/python -m MODULE``, the ``scopa-*`` commands) are
  run in this process up to their argument parsing, with the arguments as printed: a flag that was renamed or
  dropped, a bad value or a missing script fails here (``--help`` and the like run whole). What they then do (train
  for hours, play 1,000-hand tournaments) is not run: the examples of the README and docs/examples.md run whole
  (tests/test_readme.py), the sample outputs are regenerated (tests/test_docs_samples.py);
- ``make TARGET`` names a target of the Makefile; other programs (``.venv/bin/tensorboard``, ``pip``, ``ray``) are
  checked to be ones the set-up provides or that the page says how to install.

The commands of the pages a newcomer reads first (the README, train, evaluate, export and play) are checked in the
default suite; the rest under ``-m slow`` (their scripts import more).
"""

from __future__ import annotations

import argparse
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIRST_PAGES = {"README.md", "index.md", "train.md", "evaluate.md", "export_play.md"}
"""Pages whose commands are checked in the default suite."""
OTHER_PROGRAMS = {"pip", "ray", "mkdir", "apt-get", "sudo"}
"""Programs the docs name that are not the project's: the system's, or an extra's (``ray``; the page says which)."""
SHELL_ONLY = ("for ",)
"""Shell constructs left out (a loop over commands that are shown on their own elsewhere)."""


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """The fenced code blocks of a Markdown page: (language, lines)."""
    out: list[tuple[str, list[str]]] = []
    lang: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        fence = re.match(r"^\s*```(\w*)", line)
        if fence and lang is None:
            lang, lines = fence.group(1) or "text", []
        elif fence and lang is not None:
            out.append((lang, lines))
            lang = None
        elif lang is not None:
            lines.append(line)
    return out


def _commands() -> list[tuple[str, str]]:
    """Every command line of the pages' bash / sh blocks, continuation lines joined: (page name, command)."""
    found = []
    for page in PAGES:
        for lang, lines in _blocks(page.read_text(encoding="utf-8")):
            if lang not in ("bash", "sh"):
                continue
            for line in "\n".join(lines).replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words and not line.lstrip().startswith(SHELL_ONLY):
                    found.append((page.name, line.strip()))
    return found


COMMANDS = _commands()


class _Parsed(Exception):
    """Raised by the patched ``parse_args`` once the command line has parsed."""


def _argv(command: str) -> list[str]:
    """The command's words up to a pipe or a redirection, without leading ``VAR=value`` assignments."""
    words = []
    for word in shlex.split(command, comments=True):
        if word in ("|", ">", ">>", "&&", ";", "&"):
            break
        words.append(word)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)
    return words


def _scripts() -> dict[str, str]:
    """pyproject.toml's ``[project.scripts]``: command -> ``module:function``."""
    section = (ROOT / "pyproject.toml").read_text().split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+) = "([\w.:]+)"', section, flags=re.M))


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, flags=re.M))


def _run_to_parse(target: list[str], args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the project's command ``target`` (``[script]``, ``["-m", module]`` or ``[":", "module:function"]``) with
    ``args`` until its arguments are parsed (or, for ``--help``, to its end)."""
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *a: object, **k: object) -> argparse.Namespace:
        parse(self, *a, **k)  # type: ignore[arg-type]  # a bad command line exits here with status 2
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    try:
        if target[0] == "-m":
            monkeypatch.setattr(sys, "argv", [target[1], *args])
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        elif target[0] == ":":
            module, function = target[1].split(":")
            monkeypatch.setattr(sys, "argv", [module, *args])
            getattr(__import__(module, fromlist=[function]), function)()
        else:
            monkeypatch.setattr(sys, "argv", [target[0], *args])
            runpy.run_path(str(ROOT / target[0]), run_name="__main__")
    except _Parsed:
        return
    except SystemExit as e:
        assert e.code in (0, None), f"the command line was refused (exit status {e.code})"
        return
    pytest.fail("the command never parsed its arguments")


def _check(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = _argv(command)
    program, rest = argv[0], argv[1:]
    if program == ".venv/bin/python":
        assert rest, command
        if rest[:2] == ["-m", "pytest"]:  # a test run inside this one would run the tests: their files are there
            named = [a.split("::")[0] for a in rest[2:] if a.startswith("tests/")]
            assert named and all((ROOT / n).is_file() for n in named), f"no test file {named}"
        elif rest[0] == "-m":
            _run_to_parse(["-m", rest[1]], rest[2:], monkeypatch)
        else:
            assert (ROOT / rest[0]).is_file(), f"no script {rest[0]}"
            _run_to_parse([rest[0]], rest[1:], monkeypatch)
    elif program in _scripts():
        _run_to_parse([":", _scripts()[program]], rest, monkeypatch)
    elif program == "make":
        assert rest and rest[0] in _make_targets(), f"the Makefile has no target {rest[:1]}"
    elif program.startswith(".venv/bin/"):
        assert program.removeprefix(".venv/bin/") in {"tensorboard", "mkdocs"}, f"{program}: not from the set-up"
    else:
        assert program in OTHER_PROGRAMS, f"{program}: neither the project's command nor a known program"


def _params(first: bool) -> list[object]:
    return [
        pytest.param(command, id=f"{page}: {command[:70]}")
        for page, command in COMMANDS
        if (page in FIRST_PAGES) == first
    ]


def test_the_docs_have_commands() -> None:
    assert len(COMMANDS) > 100 and {page for page, _ in COMMANDS} >= FIRST_PAGES - {"index.md"}


pytestmark = pytest.mark.filterwarnings("ignore:.*found in sys.modules after import of package:RuntimeWarning")


@pytest.mark.parametrize("command", _params(first=True))
def test_a_first_page_command_parses(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(command, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("command", _params(first=False))
def test_a_command_parses(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(command, monkeypatch)


def test_a_renamed_flag_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a flag evaluate.py does not have, a script that is not there, a make target that is not."""
    for bad in (
        ".venv/bin/python evaluate.py --variant classic --agents greedy expert --dealz 5",
        ".venv/bin/python no_such_script.py",
        "make trian",
    ):
        with pytest.raises(AssertionError):
            _check(bad, monkeypatch)
