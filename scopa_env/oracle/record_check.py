"""Checking game records (RULES.md section 8): a records file line by line, each record replayed on the reference.

    from scopa_env.oracle.record_check import check_file, replay_record
    check_file("games.jsonl")          # (number of records, None) or (line number, reason)
    replay_record(record)              # raises RecordError naming the first problem

``replay_record`` checks one record from scratch with no help from the batched core: it replays the deals, the
knocks (cirulla) and the moves on the plain reference engine (``scopa_env.oracle.reference``, the rules oracle) and
compares every field.
``check_file`` reads a ``.jsonl`` file (``python -m agents.cli.record --check FILE``): besides the replay it
refuses text that is not UTF-8 or not JSON, booleans or fractions where numbers belong, empty ``hands``, repeated
records and unmarked unfinished matches (see ``agents.cli.record``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, cast

from scopa_env.errors import ScopaEnvError
from scopa_env.oracle.reference import (
    FIFTEEN,
    KNOCK_POINTS,
    MAX_REDEAL_ATTEMPTS,
    ReferenceGame,
    captures,
    card_texts,
    deal_schedule,
    describe_move,
    hand_deck,
    knock_kinds,
    knock_why_not,
    shuffled_deck,
    void_reason,
)
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.cards import Deck, format_card, parse_card

__all__ = ["BOOL_KEYS", "MAX_DEPTH", "RecordError", "RecordFileError", "check_file", "replay_record"]

MAX_DEPTH = 16
"""Deepest nesting of JSON arrays and objects a record line may have (a section-8 record needs 7)."""
BOOL_KEYS = frozenset({"scopa", "unfinished"})
"""The only record fields whose values are JSON booleans; a boolean anywhere else stands for a number."""


# --------------------------------------------------------------------------------------------------- one record


class RecordError(ScopaEnvError, ValueError):
    """A game record that breaks the rules or disagrees with its seed; the message says where and what."""


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise RecordError(message)


def _field(obj: Any, key: str, where: str) -> Any:
    _require(isinstance(obj, Mapping), f"{where}: expected an object, got {type(obj).__name__}")
    _require(key in obj, f"{where}: missing field {key!r}")
    return obj[key]


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _parse_list(cards: Any, deck: Deck, where: str) -> list[int]:
    """Parse a list of card strings; a ``RecordError`` names the place and the bad card."""
    _require(isinstance(cards, list), f"{where}: expected a list of cards, got {cards!r}")
    out = []
    for text in cards:
        try:
            out.append(parse_card(text, deck))
        except (TypeError, ValueError) as err:
            raise RecordError(f"{where}: {err}") from None
    _require(len(set(out)) == len(out), f"{where}: a card is listed twice in {cards}")
    return out


def replay_record(record: Mapping[str, Any]) -> None:
    """Check one RULES.md section-8 game record from scratch; raise ``RecordError`` on the first problem.

    Checks the variant and its header fields; for every hand the dealer (first dealer drawn from the seed, then one
    seat per hand), the deal schedule (table and packet sizes, every card at most once and the whole deck once a
    hand is fully dealt, no void table), that the deals are the seed's (``shuffled_decks`` of this hand and the
    right re-deal attempt), then every move (seat to act, card held, capture legal, scopa flag), the leftover, the
    hand points and the cumulative scores; finally the winner (``null`` only for an unfinished match). Only the
    last hand of an unfinished match may be incomplete (its leftover, points and scores then null or absent).
    """
    _require(isinstance(record, Mapping), f"record: expected a JSON object, got {type(record).__name__}")
    variant = _field(record, "variant", "record")
    try:
        rules = get_rules(variant)
    except (TypeError, ValueError) as err:
        raise RecordError(f"record variant: {err}") from None
    seed = _field(record, "seed", "record")
    _require(
        _is_int(seed) and -(2**63) <= seed < 2**64,
        f"record seed: expected an integer in -2**63..2**64-1, got {seed!r}",
    )
    players = _field(record, "players", "record")
    _require(players == rules.num_players, f"record players: {variant!r} has {rules.num_players}, got {players!r}")
    sides = _field(record, "sides", "record")
    expected_sides = [list(s) for s in rules.sides]
    _require(sides == expected_sides, f"record sides: {variant!r} has {expected_sides}, got {sides!r}")
    target = _field(record, "target", "record")
    _require(target == rules.target, f"record target: {variant!r} plays to {rules.target}, got {target!r}")
    hands = _field(record, "hands", "record")
    _require(isinstance(hands, list), f"record hands: expected a list, got {type(hands).__name__}")
    winner = _field(record, "winner", "record")

    game = ReferenceGame(rules, seed)
    for h, hand in enumerate(hands):
        _require(
            not game.done,
            f"hand {h}: the match was already won by side {game.winner} after hand {h - 1} "
            f"(scores {game.scores}, target {rules.target}); the record has {len(hands) - h} hand(s) too many",
        )
        complete = _replay_hand(rules, game, h, hand)
        _require(
            complete or h == len(hands) - 1,
            f"hand {h}: incomplete ({len(hand['moves'])} moves) but further hands follow; only the last hand of an "
            f"unfinished match may be incomplete",
        )
    if game.done:
        _require(
            winner == game.winner,
            f"record winner: side {game.winner} won (scores {game.scores}, target {rules.target}), got {winner!r}",
        )
    else:
        _require(
            winner is None,
            f"record winner: the match is unfinished (scores {game.scores}, target {rules.target}, no side strictly "
            f"ahead at or above it) so winner must be null, got {winner!r}",
        )


def _check_deals(rules: Rules, h: int, deals: Any, dealer: int, seed: int) -> None:
    """Schedule, each card once, no void table, and equality with the seed's deal of hand ``h``."""
    deck, n = rules.deck, rules.num_players
    _require(
        isinstance(deals, list) and 1 <= len(deals) <= rules.num_deals,
        f"hand {h} deals: expected a list of 1..{rules.num_deals} deals for {rules.name!r}, got {deals!r}",
    )
    seen: dict[int, str] = {}

    def note(cards: list[int], where: str) -> None:
        for c in cards:
            _require(c not in seen, f"{where}: card {format_card(c, deck)} appears twice (also in {seen.get(c)})")
            seen[c] = where

    got_table: set[int] = set()
    got_packets: list[list[set[int]]] = []
    for d, deal in enumerate(deals):
        where = f"hand {h} deal {d}"
        if d == 0:
            table = _parse_list(_field(deal, "table", where), deck, f"{where} table")
            _require(
                len(table) == rules.table_cards,
                f"{where} table: {rules.name!r} lays {rules.table_cards} cards, got {len(table)}",
            )
            void = void_reason(rules, table)
            _require(
                void is None,
                f"{where} table: {card_texts(table, deck)}: {void}, so the deal is void and must be redone "
                f"({rules.name!r})",
            )
            note(table, f"{where} table")
            got_table = set(table)
        else:
            _require(isinstance(deal, Mapping), f"{where}: expected an object, got {type(deal).__name__}")
            _require(
                not deal.get("table"),
                f"{where}: later deals go to the players only, never to the table; got table {deal.get('table')}",
            )
        packets = _field(deal, "hands", where)
        _require(
            isinstance(packets, list) and len(packets) == n,
            f"{where} hands: expected one packet per seat ({n}), got {packets!r}",
        )
        got_packets.append([])
        for seat, packet in enumerate(packets):
            cards = _parse_list(packet, deck, f"{where} seat {seat}")
            _require(
                len(cards) == rules.deal_sizes[d],
                f"{where} seat {seat}: {rules.name!r} deals {rules.deal_sizes[d]} cards here, got {len(cards)}",
            )
            note(cards, f"{where} seat {seat}")
            got_packets[-1].append(set(cards))

    def matches(order: list[int]) -> bool:
        table, packets = deal_schedule(rules, order, dealer)
        return set(table) == got_table and all(
            [set(p) for p in packets[d]] == got_packets[d] for d in range(len(got_packets))
        )

    attempt, order = hand_deck(rules, seed, h)
    if matches(order):
        return
    others = [a for a in range(MAX_REDEAL_ATTEMPTS) if a != attempt and matches(shuffled_deck(rules, seed, h, a))]
    if others:
        raise RecordError(
            f"hand {h} deals: they are re-deal attempt {others[0]} of seed {seed}, but attempt {attempt} is the "
            f"first one whose table is not void"
        )
    table, packets = deal_schedule(rules, order, dealer)
    raise RecordError(
        f"hand {h} deals: not the deal of seed {seed} (attempt {attempt}, dealer {dealer}): expected table "
        f"{card_texts(table, deck)} and deal 0 {[card_texts(p, deck) for p in packets[0]]}, got table "
        f"{card_texts(got_table, deck)} "
        f"and deal 0 {[card_texts(p, deck) for p in got_packets[0]]}"
    )


