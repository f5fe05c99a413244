"""Fuzz the command lines of ``agents.cli.record``, ``agents.play.terminal`` and ``bench/env_speed.py``, and ``record
--check``.

Each case calls a ``main(argv)`` in-process with one malformed argument on an otherwise valid command line and
expects argparse's convention: exit status 2, nothing on stdout, and stderr ending in the one line
``<prog>: error: ...`` (after the usage), never a traceback. Malformed record files go through ``--check``, which
must name the first wrong line (status 1) or refuse the path (status 2), whatever the bytes.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.cli import record
from agents.play import terminal as play
from scopa_bench import env_speed as bench

BAD_INTS = [
    "-1",
    "1e30",
    "1.5",
    "abc",
    "",
    " ",
    "0x10",
    "nan",
    "inf",
    "1_0_",
    str(2**64),
    "9" * 5000,
    "\x00",
    "ÿ" * 300,
]
"""Values no whole-number argument accepts (argparse reads ``-1`` as a value, not an option)."""
BAD_NAMES = ["", "nope", "\x00", "classic-", "classic 15", "ÿ" * 300, "../../etc/passwd", "a" * 5000]
"""Values no variant name accepts (names are read case- and space-insensitively: ``CLASSIC `` is classic)."""


def call(main: Callable[..., int], argv: list[str], **kwargs: Any) -> tuple[object, str, str]:
    """``main(argv, **kwargs)`` with stdout and stderr captured: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: object = main(argv, **kwargs)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def assert_clean_error(result: tuple[object, str, str], prog: str, game_out: str = "") -> None:
    code, out, err = result
    lines = err.rstrip("\n").splitlines()
    assert code == 2, (code, err)
    assert "Traceback" not in err and out == "" and game_out == "", (out, game_out, err)
    assert lines and lines[-1].startswith(f"{prog}: error: ") and len(lines[-1]) > len(prog) + 9, err
    assert sum("error:" in line for line in lines) == 1, err  # one error line, after argparse's usage


def cases(good: dict[str, list[str]], bad: dict[str, list[str]]) -> Iterator[tuple[str, list[str]]]:
    """One command line per malformed value: ``good`` with the argument of ``bad`` replaced."""
    for flag, values in bad.items():
        for value in values:
            argv = [x for f, v in good.items() if f != flag for x in (f, *v)]
            yield flag, [*argv, flag, value]


# --------------------------------------------------------------------------------------------------- record

RECORD_PROG = "python -m agents.cli.record"


