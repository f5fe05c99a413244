"""Cirulla's rules on the batched core (RULES.md section 6; docs/rules.md), behind one hook: ``CirullaHook``.

Cirulla is a family of variants (``covers``: the rules with any of cirulla's rules on) with the same hook as the
plain game's (``scopa_env.rules.variant.ScopaHook``, which lists the points). The core makes it for the rules it covers
(``core.tables_for(rules).variant``) and calls it where cirulla differs from the classic game:

- a new hand (``start_hands``): the cirulla fields of the state are cleared and an initial table adding up to 15
  (30) goes to the dealer's side with one (two) scope;
- after every deal (``after_deal``): the KNOCK phase, each seat whose three cards qualify deciding in play order;
- the legal actions (``legal_actions``, ``legal_mask``): the CHOOSE phase's ``stop``, the KNOCK phase's three
  actions;
- a step (``resolve``, then ``apply_knocks``): the captures with fifteens and the ace taking all, ``stop``, the
  knock decisions;
- the end of a hand (``knock_points``) and the step's info (``new_hand_info``);
- the observation (``play_features``, ``observation_blocks``, ``observe_blocks``: the version 3 blocks);
- the data the faces read: the point fields (napoli, grande, knocks), the state fields (revealed, knock points,
  table take), the wild card, the action ids' words, the variant named in illegal-action errors.

This module sits below the core: it never imports it. The state it is given is the core's ``State`` (typed
``Any`` here) and the phase numbers are the core's, passed to the hook when the core makes it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env.rules import CATEGORIES, Rules
from scopa_env.rules.arrays import low_bits, rank_counts
from scopa_env.rules.cards import parse_card
from scopa_env.rules.hook_base import HookBase, Resolved
from scopa_env.rules.moves import FIFTEEN_TOTAL, MoveKind, enumerate_moves, expand_captures

__all__ = [
    "CIRULLA_POINT_FIELDS",
    "FIFTEEN",
    "KNOCK_POINTS",
    "KNOCK_SUM_LIMIT",
    "MATTA",
    "TABLE_TAKE_TOTALS",
    "CirullaHook",
    "KnockKind",
]


class KnockKind(IntEnum):
    """Cirulla's knock decision (``StepInfo.knock``): none, by sum (3 points) or three of a kind (10 points)."""

    NONE = 0
    SUM = 1
    TRIS = 2


KNOCK_POINTS = (0, 3, 10)
"""Points of each ``KnockKind``."""
KNOCK_SUM_LIMIT = 9
"""A hand knocks by sum when its values add up to at most this (``7c`` counting 1)."""
MATTA = "7c"
"""Cirulla's wild card (la matta): any value for the initial-table count, 1 or a pair's rank for knocks."""
TABLE_TAKE_TOTALS = (15, 30)
"""An initial table adding up to 15 (30) is taken with one (two) scope (cirulla)."""
FIFTEEN = FIFTEEN_TOTAL
"""A fifteen: a card and table cards adding up to 15 capture (``scopa_env.rules.moves``)."""
CIRULLA_POINT_FIELDS = (*CATEGORIES, "napoli", "grande", "knocks", "total")
"""Last axis of ``scoring.score_hands``' result under cirulla's rules (``scoring.CIRULLA_POINT_FIELDS``)."""


