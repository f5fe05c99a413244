"""Search labels: every decision's move values from a search teacher, as targets for a network.

Expert iteration with argmax targets keeps only the search's choice; with ``soft_temperature`` it keeps the search's
calculation: the mean margin of each legal action over the sampled worlds (plus the teacher's prior), which
``soft_targets`` turns into a distribution over actions (a softmax at temperature T).

``SearchLabeller`` wraps a search agent with a ``search(state, games)`` method (``pimc``, ``az``): at every decision it
records the value of each legal action (``action_values``: the best candidate move starting with that action, in the
PLAY and the CHOOSE phase alike) and plays the teacher's move, or with probability ``explore`` the student network's
(the states then come from the student's own play, DAgger-style). ``labelled_hands`` plays hands with it in every
seat and returns one row per decision.

    obs, mask, action, ret, values = labelled_hands("scopone-scientifico", "pimc:worlds=256", None, 0.0, seed, 0, 50)
    target = soft_targets(values, mask, action, temperature=0.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import make_agent
from agents.baselines.features import act_with_knocks, require_state
from agents.search.endgame import best_actions
from scopa_env.engine import core, state_moves
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import Rules, get_rules

__all__ = ["SearchLabeller", "action_values", "labelled_hands", "soft_targets"]


def action_values(
    rules: Rules,
    state: core.State,
    games: npt.NDArray[np.intp],
    searched: tuple[Any, npt.NDArray[np.float64], npt.NDArray[np.intp]],
) -> npt.NDArray[np.float32]:
    """(n, num_actions) the value of each action: the best margin among the candidate moves it starts
    (``state_moves.move_actions`` of each candidate); ``-inf`` for actions that start none. ``searched``: a search's
    ``(candidates, mean margins (n, width), first candidate index)``, as ``PIMCAgent.search`` returns it."""
    moves, total, first = searched
    out = np.full((games.size, rules.num_actions), -np.inf, dtype=np.float64)
    rows, js = np.nonzero(np.isfinite(total))
    if rows.size:
        idx = first[rows] + js
        acts = state_moves.move_actions(state.take(games[rows]), moves.card[idx], moves.captures(idx))
        np.maximum.at(out, (rows, np.asarray(acts, dtype=np.intp)), total[rows, js])
    return out.astype(np.float32)


def soft_targets(
    values: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_],
    action: npt.NDArray[np.int64],
    temperature: float,
) -> npt.NDArray[np.float32]:
    """(n, A) target distributions: ``softmax(values / temperature)`` over each row's valued legal actions; a row
    without values (a forced or rule-played decision, such as cirulla's knocks) puts all its weight on ``action``."""
    if temperature <= 0:
        raise ValueError(f"soft_targets: temperature must be > 0, got {temperature}")
    v = np.where(mask & np.isfinite(values), values.astype(np.float64), -np.inf)
    valued = np.isfinite(v).any(axis=1)
    top = np.where(valued, v.max(axis=1, initial=-np.inf), 0.0)
    e = np.where(np.isfinite(v), np.exp((v - top[:, None]) / temperature), 0.0)
    e[~valued] = 0.0
    e[np.flatnonzero(~valued), action[~valued]] = 1.0
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


class SearchLabeller(Policy):
    """Plays a search teacher's moves (or, with probability ``explore``, a student's) and keeps the teacher's action
    values of the last batch in ``last_values`` (rows in the batch's order)."""

    name = "search-labeller"
    needs_state = True

    def __init__(
        self,
        rules: Rules,
        teacher: Policy,
        student: Policy | None = None,
        explore: float = 0.0,
        seed: int | None = None,
    ) -> None:
        self.teacher, self.student, self.explore = teacher, student, float(explore)
        super().__init__(rules, seed)
        if not callable(getattr(teacher, "search", None)):
            raise ValueError(f"SearchLabeller: the teacher {teacher.name!r} has no search(); use pimc or az")
        if not 0.0 <= explore <= 1.0 or (explore > 0 and student is None):
            raise ValueError(f"SearchLabeller: explore must be in [0, 1] and needs a student, got {explore}")
        self.needs_obs = student is not None and student.needs_obs
        self.last_values = np.zeros((0, self.rules.num_actions), dtype=np.float32)

    def seed(self, seed: int | None = None) -> None:
        super().seed(seed)
        self.teacher.seed(seed)
        if self.student is not None:
            self.student.seed(seed)

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        state, games = require_state(batch, self.name)
        rules = self.rules
        values = np.full((games.size, rules.num_actions), -np.inf, dtype=np.float32)
        position = {int(g): i for i, g in enumerate(games)}

        search = self.teacher.search  # type: ignore[attr-defined]  # pimc or az (checked when built)

        def play(g: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
            searched = search(state, g)
            values[[position[int(x)] for x in g]] = action_values(rules, state, g, searched)
            return best_actions(state, g, searched)

        actions = act_with_knocks(rules, state, games, play)
        if self.explore > 0 and self.student is not None:
            theirs = np.asarray(self.student.act(batch), dtype=np.int64)
            swap = self.rng.random(games.size) < self.explore
            actions = np.where(swap, theirs, actions)
        self.last_values = values
        return actions


_LABELLERS: dict[tuple[str, str, str | None, float, int], SearchLabeller] = {}
"""In a worker process: the labeller built for (variant, teacher, student, explore, seed), reused by later tasks."""


def labelled_hands(
    variant: str, teacher: str, student: str | None, explore: float, seed: int, lo: int, hi: int
) -> tuple[npt.NDArray[Any], ...]:
    """Hands ``lo`` to ``hi - 1`` (deal seeds ``seed + lo`` ...) with the labeller in every seat, seeded with
    ``seed + lo``: ``(obs, mask, action, ret, values)``, one row per decision (``ret``: the hand's margin of the acting
    side; ``values``: the teacher's action values, ``action_values``). ``student``: an agent spec (``bot:path=...``)."""
    from agents.training.imitation import teacher_games

    key = (variant, teacher, student, explore, seed)
    if key not in _LABELLERS:
        _LABELLERS.clear()
        rules = get_rules(variant)
        pupil = make_agent(student, rules, seed=seed) if student else None
        _LABELLERS[key] = SearchLabeller(rules, make_agent(teacher, rules, seed=seed), pupil, explore, seed=seed)
    labeller = _LABELLERS[key]
    labeller.seed(seed + lo)
    rows: list[npt.NDArray[np.float32]] = []
    obs, mask, action, ret = teacher_games(
        labeller.rules,
        labeller,
        np.arange(seed + lo, seed + hi, dtype=np.uint64),
        None,
        on_act=lambda: rows.append(labeller.last_values),
    )
    return obs, mask, action, ret, np.concatenate(rows)