def _replay_hand(rules: Rules, game: ReferenceGame, h: int, hand: Any) -> bool:
    """Check and replay hand ``h`` on ``game``; return whether the hand was played to its end."""
    deck = rules.deck
    where = f"hand {h}"
    dealer = _field(hand, "dealer", where)
    if h == 0:
        _require(
            dealer == game.dealer,
            f"{where} dealer: the first dealer drawn from seed {game.seed} is seat {game.dealer}, got {dealer!r}",
        )
    else:
        _require(
            dealer == game.dealer,
            f"{where} dealer: the dealer moves one seat per hand, so seat {game.dealer}, got {dealer!r}",
        )
    deals = _field(hand, "deals", where)
    _check_deals(rules, h, deals, game.dealer, game.seed)
    knocks = hand.get("knocks", [])
    if rules.knocks:
        _check_knock_entries(rules, h, knocks, deals)
    else:
        _require(knocks == [], f"{where} knocks: knocking is a cirulla rule; {rules.name!r} has none, got {knocks!r}")
    _check_table_take(rules, game, h, hand)
    moves = _field(hand, "moves", where)
    _require(isinstance(moves, list), f"{where} moves: expected a list, got {type(moves).__name__}")

    result: dict[str, Any] | None = None
    used = 0  # knock entries replayed so far
    for i, move in enumerate(moves):
        at = f"{where} move {i}"
        _require(
            result is None or not result["hand_over"],
            f"{at}: the hand ended after move {i - 1} (every card played) but the record has {len(moves) - i} "
            f"more move(s)",
        )
        used = _replay_knocks(rules, game, h, knocks, used, deals)
        seat = _field(move, "seat", at)
        _require(seat == game.current, f"{at}: seat {game.current} is to act, got seat {seat!r}")
        card_text = _field(move, "card", at)
        try:
            card = parse_card(card_text, deck)
        except (TypeError, ValueError) as err:
            raise RecordError(f"{at} card: {err}") from None
        _require(
            card in game.hands[seat],
            f"{at}: seat {seat} does not hold {format_card(card, deck)} (hand {card_texts(game.hands[seat], deck)})",
        )
        capture = frozenset(_parse_list(_field(move, "capture", at), deck, f"{at} capture"))
        legal = captures(rules, game.table, card)
        if legal:
            _require(
                capture in legal,
                f"{at}: {describe_move(card, capture, deck)} is not legal on table {card_texts(game.table, deck)}"
                f"{_why_illegal(rules, game.table, card, capture)}; the legal captures are "
                f"{[card_texts(c, deck) for c in legal]}",
            )
        else:
            _require(
                not capture,
                f"{at}: {describe_move(card, capture, deck)} is not legal on table {card_texts(game.table, deck)}; "
                f"{format_card(card, deck)} captures nothing there and must be laid (capture [])",
            )
        scopa = _field(move, "scopa", at)
        result = game.play(card, capture)
        _require(
            scopa is result["scopa"],
            f"{at} scopa: expected {str(result['scopa']).lower()} for {describe_move(card, capture, deck)}, "
            f"got {scopa!r}",
        )
        if not result["hand_over"]:
            dealt = game.deal_no + 1
            _require(
                dealt <= len(deals),
                f"{at}: after this move deal {game.deal_no} is dealt but the record lists only {len(deals)} deal(s)",
            )

    if result is None or not result["hand_over"]:
        used = _replay_knocks(rules, game, h, knocks, used, deals, cut=True)
        if used < len(knocks):
            raise RecordError(
                f"{where} knocks entry {used} (seat {knocks[used]['seat']}, deal {knocks[used]['deal']}): not made; "
                f"only {game.deal_no + 1} deal(s) were dealt by the last recorded move, and knocks are listed in the "
                f"order they were made"
            )
        dealt = game.deal_no + 1
        _require(
            len(deals) == dealt,
            f"{where} deals: {dealt} deal(s) were dealt by the last recorded move, the record lists {len(deals)}",
        )
        for key in ("leftover", "points", "scores"):
            _require(
                hand.get(key) is None,
                f"{where} {key}: the hand is incomplete ({len(moves)} moves) so it has no {key}, got {hand.get(key)!r}",
            )
        return False

    if used < len(knocks):
        raise RecordError(f"{where} knocks entry {used} ({knocks[used]}): never made")
    leftover_side, leftover_cards = result["leftover"]
    leftover = _field(hand, "leftover", where)
    got_side = _field(leftover, "side", f"{where} leftover")
    got_cards = frozenset(_parse_list(_field(leftover, "cards", f"{where} leftover"), deck, f"{where} leftover"))
    _require(
        got_side == leftover_side and got_cards == leftover_cards,
        f"{where} leftover: expected side {leftover_side} with {card_texts(leftover_cards, deck)}, "
        f"got side {got_side!r} with {card_texts(got_cards, deck)}",
    )
    points = _field(hand, "points", where)
    _require(
        isinstance(points, list) and len(points) == rules.num_sides,
        f"{where} points: expected one dict per side ({rules.num_sides}), got {points!r}",
    )
    for side, (want, got) in enumerate(zip(result["hand_points"], points, strict=True)):
        _require(
            isinstance(got, Mapping) and dict(got) == want,
            f"{where} points side {side}: expected {want}, got {got!r}",
        )
    scores = _field(hand, "scores", where)
    _require(scores == game.scores, f"{where} scores: expected cumulative {game.scores}, got {scores!r}")
    return True


