"""Every printed sample output of the docs is what the code prints today: a fenced block right after a line
``<!-- sample: KEY -->`` (invisible on the site and on GitHub) must equal the text ``SAMPLES[KEY]`` generates by
running the code that prints it. When the code's output changes, regenerate the blocks:

    .venv/bin/python -m tests.test_docs_samples --write            # every sample (the slow ones take minutes)
    .venv/bin/python -m tests.test_docs_samples --write KEY [KEY]  # some of them

Samples that take long to make (a tournament of 3,000 hands) are checked under ``-m slow``.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"^<!-- sample: ([\w-]+) -->\n```[a-z]*\n(.*?)^```$", re.S | re.M)


class _Player(io.TextIOBase):
    """The terminal game's input, answered from what the game printed: the first card of 'your cards', the first
    capture offered, a knock when one is offered, no rematch; ``script`` lines first."""

    def __init__(self, out: io.StringIO, script: tuple[str, ...] = ()) -> None:
        self.out, self.script = out, list(script)

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]  # a text stream's readline
        if self.script:
            return self.script.pop(0) + "\n"
        text = self.out.getvalue()
        prompt = text.rsplit("\n", 1)[-1]
        if prompt.startswith("your move>"):
            return text.rsplit("your cards: ", 1)[1].split()[0] + "\n"
        if prompt.startswith("which capture?"):
            return "1\n"
        if prompt.startswith("knock>"):
            return prompt.split("[", 1)[1].split("/")[-1].rstrip("] ") + "\n"
        return "n\n"  # play again? no

    def isatty(self) -> bool:
        return False


def _in_folder(folder: str, run: Callable[[], object]) -> object:
    """``run()`` with ``folder`` as the working directory (relative paths in messages read the same everywhere)."""
    here = Path.cwd()
    os.chdir(folder)
    try:
        return run()
    finally:
        os.chdir(here)


def _exit_status(main: Callable[[list[str]], int], argv: list[str]) -> int | str | None:
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def _transcript(argv: list[str], script: tuple[str, ...] = ()) -> list[str]:
    """The terminal game's whole transcript for ``argv``, played by ``_Player``."""
    from agents.play import terminal

    out = io.StringIO()
    play = functools.partial(terminal.main, [*argv, "--color", "never"], cast(TextIO, _Player(out, script)), out)
    assert _in_folder(str(ROOT), play) == 0  # the bots' paths as the docs give them
    return out.getvalue().splitlines()


def _window(lines: list[str], first: str, last: str, back_to: str | None = None) -> str:
    """From the first line matching ``first`` (or the last line matching ``back_to`` before it) to the next line
    matching ``last`` after it."""
    start = next(i for i, line in enumerate(lines) if re.search(first, line))
    end = next(i for i in range(start + 1, len(lines)) if re.search(last, lines[i]))
    if back_to is not None:
        start = max(i for i in range(start) if re.search(back_to, lines[i]))
    return "\n".join(lines[start : end + 1])


def terminal_capture() -> str:
    lines = _transcript(["--opponent", "greedy", "--seed", "2"])
    return _window(lines, r"can capture in", r"^greedy: ", back_to=r"^classic  hand")


def terminal_hint() -> str:
    lines = _transcript(["--opponent", "bot:path=agents/bots/classic,search=false", "--seed", "3"], ("hint", "quit"))
    return _window(lines, r"your move> hint", r"^suggested: ")


def terminal_cirulla() -> str:
    lines = _transcript(["--variant", "cirulla", "--opponent", "greedy", "--seed", "0"])
    return _window(lines, r"^  KNOCK: you decide:", r"^you knock for", back_to=r"^cirulla  hand")


def _evaluate(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(ROOT / "evaluate.py"), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=3600)


def evaluate_round_robin() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        args = "--variant classic --agents random greedy expert --hands 500 --no-plot --out".split()
        done = _evaluate(*args, tmp)
    assert done.returncode == 0, done.stderr
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    start = lines.index("Ratings")
    end = next(i for i in range(lines.index("Crosstable (points per hand, score)"), len(lines)) if lines[i][:1] == "└")
    return "\n".join(lines[start : end + 1])


