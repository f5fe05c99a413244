"""Cirulla on the plain reference engine (scopa_env/oracle/reference.py) against RULES.md section 6, and its records.

Hand-built positions draw the table in a comment for every cirulla rule: the capture kinds and the choice among
them, ace takes all, the initial 15 / 30 with and without the matta (``7c``), void deals, knocks, napoli and
grande, the last play, leftovers, the target of 51 and the three-player categories. Random matches of the three
variants check invariants, and their records go through the record checker (``record --check``), which must
refuse tampered knocks, fifteens and table takes with the reason.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from scopa_env.oracle.record_check import RecordError, check_file, replay_record
from scopa_env.oracle.reference import (
    ReferenceGame,
    captures,
    hand_deck,
    is_void_table,
    knock_kinds,
    observe,
    play_features,
    table_take_scope,
)
from scopa_env.oracle.reference_scoring import CIRULLA_POINT_KEYS, POINT_KEYS, match_winner, score_hand
from scopa_env.rules import CIRULLA_VARIANTS, get_rules
from scopa_env.rules.cards import format_card, parse_card, parse_cards
from scopa_env.rules.shuffle import shuffled_decks
from tests.helpers import reference_position

CIR = CIRULLA_VARIANTS["cirulla"]
CIR3 = CIRULLA_VARIANTS["cirulla-3"]
CIR4 = CIRULLA_VARIANTS["cirulla-4"]
RANDOM_GAMES = 25
"""Random matches per variant for the invariant test (about 0.1-0.3 s each)."""
CHECKED_GAMES = 6
"""Random matches per variant written to a records file and checked."""


def card(text: str) -> int:
    return parse_card(text)


def cards(text: str) -> frozenset[int]:
    return frozenset(parse_cards(text))


def caps(*texts: str) -> list[frozenset[int]]:
    """Captures in ``captures``' order (sorted by the sorted tuple of card ids)."""
    return sorted((cards(t) for t in texts), key=lambda c: tuple(sorted(c)))


def play_random(game: ReferenceGame, rng: random.Random) -> None:
    """Play ``game`` to its end with uniformly random decisions (knocks included)."""
    while not game.done:
        if game.phase == "knock":
            game.knock(rng.choice([None, *game.knock_options()]))
        else:
            game.play(*rng.choice(game.legal_moves()))


# --------------------------------------------------------------------------------------------------------------
# Captures: equal rank, sums, fifteens (RULES.md section 6 and decided point 2).


def test_equal_rank_alone_when_no_fifteen() -> None:
    # table: 5c 2s    play 5d: the 5c (equal rank); no fifteen (5 + 5 + 2 = 12)
    assert captures(CIR, cards("5c 2s"), card("5d")) == caps("5c")


def test_sum_alone_when_no_fifteen() -> None:
    # table: 2c 3s 6b    play 5d: 2c+3s (sum); nothing makes 10 with it
    assert captures(CIR, cards("2c 3s 6b"), card("5d")) == caps("2c 3s")


def test_fifteen_of_one_and_of_several_cards() -> None:
    # table: Qc 4s    play 6d: no equal rank, no sum of 6; Qc (9) makes 15 with the 6
    assert captures(CIR, cards("Qc 4s"), card("6d")) == caps("Qc")
    # table: 4c 5s Jb    play 2d: 5s+Jb (5 + 8 = 13) make 15 with the 2
    assert captures(CIR, cards("4c 5s Jb"), card("2d")) == caps("5s Jb")
    # the classic rules have no fifteen: the same cards are laid
    assert captures(get_rules("classic"), cards("4c 5s Jb"), card("2d")) == []


def test_equal_rank_does_not_rule_out_a_fifteen() -> None:
    # table: 5d 2s 3b    play 5c: 5d (equal rank) or 5d+2s+3b (5 + 5 + 2 + 3 = 15), the player chooses
    assert captures(CIR, cards("5d 2s 3b"), card("5c")) == caps("5d", "5d 2s 3b")
    for taken in ("5d", "5d 2s 3b"):
        game = reference_position(CIR, ["5c Kb", "Ac"], "5d 2s 3b", stock="4d 4c 4s 4b 6d 6c", deal_no=0)
        assert (card("5c"), cards(taken)) in game.legal_moves()
        result = game.play(card("5c"), cards(taken))
        assert result["capture"] == cards(taken)
        assert result["scopa"] == (taken == "5d 2s 3b")  # the fifteen clears the table: a scopa
        assert game.piles[0] == cards(taken) | {card("5c")}
    # equal rank still rules out a classic sum: with 5d on the table 2s+3b is no capture for the 5c
    assert cards("2s 3b") not in captures(CIR, cards("5d 2s 3b"), card("5c"))


def test_sum_and_fifteen_side_by_side() -> None:
    # table: 2c 3s Kb    play 5d: 2c+3s (sum of 5) or Kb (10 + 5 = 15)
    assert captures(CIR, cards("2c 3s Kb"), card("5d")) == caps("2c 3s", "Kb")
    # table: Ad 2c 4s Jb 6b    play 7d: sums A+6, A+2+4; fifteens J (8), A+2+... (8: Ad+Jb? no, 2c+6b, Ad+... )
    got = captures(CIR, cards("Ad 2c 4s Jb 6b"), card("7d"))
    assert got == caps("Ad 6b", "Ad 2c 4s", "Jb", "2c 6b")
    assert got == sorted(got, key=lambda c: tuple(sorted(c)))


