"""The one batched game driver: B games on the core, every decision taken by batched policies, with hooks.

Each game has a *lineup*: which agent sits in each seat. At every decision the games are grouped by the agent
whose turn it is, and each agent acts once on its whole group::

    results = play(rules, [greedy, expert], lineups, seeds, mode="hands")

``mode="hands"`` stops every game after its first hand (the points of that hand are the result);
``mode="matches"`` plays each game to the variant's target (or ``max_hands`` hands).

One decision round (legal mask, observation only if an acting policy reads it, one ``Policy.act`` per acting
policy) is ``decide``. It is the same round everywhere a policy acts on the core: ``play`` (tournaments, the
trainer's evaluation, imitation's teacher games, game records) and ``scopa_env.games.learner.LearnerGames`` (the
opponents of the envs, the league; ``SingleLearnerGame`` too, on a batch of one). The terminal and browser games do not
call it: their match (``agents.play.match.HumanMatch``) runs on the single-game engine and builds a bot's ``ActBatch``
itself, the same way, at the bot's turns.

Hooks, all optional:

- ``on_decision(decision)``: after each policy's call, with a ``Decision`` (the acting rows, their observations
  and masks, the actions chosen, the policy's index); imitation captures its teacher's examples here. Pass
  ``observe=True`` when the hook reads observations that no acting policy needs.
- ``after_step(state, info, finished)``: after every core step, with its ``core.StepInfo`` and the games that the
  stop rule finished in it (game records, per-game callbacks when a hand or a game ends).
- ``on_step(n_finished)``: after every step, the number of games finished in it (progress bars).

This module is numpy only and imports only ``scopa_env`` modules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core, observation
from scopa_env.games.policy import ActBatch, Policy, any_needs_obs
from scopa_env.records.record_writer import RecordWriter
from scopa_env.rules import Rules, get_rules

__all__ = ["Decision", "DecisionHook", "GameResults", "StepHook", "decide", "play"]


@dataclass
class Decision:
    """One policy's share of a decision round: rows ``games`` of ``state``, before the actions are applied."""

    rules: Rules
    state: core.State
    """The batched core state the rows come from (not yet stepped)."""
    games: npt.NDArray[np.intp]
    """(n,) index of each row's game in ``state``."""
    obs: npt.NDArray[np.float32]
    """(n, obs_size) observations of the acting seats; zero-width when nobody asked for them."""
    mask: npt.NDArray[np.bool_]
    """(n, num_cards) legal actions."""
    actions: npt.NDArray[np.int64]
    """(n,) the actions the policy chose."""
    agent: int
    """Index of the policy in the driver's ``agents``."""


DecisionHook = Callable[[Decision], None]
StepHook = Callable[[core.State, core.StepInfo, npt.NDArray[np.bool_]], None]
"""``after_step(state, info, finished)``: the state after the step, its info, the games finished in it (B,)."""


