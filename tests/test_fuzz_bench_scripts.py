"""Fuzz the command lines of the scripts in ``bench/``: ``agents_ladder.py``, ``agents_speed.py``, ``bot_latency.py``.

Each script is imported from its file and its ``main(argv)`` called in-process with one malformed argument on an
otherwise valid (and tiny) command line. Expected, as for the other commands (``tests/test_fuzz_record_play.py``):
exit status 2, nothing on stdout, stderr ending in the one line ``<prog>: error: ...``, no traceback, no file written,
and (``bot_latency.py``) the process not pinned to a core.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.test_fuzz_record_play import BAD_INTS, BAD_NAMES, assert_clean_error, call, cases

BENCH = Path(__file__).resolve().parent.parent / "bench"
SHIPPED_BOT = BENCH.parent / "agents" / "bots" / "classic"
TOO_BIG_SEED = str(2**63)


def load_script(name: str) -> ModuleType:
    """``bench/<name>.py`` imported as module ``bench_<name>``."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # registered before it runs, as importlib's recipe does (its dataclass needs it)
    spec.loader.exec_module(module)
    return module


ladder = load_script("agents_ladder")
speed = load_script("agents_speed")
latency = load_script("bot_latency")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty current directory and temporary-file folder; the test checks nothing lands in either."""
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    yield tmp_path
    if affinity is not None:
        os.sched_setaffinity(0, affinity)  # in case a wrongly accepted bot_latency run pinned this process


def assert_nothing_written(root: Path, context: object) -> None:
    written = [str(p.relative_to(root)) for p in (root / "work").rglob("*")]
    written += [str(p.relative_to(root)) for p in (root / "tmp").rglob("*")]
    assert written == [], (context, written)


def refuse_all(
    main: Callable[[list[str]], int],
    prog: str,
    root: Path,
    good: dict[str, list[str]],
    bad: dict[str, list[str]],
    other: list[list[str]],
) -> int:
    """Check every malformed command line (one of ``bad`` in ``good``, then ``other``); the number checked.

    Each must be a clean error that writes nothing and leaves the process's CPU affinity alone.
    """
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    n = 0
    for argv in [argv for _flag, argv in cases(good, bad)] + other:
        assert_clean_error(call(main, argv), prog)
        assert_nothing_written(root, argv)
        if affinity is not None:
            assert os.sched_getaffinity(0) == affinity, argv  # refused before pinning the process
        n += 1
    return n


def bad_specs(root: Path) -> list[str]:
    """Agent specs no script may accept: unknown names, refused options, files and directories that are no agent."""
    fixtures = root / "fixtures"
    fixtures.mkdir(exist_ok=True)
    empty_dir = fixtures / "empty"
    empty_dir.mkdir(exist_ok=True)
    junk = fixtures / "junk.zip"
    junk.write_bytes(b"not a zip")
    return [
        " ",
        "nobody",
        "random:x=1",
        "pimc:worlds=abc",
        "pimc:worlds=-1",
        "pimc:worlds",
        "bot:colour=red",
        f"bot:path={empty_dir}",
        str(fixtures / "missing.zip"),
        str(junk),
        str(empty_dir),
        f"neural:path={junk}",
        ":",
        "\x00",
        "ÿ" * 300,
    ]


# --------------------------------------------------------------------------------------------------- agents_ladder

LADDER_PROG = "python bench/agents_ladder.py"


def test_ladder_rejects_every_malformed_argument(workdir: Path) -> None:
    specs = bad_specs(workdir)
    good = {"--pairs": ["random vs random"], "--deals": ["2"], "--matches": ["0"], "--chunk": ["2"]}
    bad = {
        "--variant": [*BAD_NAMES, "simple-3", "simple-5"],  # unknown names; variants with more than two sides
        "--pairs": [
            "",
            ";",
            " ; ",
            "random",
            "random vs",
            "vs random",
            "random vs ",
            "random vs greedy vs expert",
            "random versus greedy",
            "random VS greedy",
            "random vs greedy; greedy",
            *(f"random vs {s}" for s in specs),
            *(f"{s} vs random" for s in specs if s.strip()),
        ],
        "--deals": [*BAD_INTS, "0", "1", str(10**8 + 1)],
        "--matches": [*BAD_INTS, str(10**7 + 1)],
        "--seed": [*BAD_INTS, TOO_BIG_SEED],
        "--chunk": [*BAD_INTS, "0", str(2**20 + 1)],
    }
    other = [
        ["--variant", "scopone-scientifico", "--pairs", f"random vs bot:path={SHIPPED_BOT}"],  # a classic bot
        ["--deals", "2", "--bogus"],
        ["--deals"],
        ["positional"],
    ]
    assert refuse_all(ladder.main, LADDER_PROG, workdir, good, bad, other) > 100


def test_ladder_plays_documented_pairings_and_the_largest_seed(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seeds: list[list[int]] = []
    real_play = ladder.play

    def spy(rules: Any, agents: Any, lineups: Any, game_seeds: Any, **kwargs: Any) -> Any:
        seeds.append([int(s) for s in np.asarray(game_seeds, dtype=np.uint64)])
        return real_play(rules, agents, lineups, game_seeds, **kwargs)

    monkeypatch.setattr(ladder, "play", spy)
    top = 2**63 - 1
    argv = ["--pairs", "random vs greedy;greedy vs random", "--deals", "3", "--matches", "1", "--chunk", "2"]
    assert ladder.main([*argv, "--seed", str(top)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == f"variant classic, seed {top}" and lines[1].startswith("| A | B | hands |"), out
    assert [line.split(" | ")[:3] for line in lines[3:]] == [["| random", "greedy", "6"], ["| greedy", "random", "6"]]
    assert [json.loads(line)["hands"] for line in err.splitlines()] == [6, 6]
    deals = [top, top + 1], [top + 2]  # each chunk played straight, then with the seats swapped
    matches = [10**6 + top]
    assert seeds[:6] == [deals[0], deals[0], deals[1], deals[1], matches, matches], seeds  # exact, never rounded
    assert_nothing_written(workdir, argv)


# --------------------------------------------------------------------------------------------------- agents_speed

SPEED_PROG = "python bench/agents_speed.py"


def test_speed_rejects_every_malformed_argument(workdir: Path) -> None:
    specs = bad_specs(workdir)
    good = {"--agents": ["random"], "--opponent": ["random"], "--games": ["2"]}
    bad = {
        "--variant": BAD_NAMES,
        "--agents": ["", ",", ";", " ; ", "random,pimc:worlds=2", *specs, *(f"random;{s}" for s in specs if s.strip())],
        "--opponent": ["", *specs],
        "--games": [*BAD_INTS, "0", str(2**20 + 1)],
        "--seed": [*BAD_INTS, TOO_BIG_SEED],
    }
    other = [
        ["--variant", "scopone-scientifico", "--agents", f"bot:path={SHIPPED_BOT}", "--games", "2"],
        ["--games", "2", "--bogus"],
        ["--games"],
        ["positional"],
    ]
    assert refuse_all(speed.main, SPEED_PROG, workdir, good, bad, other) > 80


def test_speed_runs_documented_agent_lists(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for agents in ("random,greedy", "random; expert:endgame=0"):
        argv = ["--agents", agents, "--opponent", "random", "--games", "2", "--seed", str(2**63 - 1)]
        assert speed.main(argv) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0].split() == ["agent", "ms/decision", "rows/call", "decisions", "wall", "s"], out
        rows = [json.loads(line) for line in out[3:]]
        assert [r["agent"] for r in rows] == [s.strip() for s in agents.replace(";", ",").split(",")], out
        assert all(r["games"] == 2 and r["decisions"] > 0 for r in rows), rows
    assert_nothing_written(workdir, "speed")


# --------------------------------------------------------------------------------------------------- bot_latency

LATENCY_PROG = "python bench/bot_latency.py"


def broken_bots(root: Path) -> list[str]:
    """Paths ``--bot`` must refuse: missing, a file, an empty folder, damaged model cards, weights or ONNX graphs."""
    made = root / "bots"
    made.mkdir()
    (made / "empty").mkdir()
    (made / "a-file").write_text("x")
    bad: list[str] = []
    for name, damage in [
        ("card-junk", lambda d: (d / "model_card.json").write_text("{")),
        ("card-list", lambda d: (d / "model_card.json").write_text("[]")),
        ("card-only", lambda d: [p.unlink() for p in d.iterdir() if p.name != "model_card.json"]),
        ("npz-junk", lambda d: (d / "policy.npz").write_bytes(b"PK\x03\x04junk")),
        ("onnx-junk", lambda d: (d / "policy.onnx").write_bytes(b"\x08\x07junk")),
    ]:
        shutil.copytree(SHIPPED_BOT, made / name)
        damage(made / name)
        bad.append(str(made / name))
    return [
        "",
        " ",
        str(made / "missing"),
        str(made / "a-file"),
        str(made / "empty"),
        str(SHIPPED_BOT / "policy.onnx"),
        "a\x00b",
        *bad,
    ]


def test_bot_latency_rejects_every_malformed_argument(workdir: Path) -> None:
    good = {"--calls": ["1"], "--batch": ["1"]}
    bad = {
        "--bot": broken_bots(workdir),
        "--calls": [*BAD_INTS, "0", str(10**6 + 1)],
        "--batch": [*BAD_INTS, "0", "2049"],
        "--seed": [*BAD_INTS, TOO_BIG_SEED],
    }
    other = [
        ["--bot", str(SHIPPED_BOT), "--synthetic", "8"],  # one bot or the other
        ["--variant", "classic"],  # --variant is the synthetic bot's; an export carries its own
        ["--bot", str(SHIPPED_BOT), "--variant", "classic"],
        ["--calls", "1", "--bogus"],
        ["--calls"],
        ["positional"],
    ]
    n = refuse_all(latency.main, LATENCY_PROG, workdir, good, bad, other)
    synthetic = {
        "--synthetic": ["", ",", " , ", "abc", "0", "-8", "8,x", "1.5", "4097", "8," * 9, "\x00", "9" * 5000],
        "--variant": BAD_NAMES,
    }
    n += refuse_all(latency.main, LATENCY_PROG, workdir, {**good, "--synthetic": ["8"]}, synthetic, [])
    assert n > 80


def test_bot_latency_reads_the_documented_layer_sizes() -> None:
    assert latency.parse_hidden("256,256") == [256, 256]
    assert latency.parse_hidden(" 64 , 32,") == [64, 32]
    assert latency.parse_hidden("4096") == [4096]
    for text in ("", ",", "0", "abc", "8,-1", "4097", "8," * 9):
        with pytest.raises(ValueError, match="--synthetic 256,256"):
            latency.parse_hidden(text)
