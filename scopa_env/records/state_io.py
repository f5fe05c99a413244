"""Save a game to JSON and start games from it: a saved position, or the first moves of a game record.

    text = state_to_json("classic", state, game=3)      # game 3 of a core.State batch, as JSON text
    one = state_from_json(text)                         # a core.State batch of one, the same position
    many = state_from_json([text, other_text])          # a batch of two (every entry of the same variant)
    start = state_from_record(record, moves=10)         # the position after a record's first 10 moves

A saved game holds *everything*, hidden cards included (every hand, the stock order and the game's seed, which
fixes the later hands' deals): it is a save file for whoever owns the game, not something to show a player.
Continuing a restored game with the same actions gives the same observations, masks and results as continuing the
original (``tests/test_state_io.py`` checks it on every variant).

The JSON object (``state_to_dict`` gives it as a dict; cards in RULES.md notation, ``"7d"``)::

    {"format": "scopa-state", "version": 1, "variant": "classic", "rules_key": 1234567890,
     "seed": 7, "hand_no": 0, "deal_no": 1, "dealer": 1, "current": 0, "phase": "PLAY",
     "hands": [["7d", "3c"], ["Ab", "2b", "5c"]], "table": ["4d"], "piles": [["Ks", "6s", "Jc"], []],
     "deck": ["4d", "6s", ...every card, in this hand's deal order...], "stock_pos": 16,
     "pending": null, "picked": [], "last_capturer": 0, "scope": [0, 0], "scores": [3, 5], "winner": null}

``deck[stock_pos:]`` is the stock; ``phase`` is ``PLAY``, ``CHOOSE`` (``pending`` is the card played, ``picked``
the table cards picked so far) or ``DONE`` (``winner`` is the winning side); ``last_capturer`` is a side or null;
``rules_key`` is ``core.rules_key`` of the variant (a save made under other rules is refused).

Cirulla (``cirulla``, ``cirulla-3``, ``cirulla-4``) saves three more keys (its family's ``state_fields``,
``scopa_env.rules.variant``), after ``winner``: ``revealed`` (per seat,
the cards shown by a knock and still in that hand), ``knock_points`` (per side, this hand) and ``table_take`` (the
scope of this hand's initial-table take, 0..2); ``phase`` may also be ``KNOCK`` (the seat ``current`` decides
whether to knock), and in ``CHOOSE`` the picked cards may be a whole capture inside a larger one (``stop``
pending). Saves without these keys load with them empty or 0, and other variants never write them (their JSON is
unchanged). Loading checks
everything the core relies on and raises ``StateFormatError`` (a ``ValueError``) naming the field and what it must
be: wrong variant, unknown keys, a card missing, duplicated or unknown, a stock position that does not match the
deal, a phase without its pending card, a position with no legal action...

The AEC env starts from a saved position with ``env.reset(options={"state": text})``
(``scopa_env.envs.aec``), the parallel env likewise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scopa_env.engine import core, state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.errors import ScopaEnvError, whole_number
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.cards import format_card, parse_card

__all__ = [
    "FORMAT",
    "VERSION",
    "StateFormatError",
    "state_from_dict",
    "state_from_json",
    "state_from_record",
    "state_to_dict",
    "state_to_json",
]

FORMAT = "scopa-state"
VERSION = 1
_KEYS = (
    "format", "version", "variant", "rules_key", "seed", "hand_no", "deal_no", "dealer", "current", "phase",
    "hands", "table", "piles", "deck", "stock_pos", "pending", "picked", "last_capturer", "scope", "scores", "winner",
)  # fmt: skip
_CIRULLA_KEYS = ("revealed", "knock_points", "table_take")
"""Keys a cirulla save adds (optional on loading: absent means empty / 0)."""


class StateFormatError(ScopaEnvError, ValueError):
    """A saved game (or a record prefix) that does not describe a valid position of its variant."""


# --------------------------------------------------------------------------------------------------- saving


def state_to_dict(rules: Rules | str, state: State, game: int = 0) -> dict[str, Any]:
    """Game ``game`` of ``state`` as a JSON-ready dict (see the module docstring); ``state`` is not changed."""
    rules = get_rules(rules)
    g = _game_index(state, game)
    if int(state.rules_key[g]) != core.rules_key(rules):
        raise ValueError(
            f"game {g} of the state was not started under the {rules.name!r} rules: pass the rules it was made with"
        )
    deck = rules.deck

    def cards(mask: np.ndarray) -> list[str]:
        return [format_card(int(c), deck) for c in np.flatnonzero(mask)]

    last = int(state.last_capturer[g])
    winner = int(state.winner[g])
    pending = int(state.pending[g])
    out = {
        "format": FORMAT,
        "version": VERSION,
        "variant": rules.name,
        "rules_key": core.rules_key(rules),
        "seed": int(state.seed[g]),
        "hand_no": int(state.hand_no[g]),
        "deal_no": int(state.deal_no[g]),
        "dealer": int(state.dealer[g]),
        "current": int(state.current[g]),
        "phase": Phase(int(state.phase[g])).name,
        "hands": [cards(state.hands[g, s]) for s in range(rules.num_players)],
        "table": cards(state.table[g]),
        "piles": [cards(state.piles[g, s]) for s in range(rules.num_sides)],
        "deck": [format_card(int(c), deck) for c in state.deck[g]],
        "stock_pos": int(state.stock_pos[g]),
        "pending": format_card(pending, deck) if pending >= 0 else None,
        "picked": cards(state.picked[g]),
        "last_capturer": last if last >= 0 else None,
        "scope": [int(x) for x in state.scope[g]],
        "scores": [int(x) for x in state.scores[g]],
        "winner": winner if winner >= 0 else None,
    }
    extra = core.tables_for(rules).variant.state_fields  # the family's: cirulla's three, else none
    if "revealed" in extra:
        out["revealed"] = [cards(state.revealed[g, s]) for s in range(rules.num_players)]
    if "knock_points" in extra:
        out["knock_points"] = [int(x) for x in state.knock_points[g]]
    if "table_take" in extra:
        out["table_take"] = int(state.table_take[g])
    return out


def state_to_json(rules: Rules | str, state: State, game: int = 0, indent: int | None = None) -> str:
    """Game ``game`` of ``state`` as JSON text (``state_to_dict``, dumped)."""
    return json.dumps(state_to_dict(rules, state, game), indent=indent)


def _game_index(state: State, game: int) -> int:
    if not isinstance(state, State):
        raise TypeError(f"state must be a scopa_env.engine.core.State, got {type(state).__name__}")
    if not whole_number(game, 0, state.batch_size - 1):
        raise ValueError(f"game must be an index 0..{state.batch_size - 1} into the state's games, got {game!r}")
    return int(game)


# --------------------------------------------------------------------------------------------------- loading


def state_from_json(data: str | bytes | Mapping[str, Any] | Sequence[Any], rules: Rules | str | None = None) -> State:
    """A ``core.State`` from saved games: one (JSON text, bytes or a dict) gives a batch of one, a list a batch.

    ``rules``: the variant the caller expects; a save of another variant is refused. Raises ``StateFormatError``
    naming what is wrong.
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StateFormatError(f"a saved game must be UTF-8 JSON text: {e}") from None
    if isinstance(data, str):
        data = _json(data, "a saved game must be JSON (state_to_json writes it)")
    if isinstance(data, Mapping):
        return _from_dict(data, rules)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        if not data:
            raise StateFormatError("an empty list of saved games: give at least one")
        states = []
        for i, item in enumerate(data):
            try:
                if isinstance(item, (bytes, bytearray)):
                    try:
                        item = bytes(item).decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise StateFormatError(f"must be UTF-8 JSON text: {e}") from None
                if isinstance(item, str):
                    item = _json(item, "must be JSON (state_to_json writes it)")
                if not isinstance(item, Mapping):
                    raise StateFormatError(f"must be a JSON object, got {type(item).__name__}")
                states.append(_from_dict(item, rules))
            except StateFormatError as e:
                raise StateFormatError(f"saved game {i}: {e}") from None
            rules = rules if rules is not None else str(item["variant"])
        return State.concat(states)
    raise StateFormatError(f"a saved game must be JSON text, a dict or a list of them, got {type(data).__name__}")


