"""The one move enumerator (``scopa_env.rules.moves``, ``state_moves.move_classes``) against the reference engine, the
oracle.

On random positions of every variant (PLAY and CHOOSE phases, reached by random legal play from ``core.reset``) and
on random tables (any cards, any picked subset of a legal capture), the classes expanded into every suit choice
are exactly the reference's legal moves; the plies left in the hand / the last play / the open book match a direct
count; ``features.generate_moves`` lists one legal candidate per (card, rank multiset) class. Hand-built positions
draw the table in a comment.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from agents.baselines.features import Moves, card_weights, generate_moves
from scopa_env.engine import core, state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.oracle import reference
from scopa_env.rules import CIRULLA_VARIANTS, Rules, get_rules
from scopa_env.rules.cards import format_cards, parse_card, parse_cards
from scopa_env.rules.moves import MoveClasses, MoveKind, enumerate_moves, expand_captures, move_tables
from tests.helpers import SCOPA_VARIANTS, position

Move = tuple[int, frozenset[int]]


def _random_positions(rules: Rules, games: int, steps: int, seed: int) -> Iterator[State]:
    """Copies of ``games`` games played at random (one legal action a step, finished matches restarted)."""
    rng = np.random.default_rng(seed)
    st = core.reset(rules, np.arange(seed * 100, seed * 100 + games))
    for _ in range(steps):
        yield st.copy()
        mask = core.legal_action_mask(rules, st)
        core.step(rules, st, (rng.random(mask.shape) * mask).argmax(axis=1), autoreset=True)


def _reference_moves(rules: Rules, st: State, g: int) -> list[Move]:
    """The reference's legal moves of game ``g`` (in the CHOOSE phase: the pending card's captures that hold the
    cards picked so far), sorted by card, then by the sorted captured cards."""
    table = np.flatnonzero(st.table[g]).tolist()
    if st.phase[g] == Phase.CHOOSE:
        card, picked = int(st.pending[g]), frozenset(np.flatnonzero(st.picked[g]).tolist())
        return [(card, cap) for cap in reference.captures(rules, table, card) if picked <= cap]
    moves: list[Move] = []
    for card in np.flatnonzero(st.hands[g, st.current[g]]).tolist():
        moves += [(card, cap) for cap in reference.captures(rules, table, card) or [frozenset()]]
    return sorted(moves, key=lambda m: (m[0], sorted(m[1])))


def _expanded(rules: Rules, st: State, games: np.ndarray) -> tuple[MoveClasses, list[list[Move]], np.ndarray]:
    """Every game's classes expanded into ``(card, captured)`` moves (in class order), and each move's class."""
    classes = state_moves.move_classes(rules, st, games)
    index, captured = expand_captures(rules, classes, st.table[games], st.picked[games])
    out: list[list[Move]] = [[] for _ in games]
    for i, cap in zip(index.tolist(), captured, strict=True):
        out[classes.row[i]].append((int(classes.card[i]), frozenset(np.flatnonzero(cap).tolist())))
    return classes, out, index


def _check_class(rules: Rules, st: State, g: int, classes: MoveClasses, i: int, cap: frozenset[int]) -> None:
    """Class ``i`` (of game ``g``) describes the captured set ``cap``: kind, rank multiset, cards taken, scopa."""
    rank, kind = rules.deck.rank, MoveKind(int(classes.kind[i]))
    card, table = int(classes.card[i]), frozenset(np.flatnonzero(st.table[g]).tolist())
    assert int(classes.num_taken[i]) == len(cap)
    if kind == MoveKind.LAY:
        assert not cap
    elif kind == MoveKind.EQUAL:
        assert len(cap) == 1 and rank[next(iter(cap))] == rank[card]
    elif kind == MoveKind.ACE_ALL:
        assert cap == table and rules.ace_takes_all and rank[card] == 0
    else:
        counts = np.bincount([rank[c] for c in cap], minlength=rules.deck.num_ranks)
        assert (counts == move_tables(rules).p_count[classes.part[i]]).all()
    last = state_moves.remaining_plies(rules, st, [g])[0] == 1
    sweep = bool(cap) and cap == table and not last and not reference.is_ace_sweep(rules, card, cap)
    assert bool(classes.scopa[i]) == sweep


@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_enumerator_matches_the_reference_on_random_positions(variant: str) -> None:
    rules = get_rules(variant)
    seen_choose = 0
    for st in _random_positions(rules, games=16, steps=40, seed=3):
        live = np.flatnonzero(st.phase != Phase.DONE)
        classes, expanded, index = _expanded(rules, st, live)
        lists = state_moves.legal_move_lists(rules, st, live)
        for a, g in enumerate(live.tolist()):
            want = _reference_moves(rules, st, g)
            got = expanded[a]
            assert len(got) == len(set(got)), f"{variant}: a move is listed twice in game {g}"
            assert set(got) == set(want), f"{variant}: game {g}: {got} != reference {want}"
            assert lists[a] == want  # same moves, same order
            for i, move in zip(np.flatnonzero(classes.row[index] == a).tolist(), got, strict=True):
                _check_class(rules, st, g, classes, int(index[i]), move[1])
            seen_choose += int(st.phase[g] == Phase.CHOOSE)
    assert seen_choose > 0, "the random games never reached the CHOOSE phase; the test lost its CHOOSE cases"


def _enumerator_matches_the_reference_on_random_tables(rules: Rules, seed: int, n: int, stop: bool) -> None:
    """``n`` random tables (up to 14 cards), a random card to play on each and, on every other one, a random part of
    one of its legal captures already picked (the whole capture too where ``stop``: cirulla's ``stop`` action ends a
    pick): ``enumerate_moves`` and ``expand_captures`` list exactly the reference's captures that hold the picked
    cards."""
    d, r = rules.num_cards, rules.deck.num_ranks
    rng = np.random.default_rng(seed)
    tables = np.zeros((n, d), dtype=np.bool_)
    playable = np.zeros((n, d), dtype=np.bool_)
    picked = np.zeros((n, d), dtype=np.bool_)
    for i in range(n):
        cards = rng.permutation(d)[: 1 + rng.integers(15)]
        playable[i, cards[0]] = True
        tables[i, cards[1:]] = True
        caps = reference.captures(rules, cards[1:].tolist(), int(cards[0]))
        if i % 2 and caps:  # a CHOOSE position: part of one legal capture is picked
            cap = sorted(caps[rng.integers(len(caps))])
            picked[i, cap[: rng.integers(len(cap) + int(stop))]] = True
    classes = enumerate_moves(rules, playable, tables.reshape(n, 4, r).sum(axis=1), picked.reshape(n, 4, r).sum(axis=1))
    index, captured = expand_captures(rules, classes, tables, picked)
    for i in range(n):
        card = int(np.flatnonzero(playable[i])[0])
        pick = frozenset(np.flatnonzero(picked[i]).tolist())
        want = {c for c in reference.captures(rules, np.flatnonzero(tables[i]).tolist(), card) or [frozenset()]}
        want = {c for c in want if pick <= c}
        got = [frozenset(np.flatnonzero(c).tolist()) for c in captured[classes.row[index] == i]]
        assert len(got) == len(set(got)) and set(got) == want, (rules.name, i, got, want)


@pytest.mark.parametrize("variant", ["classic", "scopa-d-assi", "simple-8"])
def test_enumerator_matches_the_reference_on_random_tables(variant: str) -> None:
    """Any table (up to 14 cards, more than play reaches), any card, and any picked part of a legal capture."""
    _enumerator_matches_the_reference_on_random_tables(get_rules(variant), seed=11, n=300, stop=False)


@pytest.mark.parametrize("variant", ["classic", "scopone-scientifico", "simple-5"])
def test_remaining_plies_last_play_and_open_book_match_a_direct_count(variant: str) -> None:
    rules = get_rules(variant)
    ended_checked = 0
    for st in _random_positions(rules, games=16, steps=60, seed=5):
        left = state_moves.remaining_plies(rules, st)
        last = state_moves.is_last_play(rules, st)
        opened = state_moves.is_open(rules, st)
        for g in range(st.batch_size):
            stock_empty = st.stock_pos[g] == rules.num_cards
            cards = int(st.hands[g].sum()) + int(st.phase[g] == Phase.CHOOSE)
            assert left[g] == (cards if stock_empty else state_moves.NO_END)
            assert last[g] == (stock_empty and cards == 1)
            others = [s for s in range(rules.num_players) if s != st.current[g] and st.hands[g, s].any()]
            assert opened[g] == (stock_empty and len(others) <= 1)
        # The last play ends the hand, and only the last play does.
        running = np.flatnonzero(st.phase == Phase.PLAY)
        after = st.take(running)
        info = core.step(rules, after, np.argmax(core.legal_action_mask(rules, after), axis=1))
        done = info.move_done
        assert (info.hand_over[done] == last[running][done]).all()
        ended_checked += int(info.hand_over.sum())
    assert ended_checked > 0, "no hand ended: the test lost its last-play cases"
    assert (state_moves.remaining_plies(rules, st, np.array([1, 0])) == left[[1, 0]]).all()
    with pytest.raises(ValueError, match="games must be indices"):
        state_moves.remaining_plies(rules, st, [st.batch_size])


@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_generated_moves_are_legal_and_cover_every_class(variant: str) -> None:
    """``generate_moves`` lists each (card, captured rank multiset) of the reference's moves exactly once."""
    rules = get_rules(variant)
    for st in _random_positions(rules, games=12, steps=30, seed=7):
        live = np.flatnonzero(st.phase != Phase.DONE)
        _one_move_a_class(rules, st, live, generate_moves(rules, st, live))


