"""Game records: written by the batched core, replayed by the reference engine; bad lines are reported."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from agents.cli.record import main, play_random_records
from scopa_env.oracle.record_check import RecordFileError, check_file
from scopa_env.rules import VARIANTS


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_records_replay(tmp_path, variant):
    out = tmp_path / "g.jsonl"
    assert main(["--variant", variant, "--games", "6", "--seed", "3", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 6
    recs = [json.loads(x) for x in lines]
    assert [r["seed"] for r in recs] == list(range(3, 9))
    assert all(r["winner"] is not None and r["variant"] == variant for r in recs)
    assert check_file(out) == (6, None)


def test_same_seed_same_records():
    a = list(play_random_records("classic", 4, seed=11))
    b = list(play_random_records("classic", 4, seed=11))
    assert a == b
    c = list(play_random_records("classic", 4, seed=12))
    assert a != c


def test_check_reports_first_wrong_line(tmp_path):
    out = tmp_path / "g.jsonl"
    main(["--variant", "classic", "--games", "3", "--seed", "0", "--out", str(out)])
    lines = out.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["hands"][0]["points"][0]["total"] += 1
    lines[1] = json.dumps(rec)
    out.write_text("\n".join(lines) + "\n")
    n, reason = check_file(out)
    assert n == 2 and reason is not None and "hand 0" in reason
    lines[1] = "{not json"
    out.write_text("\n".join(lines) + "\n")
    n, reason = check_file(out)
    assert n == 2 and "not valid JSON" in reason


def test_cli_errors(tmp_path):
    py = [sys.executable, "-m", "agents.cli.record"]
    r = subprocess.run([*py, "--variant", "nope", "--out", str(tmp_path / "x.jsonl")], capture_output=True, text=True)
    assert r.returncode != 0 and "unknown variant 'nope'" in r.stderr
    r = subprocess.run([*py, "--check", str(tmp_path / "missing.jsonl")], capture_output=True, text=True)
    assert r.returncode != 0 and "no such file" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"variant": "classic"}\n')
    r = subprocess.run([*py, "--check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "bad.jsonl:1:" in r.stderr


# --------------------------------------------------------------------------------------------------- reproducibility


def test_a_record_depends_on_its_seed_only_not_on_games_or_batch():
    twenty = list(play_random_records("classic", 20, seed=40, batch=256))
    assert list(play_random_records("classic", 5, seed=40)) == twenty[:5]
    assert list(play_random_records("classic", 20, seed=40, batch=3)) == twenty
    assert list(play_random_records("classic", 2, seed=47, batch=1)) == twenty[7:9]
    # the decisions are not all alike: games differ beyond their deals
    assert len({json.dumps(r["hands"][0]["moves"]) for r in twenty}) == 20


def test_play_random_records_checks_its_arguments():
    for kwargs, message in [
        ({"games": 0}, "games must be >= 1"),
        ({"seed": -1}, "seed must be in 0..2\\*\\*64-1"),
        ({"seed": 2**64 - 1, "games": 2}, "seed \\+ games - 1"),
        ({"batch": 0}, "batch must be in 1.."),
    ]:
        args = {"games": 1, "seed": 0, **kwargs}
        with pytest.raises(ValueError, match=message):
            next(play_random_records("classic", **args))
    with pytest.raises(TypeError, match="games must be an integer"):
        next(play_random_records("classic", 2.5, 0))  # type: ignore[arg-type]
    assert next(play_random_records("classic", 1, 2**64 - 1))["seed"] == 2**64 - 1


# --------------------------------------------------------------------------------------------------- --check


@pytest.fixture(scope="module")
def finished() -> dict:
    """A finished classic match of three hands or more."""
    for rec in play_random_records("classic", 10, seed=100):
        if len(rec["hands"]) >= 3:
            return rec
    raise AssertionError("no match of 3 hands in 10 seeds")


def _write(path, *records) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def _cut_after_first_hand(rec: dict) -> dict:
    cut = copy.deepcopy(rec)
    cut["hands"] = cut["hands"][:1]
    cut["winner"] = None
    return cut


def _cut_mid_hand(rec: dict) -> dict:
    cut = _cut_after_first_hand(rec)
    hand = cut["hands"][0]
    hand["moves"] = hand["moves"][:5]  # the first deal gives 3 cards to each of the 2 seats: 6 moves
    hand["deals"] = hand["deals"][:1]
    for key in ("leftover", "points", "scores"):
        del hand[key]
    return cut


@pytest.mark.parametrize("cut", [_cut_after_first_hand, _cut_mid_hand])
def test_check_rejects_an_unfinished_match_unless_it_is_marked(tmp_path, finished, cut):
    path = tmp_path / "g.jsonl"
    _write(path, finished, cut(finished))
    n, reason = check_file(path)
    assert n == 2 and "unfinished" in reason and "--allow-unfinished" in reason
    assert check_file(path, allow_unfinished=True) == (2, None)
    assert main(["--check", str(path), "--allow-unfinished"]) == 0
    assert main(["--check", str(path)]) == 1
    _write(path, finished, {**cut(finished), "unfinished": True})
    assert check_file(path) == (2, None)
    for mark, message in [(False, "false is not a mark"), (1, "true or left out")]:
        _write(path, {**cut(finished), "unfinished": mark})
        n, reason = check_file(path)
        assert n == 1 and message in reason
    _write(path, {**finished, "unfinished": True})
    n, reason = check_file(path)
    assert n == 1 and "the match is over" in reason


def test_records_of_matches_stopped_early_are_marked_unfinished(tmp_path):
    from scopa_env.games.driver import play
    from scopa_env.games.policy import RandomAgent

    rules = VARIANTS["classic"]
    res = play(rules, [RandomAgent(rules, 0)], np.zeros((3, 2), np.int64), [5, 6, 7], mode="hands", record=True)
    assert res.records is not None and all(r["unfinished"] is True and r["winner"] is None for r in res.records)
    path = tmp_path / "hands.jsonl"
    _write(path, *res.records)
    assert check_file(path) == (3, None)
    assert all("unfinished" not in r for r in play_random_records(rules, 3, 5))


def _set_seat(rec: dict, seat: int, value: object) -> dict:
    bad = copy.deepcopy(rec)
    move = next(m for m in bad["hands"][0]["moves"] if m["seat"] == seat)
    move["seat"] = value
    return bad


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda r: _set_seat(r, 1, True), r"moves\[\d+\]\.seat: true is a boolean where a number is expected"),
        (lambda r: _set_seat(r, 0, False), "seat: false is a boolean"),
        (lambda r: _set_seat(r, 1, 1.0), "seat: 1.0 is not a whole number"),
        (lambda r: {**r, "sides": [[False], [True]]}, r"record.sides\[0\]\[0\]: false is a boolean"),
        (lambda r: {**r, "winner": bool(r["winner"])}, "record.winner: .* is a boolean"),
        (lambda r: {**r, "hands": []}, "record hands: empty"),
    ],
)
def test_check_rejects_numbers_written_as_booleans_and_empty_hands(tmp_path, finished, tamper, message):
    path = tmp_path / "g.jsonl"
    _write(path, finished, tamper(finished))
    n, reason = check_file(path)
    assert n == 2 and re.search(message, reason), reason


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"\xff\xfe{}", r"line 2: not UTF-8 text \(byte 0xff at column 1\)"),
        (b"[" * 100_000 + b"]" * 100_000, "line 2: not a record: JSON nested too deeply"),
        (b'{"a": ' + b"[" * 40 + b"]" * 40 + b"}", r"line 2: record.a(\[0\])+: nested deeper than 16 levels"),
        (b'{"seed": 1, "seed": 2}', r"line 2: not valid JSON \(the key 'seed' appears twice"),
        (b'{"seed": NaN}', r"line 2: not valid JSON \(NaN is not a JSON number\)"),
        (b'{"seed": ' + b"9" * 5000 + b"}", "line 2: not valid JSON"),
        (b"[1, 2]", "line 2: a record must be a JSON object, got list"),
        (b"", r"line 2: the same record as line 1 \(a duplicated line\)"),  # the first line again
    ],
)
def test_check_reports_unreadable_lines_with_their_number(tmp_path, finished, line, message):
    path = tmp_path / "g.jsonl"
    first = json.dumps(finished).encode()
    path.write_bytes(first + b"\n" + (line or first) + b"\n")
    n, reason = check_file(path)
    assert re.search(message, f"line {n}: {reason}"), reason
    proc = subprocess.run(
        [sys.executable, "-m", "agents.cli.record", "--check", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 1 and proc.stderr.startswith(f"{path}:2: ") and "Traceback" not in proc.stderr


@pytest.mark.parametrize("content", [b"", b"\n  \n\n"])
def test_check_rejects_a_file_without_records(tmp_path, capsys, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    n, reason = check_file(path)
    assert n == 0 and "no records" in reason
    assert main(["--check", str(path)]) == 1
    assert capsys.readouterr().err == f"{path}: {reason}\n"


def test_check_rejects_paths_that_are_not_record_files(tmp_path, capsys):
    binary = tmp_path / "weights.bin"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    zipped = tmp_path / "best.zip"
    zipped.write_bytes(b"PK\x03\x04" + b"\x00" * 20)
    for path, message in [
        (tmp_path, "is a directory"),
        (tmp_path / "missing.jsonl", "no such file"),
        (binary, "is a binary file"),
        (zipped, "is a zip archive"),
    ]:
        with pytest.raises(RecordFileError, match=message):
            check_file(path)
        with pytest.raises(SystemExit) as exit_info:
            main(["--check", str(path)])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and "python -m agents.cli.record: error: --check: " in err and message in err


# --------------------------------------------------------------------------------------------------- writing


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "-3"], "argument --batch: expected a whole number from 1 to 65536, got '-3'"),
        (["--batch", "0"], "argument --batch: expected a whole number from 1"),
        (["--games", "0"], "argument --games: expected a whole number from 1 to 100000000, got '0'"),
        (["--games", "-1"], "argument --games: expected a whole number"),
        (["--seed", "-1"], "argument --seed: expected a whole number from 0 to 2\\*\\*64-1, got '-1'"),
        (["--seed", str(2**64)], "argument --seed: expected a whole number from 0 to 2\\*\\*64-1"),
        (["--seed", "1e30"], "argument --seed: expected a whole number .* got '1e30'"),
        (["--seed", str(2**64 - 1), "--games", "2"], "the last seed 18446744073709551616 is beyond 2\\*\\*64-1"),
        (["--variant", "nope"], "--variant: unknown variant 'nope'; known variants: classic"),
        (["--allow-unfinished"], "--allow-unfinished applies to --check FILE only"),
        (["--check", "x.jsonl"], "--check reads FILE only; --out applies to writing records"),
    ],
)
def test_write_arguments_are_checked_before_anything_is_written(tmp_path, capsys, args, message):
    out = tmp_path / "g.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--out", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and err[-1].startswith("python -m agents.cli.record: error: ")
    assert re.search(message, err[-1]), err[-1]
    assert list(tmp_path.iterdir()) == []


def test_out_must_be_a_file_in_an_existing_directory(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    for out, message in [
        (tmp_path / "missing" / "g.jsonl", "the directory .*missing' does not exist; create it first"),
        (tmp_path / "runs", "is a directory; give a file path such as"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(["--games", "1", "--out", str(out)])
        err = capsys.readouterr().err.splitlines()[-1]
        assert exit_info.value.code == 2 and re.search(message, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"] and not any((tmp_path / "runs").iterdir())


def test_an_interrupted_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch, capsys):
    import agents.cli.record as record

    out = tmp_path / "g.jsonl"
    out.write_text("old\n")

    def interrupted(*args, **kwargs):
        yield from list(play_random_records("classic", 1, 0))
        raise KeyboardInterrupt

    monkeypatch.setattr(record, "play_random_records", interrupted)
    assert main(["--games", "3", "--out", str(out)]) == 130
    assert "interrupted; nothing written" in capsys.readouterr().err
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["g.jsonl"]
