"""Tests of the plain reference engine (scopa_env/oracle/reference.py) against RULES.md.

Hand-built positions draw the table in a comment; random games check invariants and round-trip their records
through the record checker (``scopa_env.oracle.record_check.replay_record``, which replays them on this engine);
tampered records must be rejected with a message that says what is wrong.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import numpy as np
import pytest

from scopa_env.oracle.record_check import RecordError, replay_record
from scopa_env.oracle.reference import ReferenceGame, captures, deal_schedule, is_void_table
from scopa_env.oracle.reference_scoring import match_winner, score_hand
from scopa_env.rules import VARIANTS, Rules, get_rules
from scopa_env.rules.cards import DECK52, Deck, format_card, parse_card, parse_cards
from scopa_env.rules.shuffle import first_dealer, shuffled_decks
from tests.helpers import SCOPA_VARIANTS, reference_position

CLASSIC = get_rules("classic")
ASSI = get_rules("scopa-d-assi")
RANDOM_GAMES = 25  # the default suite's (as test_reference_cirulla's); the slow differential plays 10,000 a variant
"""Random matches per variant for the invariant test."""
REPLAYED_GAMES = 10
"""Random matches per variant whose records go through ``replay_record``."""


def card(text: str, deck: Deck = CLASSIC.deck) -> int:
    return parse_card(text, deck)


def cards(text: str, deck: Deck = CLASSIC.deck) -> frozenset[int]:
    return frozenset(parse_cards(text, deck))


def suit(letter: str) -> frozenset[int]:
    """All ten cards of one suit of the 40-card deck."""
    return cards(" ".join(r + letter for r in "A234567JQK"))


# --------------------------------------------------------------------------------------------------------------
# Captures (RULES.md section 3).


def test_equal_rank_beats_sum() -> None:
    # table: 5c 3d 2s    play 5d: the 5c must be taken, never 3d+2s
    assert captures(CLASSIC, cards("5c 3d 2s"), card("5d")) == [cards("5c")]


def test_choice_among_equal_ranks() -> None:
    # table: 5c 5s 2b    play 5d: either five, alone
    assert captures(CLASSIC, cards("5c 5s 2b"), card("5d")) == [cards("5c"), cards("5s")]
    for taken in ("5c", "5s"):
        game = reference_position("classic", ["5d Kb", "Ac"], "5c 5s 2b")
        assert (card("5d"), cards(taken)) in game.legal_moves()
        result = game.play(card("5d"), cards(taken))
        assert result["capture"] == cards(taken)
        assert game.table == cards("5c 5s 2b") - cards(taken)
        assert game.piles[0] == cards(taken) | {card("5d")}


def test_choice_among_sums() -> None:
    # table: Ad 2c 4s 3b 6b    play 7d: A+6, 4+3 or A+2+4
    got = captures(CLASSIC, cards("Ad 2c 4s 3b 6b"), card("7d"))
    assert sorted(got, key=sorted) == sorted([cards("Ad 6b"), cards("4s 3b"), cards("Ad 2c 4s")], key=sorted)
    assert got == sorted(got, key=lambda c: tuple(sorted(c)))


def test_forced_capture() -> None:
    # table: 2c 3s    hand 5d Kb: the 5d must take 2c+3s, it may not be laid; the king is laid
    game = reference_position("classic", ["5d Kb", "Ac"], "2c 3s")
    assert game.legal_moves() == [(card("5d"), cards("2c 3s")), (card("Kb"), frozenset())]
    with pytest.raises(ValueError, match=r"illegal move for seat 0: 5d laid.*legal moves: 5d takes 2c\+3s, Kb laid"):
        game.play(card("5d"))
    with pytest.raises(ValueError, match="illegal move"):
        game.play(card("Ac"))  # not in seat 0's hand


def test_lay() -> None:
    # table: 2c 3s    play Kb: nothing adds up to 10 -> laid
    assert captures(CLASSIC, cards("2c 3s"), card("Kb")) == []
    assert captures(CLASSIC, set(), card("Kb")) == []
    game = reference_position("classic", ["Kb 5d", "Ac"], "2c 3s")
    result = game.play(card("Kb"))
    assert result["capture"] == frozenset() and not result["scopa"]
    assert game.table == cards("2c 3s Kb") and game.current == 1


def test_scopa() -> None:
    # table: 4c 3s    seat 0 plays 7d taking both: the table is empty and cards remain to be played -> scopa
    game = reference_position("classic", ["7d Kb", "Ac"], "4c 3s")
    result = game.play(card("7d"), cards("4c 3s"))
    assert result["scopa"] and game.scope == [1, 0] and game.last_capturer == 0
    assert game.records[-1]["moves"][-1] == {"seat": 0, "card": "7d", "capture": ["4c", "3s"], "scopa": True}


def test_last_card_of_a_deal_can_be_a_scopa() -> None:
    # table: 4c 3s    seat 0 plays the last card of deal 4 of 6: a scopa, then deal 5 is dealt
    stock = sorted(cards("Ab 2b 3b 4b 5b 6b"))
    game = reference_position("classic", ["7d", ""], "4c 3s", stock="Ab 2b 3b 4b 5b 6b", deal_no=4)
    game.dealer = 1
    result = game.play(card("7d"), cards("4c 3s"))
    assert result["scopa"] and not result["hand_over"]
    assert game.deal_no == 5 and game.stock == []
    assert game.hands == [set(stock[:3]), set(stock[3:])]  # seat 0 (after the dealer) gets the first packet


def test_last_play_is_never_a_scopa() -> None:
    # table: 4c 3s    seat 0 plays the very last card of the hand, 7d, clearing the table: not a scopa
    game = reference_position("classic", ["7d", ""], "4c 3s")
    result = game.play(card("7d"), cards("4c 3s"))
    assert result["hand_over"] and not result["scopa"]
    assert result["hand_points"][0]["scope"] == 0
    assert result["leftover"] == (None, frozenset())
    assert game.records[0]["moves"][-1]["scopa"] is False
    assert game.records[0]["leftover"] == {"side": None, "cards": []}


def test_leftover_goes_to_last_capturer() -> None:
    # table: 5c 3d 4s    seat 0 plays Jb taking 5c+3d (8); seat 1 lays 2c, the last card: 4s 2c go to side 0
    game = reference_position("classic", ["Jb", "2c"], "5c 3d 4s")
    game.play(card("Jb"), cards("5c 3d"))
    result = game.play(card("2c"))
    assert result["hand_over"] and not result["scopa"]
    assert result["leftover"] == (0, cards("2c 4s"))
    assert game.records[0]["leftover"] == {"side": 0, "cards": ["2c", "4s"]}
    assert [p["carte"] for p in result["hand_points"]] == [0, 0]  # 5 cards is far from 21


def test_leftover_goes_to_nobody_without_captures() -> None:
    # table: 5c    seat 0 lays Kb, seat 1 lays 2c: nobody captured in the hand, 5c Kb 2c go to nobody
    game = reference_position("classic", ["Kb", "2c"], "5c")
    game.play(card("Kb"))
    result = game.play(card("2c"))
    assert result["leftover"] == (None, cards("5c Kb 2c"))
    assert game.records[0]["leftover"] == {"side": None, "cards": ["2c", "5c", "Kb"]}
    assert all(p["total"] == 0 for p in result["hand_points"])


# --------------------------------------------------------------------------------------------------------------
# Scopa d'assi (RULES.md section 6).


def test_ace_takes_all_without_ace_on_table() -> None:
    # table: 5c 3d Ks    play Ab: no ace on the table, so the ace takes all three; not a scopa
    assert captures(ASSI, cards("5c 3d Ks"), card("Ab")) == [cards("5c 3d Ks")]
    assert captures(CLASSIC, cards("5c 3d Ks"), card("Ab")) == []  # classic: the ace is laid
    game = reference_position("scopa-d-assi", ["Ab Kb", "Ac"], "5c 3d Ks")
    assert game.legal_moves()[0] == (card("Ab"), cards("5c 3d Ks"))
    result = game.play(card("Ab"), cards("5c 3d Ks"))
    assert not result["scopa"] and game.table == set() and game.scope == [0, 0]
    assert game.piles[0] == cards("Ab 5c 3d Ks") and game.last_capturer == 0


def test_ace_with_ace_on_table_takes_one_ace() -> None:
    # table: As Ac 4d    play Ab: equal rank, one ace of the player's choice, never the whole table
    assert captures(ASSI, cards("As Ac 4d"), card("Ab")) == [cards("Ac"), cards("As")]
    # table: As    play Ab: taking the only ace clears the table, which is an ordinary scopa
    game = reference_position("scopa-d-assi", ["Ab Kb", "Ac"], "As")
    assert game.play(card("Ab"), cards("As"))["scopa"]


def test_ace_on_empty_table_is_laid() -> None:
    # table: (empty)    play Ab: laid
    assert captures(ASSI, set(), card("Ab")) == []
    game = reference_position("scopa-d-assi", ["Ab Kb", "Ac"], "")
    game.play(card("Ab"))
    assert game.table == cards("Ab")


# --------------------------------------------------------------------------------------------------------------
# Scoring a hand (RULES.md section 4).


def points(rules: Rules, piles: list[frozenset[int]], scope: list[int] | None = None) -> dict[str, list[int]]:
    """score_hand regrouped by category: ``{"carte": [side0, side1, ...], ...}``."""
    scored = score_hand(rules, piles, scope or [0] * len(piles))
    return {key: [p[key] for p in scored] for key in scored[0]}


def test_carte() -> None:
    coins_cups, swords_clubs = suit("d") | suit("c"), suit("s") | suit("b")
    ace = card("As")
    assert points(CLASSIC, [coins_cups | {ace}, swords_clubs - {ace}])["carte"] == [1, 0]  # 21 vs 19
    assert points(CLASSIC, [coins_cups, swords_clubs])["carte"] == [0, 0]  # 20-20: nobody
    # 20 vs 19 (one card left to nobody): more, but not more than half the deck -> nobody
    assert points(CLASSIC, [coins_cups, swords_clubs - {ace}])["carte"] == [0, 0]
    # three sides: no majority needed, strictly most wins
    simple3 = get_rules("simple-3")
    assert points(simple3, [suit("d") | suit("c"), suit("s"), suit("b")])["carte"] == [1, 0, 0]
    assert points(simple3, [suit("d"), suit("s"), suit("b")])["carte"] == [0, 0, 0]


def test_denari() -> None:
    six, rest = cards("Ad 2d 3d 4d 5d 6d"), cards("7d Jd Qd Kd")
    assert points(CLASSIC, [six, rest])["denari"] == [1, 0]
    assert points(CLASSIC, [six - {card("6d")}, rest | {card("6d")}])["denari"] == [0, 0]  # 5-5
    assert points(CLASSIC, [six - {card("6d")}, rest])["denari"] == [0, 0]  # 5 vs 4 (6d to nobody): 6 needed
    assert points(get_rules("simple-3"), [six - {card("6d")}, rest, cards("6d")])["denari"] == [1, 0, 0]


def test_settebello() -> None:
    assert points(CLASSIC, [cards("Ac"), cards("7d")])["settebello"] == [0, 1]
    assert points(CLASSIC, [cards("Ac"), cards("7c")])["settebello"] == [0, 0]


def test_primiera() -> None:
    sevens, sixes = cards("7d 7c 7s 7b"), cards("6d 6c 6s 6b")
    assert points(CLASSIC, [sevens, sixes])["primiera"] == [1, 0]  # 84 vs 72
    assert points(CLASSIC, [cards("7d 6c 7s 6b"), cards("6d 7c 6s 7b")])["primiera"] == [0, 0]  # 78-78
    # best card per suit only: Kd 7d | Qc 6c | As 2s | 5b = 21+18+16+15 = 70; 6d | Ac | 6s | 6b = 18+16+18+18 = 70
    assert points(CLASSIC, [cards("Kd 7d Qc 6c As 2s 5b"), cards("6d Ac 6s 6b")])["primiera"] == [0, 0]
    assert points(CLASSIC, [cards("Kd 7d Qc 6c As 2s 6b"), cards("6d Ac 6s 5b")])["primiera"] == [1, 0]


def test_primiera_missing_suit_cannot_win() -> None:
    # 7d 7c 7s (no clubs) against the poor but complete Jd Jc Js 2b (10+10+10+12)
    assert points(CLASSIC, [cards("7d 7c 7s"), cards("Jd Jc Js 2b")])["primiera"] == [0, 1]
    # both miss a suit: nobody
    assert points(CLASSIC, [suit("d") | suit("c"), suit("s") | suit("b")])["primiera"] == [0, 0]


def test_simple_primiera_counts_sevens() -> None:
    simple2 = get_rules("simple-2")
    # two sevens beat a complete primiera hand of aces and sixes
    assert points(simple2, [cards("7d 7c"), cards("Ad Ac As Ab 6d 6c 6s 6b 7b")])["primiera"] == [1, 0]
    assert points(simple2, [cards("7d 7c"), cards("7s 7b")])["primiera"] == [0, 0]  # 2-2: nobody
    assert points(simple2, [cards("Ad"), cards("Ac")])["primiera"] == [0, 0]  # no sevens at all


def test_scope_and_total() -> None:
    scored = score_hand(CLASSIC, [suit("d") | suit("c") | {card("As")}, suit("s") | suit("b") - {card("As")}], [2, 3])
    assert scored[0] == {"carte": 1, "denari": 1, "settebello": 1, "primiera": 0, "scope": 2, "total": 5}
    assert scored[1] == {"carte": 0, "denari": 0, "settebello": 0, "primiera": 0, "scope": 3, "total": 3}


def test_shared_lead_in_simple_8() -> None:
    simple8 = get_rules("simple-8")
    assert simple8.shared_lead_scores
    empty: frozenset[int] = frozenset()
    piles = [cards("7d 7c", DECK52), cards("7s 7b", DECK52)] + [empty] * 6
    got = points(simple8, piles)
    assert got["carte"] == [1, 1, 0, 0, 0, 0, 0, 0]  # 2-2 at the top: both score
    assert got["primiera"] == [1, 1, 0, 0, 0, 0, 0, 0]  # two sevens each
    assert got["denari"] == [1, 0, 0, 0, 0, 0, 0, 0]
    assert got["settebello"] == [1, 0, 0, 0, 0, 0, 0, 0]
    # with nothing captured nobody scores, though everyone shares the top value 0
    assert points(simple8, [empty] * 8) == {key: [0] * 8 for key in got}
    # the same tie without shared_lead_scores gives nobody the point
    simple4 = get_rules("simple-4")
    assert points(simple4, [cards("7d 7c"), cards("7s 7b"), empty, empty])["carte"] == [0, 0, 0, 0]


# --------------------------------------------------------------------------------------------------------------
# Winning (RULES.md section 5).


def test_match_winner() -> None:
    assert match_winner(CLASSIC, [10, 9]) is None  # nobody reached 11
    assert match_winner(CLASSIC, [11, 9]) == 0
    assert match_winner(CLASSIC, [11, 11]) is None  # shared top: play on
    assert match_winner(CLASSIC, [12, 14]) == 1  # both over the target: the higher wins
    assert match_winner(CLASSIC, [13, 12]) == 0
    assert match_winner(get_rules("simple-3"), [11, 11, 5]) is None
    assert match_winner(get_rules("simple-8"), [15, 0, 0, 0, 0, 0, 0, 0]) is None  # simple-8 plays to 16


def test_match_ends_and_plays_on() -> None:
    # the last play of a hand: seat 0 lays Kb; side 0 already has 10, the hand gives it the settebello -> 11
    game = reference_position("classic", ["Kb", ""], "5c")
    game.piles[0] = set(cards("7d"))
    game.scores = [10, 4]
    result = game.play(card("Kb"))
    assert result["match_over"] and result["winner"] == 0 and game.done and game.winner == 0
    assert game.scores == [11, 4] and game.legal_moves() == []
    with pytest.raises(ValueError, match="the match is over"):
        game.play(card("Kb"))
    # the same hand with side 1 also on 11: a shared top, another hand is dealt
    game = reference_position("classic", ["Kb", ""], "5c")
    game.piles[0] = set(cards("7d"))
    game.scores = [10, 11]
    dealer = game.dealer
    result = game.play(card("Kb"))
    assert not result["match_over"] and not game.done and game.hand_no == 1
    assert game.dealer == (dealer + 1) % 2 and game.current == (game.dealer + 1) % 2


# --------------------------------------------------------------------------------------------------------------
# Dealing (RULES.md section 2, shuffle.py's convention).


def test_first_dealer_and_dealing_convention() -> None:
    for seed in range(5):
        game = ReferenceGame("classic", seed)
        deck = [int(c) for c in shuffled_decks([seed], [0], [0], 40)[0]]
        dealer = int(first_dealer([seed], 2)[0])
        first = (dealer + 1) % 2
        assert game.dealer == dealer and game.current == first and game.attempt == 0
        assert game.table == set(deck[:4])
        assert game.hands[first] == set(deck[4:7]) and game.hands[dealer] == set(deck[7:10])
        assert game.stock == deck[10:]


@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_deal_schedule(variant: str) -> None:
    rules = VARIANTS[variant]
    for seed in range(3):
        game = ReferenceGame(rules, seed)
        rng = random.Random(seed)
        assert len(game.table) == rules.table_cards
        sizes = [len(game.hands[0])]
        assert [len(h) for h in game.hands] == [rules.deal_sizes[0]] * rules.num_players
        assert len(game.stock) == rules.num_cards - rules.table_cards - rules.num_players * rules.deal_sizes[0]
        while game.hand_no == 0:
            deal_no = game.deal_no
            game.play(*rng.choice(game.legal_moves()))
            if game.hand_no == 0 and game.deal_no != deal_no:
                assert len(set(map(len, game.hands))) == 1  # everyone gets the same packet
                sizes.append(len(game.hands[0]))
        assert tuple(sizes) == rules.deal_sizes
        assert len(game.records[0]["deals"]) == rules.num_deals
        assert "table" not in game.records[0]["deals"][-1] or rules.num_deals == 1


def test_named_schedules() -> None:
    assert (VARIANTS["simple-5"].table_cards, VARIANTS["simple-5"].deal_sizes) == (5, (3, 3, 1))
    game = ReferenceGame("simple-5", 0)
    assert len(game.table) == 5 and all(len(h) == 3 for h in game.hands) and len(game.stock) == 20
    game = ReferenceGame("simple-8", 0)
    assert game.rules.num_cards == 52 and len(game.stock) == 52 - 4 - 24 and game.rules.target == 16
    game = ReferenceGame("scopone-scientifico", 0)
    assert game.table == set() and [len(h) for h in game.hands] == [10] * 4 and game.stock == []


def _void_seed(rules: Rules) -> int:
    """A seed whose first hand's attempt-0 deck shows three or more kings on the table."""
    seeds = np.arange(20_000)
    decks = shuffled_decks(seeds, np.zeros_like(seeds), np.zeros_like(seeds), rules.num_cards)
    king = rules.deck.king_rank
    kings = ((decks[:, : rules.table_cards] % rules.deck.num_ranks) == king).sum(axis=1)
    return int(seeds[np.argmax(kings >= 3)])