def _one_move_a_class(rules: Rules, st: State, live: np.ndarray, moves: Moves) -> None:
    """``moves`` (``generate_moves`` of games ``live``) lists only legal moves of the reference, one for each of its
    (card, captured rank multiset) classes."""
    rank = rules.deck.rank
    for a, g in enumerate(live.tolist()):
        legal = _reference_moves(rules, st, g)
        span = range(moves.starts[a], moves.starts[a + 1])
        gen = [(int(moves.card[i]), frozenset(np.flatnonzero(moves.capture[i]).tolist())) for i in span]
        assert set(gen) <= set(legal), f"{rules.name}: a candidate is not legal in game {g}"
        ranks = [(c, tuple(sorted(rank[x] for x in cap))) for c, cap in gen]
        assert len(ranks) == len(set(ranks)), f"{rules.name}: a class is listed twice in game {g}"
        assert set(ranks) == {(c, tuple(sorted(rank[x] for x in cap))) for c, cap in legal}


def test_one_sum_class_stands_for_every_choice_of_suits() -> None:
    # table: 2d 2c 3s 3c    hand: 5b  -> one class {2, 3}: four choices of suits
    rules, st = position("classic", ["5b Kd Kc", "Ks Kb Qd"], "2d 2c 3s 3c")
    classes = state_moves.move_classes(rules, st, [0])
    five = np.flatnonzero(classes.card == parse_card("5b"))
    assert five.size == 1 and classes.kind[five[0]] == MoveKind.SUM and classes.num_taken[five[0]] == 2
    want = [frozenset(parse_cards(s)) for s in ("2d 3s", "2d 3c", "2c 3s", "2c 3c")]
    assert state_moves.enumerate_captures(rules, parse_cards("2d 2c 3s 3c"), parse_card("5b")) == sorted(
        want, key=sorted
    )
    moves = generate_moves(rules, st, [0])  # one candidate, taking the coin (the best suit) of the twos
    i = int(np.flatnonzero(moves.card == parse_card("5b"))[0])
    assert set(format_cards(np.flatnonzero(moves.capture[i]))) == {"2d", "3c"}
    assert moves.gain[i] == pytest.approx(card_weights(rules)[parse_cards("5b 2d 3c")].sum())
    # Play the five, then pick the 2c: 2c + 3s and 2c + 3c are left, still one class.
    core.step(rules, st, np.array([parse_card("5b")]))
    core.step(rules, st, np.array([parse_card("2c")]))
    assert st.phase[0] == Phase.CHOOSE
    classes = state_moves.move_classes(rules, st, [0])
    assert len(classes) == 1 and classes.kind[0] == MoveKind.SUM
    five = parse_card("5b")
    assert state_moves.legal_moves(rules, st, 0) == [(five, want[3]), (five, want[2])]  # 2c 3c (ids 11, 12) first