def evaluate_errors() -> str:
    """evaluate.py's one-line errors for a bad --seed and a config file's bad deals (run in this process)."""
    import evaluate

    err = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(err):
        (Path(tmp) / "eval.yaml").write_text("variant: classic\nagents: [greedy, expert]\ndeals: 5.7\n")
        for argv in (
            ["--variant", "classic", "--agents", "greedy", "expert", "--seed", "1e30"],
            ["--config", "eval.yaml"],
        ):
            status = _in_folder(tmp, functools.partial(_exit_status, evaluate.main, argv))
            assert status == 2, err.getvalue()
    return "\n".join(line for line in err.getvalue().splitlines() if line.startswith("evaluate.py: error:"))


def evaluate_other_variant() -> str:
    """evaluate.py's error for a checkpoint trained for another variant (a tiny MaskablePPO one, saved as train.py
    saves them)."""
    import evaluate
    from tests.test_export import make_checkpoint

    err = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(err):
        (Path(tmp) / "runs" / "assi").mkdir(parents=True)
        make_checkpoint(Path(tmp) / "runs" / "assi" / "best.zip", "scopa-d-assi", hidden=(8,))
        argv = ["--variant", "classic", "--agents", "greedy", "assi=runs/assi/best.zip"]
        status = _in_folder(tmp, functools.partial(_exit_status, evaluate.main, argv))
    assert status == 2, err.getvalue()
    return err.getvalue().rstrip("\n")


def evaluate_sigterm() -> str:
    """evaluate.py's message when SIGTERM stops a tournament (here sent by one of greedy's moves, so the games
    finished before it are always the same); run in this process, one worker, as the tests of signals do."""
    import signal

    import evaluate
    from agents import base
    from agents.baselines.greedy import GreedyAgent
    from scopa_env.games.policy import ActBatch

    class StopsTheRun(GreedyAgent):
        """greedy, which sends its own process SIGTERM on its 100th decision."""

        calls = 0

        def act(self, batch: ActBatch) -> Any:
            StopsTheRun.calls += 1
            if StopsTheRun.calls == 100:
                os.kill(os.getpid(), signal.SIGTERM)
            return super().act(batch)

    base.register_agent("_sample_sigterm", "docs sample only: greedy, sending SIGTERM at its 100th decision")(
        StopsTheRun
    )
    err = io.StringIO()
    argv = ["--variant", "classic", "--agents", "greedy", "_sample_sigterm", "--hands", "200000", "--batch", "100"]
    argv += ["--workers", "1", "--out", "runs/eval__x", "--no-progress", "--no-plot", "--quiet"]
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(err):
            status = _in_folder(tmp, functools.partial(_exit_status, evaluate.main, argv))
    finally:
        base._REGISTRY.pop("_sample_sigterm")  # known to this sample only
    assert status == 128 + signal.SIGTERM, err.getvalue()
    return err.getvalue().rstrip("\n")


@functools.cache
def _reviewed_game() -> tuple[str, dict[str, object]]:
    """docs/review.md's reviewed game: the tournament its commands play (the shipped classic network against pimc,
    20 deals, seed 20261555), game 22 reviewed; the printed review and its JSON."""
    import evaluate
    from agents.play import review

    out = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(out):
        records, saved = Path(tmp) / "classic.jsonl", Path(tmp) / "review.json"
        argv = ["--variant", "classic", "--gauntlet", "network=bot:path=agents/bots/classic,search=false"]
        argv += ["--agents", "pimc", "--hands", "20", "--seed", "20261555", "--records", str(records)]
        argv += ["--out", str(Path(tmp) / "eval"), "--quiet", "--no-plot"]
        assert _in_folder(str(ROOT), functools.partial(evaluate.main, argv)) == 0  # the bot's path as the docs give it
        out.seek(0)
        out.truncate()
        assert review.main([str(records), "--games", "22", "--json", str(saved), "--no-progress"]) == 0
        data = json.loads(saved.read_text(encoding="utf-8"))
    text = "\n".join(line for line in out.getvalue().splitlines() if not line.startswith("wrote "))
    return text, data


