"""``random``: uniform over legal cards, then uniform over that card's legal captures."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agents.base import ActBatch, Policy, register_agent
from scopa_env.cards import Deck
from scopa_env.core import Phase, State
from scopa_env.rules import Rules

__all__ = ["RandomAgent", "uniform_capture_picks", "uniform_legal"]


def uniform_legal(mask: npt.NDArray[np.bool_], rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """(n,) a uniformly random True column of each row of ``mask`` (rows must not be empty)."""
    keys = rng.random(mask.shape)
    keys[~mask] = -1.0
    return keys.argmax(axis=1)


def uniform_capture_picks(
    rules: Rules, state: State, games: npt.NDArray[np.intp], mask: npt.NDArray[np.bool_], rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """(n,) the next pick for games in the CHOOSE phase that makes the whole capture uniform among legal captures.

    Picks go in increasing card order: with picks ``p`` and ``t`` still to add up, each table card ``x`` above
    ``max(p)`` is picked with probability proportional to the number of captures whose lowest card beyond ``p``
    is ``x``, i.e. the number of sets of available cards above ``x`` adding up to ``t - value(x)``. The
    probabilities multiply out to 1 / (number of legal captures) for every capture. When the pending card's
    rank is on the table the captures are single cards, and the pick is uniform over the mask.
    """
    deck = rules.deck
    d = deck.num_cards
    value, rank = _deck_arrays(deck)
    n = games.size
    table = state.table[games]
    picked = state.picked[games]
    pending = state.pending[games].astype(np.int64)
    equal = (table & (rank[None, :] == rank[pending][:, None])).any(axis=1)
    target = value[pending] - (picked * value).sum(axis=1)
    top = np.where(picked.any(axis=1), d - 1 - np.argmax(picked[:, ::-1], axis=1), -1)
    avail = table & ~picked
    max_t = int(target.max()) if n else 0
    # suffix[k][:, s]: number of subsets of the available cards with id >= k adding up to s
    counts = np.zeros((n, max_t + 1), dtype=np.float64)
    counts[:, 0] = 1.0
    weights = np.zeros((n, d), dtype=np.float64)
    for k in np.flatnonzero(avail.any(axis=0) & (value <= max_t))[::-1]:
        col = avail[:, k]
        v = int(value[k])
        ok = np.flatnonzero(col & (k > top) & (target >= v))
        weights[ok, k] = counts[ok, target[ok] - v]
        counts[col, v:] += counts[col, : max_t + 1 - v]
    weights = np.where(equal[:, None], mask.astype(np.float64), weights)
    keys = rng.random(weights.shape) ** (1.0 / np.maximum(weights, 1e-300))  # weighted draw (Efraimidis-Spirakis)
    keys[weights <= 0] = -1.0
    return keys.argmax(axis=1)


_DECK_ARRAYS: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}


def _deck_arrays(deck: Deck) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(value, rank) of every card id, cached per deck."""
    if deck.name not in _DECK_ARRAYS:
        _DECK_ARRAYS[deck.name] = (deck.value.astype(np.int64), deck.rank.astype(np.int64))
    return _DECK_ARRAYS[deck.name]


class RandomAgent(Policy):
    """Uniform over legal cards and over captures (no memory, no observation needed)."""

    name = "random"
    needs_state = True
    needs_obs = False

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        actions = uniform_legal(batch.mask, self.rng)
        if batch.state is None or batch.games is None:
            return actions  # without the state, CHOOSE picks are uniform over pickable cards
        rows = np.flatnonzero(batch.state.phase[batch.games] == Phase.CHOOSE)
        if rows.size:
            actions[rows] = uniform_capture_picks(
                batch.rules, batch.state, batch.games[rows], batch.mask[rows], self.rng
            )
        return actions


@register_agent("random", "uniform over legal cards and over captures")
def _make_random(rules: Rules, seed: int | None = None) -> Policy:
    return RandomAgent(rules, seed)
