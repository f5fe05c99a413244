"""The compiled players of the single-game kernel (``scopa_env.engine._kernel_calls``) and the envs' fused calls.

- ``random_card`` / ``play_random`` / ``position_key``: ``RandomAgent``'s cards drawn in compiled code equal the
  Python-int draws (``policy.position_key`` / ``position_random``, themselves equal to ``PositionStreams``: see
  tests/test_hostile_inputs.py) and the argmax ``uniform_legal`` takes, position after position, on several variants.
- ``random_pick``: ``RandomAgent``'s capture picks drawn in compiled code equal ``RandomAgent.act``'s on the core.
- ``SingleGame.observe_masked``: ``observe`` and ``mask_int8`` (or zeros) in one call.
- ``kernel.drop_stale_cache``: the compiled modules' disk cache goes when a source compiled into them is newer.

The searches on the kernel (max^n, the exact end game) are held to the batched searches in tests/test_kernel.py and
tests/test_search.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from scopa_env.engine import core
from scopa_env.engine.kernel import drop_stale_cache, kernel_for
from scopa_env.engine.single import SingleGame, SingleStep
from scopa_env.games.policy import position_key, position_random

VARIANTS = ("classic", "scopone-scientifico", "simple-5", "scopa-a-quattro")
KEYS = (12345, (1 << 63) - 1, 0x5EED5 ^ 987654321)


def _python_card(game: SingleGame, key: int) -> int:
    """``SingleLearnerGame``'s former Python draw: the hand's card with the largest ``position_random`` number."""
    parts = (
        game.hand_no,
        game.deal_no,
        game.stock_pos,
        sum(h.bit_count() for h in game.hands),
        game.picked.bit_count(),
        game.phase,
        game.current,
    )
    keys = position_random(position_key(key, game.seed, parts), 1, game.rules.num_cards)
    hand = game.hands[game.current]
    cards = [c for c in range(game.rules.num_cards) if hand >> c & 1]
    return max(cards, key=lambda c: (keys[c], -c))  # the first of equal keys, as argmax


@pytest.mark.parametrize("variant", VARIANTS)
def test_compiled_random_cards_equal_the_python_draws(variant: str) -> None:
    k = kernel_for(variant)
    m = k.mod
    rng = np.random.default_rng(3)
    checked = 0
    for seed in range(6):
        game = SingleGame(variant, seed * 7919 + 11)
        for key in KEYS:
            hand_cards = sum(h.bit_count() for h in game.hands)
            parts = (
                game.hand_no,
                game.deal_no,
                game.stock_pos,
                hand_cards,
                game.picked.bit_count(),
                game.phase,
                game.current,
            )
            assert int(m.position_key(k.rc, game._st, key)) == position_key(key, game.seed, parts)
        plies = 0
        while not game.done and plies < 120:
            if game.phase == int(core.Phase.PLAY):
                for key in KEYS:
                    assert int(m.random_card(k.rc, game._st, key)) == _python_card(game, key)
                checked += 1
            legal = [a for a in range(game.rules.num_actions) if game.legal_bits() >> a & 1]
            game.step(int(rng.choice(legal)))
            plies += 1
    assert checked > 100


@pytest.mark.parametrize("variant", VARIANTS)
def test_play_random_plays_what_the_python_loop_played(variant: str) -> None:
    """``SingleGame.play_random`` (random seats' cards in one compiled call) against the same draws one by one."""
    n = SingleGame(variant).rules.num_players
    for seed in range(5):
        key = KEYS[seed % len(KEYS)]
        seats = 0b1010 & ((1 << n) - 1) if n > 2 else 0b10  # the learner holds seats 0 and 2
        fast, slow = SingleGame(variant, seed + 100), SingleGame(variant, seed + 100)
        rng = np.random.default_rng(seed)
        for _ in range(200):
            if fast.done:
                break
            if fast.phase == int(core.Phase.PLAY) and seats >> fast.current & 1:
                got = fast.play_random(key, seats)
                ended = None
                while slow.phase == int(core.Phase.PLAY) and seats >> slow.current & 1:
                    out = slow.play(_python_card(slow, key))
                    assert isinstance(out, SingleStep)
                    if out.hand_over:
                        ended = out
                        break
                assert (got is None) == (ended is None)
                if got is not None and ended is not None:
                    assert got.hand_points is not None and ended.hand_points is not None
                    assert (got.seat, got.card, got.capture, got.leftover, got.winner) == (
                        ended.seat,
                        ended.card,
                        ended.capture,
                        ended.leftover,
                        ended.winner,
                    )
                    assert np.array_equal(got.hand_points, ended.hand_points)
            else:
                legal = [a for a in range(fast.rules.num_actions) if fast.legal_bits() >> a & 1]
                a = int(rng.choice(legal))
                fast.play(a)
                slow.play(a)
            assert np.array_equal(fast._st, slow._st)


@pytest.mark.parametrize("variant", ("classic", "scopone-scientifico", "simple-8", "scopa-d-assi"))
def test_compiled_capture_picks_are_the_random_agents(variant: str) -> None:
    """``random_pick`` (``RandomAgent``'s capture pick, compiled) picks what ``RandomAgent.act`` picks on the core
    (``uniform_capture_picks`` on the position's stream) at every CHOOSE decision of games whose picks the agent
    makes, and ``play_random(..., picks=True)`` plays them. It leaves a pick to the agent (-1) only for two keys within
    a relative 1e-9, which these games never meet."""
    from scopa_env.games.driver import decide
    from scopa_env.games.policy import RandomAgent

    k = kernel_for(variant)
    m = k.mod
    agents = [RandomAgent(variant, seed=s) for s in (1, 2)]
    keys = [int(a.key) for a in agents]
    rng = np.random.default_rng(5)
    checked = 0
    for seed in range(40):
        game = SingleGame(variant, seed)
        while not game.done:
            if game.phase == int(core.Phase.CHOOSE):
                state, one = game.to_state(), np.zeros(1, np.intp)
                for i, key in enumerate(keys):
                    want = int(decide(game.rules, state, agents, np.array([i]), one, check=True)[0])
                    assert int(m.random_pick(k.rc, k.pc, game._st, key)) == want
                fast, seat = game.copy(), game.current
                fast.play_random(keys[0], 1 << seat, picks=True)  # the picks up to the end of the move
                game.play(int(decide(game.rules, state, agents, np.array([0]), one)[0]))
                while game.current == seat and game.phase == int(core.Phase.CHOOSE):
                    game.play(int(decide(game.rules, game.to_state(), agents, np.array([0]), one)[0]))
                assert np.array_equal(fast._st, game._st)
                checked += 1
                continue
            legal = [a for a in range(game.rules.num_actions) if game.legal_bits() >> a & 1]
            game.play(int(rng.choice(legal)))
    assert checked > 50


@pytest.mark.parametrize("variant", ("classic", "cirulla", "scopa-a-quattro"))
def test_observe_masked_is_observe_and_the_mask(variant: str) -> None:
    game = SingleGame(variant, 4)
    rng = np.random.default_rng(0)
    while True:
        for seat in range(game.rules.num_players):
            for legal in (True, False):
                obs, mask = game.observe_masked(seat, legal)
                assert obs.dtype == np.float32 and mask.dtype == np.int8
                assert np.array_equal(obs, game.observe(seat))
                assert np.array_equal(mask, game.mask_int8() if legal else np.zeros_like(mask))
        if game.done:
            break
        legal_actions = [a for a in range(game.rules.num_actions) if game.legal_bits() >> a & 1]
        game.step(int(rng.choice(legal_actions)))
    obs, mask = game.observe_masked(0, True)
    assert not mask.any()  # the match is over: no legal action


def test_the_kernels_cache_goes_when_a_source_compiled_into_it_is_newer(tmp_path: os.PathLike[str]) -> None:
    """The rules', the observation's, the envs' calls' and the agents' search's caches older than the sources
    compiled into them (the layout, SplitMix64, the rules, ``MoveKind`` for the search) go; newer ones, and other
    modules' (which numba checks by itself), stay."""
    import scopa_env.engine._kernel_calls as calls_part
    import scopa_env.engine._kernel_jit as rules_part
    import scopa_env.engine._kernel_layout as layout
    import scopa_env.rules.moves as moves
    import scopa_env.rules.shuffle as shuffle
    from agents.search import compiled

    times = [os.path.getmtime(str(m.__file__)) for m in (rules_part, calls_part, layout, shuffle, moves)]
    old, new = os.path.join(tmp_path, "old"), os.path.join(tmp_path, "new")
    names = (
        "_kernel_calls.play_random-1.py311.nbi",
        "_kernel_calls.play_random-1.py311.1.nbc",
        "_kernel_observe.observe-1.py311.nbi",
        "_kernel_jit.step-1.py311.nbi",
        "kernel_search.max_n-1.py311.nbi",
        "kernel_search.max_n-1.py311.1.nbc",
        "shuffle.mix64-1.py311.nbi",
    )
    for folder, at in ((old, min(times) - 100), (new, max(times) + 100)):
        os.makedirs(folder)
        for name in names:
            open(os.path.join(folder, name), "w").close()
            os.utime(os.path.join(folder, name), (at, at))
    assert drop_stale_cache([str(tmp_path)]) == 4  # the kernel's own modules
    assert drop_stale_cache([str(tmp_path)], compiled.COMPILED_WITH) == 2  # the search's, by its own table
    assert sorted(os.listdir(old)) == ["shuffle.mix64-1.py311.nbi"]
    assert len(os.listdir(new)) == len(names)
    sources = compiled.COMPILED_WITH["kernel_search"]  # the search compiles MoveKind's kinds in: its module counts
    assert os.path.samefile(sources[-1], str(moves.__file__)) and all(os.path.isfile(s) for s in sources)
