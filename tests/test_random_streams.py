"""``RandomAgent``'s batched draws against plain restatements of them: ``PositionStreams`` (keys and numbers) and
``uniform_capture_picks`` (the weights of each pick), on random positions of several variants, copies of one
position included. The faster forms must give the very same numbers: the random stream is part of every seeded
result that involves a random player."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from scopa_env.engine import core
from scopa_env.games.policy import PositionStreams, _count_true, uniform_capture_picks
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.shuffle import splitmix64

VARIANTS = ("classic", "scopone-scientifico", "scopa-d-assi", "simple-5", "simple-8")
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX = np.uint64(0x94D049BB133111EB)


def plain_keys(key: np.uint64, state: core.State, g: npt.NDArray[np.intp]) -> npt.NDArray[np.uint64]:
    """``PositionStreams``' keys as first written: one part at a time, ``np.unique`` for the copies."""
    parts = (
        state.hand_no[g].astype(np.uint64),
        state.deal_no[g].astype(np.uint64),
        state.stock_pos[g].astype(np.uint64),
        state.hands[g].reshape(g.size, -1).sum(axis=1).astype(np.uint64),
        state.picked[g].sum(axis=1).astype(np.uint64),
        state.phase[g].astype(np.uint64),
        state.current[g].astype(np.uint64),
    )
    with np.errstate(over="ignore"):
        h = splitmix64(state.seed[g].astype(np.uint64) ^ np.uint64(key))
        for part in parts:
            h = splitmix64(h ^ (part + np.uint64(1)) * GOLDEN)
        _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
        if counts.size < h.size:
            order = np.argsort(inverse, kind="stable")
            occurrence = np.empty(h.size, dtype=np.uint64)
            occurrence[order] = (np.arange(h.size) - (np.cumsum(counts) - counts)[inverse[order]]).astype(np.uint64)
            h = np.where(occurrence > 0, splitmix64(h ^ occurrence * MIX), h)
    return h


def plain_random(keys: npt.NDArray[np.uint64], call: int, width: int) -> npt.NDArray[np.float64]:
    with np.errstate(over="ignore"):
        base = splitmix64(keys + np.uint64(call) * GOLDEN)
        z = base[:, None] + (np.arange(1, width + 1, dtype=np.uint64) * GOLDEN)[None, :]
        z = (z ^ (z >> np.uint64(31))) * MIX
        z ^= z >> np.uint64(29)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def plain_pick_weights(rules: Rules, state: core.State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """``uniform_capture_picks``' weights as first written (every row, one card at a time), before the equal-rank
    rows take the mask."""
    deck = rules.deck
    d = deck.num_cards
    value, rank = deck.value.astype(np.int64), deck.rank.astype(np.int64)
    n = games.size
    table, picked = state.table[games], state.picked[games]
    pending = state.pending[games].astype(np.int64)
    target = value[pending] - (picked * value).sum(axis=1)
    top = np.where(picked.any(axis=1), d - 1 - np.argmax(picked[:, ::-1], axis=1), -1)
    avail = table & ~picked
    max_t = int(target.max()) if n else 0
    counts = np.zeros((n, max_t + 1), dtype=np.float64)
    counts[:, 0] = 1.0
    weights = np.zeros((n, d), dtype=np.float64)
    for k in np.flatnonzero(avail.any(axis=0) & (value <= max_t))[::-1]:
        col = avail[:, k]
        v = int(value[k])
        ok = np.flatnonzero(col & (k > top) & (target >= v))
        weights[ok, k] = counts[ok, target[ok] - v]
        counts[col, v:] += counts[col, : max_t + 1 - v]
    equal = (table & (rank[None, :] == rank[pending][:, None])).any(axis=1)
    return np.where(equal[:, None], 0.0, weights)


class _Recorder:
    """A generator stand-in that returns fixed numbers and keeps nothing else: the picks' draw made visible."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def random(self, shape: tuple[int, int]) -> npt.NDArray[np.float64]:
        return self.rng.random(shape)


def test_count_true_counts_every_width() -> None:
    rng = np.random.default_rng(0)
    for width in (1, 7, 8, 40, 52, 80, 248, 256, 416):
        rows = rng.random((33, width)) < rng.random((33, 1))
        assert np.array_equal(_count_true(rows), np.count_nonzero(rows, axis=1))
        assert np.array_equal(_count_true(rows[:, ::-1]), np.count_nonzero(rows, axis=1))  # not contiguous


@pytest.mark.parametrize("variant", VARIANTS)
def test_streams_and_picks_equal_their_plain_forms(variant: str) -> None:
    rules = get_rules(variant)
    state = core.reset(rules, np.arange(64, dtype=np.uint64) + 5)
    rng = np.random.default_rng(2)
    picks_checked = 0
    for step in range(150):
        mask = core.legal_action_mask(rules, state)
        live = np.flatnonzero(~state.done)
        games = np.concatenate([live, live[:3]])  # copies of three positions: their draws count off
        key = np.uint64(1234567 + step)
        streams = PositionStreams(key, state, games)
        assert np.array_equal(streams.keys, plain_keys(key, state, games))
        assert np.array_equal(streams.random((games.size, mask.shape[1])), plain_random(streams.keys, 1, mask.shape[1]))
        assert np.array_equal(streams.random((games.size, 7)), plain_random(streams.keys, 2, 7))
        rows = np.flatnonzero(state.phase == core.Phase.CHOOSE)
        if rows.size:
            got = uniform_capture_picks(rules, state, rows, mask[rows], _Recorder(step))  # type: ignore[arg-type]
            weights = plain_pick_weights(rules, state, rows)
            equal = np.asarray(~weights.any(axis=1))  # (a row of sums always has a card to pick next)
            weights = np.where(equal[:, None], mask[rows].astype(np.float64), weights)
            keys = _Recorder(step).random(weights.shape) ** (1.0 / np.maximum(weights, 1e-300))
            keys[weights <= 0] = -1.0
            assert np.array_equal(got, keys.argmax(axis=1))
            picks_checked += rows.size
        draw = rng.random(mask.shape)
        draw[~mask] = -1.0
        actions = draw.argmax(axis=1)
        actions[rows] = mask[rows].argmax(axis=1)  # picks in increasing card order, as RandomAgent makes them
        core.step(rules, state, actions, autoreset=True)
    assert picks_checked > 20
