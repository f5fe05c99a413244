"""The observation shows a seat only what it may know (RULES.md section 7), and stays inside its declared bounds.

No-leak test: take positions from random games, reshuffle every card the observing seat cannot see (the other
seats' hands, keeping their sizes, and the stock, including the order in which earlier cards were dealt) and check
that the seat's observation is unchanged; then change one card it *can* see and check that the observation changes
(so the test can fail).
"""

from __future__ import annotations

import numpy as np
import pytest

from scopa_env import scopa_v0
from scopa_env.engine import core, observation
from scopa_env.envs.aec import observation_bounds
from scopa_env.envs.gym import ScopaVecEnv
from scopa_env.rules import VARIANTS, get_rules

VARIANT_NAMES = list(VARIANTS)


def random_positions(variant: str, num_games: int, seed: int, choosing: bool = False) -> core.State:
    """Games stopped after a random number of random legal actions.

    With ``choosing``, each game plays on past that point until a player is choosing a capture (CHOOSE phase; past
    cirulla's KNOCK decisions too).
    """
    rules = get_rules(variant)
    rng = np.random.default_rng(seed)
    state = core.reset(rules, np.arange(num_games, dtype=np.uint64) + np.uint64(seed))
    stop = rng.integers(0, 3 * rules.num_cards, size=num_games)
    for t in range(20 * rules.num_cards):
        go = t < stop
        if choosing:
            go |= (state.phase == core.Phase.PLAY) | (state.phase == core.Phase.KNOCK)
        if not go.any():
            break
        mask = core.legal_action_mask(rules, state)
        keys = rng.random(mask.shape)
        keys[~mask] = -1.0
        core.step(rules, state, np.where(go, keys.argmax(axis=1), -1), on_illegal="report")  # -1: game waits
    return state


def reshuffle_hidden(rules_name: str, state: core.State, game: int, seat: int, rng: np.random.Generator) -> core.State:
    """A copy of ``state`` where the cards ``seat`` cannot see in ``game`` are redistributed at random (cards that
    cirulla's knocks revealed stay in their hands)."""
    rules = get_rules(rules_name)
    out = state.copy()
    others = [s for s in range(rules.num_players) if s != seat]
    shown = out.hands[game] & out.revealed[game]  # (N, D) knocked cards still held: everyone sees them
    sizes = [int((out.hands[game, s] & ~shown[s]).sum()) for s in others]
    pos = int(out.stock_pos[game])
    stock = [int(c) for c in out.deck[game, pos:]]
    hidden = [int(c) for s in others for c in np.flatnonzero(out.hands[game, s] & ~shown[s])] + stock
    rng.shuffle(hidden)
    for s in others:
        out.hands[game, s] = shown[s]
    k = 0
    for s, n in zip(others, sizes, strict=True):
        out.hands[game, s, hidden[k : k + n]] = True
        k += n
    out.deck[game, pos:] = hidden[k:]
    out.deck[game, :pos] = rng.permutation(out.deck[game, :pos])  # the order of past deals is hidden too
    return out


@pytest.mark.parametrize("choosing", [False, True], ids=["any", "choosing"])
@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_reshuffling_hidden_cards_leaves_the_observation_unchanged(variant: str, choosing: bool) -> None:
    rules = get_rules(variant)
    state = random_positions(variant, num_games=12, seed=11, choosing=choosing)
    if choosing:
        assert (state.phase == core.Phase.CHOOSE).sum() >= 6
    rng = np.random.default_rng(5)
    for game in range(state.batch_size):
        for seat in range(rules.num_players):
            seats = np.full(state.batch_size, seat)
            before = observation.observe(rules, state, seats=seats)[game]
            for _ in range(3):
                shuffled = reshuffle_hidden(variant, state, game, seat, rng)
                assert np.array_equal(observation.observe(rules, shuffled, seats=seats)[game], before)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_changing_a_visible_card_changes_the_observation(variant: str) -> None:
    """Swap a card of the acting seat's hand with a hidden one: the seat can tell (the test above can fail)."""
    rules = get_rules(variant)
    state = random_positions(variant, num_games=12, seed=12)
    changed = 0
    for game in range(state.batch_size):
        seat = int(state.current[game])
        hand = np.flatnonzero(state.hands[game, seat])
        other = [s for s in range(rules.num_players) if s != seat and state.hands[game, s].any()]
        if state.done[game] or not hand.size or not other:
            continue
        theirs = np.flatnonzero(state.hands[game, other[0]])
        swapped = state.copy()
        swapped.hands[game, seat, hand[0]] = False
        swapped.hands[game, other[0], hand[0]] = True
        swapped.hands[game, other[0], theirs[0]] = False
        swapped.hands[game, seat, theirs[0]] = True
        before = observation.observe(rules, state)[game]
        after = observation.observe(rules, swapped)[game]
        assert not np.array_equal(before, after)
        changed += 1
    assert changed > 0


