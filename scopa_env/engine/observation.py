"""The observation of the batched core: what each seat may know (RULES.md section 7), as one float32 row per game.

``observe(rules, state)`` is the vector the networks read; ``observation_layout(rules)`` names its blocks and
``observation_size`` is its length; ``observation_version`` is recorded in checkpoints and bots (``OBS_VERSION``,
or ``CIRULLA_OBS_VERSION`` under cirulla's rules): the family hook of the rules (``scopa_env.rules.variant``) says
which, and adds its blocks (cirulla's, ``scopa_env.rules.cirulla``). The compiled kernel
(``scopa_env.engine._kernel_observe``) computes the same numbers for one game (``tests/test_kernel.py``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scopa_env.engine.core import Phase, State, checked_tables, tables_for
from scopa_env.errors import whole_number
from scopa_env.rules import CATEGORIES, Rules, get_rules
from scopa_env.rules.arrays import hand_sizes, low_bits, rank_counts
from scopa_env.rules.variant import hook_class

__all__ = [
    "CIRULLA_OBS_VERSION",
    "OBS_VERSION",
    "PLAY_SUM_SCALE",
    "observation_bounds",
    "observation_layout",
    "observation_size",
    "observation_version",
    "observe",
    "play_features",
    "validate_max_hands",
]

OBS_VERSION = 2
"""Bumped whenever the observation layout or meaning changes; checkpoints record it.

Version history: 1, the card sets and counters; 2, adds the ``plays`` block (what a card of each value would do
on the current table). Cirulla's observations are version 3 (``observation_version``): version 2's layout with
cirulla's captures in ``plays``, then the ``revealed``, ``knocks``, ``knocking`` and ``fifteens`` blocks."""
CIRULLA_OBS_VERSION = 3
"""``observation_version`` of cirulla's rules."""


def observation_version(rules: Rules | str) -> int:
    """The observation version of a variant: ``OBS_VERSION`` (2), or 3 under cirulla's rules (its family's)."""
    return tables_for(get_rules(rules)).variant.obs_version


def observation_layout(rules: Rules | str) -> list[tuple[str, int, int, str]]:
    """The observation's blocks as ``(name, start, stop, meaning)``; see ``observe``."""
    rules = get_rules(rules)
    d, s, n = rules.num_cards, rules.num_sides, rules.num_players
    blocks = [
        ("hand", d, "own hand (card ids)"),
        ("table", d, "cards face up on the table"),
        ("pending", d, "card played whose capture is being chosen (CHOOSE phase)"),
        ("picked", d, "table cards picked so far for that capture"),
        ("unseen", d, "cards this seat has not seen: other players' hands and the stock"),
        ("piles", s * d, "cards captured this hand by each side, own side first, then in seat order"),
        ("scores", s, "match points of each side / target, own side first"),
        ("scope", s, "scope of each side this hand / 10, own side first"),
        ("stock", 1, "cards left in the stock / deck size"),
        ("hand_sizes", n, "cards in each seat's hand / max hand size, own seat first then in play order"),
        ("dealer", n, "one-hot: dealer's position relative to this seat (0 = self)"),
        ("seat", n, "one-hot: this seat's absolute index"),
        ("last_capturer", s + 1, "one-hot: side of the last capture this hand, relative; last entry = nobody"),
        ("choosing", 1, "1 in the CHOOSE phase"),
        ("table_sum", 1, "sum of the table's capture values / 40"),
        (
            "plays",
            4 * rules.deck.num_ranks,
            "for each card value v (rank order), 4 entries: a card of value v would capture; would make a scopa "
            "(clear the table); could take the settebello; table sum after the play (sum - v after a capture, "
            "sum + v after a lay) / 40",
        ),
    ]
    blocks = tables_for(rules).variant.observation_blocks(blocks)
    out, pos = [], 0
    for name, size, meaning in blocks:
        out.append((name, pos, pos + size, meaning))
        pos += size
    return out


def observation_size(rules: Rules | str) -> int:
    return observation_layout(rules)[-1][2]


def validate_max_hands(max_hands: int) -> int:
    """Return ``max_hands`` if it is a positive int, else raise."""
    if not whole_number(max_hands, 1):
        raise ValueError(f"max_hands must be a positive integer (hands before truncation), got {max_hands!r}")
    return int(max_hands)


