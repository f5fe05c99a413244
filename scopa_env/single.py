"""One game of Scopa in plain Python: the fast path under the single-game envs (``scopa_env.aec``, ``scopa_env.gym``).

The batched core (``scopa_env.core``) pays a fixed numpy cost per call whatever the batch size, which dominates
when the batch holds one game (PettingZoo's and Gymnasium's loops, and every library built on them).
``SingleGame`` keeps the state of ONE game in Python ints: each card set (a hand, the table, a pile, the picks) is
a bit mask with bit ``c`` for card id ``c``, so a move is a few integer operations. It plays exactly the core's
rules, with the core's own building blocks where they are not per-move: the same deals (``scopa_env.shuffle``),
the same capture tables (``scopa_env.captures``, read one entry at a time), the same hand scoring
(``scopa_env.scoring``), and observations laid out as ``core.observe`` (``core.OBS_VERSION``), bit for bit.
``tests/test_single.py`` checks it move for move, mask for mask and observation for observation against the core on
random games of every variant.

    game = SingleGame("classic", seed=7)
    obs = game.observe(game.current)           # == core.observe(rules, core.reset(rules, [7]))[0]
    result = game.step(int(np.flatnonzero(game.mask())[0]))
    state = game.to_state()                    # a core.State batch of one, for the core, the agents, state_io

``to_state`` / ``from_state`` convert to and from a ``core.State`` (a copy either way), for everything that works on
the batched core (the agents, ``driver.decide``, ``state_io``, rendering).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter as _itemgetter
from operator import truediv

import numpy as np
import numpy.typing as npt

from scopa_env import core
from scopa_env.captures import capture_table
from scopa_env.rules import Rules, get_rules

__all__ = ["CoreGame", "SingleGame", "SingleStep", "bits_of", "cards_of", "game_from_state", "new_game", "next_seed"]

_PLAY, _CHOOSE, _DONE = int(core.Phase.PLAY), int(core.Phase.CHOOSE), int(core.Phase.DONE)
_PLAY_CACHE_LIMIT = 1 << 16
"""Play-feature blocks kept per variant (keyed by the table); the cache is cleared when it grows past this."""
_LOOKUP_CACHE_LIMIT = 1 << 17
"""Capture look-ups kept per variant (keyed by the available cards' rank counts and the target)."""
_MASK_CACHE_LIMIT = 1 << 16
"""Read-only bool mask arrays kept per variant (keyed by the mask's bits); cleared when it grows past this."""


_frombuffer = np.frombuffer
_F32 = np.dtype(np.float32)
_U64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # scopa_env.shuffle's SplitMix64 constants
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _splitmix(x: int) -> int:
    """``shuffle.splitmix64`` of one value, in Python ints."""
    z = (x + _GOLDEN) & _U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _U64
    return z ^ (z >> 31)


def _match_seed(seed: int) -> int:
    """``seed`` as an int, checked to be a match seed in [0, 2**64)."""
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed}")
    return seed


def next_seed(seed: int) -> int:
    """``shuffle.derive_seed`` of one seed, in Python ints: the seed of the next game of the chain."""
    return _splitmix((seed ^ 0x5C0FA) & _U64)


def bits_of(cards: npt.ArrayLike) -> int:
    """A (D,) bool card mask as an int bit mask (bit ``c`` set for card ``c``)."""
    arr = np.asarray(cards, dtype=np.bool_).reshape(-1)
    return int.from_bytes(np.packbits(arr, bitorder="little").tobytes(), "little")