def test_a_card_that_can_capture_must_and_nothing_is_laid() -> None:
    # table: 2c 3s    hand Kb 4d: the king makes 15 with 2c+3s, so it must take them; the 4d is laid
    game = reference_position(CIR, ["Kb 4d", "Ac"], "2c 3s", stock="5d 5c 5s 5b 6d 6c", deal_no=0)
    assert game.legal_moves() == [(card("4d"), frozenset()), (card("Kb"), cards("2c 3s"))]
    with pytest.raises(ValueError, match=r"illegal move for seat 0: Kb laid"):
        game.play(card("Kb"))
    # table: Kc Qs    play 3d: nothing (3 + 10, 3 + 9, 3 + 19) -> laid
    assert captures(CIR, cards("Kc Qs"), card("3d")) == []


def test_the_matta_is_a_plain_seven_in_captures() -> None:
    # table: 7c    play Jd: 7c (7) + Jd (8) = 15
    assert captures(CIR, cards("7c"), card("Jd")) == caps("7c")
    # table: 7c    play 3d: 7c is no wild card here: 3 + 7 = 10, laid
    assert captures(CIR, cards("7c"), card("3d")) == []
    # table: 7c 2s    play 7d: 7c (equal rank), not 2s with 7c as a 5
    assert captures(CIR, cards("7c 2s"), card("7d")) == caps("7c")


# --------------------------------------------------------------------------------------------------------------
# Ace takes all (decided point 1).


def test_ace_takes_all_is_its_only_capture_and_never_a_scopa() -> None:
    # table: Kb 4s 2c    play Ad: the whole table, never Kb+4s as a fifteen (1 + 10 + 4)
    assert captures(CIR, cards("Kb 4s 2c"), card("Ad")) == caps("Kb 4s 2c")
    # table: Kb 4s    play Ad: ace + table make 15, still ace-takes-all: no scopa
    game = reference_position(CIR, ["Ad 5c", "6s"], "Kb 4s", stock="4d 4c 4b 6d 6c 6b", deal_no=0)
    result = game.play(card("Ad"), cards("Kb 4s"))
    assert result["capture"] == cards("Kb 4s") and not result["scopa"] and game.scope == [0, 0]
    assert game.last_capturer == 0 and game.table == set()


def test_ace_on_an_empty_table_is_laid() -> None:
    # table: (empty)    play Ad: laid
    assert captures(CIR, set(), card("Ad")) == []
    game = reference_position(CIR, ["Ad 5c", "6s"], "", stock="4d 4c 4b 6d 6c 6b", deal_no=0)
    assert game.legal_moves() == [(card("Ad"), frozenset()), (card("5c"), frozenset())]


def test_ace_with_an_ace_on_the_table_takes_it_or_makes_a_fifteen() -> None:
    # table: Ac Kb 4s    play Ad: Ac (equal rank) or Kb+4s (1 + 10 + 4 = 15); no ace-takes-all
    assert captures(CIR, cards("Ac Kb 4s"), card("Ad")) == caps("Ac", "Kb 4s")
    # table: Ac 3s Kb    play Ad: Ac, or the whole table as a fifteen (1 + 1 + 3 + 10): that one is a scopa
    assert captures(CIR, cards("Ac 3s Kb"), card("Ad")) == caps("Ac", "Ac 3s Kb")
    game = reference_position(CIR, ["Ad 5c", "6s"], "Ac 3s Kb", stock="4d 4c 4b 6d 6c 6b", deal_no=0)
    result = game.play(card("Ad"), cards("Ac 3s Kb"))
    assert result["scopa"] and game.scope == [1, 0]


# --------------------------------------------------------------------------------------------------------------
# Scopa, the last play, leftovers.


def test_a_fifteen_that_clears_the_table_is_a_scopa_but_not_on_the_last_play() -> None:
    # table: Qc    play 6d (9 + 6 = 15) in the middle of the hand: scopa
    game = reference_position(CIR, ["6d 2c", "3s"], "Qc", stock="4d 4c 4b 5d 5c 5b", deal_no=0)
    assert game.play(card("6d"), cards("Qc"))["scopa"]
    # the same capture as the very last play of the hand: no scopa; the hand ends
    game = reference_position(CIR, ["", "6d"], "Qc", current=1)
    result = game.play(card("6d"), cards("Qc"))
    assert result["hand_over"] and not result["scopa"] and result["leftover"] == (None, frozenset())


def test_leftover_goes_to_the_last_capturer() -> None:
    # table: 2c 3s Kb    seat 0 plays 5d taking 2c+3s (sum), seat 1 lays 4d: Kb 4d go to side 0
    game = reference_position(CIR, ["5d", "4d"], "2c 3s Kb")
    game.play(card("5d"), cards("2c 3s"))
    result = game.play(card("4d"))
    assert result["leftover"] == (0, cards("Kb 4d"))
    assert game.records[-2]["leftover"] == {"side": 0, "cards": ["4d", "Kb"]}


# --------------------------------------------------------------------------------------------------------------
# The initial table: 15 / 30 with the matta, void deals (decided point 4).


