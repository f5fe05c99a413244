"""Cirulla in the batched core: hand-built positions (table drawn in a comment) through the action interface for
every cirulla rule, random games checked against a plain brute-force reading of the rules, batch equals one by one,
and the other variants unchanged by it.

Actions: card ids, then ``stop`` (40), ``knock-sum`` (41), ``knock-tris`` (42).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from scopa_env.engine import core, observation, state_moves
from scopa_env.rules import CIRULLA_VARIANTS, VARIANTS, Rules, cirulla
from scopa_env.rules.cards import format_cards, parse_card, parse_cards
from scopa_env.rules.moves import MoveKind
from scopa_env.rules.scoring import CIRULLA_POINT_FIELDS, POINT_FIELDS, point_fields, score_hands
from scopa_env.rules.shuffle import shuffled_decks
from tests.helpers import position

CIRULLA = CIRULLA_VARIANTS["cirulla"]
STOP, KNOCK_SUM, KNOCK_TRIS = 40, 41, 42


def cpos(variant: str = "cirulla", *args, dealer: int | None = None, **kwargs) -> tuple[Rules, core.State]:
    """``tests.helpers.position`` for a cirulla variant, with no knock, take or reveal left from the reset."""
    rules, st = position(CIRULLA_VARIANTS[variant], *args, **kwargs)
    st.revealed[:] = False
    st.knock_points[:] = 0
    st.table_take[:] = 0
    if dealer is not None:
        st.dealer[0] = dealer
    return rules, st


def act(rules: Rules, st: core.State, action: str | int) -> core.StepInfo:
    a = parse_card(action, rules.deck) if isinstance(action, str) else action
    return core.step(rules, st, np.array([a]))


def mask_names(rules: Rules, st: core.State) -> list[str]:
    return [core.action_name(rules, a) for a in np.flatnonzero(core.legal_action_mask(rules, st)[0])]


def taken(info: core.StepInfo) -> set[str]:
    return set(format_cards(info.capture[0]))


# ------------------------------------------------------------------------------------------ a plain rules oracle


def value(card: int) -> int:
    return card % 10 + 1


def brute_captures(table: list[int], card: int) -> list[frozenset[int]]:
    """Cirulla's legal captures of ``card`` on ``table``, straight from RULES.md section 6 (ace takes all; equal
    rank, else sums of two or more; plus fifteens of one or more)."""
    same = [t for t in table if t % 10 == card % 10]
    if card % 10 == 0 and not same and table:
        return [frozenset(table)]
    out = [frozenset({t}) for t in same]
    subsets = [c for k in range(1, len(table) + 1) for c in itertools.combinations(table, k)]
    if not same:
        out += [frozenset(c) for c in subsets if len(c) >= 2 and sum(map(value, c)) == value(card)]
    out += [frozenset(c) for c in subsets if sum(map(value, c)) + value(card) == 15]
    return out


def knock_kinds(hand: list[int]) -> set[str]:
    """The knocks a three-card hand may make: sum <= 9 with 7c as 1; three of a rank or a pair plus 7c."""
    if len(hand) != 3:
        return set()
    out = set()
    if sum(1 if c == 16 else value(c) for c in hand) <= 9:
        out.add("sum")
    ranks = [c % 10 for c in hand if c != 16]
    most = max((ranks.count(r) for r in ranks), default=0)
    if most == 3 or (most == 2 and 16 in hand):
        out.add("tris")
    return out


# ------------------------------------------------------------------------------------------ captures


def test_equal_rank_or_fifteen_with_stop():
    # table: 5d 2s 3b      hand: 5c  -> {5d} (equal rank) or {5d 2s 3b} (a fifteen: 5 + 5 + 2 + 3)
    rules, st = cpos("cirulla", ["5c Kd Kc", "Ks Kb Qd"], "5d 2s 3b")
    captures = state_moves.enumerate_captures(rules, parse_cards("5d 2s 3b"), parse_card("5c"))
    assert sorted(format_cards(sorted(c)) for c in captures) == [["5d"], ["5d", "2s", "3b"]]
    info = act(rules, st, "5c")
    assert not info.move_done[0] and st.phase[0] == core.Phase.CHOOSE
    assert mask_names(rules, st) == ["5d", "2s", "3b"]  # stop: nothing picked is no capture
    assert not act(rules, st, "5d").move_done[0]
    assert mask_names(rules, st) == ["2s", "3b", "stop"]  # {5d} is a capture inside {5d 2s 3b}
    info = act(rules, st, STOP)
    assert info.move_done[0] and taken(info) == {"5d"} and not info.scopa[0]
    assert format_cards(st.table[0]) == ["2s", "3b"] and st.phase[0] == core.Phase.PLAY


def test_picking_into_the_fifteen_completes_it_and_sweeps():
    # table: 5d 2s 3b      hand: 5c, pick 2s -> only the fifteen holds it: taken at once, a scopa
    rules, st = cpos("cirulla", ["5c Kd Kc", "Ks Kb Qd"], "5d 2s 3b")
    act(rules, st, "5c")
    info = act(rules, st, "2s")
    assert info.move_done[0] and taken(info) == {"5d", "2s", "3b"} and info.scopa[0]
    assert st.scope[0].tolist() == [1, 0]


def test_sum_or_fifteen_and_single_fifteen():
    # table: 2d 4s Qb      hand: 6c -> {2d 4s} (sum to 6) or {Qb} (6 + 9 = 15)
    rules, st = cpos("cirulla", ["6c Kd Kc", "Ks Kb Qd"], "2d 4s Qb")
    moves = state_moves.legal_moves(rules, st, 0)
    assert sorted(format_cards(sorted(c)) for card, c in moves if card == parse_card("6c")) == [["2d", "4s"], ["Qb"]]
    act(rules, st, "6c")
    assert mask_names(rules, st) == ["2d", "4s", "Qb"]
    info = act(rules, st, "Qb")
    assert info.move_done[0] and taken(info) == {"Qb"}
    # table: 5s 3b         hand: Kd -> no equal, no sum (5 + 3 = 8): the fifteen {5s} is its only capture
    rules, st = cpos("cirulla", ["Kd 2c Kc", "Ks Kb Qd"], "5s 3b")
    info = act(rules, st, "Kd")
    assert info.move_done[0] and taken(info) == {"5s"} and not info.scopa[0]
    # table: Kc            hand: 2d -> nothing: laid
    rules, st = cpos("cirulla", ["2d 3c 4c", "Ks Kb Qd"], "Kc")
    info = act(rules, st, "2d")
    assert info.move_done[0] and not info.capture[0].any() and st.table[0, parse_card("2d")]


def test_fifteen_of_several_cards_and_move_classes():
    # table: Ad 2c 3s 4b   hand: 5d -> fifteens: 10 from the table = {Ad 2c 3s 4b}; sums to 5: {Ad 4b} {2c 3s}
    rules, st = cpos("cirulla", ["5d Kd Kc", "Ks Kb Qd"], "Ad 2c 3s 4b")
    classes = state_moves.move_classes(rules, st, [0])
    five = classes.card == parse_card("5d")
    assert sorted(MoveKind(k).name for k in classes.kind[five]) == ["FIFTEEN", "SUM", "SUM"]
    assert classes.scopa[five & (classes.kind == MoveKind.FIFTEEN)].all()
    act(rules, st, "5d")
    act(rules, st, "Ad")
    assert mask_names(rules, st) == ["2c", "3s", "4b"]  # {Ad 4b} or the fifteen: no stop ({Ad} is no capture)
    info = act(rules, st, "2c")
    assert taken(info) == {"Ad", "2c", "3s", "4b"} and info.scopa[0]


def test_ace_takes_all_cases():
    # table: 5s Qb         hand: Ad -> takes the whole table (never a scopa, though 1 + 5 + 9 = 15)
    rules, st = cpos("cirulla", ["Ad 2c Kc", "Ks Kb Qd"], "5s Qb")
    assert [format_cards(sorted(c)) for c in state_moves.enumerate_captures(rules, parse_cards("5s Qb"), 0)] == [
        ["5s", "Qb"]
    ]
    info = act(rules, st, "Ad")
    assert info.move_done[0] and taken(info) == {"5s", "Qb"} and not info.scopa[0]
    assert st.scope[0].tolist() == [0, 0] and st.last_capturer[0] == 0
    # empty table: the ace is laid
    rules, st = cpos("cirulla", ["Ad 2c Kc", "Ks Kb Qd"], "")
    info = act(rules, st, "Ad")
    assert info.move_done[0] and not info.capture[0].any() and st.table[0, 0]
    # table: Ac 4s Kb      hand: Ad -> the ace Ac (equal rank) or the fifteen {4s Kb} (1 + 4 + 10)
    rules, st = cpos("cirulla", ["Ad 2c Kc", "Ks Jb Qd"], "Ac 4s Kb")
    act(rules, st, "Ad")
    assert mask_names(rules, st) == ["Ac", "4s", "Kb"]
    info = act(rules, st, "Kb")
    assert taken(info) == {"4s", "Kb"}


def test_illegal_fifteen_and_stop_name_the_game_and_the_legal_actions():
    # table: 5d 2s 3b Qc   hand: 5c -> Qc is in no capture (15 - 5 = 10)
    rules, st = cpos("cirulla", ["5c Kd Kc", "Ks Kb Qd"], "5d 2s 3b Qc")
    act(rules, st, "5c")
    with pytest.raises(core.IllegalActionError, match=r"game 0 \(cirulla\): action 18 \(Qc\) is illegal") as e:
        act(rules, st, "Qc")
    assert "legal actions: 4 (5d), 21 (2s), 32 (3b)" in str(e.value)
    with pytest.raises(core.IllegalActionError, match=r"action 40 \(stop\) is illegal for seat 0 in phase CHOOSE"):
        act(rules, st, STOP)
    with pytest.raises(core.IllegalActionError, match=r"action 41 \(knock-sum\) is illegal"):
        act(rules, st, KNOCK_SUM)
    info = core.step(rules, st, np.array([STOP]), on_illegal="report")
    assert info.illegal[0] and st.pending[0] == parse_card("5c")


def test_last_play_fifteen_is_not_a_scopa():
    # table: 5s            last card: Kd -> the fifteen clears the table on the hand's last play: no scopa
    rules, st = cpos("cirulla", ["Kd", ""], "5s", stock="", last_capturer=1)
    assert state_moves.is_last_play(rules, st)[0]
    info = act(rules, st, "Kd")
    assert info.move_done[0] and taken(info) == {"5s"} and not info.scopa[0] and info.hand_over[0]
    assert info.leftover_side[0] == -1


def test_leftover_goes_to_the_last_capturer():
    # table: Kc Qs         last card: 2d (laid, 2 + 10 + 9 != 15) -> the table goes to side 1, the last capturer
    rules, st = cpos("cirulla", ["2d", ""], "Kc Qs", stock="", last_capturer=1)
    info = act(rules, st, "2d")
    assert info.hand_over[0] and info.leftover_side[0] == 1
    assert set(format_cards(info.leftover[0])) == {"2d", "Kc", "Qs"}
    assert info.hand_points.shape == (1, 2, 9)


# ------------------------------------------------------------------------------------------ knocks


def test_knock_options_and_errors():
    # hands: seat 0 Ad 2c 3s (sum 6), seat 1 7c 4d 4s (pair + 7c: tris; 1 + 4 + 4 = 9: sum too)
    rules, st = cpos("cirulla", ["Ad 2c 3s", "7c 4d 4s"], "Kd")
    st.phase[0] = core.Phase.KNOCK
    assert mask_names(rules, st) == ["stop", "knock-sum"]
    with pytest.raises(core.IllegalActionError, match=r"action 42 \(knock-tris\) is illegal for seat 0 in phase KNOCK"):
        act(rules, st, KNOCK_TRIS)
    with pytest.raises(core.IllegalActionError, match=r"legal actions: 40 \(stop\), 41 \(knock-sum\)"):
        act(rules, st, "Ad")  # no card is played before the knocks are decided
    st.current[0] = 1
    assert mask_names(rules, st) == ["stop", "knock-sum", "knock-tris"]


@pytest.mark.parametrize(
    ("hand", "kinds"),
    [
        ("Ad 2c 3s", {"sum"}),
        ("7c 2d 5s", {"sum"}),  # 7c counts 1: 1 + 2 + 5 = 8
        ("7d 2c 5s", set()),  # a plain 7: 14
        ("5d 5c 5s", {"tris"}),
        ("7c Kd Ks", {"tris"}),  # a pair and the matta
        ("7c 7d 7s", {"tris"}),
        ("7c 3d Qb", set()),  # the matta alone and two different ranks
        ("Ad Ac As", {"sum", "tris"}),
        ("7c Ad Ac", {"sum", "tris"}),
        ("3d 3c Ks", set()),
    ],
)
def test_knock_kinds(hand, kinds):
    rules, st = cpos("cirulla", [hand, "Jd Jc Qs"], "6b")
    st.phase[0] = core.Phase.KNOCK
    assert set(mask_names(rules, st)) == {"stop"} | {f"knock-{k}" for k in kinds}
    assert knock_kinds(parse_cards(hand)) == kinds


def test_knock_phase_order_points_reveal_and_observation():
    # cirulla-3, dealer 1: the deal goes to seats 2, 0, 1 (play order). The dealer plays the round's last card
    # (Kd laid on an empty table), the stock deals: seat 2 Ad 2c 3s (sum), seat 0 Jd Qc Ks (nothing),
    # seat 1 5d 5c 5s (tris). Knocks: seat 2 then seat 1, then seat 2 plays first.
    rules, st = cpos("cirulla-3", ["", "Kd", ""], "", current=1, dealer=1, stock="Ad 2c 3s Jd Qc Ks 5d 5c 5s 4d 6c 6s")
    st.deal_no[0] = 0
    info = act(rules, st, "Kd")
    assert info.move_done[0] and st.phase[0] == core.Phase.KNOCK and st.current[0] == 2
    obs = observation.observe(rules, st)[0]
    layout = {name: (a, b) for name, a, b, _ in observation.observation_layout(rules)}
    assert obs[slice(*layout["knocking"])].tolist() == [1.0]
    info = act(rules, st, KNOCK_SUM)
    assert info.knock[0] == cirulla.KnockKind.SUM and info.seat[0] == 2 and not info.move_done[0]
    assert st.knock_points[0].tolist() == [0, 0, 3] and st.phase[0] == core.Phase.KNOCK and st.current[0] == 1
    assert format_cards(st.revealed[0, 2]) == ["Ad", "2c", "3s"]
    # Seat 1 sees seat 2's cards: not unseen, and in the revealed block (own seat first, then play order: 2, 0).
    obs = observation.observe(rules, st)[0]
    d = rules.num_cards
    unseen = obs[slice(*layout["unseen"])].astype(bool)
    assert not unseen[parse_cards("Ad 2c 3s")].any() and unseen[parse_cards("Jd Qc Ks")].all()
    revealed = obs[slice(*layout["revealed"])].reshape(3, d).astype(bool)
    assert format_cards(revealed[1]) == ["Ad", "2c", "3s"] and not revealed[[0, 2]].any()
    assert obs[slice(*layout["knocks"])].tolist() == pytest.approx([0.0, 0.3, 0.0])
    info = act(rules, st, KNOCK_TRIS)
    assert info.knock[0] == cirulla.KnockKind.TRIS and info.seat[0] == 1
    assert st.knock_points[0].tolist() == [0, 10, 3]
    assert st.phase[0] == core.Phase.PLAY and st.current[0] == 2
    assert state_moves.move_actions(st, np.array([0]), np.zeros((1, d), bool)).tolist() == [0]
    # Playing a revealed card hides it again.
    act(rules, st, "2c")
    assert format_cards(st.revealed[0, 2]) == ["Ad", "3s"]


def test_stop_knock_and_knock_phase_has_no_moves():
    rules, st = cpos("cirulla", ["Ad 2c 3s", "Jd Qc Ks"], "Kd", dealer=1)
    st.phase[0] = core.Phase.KNOCK
    assert state_moves.legal_moves(rules, st, 0) == []
    a = state_moves.move_actions(st, np.array([0]), np.zeros((1, 40), bool))
    assert a.tolist() == [STOP]
    info = core.step(rules, st, a)
    assert info.acted[0] and info.knock[0] == 0 and st.knock_points[0].tolist() == [0, 0]
    assert not st.revealed.any() and st.phase[0] == core.Phase.PLAY and st.current[0] == 0  # dealer 1: seat 0 plays


def test_knock_points_are_hand_points():
    # Side 0 knocked by sum this hand; its last card is the hand's last play.
    rules, st = cpos("cirulla", ["2d", ""], "Kc Qs", stock="", last_capturer=1)
    st.knock_points[0] = [3, 10]
    info = act(rules, st, "2d")
    pts = dict(zip(point_fields(rules), info.hand_points[0, 0].tolist(), strict=True))
    assert pts["knocks"] == 3 and pts["total"] == sum(v for k, v in pts.items() if k != "total")
    assert info.hand_points[0, 1, 7] == 10


# ------------------------------------------------------------------------------------------ deals and tables


def _table_take(table: list[int]) -> int:
    """Scope of the initial-table take: 15 -> 1, 30 -> 2, 7c standing for any value 1..10."""
    options = [sum(value(c) for c in table)]
    if 16 in table:
        options = [options[0] - 7 + x for x in range(1, 11)]
    return 1 if 15 in options else 2 if 30 in options else 0


def test_void_deals_and_initial_table_takes():
    rules = CIRULLA
    seeds = np.arange(600)
    st = core.reset(rules, seeds)
    first = shuffled_decks(st.seed, st.hand_no, np.zeros(seeds.size, dtype=np.int64), 40)
    aces = lambda decks: (decks[:, :4] % 10 == 0).sum(axis=1)  # noqa: E731
    void = aces(first) >= 2
    assert void.any() and (aces(st.deck) <= 1).all()
    assert (st.deck[~void] == first[~void]).all()
    for g in np.flatnonzero(void)[:20]:  # the same reshuffle as void_on_kings: attempts 1, 2, ... until no void
        attempt = 1
        while True:
            deck = shuffled_decks(st.seed[[g]], st.hand_no[[g]], np.array([attempt]), 40)[0]
            if aces(deck[None])[0] <= 1:
                break
            attempt += 1
        assert (st.deck[g] == deck).all()
    kinds = set()
    for g in range(seeds.size):
        table = st.deck[g, :4].tolist()
        scope = _table_take(table)
        assert st.table_take[g] == scope
        side = rules.seat_side[st.dealer[g]]
        if scope:
            kinds.add((scope, 16 in table))
            assert not st.table[g].any() and st.piles[g, side, table].all() and st.piles[g].sum() == 4
            assert st.scope[g, side] == scope and st.last_capturer[g] == side
        else:
            assert st.table[g, table].all() and not st.piles[g].any() and st.last_capturer[g] == -1
    assert {(1, False), (1, True)} <= kinds  # a plain 15 and one made with the matta


def test_thirty_takes_two_scope():
    # 30 needs the matta or four high cards: search seeds until both appear (deterministic).
    rules = CIRULLA
    st = core.reset(rules, np.arange(20_000))
    two = np.flatnonzero(st.table_take == 2)
    assert two.size
    g = int(two[0])
    assert _table_take(st.deck[g, :4].tolist()) == 2
    assert st.scope[g].max() == 2


def test_new_hand_reports_its_table_take_and_knocks_follow_every_deal():
    """Random games: the info reports each new hand's take, and every KNOCK decision is taken, in play order, by
    exactly the seats whose three cards qualify."""
    for rules in CIRULLA_VARIANTS.values():
        n = rules.num_players
        st = core.reset(rules, np.arange(20))
        rng = np.random.default_rng(1)
        seen_take = seen_knock = 0
        expected: dict[int, list[int]] = {}  # game -> seats still to decide this deal
        for _ in range(3000):
            if st.done.all():
                break
            for g in np.flatnonzero(st.phase == core.Phase.KNOCK):
                if g not in expected:  # a deal was just made: the qualifying seats, in play order
                    order = [(int(st.dealer[g]) + 1 + k) % n for k in range(n)]
                    hands = [np.flatnonzero(st.hands[g, s]).tolist() for s in order]
                    expected[g] = [s for s, h in zip(order, hands, strict=True) if knock_kinds(h)]
                assert st.current[g] == expected[g][0]
            mask = core.legal_action_mask(rules, st)
            knocking = st.phase == core.Phase.KNOCK
            for g in np.flatnonzero(knocking):
                kinds = knock_kinds(np.flatnonzero(st.hands[g, st.current[g]]).tolist())
                assert mask[g, 40:].tolist() == [True, "sum" in kinds, "tris" in kinds]
                assert not mask[g, :40].any()
            a = (rng.random(mask.shape) * mask).argmax(axis=1)
            before = st.copy()
            info = core.step(rules, st, a)
            seen_take += int((info.table_take > 0).sum())
            for g in np.flatnonzero(knocking):
                expected[g].pop(0)
                kind = int(a[g]) - 40
                assert info.knock[g] == kind
                seen_knock += kind > 0
                if kind:
                    side = rules.seat_side[before.current[g]]
                    assert st.knock_points[g, side] == before.knock_points[g, side] + (3, 10)[kind - 1]
                if not expected[g]:
                    del expected[g]
                    assert st.phase[g] == core.Phase.PLAY and st.current[g] == (st.dealer[g] + 1) % n
            for g in np.flatnonzero(info.new_hand):
                assert info.table_take[g] == st.table_take[g] == _table_take(st.deck[g, :4].tolist())
            for g in np.flatnonzero(info.move_done & (st.phase == core.Phase.PLAY)):
                hands = st.hands[g].sum(axis=1)
                if (hands == 3).all() and g not in expected:  # a deal with no knock: play starts at once
                    order = [(int(st.dealer[g]) + 1 + k) % n for k in range(n)]
                    assert not any(knock_kinds(np.flatnonzero(st.hands[g, s]).tolist()) for s in order)
        assert seen_take and seen_knock, rules.name


# ------------------------------------------------------------------------------------------ scoring


def _pile(cards: str) -> np.ndarray:
    p = np.zeros((1, 2, 40), dtype=bool)
    p[0, 0, parse_cards(cards)] = True
    return p


@pytest.mark.parametrize("length", range(3, 11))
def test_napoli_every_length(length):
    run = ["4d", "5d", "6d", "7d", "Jd", "Qd", "Kd"][: length - 3]
    points = score_hands(CIRULLA, _pile(" ".join(["Ad", "2d", "3d", *run])), np.zeros((1, 2), np.int16))
    pts = dict(zip(CIRULLA_POINT_FIELDS, points[0, 0].tolist(), strict=True))
    assert pts["napoli"] == length
    assert pts["grande"] == (5 if length == 10 else 0)  # Jd Qd Kd: grande as well, through the napoli
    assert pts["total"] == sum(v for k, v in pts.items() if k != "total")


def test_napoli_needs_the_three_and_stops_at_a_gap():
    zero = np.zeros((1, 2), np.int16)
    assert score_hands(CIRULLA, _pile("Ad 2d 4d 5d"), zero)[0, 0, 5] == 0
    assert score_hands(CIRULLA, _pile("Ad 2d 3d 4d 6d 7d"), zero)[0, 0, 5] == 4  # 5d missing: the run stops
    assert score_hands(CIRULLA, _pile("Ad 2d 3c"), zero)[0, 0, 5] == 0
    assert score_hands(CIRULLA, _pile("Jd Qd Kd"), zero)[0, 0, 6] == 5
    assert score_hands(CIRULLA, _pile("Jd Qd Kc"), zero)[0, 0, 6] == 0


def test_three_sides_strict_leader_and_knocks_field():
    rules = CIRULLA_VARIANTS["cirulla-3"]
    piles = np.zeros((1, 3, 40), dtype=bool)
    piles[0, 0, parse_cards("Ad 2d 3d 4c")] = True
    piles[0, 1, parse_cards("5d 6d 7d 4s")] = True  # three coins each: denari tied, nobody scores it
    piles[0, 2, parse_cards("7c")] = True
    pts = score_hands(rules, piles, np.zeros((1, 3), np.int16), np.array([[0, 3, 10]], np.int16))
    by = [dict(zip(CIRULLA_POINT_FIELDS, p.tolist(), strict=True)) for p in pts[0]]
    assert [p["denari"] for p in by] == [0, 0, 0] and [p["carte"] for p in by] == [0, 0, 0]
    assert [p["settebello"] for p in by] == [0, 1, 0]
    assert [p["napoli"] for p in by] == [3, 0, 0] and [p["knocks"] for p in by] == [0, 3, 10]


def test_winner_at_51_and_tie_at_the_top_plays_on():
    # Last play: 2d laid; the table (Kc Qs) goes to side 0 with its pile: carte, denari, primiera, settebello.
    pile = "Ad 2c 3d 4d 5d 6d 7d Jd Qd Kd 7s 6s Ac 5c 6c As 3s 4s 5s 3c 4c 5b"
    rules, st = cpos("cirulla", ["2d", ""], "Kc Qs", piles=[pile, ""], stock="", last_capturer=0, scores=[40, 50])
    info = act(rules, st, "2d")
    gained = int(info.hand_points[0, 0, -1])
    assert gained >= 11 and info.match_over[0] and info.winner[0] == 0 and st.done[0]
    # The same hand from 51 - gained against 51: a tie at the top plays on.
    rules, st = cpos(
        "cirulla", ["2d", ""], "Kc Qs", piles=[pile, ""], stock="", last_capturer=0, scores=[51 - gained, 51]
    )
    info = act(rules, st, "2d")
    assert info.hand_over[0] and not info.match_over[0] and st.scores[0].tolist() == [51, 51]
    assert info.new_hand[0] and not st.done[0]


# ------------------------------------------------------------------------------------------ random games


def _random_play(rules: Rules, seeds: np.ndarray, seed: int, max_steps: int = 4000):
    st = core.reset(rules, seeds)
    rng = np.random.default_rng(seed)
    for _ in range(max_steps):
        if st.done.all():
            break
        mask = core.legal_action_mask(rules, st)
        a = (rng.random(mask.shape) * mask).argmax(axis=1)
        yield st, mask, a
        core.step(rules, st, a)


@pytest.mark.parametrize("variant", list(CIRULLA_VARIANTS))
def test_random_games_against_the_brute_force_rules(variant):
    """Every PLAY and CHOOSE position of random games: the core's moves and masks are the brute-force captures."""
    rules = CIRULLA_VARIANTS[variant]
    checked = stops = 0
    for st, mask, _ in _random_play(rules, np.arange(8), 3):
        lists = state_moves.legal_move_lists(rules, st)
        for g in range(st.batch_size):
            if st.phase[g] not in (core.Phase.PLAY, core.Phase.CHOOSE):
                continue
            table = np.flatnonzero(st.table[g]).tolist()
            if st.phase[g] == core.Phase.PLAY:
                cards = np.flatnonzero(st.hands[g, st.current[g]]).tolist()
                want = [(c, cap) for c in cards for cap in brute_captures(table, c) or [frozenset()]]
                assert mask[g, :40].tolist() == [c in cards for c in range(40)] and not mask[g, 40:].any()
            else:
                card, picked = int(st.pending[g]), frozenset(np.flatnonzero(st.picked[g]).tolist())
                want = [(card, cap) for cap in brute_captures(table, card) if picked <= cap]
                assert len(want) >= 2
                pickable = set().union(*(cap for _, cap in want)) - picked
                assert set(np.flatnonzero(mask[g, :40]).tolist()) == pickable
                assert mask[g, STOP] == (picked in {cap for _, cap in want})
                stops += int(mask[g, STOP])
                assert not mask[g, 41:].any()
            assert sorted(lists[g], key=lambda m: (m[0], sorted(m[1]))) == sorted(
                want, key=lambda m: (m[0], sorted(m[1]))
            )
            assert len(set(lists[g])) == len(lists[g])
            checked += 1
    assert checked > 500 and stops > 0