_BOUNDED_BLOCKS = {
    "hand", "table", "pending", "picked", "unseen", "piles", "stock", "hand_sizes", "dealer", "seat",
    "last_capturer", "choosing", "revealed", "knocking", "fifteens",
}  # fmt: skip
"""Observation blocks whose values lie in [0, 1]; ``scores``, ``scope`` and ``knocks`` get their own bounds."""


def observation_bounds(rules: Rules | str, max_hands: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(low, high) of every observation entry, for a match truncated after ``max_hands`` hands: the ``Box`` of the
    AEC, parallel and Gymnasium envs and of the vector env.

    All blocks lie in [0, 1] except ``scores`` (points / target), ``scope`` (scope / 10) and the table sums
    of ``table_sum`` and ``plays`` (capture values / 40). A side makes at most
    ``P = seats per side * cards per seat per hand`` plays in a hand, so it has at most P scope and at most
    ``len(CATEGORIES) - 1 + P`` points in a hand (one point per other category). Under cirulla a side's seats
    knock at most once per deal each (10 points at most: ``knocks`` up to ``seats per side * deals``), its
    initial-table take adds up to 2 scope, napoli up to 10 points and grande 5.
    """
    rules = get_rules(rules)
    max_hands = validate_max_hands(max_hands)
    layout = observation_layout(rules)
    size = layout[-1][2]
    plays_per_side = max(len(side) for side in rules.sides) * sum(rules.deal_sizes)
    hand_points = len(CATEGORIES) - 1 + plays_per_side
    knock_high = max(len(side) for side in rules.sides) * rules.num_deals  # knock points / 10
    family = hook_class(rules)  # cirulla: the initial table's take, napoli, grande, the knocks
    plays_per_side += family.extra_scope
    hand_points += family.extra_hand_points(knock_high)
    high = np.ones(size, dtype=np.float32)
    for name, start, stop, _ in layout:
        if name == "scores":
            high[start:stop] = max(1.0, max_hands * hand_points / rules.target)
        elif name == "scope":
            high[start:stop] = max(1.0, plays_per_side / 10.0)
        elif name == "knocks":
            high[start:stop] = max(1.0, float(knock_high))
        elif name in ("table_sum", "plays"):  # sums of capture values / 40: at most the whole deck's
            high[start:stop] = max(1.0, float(rules.deck.value.astype(np.int64).sum()) / 40.0)
        elif name not in _BOUNDED_BLOCKS:
            raise RuntimeError(
                f"observation block {name!r} (OBS_VERSION {OBS_VERSION}) has no known bound; "
                "add it to scopa_env.engine.observation.observation_bounds"
            )
    return np.zeros(size, dtype=np.float32), high


def _check_seats(seats: npt.ArrayLike, batch: int, num_players: int) -> npt.NDArray[np.integer]:
    """``observe``'s ``seats`` as an integer array of shape () or (B,) with every seat in 0..N-1, else raise."""
    arr = np.asarray(seats)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"seats must be integer seat numbers 0..{num_players - 1}, got dtype {arr.dtype}")
    if arr.shape not in ((), (batch,)):
        raise ValueError(f"seats must be one seat or one per game, shape ({batch},), got shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= num_players):
        bad = int(arr.reshape(-1)[(arr.reshape(-1) < 0) | (arr.reshape(-1) >= num_players)][0])
        raise ValueError(f"seats must be in 0..{num_players - 1} (this variant's seats), got {bad}")
    return np.broadcast_to(arr, (batch,))


def observe(rules: Rules | str, state: State, seats: npt.ArrayLike | None = None) -> npt.NDArray[np.float32]:
    """(B, observation_size) float32: what each game's acting seat (or ``seats``) may know (RULES.md section 7).

    Layout: ``observation_layout(rules)``. Only the seat's own hand is shown; other hands and the stock appear
    only as the ``unseen`` set, which is the same whatever order or distribution those cards have. ``seats``: one
    seat for every game, or one per game, each in 0..N-1.
    """
    rules = get_rules(rules)
    tb = checked_tables(rules, state)
    b, d, s, n = state.batch_size, tb.d, rules.num_sides, rules.num_players
    ar = np.arange(b)
    seat = state.current if seats is None else _check_seats(seats, b, n)
    seat = np.where(seat < 0, 0, seat).astype(np.int64)
    own_side = tb.side_of[seat].astype(np.int64)
    obs = np.empty((b, observation_size(rules)), dtype=np.float32)  # every column is written below
    cards = np.zeros((b, 5 + s, d), dtype=np.bool_)  # the card blocks, converted to float in one go
    hand = cards[:, 0] = state.hands[ar, seat]
    cards[:, 1] = state.table
    gp = np.flatnonzero(state.pending >= 0)
    cards[gp, 2, state.pending[gp].astype(np.int64)] = True
    cards[:, 3] = state.picked
    rel_sides = (own_side[:, None] + np.arange(s)) % s  # (B, S)
    side_rows = ar[:, None] * s + rel_sides  # rows of the (B * S, ...) views, own side first
    piles = cards[:, 5:]
    np.take(state.piles.reshape(b * s, d), side_rows, axis=0, out=piles)  # (B, S, D)
    seen = hand | state.table | state.picked | cards[:, 2]
    for i in range(s):
        seen |= piles[:, i]
    np.logical_not(seen, out=cards[:, 4])
    pos = (5 + s) * d
    obs[:, :pos] = cards.reshape(b, pos)
    obs[:, pos : pos + s] = state.scores.reshape(-1)[side_rows] / rules.target
    pos += s
    obs[:, pos : pos + s] = state.scope.reshape(-1)[side_rows] / 10.0
    pos += s
    obs[:, pos] = (d - state.stock_pos) / d
    pos += 1
    rel_seats = (seat[:, None] + np.arange(n)) % n
    sizes = hand_sizes(state.hands)
    obs[:, pos : pos + n] = sizes.reshape(-1)[ar[:, None] * n + rel_seats] / rules.max_hand_size
    pos += n
    obs[:, pos : pos + 2 * n + s + 1] = 0.0
    obs[ar, pos + (state.dealer - seat) % n] = 1.0
    pos += n
    obs[ar, pos + seat] = 1.0
    pos += n
    last = state.last_capturer.astype(np.int64)
    obs[ar, pos + np.where(last < 0, s, (last - own_side) % s)] = 1.0
    pos += s + 1
    obs[:, pos] = state.phase == Phase.CHOOSE
    pos += 1
    play_features(rules, state.table, out=obs[:, pos : pos + 1 + 4 * tb.r])
    unseen = (4 * d, 5 * d)  # the ``unseen`` block (observation_layout's fifth)
    tb.variant.observe_blocks(state, seat, side_rows, obs, unseen, pos + 1 + 4 * tb.r)
    return obs


_COUNT_RADIX = 5
"""Cards of one rank in a set: 0..4 (four suits), the digits of ``_subset_sums``' table keys."""


class _SubsetSums:
    """``_subset_sums``' constants for one number of ranks, computed once."""

    def __init__(self, num_ranks: int) -> None:
        self.low = num_ranks // 2  # ranks counted in the keys; above them only presence matters
        low_keys = _COUNT_RADIX**self.low
        self.radix = np.concatenate(
            [_COUNT_RADIX ** np.arange(self.low), low_keys * 2 ** np.arange(num_ranks - self.low)]
        ).astype(np.float32)
        self.table = _subset_sum_table(num_ranks)


_SUBSET_SUMS: dict[int, _SubsetSums] = {}


def _low_subset_sums(num_ranks: int) -> npt.NDArray[np.uint64]:
    """Subset-sum bit sets of every multiset of the low ranks (values 1..R//2), indexed by their base-5 key."""
    low = num_ranks // 2
    out = np.zeros(_COUNT_RADIX**low, dtype=np.uint64)
    for key in range(_COUNT_RADIX**low):
        sums, k = 1, key
        for r in range(low):
            k, c = divmod(k, _COUNT_RADIX)
            for _ in range(c):  # one more card of value r + 1
                sums |= sums << (r + 1)
        out[key] = sums & 0xFFFF_FFFF_FFFF_FFFF
    return out


def _subset_sum_table(num_ranks: int) -> npt.NDArray[np.uint16]:
    """``_subset_sums``' table: bits 0..R of the subset sums, for every key (low-rank counts, high ranks present).

    Two cards of value above R // 2 add up to more than R, so a sum up to R holds at most one of them: the low
    cards' sums, plus those sums shifted by each high value present.
    """
    if num_ranks > 15:
        raise ValueError(f"subset-sum table: at most 15 ranks fit its 16-bit entries, got {num_ranks}")
    low = num_ranks // 2
    keep = np.uint64((1 << (num_ranks + 1)) - 1)
    low_sums = _low_subset_sums(num_ranks) & keep
    table = np.empty((2 ** (num_ranks - low), low_sums.size), dtype=np.uint16)
    for present in range(table.shape[0]):
        sums = low_sums.copy()
        for j in range(num_ranks - low):
            if present >> j & 1:
                sums |= low_sums << np.uint64(low + j + 1)
        table[present] = sums & keep
    return table.reshape(-1)


def _subset_sums(counts: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """(n, R) rank counts -> (n,) bit sets: bit s is set iff some set of those cards adds up to s, for s <= R
    (the largest card value, all the play features read); higher bits are 0. One table look-up."""
    num_ranks = counts.shape[1]
    sub = _SUBSET_SUMS.get(num_ranks)
    if sub is None:
        sub = _SUBSET_SUMS[num_ranks] = _SubsetSums(num_ranks)
    digits = counts.astype(np.float32)
    np.minimum(digits[:, sub.low :], 1.0, out=digits[:, sub.low :])  # high ranks: present or not
    key = (digits @ sub.radix).astype(np.intp)
    return sub.table[key].astype(np.uint64)


PLAY_SUM_SCALE = 40.0
"""``table_sum`` and the ``plays`` block's sums after a play are capture values divided by this."""


def play_features(
    rules: Rules, table: npt.NDArray[np.bool_], out: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]:
    """(B, 1 + 4R): table sum / 40, then per card value: captures, scopa, settebello, table sum after / 40.

    The same for every seat (it depends on the table only); ``observe`` places it after the seat's own blocks.
    Under ``rules.fifteens`` (cirulla) ``CirullaHook.play_features`` computes it instead.
    A capture by equal rank or by sum always takes cards worth exactly v in total, so the table keeps
    ``sum - v`` after it, and ``sum + v`` after a lay (ace-takes-all leaves 0). Sums are found with bit sets of
    subset sums: with no card of value v on the table, any set adding up to v has at least two cards.
    ``out``: a (B, 1 + 4R) float32 array (or view, such as the observation's columns) to write into.
    """
    tb = tables_for(rules)
    if rules.fifteens:  # cirulla's captures (only its family has fifteens)
        return tb.variant.play_features(table, out)  # type: ignore[union-attr]
    b, r = table.shape[0], tb.r
    deck = rules.deck
    sette_on_table = table[:, deck.settebello]
    counts = rank_counts(table, r)
    values = np.arange(1, r + 1)
    total = counts.astype(np.float32) @ values.astype(np.float32)  # (B,)
    seven = deck.ranks.index("7")
    without = counts.copy()
    without[:, seven] -= sette_on_table  # the table's cards other than the settebello
    sums_without = _subset_sums(without)
    sums = np.where(sette_on_table, sums_without | (sums_without << np.uint64(seven + 1)), sums_without)
    bits = low_bits(sums, r + 1)[:, 1:]  # (B, R): some set of table cards adds up to v
    equal = counts > 0  # (B, R): a card of value v takes an equal rank
    by_sum = bits & ~equal
    captures = equal | by_sum
    sette = np.zeros((b, r), dtype=np.bool_)
    sette[:, seven] = sette_on_table  # a 7 takes it as an equal rank
    above = np.arange(seven + 1, r)  # values above 7 take it in a sum with other cards worth the rest
    rest = above + 1 - (seven + 1)
    with_sette = low_bits(sums_without, r + 1)[:, rest]
    sette[:, above] = sette_on_table[:, None] & by_sum[:, above] & with_sette
    values_f = values.astype(np.float32)
    after = captures.astype(np.float32)
    after *= -2.0 * values_f
    after += values_f
    after += total[:, None]  # total - v after a capture, total + v after a lay
    scopa = captures & (after == 0)
    if rules.ace_takes_all:
        ace_all = ~equal[:, 0] & (total > 0)
        captures[:, 0] |= ace_all
        sette[:, 0] |= sette_on_table & ace_all
        after[:, 0] = np.where(ace_all, 0, after[:, 0])
        scopa[:, 0] &= ~ace_all
    if out is None:
        out = np.empty((b, 1 + 4 * r), dtype=np.float32)
    out[:, 0] = total / PLAY_SUM_SCALE
    per_value = out[:, 1:].reshape(b, r, 4)  # a view: the four features of each value side by side
    per_value[:, :, 0] = captures.astype(np.float32)  # cast first: a bool -> float cast into a strided view is slow
    per_value[:, :, 1] = scopa.astype(np.float32)
    per_value[:, :, 2] = sette.astype(np.float32)
    np.divide(after, PLAY_SUM_SCALE, out=per_value[:, :, 3])
    return out
