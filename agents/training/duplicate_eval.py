"""The evaluation of a training run: a policy against one opponent on fixed one-hand deals, each played in every
rotation of the sides (with two sides, the tournament's own rotations: ``agents.evaluation.schedule.seat_lineups``),
in this process (``duplicate_eval``) or in chunks on a Ray cluster with the same result (``duplicate_eval_on_ray``).
The trainer (``agents.training.trainer``) and expert iteration evaluate with it.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import make_agent
from agents.evaluation.schedule import seat_lineups
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules, get_rules

__all__ = [
    "EVAL_CHUNK",
    "EvalResult",
    "StopTraining",
    "duplicate_eval",
    "duplicate_eval_on_ray",
    "eval_chunk_remote",
    "rotation_lineups",
]


class StopTraining(Exception):
    """Raised inside an evaluation when Ctrl-C asked the run to stop."""


# --------------------------------------------------------------------------------------------------- evaluation


@dataclass
class EvalResult:
    """Margin of a policy against one opponent on duplicate deals (points per hand, learner side minus the other)."""

    opponent: str
    """Spec of the opponent."""
    margin: float
    """Mean margin per hand over the deals."""
    low: float
    """Lower end of the 95% interval (normal approximation over deals)."""
    high: float
    """Upper end of the 95% interval."""
    win_rate: float
    """Share of hands the learner's side won outright (ties count half)."""
    deals: int
    """Deals played (each once per seat rotation)."""
    hands: int
    """Hands played."""
    seconds: float
    """Wall-clock time of the evaluation (on Ray: of all the opponents' evaluations, shared equally)."""


def rotation_lineups(rules: Rules) -> npt.NDArray[np.int64]:
    """(S, N) lineups putting agent 0 on every seat of side r (row r) and agent 1 on all the others.

    With two sides these are the tournament's rotations (``agents.evaluation.schedule.seat_lineups``: ``A B`` then ``B
    A``). With more, the agent holds one side against the opponent on all the others, each side in turn, so that its
    margin is against the best other side; the tournament instead alternates the two agents over the sides
    (``agents.evaluation.schedule.side_patterns``), a different design with other numbers, kept apart for that reason.
    """
    if rules.num_sides == 2:
        return seat_lineups(rules)
    side = np.asarray(rules.seat_side)
    return np.array([(side != r).astype(np.int64) for r in range(rules.num_sides)])


EVAL_CHUNK = 100
"""Deals per Ray task of an evaluation with the ``ray`` setting (``duplicate_eval(..., chunk=EVAL_CHUNK)``)."""


def duplicate_eval(
    rules: Rules | str,
    agent: Policy,
    opponent: Policy,
    deals: int,
    seed: int = 0,
    on_step: Any = None,
    chunk: int = 0,
) -> EvalResult:
    """Play ``deals`` one-hand deals (seeds ``seed..seed+deals-1``), each once per side rotation.

    The margin of a game is the points of ``agent``'s side minus the best other side's; a deal's margin is the mean
    over its rotations, and the interval is over deals (the rotations of a deal share its cards).

    ``chunk`` 0 plays all deals in one batch with the agents as seeded by the caller. ``chunk`` > 0 plays them in
    chunks of ``chunk`` deals, both agents seeded again with ``seed + lo`` before the chunk whose first deal is ``lo``,
    so each chunk depends on its own deals only: ``duplicate_eval_on_ray`` plays such chunks on Ray workers and
    returns exactly this result. Deterministic agents (greedy, expert, a network's argmax) play the same moves either
    way; a stochastic one (random) draws differently when the chunks differ.
    """
    rules = get_rules(rules)
    t0 = time.perf_counter()
    if chunk <= 0:
        margins = _eval_margins(rules, agent, opponent, seed, 0, deals, on_step)
    else:
        parts = []
        for lo in range(0, deals, chunk):
            agent.seed(seed + lo)
            opponent.seed(seed + lo)
            parts.append(_eval_margins(rules, agent, opponent, seed, lo, min(deals, lo + chunk), on_step))
        margins = np.concatenate(parts)
    return _eval_result(rules, opponent.name, margins, deals, time.perf_counter() - t0)


def _eval_margins(
    rules: Rules, agent: Policy, opponent: Policy, seed: int, lo: int, hi: int, on_step: Any = None
) -> npt.NDArray[np.float64]:
    """(deals * sides,) margins of ``agent``'s side in deals ``lo..hi-1`` (deal seeds ``seed + lo`` ...), every deal
    once per side rotation, in deal order."""
    from scopa_env.games.driver import play
    from scopa_env.rules.scoring import margin_vs_best_other

    rot = rotation_lineups(rules)
    s = rules.num_sides
    n = hi - lo
    seeds = np.repeat(np.arange(lo, hi, dtype=np.uint64) + np.uint64(seed), s)
    lineups = np.tile(rot, (n, 1))
    res = play(rules, [agent, opponent], lineups, seeds, mode="hands", on_step=on_step)
    learner_side = np.tile(np.arange(s), n)
    return margin_vs_best_other(res.hand_points)[np.arange(seeds.size), learner_side].astype(np.float64)


def _eval_result(
    rules: Rules, opponent: str, margins: npt.NDArray[np.float64], deals: int, seconds: float
) -> EvalResult:
    """The ``EvalResult`` of per-game margins (``_eval_margins``, all deals in order)."""
    per_deal = margins.reshape(deals, rules.num_sides).mean(axis=1)
    mean = float(per_deal.mean())
    half = 1.96 * float(per_deal.std(ddof=1)) / math.sqrt(deals) if deals > 1 else float("nan")
    wins = float(((margins > 0) + 0.5 * (margins == 0)).mean())
    return EvalResult(opponent, mean, mean - half, mean + half, wins, deals, int(margins.size), seconds)