@pytest.mark.parametrize("variant", list(CIRULLA_VARIANTS))
def test_random_games_invariants(variant):
    rules = CIRULLA_VARIANTS[variant]
    seeds = np.arange(20)
    st = core.reset(rules, seeds)
    rng = np.random.default_rng(5)
    size = observation.observation_size(rules)
    while not st.done.all():
        mask = core.legal_action_mask(rules, st)
        assert mask.shape == (20, 43) and (mask.any(axis=1) | st.done).all()
        obs = observation.observe(rules, st)
        assert obs.shape == (20, size) and np.isfinite(obs).all()
        before = st.scores.copy()
        info = core.step(rules, st, (rng.random(mask.shape) * mask).argmax(axis=1))
        running = ~st.done | info.match_over
        # Every card is somewhere exactly once (hands, table, piles, stock).
        counts = st.hands.sum(axis=1) + st.table + st.piles.sum(axis=1)
        stock = np.zeros_like(counts)
        for g in range(20):
            stock[g, st.deck[g, st.stock_pos[g] :]] = 1
            if st.pending[g] >= 0:  # the card whose capture is being chosen
                stock[g, st.pending[g]] += 1
        assert (counts + stock == 1)[running & ~info.match_over].all()
        assert (st.revealed <= st.hands).all()
        h = np.flatnonzero(info.hand_over)
        if h.size:
            pts = info.hand_points[h]
            assert (pts[:, :, -1] == pts[:, :, :-1].sum(axis=2)).all()
            assert (info.final_scores[h] == before[h] + pts[:, :, -1]).all()
    assert (st.winner >= 0).all() and (st.scores.max(axis=1) >= 51).all()