@pytest.mark.parametrize(
    ("table", "scope"),
    [
        ("5c 4s 3b 3d", 1),  # 5 + 4 + 3 + 3 = 15
        ("7s 5c 2d Ab", 1),  # 15 with a plain 7
        ("Kd Qc Js 3b", 2),  # 10 + 9 + 8 + 3 = 30
        ("Kd Qs Jb 6c", 0),  # 33
        ("7s Kd Qs Jb", 0),  # 34: the 7s is no wild card
        ("7c Kd Qs Jb", 2),  # 27 + 7c as 3 = 30
        ("7c 5c 2d Ab", 1),  # 8 + 7c as 7 = 15
        ("7c Ad 2s 3b", 1),  # 6 + 7c as 9 = 15
        ("7c Kd Qs 4b", 2),  # 23 + 7c as 7 = 30
        ("7c Ad 2s Ab", 0),  # 4 + at most 10: neither 15 nor 30 (and two aces: void anyway)
        ("7c Kd Kc Kb", 0),  # 30 + at least 1: too much
    ],
)
def test_initial_table_fifteen_and_thirty(table: str, scope: int) -> None:
    assert table_take_scope(CIR, cards(table)) == scope
    assert table_take_scope(get_rules("classic"), cards(table)) == 0


def _seed_with(rules: Any, predicate: Any, limit: int = 5000) -> int:
    """The first seed whose hand 0 (as dealt, after void deals) satisfies ``predicate(game)``."""
    for seed in range(limit):
        game = ReferenceGame(rules, seed)
        if predicate(game):
            return seed
    raise AssertionError("no such seed")


def test_initial_table_taken_by_the_dealers_side() -> None:
    seed = _seed_with(CIR4, lambda g: g.table_take is not None)
    game = ReferenceGame(CIR4, seed)
    _, deck = hand_deck(CIR4, seed, 0)
    dealt = frozenset(deck[:4])
    side = CIR4.seat_side[game.dealer]
    assert game.table == set() and game.piles[side] == dealt and game.last_capturer == side
    assert game.table_take == {"side": side, "cards": dealt, "scope": table_take_scope(CIR4, dealt)}
    assert game.scope[side] == game.table_take["scope"] and game.scope[1 - side] == 0
    record = game.records[0]
    assert record["deals"][0]["table"] == sorted((format_card(c) for c in dealt), key=parse_card)  # as dealt
    assert record["table_take"] == {"side": side, "cards": record["deals"][0]["table"], "scope": game.scope[side]}
    # play starts on an empty table; the take is a capture for the leftover rule: nothing captured after it
    # (hand-built: one card each, two lays) -> the leftover goes to the taker
    # values 10, 9, 8, 4 laid one by one on the empty table: no equal rank, no sum, no fifteen ever forms
    spare = [next(c for c in range(r, 40, 10) if c not in dealt) for r in (9, 8, 7, 3)]
    game.knock_queue = []
    game.hands = [{c} for c in spare]
    game.stock = []
    game.current = (game.dealer + 1) % 4
    for _ in range(4):
        result = game.play(next(iter(game.hands[game.current])))
    assert result["hand_over"] and result["leftover"] == (side, frozenset(spare))
    assert result["hand_points"][side]["scope"] >= 1


def test_no_take_without_15_or_30() -> None:
    seed = _seed_with(CIR, lambda g: g.table_take is None)
    game = ReferenceGame(CIR, seed)
    assert len(game.table) == 4 and game.records[0]["table_take"] is None
    assert "table_take" not in ReferenceGame("classic", seed).records[0]  # other variants' records unchanged


def test_two_aces_void_the_deal() -> None:
    # table: Ad Ac 5s 6b: two aces -> void; one ace: fine; kings do not matter in cirulla
    assert is_void_table(CIR, cards("Ad Ac 5s 6b")) and is_void_table(CIR, cards("Ad Ac As Ab"))
    assert not is_void_table(CIR, cards("Ad Kc 5s 6b")) and not is_void_table(CIR, cards("Kd Kc Ks 6b"))

    def void_first(seed: int) -> bool:
        table = shuffled_decks([seed], [0], [0], 40)[0][:4].tolist()
        return is_void_table(CIR, table)

    seed = next(s for s in range(1000) if void_first(s))
    game = ReferenceGame(CIR, seed)
    assert game.attempt >= 1
    dealt = parse_cards(game.records[0]["deals"][0]["table"])
    assert sum(1 for c in dealt if c % 10 == 0) <= 1
    replay_record(game.to_record())
    # the record of the void table itself is refused
    record = game.to_record()
    first = shuffled_decks([seed], [0], [0], 40)[0][:4].tolist()
    record["hands"][0]["deals"][0]["table"] = [format_card(c) for c in first]
    with pytest.raises(RecordError, match="two or more aces, so the deal is void"):
        replay_record(record)


# --------------------------------------------------------------------------------------------------------------
# Knocks (decided point 5).


