"""``random``: uniform over legal cards, then uniform over that card's legal captures."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agents.base import ActBatch, Policy, register_agent
from scopa_env.core import Phase, enumerate_captures
from scopa_env.rules import Rules

__all__ = ["RandomAgent", "uniform_capture_pick", "uniform_legal"]


def uniform_legal(mask: npt.NDArray[np.bool_], rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """(n,) a uniformly random True column of each row of ``mask`` (rows must not be empty)."""
    keys = rng.random(mask.shape)
    keys[~mask] = -1.0
    return keys.argmax(axis=1)


def uniform_capture_pick(
    rules: Rules, table: list[int], pending: int, picked: list[int], rng: np.random.Generator
) -> int:
    """The next pick that makes the whole capture uniform among the legal captures of ``pending``.

    Picks are made in increasing card order: among captures containing the picks whose cards below the last
    pick are all picked, choose one uniformly and pick its lowest remaining card. The probabilities multiply
    out to 1 / (number of legal captures) for each capture.
    """
    chosen = set(picked)
    top = max(chosen) if chosen else -1
    caps = [
        c
        for c in enumerate_captures(rules, table, pending)
        if chosen <= c and all(x in chosen for x in c if x < top)
    ]
    cap = caps[int(rng.integers(len(caps)))]
    return min(c for c in cap if c not in chosen)


class RandomAgent(Policy):
    """Uniform over legal cards and over captures (no memory, no state needed except in the CHOOSE phase)."""

    name = "random"
    needs_state = True

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        actions = uniform_legal(batch.mask, self.rng)
        if batch.state is None or batch.games is None:
            return actions  # without the state, CHOOSE picks are uniform over pickable cards
        st = batch.state
        for i in np.flatnonzero(st.phase[batch.games] == Phase.CHOOSE):
            g = int(batch.games[i])
            actions[i] = uniform_capture_pick(
                batch.rules,
                [int(c) for c in np.flatnonzero(st.table[g])],
                int(st.pending[g]),
                [int(c) for c in np.flatnonzero(st.picked[g])],
                self.rng,
            )
        return actions


@register_agent("random", "uniform over legal cards and over captures")
def _make_random(rules: Rules, seed: int | None = None) -> Policy:
    return RandomAgent(rules, seed)