def _json(text: str, what: str) -> Any:
    """``json.loads(text)``; ``StateFormatError`` starting with ``what`` for text that is not JSON or nests too deeply
    for the parser (a saved game is a few levels deep)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise StateFormatError(f"{what}: {e}") from None
    except RecursionError:
        raise StateFormatError(f"{what}: it nests too deeply (a saved game is a few levels deep)") from None


def _from_dict(data: Mapping[str, Any], rules: Rules | str | None) -> State:
    """``state_from_dict``, with a structure too deep to check refused as a ``StateFormatError``."""
    try:
        return state_from_dict(data, rules)
    except RecursionError:
        raise StateFormatError("a saved game nests too deeply (a saved game is a few levels deep)") from None


def _int(d: Mapping[str, Any], key: str, lo: int, hi: int, *, null: bool = False) -> int:
    """``d[key]`` as an int in lo..hi (None -> -1 where ``null``)."""
    v = d[key]
    if v is None and null:
        return -1
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        what = f"an integer {lo}..{hi}" + (" or null" if null else "")
        raise StateFormatError(f"{key!r} must be {what}, got {v!r}")
    return v


def _card_list(value: Any, key: str, rules: Rules) -> list[int]:
    if not isinstance(value, list):
        raise StateFormatError(f"{key!r} must be a list of cards like ['7d', 'Ks'], got {value!r}")
    out = []
    for item in value:
        try:
            out.append(parse_card(item, rules.deck))
        except (TypeError, ValueError) as e:
            raise StateFormatError(f"{key!r}: {e}") from None
    if len(set(out)) != len(out):
        dup = next(c for c in out if out.count(c) > 1)
        raise StateFormatError(f"{key!r} lists {format_card(dup, rules.deck)} twice")
    return out


def _nested(value: Any, key: str, count: int, what: str, rules: Rules) -> list[list[int]]:
    if not isinstance(value, list) or len(value) != count:
        raise StateFormatError(f"{key!r} must be a list of {count} card lists (one per {what}), got {value!r}")
    return [_card_list(v, f"{key}[{i}]", rules) for i, v in enumerate(value)]


def _ints(value: Any, key: str, count: int, hi: int) -> list[int]:
    ok = isinstance(value, list) and len(value) == count
    ok = ok and all(not isinstance(v, bool) and isinstance(v, int) and 0 <= v <= hi for v in value)
    if not ok:
        raise StateFormatError(f"{key!r} must be a list of {count} integers 0..{hi} (one per side), got {value!r}")
    return list(value)


def state_from_dict(d: Mapping[str, Any], rules: Rules | str | None = None) -> State:
    """A ``core.State`` batch of one from ``state_to_dict``'s dict; ``StateFormatError`` naming what is wrong."""
    if not isinstance(d, Mapping):
        raise StateFormatError(f"a saved game must be a JSON object, got {type(d).__name__}")
    if d.get("format") != FORMAT:
        raise StateFormatError(f"not a saved Scopa game: 'format' must be {FORMAT!r}, got {d.get('format')!r}")
    if d.get("version") != VERSION:
        raise StateFormatError(f"saved-game version {d.get('version')!r} is not supported (this code reads {VERSION})")
    missing = [k for k in _KEYS if k not in d]
    unknown = sorted(set(d) - set(_KEYS) - set(_CIRULLA_KEYS))
    if missing or unknown:
        raise StateFormatError(f"saved game: missing keys {missing}, unknown keys {unknown}; expected {list(_KEYS)}")
    try:
        saved_rules = get_rules(d["variant"])
    except (TypeError, ValueError) as e:
        raise StateFormatError(f"'variant': {e}") from None
    if rules is not None and get_rules(rules) != saved_rules:
        raise StateFormatError(
            f"the saved game is a {saved_rules.name!r} game, but {get_rules(rules).name!r} was expected"
        )
    r = saved_rules
    if d["rules_key"] != core.rules_key(r):
        raise StateFormatError(
            f"'rules_key' {d['rules_key']!r} is not the key of the {r.name!r} rules ({core.rules_key(r)}): the game "
            "was saved under other rules (a changed or a different variant)"
        )
    n, s, num_cards = r.num_players, r.num_sides, r.num_cards
    phase_names = [p.name for p in Phase]
    if d["phase"] not in phase_names:
        raise StateFormatError(f"'phase' must be one of {phase_names}, got {d['phase']!r}")
    phase = Phase[d["phase"]]
    seed = _int(d, "seed", 0, 2**64 - 1)
    hand_no = _int(d, "hand_no", 0, 2**31 - 1)
    deal_no = _int(d, "deal_no", 0, r.num_deals - 1)
    dealer = _int(d, "dealer", 0, n - 1)
    current = _int(d, "current", 0, n - 1)
    stock_pos = _int(d, "stock_pos", 0, num_cards)
    last = _int(d, "last_capturer", 0, s - 1, null=True)
    winner = _int(d, "winner", 0, s - 1, null=True)
    scope = _ints(d["scope"], "scope", s, 2**15 - 1)
    scores = _ints(d["scores"], "scores", s, 2**15 - 1)
    hands = _nested(d["hands"], "hands", n, "seat", r)
    piles = _nested(d["piles"], "piles", s, "side", r)
    table = _card_list(d["table"], "table", r)
    picked = _card_list(d["picked"], "picked", r)
    deck = _card_list(d["deck"], "deck", r)
    if len(deck) != num_cards:
        raise StateFormatError(f"'deck' must list all {num_cards} cards of the {r.deck.name} deck, got {len(deck)}")
    pending = -1
    if d["pending"] is not None:
        pending = _card_list([d["pending"]], "pending", r)[0]

    dealt = r.table_cards + n * sum(r.deal_sizes[: deal_no + 1])
    if stock_pos != dealt:
        raise StateFormatError(
            f"'stock_pos' {stock_pos} does not match deal {deal_no}: the table and deals 0..{deal_no} take "
            f"{dealt} cards of the deck"
        )
    places: dict[int, str] = {}
    groups = [(f"hands[{i}]", h) for i, h in enumerate(hands)] + [("table", table)]
    groups += [(f"piles[{i}]", p) for i, p in enumerate(piles)] + [("pending", [pending] if pending >= 0 else [])]
    groups += [("the stock (deck[stock_pos:])", deck[stock_pos:])]
    for where, cards in groups:
        for c in cards:
            if c in places:
                raise StateFormatError(f"card {format_card(c, r.deck)} is both in {places[c]} and in {where}")
            places[c] = where
    if len(places) != num_cards:
        lost = next(c for c in range(num_cards) if c not in places)
        raise StateFormatError(
            f"card {format_card(lost, r.deck)} is nowhere: every card must be in a hand, on the table, in a pile, "
            "pending or in the stock"
        )
    if not set(picked) <= set(table):
        raise StateFormatError(f"'picked' cards must be on the table, got {d['picked']} with table {d['table']}")
    if (phase == Phase.CHOOSE) != (pending >= 0):
        raise StateFormatError(f"'pending' must be a card in the CHOOSE phase and null otherwise (phase {phase.name})")
    if phase != Phase.CHOOSE and picked:
        raise StateFormatError(f"'picked' must be empty outside the CHOOSE phase (phase {phase.name})")
    if (phase == Phase.DONE) != (winner >= 0):
        raise StateFormatError("'winner' must be a side once the match is over (phase DONE) and null before it")
    revealed, knock_points, table_take = _cirulla_fields(d, r, phase, hands, piles, deck, dealer)

    state = core.reset(r, [0])  # the right shapes and rules key; every field is overwritten below
    state.seed[0] = np.uint64(seed)
    state.hand_no[0], state.deal_no[0], state.dealer[0], state.current[0] = hand_no, deal_no, dealer, current
    state.phase[0], state.stock_pos[0], state.last_capturer[0], state.winner[0] = phase, stock_pos, last, winner
    state.pending[0] = pending
    state.scope[0], state.scores[0] = scope, scores
    state.deck[0] = deck
    state.knock_points[0], state.table_take[0] = knock_points, table_take
    for name, lists in (("hands", hands), ("piles", piles), ("revealed", revealed)):
        arr = getattr(state, name)
        arr[0] = False
        for i, cards in enumerate(lists):
            arr[0, i, cards] = True
    for name, cards in (("table", table), ("picked", picked)):
        arr = getattr(state, name)
        arr[0] = False
        arr[0, cards] = True
    if phase == Phase.KNOCK and not core.legal_action_mask(r, state)[0, r.num_cards + 1 :].any():
        raise StateFormatError(
            f"'phase' KNOCK: seat {current}'s hand allows no knock (three cards worth 9 or less, or three of a kind), "
            "so it has no knock decision"
        )
    if phase != Phase.DONE and not core.legal_action_mask(r, state)[0].any():
        what = "seat's hand is empty" if phase == Phase.PLAY else "pending card has no capture left to pick"
        raise StateFormatError(f"no legal action in this position: the acting {what} (seat {current})")
    return state