@pytest.mark.parametrize(
    ("hand", "kinds"),
    [
        ("Ad 2c 3s", ["sum"]),  # 6
        ("2d 3c 4s", ["sum"]),  # 9: the most a sum knock allows
        ("2d 3c 5s", []),  # 10
        ("Ad 2c 7s", []),  # 10: a plain 7
        ("Ad 2c 7c", ["sum"]),  # 7c counts 1: 4
        ("Kd 5c 7c", []),  # 16 with 7c as 1; no pair
        ("4d 4c 4s", ["tris"]),  # 12: no sum; three fours
        ("3d 3c 3s", ["sum", "tris"]),  # 9 and three threes: both
        ("Kd Kc 7c", ["tris"]),  # a pair and the matta
        ("Kd Qc 7c", []),  # the matta and two different ranks: no tris
        ("7d 7s 7c", ["tris"]),  # three sevens (7c among them): 15, no sum
        ("7d 7s 2c", []),  # a pair of sevens without the matta
        ("Ad Ac 7c", ["sum", "tris"]),  # 3 and a pair + matta: both
        ("2d 2c 7c", ["sum", "tris"]),  # 5 and a pair + matta
    ],
)
def test_knock_kinds(hand: str, kinds: list[str]) -> None:
    assert knock_kinds(CIR, cards(hand)) == kinds
    assert knock_kinds(get_rules("classic"), cards(hand)) == []


def _end_of_deal(dealer: int, next_packets: list[str]) -> ReferenceGame:
    """A 2-player position at deal 4 with one card each left; the lays end the deal and ``next_packets`` (in
    receiving order, the player after the dealer first) are dealt for deal 5."""
    first = (dealer + 1) % 2
    hands = ["", ""]
    hands[first], hands[1 - first] = "Kd", "Qd"
    game = reference_position(CIR, hands, "", stock=" ".join(next_packets), deal_no=4, current=first, dealer=dealer)
    game.play(card("Kd"))  # table: (empty) -> Kd laid
    game.play(card("Qd"))  # table: Kd -> Qd laid (10 + 9: no fifteen)
    return game


def test_knock_phase_order_options_and_errors() -> None:
    # dealer 1: seat 0 receives first (Ad 2c 3s: sum 6), seat 1 second (4d 4c 7c: sum 9 with 7c as 1, and a pair
    # + the matta)
    game = _end_of_deal(1, ["Ad 2c 3s", "4d 4c 7c"])
    assert game.deal_no == 5 and game.phase == "knock" and game.current == 0 and game.knock_queue == [0, 1]
    assert game.knock_options() == ["sum"] and game.legal_moves() == []
    with pytest.raises(ValueError, match=r"seat 0 must first decide whether to knock.*'sum'"):
        game.play(card("Ad"))
    with pytest.raises(ValueError, match=r"cirulla game .*knock 'tris' is not legal for seat 0 .*no three cards"):
        game.knock("tris")
    with pytest.raises(ValueError, match=r"knock 'big' is not legal"):
        game.knock("big")
    assert game.knock("sum") == {"seat": 0, "kind": "sum", "points": 3, "cards": cards("Ad 2c 3s")}
    assert game.knock_points == [3, 0] and game.revealed[0] == cards("Ad 2c 3s")
    assert game.current == 1 and game.knock_options() == ["sum", "tris"]
    assert game.knock(None)["points"] == 0
    assert game.phase == "play" and game.current == 0 and game.knock_points == [3, 0] and game.revealed[1] == set()
    with pytest.raises(ValueError, match=r"knock None is not a legal action now: the game is in the play phase"):
        game.knock(None)
    assert game.records[-1]["knocks"] == [
        {"seat": 0, "deal": 5, "kind": "sum", "cards": ["Ad", "2c", "3s"], "points": 3}
    ]
    # a played card leaves the revealed set (table: Kd Qd -> 2c laid: no sum of 2, no 13)
    game.play(card("2c"))
    assert game.revealed[0] == cards("Ad 3s")


def test_knock_order_starts_after_the_dealer_and_skips_hands_that_do_not_qualify() -> None:
    # dealer 0: seat 1 receives first and decides first
    game = _end_of_deal(0, ["Kb Kc 7c", "Ad Ac 2s"])
    assert game.knock_queue == [1, 0] and game.current == 1 and game.knock_options() == ["tris"]
    game.knock("tris")
    assert game.current == 0 and game.knock_options() == ["sum"]
    game.knock("sum")
    assert game.knock_points == [3, 10] and game.phase == "play" and game.current == 1
    # only seat 0 qualifies (seat 1: 5 + 6 + 10): one decision
    game = _end_of_deal(0, ["5b 6c Kc", "Ad Ac 2s"])
    assert game.knock_queue == [0] and game.current == 0
    game.knock(None)
    assert game.phase == "play" and game.current == 1
    # nobody qualifies: no knock phase at all
    game = _end_of_deal(0, ["5b 6c Kc", "4d 6b Jc"])
    assert game.phase == "play" and game.knock_queue == [] and game.current == 1


def test_a_hand_that_qualifies_both_ways_knocks_once_for_the_kind_chosen() -> None:
    game = _end_of_deal(1, ["3d 3c 3s", "4d 5c Kc"])
    assert game.knock_options() == ["sum", "tris"]
    game.knock("tris")
    assert game.knock_points == [10, 0] and game.phase == "play"