@pytest.mark.parametrize("variant", ["simple-2", "simple-8"])
def test_three_kings_redeal(variant: str) -> None:
    rules = VARIANTS[variant]
    seed = _void_seed(rules)
    first_try = [int(c) for c in shuffled_decks([seed], [0], [0], rules.num_cards)[0]]
    assert is_void_table(rules, first_try[: rules.table_cards])
    assert not is_void_table(VARIANTS["classic"], first_try[:4])  # classic never voids a deal
    game = ReferenceGame(rules, seed)
    assert game.attempt >= 1 and not is_void_table(rules, game.table)
    redealt = [int(c) for c in shuffled_decks([seed], [0], [game.attempt], rules.num_cards)[0]]
    table, packets = deal_schedule(rules, redealt, game.dealer)
    assert game.table == set(table) and game.hands == [set(p) for p in packets[0]]
    replay_record(game.to_record())
    # the record of the void deal itself is refused
    record = game.to_record()
    kings = [c for c in first_try[: rules.table_cards] if c % rules.deck.num_ranks == rules.deck.king_rank]
    for king in kings:
        _swap_in(record, king, rules)
    with pytest.raises(RecordError, match="three or more kings"):
        replay_record(record)


def _swap_in(record: dict[str, Any], wanted: int, rules: Rules) -> None:
    """Swap card ``wanted`` into hand 0's table (with a non-king of the table), keeping every card once."""
    deal = record["hands"][0]["deals"]
    text = format_card(wanted, rules.deck)
    table = deal[0]["table"]
    if text in table:
        return
    out = next(t for t in table if not t.startswith("K"))
    for d in deal:
        for packet in d["hands"]:
            if text in packet:
                packet[packet.index(text)] = out
    table[table.index(out)] = text