class CirullaHook(HookBase):
    """Cirulla's part of the batched core for one ``Rules`` (``covers(rules)``): its constants and steps.

    ``tables``: the core's per-rules tables (``HookBase``'s, then ``side_of``, ``ace_mask``); ``play``, ``choose``,
    ``knock``: the core's ``Phase`` numbers.
    """

    family = "cirulla"
    point_fields: tuple[str, ...] = CIRULLA_POINT_FIELDS
    obs_version = 3
    """``observation.CIRULLA_OBS_VERSION``: version 2's layout, then the blocks of ``observation_blocks``."""
    state_fields: tuple[str, ...] = ("revealed", "knock_points", "table_take")
    """``State`` fields cirulla uses beyond the plain game's (saved states hold them, records the table take)."""
    matta: str | None = MATTA
    action_words = "action ids"
    """What the action ids are (the cards, then ``stop``, ``knock-sum``, ``knock-tris``), in errors."""
    single_learner = False
    """The kernel's compiled ``RandomAgent`` play knows no knocks nor fifteens' picks: the Gymnasium env's
    ``SingleLearnerGame`` plays a cirulla ``RandomAgent`` through ``driver.decide``, like any policy."""
    extra_scope = 2
    """The initial table's take: up to two scope beyond one per play."""

    @staticmethod
    def extra_hand_points(knock_high: int) -> int:
        """That take's two scope, napoli (Ad..Kd: 10), grande (5) and the knocks (``knock_high`` x 10)."""
        return 2 + 10 + 5 + 10 * knock_high

    @classmethod
    def covers(cls, rules: Rules) -> bool:
        """The rules are cirulla's (any of its rules on: ``Rules.cirulla``)."""
        return rules.cirulla

    def __init__(self, rules: Rules, tables: Any, *, play: int, choose: int, knock: int) -> None:
        super().__init__(rules, tables, play=play, choose=choose, knock=knock)
        self.side_of = tables.side_of
        self.ace_mask = tables.ace_mask
        self.variant_label = f" ({rules.name})"
        """Said after ``game i`` in an illegal action's error: the variant's name."""
        self.matta_card = parse_card(MATTA, rules.deck)
        self.knock_value = self.value.astype(np.float32)
        self.knock_value[self.matta_card] = 1.0  # 7c counts 1 toward a knock by sum
        self.not_matta = np.ones(self.d, dtype=np.bool_)
        self.not_matta[self.matta_card] = False

    # ----------------------------------------------------------------------------------------------- deals

    def start_hands(self, state: Any, games: npt.NDArray[np.intp]) -> None:
        """A new hand in ``games`` (the table laid, no card dealt yet): the cirulla fields cleared, then the
        initial-table take."""
        state.revealed[games] = False
        state.knock_points[games] = 0
        state.table_take[games] = 0
        if self.rules.table_take and self.rules.table_cards:
            self._take_initial_tables(state, games)

    def _take_initial_tables(self, state: Any, idx: npt.NDArray[np.intp]) -> None:
        """An initial table adding up to 15 (30), ``7c`` standing for any value 1..10, goes to the dealer's side
        with one (two) scope; it counts as that side's capture (the last capturer so far)."""
        table = state.table[idx]
        total = table.astype(np.float32) @ self.value.astype(np.float32)  # (n,) exact small integers
        matta = table[:, self.matta_card]
        lo = np.where(matta, total - 7 + 1, total)  # the matta makes any total from lo to hi
        hi = np.where(matta, total - 7 + self.r, total)
        scope = np.zeros(idx.size, dtype=np.int8)
        for i, t in enumerate(TABLE_TAKE_TOTALS):
            scope[(lo <= t) & (t <= hi)] = i + 1
        taken = np.flatnonzero(scope > 0)
        if taken.size:
            g = idx[taken]
            side = self.side_of[state.dealer[g]]
            state.piles[g, side] |= state.table[g]
            state.table[g] = False
            state.scope[g, side] += scope[taken]
            state.last_capturer[g] = side
            state.table_take[g] = scope[taken]

    def after_deal(self, state: Any, games: npt.NDArray[np.intp]) -> None:
        """Cards were just dealt in ``games`` (the deal's first player to act): the KNOCK phase, if a seat may knock."""
        if self.rules.knocks:
            self._next_knocker(state, games, np.full(games.size, -1, dtype=np.intp))

    def knock_options(self, hands: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """(m, N, D) hands -> ``(by_sum, tris)`` (m, N): which seats may knock by sum (three cards worth <= 9,
        ``7c`` counting 1) and by three of a kind (three of a rank, or a pair and ``7c``)."""
        m, n, d = hands.shape
        h = hands.reshape(m * n, d)
        size = (h.astype(np.float32) @ np.ones(d, dtype=np.float32)).reshape(m, n)
        three = size == 3
        by_sum = three & ((h.astype(np.float32) @ self.knock_value).reshape(m, n) <= KNOCK_SUM_LIMIT)
        most = rank_counts(h & self.not_matta, self.r).max(axis=1).reshape(m, n)
        tris = three & ((most >= 3) | ((most >= 2) & h[:, self.matta_card].reshape(m, n)))
        return by_sum, tris

    def _next_knocker(self, state: Any, g: npt.NDArray[np.intp], after: npt.NDArray[np.intp]) -> None:
        """For games ``g`` (a deal just made, or a knock decision just taken by the seat at play-order position
        ``after``): the next seat in play order that may knock decides (KNOCK phase), else the deal's first player
        plays (PLAY phase)."""
        if g.size == 0:
            return
        n = self.rules.num_players
        order = (state.dealer[g].astype(np.intp)[:, None] + 1 + np.arange(n)) % n  # (m, N) seats in play order
        by_sum, tris = self.knock_options(state.hands[g])
        may = np.take_along_axis(by_sum | tris, order, axis=1) & (np.arange(n)[None, :] > after[:, None])
        has = may.any(axis=1)
        first = np.where(has, may.argmax(axis=1), 0)
        state.current[g] = order[np.arange(g.size), first]
        state.phase[g] = np.where(has, self.knock, self.play)

    # ----------------------------------------------------------------------------------------------- legality

    def capture_options(
        self, table: npt.NDArray[np.bool_], cards: npt.NDArray[np.int64], picked: npt.NDArray[np.bool_] | None
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """Every legal capture of playing ``cards[i]`` on ``table[i]`` that holds the cards ``picked[i]`` (None: no
        picks), from the one move enumerator: ``(row, captured)``, ``row`` (k,) ascending, ``captured`` (k, D); a
        card with no capture has no row."""
        n = cards.size
        playable = np.zeros((n, self.d), dtype=np.bool_)
        playable[np.arange(n), cards] = True
        picked_counts = None if picked is None else rank_counts(picked & table, self.r)
        classes = enumerate_moves(self.rules, playable, rank_counts(table, self.r), picked_counts)
        index, captured = expand_captures(self.rules, classes, table, picked)
        keep = classes.kind[index] != MoveKind.LAY
        return classes.row[index[keep]], captured[keep]

    def _choose_mask(self, state: Any, g: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        """(n, D + 1) for games ``g`` in the CHOOSE phase: the pickable table cards, then ``stop`` (the picked cards
        are a legal capture and another legal capture strictly contains them)."""
        d = self.d
        picked = state.picked[g]
        row, captured = self.capture_options(state.table[g], state.pending[g].astype(np.int64), picked)
        out = np.zeros((g.size, d + 1), dtype=np.bool_)
        np.logical_or.at(out[:, :d], row, captured)  # the union of each game's options
        out[:, :d] &= ~picked
        exact = (captured == picked[row]).all(axis=1)
        options = np.bincount(row, minlength=g.size)
        out[row[exact], d] = options[row[exact]] >= 2
        return out

    def legal_mask(self, state: Any) -> npt.NDArray[np.bool_]:
        """``core.legal_action_mask`` under cirulla's rules: (B, num_actions)."""
        b, d = state.batch_size, self.d
        mask = np.zeros((b, self.rules.num_actions), dtype=np.bool_)
        phase = state.phase
        gp = np.flatnonzero(phase == self.play)
        mask[gp, :d] = state.hands[gp, state.current[gp]]
        gc = np.flatnonzero(phase == self.choose)
        if gc.size:
            mask[gc, : d + 1] = self._choose_mask(state, gc)
        gk = np.flatnonzero(phase == self.knock)
        if gk.size:
            by_sum, tris = self.knock_options(state.hands[gk])
            seat = state.current[gk].astype(np.intp)
            ar = np.arange(gk.size)
            mask[gk, d] = True
            mask[gk, d + 1] = by_sum[ar, seat]
            mask[gk, d + 2] = tris[ar, seat]
        return mask

    def legal_actions(
        self, state: Any, actions: npt.NDArray[np.int64], running: npt.NDArray[np.bool_]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """``(legal, in_range)`` (B,): each running game's action is legal; it is a valid action id at all."""
        in_range = (actions >= 0) & (actions < self.rules.num_actions)
        safe = np.where(in_range, actions, 0)
        return running & in_range & self.legal_mask(state)[np.arange(state.batch_size), safe], in_range

    # ----------------------------------------------------------------------------------------------- step

    def resolve(self, state: Any, act: npt.NDArray[np.int64], ok: npt.NDArray[np.bool_]) -> Resolved:
        """``core.step``'s play and capture choice under cirulla's rules, for the legal actions ``ok``: the card
        leaves the hand (PLAY) or a table card is picked (CHOOSE); a move completes when the card has no capture (a
        lay), one capture holding the picked cards, or on ``stop`` (exactly the picked cards); else the CHOOSE
        phase goes on.

        Returns ``(card, capture, captures, done, ace_all, knock_games)``: ``knock_games`` are the games that took
        a KNOCK-phase decision (applied by ``apply_knocks`` once the step's info is made)."""
        b, d = state.batch_size, self.d
        phase = state.phase
        play = ok & (phase == self.play)
        choose = ok & (phase == self.choose)
        stop = choose & (act == d)
        pick = choose & (act < d)
        card = np.where(play, act, state.pending).astype(np.int64)
        card = np.where(play | choose, card, 0)
        gp = np.flatnonzero(play)
        seat = state.current[gp]
        state.hands[gp, seat, act[gp]] = False
        state.revealed[gp, seat, act[gp]] = False
        state.pending[gp] = act[gp]
        gc = np.flatnonzero(pick)
        state.picked[gc, act[gc]] = True

        table = state.table
        capture = np.zeros((b, d), dtype=np.bool_)
        rows = np.flatnonzero(play | pick)
        row, captured = self.capture_options(table[rows], card[rows], state.picked[rows] if gc.size else None)
        options = np.bincount(row, minlength=rows.size)
        first = np.concatenate([[0], np.cumsum(options)[:-1]])
        one = np.flatnonzero(options == 1)
        capture[rows[one]] = captured[first[one]]
        gs = np.flatnonzero(stop)
        capture[gs] = state.picked[gs]
        captures = stop.copy()
        captures[rows[one]] = True
        lay = np.zeros(b, dtype=np.bool_)
        lay[rows[options == 0]] = True
        lay &= play
        done = captures | lay
        state.phase[rows[options >= 2]] = self.choose
        if self.rules.ace_takes_all:
            ace_all = (
                play & (self.rank[card] == self.ace_rank) & ~(table & self.ace_mask).any(axis=1) & table.any(axis=1)
            )
        else:
            ace_all = np.zeros(b, dtype=np.bool_)
        return card, capture, captures, done, ace_all, np.flatnonzero(ok & (phase == self.knock))

    def apply_knocks(self, state: Any, g: npt.NDArray[np.intp], kind: npt.NDArray[np.int64], info: Any) -> None:
        """KNOCK-phase decisions ``kind`` (a ``KnockKind``) of games ``g``: points to the side, the hand revealed,
        and the next seat that may knock decides (or play starts). ``info``: the step's ``core.StepInfo``."""
        seat = state.current[g].astype(np.intp)
        info.knock[g] = kind
        side = self.side_of[seat]
        state.knock_points[g, side] += np.asarray(KNOCK_POINTS, dtype=np.int16)[kind]
        k = kind > 0
        state.revealed[g[k], seat[k]] = state.hands[g[k], seat[k]]
        n = self.rules.num_players
        self._next_knocker(state, g, (seat - state.dealer[g].astype(np.intp) - 1) % n)

    def knock_points(self, state: Any, g: npt.NDArray[np.intp]) -> npt.NDArray[np.int16]:
        """(n, S) the knock points of games ``g``'s hand, scored with it (``scoring.score_hands``)."""
        return state.knock_points[g]  # type: ignore[no-any-return]

    def new_hand_info(self, state: Any, info: Any) -> None:
        """The step's info of the games where a new hand was dealt: the scope of its initial-table take."""
        if self.rules.table_take:
            info.table_take[info.new_hand] = state.table_take[info.new_hand]

    # ----------------------------------------------------------------------------------------------- observation

    def observation_blocks(self, blocks: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
        """``observation.observation_layout``'s ``(name, size, meaning)`` blocks under cirulla's rules (version 3):
        version 2's ``blocks`` with ``plays`` under cirulla's captures, then revealed, knocks, knocking, fifteens."""
        d, r, n, s = self.d, self.r, self.rules.num_players, self.rules.num_sides
        assert blocks[-1][0] == "plays"
        plays = (
            "plays",
            4 * r,
            "as version 2 under cirulla's captures (fifteens and an ace taking all capture; an ace taking all is "
            "never a scopa); table sum after: sum - v after an equal-rank or sum capture, else sum - (15 - v) after "
            "a fifteen, 0 after an ace taking all, sum + v after a lay; / 40",
        )
        return [
            *blocks[:-1],
            plays,
            (
                "revealed",
                n * d,
                "cards revealed by knocks still in each seat's hand, own seat first then in play order",
            ),
            ("knocks", s, "knock points of each side this hand / 10, own side first"),
            ("knocking", 1, "1 in the KNOCK phase"),
            ("fifteens", r, "for each card value v (rank order): a card of value v played now could make a fifteen"),
        ]

    def observe_blocks(
        self,
        state: Any,
        seat: npt.NDArray[np.int64],
        side_rows: npt.NDArray[np.int64],
        obs: npt.NDArray[np.float32],
        unseen: tuple[int, int],
        pos: int,
    ) -> None:
        """``observation.observe``'s cirulla part: cards revealed by knocks leave the ``unseen`` columns; the
        blocks after ``plays`` (from column ``pos``): revealed, knocks, knocking, fifteens."""
        b, d, n, s = state.batch_size, self.d, self.rules.num_players, self.rules.num_sides
        ar = np.arange(b)
        obs[:, unseen[0] : unseen[1]] *= ~state.revealed.any(axis=1)
        rel_seats = (seat[:, None] + np.arange(n)) % n
        obs[:, pos : pos + n * d] = state.revealed[ar[:, None], rel_seats].reshape(b, n * d)
        pos += n * d
        obs[:, pos : pos + s] = state.knock_points.reshape(-1)[side_rows] / 10.0
        pos += s
        obs[:, pos] = state.phase == self.knock
        pos += 1
        obs[:, pos : pos + self.r] = self.fifteen_bits(rank_counts(state.table, self.r))

    def fifteen_bits(self, counts: npt.NDArray[np.integer]) -> npt.NDArray[np.bool_]:
        """(n, R) table rank counts -> (n, R): a card of value v (rank order) played there can make a fifteen (some
        table cards add up to 15 - v); an ace that takes all (no ace on a non-empty table) cannot."""
        bits = low_bits(_sum_bits(counts, FIFTEEN), FIFTEEN + 1)  # (n, 16)
        values = np.arange(1, self.r + 1)
        out = bits[:, np.clip(FIFTEEN - values, 0, FIFTEEN)] & (values < FIFTEEN)
        if self.rules.ace_takes_all:
            out[:, 0] &= counts[:, 0] > 0
        return out

    def play_features(
        self, table: npt.NDArray[np.bool_], out: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[np.float32]:
        """``observation.play_features`` under cirulla's captures (``rules.fifteens``), per card value v: captures
        (equal rank, a sum, a fifteen, or an ace taking all); some capture clears the table and is a scopa (never an
        ace taking all); some capture takes the settebello; the table's sum after the play / 40: sum - v after an
        equal-rank or sum capture, else sum - (15 - v) after a fifteen, 0 after an ace taking all, sum + v after a
        lay."""
        rules = self.rules
        b, r = table.shape[0], self.r
        deck = rules.deck
        counts = rank_counts(table, r)
        values = np.arange(1, r + 1)
        total = counts.astype(np.float32) @ values.astype(np.float32)
        sette_on_table = table[:, deck.settebello]
        seven = deck.ranks.index("7")
        without = counts.copy()
        without[:, seven] -= sette_on_table
        sums_without = _sum_bits(without, FIFTEEN)
        sums = np.where(sette_on_table, sums_without | (sums_without << np.uint64(seven + 1)), sums_without)
        bits = low_bits(sums, FIFTEEN + 1)  # (B, 16): some table cards add up to s
        bits_without = low_bits(sums_without, FIFTEEN + 1)
        equal = counts > 0
        by_sum = bits[:, values] & ~equal  # sums take at least two cards when no card of value v is on the table
        classic = equal | by_sum
        rest = np.clip(FIFTEEN - values, 0, FIFTEEN)
        fifteen = bits[:, rest] & (values < FIFTEEN)
        ace_all = ~equal[:, 0] & (total > 0) if rules.ace_takes_all else np.zeros(b, dtype=np.bool_)
        fifteen[:, 0] &= ~ace_all
        captures = classic | fifteen
        captures[:, 0] |= ace_all
        # Scopa: an equal/sum capture of the whole table (sum == v), or a fifteen of it (sum + v == 15).
        scopa = (classic & (total[:, None] == values)) | (fifteen & (total[:, None] + values == FIFTEEN))
        scopa[:, 0] &= ~ace_all
        # Settebello: a 7 takes it by equal rank; a sum above 7 with cards worth the rest; a fifteen with cards
        # worth 8 - v (none for a jack).
        sette = np.zeros((b, r), dtype=np.bool_)
        sette[:, seven] = sette_on_table
        above = np.arange(seven + 1, r)
        sette[:, above] = sette_on_table[:, None] & by_sum[:, above] & bits_without[:, above + 1 - (seven + 1)]
        low = values <= FIFTEEN - (seven + 1)
        need = np.clip(FIFTEEN - (seven + 1) - values, 0, FIFTEEN)
        sette[:, low] |= sette_on_table[:, None] & fifteen[:, low] & bits_without[:, need[low]]
        sette[:, 0] |= sette_on_table & ace_all
        after = np.where(classic, total[:, None] - values, np.where(fifteen, total[:, None] - (FIFTEEN - values), 0))
        after = np.where(captures, after, total[:, None] + values).astype(np.float32)
        after[:, 0] = np.where(ace_all, 0.0, after[:, 0])
        if out is None:
            out = np.empty((b, 1 + 4 * r), dtype=np.float32)
        out[:, 0] = total / 40.0
        per_value = out[:, 1:].reshape(b, r, 4)
        per_value[:, :, 0] = captures.astype(np.float32)
        per_value[:, :, 1] = scopa.astype(np.float32)
        per_value[:, :, 2] = sette.astype(np.float32)
        np.divide(after, 40.0, out=per_value[:, :, 3])
        return out


def _sum_bits(counts: npt.NDArray[np.integer], top: int) -> npt.NDArray[np.uint64]:
    """(n, R) rank counts -> (n,) bit sets: bit s is set iff some set of those cards adds up to s (s <= top)."""
    keep = np.uint64((1 << (top + 1)) - 1)
    sums = np.ones(counts.shape[0], dtype=np.uint64)
    for r in range(counts.shape[1]):
        shift = np.uint64(r + 1)
        for c in range(1, int(counts[:, r].max(initial=0)) + 1):
            sums = np.where(counts[:, r] >= c, sums | ((sums << shift) & keep), sums)
    return sums