def test_knock_points_are_hand_points_and_visible_to_everyone() -> None:
    game = _end_of_deal(1, ["Ad 2c 3s", "4d 4c 7c"])
    game.knock("sum")
    game.knock("tris")
    # the opponent's observation shows seat 0's knocked cards (own seat first, then in play order) and the knocks
    obs = observe(game, seat=1)
    d = 40
    base = 336  # the classic prefix for two players
    revealed_other = obs[base + d : base + 2 * d]
    assert {i for i, v in enumerate(revealed_other) if v} == cards("Ad 2c 3s")
    assert {i for i, v in enumerate(obs[base : base + d]) if v} == cards("4d 4c 7c")
    assert obs[base + 2 * d : base + 2 * d + 2] == [1.0, 0.3]  # own side's 10 first, then 3 (/ 10)
    unseen = obs[4 * d : 5 * d]
    assert not any(unseen[c] for c in cards("Ad 2c 3s"))  # revealed cards are seen
    # play out the last deal; the knock points enter the hand points
    while game.hand_no == 0:
        game.play(*game.legal_moves()[0])
    points = game.records[0]["points"]
    assert [p["knocks"] for p in points] == [3, 10]
    assert all(list(p) == list(CIRULLA_POINT_KEYS) for p in points)
    assert all(p["total"] == sum(v for k, v in p.items() if k != "total") for p in points)


# --------------------------------------------------------------------------------------------------------------
# Napoli and grande (decided point 6), scoring, winning.

COINS = ["Ad", "2d", "3d", "4d", "5d", "6d", "7d", "Jd", "Qd", "Kd"]


@pytest.mark.parametrize("length", range(3, 11))
def test_napoli_of_every_length(length: int) -> None:
    pile = cards(" ".join(COINS[:length]) + " 5c")  # the run, and a card that is not a coin
    points = score_hand(CIR, [pile, set()], [0, 0])
    assert points[0]["napoli"] == length
    assert points[0]["grande"] == (5 if length == 10 else 0)  # grande as well when the run goes through J Q K


def test_napoli_needs_ace_two_three_and_stops_at_a_gap() -> None:
    assert score_hand(CIR, [cards("Ad 2d 3d 5d 6d"), set()], [0, 0])[0]["napoli"] == 3  # 4d missing
    assert score_hand(CIR, [cards("2d 3d 4d 5d"), set()], [0, 0])[0]["napoli"] == 0  # no ace of coins
    assert score_hand(CIR, [cards("Ad 2d 4d 5d"), set()], [0, 0])[0]["napoli"] == 0  # no 3d
    assert score_hand(CIR, [cards("Ac 2c 3c"), set()], [0, 0])[0]["napoli"] == 0  # not coins


def test_grande() -> None:
    points = score_hand(CIR, [cards("Jd Qd Kd"), cards("Ad 2d 3d")], [0, 0])
    assert (points[0]["grande"], points[0]["napoli"]) == (5, 0)
    assert (points[1]["grande"], points[1]["napoli"]) == (0, 3)
    assert score_hand(CIR, [cards("Jd Qd Kc"), set()], [0, 0])[0]["grande"] == 0


def test_point_keys_and_total() -> None:
    all_cards = frozenset(range(40))
    points = score_hand(CIR, [all_cards, set()], [2, 1], knock_points=[3, 10])
    assert list(points[0]) == list(CIRULLA_POINT_KEYS)
    assert points[0] == {
        "carte": 1,
        "denari": 1,
        "settebello": 1,
        "primiera": 1,
        "scope": 2,
        "napoli": 10,
        "grande": 5,
        "knocks": 3,
        "total": 24,
    }
    assert points[1]["total"] == 11 and points[1]["knocks"] == 10
    # the other variants keep their keys and refuse knock points
    classic = get_rules("classic")
    assert list(score_hand(classic, [all_cards, set()], [0, 0])[0]) == list(POINT_KEYS)
    with pytest.raises(ValueError, match="has no knocks"):
        score_hand(classic, [all_cards, set()], [0, 0], knock_points=[3, 0])


def test_majorities_with_two_sides_and_strict_leader_with_three() -> None:
    # two sides (teams in cirulla-4 too): 20 cards each -> carte to nobody; 5 coins each -> denari to nobody
    half = [c for c in range(40) if (c % 10) < 5]
    other = [c for c in range(40) if (c % 10) >= 5]
    points = score_hand(CIR4, [half, other], [0, 0])
    assert [p["carte"] for p in points] == [0, 0] and [p["denari"] for p in points] == [0, 0]
    # three players: the strict leader scores, with no majority needed; a tie at the top scores nobody
    piles = [
        cards("Ad 2d 3d 4d Ac 2c 3c 4c 5c 6c 7c Jc Qc Ks"),  # 14 cards, 4 coins, no bastoni
        cards("5d 6d 7d As 2s 3s 4s 5s 6s 7s Js Qs Kc Ab"),  # 14 cards, 3 coins, the settebello, all four suits
        cards("Jd Qd Kd 2b 3b 4b 5b 6b 7b Jb Qb Kb"),  # 12 cards, 3 coins
    ]
    points = score_hand(CIR3, piles, [0, 0, 0])
    assert [p["carte"] for p in points] == [0, 0, 0]  # 14 = 14 at the top
    assert [p["denari"] for p in points] == [1, 0, 0]  # 4 coins lead, fewer than 6 suffice
    assert [p["settebello"] for p in points] == [0, 1, 0]
    assert [p["napoli"] for p in points] == [4, 0, 0] and [p["grande"] for p in points] == [0, 0, 5]
    assert [p["primiera"] for p in points] == [0, 1, 0]  # sides 0 and 2 miss a suit