def _why_illegal(rules: Rules, table: set[int], card: int, capture: frozenset[int]) -> str:
    """A few words on why a capture of table cards is not legal under cirulla's fifteens (else empty)."""
    if not rules.fifteens or not capture or not capture <= table:
        return ""
    n = rules.deck.num_ranks
    if rules.ace_takes_all and card % n == 0 and all(c % n != 0 for c in table):
        return " (an ace on a table without aces takes the whole table, its only capture)"
    value = card % n + 1
    taken = sum(c % n + 1 for c in capture)
    return (
        f" (played and taken cards add up to {value + taken}, not {FIFTEEN}; nor are the taken cards an equal rank "
        f"or a sum of two or more worth {value})"
    )


def _check_knock_entries(rules: Rules, h: int, knocks: Any, deals: list[Any]) -> None:
    """The shape of a cirulla hand's ``knocks``: a list of ``{seat, deal, kind, cards, points}`` entries."""
    where = f"hand {h} knocks"
    _require(isinstance(knocks, list), f"{where}: expected a list, got {type(knocks).__name__}")
    for k, entry in enumerate(knocks):
        at = f"{where} entry {k}"
        _require(isinstance(entry, Mapping), f"{at}: expected an object, got {type(entry).__name__}")
        keys = {"seat", "deal", "kind", "cards", "points"}
        _require(set(entry) == keys, f"{at}: expected the keys {sorted(keys)}, got {sorted(entry)}")
        _require(
            _is_int(entry["seat"]) and 0 <= entry["seat"] < rules.num_players,
            f"{at} seat: expected a seat 0..{rules.num_players - 1}, got {entry['seat']!r}",
        )
        _require(
            _is_int(entry["deal"]) and 0 <= entry["deal"] < len(deals),
            f"{at} deal: expected an index into this hand's {len(deals)} deal(s), got {entry['deal']!r}",
        )
        _require(entry["kind"] in KNOCK_POINTS, f"{at} kind: expected 'sum' or 'tris', got {entry['kind']!r}")
        _parse_list(entry["cards"], rules.deck, f"{at} cards")


