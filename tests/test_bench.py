"""The core benchmark: its random driver plays uniformly among legal actions, and the command prints its JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scopa_env import bench


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