def decide(
    rules: Rules,
    state: core.State,
    agents: Sequence[Policy | None],
    actor: npt.NDArray[np.integer],
    games: npt.NDArray[np.intp] | None = None,
    *,
    observe: bool = False,
    check: bool = False,
    on_decision: DecisionHook | None = None,
) -> npt.NDArray[np.int64]:
    """(n,) one action per acting game: mask -> observe -> group rows by acting policy -> ``act`` -> actions.

    ``games`` are the games of ``state`` to decide for (None: every game) and ``actor[i]`` the index in ``agents``
    of the policy acting in ``games[i]``. Observations are computed only if an acting policy reads them
    (``any_needs_obs``) or ``observe`` is set; otherwise the policies get a zero-width array. Each policy acts
    once, in increasing index order, on its rows. With ``check`` every answer must have one legal action per row
    (else ``ValueError`` for a wrong shape, ``core.IllegalActionError`` naming the policy); without it, illegal
    actions are left for ``core.step`` to refuse. ``on_decision`` sees each policy's rows and actions.
    """
    actor = np.asarray(actor)
    mask = core.legal_action_mask(rules, state)
    everyone = np.arange(state.batch_size)
    subset = games is not None and not (games.size == everyone.size and np.array_equal(games, everyone))
    if games is None:
        games = everyone
    n = games.size
    acts = np.empty(n, dtype=np.int64)
    if n == 0:
        return acts
    first = int(actor[0])
    single = bool((actor == first).all())
    kinds = [first] if single else [int(k) for k in np.unique(actor)]
    want_obs = observe or any_needs_obs(agents[k] for k in kinds)
    obs = observation.observe(rules, state) if want_obs else np.zeros((state.batch_size, 0), dtype=np.float32)
    if subset and single:  # index the whole arrays once
        mask, obs = mask[games], (obs[games] if want_obs else obs[:n])
    for k in kinds:
        policy = agents[k]
        assert policy is not None, "a game refers to a released policy"
        if single:  # every row: the whole (already indexed) arrays
            rows, g, o, m = np.arange(n), games, obs, mask
        else:
            rows = np.flatnonzero(actor == k)
            g = games[rows]
            o, m = (obs[g] if want_obs else obs[: rows.size]), mask[g]
        out = policy.act(ActBatch(rules, o, m, state, g))
        if check:
            out = np.asarray(out)
            if out.shape != (rows.size,):
                raise ValueError(f"policy {policy!r} returned actions of shape {out.shape} for {rows.size} rows")
            ok = (out >= 0) & (out < m.shape[1])
            ok &= m[np.arange(rows.size), np.where(ok, out, 0)]
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                raise core.IllegalActionError(
                    f"policy {policy!r} chose the illegal action {int(out[i])}; legal actions were "
                    f"{np.flatnonzero(m[i]).tolist()} (a Policy must return one legal action per row)"
                )
        acts[rows] = out
        if on_decision is not None:
            on_decision(Decision(rules, state, g, o, m, acts[rows], k))
    return acts


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
    max_hands: int | None = 200,
    *,
    on_decision: DecisionHook | None = None,
    after_step: StepHook | None = None,
    observe: bool = False,
    on_illegal: Literal["raise", "report"] = "raise",
) -> GameResults:
    """Play one game per seed; ``lineups[g, seat]`` is the index in ``agents`` of the agent in that seat.

    The stop rule: a game finishes when its match ends, after its first hand in ``mode="hands"``, or after
    ``max_hands`` hands (None: no limit). ``record`` keeps a game record of every game (``GameResults.records``,
    by seed). ``on_illegal`` is passed to ``core.step``. The hooks are described in the module's docstring;
    ``on_step(n_finished)`` is called after every step with the number of games that finished in it.
    """
    rules = get_rules(rules)
    if mode not in ("hands", "matches"):
        raise ValueError(f"mode must be 'hands' or 'matches', got {mode!r}")
    seeds = np.asarray(seeds, dtype=np.uint64).reshape(-1)
    lineups = np.asarray(lineups, dtype=np.int64)
    b = seeds.size
    if lineups.shape != (b, rules.num_players):
        raise ValueError(f"lineups must have shape ({b}, {rules.num_players}), got {lineups.shape}")
    if lineups.min() < 0 or lineups.max() >= len(agents):
        raise ValueError(f"lineups index agents 0..{len(agents) - 1}, got values {lineups.min()}..{lineups.max()}")
    limit = np.iinfo(np.int32).max if max_hands is None else max_hands
    state = core.reset(rules, seeds)
    writer = None
    if record:
        writer = RecordWriter(rules)
        writer.start(state)
    points = np.zeros((b, rules.num_sides), dtype=np.int32)
    hands = np.zeros(b, dtype=np.int32)
    finished = np.zeros(b, dtype=np.bool_)
    ar = np.arange(b)
    decisions = 0
    while not finished.all():
        live = np.flatnonzero(~finished)
        actor = lineups[ar, np.maximum(state.current, 0)]
        actions = np.zeros(b, dtype=np.int64)
        actions[live] = decide(rules, state, agents, actor[live], live, observe=observe, on_decision=on_decision)
        decisions += live.size
        info = core.step(rules, state, actions, on_illegal=on_illegal)
        if writer is not None:
            writer.observe(state, info)
        points[info.hand_over] += info.hand_points[info.hand_over, :, -1]
        hands += info.hand_over
        newly = (info.hand_over & (mode == "hands")) | info.match_over | (hands >= limit)
        newly &= ~finished
        state.phase[newly] = core.Phase.DONE  # stop after the first hand, or after max_hands
        finished |= newly
        if after_step is not None:
            after_step(state, info, newly)
        if on_step is not None:
            on_step(int(newly.sum()))
    records = None
    if writer is not None:
        records = writer.collect()
    return GameResults(points, hands, state.winner.copy(), state.scores.copy(), decisions, records)
