"""Run batched games between agents on the core: the engine under the ladder, ``evaluate.py`` and the trainer.

Each game has a *lineup*: which agent sits in each seat. At every decision the games are grouped by the agent
whose turn it is, and each agent acts once on its whole group.

    results = play(rules, [greedy, expert], lineups, seeds, mode="hands")

``mode="hands"`` stops every game after its first hand (the points of that hand are the result);
``mode="matches"`` plays each game to the variant's target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from agents.base import ActBatch, Policy, any_needs_obs
from scopa_env import core
from scopa_env.rules import Rules, get_rules

__all__ = ["GameResults", "play"]


@dataclass
class GameResults:
    """Results of a batch of games, per game (axis 0) and side."""

    hand_points: npt.NDArray[np.int32]
    """(B, S) points of each side summed over the hands played."""
    hands: npt.NDArray[np.int32]
    """(B,) number of hands played."""
    winner: npt.NDArray[np.int8]
    """(B,) winning side in ``matches`` mode, -1 in ``hands`` mode."""
    scores: npt.NDArray[np.int16]
    """(B, S) final match scores."""
    decisions: int
    """Total decisions taken by agents."""
    records: list[dict[str, Any]] | None = None
    """Game records (RULES.md section 8), if asked for."""


def play(
    rules: Rules | str,
    agents: Sequence[Policy],
    lineups: npt.ArrayLike,
    seeds: npt.ArrayLike,
    mode: Literal["hands", "matches"] = "hands",
    record: bool = False,
    on_step: Callable[[int], None] | None = None,
    max_hands: int = 200,
) -> GameResults:
    """Play one game per seed; ``lineups[g, seat]`` is the index in ``agents`` of the agent in that seat.

    ``on_step(n_finished)`` is called after every step with the number of games that finished in it.
    """
    rules = get_rules(rules)
    seeds = np.asarray(seeds, dtype=np.uint64).reshape(-1)
    lineups = np.asarray(lineups, dtype=np.int64)
    b = seeds.size
    if lineups.shape != (b, rules.num_players):
        raise ValueError(f"lineups must have shape ({b}, {rules.num_players}), got {lineups.shape}")
    if lineups.min() < 0 or lineups.max() >= len(agents):
        raise ValueError(f"lineups index agents 0..{len(agents) - 1}, got values {lineups.min()}..{lineups.max()}")
    state = core.reset(rules, seeds)
    writer = None
    if record:
        from scopa_env.record import RecordWriter

        writer = RecordWriter(rules)
        writer.start(state)
    points = np.zeros((b, rules.num_sides), dtype=np.int32)
    hands = np.zeros(b, dtype=np.int32)
    finished = np.zeros(b, dtype=np.bool_)
    ar = np.arange(b)
    no_obs = np.zeros((b, 0), dtype=np.float32)
    decisions = 0
    while not finished.all():
        live = np.flatnonzero(~finished)
        mask = core.legal_action_mask(rules, state)
        actor = lineups[ar, np.maximum(state.current, 0)]
        acting = np.unique(actor[live])
        # Rule-based and search agents never read observations: skip computing them when none acts.
        obs = core.observe(rules, state) if any_needs_obs(agents[int(k)] for k in acting) else no_obs
        actions = np.zeros(b, dtype=np.int64)
        for k in acting:
            rows = live[actor[live] == k]
            batch = ActBatch(rules, obs[rows], mask[rows], state, rows)
            actions[rows] = agents[int(k)].act(batch)
        decisions += live.size
        info = core.step(rules, state, actions)
        if writer is not None:
            writer.observe(state, info)
        points[info.hand_over] += info.hand_points[info.hand_over, :, -1]
        hands += info.hand_over
        newly = (info.hand_over & (mode == "hands")) | info.match_over | (hands >= max_hands)
        newly &= ~finished
        if mode == "hands":
            state.phase[newly] = core.Phase.DONE  # stop after the first hand
        finished |= newly
        if on_step is not None:
            on_step(int(newly.sum()))
    records = None
    if writer is not None:
        records = [r for r in writer.records if r is not None] + writer.finished
        for r in records:  # drop the next hand dealt after a stop in "hands" mode
            if r["hands"] and "points" not in r["hands"][-1] and not r["hands"][-1]["moves"]:
                r["hands"].pop()
        records.sort(key=lambda r: r["seed"])
    return GameResults(points, hands, state.winner.copy(), state.scores.copy(), decisions, records)