def _replay_knocks(
    rules: Rules, game: ReferenceGame, h: int, knocks: list[Any], used: int, deals: list[Any], cut: bool = False
) -> int:
    """Replay the knock phase of the current deal from ``knocks[used:]``; return how many entries are used now.

    Every seat that may knock and has no entry next in the list declines. ``cut``: the record ends here, so stop
    once no entry for this deal is left (the remaining seats' decisions are not recorded)."""
    deck = rules.deck
    deal = game.deal_no
    while game.phase == "knock":
        seat = game.current
        entry = knocks[used] if used < len(knocks) else None
        if entry is None or entry["deal"] != deal or entry["seat"] != seat:
            if cut and not any(e["deal"] == deal for e in knocks[used:]):
                break
            game.knock(None)
            continue
        at = f"hand {h} knocks entry {used} (seat {seat}, deal {deal})"
        hand = game.hands[seat]
        cards = frozenset(_parse_list(entry["cards"], deck, f"{at} cards"))
        kind = entry["kind"]
        _require(
            kind in game.knock_options(),
            f"{at}: a {kind!r} knock is not legal: seat {seat}'s hand {card_texts(hand, deck)} does not qualify "
            f"({knock_why_not(rules, hand, kind)})",
        )
        _require(
            cards == hand,
            f"{at} cards: a knock reveals the seat's hand {card_texts(hand, deck)}, got {card_texts(cards, deck)}",
        )
        _require(
            entry["points"] == KNOCK_POINTS[kind],
            f"{at} points: a {kind!r} knock scores {KNOCK_POINTS[kind]}, got {entry['points']!r}",
        )
        game.knock(kind)
        used += 1
    if used < len(knocks) and knocks[used]["deal"] <= deal:
        entry = knocks[used]
        seat, d = entry["seat"], entry["deal"]
        dealt = frozenset(_parse_list(deals[d]["hands"][seat], deck, f"hand {h} deal {d} seat {seat}"))
        kinds = knock_kinds(rules, dealt)
        at = f"hand {h} knocks entry {used} (seat {seat}, deal {d})"
        if entry["kind"] not in kinds:
            raise RecordError(
                f"{at}: seat {seat}'s hand {card_texts(dealt, deck)} at deal {d} does not qualify for a "
                f"{entry['kind']!r} "
                f"knock ({knock_why_not(rules, dealt, entry['kind'])})"
            )
        raise RecordError(
            f"{at}: out of order; knocks are listed in the order they were made: deal by deal, each deal's in play "
            f"order from the player after the dealer"
        )
    return used


