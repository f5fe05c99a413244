"""Differential tests of the single-game engine (``scopa_env.engine.single.SingleGame``) against the batched core.

Both engines play the same seeded matches; at every decision a random legal action (sometimes an illegal one) is
applied to both. After every step they must agree on the whole state (``SingleGame.to_state`` against the core's
``State``, field by field: deals, hands, table, piles, scores, dealer, phase...), the legal mask, the observation
(every seat, bit for bit), and what the step did (move, capture, scopa, hand points, leftovers, winner). The
default suite plays a few matches of every variant; ``-m slow`` plays 100 per variant (30 of ``simple-8``).

The fused wrapper of ``scopa_v0.env`` (``ClassicWrapper``) is checked against PettingZoo's own wrapper stack
(``scopa_env.envs.aec.pettingzoo_wrapped``): the same games, illegal and ill-typed actions and out-of-order calls give
the same results, rewards, warnings and errors.
"""

from __future__ import annotations

import warnings
from dataclasses import fields
from typing import Any

import numpy as np
import pytest

from scopa_env import scopa_v0
from scopa_env.engine import core, observation
from scopa_env.engine.single import SingleGame, bits_of, cards_of, game_from_state, new_game
from scopa_env.envs import aec
from scopa_env.envs.gym import ScopaEnv
from scopa_env.games.learner import LearnerGames
from scopa_env.games.learner_single import SingleLearnerGame
from scopa_env.rules import VARIANTS, get_rules


def _same_state(variant: str, st: core.State, game: SingleGame, where: str) -> None:
    mine = game.to_state()
    for f in fields(core.State):
        a, b = getattr(st, f.name), getattr(mine, f.name)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {f.name} dtype/shape"
        assert np.array_equal(a, b), f"{variant} {where}: {f.name} differs: core {a} single {b}"


def run_single_differential(variant: str, seeds: range, observe_every: int = 1, illegal_rate: float = 0.05) -> int:
    """Play the matches of ``seeds`` on the core and on ``SingleGame``; returns the number of steps compared.

    Every variant, cirulla's included, runs on ``SingleGame`` (the compiled kernel; ``new_game``).
    """
    rules = get_rules(variant)
    rng = np.random.default_rng(seeds.start)
    steps = 0
    for seed in seeds:
        st = core.reset(rules, [seed])
        game = new_game(rules, seed)
        assert isinstance(game, SingleGame)
        while True:
            where = f"seed {seed} step {steps}"
            _same_state(variant, st, game, where)
            if st.done[0]:
                assert game.done
                break
            mask = core.legal_action_mask(rules, st)[0]
            assert np.array_equal(mask, game.mask()), where
            assert np.array_equal(mask.astype(np.int8), game.mask_int8()), where
            if steps % observe_every == 0:
                for seat in range(rules.num_players):
                    want = observation.observe(rules, st, seats=np.array([seat]))[0]
                    got = game.observe(seat)
                    assert got.dtype == np.float32 and got.shape == want.shape
                    bad = np.flatnonzero(want != got)
                    assert bad.size == 0, f"{variant} {where} seat {seat}: obs entries {bad} {want[bad]} {got[bad]}"
            if rng.random() < illegal_rate:  # an illegal action: both refuse it, and nothing changes
                bad_action = int(rng.choice(np.flatnonzero(~mask))) if (~mask).any() else rules.num_cards
                with pytest.raises(core.IllegalActionError):
                    core.step(rules, st, np.array([bad_action]))
                with pytest.raises(core.IllegalActionError, match="is illegal for seat"):
                    game.step(bad_action)
                continue
            action = int(rng.choice(np.flatnonzero(mask)))
            info = core.step(rules, st, np.array([action]))
            got = game.step(action)
            steps += 1
            assert got.seat == int(info.seat[0]) and got.move_done == bool(info.move_done[0]), where
            assert got.card == int(info.card[0]) and got.capture == bits_of(info.capture[0]), where
            assert got.scopa == bool(info.scopa[0]) and got.hand_over == bool(info.hand_over[0]), where
            assert got.match_over == bool(info.match_over[0]) and got.new_hand == bool(info.new_hand[0]), where
            if got.hand_over:
                assert got.hand_points is not None and np.array_equal(got.hand_points, info.hand_points[0]), where
                assert got.leftover == bits_of(info.leftover[0]), where
                assert got.leftover_side == int(info.leftover_side[0]), where
                assert got.winner == int(info.winner[0]), where
    return steps


