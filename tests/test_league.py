"""The league: PFSP weights, sampling priorities, snapshots, windows, and attribution of episodes to members."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from agents.base import make_agent
from agents.training.league import League, pfsp_weights
from scopa_env.games.policy import Policy, RandomAgent


class FakeEnv:
    """Records what the league publishes."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Policy], list[float] | None]] = []

    def set_opponents(self, policies: Sequence[Policy], probs: Sequence[float] | None = None) -> None:
        self.calls.append((list(policies), None if probs is None else list(probs)))


def _agents(*names: str) -> list[Policy]:
    out = []
    for i, name in enumerate(names):
        a = RandomAgent("classic", i)
        a.name = name
        out.append(a)
    return out


def test_pfsp_weights_prefer_unbeaten_opponents_with_a_floor() -> None:
    w = pfsp_weights([0.0, 0.25, 0.5, 0.9, 1.0], power=2.0, floor=0.05)
    assert np.allclose(w[:3], [1.0, 0.5625, 0.25])
    assert np.all(np.diff(w) <= 0)
    assert w[-1] == pytest.approx(0.05) and w[-2] == pytest.approx(0.05)  # (1 - 0.9)^2 = 0.01 < floor


def test_sampling_favours_the_opponent_the_learner_loses_to() -> None:
    league = League(_agents("weak", "strong"), floor=0.02, window=10**9)  # no forgetting
    league.register_initial_pool()
    # generation 0: index 0 = weak (learner wins 95%), index 1 = strong (learner wins 10%)
    results_weak = np.where(np.arange(400) < 380, 1, -1)
    results_strong = np.where(np.arange(400) < 40, 1, -1)
    league.record(np.zeros(800), np.repeat([0, 1], 400), np.concatenate([results_weak, results_strong]))
    rates = league.win_rates()
    assert rates[0] == pytest.approx(380.5 / 401, rel=1e-4) and rates[1] == pytest.approx(40.5 / 401, rel=1e-4)
    p = league.probs()
    assert p.sum() == pytest.approx(1.0)
    assert p[1] > 0.9 > p[0] > 0.0


def test_draws_count_half_and_the_prior_starts_at_one_half() -> None:
    league = League(_agents("a"), window=10**9)
    assert league.win_rates()[0] == 0.5
    league.register_initial_pool()
    league.record([0, 0], [0, 0], [0, 0])
    assert league.win_rates()[0] == pytest.approx(0.5)
    league.record([0], [0], [1])
    assert league.win_rates()[0] == pytest.approx((1 + 1 + 0.5) / 4, rel=1e-4)


def test_window_forgets_old_results() -> None:
    league = League(_agents("a"), window=100)
    league.register_initial_pool()
    league.record(np.zeros(1000), np.zeros(1000), np.ones(1000))
    assert league.members[0].games == pytest.approx(100, rel=1e-3)  # the window is full
    assert league.win_rates()[0] > 0.99
    league.record(np.zeros(300), np.zeros(300), -np.ones(300))
    assert league.win_rates()[0] < 0.1  # the old wins weigh exp(-3) by now
    assert league.members[0].total_games == 1300


def test_snapshots_are_capped_and_baselines_kept() -> None:
    league = League(_agents("base"), max_snapshots=2)
    for step, snap in zip((100, 200, 300), _agents("s1", "s2", "s3"), strict=True):
        league.add_snapshot(snap, step)
    assert [m.name for m in league.members] == ["base", "snapshot@200", "snapshot@300"]
    assert [m.kind for m in league.members] == ["baseline", "snapshot", "snapshot"]
    assert len(league.baselines) == 1 and len(league.snapshots) == 2


def test_self_play_fraction_goes_to_the_newest_snapshot() -> None:
    league = League(_agents("base"), self_play_fraction=0.3)
    assert league.probs().tolist() == [1.0]  # no snapshot yet: everything to PFSP
    league.add_snapshot(_agents("x")[0], 10)
    league.add_snapshot(_agents("y")[0], 20)
    p = league.probs()
    w = pfsp_weights(league.win_rates())
    assert p[-1] == pytest.approx(0.3 + 0.7 * w[-1] / w.sum())
    assert p[:2] == pytest.approx(0.7 * w[:2] / w.sum())