def _cirulla_fields(
    d: Mapping[str, Any],
    r: Rules,
    phase: Phase,
    hands: list[list[int]],
    piles: list[list[int]],
    deck: list[int],
    dealer: int,
) -> tuple[list[list[int]], list[int], int]:
    """The cirulla keys of a save (absent: empty / 0), checked: knocked cards in their seat's hand, the KNOCK
    phase and non-zero values only under rules that have them, a taken initial table in the dealer's side's pile."""
    n, s = r.num_players, r.num_sides
    revealed = _nested(d["revealed"], "revealed", n, "seat", r) if "revealed" in d else [[] for _ in range(n)]
    knock_points = _ints(d["knock_points"], "knock_points", s, 2**15 - 1) if "knock_points" in d else [0] * s
    table_take = _int(d, "table_take", 0, 2) if "table_take" in d else 0
    if not r.knocks:
        if phase == Phase.KNOCK:
            raise StateFormatError(f"'phase' KNOCK: {r.name!r} has no knock decisions (a cirulla rule)")
        if any(revealed) or any(knock_points):
            raise StateFormatError(f"'revealed' / 'knock_points': {r.name!r} has no knocks; leave them empty / 0")
    if table_take and not r.table_take:
        raise StateFormatError(f"'table_take': {r.name!r} has no initial-table take (a cirulla rule); leave it 0")
    for i, cards in enumerate(revealed):
        if not set(cards) <= set(hands[i]):
            raise StateFormatError(f"'revealed[{i}]' must be cards of seat {i}'s hand, got {d['revealed'][i]}")
    if table_take:
        taken = deck[: r.table_cards]
        side = r.seat_side[dealer]
        if not set(taken) <= set(piles[side]):
            raise StateFormatError(
                f"'table_take' {table_take}: the initial table (deck[:{r.table_cards}]) must be in the pile of the "
                f"dealer's side {side}"
            )
    return revealed, knock_points, table_take


