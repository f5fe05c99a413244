"""Game records: written by the batched core, replayed by the reference engine; bad lines are reported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scopa_env.record import check_file, main, play_random_records
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
    py = [sys.executable, "-m", "scopa_env.record"]
    r = subprocess.run([*py, "--variant", "nope", "--out", str(tmp_path / "x.jsonl")], capture_output=True, text=True)
    assert r.returncode != 0 and "unknown variant 'nope'" in r.stderr
    r = subprocess.run([*py, "--check", str(tmp_path / "missing.jsonl")], capture_output=True, text=True)
    assert r.returncode != 0 and "no such file" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"variant": "classic"}\n')
    r = subprocess.run([*py, "--check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "bad.jsonl:1:" in r.stderr