def test_target_51_and_a_tie_at_the_top_plays_on() -> None:
    assert CIR.target == 51
    assert match_winner(CIR, [50, 12]) is None
    assert match_winner(CIR, [51, 50]) == 0
    assert match_winner(CIR, [51, 51]) is None  # tied at the top: another hand
    assert match_winner(CIR3, [53, 53, 60]) == 2
    assert match_winner(CIR3, [53, 53, 20]) is None
    # in a game: the last play of a hand takes the scores to 51+
    game = reference_position(CIR, ["", "6d"], "Qc 3b", current=1)
    game.scores = [45, 50]
    game.knock_points = [0, 3]
    result = game.play(card("6d"), cards("Qc"))  # 6 + 9 = 15; the 3b is left over to side 1
    assert result["match_over"] and result["winner"] == 1 and game.done and game.phase == "done"
    assert game.scores[1] >= 53
    with pytest.raises(ValueError, match="the game is in the done phase"):
        game.knock(None)


# --------------------------------------------------------------------------------------------------------------
# Observation blocks (version 3 layout of docs/envs.md).


def test_play_features_and_fifteens_block() -> None:
    from scopa_env.oracle.reference import fifteen_features

    # table: 2c 3s Kb    (sum 15)
    table = cards("2c 3s Kb")
    features = play_features(CIR, table)
    per_value = [features[1 + 4 * r : 5 + 4 * r] for r in range(10)]
    # a 5: sum 2c+3s (after: 15 - 5) or the fifteen Kb; the sum's "after" is used
    assert per_value[4] == [1.0, 0.0, 0.0, 10 / 40]
    # a 4: no equal rank, no sum of 4 (2+3 = 5); fifteen: 11 = ... none (2+3+10 = 15, 3+... ) -> laid
    assert per_value[3] == [0.0, 0.0, 0.0, 19 / 40]
    # a 6: fifteen 9: none; a 2: equal 2c; fifteen 13 = 3 + 10 -> after is the equal rank's 15 - 2
    assert per_value[1] == [1.0, 0.0, 0.0, 13 / 40]
    # a king (10): Kb (equal rank) or 2c+3s (fifteen) -> the equal rank's 15 - 10
    assert per_value[9] == [1.0, 0.0, 0.0, 5 / 40]
    # a 3: 3s (equal rank) or 2c+Kb (fifteen) -> 15 - 3
    assert per_value[2] == [1.0, 0.0, 0.0, 12 / 40]
    # table: Qc 4s (sum 13)    a 6: no equal rank, no sum of 6; fifteen Qc -> fifteens only: 13 - 9
    assert play_features(CIR, cards("Qc 4s"))[1 + 4 * 5 : 5 + 4 * 5] == [1.0, 0.0, 0.0, 4 / 40]
    # an ace: takes all (no ace on the table), never a scopa, leaves 0
    assert per_value[0] == [1.0, 0.0, 0.0, 0.0]
    # fifteens block: values whose card makes a fifteen here: 2 (3+K), 3 (2+K), 5 (K), 10 (2+3); not the ace,
    # which takes all
    assert fifteen_features(CIR, table) == [1.0 if v in (2, 3, 5, 10) else 0.0 for v in range(1, 11)]
    # table: 5d    a 10 makes 15 with it and clears the table: scopa
    assert play_features(CIR, cards("5d"))[1 + 4 * 9 : 5 + 4 * 9] == [1.0, 1.0, 0.0, 0.0]
    # a fifteen with the settebello: table 7d 3c, a jack (8) takes 7d
    assert play_features(CIR, cards("7d 3c"))[1 + 4 * 7 + 2] == 1.0


def test_observation_layout_and_knocking_flag() -> None:
    for rules in CIRULLA_VARIANTS.values():
        game = ReferenceGame(rules, 0)
        d, n, s = 40, rules.num_players, rules.num_sides
        classic_size = (5 + s) * d + 2 * s + 1 + 3 * n + s + 1 + 1 + 1 + 40
        assert len(observe(game)) == classic_size + n * d + s + 1 + 10
    game = _end_of_deal(1, ["Ad 2c 3s", "4d 5c Kc"])
    knocking = 336 + 80 + 2
    assert observe(game)[knocking] == 1.0
    game.knock(None)
    assert observe(game)[knocking] == 0.0
    # a classic observation is unchanged in size
    assert len(observe(ReferenceGame("classic", 0))) == 336


# --------------------------------------------------------------------------------------------------------------
# Random matches: invariants.