def test_record_rejects_every_malformed_write_argument(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "g.jsonl"
    good = {"--variant": ["classic"], "--games": ["2"], "--seed": ["0"], "--batch": ["2"], "--out": [str(out)]}
    bad = {
        "--variant": BAD_NAMES,
        "--games": [*BAD_INTS, "0", str(2**64 + 1)],
        "--seed": BAD_INTS,
        "--batch": [*BAD_INTS, "0", str(2**17)],
        "--out": [
            str(tmp_path),
            str(tmp_path / "missing" / "g.jsonl"),
            str(tmp_path / "a-file" / "g.jsonl"),
            "",
            "a\x00b",
        ],
    }
    n = 0
    for flag, argv in cases(good, bad):
        assert_clean_error(call(record.main, argv), RECORD_PROG)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"], (flag, argv)  # nothing written
        n += 1
    for argv in (
        ["--seed", str(2**64 - 1), "--games", "2", "--out", str(out)],
        ["--out", str(out), "--check", str(out)],
        ["--check", str(out), "--games", "3"],
        ["--allow-unfinished", "--out", str(out)],
        ["--out", str(out), "--bogus"],
        ["--out"],
        [],
    ):
        assert_clean_error(call(record.main, argv), RECORD_PROG)
        n += 1
    assert n > 60


def test_record_check_refuses_paths_that_are_not_record_files(tmp_path: Path) -> None:
    paths: list[Path | str] = [tmp_path, tmp_path / "missing.jsonl", "", "a\x00b"]
    for name, content in [("nul.bin", b"\x00" * 10), ("x.gz", b"\x1f\x8b\x08\x00"), ("x.zip", b"PK\x03\x04")]:
        (tmp_path / name).write_bytes(content)
        paths.append(tmp_path / name)
    for path in paths:
        assert_clean_error(call(record.main, ["--check", str(path)]), RECORD_PROG)


def _valid_record() -> dict[str, Any]:
    return next(record.play_random_records("classic", 1, 3))


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value: the keys and indices that lead to it."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


JUNK: list[Any] = [None, True, False, -1, 0, 2**70, 1.5, "", "zz", [], {}, [[[]]], {"a": 1}, "7d", [None]]
"""Values planted in place of a record's fields."""


def _mutations(rng: random.Random, rec: dict[str, Any], n: int) -> Iterator[bytes]:
    """``n`` malformed lines made from ``rec``: fields replaced or deleted, bytes flipped, lines cut."""
    text = json.dumps(rec).encode()
    places = [p for p in _paths(rec) if p]
    for _ in range(n):
        kind = rng.randrange(4)
        if kind == 0:  # a field replaced by junk
            bad = copy.deepcopy(rec)
            *head, last = rng.choice(places)
            parent = bad
            for k in head:
                parent = parent[k]
            parent[last] = copy.deepcopy(rng.choice(JUNK))
            yield json.dumps(bad).encode()
        elif kind == 1:  # a field deleted
            bad = copy.deepcopy(rec)
            *head, last = rng.choice(places)
            parent = bad
            for k in head:
                parent = parent[k]
            del parent[last]
            yield json.dumps(bad).encode()
        elif kind == 2:  # a few bytes overwritten (newlines excluded: one line stays one line)
            raw = bytearray(text)
            for _ in range(rng.randint(1, 3)):
                raw[rng.randrange(len(raw))] = rng.choice([b for b in range(256) if b != 0x0A])
            yield bytes(raw)
        else:  # the line cut short
            yield text[: rng.randrange(len(text))]


def test_record_check_names_the_line_and_reason_for_any_malformed_record(tmp_path: Path) -> None:
    rng = random.Random(21)
    rec = _valid_record()
    good = json.dumps(rec).encode()
    path = tmp_path / "g.jsonl"
    rejected = 0
    for line in _mutations(rng, rec, 160):
        path.write_bytes(good + b"\n" + line + b"\n")
        code, out, err = call(record.main, ["--check", str(path)])
        assert "Traceback" not in err, err
        if code == 0:  # the mutation kept a valid record (e.g. a byte replaced by itself, a key rewritten alike)
            assert out.startswith(f"{path}: all 2 records replay correctly"), out
            continue
        rejected += 1
        where = f"{path}:2: " if line.strip() else f"{path}: "
        assert code == 1 and out == "" and err.startswith(where) and err.count("\n") == 1, (line[:200], err)
        assert len(err) > len(where) + 10, err
    assert rejected > 140


@pytest.mark.parametrize(
    "lines",
    [
        [b"[" * 50_000],
        [b'{"variant": "classic", "hands": ' + b"[" * 900 + b"]" * 900 + b"}"],
        [b"\xc3\x28", b"{}"],
        [b"{}"],
        [b"null"],
        [b'"a record"'],
        [b'{"variant": "classic", "variant": "classic"}'],
        [b"{" + b'"k": 1, ' * 10_000 + b'"z": 2}'],
        [b"\xef\xbb\xbf{}"],
        [b'{"winner": Infinity}'],
    ],
)
def test_record_check_on_hostile_lines(tmp_path: Path, lines: list[bytes]) -> None:
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = call(record.main, ["--check", str(path)])
    assert code == 1 and out == "" and err.startswith(f"{path}:1: ") and err.count("\n") == 1, err


# --------------------------------------------------------------------------------------------------- play

PLAY_PROG = "python -m agents.play"


def test_play_rejects_every_malformed_argument(tmp_path: Path) -> None:
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    specs = [
        "",
        " ",
        "nobody",
        "random:x=1",
        "pimc:worlds=abc",
        "pimc:worlds=-1",
        "bot:colour=red",
        "bot:path=" + str(empty_dir),
    ]
    specs += [str(tmp_path / "missing.zip"), str(junk), str(empty_dir), "neural:path=" + str(junk), ":", "\x00"]
    good = {"--variant": ["classic"], "--opponent": ["random"], "--seat": ["0"], "--seed": ["0"]}
    bad = {
        "--variant": BAD_NAMES,
        "--opponent": specs,
        "--seat": [*BAD_INTS, "2", "8"],
        "--seed": BAD_INTS,
        "--color": ["", "red", "ALWAYS"],
    }
    for _flag, argv in cases(good, bad):
        game = io.StringIO()
        result = call(play.main, argv, inp=io.StringIO("7d\n"), out=game)
        assert_clean_error(result, PLAY_PROG, game.getvalue())
    for argv in (
        ["--opponent", "random", "--partner", "greedy"],  # classic has no teams
        ["--variant", "scopone-scientifico", "--opponent", "random", "--partner", "nobody"],
        ["--variant", "scopone-scientifico", "--opponent", "random", "--partner", ""],
        ["--variant", "simple-3", "--opponent", "random", "--seat", "3"],
        ["--opponent", "random", "--bogus"],
        ["--opponent"],
    ):
        game = io.StringIO()
        assert_clean_error(call(play.main, argv, inp=io.StringIO(""), out=game), PLAY_PROG, game.getvalue())


def test_play_run_reports_a_bad_config_in_one_line() -> None:
    configs: list[dict[str, Any]] = [
        {"variant": "nope"},
        {"variant": None},
        {"variant": ["classic"]},
        {"seat": -1},
        {"seat": 2},
        {"seat": "0"},
        {"seat": 1.0},
        {"seed": -1},
        {"seed": 2**64},
        {"seed": "0"},
        {"seed": 0.5},
        {"opponent": ""},
        {"opponent": 3},
        {"opponent": "nobody"},
        {"partner": "random"},
    ]
    for config in configs:
        out = io.StringIO()
        rc = play.run(play.PlayConfig(**{"opponent": "random", **config}), io.StringIO(""), out)
        text = out.getvalue()
        assert rc == 2 and text.startswith("error: ") and text.count("\n") == 1, (config, text)


# --------------------------------------------------------------------------------------------------- bench

BENCH_PROG = "python bench/env_speed.py"
BAD_SECONDS = ["-1", "nan", "inf", "-inf", "1e400", "abc", "", "1s", "\x00"]


def test_bench_rejects_every_malformed_argument() -> None:
    good = {"--variant": ["classic"], "--batch": ["8"], "--seconds": ["0.05"], "--reference-seconds": ["0"]}
    bad = {
        "--variant": BAD_NAMES,
        "--batch": [*BAD_INTS, "0", str(2**21)],
        "--seconds": [*BAD_SECONDS, "0"],
        "--reference-seconds": BAD_SECONDS,
        "--seed": [*BAD_INTS, str(2**63)],
        "--env": ["", "gpu", "CORE"],
    }
    for _flag, argv in cases(good, bad):
        assert_clean_error(call(bench.main, argv), BENCH_PROG)
    for argv in (["--env", "vec", "--reference-seconds", "1"], ["--bogus"], ["--batch"]):
        assert_clean_error(call(bench.main, argv), BENCH_PROG)