# --------------------------------------------------------------------------------------------------------------
# Random games: invariants and records.


def _random_match(rules: Rules, seed: int, check: bool = True) -> ReferenceGame:
    """Play one match with uniformly random legal moves, checking the invariants at every step."""
    game = ReferenceGame(rules, seed)
    rng = random.Random(seed)
    everything = set(range(rules.num_cards))
    while not game.done:
        moves = game.legal_moves()
        assert moves, f"no legal move in a running game ({rules.name}, seed {seed})"
        game.play(*rng.choice(moves))
        if check:
            held = [game.table, *game.hands, *game.piles, game.stock]
            assert sum(len(h) for h in held) == rules.num_cards
            assert set().union(*held) == everything, f"{rules.name} seed {seed}: a card went missing"
        assert game.hand_no < 200, "the match does not end"
    return game


@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_random_games_invariants(variant: str) -> None:
    rules = VARIANTS[variant]
    for seed in range(RANDOM_GAMES):
        game = _random_match(rules, seed)
        scores = game.scores
        assert game.winner is not None and scores[game.winner] >= rules.target
        assert all(s < scores[game.winner] for i, s in enumerate(scores) if i != game.winner)
        totals = [sum(h["points"][side]["total"] for h in game.records) for side in range(rules.num_sides)]
        assert totals == scores
        assert all(match_winner(rules, h["scores"]) is None for h in game.records[:-1])