@pytest.mark.parametrize("rules", list(CIRULLA_VARIANTS.values()), ids=list(CIRULLA_VARIANTS))
def test_random_matches_keep_the_invariants(rules: Any) -> None:
    rng = random.Random(rules.num_players)
    knocked = taken = 0
    for seed in range(RANDOM_GAMES):
        game = ReferenceGame(rules, seed)
        hands_seen = 0
        previous = list(game.scores)
        while not game.done:
            held = set().union(*game.hands)
            stock = set(game.stock)
            piled = set().union(*game.piles)
            parts = [held, stock, game.table, piled]
            assert sum(len(p) for p in parts) == 40 and set().union(*parts) == set(range(40))
            assert all(r <= h for r, h in zip(game.revealed, game.hands, strict=True))
            if game.phase == "knock":
                options = game.knock_options()
                assert options and all(k in knock_kinds(rules, game.hands[game.current]) for k in options)
                assert len(game.hands[game.current]) == 3
                choice = rng.choice([None, *options])
                knocked += choice is not None
                game.knock(choice)
                continue
            result = game.play(*rng.choice(game.legal_moves()))
            if result["hand_over"]:
                hands_seen += 1
                points = result["hand_points"]
                for p in points:
                    assert list(p) == list(CIRULLA_POINT_KEYS)
                    assert p["total"] == sum(v for k, v in p.items() if k != "total") and p["total"] >= 0
                assert [a + p["total"] for a, p in zip(previous, points, strict=True)] == game.scores
                assert all(b >= a for a, b in zip(previous, game.scores, strict=True))
                previous = list(game.scores)
                assert hands_seen < 60, "the match should have ended"
        assert game.phase == "done" and max(game.scores) >= 51
        assert game.winner == max(range(rules.num_sides), key=lambda i: game.scores[i])
        assert sorted(game.scores).count(max(game.scores)) == 1
        taken += sum(1 for h in game.records if h["table_take"])
        record = game.to_record()
        assert all(k["points"] == {"sum": 3, "tris": 10}[k["kind"]] for h in record["hands"] for k in h["knocks"])
    assert knocked and taken  # both happen in these matches


# --------------------------------------------------------------------------------------------------------------
# Records: written, checked, tampered.


def _random_record(rules: Any, seed: int) -> dict[str, Any]:
    game = ReferenceGame(rules, seed)
    play_random(game, random.Random(seed))
    return game.to_record()