def test_batch_equals_one_by_one():
    rules = CIRULLA_VARIANTS["cirulla-3"]
    seeds = np.arange(100, 112)
    st = core.reset(rules, seeds)
    singles = [core.reset(rules, seeds[[i]]) for i in range(seeds.size)]
    rng = np.random.default_rng(2)
    for _ in range(250):
        mask = core.legal_action_mask(rules, st)
        a = (rng.random(mask.shape) * mask).argmax(axis=1)
        info = core.step(rules, st, a, autoreset=True)
        for i, one in enumerate(singles):
            assert (core.legal_action_mask(rules, one)[0] == mask[i]).all()
            one_info = core.step(rules, one, a[[i]], autoreset=True)
            for name in ("move_done", "capture", "scopa", "knock", "table_take", "hand_points", "winner", "seat"):
                assert (getattr(one_info, name)[0] == getattr(info, name)[i]).all(), name
        for name in ("hands", "table", "piles", "revealed", "knock_points", "table_take", "scores", "phase"):
            got = np.concatenate([getattr(one, name) for one in singles])
            assert (got == getattr(st, name)).all(), name
        if _ % 50 == 0:
            np.testing.assert_array_equal(
                observation.observe(rules, st), np.concatenate([observation.observe(rules, one) for one in singles])
            )