# --------------------------------------------------------------------------------------------------- records


def state_from_record(record: str | Mapping[str, Any], moves: int | None = None) -> State:
    """The position after the first ``moves`` whole moves of a game record (RULES.md section 8); None: all of them.

    The record's variant and seed start the game (``core.reset``); each move is replayed as ``(card, capture)``
    and must be legal, by the seat the record names, with the deals the record shows (so a record made by another
    engine or edited by hand is refused with the move at fault). ``record``: one record as a dict or a JSON line.

    Cirulla: the knock decisions due before a replayed move are taken from the hand's ``knocks`` (a seat with no
    entry declines). Those due right after move ``moves`` are not taken: the position is then in the KNOCK phase,
    the decisions still to make (as after ``moves=0`` when a seat of the first deal may knock).
    """
    if isinstance(record, str):
        record = _json(record, "a record must be one JSON object (a line of a .jsonl file)")
    if not isinstance(record, Mapping) or "variant" not in record or "seed" not in record or "hands" not in record:
        raise StateFormatError("a record must be a JSON object with 'variant', 'seed' and 'hands' (RULES.md section 8)")
    try:
        rules = get_rules(record["variant"])
    except (TypeError, ValueError) as e:
        raise StateFormatError(f"record 'variant': {e}") from None
    seed = _int(record, "seed", 0, 2**64 - 1)
    if not isinstance(record["hands"], list):
        raise StateFormatError("record 'hands' must be a list of hands")
    total = sum(len(h.get("moves", [])) if isinstance(h, Mapping) else 0 for h in record["hands"])
    if moves is None:
        moves = total
    if not whole_number(moves, 0, total):
        raise StateFormatError(f"moves must be a number of moves 0..{total} (the record has {total}), got {moves!r}")
    state = core.reset(rules, np.array([seed], dtype=np.uint64))
    done = 0
    for h, hand in enumerate(record["hands"]):
        if done == moves:
            break
        where = f"record hand {h}"
        if not isinstance(hand, Mapping) or not isinstance(hand.get("moves"), list):
            raise StateFormatError(f"{where}: a hand must be an object with a 'moves' list")
        if int(state.hand_no[0]) != h:
            raise StateFormatError(f"{where}: the match had reached hand {int(state.hand_no[0])} instead")
        if hand.get("dealer") != int(state.dealer[0]):
            raise StateFormatError(
                f"{where}: dealer {hand.get('dealer')!r}, but seed {seed} deals from seat {int(state.dealer[0])}; "
                "was the record made by this engine?"
            )
        deals = hand.get("deals")
        if isinstance(deals, list) and deals and isinstance(deals[0], Mapping) and "table" in deals[0]:
            table = sorted(_card_list(deals[0]["table"], f"hands[{h}].deals[0].table", rules))
            if table != sorted(state.deck[0, : rules.table_cards].tolist()):  # as dealt (before a cirulla take)
                raise StateFormatError(f"{where}: its first table is not the one seed {seed} deals")
        knocks = hand.get("knocks") or []
        if not isinstance(knocks, list) or (knocks and not rules.knocks):
            raise StateFormatError(f"{where}: 'knocks' must be a list, and empty unless the variant has knocks")
        used = 0
        for m, move in enumerate(hand["moves"]):
            if done == moves:
                break
            used = _replay_knocks(rules, state, knocks, used, where)
            _replay_move(rules, state, move, f"{where}, move {m}")
            done += 1
    return state


