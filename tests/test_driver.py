"""The one game driver (scopa_env/games/driver.py): ``decide`` and ``play`` with their hooks.

The driver's games equal a plain hand-written loop (the loop that the tournaments, imitation, the random records,
the vector env's opponents and the terminal game each used to write out); the hooks see the right rows and actions;
imitation's teacher data equals the data of the code before the driver (a hash computed from that code).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from agents.base import make_agent
from agents.training.imitation import collect_teacher_data
from scopa_env.engine import core, observation
from scopa_env.games.driver import Decision, decide, play
from scopa_env.games.policy import ActBatch, Policy, RandomAgent
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.scoring import margin_vs_best_other

TEACHER_HASH = "99054d99a7fc8d433ec802f2bf21abdfc37366a18f1842a4d282e2a8b5e30fb2"
"""sha256 of (obs, mask, action, ret) of ``collect_teacher_data("scopa-a-quattro", "greedy", 10, seed=3, batch=4)``
as computed by the code before the driver (commit a8db9b7, agents/training/imitation.py's own loop); 366 decisions."""


def _plain_loop(
    rules: Rules, agents: list[Policy], lineups: npt.NDArray[np.int64], seeds: npt.NDArray[np.uint64], mode: str
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int8], list[npt.NDArray[np.int64]]]:
    """The game loop written out: mask -> observe -> group by acting agent -> act -> step (``arena.play`` of old)."""
    state = core.reset(rules, seeds)
    b = seeds.size
    points = np.zeros((b, rules.num_sides), dtype=np.int32)
    hands = np.zeros(b, dtype=np.int32)
    finished = np.zeros(b, dtype=np.bool_)
    history = []
    while not finished.all():
        live = np.flatnonzero(~finished)
        mask = core.legal_action_mask(rules, state)
        obs = observation.observe(rules, state)
        actor = lineups[np.arange(b), np.maximum(state.current, 0)]
        actions = np.zeros(b, dtype=np.int64)
        for k in np.unique(actor[live]):
            rows = live[actor[live] == k]
            actions[rows] = agents[int(k)].act(ActBatch(rules, obs[rows], mask[rows], state, rows))
        history.append(actions.copy())
        info = core.step(rules, state, actions)
        points[info.hand_over] += info.hand_points[info.hand_over, :, -1]
        hands += info.hand_over
        newly = ((info.hand_over & (mode == "hands")) | info.match_over) & ~finished
        state.phase[newly] = core.Phase.DONE
        finished |= newly
    return points, hands, state.winner.copy(), history


def _agents(rules: Rules, specs: tuple[str, ...] = ("greedy", "random", "expert")) -> list[Policy]:
    return [make_agent(s, rules, seed=i) for i, s in enumerate(specs)]


@pytest.mark.parametrize(
    ("variant", "mode"), [("classic", "hands"), ("scopa-a-quattro", "hands"), ("simple-3", "matches")]
)
def test_the_driver_plays_the_games_of_a_plain_loop(variant: str, mode: str) -> None:
    rules = get_rules(variant)
    n = 12 if mode == "hands" else 4
    lineups = np.random.default_rng(0).integers(0, 3, size=(n, rules.num_players))
    seeds = np.arange(40, 40 + n, dtype=np.uint64)
    points, hands, winner, history = _plain_loop(rules, _agents(rules), lineups, seeds, mode)
    steps: list[npt.NDArray[np.int64]] = [np.zeros(n, dtype=np.int64)]

    def watch(d: Decision) -> None:
        steps[-1][d.games] = d.actions

    def next_step(state: core.State, info: core.StepInfo, finished: npt.NDArray[np.bool_]) -> None:
        steps.append(np.zeros(n, dtype=np.int64))

    res = play(rules, _agents(rules), lineups, seeds, mode=mode, on_decision=watch, after_step=next_step)  # type: ignore[arg-type]
    steps.pop()  # opened after the last step
    assert np.array_equal(res.hand_points, points) and np.array_equal(res.hands, hands)
    assert np.array_equal(res.winner, winner)
    assert len(steps) == len(history) and all(np.array_equal(a, b) for a, b in zip(steps, history, strict=True))


def test_hooks_see_the_acting_rows_their_masks_and_the_finished_games() -> None:
    rules = get_rules("classic")
    n = 10
    lineups = np.random.default_rng(1).integers(0, 3, size=(n, rules.num_players))
    decisions: list[Decision] = []
    finished_at: dict[int, int] = {}
    counts: list[int] = []
    step_no = [0]

    def on_decision(d: Decision) -> None:
        legal = core.legal_action_mask(rules, d.state)[d.games]
        assert np.array_equal(d.mask, legal)
        assert d.mask[np.arange(d.games.size), d.actions].all()  # the actions chosen are legal
        assert (lineups[d.games, d.state.current[d.games]] == d.agent).all()  # the rows are the agent's
        assert not d.state.done[d.games].any()
        decisions.append(d)

    def after_step(state: core.State, info: core.StepInfo, finished: npt.NDArray[np.bool_]) -> None:
        step_no[0] += 1
        assert (info.hand_over[finished]).all()  # mode "hands": a game finishes when its first hand ends
        assert state.done[finished].all()
        for g in np.flatnonzero(finished).tolist():
            assert g not in finished_at
            finished_at[g] = step_no[0]

    res = play(
        rules,
        _agents(rules),
        lineups,
        np.arange(n),
        on_decision=on_decision,
        after_step=after_step,
        on_step=counts.append,
    )
    assert sorted(finished_at) == list(range(n)) and sum(counts) == n and len(counts) == step_no[0]
    assert sum(len(d.games) for d in decisions) == res.decisions
    # the greedy and expert agents read no observations: nobody computed them
    assert all(d.obs.shape == (len(d.games), 0) for d in decisions)

    # with observe=True every decision carries the acting seat's observation
    def check_obs(d: Decision) -> None:  # the state is stepped afterwards: look now
        assert np.array_equal(d.obs, observation.observe(rules, d.state)[d.games])
        check_obs.calls += 1  # type: ignore[attr-defined]

    check_obs.calls = 0  # type: ignore[attr-defined]
    play(rules, _agents(rules), lineups, np.arange(n), on_decision=check_obs, observe=True)
    assert check_obs.calls == len(decisions)  # type: ignore[attr-defined]