def test_records_have_the_cirulla_keys_and_pass_the_check(tmp_path) -> None:
    path = tmp_path / "cirulla.jsonl"
    records = [_random_record(r, s) for r in CIRULLA_VARIANTS.values() for s in range(CHECKED_GAMES)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert check_file(path) == (len(records), None)
    for record in records:
        for hand in record["hands"]:
            assert list(hand) == ["dealer", "deals", "table_take", "knocks", "moves", "leftover", "points", "scores"]
            for entry in hand["knocks"]:
                assert list(entry) == ["seat", "deal", "kind", "cards", "points"]
            assert all(list(p) == list(CIRULLA_POINT_KEYS) for p in hand["points"])
    assert get_rules("cirulla-4") is CIR4
    with pytest.raises(ValueError, match="unknown variant"):
        get_rules("cirulla-5")


@pytest.fixture(scope="module")
def knocked_record() -> dict[str, Any]:
    """A finished cirulla record whose first hand has a knock on a deal after the first."""
    for seed in range(500):
        record = _random_record(CIR, seed)
        hand = record["hands"][0]
        if any(k["deal"] > 0 for k in hand["knocks"]):
            return record
    raise AssertionError("no record with a later knock")


def _first_knock(record: dict[str, Any]) -> dict[str, Any]:
    return next(k for k in record["hands"][0]["knocks"] if k["deal"] > 0)


def _tampered(record: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    change(out)
    return out


def test_tampered_knocks_are_refused_with_the_reason(knocked_record) -> None:
    replay_record(knocked_record)
    knock = _first_knock(knocked_record)
    seat, deal = knock["seat"], knock["deal"]
    other = 1 - seat
    hand0 = knocked_record["hands"][0]
    other_cards = hand0["deals"][deal]["hands"][other]

    def wrong_points(r: dict[str, Any]) -> None:
        _first_knock(r)["points"] = 13 - knock["points"]

    with pytest.raises(RecordError, match=rf"knock scores {knock['points']}, got {13 - knock['points']}"):
        replay_record(_tampered(knocked_record, wrong_points))

    def wrong_cards(r: dict[str, Any]) -> None:
        _first_knock(r)["cards"] = other_cards

    with pytest.raises(RecordError, match=r"knocks entry \d+ \(seat \d, deal \d\) cards: a knock reveals"):
        replay_record(_tampered(knocked_record, wrong_cards))

    def wrong_kind(r: dict[str, Any]) -> None:
        entry = _first_knock(r)
        entry["kind"] = "tris" if entry["kind"] == "sum" else "sum"
        entry["points"] = {"sum": 3, "tris": 10}[entry["kind"]]

    held = cards(" ".join(knock["cards"]))
    if len(knock_kinds(CIR, held)) == 1:
        with pytest.raises(RecordError, match=r"knock is not legal: seat \d's hand .* does not qualify"):
            replay_record(_tampered(knocked_record, wrong_kind))

    def wrong_deal(r: dict[str, Any]) -> None:
        _first_knock(r)["deal"] = deal - 1

    with pytest.raises(RecordError, match=r"knocks entry"):
        replay_record(_tampered(knocked_record, wrong_deal))

    def bad_deal_index(r: dict[str, Any]) -> None:
        _first_knock(r)["deal"] = 17

    with pytest.raises(RecordError, match=r"deal: expected an index into this hand's 6 deal\(s\), got 17"):
        replay_record(_tampered(knocked_record, bad_deal_index))


def test_a_knock_by_a_hand_that_does_not_qualify_is_refused() -> None:
    # find a record and a deal where some seat's hand allows no knock; add a knock for it
    for seed in range(200):
        record = _random_record(CIR, seed)
        hand = record["hands"][0]
        for d, deal in enumerate(hand["deals"]):
            for seat, packet in enumerate(deal["hands"]):
                if not knock_kinds(CIR, cards(" ".join(packet))):
                    bad = copy.deepcopy(record)
                    knocks = bad["hands"][0]["knocks"]
                    entry = {"seat": seat, "deal": d, "kind": "sum", "cards": packet, "points": 3}
                    knocks.insert(sum(1 for k in knocks if k["deal"] <= d), entry)
                    with pytest.raises(RecordError, match=r"does not qualify for a 'sum' knock \(its values add up to"):
                        replay_record(bad)
                    return
    raise AssertionError("no hand without a knock")


def test_tampered_fifteen_and_table_take_are_refused(tmp_path) -> None:
    # a capture move: claim a table card that is no legal capture of the card played (a wrong fifteen / sum)
    found = False
    for seed in range(200):
        record = _random_record(CIR, seed)
        game = ReferenceGame(CIR, seed)
        for i, move in enumerate(record["hands"][0]["moves"]):
            while game.phase == "knock":
                made = [
                    k for k in record["hands"][0]["knocks"] if (k["seat"], k["deal"]) == (game.current, game.deal_no)
                ]
                game.knock(made[0]["kind"] if made else None)
            played = parse_card(move["card"])
            legal = captures(CIR, game.table, played)
            wrong = [t for t in sorted(game.table) if legal and frozenset({t}) not in legal]
            if wrong and parse_card(move["card"]) % 10 != 0:
                bad = copy.deepcopy(record)
                bad["hands"][0]["moves"][i]["capture"] = [format_card(wrong[0])]
                with pytest.raises(RecordError, match=rf"move {i}: .* is not legal on table .*add up to"):
                    replay_record(bad)
                path = tmp_path / "bad.jsonl"
                path.write_text(json.dumps(bad) + "\n")
                line, reason = check_file(path)
                assert line == 1 and "is not legal on table" in reason and "add up to" in reason
                found = True
                break
            game.play(played, parse_cards(move["capture"]) if move["capture"] else ())
        if found:
            break
    assert found
    # a table take that did not happen, or a wrong one
    record = _random_record(CIR, _seed_with(CIR, lambda g: g.table_take is None))
    bad = _tampered(record, lambda r: r["hands"][0].update(table_take={"side": 0, "cards": [], "scope": 1}))
    with pytest.raises(RecordError, match="table_take: the initial table does not total 15 or 30"):
        replay_record(bad)
    record = _random_record(CIR, _seed_with(CIR, lambda g: g.table_take is not None))
    bad = _tampered(record, lambda r: r["hands"][0].update(table_take=None))
    with pytest.raises(RecordError, match="table_take: the initial table totals"):
        replay_record(bad)


def test_an_unfinished_record_cut_in_the_knock_phase_is_checked(tmp_path) -> None:
    for seed in range(300):
        record = _random_record(CIR, seed)
        hand = record["hands"][0]
        first_deal = [k for k in hand["knocks"] if k["deal"] == 0]
        if first_deal:
            break
    else:
        raise AssertionError("no knock on a first deal")
    cut = copy.deepcopy(record)
    cut["hands"] = cut["hands"][:1]
    cut["hands"][0].update(knocks=first_deal, moves=[], leftover=None, points=None, scores=None)
    cut["hands"][0]["deals"] = cut["hands"][0]["deals"][:1]
    cut["winner"] = None
    cut["unfinished"] = True
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(cut) + "\n")
    assert check_file(path) == (1, None)
    # the same knock listed twice: the second was never made
    twice = copy.deepcopy(cut)
    twice["hands"][0]["knocks"].append(first_deal[-1])
    with pytest.raises(RecordError, match="knocks entry"):
        replay_record(twice)


def test_the_cirulla_docs_example_runs_and_its_record_excerpt_is_real() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text()
    section = text.split("## Cirulla", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(code) == 1
    exec(compile(code[0], "docs/rules.md[cirulla example]", "exec"), {"__name__": "__docs__"})
    excerpt = json.loads(re.findall(r"```json\n(.*?)```", section, flags=re.S)[0])
    game = ReferenceGame(CIR, 36)
    play_random(game, random.Random(36))
    hand = game.records[0]
    assert {k: v for k, v in hand.items() if k not in ("deals", "moves")} == {
        k: v for k, v in excerpt.items() if k not in ("deals", "moves")
    }
    assert hand["deals"][:2] == excerpt["deals"] and hand["moves"][:3] == excerpt["moves"]


def test_record_check_cli_on_cirulla_records(tmp_path, capsys) -> None:
    from agents.cli.record import main

    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(_random_record(CIR3, 5)) + "\n")
    assert main(["--check", str(good)]) == 0
    assert "all 1 records replay correctly" in capsys.readouterr().out
    record = _random_record(CIR3, 5)
    entry = next((k for h in record["hands"] for k in h["knocks"]), None)
    assert entry is not None
    entry["points"] = 7
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record) + "\n")
    assert main(["--check", str(bad)]) == 1
    assert re.search(r"bad\.jsonl:1: .*knock scores \d+, got 7", capsys.readouterr().err)


def test_other_variants_have_no_knock_phase() -> None:
    game = ReferenceGame("classic", 3)
    assert game.phase == "play" and game.knock_options() == [] and game.knock_queue == []
    with pytest.raises(ValueError, match="knock 'sum' is not a legal action now: the game is in the play phase"):
        game.knock("sum")
    assert len(observe(game)) == 336