@pytest.mark.parametrize("variant", VARIANTS)
def test_single_game_equals_the_core_move_for_move(variant: str) -> None:
    games = 1 if get_rules(variant).num_cards > 40 else 2  # simple-8's matches are long
    assert run_single_differential(variant, range(games), observe_every=3) > 100


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_single_game_equals_the_core_on_many_games(variant: str) -> None:
    games = 30 if get_rules(variant).num_cards > 40 else 100  # simple-8's matches are long
    run_single_differential(variant, range(1000, 1000 + games), observe_every=2)


def test_state_round_trip_mid_game_and_in_the_choose_phase() -> None:
    rules = get_rules("classic")
    rng = np.random.default_rng(0)
    st = core.reset(rules, np.arange(40))
    seen_choose = False
    for _ in range(60):
        mask = core.legal_action_mask(rules, st)
        keys = np.where(mask, rng.random(mask.shape), -1.0)
        core.step(rules, st, np.where(st.done, 0, keys.argmax(axis=1)))
        for g in range(0, 40, 7):
            game = SingleGame.from_state(rules, st, g)
            seen_choose |= game.phase == core.Phase.CHOOSE
            back = game.to_state()
            one = st.take([g])
            for f in fields(core.State):
                assert np.array_equal(getattr(back, f.name), getattr(one, f.name)), f.name
            assert np.array_equal(game.observe(), observation.observe(rules, one)[0])
    assert seen_choose


def test_from_state_refuses_other_rules_and_bits_round_trip() -> None:
    st = core.reset("classic", [1])
    with pytest.raises(ValueError, match="classic"):
        SingleGame.from_state("scopa-a-quattro", st)
    with pytest.raises(TypeError, match=r"core\.State"):
        SingleGame.from_state("classic", "not a state")  # type: ignore[arg-type]
    cards = np.zeros(52, dtype=np.bool_)
    cards[[0, 7, 8, 51]] = True
    assert bits_of(cards) == 1 | 1 << 7 | 1 << 8 | 1 << 51
    assert np.array_equal(cards_of(bits_of(cards), 52), cards)
    with pytest.raises(ValueError, match=r"seat must be in 0\.\.1"):
        SingleGame("classic", 3).observe(2)


def test_aec_env_state_is_a_snapshot_and_can_be_assigned() -> None:
    env = scopa_v0.raw_env()
    env.reset(seed=9)
    snap = env._state
    assert snap is not None and int(snap.seed[0]) == 9
    snap.hands[:] = False  # a copy: the game is unchanged
    assert env._state is not None and env._state.hands.any()
    other = core.reset("classic", [11])
    env._state = other
    assert int(env._state.seed[0]) == 11
    obs = env.observe(env.agent_selection)["observation"]
    seat = np.array([env.agents.index(env.agent_selection)])
    assert np.array_equal(obs, observation.observe("classic", other, seats=seat)[0])
    with pytest.raises(ValueError, match="one game"):
        env._state = core.reset("classic", [1, 2])


# --------------------------------------------------------------------------------------------------- the wrapper


