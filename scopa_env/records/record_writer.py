"""Game records (RULES.md section 8) written from the batched core: ``RecordWriter`` follows games step by step.

The writing half of ``agents.cli.record`` (which re-exports it), kept apart so that the game driver
(``scopa_env.games.driver``) can record its games while ``agents.cli.record`` plays its random games on the driver.

Cirulla records carry exactly RULES.md section 8's extra keys, in the order the reference engine writes them:
``table_take`` (``{side, cards, scope}`` or null) per hand, ``knocks`` entries ``{seat, deal, kind, cards,
points}`` in the order the knocks were made (from ``StepInfo.knock``), and the nine ``points`` keys
(``scoring.point_fields``). ``deals[0].table`` is the table as dealt, before any take.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core
from scopa_env.rules import Rules, cirulla
from scopa_env.rules.cards import format_card, format_cards
from scopa_env.rules.scoring import point_fields

__all__ = ["RecordWriter", "deals_from_deck"]


def deals_from_deck(rules: Rules, deck: npt.NDArray[np.integer], dealer: int) -> list[dict[str, Any]]:
    """The ``deals`` list of a hand: what the dealing convention (``scopa_env.rules.shuffle``) gives from ``deck``."""
    n = rules.num_players
    pos = rules.table_cards
    out: list[dict[str, Any]] = []
    for d, size in enumerate(rules.deal_sizes):
        hands: list[list[str]] = [[] for _ in range(n)]
        for j in range(n):
            seat = (dealer + 1 + j) % n
            hands[seat] = format_cards(deck[pos : pos + size].astype(np.int64), rules.deck)
            pos += size
        deal: dict[str, Any] = {"hands": hands}
        if d == 0:
            deal = {"table": format_cards(deck[: rules.table_cards].astype(np.int64), rules.deck), **deal}
        out.append(deal)
    return out


_KNOCK_KINDS = {int(cirulla.KnockKind.SUM): "sum", int(cirulla.KnockKind.TRIS): "tris"}
"""Record names of the ``cirulla.KnockKind`` of a knock."""


class RecordWriter:
    """Follows a batch of games step by step and builds one record per match.

    Call ``start(state)`` after ``core.reset``, then ``observe(state, info)`` after every ``core.step`` (without
    autoreset, or with it: finished records are then emitted before the game restarts). A record still in
    ``records`` (its match not over) carries ``"unfinished": true``, so a caller that stops games early writes
    records that ``--check`` accepts as deliberately unfinished; the key is dropped when the match ends.
    """

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.fields = point_fields(rules)
        self.table_take = "table_take" in core.tables_for(rules).variant.state_fields
        """Hands record their initial-table take (``null`` if none): the family's state has one (cirulla)."""
        self.records: list[dict[str, Any] | None] = []
        self.finished: list[dict[str, Any]] = []

    def _new_record(self, state: core.State, g: int) -> dict[str, Any]:
        return {
            "variant": self.rules.name,
            "seed": int(state.seed[g]),
            "players": self.rules.num_players,
            "sides": [list(s) for s in self.rules.sides],
            "target": self.rules.target,
            "hands": [],
            "winner": None,
            "unfinished": True,
        }

    def _new_hand(self, state: core.State, g: int) -> None:
        rec = self.records[g]
        assert rec is not None
        rules = self.rules
        dealer = int(state.dealer[g])
        hand: dict[str, Any] = {"dealer": dealer, "deals": deals_from_deck(rules, state.deck[g], dealer)}
        if self.table_take:
            hand["table_take"] = None
            scope = int(state.table_take[g])
            if scope:
                cards = state.deck[g, : rules.table_cards].astype(np.int64)
                side = rules.seat_side[dealer]
                hand["table_take"] = {"side": side, "cards": format_cards(cards, rules.deck), "scope": scope}
        hand.update(knocks=[], moves=[])
        rec["hands"].append(hand)

    def start(self, state: core.State) -> None:
        self.records = [self._new_record(state, g) for g in range(state.batch_size)]
        for g in range(state.batch_size):
            self._new_hand(state, g)

    def observe(self, state: core.State, info: core.StepInfo) -> list[dict[str, Any]]:
        """Record one step; returns the records of matches that ended in it."""
        deck = self.rules.deck
        ended: list[dict[str, Any]] = []
        if self.rules.knocks:
            for g in np.flatnonzero(info.knock).tolist():
                self._knock(state, info, g)
        for g in np.flatnonzero(info.move_done | info.new_hand | info.hand_over).tolist():
            rec = self.records[g]
            assert rec is not None
            hand = rec["hands"][-1]
            if info.move_done[g]:
                hand["moves"].append(
                    {
                        "seat": int(info.seat[g]),
                        "card": format_card(int(info.card[g]), deck),
                        "capture": format_cards(info.capture[g], deck),
                        "scopa": bool(info.scopa[g]),
                    }
                )
            if info.hand_over[g]:
                side = int(info.leftover_side[g])
                hand["leftover"] = {"side": side if side >= 0 else None, "cards": format_cards(info.leftover[g], deck)}
                hand["points"] = [
                    {k: int(v) for k, v in zip(self.fields, info.hand_points[g, s], strict=True)}
                    for s in range(self.rules.num_sides)
                ]
                hand["scores"] = [int(x) for x in info.final_scores[g]]
            if info.match_over[g]:
                rec["winner"] = int(info.winner[g])
                del rec["unfinished"]
                ended.append(rec)
                self.finished.append(rec)
                self.records[g] = self._new_record(state, g) if info.reset[g] else None
            if info.new_hand[g] and self.records[g] is not None:
                self._new_hand(state, g)
        return ended

    def _knock(self, state: core.State, info: core.StepInfo, g: int) -> None:
        """A knock made in game ``g`` this step: its entry, with the seat's hand (revealed by the knock)."""
        rec = self.records[g]
        assert rec is not None
        seat, kind = int(info.seat[g]), int(info.knock[g])
        rec["hands"][-1]["knocks"].append(
            {
                "seat": seat,
                "deal": int(state.deal_no[g]),
                "kind": _KNOCK_KINDS[kind],
                "cards": format_cards(np.flatnonzero(state.hands[g, seat]), self.rules.deck),
                "points": cirulla.KNOCK_POINTS[kind],
            }
        )

    def collect(self) -> list[dict[str, Any]]:
        """Every record, by seed: the finished matches and those still running (marked unfinished).

        A game stopped right after a hand ended has the next hand dealt but not played: that empty hand is dropped.
        """
        records = [r for r in self.records if r is not None] + self.finished
        for r in records:
            if r["hands"] and "points" not in r["hands"][-1] and not r["hands"][-1]["moves"]:
                r["hands"].pop()
        records.sort(key=lambda r: r["seed"])
        return records
