"""Batched core: hand-built positions, invariants, determinism, batch equals singles, bad input."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from scopa_env.engine import core, observation, state_moves
from scopa_env.rules import VARIANTS, get_rules
from scopa_env.rules.cards import format_cards, parse_card
from tests.helpers import position


def act(rules, st, card: str) -> core.StepInfo:
    return core.step(rules, st, np.array([parse_card(card, rules.deck)]))


def mask_cards(rules, st) -> list[str]:
    return format_cards(core.legal_action_mask(rules, st)[0], rules.deck)


def test_equal_rank_beats_sum():
    # table: 5d 2c 3s   hand: 5c  -> must take 5d, not 2c+3s
    rules, st = position("classic", ["5c Kd Kc", "Ks Kb Qd"], "5d 2c 3s")
    info = act(rules, st, "5c")
    assert info.move_done[0] and set(format_cards(info.capture[0])) == {"5d"}
    assert set(format_cards(st.table[0])) == {"2c", "3s"}
    assert set(format_cards(st.piles[0, 0])) == {"5c", "5d"}


def test_choice_among_equal_ranks():
    # table: 5d 5s 2c   hand: 5c -> choose 5d or 5s
    rules, st = position("classic", ["5c Kd Kc", "Ks Kb Qd"], "5d 5s 2c")
    info = act(rules, st, "5c")
    assert not info.move_done[0] and st.phase[0] == core.Phase.CHOOSE
    assert set(mask_cards(rules, st)) == {"5d", "5s"}
    assert {c for _, c in state_moves.legal_moves(rules, st, 0)} == {
        frozenset([parse_card("5d")]),
        frozenset([parse_card("5s")]),
    }
    info = act(rules, st, "5s")
    assert info.move_done[0] and set(format_cards(info.capture[0])) == {"5s"}
    assert set(format_cards(st.table[0])) == {"2c", "5d"}
    assert st.current[0] == 1


def test_choice_among_sums_and_every_capture_reachable():
    # table: Ad 6c 2s 5b 3d 4c   hand: 7c -> {A,6} {2,5} {3,4} {A,2,4}
    rules, st = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "Ad 6c 2s 5b 3d 4c")
    expected = {frozenset(map(parse_card, s.split())) for s in ["Ad 6c", "2s 5b", "3d 4c", "Ad 2s 4c"]}
    moves = state_moves.legal_moves(rules, st, 0)
    assert {cap for card, cap in moves if card == parse_card("7c")} == expected
    reached = set()
    for cap in expected:
        _, s2 = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "Ad 6c 2s 5b 3d 4c")
        caps = np.zeros((1, 40), bool)
        caps[0, list(cap)] = True
        info = None
        for _ in range(5):
            a = state_moves.move_actions(s2, [parse_card("7c")], caps)
            info = core.step(rules, s2, a)
            if info.move_done[0]:
                break
        assert info is not None and info.move_done[0]
        reached.add(frozenset(np.flatnonzero(info.capture[0]).tolist()))
    assert reached == expected


def test_choose_mask_narrows_and_autocompletes():
    # table: Ad 6c 2s 5b 3d 4c   play 7c, pick 2s -> remaining completions {5b} or {Ad,4c}
    rules, st = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "Ad 6c 2s 5b 3d 4c")
    act(rules, st, "7c")
    assert set(mask_cards(rules, st)) == {"Ad", "6c", "2s", "5b", "3d", "4c"}
    act(rules, st, "2s")
    assert set(mask_cards(rules, st)) == {"Ad", "4c", "5b"}
    info = act(rules, st, "4c")  # {2s,4c} determines {Ad,2s,4c}
    assert info.move_done[0] and set(format_cards(info.capture[0])) == {"Ad", "4c", "2s"}


def test_duplicate_ranks_make_a_choice():
    # table: 2c 2s 5d   play 7b -> {2c,5d} or {2s,5d}
    rules, st = position("classic", ["7b Kd Kc", "Ks Kb Qd"], "2c 2s 5d")
    act(rules, st, "7b")
    assert st.phase[0] == core.Phase.CHOOSE
    act(rules, st, "5d")
    assert st.phase[0] == core.Phase.CHOOSE and set(mask_cards(rules, st)) == {"2c", "2s"}
    info = act(rules, st, "2s")
    assert set(format_cards(info.capture[0])) == {"5d", "2s"}


def test_forced_capture_and_lay():
    # table: 3d 4c   hand: 7c Kd -> 7c must capture; Kd is laid
    rules, st = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "3d 4c")
    info = act(rules, st, "7c")
    assert set(format_cards(info.capture[0])) == {"3d", "4c"} and info.scopa[0]
    rules, st = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "3d 4c")
    info = act(rules, st, "Kd")
    assert info.move_done[0] and not info.capture[0].any() and not info.scopa[0]
    assert set(format_cards(st.table[0])) == {"Kd", "3d", "4c"}


def test_scopa_counts():
    # table: Jd   hand: Js -> sweeps the table: a scopa
    rules, st = position("classic", ["Js Kd Kc", "Ks Kb Qd"], "Jd")
    info = act(rules, st, "Js")
    assert info.scopa[0] and st.scope[0].tolist() == [1, 0]


def test_last_play_is_not_a_scopa_and_leftover_goes_to_last_capturer():
    # last cards: seat 0 holds 4c, seat 1 holds 3s; table: 3d Kd; stock empty
    rules, st = position("classic", ["4c", "3s"], "3d Kd", stock="")
    info = act(rules, st, "4c")  # lay
    assert info.move_done[0] and not info.hand_over[0]
    info = act(rules, st, "3s")  # takes 3d, the last play: table keeps Kd 4c, not a scopa
    assert info.hand_over[0] and not info.scopa[0]
    assert info.leftover_side[0] == 1 and set(format_cards(info.leftover[0])) == {"4c", "Kd"}


def test_last_play_clearing_table_is_not_scopa():
    # last play: seat 1 plays 3s on table 3d -> clears the table, but it is the last card of the hand
    rules, st = position("classic", ["", "3s"], "3d", current=1, stock="")
    info = act(rules, st, "3s")
    assert info.hand_over[0] and set(format_cards(info.capture[0])) == {"3d"} and not info.scopa[0]


def test_leftover_to_nobody_when_nobody_captured():
    rules, st = position("classic", ["4c", "3s"], "Kd", stock="")
    st.piles[:] = False  # nobody captured anything this hand (the other cards are out of play)
    act(rules, st, "4c")
    info = act(rules, st, "3s")
    assert info.hand_over[0] and info.leftover_side[0] == -1
    assert info.hand_points[0, :, -1].tolist() == [0, 0]


def test_scopa_d_assi():
    # table: 3d 5c Kb, no ace -> ace takes all, not a scopa
    rules, st = position("scopa-d-assi", ["Ac Kd Kc", "Ks Jb Qd"], "3d 5c Kb")
    info = act(rules, st, "Ac")
    assert set(format_cards(info.capture[0])) == {"3d", "5c", "Kb"} and not info.scopa[0]
    # with an ace on the table the ace takes that ace (here it clears the table: a scopa)
    rules, st = position("scopa-d-assi", ["Ac Kd Kc", "Ks Jb Qd"], "Ad")
    info = act(rules, st, "Ac")
    assert set(format_cards(info.capture[0])) == {"Ad"} and info.scopa[0]
    # on an empty table the ace is laid
    rules, st = position("scopa-d-assi", ["Ac Kd Kc", "Ks Jb Qd"], "")
    info = act(rules, st, "Ac")
    assert not info.capture[0].any() and st.table[0, parse_card("Ac")]
    # classic: no ace-takes-all
    rules, st = position("classic", ["Ac Kd Kc", "Ks Jb Qd"], "3d 5c Kb")
    info = act(rules, st, "Ac")
    assert not info.capture[0].any()


def test_three_kings_redeal():
    rules = get_rules("simple-2")
    from scopa_env.rules.shuffle import shuffled_decks

    kings = rules.deck.rank == rules.deck.king_rank
    seeds = [s for s in range(2000) if kings[shuffled_decks([s], [0], [0], 40)[0, :4]].sum() >= 3]
    assert seeds, "no seed with three kings on the first table"
    st = core.reset(rules, seeds)
    assert (st.table & kings).sum(axis=1).max() < 3
    classic = core.reset("classic", seeds)
    assert ((classic.table & kings).sum(axis=1) >= 3).all()


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_deal_schedule(variant):
    rules = get_rules(variant)
    st = core.reset(rules, np.arange(16))
    taken = st.table_take > 0  # cirulla: an initial table adding up to 15 or 30 went to the dealer's side
    assert (st.table.sum(axis=1) == np.where(taken, 0, rules.table_cards)).all()
    assert rules.cirulla or not taken.any()
    assert (st.hands.sum(axis=2) == rules.deal_sizes[0]).all()
    assert st.hands.shape[2] == rules.num_cards
    sizes_seen = []
    rng = np.random.default_rng(0)
    g0 = 0
    while True:
        if st.hands[g0].sum() == rules.num_players * rules.deal_sizes[st.deal_no[g0]] and not sizes_seen[-1:] == [
            (int(st.hand_no[g0]), int(st.deal_no[g0]))
        ]:
            sizes_seen.append((int(st.hand_no[g0]), int(st.deal_no[g0])))
            assert (st.hands[g0].sum(axis=1) == rules.deal_sizes[st.deal_no[g0]]).all()
        if st.hand_no[g0] > 0:
            break
        mask = core.legal_action_mask(rules, st)
        keys = rng.random(mask.shape)
        keys[~mask] = -1
        core.step(rules, st, keys.argmax(axis=1))
    assert [d for h, d in sizes_seen if h == 0] == list(range(rules.num_deals))


def test_simple5_and_simple8_schedules():
    s5 = get_rules("simple-5")
    assert s5.table_cards == 5 and s5.deal_sizes == (3, 3, 1)
    s8 = get_rules("simple-8")
    assert s8.num_cards == 52 and s8.target == 16
    st = core.reset(s8, [1])
    assert st.hands.shape == (1, 8, 52)


def _random_run(rules, seeds, steps_limit=20000, seed=0):
    rng = np.random.default_rng(seed)
    st = core.reset(rules, seeds)
    trace = []
    for _ in range(steps_limit):
        if st.done.all():
            break
        mask = core.legal_action_mask(rules, st)
        assert (mask.any(axis=1) == ~st.done).all(), "mask empty while a game runs"
        keys = rng.random(mask.shape)
        keys[~mask] = -1
        info = core.step(rules, st, keys.argmax(axis=1))
        where = (
            st.hands.sum(axis=(1, 2))
            + st.table.sum(axis=1)
            + st.piles.sum(axis=(1, 2))
            + (rules.num_cards - st.stock_pos)
            + (st.pending >= 0)
        )
        live = ~st.done
        assert (where[live] == rules.num_cards).all(), "a card is lost or duplicated"
        owner = st.hands.sum(axis=1).astype(int) + st.table + st.piles.sum(axis=1)
        for g in np.flatnonzero(live):
            owner[g, st.deck[g, st.stock_pos[g] :]] += 1
            if st.pending[g] >= 0:
                owner[g, st.pending[g]] += 1
        assert (owner[live] == 1).all(), "every card exactly once"
        trace.append((info.card.copy(), info.hand_points.copy(), st.scores.copy()))
    assert st.done.all()
    return st, trace


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_invariants_random_games(variant):
    rules = get_rules(variant)
    st, _ = _random_run(rules, np.arange(24))
    top = st.scores.max(axis=1)
    assert (top >= rules.target).all()
    assert (st.scores[np.arange(24), st.winner] == top).all()
    assert ((st.scores == top[:, None]).sum(axis=1) == 1).all()


def test_determinism_and_batch_equals_singles():
    rules = get_rules("classic")
    seeds = np.array([5, 9, 11, 123456789])
    a = core.reset(rules, seeds)
    b = core.reset(rules, seeds)
    for f in ("hands", "table", "deck", "dealer"):
        assert (getattr(a, f) == getattr(b, f)).all()
    singles = [core.reset(rules, [s]) for s in seeds]
    rng = np.random.default_rng(1)
    for _ in range(400):
        if a.done.all():
            break
        mask = core.legal_action_mask(rules, a)
        keys = rng.random(mask.shape)
        keys[~mask] = -1
        acts = keys.argmax(axis=1)
        acts[a.done] = 0
        ia = core.step(rules, a, acts)
        for i, s in enumerate(singles):
            if not s.done[0]:
                ii = core.step(rules, s, acts[i : i + 1])
                assert ii.card[0] == ia.card[i] and (ii.hand_points[0] == ia.hand_points[i]).all()
            for f in ("hands", "table", "piles", "scores", "current", "phase"):
                assert (getattr(s, f)[0] == getattr(a, f)[i]).all(), f


def test_illegal_action_raises_and_report_mode():
    rules, st = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "3d 4c")
    with pytest.raises(core.IllegalActionError, match=r"game 0: action 39 \(Kb\) is illegal.*legal actions: .*7c"):
        core.step(rules, st, np.array([parse_card("Kb")]))
    with pytest.raises(core.IllegalActionError, match="action 99 is illegal"):
        core.step(rules, st, np.array([99]))
    before = st.copy()
    info = core.step(rules, st, np.array([parse_card("Kb")]), on_illegal="report")
    assert info.illegal[0] and not info.acted[0]
    assert (st.hands == before.hands).all() and (st.table == before.table).all()
    with pytest.raises(ValueError, match="shape"):
        core.step(rules, st, np.array([1, 2]))


def test_unknown_variant_lists_known():
    with pytest.raises(ValueError, match="known variants: classic"):
        get_rules("scopa-grande")
    assert get_rules(" Cirulla ").name == "cirulla" and get_rules("cirulla-4").num_players == 4


def test_autoreset_restarts_finished_games():
    rules = get_rules("classic")
    st = core.reset(rules, np.arange(8))
    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(800):
        mask = core.legal_action_mask(rules, st)
        assert mask.any(axis=1).all()
        keys = rng.random(mask.shape)
        keys[~mask] = -1
        info = core.step(rules, st, keys.argmax(axis=1), autoreset=True)
        resets += int(info.reset.sum())
        assert (info.reset == info.match_over).all()
        assert (st.scores[info.reset] == 0).all()
    assert resets > 0


def test_state_memory_budget():
    for variant in VARIANTS:
        st = core.reset(variant, np.arange(64))
        assert st.nbytes / 64 <= 2048, variant


def test_core_imports_numpy_only():
    # Gymnasium may load: ``import scopa_env`` registers the ``scopa/<Variant>-v0`` ids (as ale_py and minigrid do
    # on import), and gymnasium is itself numpy only. The heavy libraries never load with the core.
    code = (
        "import sys; import scopa_env.engine.core, scopa_env.rules.scoring, scopa_env.records.record_writer; "
        "import scopa_env.oracle.reference; "
        "bad = [m for m in ('torch', 'pettingzoo', 'stable_baselines3', 'sb3_contrib', 'agents') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_observation_layout_is_contiguous():
    for variant in VARIANTS:
        layout = observation.observation_layout(variant)
        assert layout[0][1] == 0
        for (_, _, stop, _), (_, start, _, _) in itertools.pairwise(layout):
            assert stop == start
        st = core.reset(variant, [0, 1])
        assert observation.observe(variant, st).shape == (2, observation.observation_size(variant))


def test_step_observe_and_masks_refuse_another_variants_rules():
    """A state remembers the rules it was started under: classic-21 has classic's shapes but another target."""
    state = core.reset("classic", [1, 2])
    for other in ("classic-21", "scopa-d-assi", "scopone-scientifico"):
        with pytest.raises(ValueError, match=f"started under 'classic', but the rules passed are '{other}'"):
            core.step(other, state, core.legal_action_mask("classic", state).argmax(axis=1))
        with pytest.raises(ValueError, match="started under 'classic'"):
            observation.observe(other, state)
        with pytest.raises(ValueError, match="started under 'classic'"):
            core.legal_action_mask(other, state)
        with pytest.raises(ValueError, match="started under 'classic'"):
            state_moves.legal_moves(other, state, 0)
    same = get_rules("classic").with_(description="the same rules, another description")
    core.step(same, state, core.legal_action_mask(same, state).argmax(axis=1))
    mixed = core.State.concat([state, core.reset("classic-15", [3])])
    with pytest.raises(ValueError, match="started under 'classic-15'"):
        observation.observe("classic", mixed)
    assert core.rules_key("classic") != core.rules_key("classic-21") == core.rules_key(get_rules("classic-21"))
    with pytest.raises(TypeError, match=r"state must be a scopa_env\.engine\.core\.State"):
        core.step("classic", {"hands": None}, np.zeros(1, dtype=np.int64))  # type: ignore[arg-type]