# ------------------------------------------------------------------------------------------ the other variants


def test_other_variants_unchanged_by_cirulla():
    for rules in VARIANTS.values():
        if rules.name in CIRULLA_VARIANTS:
            assert rules is CIRULLA_VARIANTS[rules.name] and rules.cirulla
            continue
        assert rules.num_actions == rules.num_cards and not rules.cirulla
        assert observation.observation_version(rules) == observation.OBS_VERSION == 2
        assert point_fields(rules) == POINT_FIELDS
        names = [b[0] for b in observation.observation_layout(rules)]
        assert names[-1] == "plays" and "revealed" not in names
    for rules in CIRULLA_VARIANTS.values():
        assert rules.num_actions == 43 and observation.observation_version(rules) == 3
        blocks = [b[0] for b in observation.observation_layout(rules)]
        assert blocks[-4:] == [
            "revealed",
            "knocks",
            "knocking",
            "fifteens",
        ]
    assert core.stop_action(CIRULLA) == STOP
    assert core.knock_sum_action(CIRULLA) == KNOCK_SUM and core.knock_tris_action(CIRULLA) == KNOCK_TRIS


def test_state_built_without_the_cirulla_fields():
    st = core.reset(CIRULLA, np.arange(3))
    old = {f: getattr(st, f) for f in ("hands", "table", "piles", "deck", "stock_pos", "current", "dealer")}
    rest = ("phase", "pending", "picked", "last_capturer", "scope", "scores", "hand_no", "deal_no", "seed")
    built = core.State(**old, **{f: getattr(st, f) for f in (*rest, "winner", "rules_key")})
    assert built.revealed.shape == (3, 2, 40) and built.knock_points.shape == (3, 2) and built.table_take.shape == (3,)
    both = core.State.concat([st, built])
    assert both.batch_size == 6 and both.take([0, 4]).revealed.shape == (2, 2, 40)