def _call(env: Any, what: str, *args: Any) -> tuple[str, Any, list[str]]:
    """(outcome, value, warnings) of ``env.<what>(*args)``; exceptions are an outcome too."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if what == "attr":
                value: Any = getattr(env, args[0])
            else:
                value = getattr(env, what)(*args)
            out = ("ok", value)
        except Exception as e:  # every error must be the same on both
            out = (type(e).__name__, str(e))
    return out[0], out[1], [str(w.message) for w in caught]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return bool(a == b) and type(a) is type(b)


@pytest.mark.parametrize("variant", ["classic", "scopa-a-quattro", "simple-3"])
def test_fused_wrapper_behaves_like_pettingzoos_wrappers(variant: str) -> None:
    fast, ref = scopa_v0.env(variant=variant), aec.pettingzoo_wrapped(variant=variant)
    assert isinstance(fast, aec.ClassicWrapper) and fast.unwrapped is not ref.unwrapped
    rng = np.random.default_rng(5)
    d = get_rules(variant).num_cards
    calls: list[tuple[str, tuple[Any, ...]]] = [
        ("attr", ("agents",)),
        ("attr", ("agent_selection",)),
        ("step", (0,)),
        ("observe", ("player_0",)),
        ("last", ()),
    ]
    for seed in range(6):
        calls.append(("reset", (seed,)))
        for _ in range(300):
            r = rng.random()
            if r < 0.03:
                calls.append(("step", (int(rng.integers(d)),)))  # often illegal: ends the game
            elif r < 0.05:
                calls.append(("step", (rng.choice([None, 2.5, "3", True, -1, d, np.int64(1)]),)))
            elif r < 0.08:
                calls.append(("observe", (f"player_{int(rng.integers(2))}",)))
            elif r < 0.1:
                calls.append(("attr", (str(rng.choice(["terminations", "rewards", "_cumulative_rewards", "_x"])),)))
            else:
                calls.append(("play", ()))
    for what, args in calls:
        if what == "play":  # last(), then a legal action (None for a done agent)
            outs = [_call(e, "last") for e in (fast, ref)]
            assert _same(outs[0], outs[1]), outs
            kind, value, _ = outs[0]
            if kind != "ok":
                continue
            obs, _, term, trunc, _ = value
            action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
            what, args = "step", (action,)
        a, b = _call(fast, what, *args), _call(ref, what, *args)
        assert _same(a, b), (what, args, a, b)
        if fast._has_reset:
            assert fast.agents == ref.agents and fast.rewards == ref.rewards
            assert fast.terminations == ref.terminations and fast.truncations == ref.truncations
            assert fast._cumulative_rewards == ref._cumulative_rewards


def _iterate(env: Any, max_iter: int, steps: bool, seed: int) -> list[Any]:
    """What a loop over ``env.agent_iter(max_iter)`` sees (agents, ``last()``, then its error if any), stepping a
    legal action (the first) after each agent unless not ``steps``."""
    seen: list[Any] = []
    env.reset(seed=seed)
    try:
        for agent in env.agent_iter(max_iter):
            obs, reward, term, trunc, _ = env.last()
            seen.append((agent, reward, term, trunc))
            if steps:
                env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    except AssertionError as e:
        seen.append(("AssertionError", str(e)))
    return seen


def test_fused_wrapper_iterates_agents_like_pettingzoos() -> None:
    """``ClassicWrapper.agent_iter`` (a generator over the raw env) against ``OrderEnforcingWrapper``'s iterator:
    the same agents to the end of the game and past it, the same ``max_iter`` cut, the same refusal of a loop that
    does not step, of a call before ``reset``, and a fresh count each time the iterable is iterated."""
    fast, ref = scopa_v0.env(variant="scopa-a-quattro"), aec.pettingzoo_wrapped(variant="scopa-a-quattro")
    for env in (fast, ref):
        with pytest.raises(AssertionError, match="before agent_iter"):
            env.agent_iter()
    for max_iter, steps in ((10_000, True), (7, True), (3, False), (0, True)):
        assert _iterate(fast, max_iter, steps, 3) == _iterate(ref, max_iter, steps, 3), (max_iter, steps)
    whole = _iterate(fast, 10_000, True, 3)
    assert whole[-1][2] and len(whole) > 40  # played to the end: every agent's final pass
    for env in (fast, ref):
        env.reset(seed=4)
        loop = env.agent_iter(2)
        counts = []
        for _ in range(2):  # each iter() starts a new count of 2
            n = 0
            for _agent in loop:
                env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))
                n += 1
            counts.append(n)
        assert counts == [2, 2]


# --------------------------------------------------------------------------------------------------- the Gymnasium env


class _BatchedScopaEnv(ScopaEnv):
    _games_class = LearnerGames  # the batched core with B = 1: the reference


@pytest.mark.parametrize(
    ("variant", "kwargs"),
    [
        ("classic", {}),
        ("classic", {"reward": "points", "episode": "hand", "learner_seat": "rotate"}),
        ("scopa-a-quattro", {"partner": "random", "learner_seat": 1}),
        ("simple-3", {"reward": "points", "max_hands": 2}),
        ("classic", {"reward": "points", "max_hands": 3, "learner_seat": 0}),
        ("scopone-scientifico", {"opponents": ["random", "random"], "probs": [0.3, 0.7]}),
        ("cirulla", {"reward": "points", "learner_seat": "rotate"}),  # its RandomAgent through driver.decide
        ("cirulla-4", {"partner": "random", "episode": "hand"}),
    ],
)
def test_gymnasium_env_plays_the_same_episodes_as_on_the_batched_core(variant: str, kwargs: dict[str, Any]) -> None:
    fast, ref = ScopaEnv(variant, **kwargs), _BatchedScopaEnv(variant, **kwargs)
    assert isinstance(fast.games, SingleLearnerGame) and not isinstance(ref.games, SingleLearnerGame)
    rng = np.random.default_rng(3)
    d = get_rules(variant).num_actions  # cirulla's stop and knocks too
    for episode in range(4):
        seed = 40 + episode if episode % 2 == 0 else None  # seeded, then the next game of the chain
        (obs_a, info_a), (obs_b, info_b) = fast.reset(seed=seed), ref.reset(seed=seed)
        assert np.array_equal(obs_a, obs_b) and info_a == info_b
        done = False
        while not done:
            mask = fast.action_masks()
            assert np.array_equal(mask, ref.action_masks())
            legal = np.flatnonzero(mask)
            action = int(rng.integers(d)) if rng.random() < 0.05 else int(rng.choice(legal))  # some illegal
            out_a, out_b = fast.step(action), ref.step(action)
            assert np.array_equal(out_a[0], out_b[0]) and out_a[0].dtype == out_b[0].dtype
            assert out_a[1:] == out_b[1:], (out_a[1:], out_b[1:])
            done = out_a[2] or out_a[3]
            for f in fields(core.State):
                assert np.array_equal(getattr(fast.games.state, f.name), getattr(ref.games.state, f.name)), f.name


def test_gymnasium_env_scalar_path_equals_its_array_path() -> None:
    """``ScopaEnv.step`` of an int / numpy integer (``SingleLearnerGame.step_legal``) against the same env fed
    (1,) arrays (the generic path), with a points reward and hand episodes, and through ``gymnasium.make``."""
    import gymnasium

    from scopa_env.envs.registration import env_id
    from scopa_env.games.policy import RandomAgent

    class Other(RandomAgent):  # a subclass: played through driver.decide, not the Python draws
        pass

    def settings(variant: str) -> dict[str, Any]:  # new policies for each env: no generator shared
        if variant == "classic":
            return {"reward": "points", "episode": "hand", "learner_seat": "rotate"}
        return {"opponents": ["random", Other(variant)], "partner": "random"}

    for variant in ["classic", "scopa-a-quattro"]:
        fast = gymnasium.make(env_id(variant), **settings(variant))
        ref = ScopaEnv(variant, **settings(variant))
        assert isinstance(fast.unwrapped, ScopaEnv) and fast.unwrapped._single is not None
        rng = np.random.default_rng(5)
        for episode in range(6):
            seed = 7 + episode if episode % 3 == 0 else None
            (obs_a, info_a), (obs_b, info_b) = fast.reset(seed=seed), ref.reset(seed=seed)
            assert np.array_equal(obs_a, obs_b) and info_a == info_b
            done = False
            while not done:
                mask = fast.unwrapped.action_masks()
                assert mask.dtype == np.bool_ and np.array_equal(mask, ref.action_masks())
                action = int(rng.choice(np.flatnonzero(mask)))
                scalar = action if rng.random() < 0.5 else np.int64(action)
                out_a, out_b = fast.step(scalar), ref.step(np.array([action]))
                assert np.array_equal(out_a[0], out_b[0]) and out_a[0].dtype == out_b[0].dtype
                assert out_a[1:] == out_b[1:] and type(out_a[1]) is float, (out_a[1:], out_b[1:])
                done = out_a[2] or out_a[3]


@pytest.mark.parametrize("variant", ["classic", "scopa-a-quattro"])
def test_play_returns_one_kind_of_step(variant: str) -> None:
    """``SingleGame.play`` (the envs' hot path) returns a ``SingleStep`` for every action: a pick or a play waiting for
    picks (no move done), a move within the hand, the move that ends a hand (its points), an action after the match
    (ignored), each as the core's step of the same position says. Observations and masks stay new writable arrays
    (the masks come from a cache of read-only ones)."""
    from scopa_env.engine.single import SingleStep

    rules = get_rules(variant)
    b = SingleGame(variant, seed=11)
    rng = np.random.default_rng(0)
    kinds = set()
    while not b.done:
        mask = b.mask()
        assert mask.flags.writeable
        mask[:] = False  # a copy: the cached mask is untouched
        assert b.mask().any()
        act = int(rng.choice(np.flatnonzero(b.mask())))
        st = b.to_state()
        info, out = core.step(rules, st, np.array([act])), b.play(act)
        assert type(out) is SingleStep
        assert (out.seat, out.move_done, out.card) == (int(info.seat[0]), bool(info.move_done[0]), int(info.card[0]))
        assert (out.capture, out.scopa, out.hand_over) == (
            bits_of(info.capture[0]),
            bool(info.scopa[0]),
            bool(info.hand_over[0]),
        )
        assert (out.hand_points is None) == (not out.hand_over)
        if out.hand_over:
            assert out.hand_points is not None and np.array_equal(out.hand_points, info.hand_points[0])
            assert (out.match_over, out.winner) == (bool(info.match_over[0]), int(info.winner[0]))
        kinds.add("hand over" if out.hand_over else "move" if out.move_done else "no move")
        for seat in range(rules.num_players):
            assert b.observe(seat).flags.writeable
    assert kinds == {"no move", "move", "hand over"}
    seat = b.current
    after = b.play(0)  # a finished match ignores the action, as the core does
    assert type(after) is SingleStep and (after.seat, after.move_done, after.card, after.hand_points) == (
        seat,
        False,
        -1,
        None,
    )


def test_cirulla_games_round_trip_through_single_game_in_every_phase() -> None:
    """``game_from_state`` of a cirulla position (KNOCK and CHOOSE phases included) is that position, copied."""
    rules = get_rules("cirulla")
    rng = np.random.default_rng(3)
    st = core.reset(rules, np.arange(16))
    seen = set()
    for _ in range(80):
        mask = core.legal_action_mask(rules, st)
        keys = np.where(mask, rng.random(mask.shape), -1.0)
        core.step(rules, st, np.where(st.done, 0, keys.argmax(axis=1)))
        for g in range(0, 16, 5):
            game = game_from_state(rules, st, g)
            assert isinstance(game, SingleGame)
            seen.add(game.phase)
            one = st.take([g])
            back = game.to_state()
            for f in fields(core.State):
                assert np.array_equal(getattr(back, f.name), getattr(one, f.name)), f.name
            assert np.array_equal(game.mask(), core.legal_action_mask(rules, one)[0])
            assert game.legal_bits() == bits_of(game.mask())
            assert game.hands == [bits_of(h) for h in one.hands[0]] and game.table == bits_of(one.table[0])
            back.hands[0, 0] = ~back.hands[0, 0]  # a copy: changing it leaves the game alone
            assert game.hands[0] == bits_of(one.hands[0, 0])
    assert {int(core.Phase.PLAY), int(core.Phase.CHOOSE), int(core.Phase.KNOCK)} <= seen
    with pytest.raises(ValueError, match="cirulla"):
        game_from_state("classic", core.reset(rules, [1]))