def test_sum_classes_of_a_seven() -> None:
    # table: Ad 6c 2s 5b 3d 4c   hand: 7c -> {6,A} {5,2} {4,3} {4,2,A}: four classes, one set each
    rules, st = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "Ad 6c 2s 5b 3d 4c")
    classes = state_moves.move_classes(rules, st, [0])
    seven = np.flatnonzero(classes.card == parse_card("7c"))
    assert (classes.kind[seven] == MoveKind.SUM).all() and seven.size == 4
    assert classes.num_taken[seven].tolist() == [2, 2, 2, 3]
    want = {frozenset(parse_cards(s)) for s in ("Ad 6c", "2s 5b", "3d 4c", "Ad 2s 4c")}
    assert {cap for card, cap in state_moves.legal_moves(rules, st, 0) if card == parse_card("7c")} == want
    assert not classes.scopa.any()  # the table adds up to 21: no card takes it all


def test_ace_takes_all_and_equal_rank_first() -> None:
    # scopa d'assi. table: 3d 5c   hand: Ab 3s -> the ace sweeps (never a scopa); the 3s takes the 3d
    rules, st = position("scopa-d-assi", ["Ab 3s", "Ks Kb"], "3d 5c")
    classes = state_moves.move_classes(rules, st, [0])
    by_card = dict(
        zip(format_cards(classes.card), zip(classes.kind.tolist(), classes.scopa.tolist(), strict=True), strict=True)
    )
    assert by_card == {"Ab": (MoveKind.ACE_ALL, False), "3s": (MoveKind.EQUAL, False)}
    # table: Ad 2c   hand: Ab Ks -> with an ace on the table the ace takes it (equal rank); the king is laid
    rules, st = position("scopa-d-assi", ["Ab Ks", "Kc Kb"], "Ad 2c")
    classes = state_moves.move_classes(rules, st, [0])
    assert dict(zip(format_cards(classes.card), classes.kind.tolist(), strict=True)) == {
        "Ab": MoveKind.EQUAL,
        "Ks": MoveKind.LAY,
    }
    assert (parse_card("Ab"), frozenset([parse_card("Ad")])) in state_moves.legal_moves(rules, st, 0)