def test_aec_observation_does_not_leak_hidden_cards() -> None:
    """The same check through the PettingZoo env, for the agent to act and for an agent that waits."""
    env = scopa_v0.raw_env(variant="scopa-a-quattro")
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(9):  # a few moves into the hand
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(np.flatnonzero(mask)[-1]))
    for agent in env.agents:
        seat = env.agent_name_mapping[agent]
        before = env.observe(agent)
        original = env._state
        assert original is not None
        env._state = reshuffle_hidden("scopa-a-quattro", original, 0, seat, rng)
        after = env.observe(agent)
        env._state = original
        assert np.array_equal(before["observation"], after["observation"])
        assert np.array_equal(before["action_mask"], after["action_mask"])


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_observations_stay_inside_the_declared_bounds(variant: str) -> None:
    rules = get_rules(variant)
    low, high = observation_bounds(rules, max_hands=100)
    state = random_positions(variant, num_games=16, seed=13)
    for seat in range(rules.num_players):
        obs = observation.observe(rules, state, seats=np.full(state.batch_size, seat))
        assert obs.dtype == np.float32
        assert (obs >= low).all() and (obs <= high).all()


def test_bounds_hold_for_whole_matches_including_the_terminal_observation() -> None:
    """Play whole matches with the vector env; every observation (terminal ones too) is in the space."""
    venv = ScopaVecEnv("classic", 16, seed=1, max_hands=3)
    obs = venv.reset()
    rng = np.random.default_rng(1)
    finished = 0
    for _ in range(150):
        assert all(venv.observation_space.contains(o) for o in obs)
        mask = venv.action_masks()
        keys = rng.random(mask.shape)
        keys[~mask] = -1.0
        obs, _, dones, infos = venv.step(keys.argmax(axis=1))
        for i in np.flatnonzero(dones):
            assert venv.observation_space.contains(infos[i]["terminal_observation"])
            finished += 1
    assert finished > 0


@pytest.mark.parametrize("variant", ["classic", "scopa-d-assi", "simple-8"])
def test_play_features_match_the_reference_on_random_tables(variant: str) -> None:
    """The table look-ups of the core's play features against the reference's enumeration of every capture, on
    tables of every size (far more crowded ones than play reaches, where the subset-sum tables are stretched)."""
    from scopa_env.oracle.reference import play_features

    rules = get_rules(variant)
    rng = np.random.default_rng(7)
    d = rules.num_cards
    sizes = rng.integers(0, 17, size=600)
    tables = np.zeros((sizes.size, d), dtype=np.bool_)
    for i, k in enumerate(sizes):
        tables[i, rng.choice(d, size=k, replace=False)] = True
    tables[0] = False  # the empty table
    tables[1, [rules.deck.settebello]] = True  # the settebello alone
    got = observation.play_features(rules, tables)
    want = np.array([play_features(rules, np.flatnonzero(t).tolist()) for t in tables], dtype=np.float32)
    bad = np.flatnonzero((got != want).any(axis=1))
    assert bad.size == 0, f"table {np.flatnonzero(tables[bad[0]]).tolist()}: {got[bad[0]]} != {want[bad[0]]}"


SEED = 987_654_321
"""A seed no counter of a short game can equal, so that finding it among an info's values means a leak."""
PUBLIC_INFO_KEYS = {
    "learner_seat",
    "illegal_action",
    "terminal_observation",
    "TimeLimit.truncated",
    "episode_opponent",
    "episode_pool",
    "episode_result",
    "episode_margin",
}
"""Every key an env's info may hold: what the learner may know (add a key here only if it hides no card)."""
HIDDEN_WORDS = ("seed", "deck", "stock", "hands", "state", "hidden", "order")


def check_info(info: dict[str, object], face: str) -> None:
    for key, value in info.items():
        assert key in PUBLIC_INFO_KEYS, f"{face}: unexpected info key {key!r}"
        assert not any(word in key.lower() for word in HIDDEN_WORDS), f"{face}: info key {key!r}"
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            assert int(value) != SEED, f"{face}: info[{key!r}] is the game's seed"


@pytest.mark.parametrize("variant", ["classic", "scopa-a-quattro"])
def test_no_env_face_puts_the_seed_or_hidden_state_in_its_info(variant: str) -> None:
    """``ScopaEnv`` used to return ``info["game_seed"]``, from which ``core.reset`` rebuilds every hidden card."""
    from scopa_env.envs.gym import ScopaEnv

    rng = np.random.default_rng(0)
    for make in (scopa_v0.raw_env, scopa_v0.env):
        aec = make(variant=variant, max_hands=1)
        aec.reset(seed=SEED)
        for _ in aec.agent_iter(400):
            obs, _, terminated, truncated, info = aec.last()
            check_info(info, make.__name__)
            for each in aec.infos.values():
                check_info(each, make.__name__)
            aec.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert not hasattr(aec.unwrapped, "game_seed")
        with pytest.raises(NotImplementedError):  # PettingZoo's global state(), not the game with its hidden cards
            aec.unwrapped.state()
    env = ScopaEnv(variant, episode="hand")
    _, info = env.reset(seed=SEED)
    check_info(info, "ScopaEnv.reset")
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
        check_info(info, "ScopaEnv.step")
        done = terminated or truncated
    assert "episode_result" in info  # the end of the episode was checked too
    venv = ScopaVecEnv(variant, 4, seed=SEED, episode="hand")
    venv.reset()
    for each in venv.reset_infos:
        check_info(each, "ScopaVecEnv.reset")
    ended = 0
    for _ in range(60):
        _, _, dones, infos = venv.step((~venv.action_masks()).argmax(axis=1))  # illegal: flagged and replaced
        for each in infos:
            check_info(each, "ScopaVecEnv.step")
        ended += int(dones.sum())
    assert ended > 0
    with pytest.raises(AttributeError, match="game_seed"):
        venv.get_attr("game_seed")