# --------------------------------------------------------------------------------------------------- evaluation on Ray

_RAY_EVAL: dict[str, Any] = {}
"""In a Ray worker process: the learner network of the evaluation being played (rebuilt once per evaluation) and the
opponents built from their specs (reused by that worker's later chunks)."""


def eval_chunk_remote(
    variant: str,
    token: str,
    weights: dict[str, npt.NDArray[Any]],
    activation: str,
    endgame: int,
    opponent: str,
    seed: int,
    lo: int,
    hi: int,
) -> npt.NDArray[np.float64]:
    """Deals ``lo..hi-1`` of an evaluation in a Ray worker: the learner rebuilt from its weights (numpy arrays of the
    SB3 policy's state dict, ``agents.nets.checkpoint.policy_from_weights``: no pickle of ours, no code from a file) and
    its activation, the opponent built from its spec; both seeded with ``seed + lo`` as
    ``duplicate_eval(chunk=...)``."""
    import torch

    from agents.evaluation.schedule import single_thread
    from agents.nets.checkpoint import NeuralPolicy, policy_from_weights

    rules = get_rules(variant)
    if _RAY_EVAL.get("token") != (variant, token):
        single_thread()
        state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
        policy = policy_from_weights(state, activation, rules, "the learner's weights")
        learner = NeuralPolicy.from_sb3_policy(policy, rules, name="learner", endgame=endgame)
        opponents = _RAY_EVAL.get("opponents", {}) if _RAY_EVAL.get("variant") == variant else {}
        _RAY_EVAL.clear()
        _RAY_EVAL.update(token=(variant, token), variant=variant, learner=learner, opponents=opponents)
    learner = _RAY_EVAL["learner"]
    opponents = _RAY_EVAL["opponents"]
    if opponent not in opponents:
        opponents[opponent] = make_agent(opponent, rules, seed + lo)
        single_thread()  # the agent may have imported torch
    opp = opponents[opponent]
    learner.seed(seed + lo)
    opp.seed(seed + lo)
    return _eval_margins(rules, learner, opp, seed, lo, hi)


def duplicate_eval_on_ray(
    address: str,
    rules: Rules | str,
    policy: Any,
    activation: str,
    opponents: Sequence[str],
    deals: int,
    seed: int = 0,
    *,
    chunk: int = EVAL_CHUNK,
    endgame: int = 0,
    names: Sequence[str] | None = None,
    stop: Any = None,
) -> list[EvalResult]:
    """``duplicate_eval(rules, learner, opponent, deals, seed, chunk=chunk)`` against each of ``opponents`` (agent
    specs), its chunks played as Ray tasks on the cluster at ``address`` (``agents.evaluation.cluster.connect``; an open
    Ray session is used as it is): the same ``EvalResult`` margins, interval and win rate as in this process.

    The learner is ``policy``, an SB3 actor-critic policy (``MaskablePPO``'s), sent to the workers as numpy arrays of
    its state dict with ``activation`` (a ``torch.nn`` class name, e.g. ``ReLU``) and ``endgame``; every worker
    rebuilds it and builds the opponents from their specs. ``names`` are the results' opponent names (default: the
    names of the agents the specs make here); ``stop()`` returning true cancels the tasks and raises
    ``StopTraining``. ``seconds`` of each result is the evaluation's wall-clock time shared equally.
    """
    from agents.evaluation.cluster import RAY_MAX_RETRIES, cluster_cpus, connect, ray_error

    rules = get_rules(rules)
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of deals, got {chunk}")
    if names is None:
        names = [make_agent(spec, rules, seed).name for spec in opponents]  # a bad spec fails here
    weights = {k: v.detach().cpu().numpy() for k, v in policy.state_dict().items()}
    token = f"{os.getpid()}-{time.time_ns()}"
    t0 = time.perf_counter()
    starts = list(range(0, deals, chunk))
    results: dict[tuple[int, int], npt.NDArray[np.float64]] = {}
    with connect(address) as ray:
        remote = ray.remote(num_cpus=1, max_retries=RAY_MAX_RETRIES, retry_exceptions=False)(eval_chunk_remote)
        ref = ray.put(weights)
        todo = [(i, lo) for i in range(len(opponents)) for lo in starts][::-1]
        window = 2 * cluster_cpus(ray)
        pending: dict[Any, tuple[int, int]] = {}
        try:
            while todo or pending:
                while todo and len(pending) < window:
                    i, lo = todo.pop()
                    hi = min(deals, lo + chunk)
                    args = (rules.name, token, ref, activation, endgame, opponents[i], seed, lo, hi)
                    pending[remote.remote(*args)] = (i, lo)
                done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                if stop is not None and stop():
                    raise StopTraining
                for r in done:
                    i, lo = pending.pop(r)
                    try:
                        results[i, lo] = ray.get(r)
                    except ray.exceptions.RayError as e:
                        what = f"evaluation against {opponents[i]!r}, deals {lo} to {min(deals, lo + chunk) - 1}"
                        raise ray_error(ray, e, what) from e
        finally:
            for r in pending:
                with contextlib.suppress(Exception):  # already finished or its worker gone: nothing to stop
                    ray.cancel(r, force=True)
    seconds = (time.perf_counter() - t0) / max(1, len(opponents))
    return [
        _eval_result(rules, names[i], np.concatenate([results[i, lo] for lo in starts]), deals, seconds)
        for i in range(len(opponents))
    ]