def test_observe_refuses_seats_out_of_range():
    """``observe(seats=[-1])`` used to observe seat 0's hand silently (and -1 wrapped to the last seat elsewhere)."""
    state = core.reset("classic", [1, 2])
    for bad in ([-1, 0], [0, 2], 5, [0, 9]):
        with pytest.raises(ValueError, match=r"seats must be in 0\.\.1"):
            observation.observe("classic", state, seats=bad)
    with pytest.raises(TypeError, match="seats must be integer"):
        observation.observe("classic", state, seats=[0.5, 1.0])
    with pytest.raises(ValueError, match=r"one per game, shape \(2,\)"):
        observation.observe("classic", state, seats=[0, 1, 0])
    both = observation.observe("classic", state, seats=1)
    assert np.array_equal(both, observation.observe("classic", state, seats=[1, 1]))


def test_reset_and_legal_moves_refuse_bad_arguments():
    with pytest.raises(TypeError, match=r"seeds must be integers in \[0, 2\*\*64\)"):
        core.reset("classic", [2**64])
    with pytest.raises(TypeError, match="seeds must be integers"):
        core.reset("classic", [1.5])
    with pytest.raises(ValueError, match="seeds must be non-negative, got -3"):
        core.reset("classic", [-3])
    for batch in (0, -3, 2.5, True, 2**40):
        with pytest.raises(ValueError, match=r"batch must be a number of games in 1\.\.4194304"):
            core.reset("classic", np.random.default_rng(0), batch=batch)  # type: ignore[arg-type]
    state = core.reset("classic", [1])
    with pytest.raises(ValueError, match=r"game must be an index 0\.\.0"):
        state_moves.legal_moves("classic", state, 1)
    with pytest.raises(ValueError, match="on_illegal must be"):
        core.step("classic", state, np.zeros(1, dtype=np.int64), on_illegal="ignore")  # type: ignore[arg-type]