@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_random_records_replay(variant: str) -> None:
    for seed in range(REPLAYED_GAMES):
        game = _random_match(VARIANTS[variant], 1000 + seed, check=False)
        record = json.loads(json.dumps(game.to_record()))
        replay_record(record)
        assert record["winner"] == game.winner


def test_unfinished_records_replay() -> None:
    game = ReferenceGame("classic", 5)
    rng = random.Random(5)
    for _ in range(50):  # into the second deal of the second hand (a hand is 36 moves)
        game.play(*rng.choice(game.legal_moves()))
        replay_record(game.to_record())
    assert game.hand_no == 1 and game.to_record()["winner"] is None


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    """The record of a finished classic match with at least two hands, a capture and a scopa."""
    for seed in range(100):
        record = _random_match(CLASSIC, seed, check=False).to_record()
        moves = [m for h in record["hands"] for m in h["moves"]]
        if len(record["hands"]) >= 2 and any(m["scopa"] for m in moves):
            return record
    raise AssertionError("no suitable record found")


def _tampered(record: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    change(out)
    return out


def _first(record: dict[str, Any], pred: Any) -> tuple[int, int]:
    """(hand, move) index of the first move satisfying ``pred``."""
    return next((h, i) for h, hand in enumerate(record["hands"]) for i, m in enumerate(hand["moves"]) if pred(m))


def test_finished_record_replays(finished: dict[str, Any]) -> None:
    replay_record(finished)
    hand0 = finished["hands"][0]
    assert hand0["knocks"] == [] and len(hand0["deals"]) == 6 and len(hand0["moves"]) == 36


def test_tampered_capture(finished: dict[str, Any]) -> None:
    h, i = _first(finished, lambda m: m["capture"])
    bad = _tampered(finished, lambda r: r["hands"][h]["moves"][i].update(capture=[]))
    with pytest.raises(RecordError, match=rf"hand {h} move {i}: .* laid is not legal on table"):
        replay_record(bad)


def test_tampered_scopa_flag(finished: dict[str, Any]) -> None:
    h, i = _first(finished, lambda m: m["scopa"])
    bad = _tampered(finished, lambda r: r["hands"][h]["moves"][i].update(scopa=False))
    with pytest.raises(RecordError, match=rf"hand {h} move {i} scopa: expected true .* got False"):
        replay_record(bad)
    h, i = _first(finished, lambda m: not m["scopa"])
    bad = _tampered(finished, lambda r: r["hands"][h]["moves"][i].update(scopa=True))
    with pytest.raises(RecordError, match=rf"hand {h} move {i} scopa: expected false"):
        replay_record(bad)


def test_tampered_scores_and_points(finished: dict[str, Any]) -> None:
    bad = _tampered(finished, lambda r: r["hands"][0]["scores"].__setitem__(0, r["hands"][0]["scores"][0] + 1))
    with pytest.raises(RecordError, match=r"hand 0 scores: expected cumulative"):
        replay_record(bad)
    bad = _tampered(finished, lambda r: r["hands"][0]["points"][1].update(total=99))
    with pytest.raises(RecordError, match=r"hand 0 points side 1: expected .* 'total'"):
        replay_record(bad)
    bad = _tampered(finished, lambda r: r.update(winner=1 - r["winner"]))
    with pytest.raises(RecordError, match=r"record winner: side \d won"):
        replay_record(bad)
    bad = _tampered(finished, lambda r: r.update(winner=None))
    with pytest.raises(RecordError, match=r"record winner"):
        replay_record(bad)


def test_tampered_cards(finished: dict[str, Any]) -> None:
    def twice(r: dict[str, Any]) -> None:
        deal = r["hands"][0]["deals"][0]
        deal["hands"][0][0] = deal["table"][0]

    with pytest.raises(RecordError, match=r"hand 0 deal 0 seat 0: card \w\w appears twice \(also in hand 0 deal 0"):
        replay_record(_tampered(finished, twice))

    def swap(r: dict[str, Any]) -> None:
        packets = r["hands"][0]["deals"][0]["hands"]
        packets[0][0], packets[1][0] = packets[1][0], packets[0][0]

    with pytest.raises(RecordError, match=r"hand 0 deals: not the deal of seed"):
        replay_record(_tampered(finished, swap))
    bad = _tampered(finished, lambda r: r["hands"][0]["deals"][0]["table"].__setitem__(0, "Xz"))
    with pytest.raises(RecordError, match=r"hand 0 deal 0 table: bad card 'Xz'"):
        replay_record(bad)
    bad = _tampered(finished, lambda r: r["hands"][0]["deals"][0]["table"].pop())
    with pytest.raises(RecordError, match=r"hand 0 deal 0 table: 'classic' lays 4 cards, got 3"):
        replay_record(bad)


def test_tampered_moves(finished: dict[str, Any]) -> None:
    seat = finished["hands"][0]["moves"][0]["seat"]
    bad = _tampered(finished, lambda r: r["hands"][0]["moves"][0].update(seat=1 - seat))
    with pytest.raises(RecordError, match=rf"hand 0 move 0: seat {seat} is to act, got seat {1 - seat}"):
        replay_record(bad)
    table_card = finished["hands"][0]["deals"][0]["table"][0]
    bad = _tampered(finished, lambda r: r["hands"][0]["moves"][0].update(card=table_card))
    with pytest.raises(RecordError, match=rf"hand 0 move 0: seat {seat} does not hold {table_card}"):
        replay_record(bad)
    bad = _tampered(finished, lambda r: r["hands"][0]["moves"].pop())
    with pytest.raises(RecordError, match=r"hand 0 leftover: the hand is incomplete \(35 moves\) so it has no"):
        replay_record(bad)
    bad = _tampered(bad, lambda r: r["hands"][0].update(leftover=None, points=None, scores=None))
    with pytest.raises(RecordError, match=r"hand 0: incomplete \(35 moves\) but further hands follow"):
        replay_record(bad)
    bad = _tampered(finished, lambda r: r["hands"][0]["leftover"].update(side=5))
    with pytest.raises(RecordError, match=r"hand 0 leftover: expected side"):
        replay_record(bad)


def test_tampered_header_and_hands(finished: dict[str, Any]) -> None:
    with pytest.raises(RecordError, match=r"record variant: unknown variant 'nope'"):
        replay_record(_tampered(finished, lambda r: r.update(variant="nope")))
    with pytest.raises(RecordError, match=r"record target: 'classic' plays to 11, got 15"):
        replay_record(_tampered(finished, lambda r: r.update(target=15)))
    dealer = finished["hands"][1]["dealer"]
    bad = _tampered(finished, lambda r: r["hands"][1].update(dealer=1 - dealer))
    with pytest.raises(RecordError, match=rf"hand 1 dealer: the dealer moves one seat per hand, so seat {dealer}"):
        replay_record(bad)
    bad = _tampered(finished, lambda r: r["hands"].append(copy.deepcopy(r["hands"][-1])))
    with pytest.raises(RecordError, match=r"the match was already won by side"):
        replay_record(bad)
    # a match cut after a complete hand is a valid unfinished record
    cut = _tampered(finished, lambda r: r.update(hands=r["hands"][:1], winner=None))
    replay_record(cut)