_KNOCK_ACTIONS = {"sum": 1, "tris": 2}
"""A record's knock ``kind`` -> its action's offset from ``num_cards`` (``knock-sum``, ``knock-tris``)."""


def _replay_knocks(rules: Rules, state: State, knocks: list[Any], used: int, where: str) -> int:
    """Cirulla: the KNOCK phase before the next move, from ``knocks[used:]`` (every seat to decide that has no entry
    next declines); returns how many entries are used now."""
    while state.phase[0] == Phase.KNOCK:
        seat, deal = int(state.current[0]), int(state.deal_no[0])
        entry = knocks[used] if used < len(knocks) else None
        action = core.stop_action(rules)
        if isinstance(entry, Mapping) and entry.get("seat") == seat and entry.get("deal") == deal:
            at = f"{where}, knocks entry {used} (seat {seat}, deal {deal})"
            kind = entry.get("kind")
            if kind not in _KNOCK_ACTIONS:
                raise StateFormatError(f"{at}: 'kind' must be 'sum' or 'tris', got {kind!r}")
            action = rules.num_cards + _KNOCK_ACTIONS[kind]
            if not core.legal_action_mask(rules, state)[0, action]:
                hand = [format_card(int(c), rules.deck) for c in np.flatnonzero(state.hands[0, seat])]
                raise StateFormatError(f"{at}: a {kind!r} knock is not legal with the hand {hand}")
            if (
                sorted(_card_list(entry.get("cards"), f"{at} 'cards'", rules))
                != np.flatnonzero(state.hands[0, seat]).tolist()
            ):
                raise StateFormatError(f"{at}: 'cards' must be the seat's hand, got {entry.get('cards')!r}")
            used += 1
        core.step(rules, state, np.array([action], dtype=np.int64))
    if used < len(knocks):
        entry = knocks[used]
        late = not isinstance(entry, Mapping) or not isinstance(entry.get("deal"), int)
        if late or entry["deal"] <= int(state.deal_no[0]):
            raise StateFormatError(
                f"{where}, knocks entry {used} ({entry!r}): not made; knocks are listed in the order they were made, "
                "each right after its deal by a seat whose hand allows it"
            )
    return used


def _replay_move(rules: Rules, state: State, move: Any, where: str) -> None:
    if not isinstance(move, Mapping) or not {"seat", "card", "capture"} <= set(move):
        raise StateFormatError(f"{where}: a move must be an object with 'seat', 'card' and 'capture'")
    if move["seat"] != int(state.current[0]):
        raise StateFormatError(f"{where}: seat {move['seat']!r} moves, but it is seat {int(state.current[0])}'s turn")
    card = _card_list([move["card"]], f"{where} 'card'", rules)[0]
    capture = frozenset(_card_list(move["capture"], f"{where} 'capture'", rules))
    legal = state_moves.legal_moves(rules, state, 0)
    if (card, capture) not in legal:
        shown = ", ".join(
            f"{format_card(c, rules.deck)}x[{' '.join(format_card(t, rules.deck) for t in sorted(cap))}]"
            for c, cap in legal
        )
        raise StateFormatError(f"{where}: move {move['card']} taking {move['capture']} is not legal; legal: {shown}")
    captures = np.zeros((1, rules.num_cards), dtype=np.bool_)
    captures[0, list(capture)] = True
    while True:
        action = state_moves.move_actions(state, [card], captures)
        info = core.step(rules, state, action)
        if info.move_done[0]:
            return
