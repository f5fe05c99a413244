"""The core benchmark (``bench/env_speed.py``, installed as ``scopa_bench.env_speed``): its random driver plays
uniformly among legal actions, the command prints its JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scopa_bench import env_speed as bench


def test_random_driver_is_legal_and_uniform() -> None:
    rng = np.random.default_rng(0)
    mask = np.zeros((60_000, 40), dtype=np.bool_)
    mask[:, [3, 17, 30]] = True
    mask[::2, 39] = True  # half the rows have a fourth legal action
    mask[5, :] = False
    mask[5, 0] = True  # one forced move
    acts = bench._random_legal(rng, mask)
    assert mask[np.arange(mask.shape[0]), acts].all()
    odd = np.bincount(acts[1::2], minlength=40)[[3, 17, 30]] / 30_000
    even = np.bincount(acts[::2], minlength=40)[[0, 3, 17, 30, 39]] / 30_000
    assert odd == pytest.approx([1 / 3] * 3, abs=0.015)
    assert even[1:] == pytest.approx([1 / 4] * 4, abs=0.015)


def test_bench_command_prints_the_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--variant", "classic", "--batch", "64", "--seconds", "0.2", "--reference-seconds", "0.1"]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in ("variant", "batch", "decisions_per_s", "games_per_s", "reference_decisions_per_s", "speedup"):
        assert key in last, key
    assert last["batch"] == 64 and last["decisions_per_s"] > 0 and last["reference_decisions_per_s"] > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batch", "0"], "argument --batch: expected a whole number from 1 to 1048576, got '0'"),
        (["--batch", str(2**40)], "argument --batch: expected a whole number from 1 to 1048576"),
        (["--seconds", "-1"], "argument --seconds: expected a finite number of seconds > 0, got '-1'"),
        (["--seconds", "0"], "argument --seconds: expected a finite number of seconds > 0, got '0'"),
        (["--reference-seconds", "-1"], "argument --reference-seconds: expected a finite number of seconds >= 0"),
        (["--seed", "-1"], "argument --seed: expected a whole number from 0 to 2**63-1, got '-1'"),
        (["--seed", str(2**64)], "argument --seed: expected a whole number from 0 to 2**63-1"),
        (["--variant", "nope"], "--variant: unknown variant 'nope'"),
        (["--env", "vec", "--reference-seconds", "1"], "--reference-seconds applies to --env core only"),
    ],
)
def test_bench_arguments_are_checked_up_front(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    # short timings, so that on a command line that is wrongly accepted the benchmark ends quickly
    base = ["--batch", "8", "--seconds", "0.05", "--reference-seconds", "0"]
    with pytest.raises(SystemExit) as exit_info:
        bench.main(base + argv if "--env" not in argv else ["--seconds", "0.05", *argv])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    assert captured.err.splitlines()[-1].startswith(f"python bench/env_speed.py: error: {message}"), captured.err