def test_last_play_sweep_is_not_a_scopa_and_done_games_have_no_classes() -> None:
    # table: 3d     hand: 3s, the very last card of the hand
    rules = get_rules("classic")
    rest = [c for c in range(40) if c not in parse_cards("3d 3s")]
    _, st = position("classic", ["3s", ""], "3d", piles=[" ".join(format_cards(rest))])
    assert state_moves.is_last_play(rules, st).tolist() == [True] and state_moves.remaining_plies(
        rules, st
    ).tolist() == [1]
    classes = state_moves.move_classes(rules, st)
    assert classes.kind.tolist() == [MoveKind.EQUAL] and not classes.scopa[0] and classes.last_play[0]
    st.phase[0] = Phase.DONE
    classes = state_moves.move_classes(rules, st)
    assert len(classes) == 0 and classes.starts.tolist() == [0, 0]
    assert state_moves.legal_moves(rules, st, 0) == [] and state_moves.legal_move_lists(rules, st) == [[]]


def test_the_core_move_functions_check_their_arguments() -> None:
    st = core.reset("classic", [0, 1])
    with pytest.raises(ValueError, match="started under 'classic'"):
        state_moves.move_classes("scopa-d-assi", st)
    with pytest.raises(ValueError, match=r"games must be indices 0\.\.1"):
        state_moves.legal_move_lists("classic", st, [2])
    with pytest.raises(TypeError, match="games must be integer indices"):
        state_moves.is_open("classic", st, [0.5])
    assert (
        state_moves.move_classes("classic", st).starts.size == 3
        and len(state_moves.legal_move_lists("classic", st)) == 2
    )


# ------------------------------------------------------------------------------------------------------- cirulla