def test_snapshot_share_caps_the_snapshots_and_keeps_the_baselines_ratios() -> None:
    league = League(_agents("random", "expert"), max_snapshots=6, self_play_fraction=0.2, snapshot_share=0.5)
    league.register_initial_pool()
    assert league.record([0] * 200, [0] * 200, [1] * 200) == 200  # random is beaten, expert is not met yet
    for step, snap in enumerate(_agents(*"abcdef")):
        league.add_snapshot(snap, step)
    uncapped = League(_agents("random", "expert"), max_snapshots=6, self_play_fraction=0.2)
    uncapped.members = league.members
    p, q = league.probs(), uncapped.probs()
    assert q[2:].sum() > 0.5  # six even snapshots would take most of the games
    assert p[2:].sum() == pytest.approx(0.5) and p.sum() == pytest.approx(1.0)
    assert p[2:] / p[2:].sum() == pytest.approx(q[2:] / q[2:].sum())  # same order among snapshots
    assert p[1] / p[0] == pytest.approx(q[1] / q[0])  # and among baselines
    assert p[1] > 0.4  # expert, which the learner does not beat, gets most of the baselines' half
    only = League([], max_snapshots=2, snapshot_share=0.5)
    only.add_snapshot(_agents("s")[0], 1)
    assert only.probs().tolist() == [1.0]  # no baseline to give the rest to


def test_results_are_attributed_through_pool_generations() -> None:
    env = FakeEnv()
    base, s1, s2 = _agents("base", "s1", "s2")
    league = League([base], max_snapshots=1)
    assert league.register_initial_pool() == 0  # the env was built with [base]
    league.add_snapshot(s1, 10)
    assert league.publish(env) == 1  # pool [base, s1]
    assert env.calls[-1][0] == [base, s1]
    league.add_snapshot(s2, 20)  # s1 dropped
    assert league.publish(env) == 2  # pool [base, s2]
    # An episode started in generation 1 against index 1 was against s1 (gone now: ignored); generation 2
    # index 1 is s2; generation 0 index 0 is base.
    counted = league.record([1, 2, 0, 2], [1, 1, 0, 0], [1, -1, 1, 1])
    assert counted == 3
    by_name = {m.name: m for m in league.members}
    assert by_name["snapshot@20"].total_games == 1 and by_name["snapshot@20"].score == 0.0
    assert by_name["base"].total_games == 2 and by_name["base"].score == pytest.approx(2.0, rel=1e-3)
    assert league.record([7], [0], [1]) == 0  # unknown generation


def test_bad_league_settings_fail_clearly() -> None:
    with pytest.raises(ValueError, match="floor"):
        League(_agents("a"), floor=0.0)
    with pytest.raises(ValueError, match="self_play_fraction"):
        League(_agents("a"), self_play_fraction=1.5)
    with pytest.raises(ValueError, match="snapshot_share"):
        League(_agents("a"), snapshot_share=-0.1)
    with pytest.raises(ValueError, match="no opponent"):
        League([], max_snapshots=0)
    league = League(_agents("a"))
    league.publish(FakeEnv())
    with pytest.raises(ValueError, match="before the first publish"):
        league.register_initial_pool()
    with pytest.raises(ValueError, match="differ in length"):
        league.record([0, 0], [0], [1])


def test_league_drives_the_vector_env() -> None:
    from scopa_env.envs.gym import ScopaVecEnv

    rules = "classic"
    league = League([make_agent("random", rules, 0), make_agent("greedy", rules, 1)], window=10_000)
    venv = ScopaVecEnv(
        rules,
        32,
        opponents=[m.policy for m in league.members],
        probs=league.probs(),
        seed=3,
        reward="points",
        episode="hand",
    )
    league.register_initial_pool()
    league.members[1].score, league.members[1].games = 0.0, 50.0  # pretend the learner always loses to greedy
    league.publish(venv)
    rng = np.random.default_rng(0)
    venv.reset()
    for _ in range(200):
        mask = venv.action_masks()
        keys = np.where(mask, rng.random(mask.shape), -1.0)
        _, _, dones, infos = venv.step(keys.argmax(axis=1))
        rows = [infos[i] for i in np.flatnonzero(dones)]
        league.record(
            [r["episode_pool"] for r in rows],
            [r["episode_opponent"] for r in rows],
            [r["episode_result"] for r in rows],
        )
    games = [m.total_games for m in league.members]
    assert sum(games) > 100
    assert games[1] > 2 * games[0]  # greedy (unbeaten) is drawn far more often
    assert league.win_rates()[1] < league.win_rates()[0]  # a random learner beats random more than greedy