def cards_of(bits: int, num_cards: int) -> npt.NDArray[np.bool_]:
    """An int bit mask as a (num_cards,) bool card mask."""
    raw = np.frombuffer(bits.to_bytes((num_cards + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, count=num_cards, bitorder="little").view(np.bool_)


class _Consts:
    """Per-rules constants of the single-game engine, computed once per process."""

    def __init__(self, rules: Rules) -> None:
        deck = rules.deck
        self.rules = rules
        self.d = d = rules.num_cards
        self.r = r = deck.num_ranks
        self.n = n = rules.num_players
        self.s = s = rules.num_sides
        self.full = (1 << d) - 1
        self.rank = deck.rank.astype(np.int64).tolist()
        self.value = deck.value.astype(np.int64).tolist()
        self.rank_cards = [sum(1 << c for c in range(d) if self.rank[c] == k) for k in range(r)]
        self.same_rank = [self.rank_cards[self.rank[c]] for c in range(d)]
        """The cards of card c's rank (c included), by c."""
        self.next_seat = [(i + 1) % n for i in range(n)]
        self.side_of = list(rules.seat_side)
        self.deal_sizes = list(rules.deal_sizes)
        self.table_cards = rules.table_cards
        self.king = deck.king_rank
        self.ace_takes_all = rules.ace_takes_all
        self.settebello = deck.settebello
        self.seven = deck.ranks.index("7")
        self.key = int(core.rules_key(rules))
        with np.errstate(over="ignore"):
            self.card_golden_2 = np.arange(1, d + 1, dtype=np.uint64) * np.uint64(_GOLDEN)
            """Card c's ``c * golden`` (``shuffle.shuffled_decks``) plus splitmix64's own first addition of golden
            (uint64 products and sums wrap)."""
        self.coins = (1 << r) - 1  # suit 0, the coins (denari)
        prim = deck.primiera[:r].astype(np.int64).tolist()
        self.primiera_best = [max((prim[k] for k in range(r) if ranks >> k & 1), default=0) for ranks in range(1 << r)]
        """The best primiera value among the ranks of a rank bit mask (one suit's cards), by the mask (0 if none)."""
        self.suit_shifts = [suit * r for suit in range(4)]
        ct = capture_table(r, r)
        self.caps = ct.caps.tolist()
        self.weights = ct.weights.tolist()
        self.num_keys = ct.num_keys
        self.num_parts, self.union, self.sum_cards = ct.num_parts, ct.union, ct.sum_cards
        self.union_bits = self._union_bits()
        """``union_cards`` of every rank bit mask, by the mask."""
        # observation layout (core.observation_layout)
        self.obs_size = core.observation_size(rules)
        self.card_bits = (5 + s) * d
        self.card_bytes = (self.card_bits + 7) // 8
        self.mask_bytes = (d + 7) // 8
        pos = self.card_bits
        self.counters = pos  # scores (S), scope (S), stock (1), hand_sizes (N)
        pos += 2 * s + 1 + n
        self.dealer_pos = pos
        self.seat_pos = pos + n
        self.last_pos = pos + 2 * n
        self.onehots = pos
        self.onehots_stop = pos + 2 * n + s + 1
        self.onehot_base = 2 * s + 1 + n  # the number of counters before the one-hot blocks
        self.shifts = [i * d for i in range(5 + s)]
        self.side_rot = [[(own + i) % s for i in range(s)] for own in range(s)]
        self.seat_rot = [[(seat + i) % n for i in range(n)] for seat in range(n)]
        self.hand_f = [k / rules.max_hand_size for k in range(d + 1)]
        self.choosing_pos = self.onehots_stop
        self.plays_pos = self.choosing_pos + 1
        if self.plays_pos + 1 + 4 * r != self.obs_size:
            raise RuntimeError(
                f"scopa_env.single builds observation version {core.OBS_VERSION} and the core's layout has changed "
                f"(size {self.obs_size}); update SingleGame.observe with it"
            )
        self.target = rules.target
        self.max_hand = rules.max_hand_size
        self.plays: dict[int, bytes] = {}
        self.lookups: dict[int, tuple[int, int, bool]] = {}
        # the play features depend on the table's rank counts and on the settebello only: cache them by a key of
        # those (base 5 digits, one per rank, and a top digit for the settebello), summed card by card
        self.count_key = [5 ** self.rank[x] + (5**r if x == self.settebello else 0) for x in range(d)]
        self.byte_floats = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(
            np.float32
        )
        """(256, 8) float32: the bits of every byte, for writing card blocks 8 cards at a time."""
        self.byte_f32 = [row.tobytes() for row in self.byte_floats]
        """The float32 bytes of the 8 bits of every byte."""
        self.byte_i8 = [row.astype(np.int8).tobytes() for row in self.byte_floats]
        self.byte_bool = [row.astype(np.bool_).tobytes() for row in self.byte_floats]
        self.masks: dict[int, npt.NDArray[np.bool_]] = {}
        self.pack_counters = struct.Struct(f"<{self.onehot_base}f").pack
        """Packs the counters (scores, scope, stock, hand sizes) as float32 bytes."""
        self.card_cut = (self.card_bits % 8) * 4
        """Bytes of the last card byte's float32s that belong to the card blocks (0: all of them)."""
        self.onehot_bytes = self._onehot_bytes()
        """The float32 bytes of the one-hot blocks and ``choosing``, by
        ``((dealer_rel * N + seat) * (S + 1) + last_rel) * 2 + choosing``."""

    def _onehot_bytes(self) -> list[bytes]:
        """Every value of the dealer, seat and last-capturer one-hot blocks and ``choosing``, as float32 bytes."""
        n, s = self.n, self.s
        out = []
        for dealer_rel in range(n):
            for seat in range(n):
                for last_rel in range(s + 1):
                    for choosing in range(2):
                        vals = [0.0] * (2 * n + s + 2)
                        vals[dealer_rel] = vals[n + seat] = vals[2 * n + last_rel] = 1.0
                        vals[-1] = float(choosing)
                        out.append(struct.pack(f"<{len(vals)}f", *vals))
        return out

    def bool_mask(self, bits: int) -> npt.NDArray[np.bool_]:
        """(D,) bool, a new writable array: ``cards_of(bits, D)``, a copy of a cached read-only array."""
        arr = self.masks.get(bits)
        if arr is None:
            if len(self.masks) >= _MASK_CACHE_LIMIT:
                self.masks.clear()
            data = b"".join(map(self.byte_bool.__getitem__, bits.to_bytes(self.mask_bytes, "little")))
            arr = self.masks[bits] = np.frombuffer(data[: self.d], dtype=np.bool_)  # bytes: read-only
        return arr.copy()

    def deck_order(self, seed: int, hand_no: int, attempt: int) -> list[int]:
        """``shuffle.shuffled_decks`` of one game: the per-hand key in Python ints, the card keys in numpy."""
        key = _splitmix(_splitmix(seed ^ _splitmix((hand_no * 1_000_003 + attempt) & _U64)))
        z = self.card_golden_2 + np.uint64(key)  # shuffle.splitmix64(key + c * golden), in place
        z ^= z >> _S30
        z *= _M1
        z ^= z >> _S27
        z *= _M2
        z ^= z >> _S31
        order: list[int] = np.argsort(z, kind="stable").tolist()
        return order

    def _award(self, values: list[int], majority_of: int | None = None) -> list[int]:
        """``scoring._award`` for one hand: 1 to the side strictly ahead (or every side sharing a positive lead)."""
        top = max(values)
        if self.rules.shared_lead_scores:
            return [int(v == top and top > 0) for v in values]
        if majority_of is not None and self.rules.majority_needed:
            return [int(2 * v > majority_of) for v in values]
        alone = values.count(top) == 1 and top > 0
        return [int(alone and v == top) for v in values]

    def score(self, piles: list[int], scope: list[int]) -> list[list[int]]:
        """``scoring.score_hands`` of one hand: (S, 6) points per side in ``scoring.POINT_FIELDS`` order."""
        carte = [p.bit_count() for p in piles]
        denari = [(p & self.coins).bit_count() for p in piles]
        sette = [p >> self.settebello & 1 for p in piles]
        if self.rules.simple_primiera:
            prim = [(p & self.rank_cards[self.seven]).bit_count() for p in piles]
        else:
            prim = []
            best_of, full = self.primiera_best, self.coins  # coins: the rank bit mask of one whole suit
            for p in piles:
                best = [best_of[p >> shift & full] for shift in self.suit_shifts]  # each suit's best card
                prim.append(sum(best) if all(best) else 0)
        columns = [
            self._award(carte, self.d),
            self._award(denari, self.r),
            self._award(sette),
            self._award(prim),
            list(scope),
        ]
        out = [list(row) for row in zip(*columns, strict=True)]
        for row in out:
            row.append(sum(row))
        return out

    def lookup_key(self, cards: int, key: int, target: int) -> tuple[int, int, bool]:
        """``lookup_cards``, cached by the count key ``key`` of ``cards`` and the target."""
        k = key * 64 + target
        out = self.lookups.get(k)
        if out is None:
            if len(self.lookups) >= _LOOKUP_CACHE_LIMIT:
                self.lookups.clear()
            out = self.lookups[k] = self.lookup_cards(cards, target)
        return out

    def lookup_cards(self, cards: int, target: int) -> tuple[int, int, bool]:
        """``CaptureTable.lookup`` for the rank counts of the cards ``cards`` (one pass over them)."""
        caps, weights, rank = self.caps, self.weights, self.rank
        counts = [0] * self.r
        key = 0
        while cards:
            low = cards & -cards
            k = rank[low.bit_length() - 1]
            if counts[k] < caps[k]:
                key += weights[k]
            counts[k] += 1
            cards ^= low
        return self._lookup(counts, key + target * self.num_keys)

    def lookup(self, counts: list[int], target: int) -> tuple[int, int, bool]:
        """``CaptureTable.lookup`` for one game: (partitions that fit, rank bit mask of their union, unique)."""
        caps, weights = self.caps, self.weights
        key = 0
        for k, c in enumerate(counts):
            if c:
                key += (c if c < caps[k] else caps[k]) * weights[k]
        return self._lookup(counts, key + target * self.num_keys)

    def _lookup(self, counts: list[int], idx: int) -> tuple[int, int, bool]:
        nparts = self.num_parts.item(idx)
        union = self.union.item(idx)
        unique = False
        if nparts == 1:
            used = sum(c for k, c in enumerate(counts) if union >> k & 1)
            unique = used == self.sum_cards.item(idx)
        return nparts, union, unique

    def counts(self, cards: int) -> list[int]:
        """Cards of each rank in ``cards``."""
        out, rank = [0] * self.r, self.rank
        while cards:
            low = cards & -cards
            out[rank[low.bit_length() - 1]] += 1
            cards ^= low
        return out

    def _union_bits(self) -> list[int]:
        """``union_cards`` of every rank bit mask (index: the mask)."""
        return [self.union_cards(u) for u in range(1 << self.r)]

    def union_cards(self, union: int) -> int:
        """The cards of the ranks in the rank bit mask ``union``."""
        out = 0
        for k, m in enumerate(self.rank_cards):
            if union >> k & 1:
                out |= m
        return out

    def key_of(self, cards: int) -> int:
        """The count key of ``cards`` (the sum of ``count_key`` over them)."""
        key, count_key = 0, self.count_key
        while cards:
            low = cards & -cards
            key += count_key[low.bit_length() - 1]
            cards ^= low
        return key

    def play_features(self, table: int, key: int) -> bytes:
        """The ``plays`` block with ``table_sum`` in front (``core._play_features`` of one table) as float32 bytes,
        cached by the table's count key ``key``."""
        out = self.plays.get(key)
        if out is not None:
            return out
        r, seven = self.r, self.seven
        counts = self.counts(table)
        sette_on = table >> self.settebello & 1
        total = sum(c * (k + 1) for k, c in enumerate(counts))
        keep = (1 << (r + 1)) - 1
        sums_without = 1
        for k, c in enumerate(counts):
            for _ in range(c - (sette_on if k == seven else 0)):
                sums_without = (sums_without | sums_without << (k + 1)) & keep
        sums = sums_without | (sums_without << (seven + 1)) if sette_on else sums_without
        vals: list[float] = [total / 40.0]
        for k in range(r):
            v = k + 1
            equal = counts[k] > 0
            by_sum = bool(sums >> v & 1) and not equal
            captures = equal or by_sum
            if k == seven:
                sette = bool(sette_on)
            elif k > seven:
                sette = bool(sette_on) and by_sum and bool(sums_without >> (v - (seven + 1)) & 1)
            else:
                sette = False
            after = total - v if captures else total + v
            scopa = captures and after == 0
            if k == 0 and self.ace_takes_all and not equal and total > 0:
                captures, sette, after, scopa = True, sette or bool(sette_on), 0, False
            vals += [float(captures), float(scopa), float(sette), after / 40.0]
        out = np.array(vals, dtype="<f4").tobytes()
        if len(self.plays) >= _PLAY_CACHE_LIMIT:
            self.plays.clear()
        self.plays[key] = out
        return out


_CONSTS: dict[Rules, _Consts] = {}


def _consts(rules: Rules) -> _Consts:
    c = _CONSTS.get(rules)
    if c is None:
        c = _CONSTS[rules] = _Consts(rules)
    return c


@dataclass(slots=True)
class SingleStep:
    """What one ``SingleGame.step`` did (``core.StepInfo`` of one game, card sets as bit masks)."""

    seat: int
    """Seat that acted."""
    move_done: bool
    """A whole move (play plus capture or lay) was completed."""
    card: int
    """Card played by the completed move, else -1."""
    capture: int
    """Table cards taken by the completed move (bit mask; 0 for a lay)."""
    scopa: bool
    hand_over: bool
    """The hand ended with this move and was scored."""
    hand_points: npt.NDArray[np.int16] | None
    """(S, 6) points of the hand that ended (``scoring.POINT_FIELDS``), else None."""
    leftover_side: int
    leftover: int
    """Cards left on the table at the end of the hand (bit mask)."""
    match_over: bool
    winner: int
    """Winning side of a match that ended (else -1)."""
    new_hand: bool


class SingleGame:
    """One game of Scopa in plain Python ints, equal to the batched core's game of the same seed move for move.

    Attributes mirror ``core.State``'s fields for one game (card sets as int bit masks: ``hands`` is a list of N
    masks, ``piles`` of S). ``SingleGame(rules, seed)`` starts the match of ``seed`` (``core.reset``).
    """

    __slots__ = (
        "_c",
        "current",
        "deal_no",
        "dealer",
        "deck",
        "hand_no",
        "hands",
        "last_capturer",
        "pending",
        "phase",
        "picked",
        "piles",
        "rules",
        "scope",
        "scores",
        "seed",
        "stock_pos",
        "table",
        "table_key",
        "winner",
    )

    def __init__(self, rules: Rules | str, seed: int | None = None) -> None:
        self.rules = rules = get_rules(rules)
        self._c = _consts(rules)
        n, s = self._c.n, self._c.s
        self.hands = [0] * n
        self.table = 0
        self.table_key = 0
        """The count key of the table (``_Consts.key_of``), kept up to date move by move."""
        self.piles = [0] * s
        self.deck: list[int] = []
        self.stock_pos = 0
        self.current = 0
        self.dealer = 0
        self.phase = _PLAY
        self.pending = -1
        self.picked = 0
        self.last_capturer = -1
        self.scope = [0] * s
        self.scores = [0] * s
        self.hand_no = 0
        self.deal_no = 0
        self.seed = 0
        self.winner = -1
        if seed is not None:
            self.new_match(seed)

    # ------------------------------------------------------------------------------------------------ state

    def new_match(self, seed: int) -> None:
        """Start the match of ``seed`` (``core.reset``)."""
        self.seed = seed = _match_seed(seed)
        self.scores = [0] * self._c.s
        self.winner = -1
        self.hand_no = 0
        self.dealer = _splitmix(seed ^ 0xD1CE) % self._c.n  # shuffle.first_dealer
        self._start_hand()

    @classmethod
    def from_state(cls, rules: Rules | str, state: core.State, game: int = 0) -> SingleGame:
        """Game ``game`` of a core ``State`` (started under ``rules``) as a ``SingleGame`` (a copy)."""
        rules = get_rules(rules)
        if not isinstance(state, core.State):
            raise TypeError(f"state must be a scopa_env.core.State, got {type(state).__name__}")
        core.legal_action_mask(rules, state.take([game]))  # refuses a state of other rules, naming both
        g = cls(rules)
        g.hands = [bits_of(h) for h in state.hands[game]]
        g.table = bits_of(state.table[game])
        g.table_key = g._c.key_of(g.table)
        g.piles = [bits_of(p) for p in state.piles[game]]
        g.deck = state.deck[game].astype(np.int64).tolist()
        g.stock_pos = int(state.stock_pos[game])
        g.current = int(state.current[game])
        g.dealer = int(state.dealer[game])
        g.phase = int(state.phase[game])
        g.pending = int(state.pending[game])
        g.picked = bits_of(state.picked[game])
        g.last_capturer = int(state.last_capturer[game])
        g.scope = state.scope[game].astype(np.int64).tolist()
        g.scores = state.scores[game].astype(np.int64).tolist()
        g.hand_no = int(state.hand_no[game])
        g.deal_no = int(state.deal_no[game])
        g.seed = int(state.seed[game])
        g.winner = int(state.winner[game])
        return g

    def to_state(self) -> core.State:
        """This game as a ``core.State`` batch of one (new arrays: changing them does not change this game)."""
        c = self._c
        d, n, s = c.d, c.n, c.s
        big = 0  # every card set in one int: the hands, the table, the piles, the picks, d bits each
        for i, x in enumerate((*self.hands, self.table, *self.piles, self.picked)):
            big |= x << i * d
        nbits = (n + s + 2) * d
        data = bytearray(b"".join(map(c.byte_bool.__getitem__, big.to_bytes((nbits + 7) // 8, "little"))))
        cards = np.frombuffer(data, dtype=np.bool_)
        return core.State(
            hands=cards[: n * d].reshape(1, n, d),
            table=cards[n * d : (n + 1) * d].reshape(1, d),
            piles=cards[(n + 1) * d : (n + 1 + s) * d].reshape(1, s, d),
            deck=np.array([self.deck], dtype=np.int8),
            stock_pos=np.array([self.stock_pos], dtype=np.int16),
            current=np.array([self.current], dtype=np.int8),
            dealer=np.array([self.dealer], dtype=np.int8),
            phase=np.array([self.phase], dtype=np.int8),
            pending=np.array([self.pending], dtype=np.int8),
            picked=cards[(n + 1 + s) * d : nbits].reshape(1, d),
            last_capturer=np.array([self.last_capturer], dtype=np.int8),
            scope=np.array([self.scope], dtype=np.int16),
            scores=np.array([self.scores], dtype=np.int16),
            hand_no=np.array([self.hand_no], dtype=np.int32),
            deal_no=np.array([self.deal_no], dtype=np.int8),
            seed=np.array([self.seed], dtype=np.uint64),
            winner=np.array([self.winner], dtype=np.int8),
            rules_key=np.array([c.key], dtype=np.uint32),
        )

    @property
    def done(self) -> bool:
        """The match is over."""
        return self.phase == _DONE

    # ------------------------------------------------------------------------------------------------ dealing

    def _start_hand(self) -> None:
        c = self._c
        attempt = 0
        deck = c.deck_order(self.seed, self.hand_no, attempt)
        k = c.table_cards
        if self.rules.void_on_kings and k:
            while sum(1 for x in deck[:k] if c.rank[x] == c.king) >= 3:
                attempt += 1
                deck = c.deck_order(self.seed, self.hand_no, attempt)
        self.deck = deck
        self.hands = [0] * c.n
        self.piles = [0] * c.s
        self.picked = 0
        self.scope = [0] * c.s
        self.last_capturer = -1
        self.pending = -1
        self.phase = _PLAY
        table = 0
        for x in deck[:k]:
            table |= 1 << x
        self.table = table
        self.table_key = c.key_of(table)
        self.stock_pos = k
        self.deal_no = 0
        self._deal_round()
        self.current = (self.dealer + 1) % c.n

    def _deal_round(self) -> None:
        c = self._c
        size = c.deal_sizes[self.deal_no]
        pos = self.stock_pos
        for i in range(c.n):
            seat = (self.dealer + 1 + i) % c.n
            h = self.hands[seat]
            for x in self.deck[pos + i * size : pos + (i + 1) * size]:
                h |= 1 << x
            self.hands[seat] = h
        self.stock_pos = pos + c.n * size

    # ------------------------------------------------------------------------------------------------ legality

    def _choose_bits(self) -> int:
        c = self._c
        card = self.pending
        table = self.table
        same_rank = table & c.rank_cards[c.rank[card]]
        if same_rank:
            return same_rank
        avail = table & ~self.picked
        picked, target, key = self.picked, c.value[card], self.table_key
        while picked:
            low = picked & -picked
            x = low.bit_length() - 1
            target -= c.value[x]
            key -= c.count_key[x]
            picked ^= low
        _, union, _ = c.lookup_key(avail, key, target)
        return avail & c.union_cards(union)

    def legal_bits(self) -> int:
        """The legal actions as a bit mask (0 once the match is over)."""
        if self.phase == _PLAY:
            return self.hands[self.current]
        if self.phase == _CHOOSE:
            return self._choose_bits()
        return 0

    def mask(self) -> npt.NDArray[np.bool_]:
        """(D,) bool: the legal actions (``core.legal_action_mask`` of this game), a new array."""
        return self._c.bool_mask(self.legal_bits())

    def mask_int8(self) -> npt.NDArray[np.int8]:
        """(D,) int8: the legal actions as 0 / 1 (the AEC env's ``action_mask``)."""
        c = self._c
        data = bytearray(b"".join(map(c.byte_i8.__getitem__, self.legal_bits().to_bytes(c.mask_bytes, "little"))))
        del data[c.d :]
        return np.frombuffer(data, dtype=np.int8)

    # ------------------------------------------------------------------------------------------------ step

    def step(self, action: int) -> SingleStep:
        """Apply one action in place (``core.step`` of one game); ``core.IllegalActionError`` if it is not legal.

        A finished match ignores the action (as the core does).
        """
        seat = self.current
        out = self.play(int(action))
        if out is None:
            return SingleStep(seat, False, -1, 0, False, False, None, -1, 0, False, -1, False)
        if out.__class__ is tuple:
            card, capture, scopa = out  # type: ignore[misc]
            return SingleStep(seat, True, card, capture, scopa, False, None, -1, 0, False, -1, False)
        return out  # type: ignore[return-value]

    def play(self, action: int) -> SingleStep | tuple[int, int, bool] | None:
        """``step`` without building a ``SingleStep`` for every move (the envs' hot path): the same move and checks.

        Returns ``None`` when no move was completed (a pick, a play that waits for picks, a finished match),
        ``(card, capture, scopa)`` for a completed move within the hand (``capture`` a bit mask), and the
        ``SingleStep`` of ``step`` only when the move ended the hand (``hand_over``).
        """
        act = int(action)
        c = self._c
        phase = self.phase
        seat = self.current
        if phase == _PLAY:
            legal = self.hands[seat]
        elif phase == _CHOOSE:
            legal = self._choose_bits()
        else:
            return None
        if not (0 <= act < c.d and legal >> act & 1):
            self._raise_illegal(act)
        bit = 1 << act
        play = phase == _PLAY
        table = self.table
        if play:
            card = act
            self.hands[seat] = legal ^ bit
            self.pending = act
            picked = self.picked
            same = table & c.same_rank[act]
            equal = same != 0
        else:
            card = self.pending
            self.picked = picked = self.picked | bit
            same = 0
            equal = False
        ace_all = play and not equal and table != 0 and c.ace_takes_all and c.rank[card] == 0
        lay = sum_done = False
        capture = 0
        if not (equal or ace_all):
            target, key, p = c.value[card], self.table_key, picked
            while p:
                low = p & -p
                x = low.bit_length() - 1
                target -= c.value[x]
                key -= c.count_key[x]
                p ^= low
            found = c.lookups.get(key * 64 + target)  # lookup_key's cache, read here
            nparts, union, unique = found if found is not None else c.lookup_key(table & ~picked, key, target)
            lay = play and nparts == 0
            sum_done = target == 0 or unique
            if sum_done:
                capture = picked | (c.union_bits[union] & table)
        equal_done = equal and (same & (same - 1)) == 0  # exactly one table card of the played rank
        if equal_done:
            capture = same
        if ace_all:
            capture = table
        captures = sum_done or equal_done or ace_all
        if not (captures or lay):
            self.phase = _CHOOSE
            return None
        side = c.side_of[seat]
        if captures:
            table &= ~capture
            self.piles[side] |= capture | (1 << card)
            self.last_capturer = side
            if capture & (capture - 1):
                self.table_key -= c.key_of(capture)
            else:  # one card
                self.table_key -= c.count_key[capture.bit_length() - 1]
        else:
            table |= 1 << card
            self.table_key += c.count_key[card]
        self.table = table
        hands_empty = not any(self.hands)
        last_play = hands_empty and self.stock_pos >= c.d
        scopa = captures and table == 0 and not last_play and not ace_all
        if scopa:
            self.scope[side] += 1
        self.phase = _PLAY
        self.pending = -1
        self.picked = 0
        self.current = c.next_seat[seat]
        if hands_empty and not last_play:
            self.deal_no += 1
            self._deal_round()
        if not last_play:
            return card, capture, scopa
        return self._end_hand(SingleStep(seat, True, card, capture, scopa, True, None, -1, 0, False, -1, False))

    def _end_hand(self, info: SingleStep) -> SingleStep:
        c = self._c
        last, left = self.last_capturer, self.table
        info.leftover = left
        if last >= 0 and left:
            info.leftover_side = last
            self.piles[last] |= left
        self.table = 0
        self.table_key = 0
        points = c.score(self.piles, self.scope)
        info.hand_points = np.array(points, dtype=np.int16)
        self.scores = scores = [a + p[-1] for a, p in zip(self.scores, points, strict=True)]
        top = max(scores)
        win = scores.index(top) if top >= c.target and scores.count(top) == 1 else -1  # scoring.match_winners
        info.winner = self.winner = win
        if win >= 0:
            info.match_over = True
            self.phase = _DONE
        else:
            self.hand_no += 1
            self.dealer = (self.dealer + 1) % c.n
            self._start_hand()
            info.new_hand = True
        return info

    def _raise_illegal(self, act: int) -> None:
        from scopa_env.cards import format_card

        deck = self.rules.deck
        legal = [f"{x} ({format_card(x, deck)})" for x in range(self._c.d) if self.legal_bits() >> x & 1]
        what = f"{act} ({format_card(act, deck)})" if 0 <= act < self._c.d else str(act)
        raise core.IllegalActionError(
            f"game 0: action {what} is illegal for seat {self.current} in phase {core.Phase(self.phase).name}; "
            f"legal actions: {', '.join(legal)}"
        )

    # ------------------------------------------------------------------------------------------------ observation

    def observe(self, seat: int | None = None) -> npt.NDArray[np.float32]:
        """(obs_size,) float32: ``core.observe`` of this game for ``seat`` (default: the seat to act)."""
        c = self._c
        d, s, n = c.d, c.s, c.n
        seat = self.current if seat is None else seat
        if not 0 <= seat < n:
            raise ValueError(f"seat must be in 0..{n - 1} (this variant's seats), got {seat}")
        own = c.side_of[seat]
        hand, table, picked = self.hands[seat], self.table, self.picked
        pend = 1 << self.pending if self.pending >= 0 else 0
        seen = hand | table | picked | pend
        big = hand | table << d | pend << c.shifts[2] | picked << c.shifts[3]
        sides = c.side_rot[own]
        piles, scores, scope = self.piles, self.scores, self.scope
        if s == 2:
            p, q = piles[sides[0]], piles[sides[1]]
            seen |= p | q
            big |= p << c.shifts[5] | q << c.shifts[6]
        else:
            for i in range(s):
                p = piles[sides[i]]
                seen |= p
                big |= p << c.shifts[5 + i]
        big |= (c.full & ~seen) << c.shifts[4]
        # the counters (scores, scope, stock, hand sizes), then the one-hot blocks and ``choosing`` (cached bytes)
        stock = (d - self.stock_pos) / d
        hands, hand_f = self.hands, c.hand_f
        if s == 2:
            a, b = sides
            target = c.target
            counters = [scores[a] / target, scores[b] / target, scope[a] / 10.0, scope[b] / 10.0, stock]
        else:
            counters = list(map(truediv, map(scores.__getitem__, sides), repeat(c.target, s)))
            counters += map(truediv, map(scope.__getitem__, sides), repeat(10.0, s))
            counters.append(stock)
        if n == 2:
            counters += (hand_f[hands[seat].bit_count()], hand_f[hands[1 - seat].bit_count()])
        else:
            counters += [hand_f[hands[i].bit_count()] for i in c.seat_rot[seat]]
        last = self.last_capturer
        onehots = c.onehot_bytes[
            (((self.dealer - seat) % n * n + seat) * (s + 1) + (s if last < 0 else (last - own) % s)) * 2
            + (self.phase == _CHOOSE)
        ]
        plays = c.plays.get(self.table_key)  # play_features' cache, read here
        if plays is None:
            plays = c.play_features(table, self.table_key)
        # the float32 bytes of the card blocks 8 cards at a time (one look-up per byte of ``big``), then the
        # counters, the one-hot blocks and the play features
        blocks = _itemgetter(*big.to_bytes(c.card_bytes, "little"))(c.byte_f32)
        if c.card_cut:
            blocks = (*blocks[:-1], blocks[-1][: c.card_cut])
        tail = (c.pack_counters(*counters), onehots, plays)
        return _frombuffer(bytearray().join(blocks + tail), _F32)  # a tuple sum: the fastest join here


class CoreGame:
    """``SingleGame``'s interface on the batched core (a batch of one), for the variants ``SingleGame`` does not
    play: cirulla's (``Rules.cirulla``: knocks, fifteens and their ``stop`` / knock actions, ids up to
    ``rules.num_actions``). The same game as the core's, move for move (it *is* the core's); slower per move than
    ``SingleGame``. ``new_game`` and ``game_from_state`` pick the engine for a variant.

    Card sets read from it (``hands``, ``table``) are int bit masks as in ``SingleGame``; ``legal_bits``
    covers every action id (bit ``a`` for action ``a``).
    """

    __slots__ = ("_state", "rules")

    def __init__(self, rules: Rules | str, seed: int | None = None) -> None:
        self.rules = get_rules(rules)
        self._state: core.State | None = None
        if seed is not None:
            self.new_match(seed)

    def new_match(self, seed: int) -> None:
        """Start the match of ``seed`` (``core.reset``)."""
        self._state = core.reset(self.rules, np.array([_match_seed(seed)], dtype=np.uint64))

    @classmethod
    def from_state(cls, rules: Rules | str, state: core.State, game: int = 0) -> CoreGame:
        """Game ``game`` of a core ``State`` (started under ``rules``) as a ``CoreGame`` (a copy)."""
        rules = get_rules(rules)
        if not isinstance(state, core.State):
            raise TypeError(f"state must be a scopa_env.core.State, got {type(state).__name__}")
        one = state.take([game])
        core.legal_action_mask(rules, one)  # refuses a state of other rules, naming both
        g = cls(rules)
        g._state = one
        return g

    @property
    def state(self) -> core.State:
        if self._state is None:
            raise RuntimeError("the game has not started: call new_match(seed) first")
        return self._state

    def to_state(self) -> core.State:
        """This game as a ``core.State`` batch of one (a copy)."""
        return self.state.take([0])

    # the scalar fields SingleGame keeps as attributes
    current = property(lambda self: int(self.state.current[0]), doc="Seat to act.")
    phase = property(lambda self: int(self.state.phase[0]), doc="``core.Phase`` as an int.")
    hand_no = property(lambda self: int(self.state.hand_no[0]), doc="Hands finished in this match.")
    seed = property(lambda self: int(self.state.seed[0]), doc="The match's seed.")
    winner = property(lambda self: int(self.state.winner[0]), doc="Winning side once the match is over, else -1.")
    scores = property(lambda self: self.state.scores[0].astype(np.int64).tolist(), doc="Match scores by side.")
    hands = property(lambda self: [bits_of(h) for h in self.state.hands[0]], doc="Hands as bit masks, by seat.")
    table = property(lambda self: bits_of(self.state.table[0]), doc="The table as a bit mask.")

    @property
    def done(self) -> bool:
        """The match is over."""
        return self.phase == _DONE

    def mask(self) -> npt.NDArray[np.bool_]:
        """(num_actions,) bool: the legal actions (``core.legal_action_mask``), a new array."""
        return core.legal_action_mask(self.rules, self.state)[0]

    def mask_int8(self) -> npt.NDArray[np.int8]:
        """(num_actions,) int8: the legal actions as 0 / 1."""
        return self.mask().astype(np.int8)

    def legal_bits(self) -> int:
        """The legal actions as a bit mask (0 once the match is over)."""
        return bits_of(self.mask())

    def step(self, action: int) -> SingleStep:
        """Apply one action in place (``core.step``); ``core.IllegalActionError`` if it is not legal."""
        seat = self.current
        info = core.step(self.rules, self.state, np.array([int(action)], dtype=np.int64))
        hand_over = bool(info.hand_over[0])
        return SingleStep(
            seat,
            bool(info.move_done[0]),
            int(info.card[0]),
            bits_of(info.capture[0]),
            bool(info.scopa[0]),
            hand_over,
            info.hand_points[0].copy() if hand_over else None,
            int(info.leftover_side[0]),
            bits_of(info.leftover[0]),
            bool(info.match_over[0]),
            int(info.winner[0]),
            bool(info.new_hand[0]),
        )

    def play(self, action: int) -> SingleStep | tuple[int, int, bool] | None:
        """``SingleGame.play``'s contract: None, ``(card, capture, scopa)`` or the ``SingleStep`` of a hand's end."""
        if self.done:
            return None
        out = self.step(action)
        if out.hand_over:
            return out
        return (out.card, out.capture, out.scopa) if out.move_done else None

    def observe(self, seat: int | None = None) -> npt.NDArray[np.float32]:
        """(obs_size,) float32: ``core.observe`` of this game for ``seat`` (default: the seat to act)."""
        n = self.rules.num_players
        seat = self.current if seat is None else seat
        if not 0 <= seat < n:
            raise ValueError(f"seat must be in 0..{n - 1} (this variant's seats), got {seat}")
        return core.observe(self.rules, self.state, np.array([seat]))[0]


def new_game(rules: Rules | str, seed: int | None = None) -> SingleGame | CoreGame:
    """The single-game engine for ``rules``: ``SingleGame``, or ``CoreGame`` for the variants it does not play."""
    rules = get_rules(rules)
    return CoreGame(rules, seed) if rules.cirulla else SingleGame(rules, seed)


def game_from_state(rules: Rules | str, state: core.State, game: int = 0) -> SingleGame | CoreGame:
    """``new_game``'s engine holding game ``game`` of a core ``State`` (a copy)."""
    rules = get_rules(rules)
    return (CoreGame if rules.cirulla else SingleGame).from_state(rules, state, game)