def review_game() -> str:
    return _reviewed_game()[0]


def review_decision() -> str:
    """One decision of the reviewed game's JSON (seat 1's 8th move), its numbers to 3 decimals, a few keys a line."""
    decisions: list[dict[str, object]] = _reviewed_game()[1]["decisions"]  # type: ignore[assignment]
    decision = dict(next(d for d in decisions if d["ply"] == 7))

    def dump(value: object) -> str:
        if isinstance(value, float):
            return json.dumps(round(value, 3))
        if isinstance(value, dict):
            return "{" + ", ".join(f"{json.dumps(k)}: {dump(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(dump(v) for v in value) + "]"
        return json.dumps(value)

    def keys(names: list[str]) -> str:
        return ", ".join(f"{json.dumps(k)}: {dump(decision.pop(k))}" for k in names)

    moves: list[object] = decision.pop("moves")  # type: ignore[assignment]
    groups = [["game", "hand", "seat", "ply", "cards_left", "played", "best"], ["loss", "loss_se", "mark", "exact",
              "method", "worlds"], ["forced", "kind"], ["kinds"]]  # fmt: skip
    lines = [keys(names) for names in groups]
    if decision:  # keys added since: on a line of their own
        lines.append(keys(list(decision)))
    moves_text = (",\n" + " " * 11).join(dump(m) for m in moves)
    return "{" + ",\n ".join(lines) + ',\n "moves": [' + moves_text + "]}"


@dataclass(frozen=True)
class Sample:
    make: Callable[[], str]
    slow: bool = False


SAMPLES = {
    "terminal-capture": Sample(terminal_capture),
    "terminal-hint": Sample(terminal_hint),
    "terminal-cirulla": Sample(terminal_cirulla),
    "evaluate-round-robin": Sample(evaluate_round_robin, slow=True),
    "evaluate-errors": Sample(evaluate_errors),
    "evaluate-other-variant": Sample(evaluate_other_variant),
    "evaluate-sigterm": Sample(evaluate_sigterm),
    "review-game": Sample(review_game),
    "review-decision": Sample(review_decision),
}
"""Every sample of the docs, by its key, and how to make it."""


def _marked() -> dict[str, list[tuple[Path, str]]]:
    """Every marked block of the docs: key -> [(page, the block's text)]."""
    found: dict[str, list[tuple[Path, str]]] = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for key, body in MARK.findall(page.read_text(encoding="utf-8")):
            found.setdefault(key, []).append((page, body.rstrip("\n")))
    return found


def test_every_sample_is_marked_once_and_known() -> None:
    marked = _marked()
    assert sorted(marked) == sorted(SAMPLES), "a marked block without a generator, or a generator without a block"
    assert all(len(v) == 1 for v in marked.values()), {k: [str(p) for p, _ in v] for k, v in marked.items()}


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.slow) if s.slow else k for k, s in SAMPLES.items()])
def test_the_sample_is_what_the_code_prints(key: str) -> None:
    ((page, shown),) = _marked()[key]
    made = SAMPLES[key].make()
    assert shown == made, (
        f"{page.name}'s sample {key!r} is stale: regenerate it with "
        f"`.venv/bin/python -m tests.test_docs_samples --write {key}`"
    )


def write(keys: list[str]) -> None:
    """Replace the marked blocks of ``keys`` (all when empty) with what their code prints now."""
    for key in keys or list(SAMPLES):
        ((page, _),) = _marked()[key]
        text = page.read_text(encoding="utf-8")
        made = SAMPLES[key].make()

        def replace(m: re.Match[str], key: str = key, made: str = made) -> str:
            if m.group(1) != key:
                return m.group(0)
            head = m.group(0).split("\n", 2)
            return f"{head[0]}\n{head[1]}\n{made}\n```"

        page.write_text(MARK.sub(replace, text), encoding="utf-8")
        print(f"{page.relative_to(ROOT)}: {key}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "--write":
        sys.exit(f"usage: python -m tests.test_docs_samples --write [KEY ...]   (keys: {', '.join(SAMPLES)})")
    write(args[1:])