def _check_table_take(rules: Rules, game: ReferenceGame, h: int, hand: Mapping[str, Any]) -> None:
    """Cirulla's ``table_take`` of hand ``h`` (null or absent when the table was not taken)."""
    got = hand.get("table_take")
    take = game.table_take
    if take is None:
        _require(
            got is None,
            f"hand {h} table_take: the initial table does not total 15 or 30 (7c counting any value) or the variant "
            f"has no table take, so it must be null, got {got!r}",
        )
        return
    want = {"side": take["side"], "cards": card_texts(take["cards"], rules.deck), "scope": take["scope"]}
    ok = (
        isinstance(got, Mapping)
        and set(got) == set(want)
        and got["side"] == want["side"]
        and got["scope"] == want["scope"]
        and frozenset(_parse_list(got["cards"], rules.deck, f"hand {h} table_take cards")) == take["cards"]
    )
    _require(
        ok,
        f"hand {h} table_take: the initial table totals {FIFTEEN * take['scope']} (7c counting any value), so the "
        f"dealer's side takes it: expected {want}, got {got!r}",
    )


# --------------------------------------------------------------------------------------------------- a file


class RecordFileError(ScopaEnvError, ValueError):
    """A ``--check`` path that is not a records file at all: missing, a directory, unreadable or binary."""


_SNIFF = 8192
"""Bytes read from the start of a file to tell a binary file from a text one (a NUL byte means binary)."""
_MAGIC = {b"\x1f\x8b": "gzip-compressed (decompress it first)", b"PK\x03\x04": "a zip archive (a checkpoint?)"}