class _Recorder(Policy):
    """Answers with the first legal action and remembers the batches it was asked."""

    needs_obs = False

    def __init__(self, rules: Rules, log: list[tuple[str, Any]], name: str) -> None:
        super().__init__(rules)
        self.log, self.name = log, name

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        self.log.append((self.name, batch.games))
        return batch.mask.argmax(axis=1)


def test_decide_groups_rows_by_policy_in_index_order_and_checks_answers() -> None:
    rules = get_rules("classic")
    state = core.reset(rules, np.arange(6))
    log: list[tuple[str, Any]] = []
    agents = [_Recorder(rules, log, "a"), None, _Recorder(rules, log, "b")]
    actor = np.array([2, 0, 2, 0])
    games = np.array([0, 2, 3, 5])
    acts = decide(rules, state, agents, actor, games)  # type: ignore[arg-type]
    assert [name for name, _ in log] == ["a", "b"]
    assert log[0][1].tolist() == [2, 5] and log[1][1].tolist() == [0, 3]
    assert np.array_equal(acts, core.legal_action_mask(rules, state)[games].argmax(axis=1))

    class Bad(_Recorder):
        def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
            return np.full(len(batch), -1, dtype=np.int64)

    bad = [Bad(rules, log, "bad")]
    assert decide(rules, state, bad, np.zeros(6, np.int64)).tolist() == [-1] * 6  # unchecked: core.step refuses it
    with pytest.raises(core.IllegalActionError, match="chose the illegal action -1; legal actions were"):
        decide(rules, state, bad, np.zeros(6, np.int64), check=True)

    class Short(_Recorder):
        def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
            return np.zeros(1, dtype=np.int64)

    with pytest.raises(ValueError, match="returned actions of shape"):
        decide(rules, state, [Short(rules, log, "short")], np.zeros(6, np.int64), check=True)


def test_matches_stop_after_max_hands_and_records_are_kept() -> None:
    rules = get_rules("classic")
    agents: list[Policy] = [RandomAgent(rules, 0)]
    res = play(rules, agents, np.zeros((4, 2), np.int64), np.arange(4), mode="matches", max_hands=2, record=True)
    assert (res.hands <= 2).all() and res.records is not None and len(res.records) == 4
    for rec, hands, winner in zip(res.records, res.hands, res.winner, strict=True):
        assert len(rec["hands"]) == hands and (rec["winner"] is None) == (winner < 0)
    with pytest.raises(ValueError, match="mode must be 'hands' or 'matches'"):
        play(rules, agents, np.zeros((1, 2), np.int64), [0], mode="hand")  # type: ignore[arg-type]


def _teacher_loop(rules: Rules, teacher: str, num_hands: int, seed: int, batch: int) -> list[npt.NDArray[Any]]:
    """Imitation's data collection written out (its loop before the driver)."""
    agent = make_agent(teacher, rules, seed=seed)
    side_of = np.array(rules.seat_side)
    out: list[list[npt.NDArray[Any]]] = [[], [], [], []]
    for lo in range(0, num_hands, batch):
        seeds = np.arange(seed + lo, seed + min(num_hands, lo + batch), dtype=np.uint64)
        state = core.reset(rules, seeds)
        b = seeds.size
        rows: list[list[npt.NDArray[Any]]] = [[], [], [], [], []]
        margin = np.zeros((b, rules.num_sides), dtype=np.float32)
        live = np.ones(b, dtype=np.bool_)
        while live.any():
            g = np.flatnonzero(live)
            mask = core.legal_action_mask(rules, state)[g]
            obs = observation.observe(rules, state)[g]
            acts = np.zeros(b, dtype=np.int64)
            acts[g] = agent.act(ActBatch(rules, obs, mask, state, g))
            for lst, x in zip(rows, (obs, mask, acts[g], g, side_of[state.current[g]]), strict=True):
                lst.append(x)
            info = core.step(rules, state, acts)
            ended = np.flatnonzero(info.hand_over & live)
            margin[ended] = margin_vs_best_other(info.hand_points[ended, :, -1])
            live[ended] = False
            state.phase[ended] = core.Phase.DONE
        games, sides = np.concatenate(rows[3]), np.concatenate(rows[4])
        for i in range(3):
            out[i].append(np.concatenate(rows[i]))
        out[3].append(margin[games, sides])
    return [np.concatenate(x) for x in out]


def test_imitation_data_is_the_data_of_the_code_before_the_driver() -> None:
    data = collect_teacher_data("scopa-a-quattro", "greedy", num_hands=10, seed=3, batch=4)
    digest = hashlib.sha256()
    for a in (data.obs, data.mask, data.action, data.ret):
        digest.update(np.ascontiguousarray(a).tobytes())
    assert len(data) == 366 and digest.hexdigest() == TEACHER_HASH
    rules = get_rules("classic")
    data = collect_teacher_data(rules, "expert", num_hands=7, seed=1, batch=3)
    want = _teacher_loop(rules, "expert", 7, 1, 3)
    for got, exp in zip((data.obs, data.mask, data.action, data.ret), want, strict=True):
        assert got.dtype == exp.dtype and np.array_equal(got, exp)
