"""Shared, batched move evaluation for the rule-based and search agents (one implementation of each heuristic).

Everything here works on many games at once in numpy and reads only what the acting seat may know (RULES.md
section 7): its own hand, the table, the piles, hand sizes, the stock size and the set of unseen cards.

- ``card_weights`` / ``CardWeights``: the immediate value of capturing each card, in rough hand points
  (carte, denari, settebello, primiera; in cirulla also the napoli and grande coins).
- ``generate_moves``: the candidate whole moves ``(card, capture)`` of each game: one per move class of the core's
  enumerator (``scopa_env.engine.state_moves.move_classes``; the capture rules live there only). A capture by sum is
  listed once per *rank multiset* (partition of the played card's value), taking the most valuable suits of each rank
  (coins first): captures that differ only in the suits taken within a rank are merged (the other choices can only
  matter for the primiera's suit coverage). In the CHOOSE phase only completions of the cards already picked are
  listed. This module adds only what depends on the card weights (the gains, the best suits). Cirulla's fifteens
  are classes of their own (``MoveKind.FIFTEEN``, a rank multiset like a sum).
- the table's offers (the best weight ``k`` cards of each rank fetch) come from ``agents.baselines.table_eval``.
- ``greedy_scores``: the greedy heuristic (immediate value: cards, coins, settebello, primiera cards, scopa).
- ``expert_scores``: greedy with pile-aware weights, minus the expected value of the next opponent's best reply
  (scope, sevens and coins left on the table), estimated from the unseen cards (card counting), plus a bonus for
  laying one of a pair (doubles).
- ``choose`` / ``pick_best``: the best candidate of each game, and the action that carries it out.
- ``knock_actions`` / ``act_with_knocks``: cirulla's KNOCK phase (knock whenever allowed, three of a kind first, or
  never), for the games a policy is asked about in that phase.

Within one rank the cards are always taken in a fixed order (cards already picked in the CHOOSE phase first, then
suit order: coins first). This is the most valuable order because every weight vector used here gives the coin
of a rank at least the weight of the other suits, which are equal (``table_eval.check_weights`` checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError
from agents.baselines.table_eval import BIG, TableEval, evaluate_tables, feature_tables, hit_probability
from scopa_env.engine import core, state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import Rules
from scopa_env.rules.moves import MAX_PER_RANK, MoveClasses, MoveKind

__all__ = [
    "KNOCK_RULES",
    "CardWeights",
    "KnockRule",
    "MoveContext",
    "Moves",
    "StatePolicy",
    "act_with_knocks",
    "card_weights",
    "check_at_least",
    "check_knock_rule",
    "choose",
    "dynamic_weights",
    "expert_scores",
    "generate_moves",
    "greedy_scores",
    "knock_actions",
    "pick_best",
    "require_state",
    "segment_argmax",
    "unseen_cards",
]

# plain ints: enum attribute look-ups are slow
_LAY, _EQUAL, _SUM, _ACE_ALL = int(MoveKind.LAY), int(MoveKind.EQUAL), int(MoveKind.SUM), int(MoveKind.ACE_ALL)
_PLAY, _DONE, _KNOCK = int(Phase.PLAY), int(Phase.DONE), int(Phase.KNOCK)


@dataclass(frozen=True)
class CardWeights:
    """Immediate value of capturing one card, in approximate hand points, and the greedy / expert knobs."""

    card: float = 0.1
    """Every card (carte: most cards)."""
    coin: float = 0.25
    """Extra for a coin (denari: most coins)."""
    settebello: float = 1.0
    """Extra for the seven of coins (a point of its own)."""
    seven: float = 0.3
    """Extra for a seven (primiera; with the beginners' primiera, most sevens)."""
    six: float = 0.15
    """Extra for a six (primiera value 18; unused with the beginners' primiera)."""
    ace: float = 0.08
    """Extra for an ace (primiera value 16; unused with the beginners' primiera)."""
    five: float = 0.04
    """Extra for a five (primiera value 15; unused with the beginners' primiera)."""
    scopa: float = 1.0
    """Value of a scopa (one point)."""
    lay: float = 1.0
    """A lay scores minus ``lay`` times the weight of the card laid (lay the least valuable card)."""
    reply: float = 1.0
    """Expert: weight of the next opponent's expected best reply, subtracted from a move's value."""
    doubles: float = 0.5
    """Expert: weight of the bonus for laying one card of a pair (taken back next turn if the opponent cannot)."""
    napoli_grande: float = 1.0
    """Cirulla: scale of the napoli (``Ad 2d 3d``: 3 points, and its run) and grande (``Jd Qd Kd``: 5 points) values
    of those coins (``card_weights``; ``dynamic_weights`` follows who already holds which)."""

    def __post_init__(self) -> None:
        for name in (
            "card",
            "coin",
            "settebello",
            "seven",
            "six",
            "ace",
            "five",
            "scopa",
            "lay",
            "reply",
            "doubles",
            "napoli_grande",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"CardWeights.{name} must be >= 0, got {getattr(self, name)}")


DEFAULT_WEIGHTS = CardWeights()


@lru_cache(maxsize=64)
def _static_weights(rules: Rules, weights: CardWeights) -> npt.NDArray[np.float64]:
    deck = rules.deck
    rank_value = deck.value.astype(np.int64)
    w = np.full(rules.num_cards, weights.card)
    w[deck.suit == 0] += weights.coin
    w[deck.settebello] += weights.settebello
    w[rank_value == 7] += weights.seven
    if not rules.simple_primiera:
        w[rank_value == 6] += weights.six
        w[rank_value == 1] += weights.ace
        w[rank_value == 5] += weights.five
    if rules.napoli_grande:
        combos = _combos(rules)
        for cards, points in ((combos.napoli, NAPOLI_POINTS), (combos.grande, GRANDE_POINTS)):
            w[cards] += weights.napoli_grande * points * _COMBO_CHANCE[0]
        w[combos.run[0]] += weights.napoli_grande * _RUN_START
    w.setflags(write=False)
    return w


NAPOLI_POINTS = 3
"""Cirulla: points of a napoli (``Ad 2d 3d`` in one pile); each further coin of its run adds 1."""
GRANDE_POINTS = 5
"""Cirulla: points of a grande (``Jd Qd Kd`` in one pile)."""
_COMBO_CHANCE = (0.25, 0.5, 1.0)
"""Value of capturing a card of a three-card combination, as a share of its points, by the cards of it one side
already holds (0, 1, 2): the chance that side then completes it if each card still out goes either way."""
_RUN_START = 0.125
"""Value of ``4d`` (the napoli run's first coin) while nobody holds a napoli yet: one point times the chance of a
napoli."""


@dataclass(frozen=True)
class _Combos:
    napoli: npt.NDArray[np.intp]
    """(3,) ``Ad 2d 3d``."""
    grande: npt.NDArray[np.intp]
    """(3,) ``Jd Qd Kd``."""
    run: npt.NDArray[np.intp]
    """(7,) the napoli run ``4d 5d 6d 7d Jd Qd Kd``."""


@lru_cache(maxsize=8)
def _combos(rules: Rules) -> _Combos:
    from scopa_env.rules.scoring import NAPOLI_RUN

    ranks = list(rules.deck.ranks)
    coin = [i for i in range(rules.num_cards) if rules.deck.suit[i] == 0]
    by_rank = {ranks[int(rules.deck.rank[i])]: i for i in coin}
    return _Combos(
        napoli=np.array([by_rank[x] for x in ("A", "2", "3")], dtype=np.intp),
        grande=np.array([by_rank[x] for x in ("J", "Q", "K")], dtype=np.intp),
        run=np.array([by_rank[x] for x in NAPOLI_RUN], dtype=np.intp),
    )


def _combo_weights(
    rules: Rules, state: State, games: npt.NDArray[np.intp], w: npt.NDArray[np.float64], weights: CardWeights
) -> None:
    """Cirulla: ``w`` (n, D) with the napoli and grande values of the static weights replaced by ones that know the
    piles: a combination some other side has started is worth denying it, one two sides have started is dead, one
    the acting side has started is worth more with each card of it held; once a side holds a napoli, the next coin
    of its run is worth a point (to take or to deny)."""
    combos = _combos(rules)
    scale = weights.napoli_grande
    n = games.size
    ar = np.arange(n)
    my_side = np.asarray(rules.seat_side, dtype=np.intp)[state.current[games].astype(np.intp)]
    piles = state.piles[games]  # (n, S, D)
    chance = np.asarray(_COMBO_CHANCE)
    for cards, points in ((combos.napoli, NAPOLI_POINTS), (combos.grande, GRANDE_POINTS)):
        held = piles[:, :, cards].sum(axis=2)  # (n, S)
        mine = held[ar, my_side]
        others = held.copy()
        others[ar, my_side] = 0
        theirs = others.max(axis=1)
        started = np.maximum(mine, theirs).clip(max=2)
        value = np.where((mine > 0) & (theirs > 0), 0.0, points * chance[started])
        w[:, cards] += scale * (value - points * chance[0])[:, None]
    # The napoli run: the next coin of a napoli's run is worth a point, to whoever takes it.
    run = combos.run
    base = np.asarray(piles[:, :, combos.napoli].all(axis=2), dtype=np.bool_)  # (n, S) holds a napoli
    prefix = np.cumprod(piles[:, :, run], axis=2).sum(axis=2)  # (n, S) run coins held in sequence
    owner = base.any(axis=1)
    nxt = prefix[ar, base.argmax(axis=1)]
    w[:, run[0]] -= scale * _RUN_START
    napoli_alive = ~owner & ~((piles[:, :, combos.napoli].any(axis=2)).sum(axis=1) >= 2)
    w[napoli_alive, run[0]] += scale * _RUN_START
    gets = np.flatnonzero(owner & (nxt < run.size))
    w[gets, run[nxt[gets]]] += scale * 1.0


def card_weights(rules: Rules, weights: CardWeights = DEFAULT_WEIGHTS) -> npt.NDArray[np.float64]:
    """(D,) float64: the static capture value of each card id (read-only, cached per rules and weights)."""
    return _static_weights(rules, weights)


def dynamic_weights(
    rules: Rules, state: State, games: npt.NDArray[np.intp], weights: CardWeights = DEFAULT_WEIGHTS
) -> npt.NDArray[np.float64]:
    """(n, D) capture values that remember the piles: a category already decided is worth nothing more.

    With two sides, carte is decided once a side holds more than half the cards and denari once a side holds
    more than half the coins. With more sides the static weights are returned, except for cirulla's napoli and
    grande coins, valued by who holds which (any number of sides).
    """
    w = np.repeat(card_weights(rules, weights)[None, :], len(games), axis=0)
    if rules.napoli_grande:
        _combo_weights(rules, state, np.asarray(games, dtype=np.intp), w, weights)
    if rules.num_sides != 2:
        return w
    deck = rules.deck
    piles = state.piles[games]  # (n, S, D)
    carte_done = (piles.sum(axis=2) > rules.num_cards // 2).any(axis=1)
    coins = piles[:, :, deck.suit == 0].sum(axis=2)
    denari_done = (coins > deck.num_ranks // 2).any(axis=1)
    w[carte_done] -= weights.card
    w[np.ix_(denari_done, deck.suit == 0)] -= weights.coin
    return w


# --------------------------------------------------------------------------------------------------- partitions


# --------------------------------------------------------------------------------------------------- tables


# --------------------------------------------------------------------------------------------------- moves


@dataclass
class MoveContext:
    """Per-game facts gathered once for ``generate_moves`` and the heuristics."""

    games: npt.NDArray[np.intp]
    """(n,) game indices in the state."""
    seat: npt.NDArray[np.intp]
    """(n,) acting seat."""
    hand: npt.NDArray[np.bool_]
    """(n, D) acting seat's hand (in the CHOOSE phase the pending card has left it)."""
    table: npt.NDArray[np.bool_]
    """(n, D) table (picked cards are still on it)."""
    weights: npt.NDArray[np.float64]
    """(n, D) or (D,) capture value of each card."""
    last_play: npt.NDArray[np.bool_]
    """(n,) the move is the last play of the hand (never a scopa)."""
    table_eval: TableEval
    """Capture statistics of the tables."""


@dataclass
class Moves:
    """Candidate whole moves of n games, flattened: candidates of game i are ``starts[i]:starts[i+1]``.

    The captured cards are built on demand (``captures(idx)``, or ``capture`` for all), since a policy usually
    needs them only for the move it plays.
    """

    row: npt.NDArray[np.intp]
    """(m,) the game (row of the batch) of each candidate."""
    card: npt.NDArray[np.int64]
    """(m,) card played."""
    kind: npt.NDArray[np.int8]
    """(m,) ``MoveKind``."""
    part: npt.NDArray[np.intp]
    """(m,) the sum partition taken (index into the rules' partition list), -1 unless the kind is SUM."""
    gain: npt.NDArray[np.float64]
    """(m,) weight of the cards won (played card plus capture; 0 for a lay)."""
    num_taken: npt.NDArray[np.intp]
    """(m,) table cards captured."""
    scopa: npt.NDArray[np.bool_]
    """(m,) the move sweeps the table and scores a scopa."""
    starts: npt.NDArray[np.intp]
    """(n + 1,) segment offsets."""
    context: MoveContext
    """The games the moves were generated for."""
    _capture: npt.NDArray[np.bool_] | None = None

    def __len__(self) -> int:
        return int(self.row.size)

    def captures(self, idx: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """(k, D) the table cards captured by candidates ``idx``."""
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        te = self.context.table_eval
        tb = feature_tables(te.rules)
        rows, kind = self.row[idx], self.kind[idx]
        take = np.zeros((idx.size, tb.num_ranks), dtype=np.int8)
        is_sum = self.part[idx] >= 0  # sums, and cirulla's fifteens
        take[is_sum] = tb.p_count[self.part[idx[is_sum]]]
        eq = np.flatnonzero(kind == MoveKind.EQUAL)
        take[eq, tb.rank[self.card[idx[eq]]]] = 1
        take[kind == MoveKind.ACE_ALL] = MAX_PER_RANK
        return te.table[rows] & (te.positions(rows) < take[:, tb.rank])

    @property
    def capture(self) -> npt.NDArray[np.bool_]:
        """(m, D) the table cards captured by every candidate (computed once)."""
        if self._capture is None:
            self._capture = self.captures(np.arange(len(self)))
        return self._capture


def _context(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    w: npt.NDArray[np.float64],
    choose: bool,
    classes: MoveClasses,
) -> MoveContext:
    seat = state.current[games].astype(np.intp)
    hand = state.hands[games, seat]
    table = state.table[games]
    picked = state.picked[games] if choose else None
    te = evaluate_tables(rules, table, w, picked, classes.counts)
    return MoveContext(games, seat, hand, table, w, classes.last_play, te)


def generate_moves(rules: Rules, state: State, games: npt.ArrayLike, w: npt.NDArray[np.float64] | None = None) -> Moves:
    """Candidate whole moves of each game in ``games`` (which must be in the PLAY or CHOOSE phase).

    One candidate per legal move class of the core's enumerator (``state_moves.move_classes``: card, kind, rank
    multiset), with the best suits by weight and the weights won. ``w``: (D,) or (len(games), D) capture values
    (default: the static ``card_weights``); ``moves.context`` keeps what the heuristics reuse. Every game gets at least
    one candidate; candidates are ordered by card, then partition. Captures by sum are listed once per rank multiset,
    taking the best suits (see the module doc).
    """
    tb = feature_tables(rules)
    games = np.asarray(games, dtype=np.intp).reshape(-1)
    if w is None:
        w = card_weights(rules)
    phase = state.phase[games]
    choose = False
    if (phase != _PLAY).any():
        if (phase == _DONE).any():
            bad = int(games[np.flatnonzero(phase == _DONE)[0]])
            raise ValueError(f"generate_moves: game {bad} is finished (phase DONE); pass only games that are running")
        if (phase == _KNOCK).any():
            bad = int(games[np.flatnonzero(phase == _KNOCK)[0]])
            raise ValueError(
                f"generate_moves: game {bad} is in cirulla's KNOCK phase, which has no card moves; decide its knock "
                "first (features.knock_actions, or features.act_with_knocks around a policy)"
            )
        choose = True
    cls = state_moves.move_classes(rules, state, games)
    ctx = _context(rules, state, games, w, choose, cls)
    te = ctx.table_eval
    row, card, kind, part = cls.row, cls.card, cls.kind, cls.part
    taken_w = np.zeros(row.size)
    is_sum = np.flatnonzero(part >= 0)
    taken_w[is_sum] = te.part_values(row[is_sum], part[is_sum])
    taken_w = np.where(kind == _EQUAL, te.topw_at(row, tb.rank[card], 1), taken_w)
    taken_w = np.where(kind == _ACE_ALL, te.total_weight[row], taken_w)
    w_card = w[row, card] if w.ndim == 2 else w[card]
    gain = np.where(kind != _LAY, taken_w + w_card, 0.0)
    return Moves(row, card, kind, part, gain, cls.num_taken, cls.scopa, cls.starts, ctx)


def segment_argmax(values: npt.NDArray[np.float64], starts: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """(n,) index of the first maximum of each non-empty segment ``values[starts[i]:starts[i+1]]``."""
    heads = starts[:-1]
    seg_max = np.maximum.reduceat(values, heads)
    seg_of = np.repeat(np.arange(heads.size), np.diff(starts))
    idx = np.where(values >= seg_max[seg_of], np.arange(values.size), values.size)
    return np.minimum.reduceat(idx, heads)


def greedy_scores(rules: Rules, moves: Moves, weights: CardWeights = DEFAULT_WEIGHTS) -> npt.NDArray[np.float64]:
    """(m,) the greedy value of each candidate: cards won plus the scopa; a lay costs the card laid."""
    w = moves.context.weights
    w_card = w[moves.row, moves.card] if w.ndim == 2 else w[moves.card]
    lay = moves.kind == MoveKind.LAY
    return np.where(lay, -weights.lay * w_card, moves.gain + weights.scopa * moves.scopa)


def unseen_cards(state: State, games: npt.NDArray[np.intp], seats: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(n, D) cards the given seats have not seen: other hands and the stock (public information only).

    Cirulla's knocked cards still in a hand (``State.revealed``) are seen by everyone."""
    seen = state.hands[games, seats] | state.table[games] | state.piles[games].any(axis=1)
    pend = state.pending[games]
    gp = np.flatnonzero(pend >= 0)
    seen[gp, pend[gp].astype(np.intp)] = True
    revealed = state.revealed[games]
    if revealed.any():
        seen |= revealed.any(axis=1)
    return ~seen


def _reply_values(
    rules: Rules,
    new_table: npt.NDArray[np.bool_],
    w: npt.NDArray[np.float64],
    no_scopa: npt.NDArray[np.bool_],
    played_w: npt.NDArray[np.float64],
    weights: CardWeights,
) -> npt.NDArray[np.float64]:
    """(m, R) best immediate value a player gets by playing a card of each rank on each table (0 if it lays).

    Under cirulla's ``fifteens`` a card's fifteens count beside its equal-rank captures and sums."""
    tb = feature_tables(rules)
    m, r = new_table.shape[0], tb.num_ranks
    te = evaluate_tables(rules, new_table, w)
    sweep_ok = ~no_scopa
    part = te.all_part_values() + weights.scopa * ((tb.p_cards[None, :] == te.num_cards[:, None]) & sweep_ok[:, None])
    best = np.full((m, r), -BIG)
    ns = tb.num_sum_parts
    best[:, tb.sum_targets - 1] = np.maximum.reduceat(part[:, :ns] if rules.fifteens else part, tb.seg_start, axis=1)
    equal = te.counts > 0
    eq_val = te.topw.reshape(m, r + 1, -1)[:, :r, 1] + weights.scopa * ((te.num_cards == 1) & sweep_ok)[:, None]
    best = np.where(equal, eq_val, best)
    if rules.fifteens:
        fifteen = np.full((m, r), -BIG)
        fifteen[:, tb.f_values - 1] = np.maximum.reduceat(part[:, ns:], tb.f_seg_start, axis=1)
        best = np.maximum(best, fifteen)
    if rules.ace_takes_all:
        ace = ~equal[:, 0] & (te.num_cards > 0)
        best[:, 0] = np.where(ace, te.total_weight, best[:, 0])
    return np.where(best > -BIG / 2, best + played_w, 0.0)


def expert_scores(
    rules: Rules,
    state: State,
    moves: Moves,
    weights: CardWeights = DEFAULT_WEIGHTS,
) -> npt.NDArray[np.float64]:
    """(m,) the expert value of each candidate (generate the moves with ``dynamic_weights``).

    value = greedy value - ``reply`` * E[best reply of the next seat] + ``doubles`` * (bonus for laying one of a
    pair). The next seat's reply: for each rank, the best it could take on the table the move leaves (scopa
    included), weighted by the hypergeometric chance that its hand (known size, drawn from the unseen cards) holds
    that rank and no better one. Seats of the acting seat's own side are not feared.
    """
    tb = feature_tables(rules)
    ctx = moves.context
    d, r, n_players = rules.num_cards, tb.num_ranks, rules.num_players
    games, seat = ctx.games, ctx.seat
    n = games.size
    value = greedy_scores(rules, moves, weights)
    w = np.broadcast_to(ctx.weights, (n, d))
    row = moves.row
    # The table after each move.
    lay = moves.kind == MoveKind.LAY
    new_table = ctx.table[row] & ~moves.capture
    li = np.flatnonzero(lay)
    new_table[li, moves.card[li]] = True
    # Who replies, with how many cards, out of how many unseen.
    side_of = np.array(rules.seat_side)
    nxt = (seat + 1) % n_players
    unseen = unseen_cards(state, games, seat)
    num_unseen = unseen.sum(axis=1)
    rank_unseen = unseen.reshape(n, 4, r).sum(axis=1)  # (n, R)
    hand_next = state.hands[games, nxt].sum(axis=1)
    stock = rules.num_cards - state.stock_pos[games].astype(np.intp)
    deal_no = state.deal_no[games].astype(np.intp)
    sizes = np.asarray((*rules.deal_sizes, 0))
    # After this move, the next seat holds its cards, or (everyone out, stock left) a fresh packet.
    mine_left = ctx.hand.sum(axis=1)[row] - (state.phase[games][row] == Phase.PLAY)
    everyone_out = (hand_next[row] == 0) & (mine_left == 0)
    h = np.where(everyone_out & (stock[row] > 0), sizes[np.minimum(deal_no[row] + 1, len(sizes) - 1)], hand_next[row])
    opponent = side_of[nxt] != side_of[seat]
    reply_is_last = (state_moves.remaining_plies(rules, state, games) == 2)[row]  # the reply is the hand's last play
    if rules.knocks:  # cirulla: the next seat's knocked cards are known; the rest of its hand is drawn
        rev_next = state.revealed[games, nxt]  # (n, D)
        fresh: npt.NDArray[np.bool_] = np.asarray(everyone_out & (stock[row] > 0))  # a new packet: all unknown
        h = np.where(fresh, h, h - rev_next.sum(axis=1)[row])
        known = np.asarray(rev_next.reshape(n, 4, r).any(axis=1))[row] & ~fresh[:, None]  # (m, R)
        p_miss = 1.0 - hit_probability(num_unseen[row][:, None], rank_unseen[row], h[:, None])
        p_hit = 1.0 - p_miss * ~known
    else:
        p_hit = hit_probability(num_unseen[row][:, None], rank_unseen[row], h[:, None])  # (m, R)
    p_hit *= opponent[row][:, None]
    played_w = (unseen.reshape(n, 4, r) * w.reshape(n, 4, r)).sum(axis=1) / np.maximum(rank_unseen, 1)
    reply = _reply_values(rules, new_table, w[row], reply_is_last, played_w[row], weights)  # (m, R)
    # E[max] over ranks, treating "holds a card of rank k" as independent events.
    order = np.argsort(-reply, axis=1, kind="stable")
    rv = np.take_along_axis(reply, order, axis=1)
    ph = np.take_along_axis(p_hit, order, axis=1)
    none_before = np.cumprod(np.concatenate([np.ones((ph.shape[0], 1)), 1.0 - ph[:, :-1]], axis=1), axis=1)
    expected_reply = (rv * ph * none_before).sum(axis=1)
    # Doubles: lay one of a pair; if the next seat cannot take it, take it back next turn.
    card_rank = tb.rank[moves.card]
    hand_ranks = ctx.hand.reshape(n, 4, r)
    mate = hand_ranks[row, :, card_rank] & (np.arange(4)[None, :] != (moves.card // r)[:, None])
    has_mate = mate.any(axis=1)
    mate_w = np.where(mate, w.reshape(n, 4, r)[row, :, card_rank], 0.0).max(axis=1)
    p_rank = p_hit[np.arange(row.size), card_rank]
    bonus = np.where(lay & has_mate, (1.0 - p_rank) * (w[row, moves.card] + mate_w), 0.0)
    return value - weights.reply * expected_reply + weights.doubles * bonus


def pick_best(moves: Moves, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """(n,) index into ``moves`` of each game's best candidate (first maximum)."""
    return segment_argmax(scores, moves.starts)


def choose(
    state: State, games: npt.NDArray[np.intp], moves: Moves, best: npt.NDArray[np.intp]
) -> npt.NDArray[np.int64]:
    """(n,) the next action carrying out the chosen candidate of each game (the card, or the next pick)."""
    return state_moves.move_actions(state.take(games), moves.card[best], moves.captures(best))


KnockRule = Literal["always", "never"]
"""How a rule-based agent decides in cirulla's KNOCK phase: ``always`` knocks whenever allowed, three of a kind (10
points) before a sum (3 points); ``never`` always answers ``stop``."""
KNOCK_RULES: tuple[str, ...] = ("always", "never")


def check_at_least(agent: str, option: str, value: float, least: int, why: str, unit: str = "") -> None:
    """Refuse an agent option below ``least`` with ``AgentSpecError``: ``"{agent}: {option} must be >= {least}{unit}
    ({why}), got {value}"`` (the numeric options of the rule-based and search agents)."""
    if value < least:
        raise AgentSpecError(f"{agent}: {option} must be >= {least}{unit} ({why}), got {value}")


def check_knock_rule(agent: str, knock: str) -> KnockRule:
    """``knock`` as a ``KnockRule``, or a clear error naming the agent."""
    if knock not in KNOCK_RULES:
        raise ValueError(
            f"{agent}: knock must be one of {', '.join(KNOCK_RULES)} (cirulla's knock decisions), got {knock!r}"
        )
    return knock  # type: ignore[return-value]


def knock_actions(
    rules: Rules, state: State, games: npt.NDArray[np.intp], knock: KnockRule = "always"
) -> npt.NDArray[np.int64]:
    """(n,) the decision of each game in ``games`` (all in cirulla's KNOCK phase) under the rule ``knock``:
    ``knock-tris`` when allowed, else ``knock-sum`` when allowed, else ``stop`` (``never``: always ``stop``).

    Knocking pays: 3 or 10 points for the side against showing three cards, which measured far cheaper
    (docs/agents.md, Cirulla). Reads only the acting seat's own hand (through the legal mask)."""
    games = np.asarray(games, dtype=np.intp)
    stop = core.stop_action(rules)
    out = np.full(games.size, stop, dtype=np.int64)
    if games.size == 0 or knock == "never":
        return out
    if (state.phase[games] != _KNOCK).any():
        bad = int(games[np.flatnonzero(state.phase[games] != _KNOCK)[0]])
        raise ValueError(f"knock_actions: game {bad} is not in the KNOCK phase")
    mask = core.legal_action_mask(rules, state.take(games))
    out[mask[:, core.knock_sum_action(rules)]] = core.knock_sum_action(rules)
    out[mask[:, core.knock_tris_action(rules)]] = core.knock_tris_action(rules)
    return out


def act_with_knocks(
    rules: Rules,
    state: State,
    games: npt.NDArray[np.intp],
    play: Callable[[npt.NDArray[np.intp]], npt.NDArray[np.int64]],
    knock: KnockRule = "always",
) -> npt.NDArray[np.int64]:
    """(n,) actions: ``knock_actions`` for the games in cirulla's KNOCK phase, ``play(games_in_play)`` for the rest
    (games in the PLAY or CHOOSE phase). Without knocks in the rules this is ``play(games)``."""
    if not rules.knocks:
        return play(games)
    at_knock = state.phase[games] == _KNOCK
    if not at_knock.any():
        return play(games)
    out = np.empty(games.size, dtype=np.int64)
    out[at_knock] = knock_actions(rules, state, games[at_knock], knock)
    rest = np.flatnonzero(~at_knock)
    if rest.size:
        out[rest] = play(games[rest])
    return out


def require_state(batch: ActBatch, agent: str) -> tuple[State, npt.NDArray[np.intp]]:
    """The batch's state and game indices, or a clear error for a caller that did not pass them."""
    if batch.state is None or batch.games is None:
        raise ValueError(
            f"agent {agent!r} needs the game state: build ActBatch(rules, obs, mask, state=state, games=rows) "
            "(scopa_env.games.driver and the envs do this; check the agent's needs_state attribute)"
        )
    return batch.state, np.asarray(batch.games, dtype=np.intp)


class StatePolicy(Policy):
    """A policy that reads the core's state, not the observation (the rule-based and search agents).

    ``act`` settles the games in cirulla's KNOCK phase by ``knock_actions``' rule ``knock`` and asks ``_play`` for
    the rest; a subclass writes ``_play`` (and ``act_state`` around it where it keeps memory of the deal)."""

    needs_state = True
    needs_obs = False
    knock: KnockRule = "always"

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        state, games = require_state(batch, self.name)
        return self.act_state(state, games)

    def act_state(self, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """(n,) the action of each game in ``games``: the knock rule's in a KNOCK phase, ``_play``'s elsewhere."""
        return act_with_knocks(self.rules, state, games, lambda g: self._play(state, g), self.knock)

    def _play(self, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """(n,) the action of each game in ``games``, all in a PLAY or CHOOSE phase."""
        raise NotImplementedError