@pytest.mark.parametrize("variant", list(CIRULLA_VARIANTS))
def test_cirulla_enumerator_matches_the_reference_on_random_positions(variant: str) -> None:
    """Cirulla (fifteens beside equal rank and sums, ace takes all): every PLAY and CHOOSE position of random games
    (KNOCK decisions have no moves); each FIFTEEN class takes a multiset adding up to 15 with the card."""
    rules = CIRULLA_VARIANTS[variant]
    kinds: set[int] = set()
    for st in _random_positions(rules, games=12, steps=60, seed=3):
        live = np.flatnonzero((st.phase == Phase.PLAY) | (st.phase == Phase.CHOOSE))
        classes, expanded, index = _expanded(rules, st, live)
        lists = state_moves.legal_move_lists(rules, st, live)
        for a, g in enumerate(live.tolist()):
            want = _reference_moves(rules, st, g)
            got = expanded[a]
            assert len(got) == len(set(got)) and set(got) == set(want), f"{variant}: game {g}: {got} != {want}"
            assert lists[a] == want
            for i, move in zip(np.flatnonzero(classes.row[index] == a).tolist(), got, strict=True):
                c = int(index[i])
                _check_class(rules, st, g, classes, c, move[1])
                kinds.add(int(classes.kind[c]))
                if classes.kind[c] == MoveKind.FIFTEEN:
                    assert sum(rules.deck.value[[classes.card[c], *move[1]]]) == 15
        knocking = np.flatnonzero(st.phase == Phase.KNOCK)
        assert all(lists == [] for lists in state_moves.legal_move_lists(rules, st, knocking))
    assert kinds == {int(k) for k in MoveKind}, f"{variant}: some move kind never came up"


def test_cirulla_enumerator_matches_the_reference_on_random_tables() -> None:
    """Any table (up to 14 cards), any card, any picked part of a legal capture (equal, sum, fifteen, ace)."""
    _enumerator_matches_the_reference_on_random_tables(CIRULLA_VARIANTS["cirulla"], seed=12, n=400, stop=True)


def test_cirulla_generated_moves_are_legal_and_cover_every_class() -> None:
    """``features.generate_moves`` sees cirulla's captures: one legal candidate per (card, rank multiset)."""
    rules = CIRULLA_VARIANTS["cirulla"]
    fifteens = 0
    for st in _random_positions(rules, games=12, steps=40, seed=7):
        live = np.flatnonzero((st.phase == Phase.PLAY) | (st.phase == Phase.CHOOSE))
        moves = generate_moves(rules, st, live)
        fifteens += int((moves.kind == MoveKind.FIFTEEN).sum())
        _one_move_a_class(rules, st, live, moves)
    assert fifteens > 0


def test_fifteen_classes_beside_equal_rank() -> None:
    # table: 5d 2s 3b       hand: 5c -> EQUAL {5d} and FIFTEEN {5, 3, 2} (5 + 5 + 3 + 2)
    rules = CIRULLA_VARIANTS["cirulla"]
    d, r = rules.num_cards, rules.deck.num_ranks
    table = np.zeros((1, d), dtype=np.bool_)
    table[0, parse_cards("5d 2s 3b")] = True
    playable = np.zeros((1, d), dtype=np.bool_)
    playable[0, parse_card("5c")] = True
    classes = enumerate_moves(rules, playable, table.reshape(1, 4, r).sum(axis=1))
    assert [MoveKind(k).name for k in classes.kind] == ["EQUAL", "FIFTEEN"]
    assert classes.num_taken.tolist() == [1, 3] and classes.scopa.tolist() == [False, True]
    # With 2s picked, only the fifteen can hold it.
    picked = np.zeros((1, d), dtype=np.bool_)
    picked[0, parse_card("2s")] = True
    classes = enumerate_moves(rules, playable, table.reshape(1, 4, r).sum(axis=1), picked.reshape(1, 4, r).sum(axis=1))
    assert [MoveKind(k).name for k in classes.kind] == ["FIFTEEN"]
    # Classic rules: no fifteen (and move tables without the fifteens).
    classic = get_rules("classic")
    assert [MoveKind(k).name for k in enumerate_moves(classic, playable, table.reshape(1, 4, r).sum(axis=1)).kind] == [
        "EQUAL"
    ]
    assert move_tables(classic).p_count.shape[0] == move_tables(classic).num_sum_parts