def _open_records(path: Path) -> BinaryIO:
    """``path`` opened for reading in binary mode, or ``RecordFileError`` saying why it is not a records file."""
    if "\0" in str(path):
        raise RecordFileError(f"{str(path)!r} holds a NUL character, which no file name can hold")
    if not path.exists():
        raise RecordFileError(f"no such file {str(path)!r}; give the path of a .jsonl file of records")
    if path.is_dir():
        raise RecordFileError(f"{str(path)!r} is a directory; give the path of a .jsonl file of records inside it")
    try:
        f = open(path, "rb")  # the caller closes it
        head = f.read(_SNIFF)
        f.seek(0)
    except OSError as e:
        raise RecordFileError(f"cannot read {str(path)!r}: {e.strerror or e}") from None
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            f.close()
            raise RecordFileError(f"{str(path)!r} is {what}, not a .jsonl file of records")
    if b"\0" in head:
        f.close()
        raise RecordFileError(f"{str(path)!r} is a binary file (it holds NUL bytes), not a .jsonl file of records")
    return f


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _parse_line(raw: bytes) -> tuple[Any, str | None]:
    """The JSON value of one line, or ``(None, reason)``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}); a record line is JSON text"
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant), None
    except json.JSONDecodeError as e:
        return None, f"not valid JSON ({e.msg} at column {e.colno})"
    except RecursionError:
        return None, f"not a record: JSON nested too deeply to read (a record is at most {MAX_DEPTH} levels deep)"
    except ValueError as e:  # duplicate keys, NaN / Infinity, integers of thousands of digits
        return None, f"not valid JSON ({e})"


def _check_values(record: dict[str, Any]) -> str | None:
    """Nesting depth, and numbers that are whole numbers: no booleans (but for ``scopa``), no fractions."""
    stack: list[tuple[Any, str, str, int]] = [(record, "record", "", 1)]
    while stack:
        value, where, key, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                return f"{where}: nested deeper than {MAX_DEPTH} levels; not a section-8 record"
            children: list[tuple[Any, str, str, int]]
            if isinstance(value, dict):
                children = [(v, f"{where}.{k}", k, depth + 1) for k, v in value.items()]
            else:
                children = [(v, f"{where}[{i}]", key, depth + 1) for i, v in enumerate(value)]
            stack.extend(reversed(children))  # the first problem in reading order is reported
        elif isinstance(value, bool) and key not in BOOL_KEYS:
            text = "true" if value else "false"
            return f"{where}: {text} is a boolean where a number is expected (JSON true is not 1); write {int(value)}"
        elif isinstance(value, float):
            return f"{where}: {value!r} is not a whole number; records hold integers only"
    return None


def _check_record(record: Any, allow_unfinished: bool) -> str | None:
    """Why ``record`` (one parsed line) is wrong, or None when it replays and is finished or marked unfinished."""
    if not isinstance(record, dict):
        return f"a record must be a JSON object, got {type(record).__name__}"
    reason = _check_values(record)
    if reason is not None:
        return reason
    hands = record.get("hands")
    if isinstance(hands, list) and not hands:
        return "record hands: empty; a record holds at least its first hand (the deals, and the moves played)"
    mark = record.get("unfinished", False)
    if mark is not True and mark is not False:
        return f"record unfinished: true or left out, got {mark!r}"
    if "unfinished" in record and mark is False:
        return "record unfinished: false is not a mark; leave the key out for a finished match"
    try:
        replay_record(record)
    except RecordError as e:
        return str(e)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError) as e:
        return f"malformed record ({type(e).__name__}: {e})"
    winner = record["winner"]
    if mark and winner is not None:
        return f"record unfinished: marked true but the match is over (side {winner} won); drop the key"
    if winner is None and not mark and not allow_unfinished:
        played = cast(list[dict[str, Any]], hands)  # replay_record checked the hands
        cut = "mid-hand" if played[-1].get("scores") is None else "after a complete hand"
        return (
            f"record winner: null, the match is unfinished ({len(played)} hand(s), cut {cut}); a truncated record? "
            'A file of deliberately unfinished games marks them with "unfinished": true, or check it with '
            "--allow-unfinished"
        )
    return None


def check_file(path: str | Path, allow_unfinished: bool = False) -> tuple[int, str | None]:
    """Replay every record of a ``.jsonl`` file with the reference engine.

    Returns ``(number of records checked, None)`` or ``(line number, reason)`` for the first wrong line (line 0: the
    file as a whole, e.g. it holds no record). ``allow_unfinished`` accepts unfinished matches (``"winner": null``)
    that are not marked ``"unfinished": true``. Raises ``RecordFileError`` when ``path`` is not a records file.
    """
    count = 0
    seen: dict[bytes, int] = {}
    with _open_records(Path(path)) as f:
        for lineno, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            record, reason = _parse_line(raw)
            if reason is None:
                reason = _check_record(record, allow_unfinished)
            if reason is None:
                digest = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).digest()
                if digest in seen:
                    reason = f"the same record as line {seen[digest]} (a duplicated line)"
                seen.setdefault(digest, lineno)
            if reason is not None:
                return lineno, reason
            count += 1
    if count == 0:
        return 0, "no records: the file is empty (or blank); a records file holds one JSON record per line"
    return count, None
