"""Variant families behind one hook: the plain game's here (``ScopaHook``), cirulla's in ``scopa_env.rules.cirulla``.

Every ``Rules`` belongs to one family: ``hook_class(rules)`` is the first of ``FAMILIES`` that covers it, else
``ScopaHook`` (every variant of RULES.md sections 2-5). The core makes one hook per rules, bound to its tables
(``core.tables_for(rules).variant``), and calls it where the families' rules differ; the modules above ask it (or
the data below) instead of testing which family the rules are in:

- the PLAY and CHOOSE phases: the legal actions (``legal_actions``, ``legal_mask``) and how a move completes
  (``resolve``: the plain game's captures here, by equal rank else by sum, and the ace taking all);
- a new hand (``start_hands``), after every deal (``after_deal``), the knocks (``apply_knocks``), the end of a hand
  (``knock_points``) and the step's info (``new_hand_info``): nothing in the plain game;
- the observation: its blocks (``observation_blocks``, ``observe_blocks``: none added here) and version
  (``obs_version``, ``observation.observation_version``);
- data for the faces: ``point_fields`` (``scoring.point_fields``), ``state_fields`` (the ``State`` fields the family
  uses beyond the plain game's, which saved states and records hold), ``matta`` (the wild card, if any),
  ``action_words`` (how errors call the action ids) and ``variant_label`` (the variant named in illegal-action errors).

A family is a class deriving from ``scopa_env.rules.hook_base.HookBase`` (the tables it keeps, its phase numbers, the
data each family sets) with ``ScopaHook``'s methods (``VariantHook``, duck-typed) and a ``covers(rules)`` class
method. This module sits below the core and never imports it: the state it is given is the core's ``State``
(typed ``Any`` here) and the phase numbers are the core's, passed to the hook when the core makes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env.rules import CATEGORIES, Rules
from scopa_env.rules.arrays import rank_counts
from scopa_env.rules.cirulla import CirullaHook
from scopa_env.rules.hook_base import HookBase, Resolved

__all__ = ["FAMILIES", "ScopaHook", "VariantHook", "hook_class"]


class ScopaHook(HookBase):
    """The plain game's part of the batched core for one ``Rules``: its captures, its data, no-op extra steps.

    ``tables``: the core's per-rules tables (``HookBase``'s, then ``ctable``, ``rank_bits``); ``play``, ``choose``,
    ``knock``: the core's ``Phase`` numbers.
    """

    family = "scopa"
    point_fields: tuple[str, ...] = (*CATEGORIES, "total")
    """Last axis of ``scoring.score_hands``' result (``scoring.POINT_FIELDS``)."""
    obs_version = 2
    """``observation.OBS_VERSION``: the observation's layout has no block added."""
    state_fields: tuple[str, ...] = ()
    """``State`` fields the family uses beyond the plain game's: none (they stay all zero)."""
    matta: str | None = None
    """The wild card: none."""
    action_words = "card ids"
    """What the action ids are (the card ids, ``0..num_cards - 1``), in the errors of bad actions."""
    single_learner = True
    """``learner_single.SingleLearnerGame`` may draw a ``RandomAgent`` opponent's moves in compiled code (the kernel's
    random play knows the family's moves)."""
    extra_scope = 0
    """Scope a side may make in a hand beyond one per play (the observation's bounds): none."""

    @staticmethod
    def extra_hand_points(knock_high: int) -> int:
        """Points a side may make in a hand beyond the categories and its scope (the observation's bounds): none.
        ``knock_high``: knock points / 10 a side may reach."""
        return 0

    def __init__(self, rules: Rules, tables: Any, *, play: int, choose: int, knock: int) -> None:
        super().__init__(rules, tables, play=play, choose=choose, knock=knock)  # variant_label: nothing
        self.ctable = tables.ctable
        self.rank_bits = tables.rank_bits

    # ----------------------------------------------------------------------------------------------- deals

    def start_hands(self, state: Any, games: npt.NDArray[np.intp]) -> None:
        """A new hand in ``games``: nothing to add."""

    def after_deal(self, state: Any, games: npt.NDArray[np.intp]) -> None:
        """Cards were just dealt in ``games``: the PLAY phase goes on."""

    # ----------------------------------------------------------------------------------------------- legality

    def _choose_mask(self, state: Any, g: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        """(n, D) pickable table cards for games ``g`` in the CHOOSE phase."""
        card = state.pending[g].astype(np.int64)
        table = state.table[g]
        rank = self.rank[card]
        same_rank = table & (self.rank[None, :] == rank[:, None])
        equal = same_rank.any(axis=1)
        avail = table & ~state.picked[g]
        counts = rank_counts(avail, self.r)
        target = self.value[card] - (state.picked[g] * self.value).sum(axis=1)
        _, union, _ = self.ctable.lookup(counts, target)
        by_sum = avail & ((union[:, None] & self.rank_bits[None, :]) != 0)
        return np.where(equal[:, None], same_rank, by_sum)  # type: ignore[no-any-return]

    def legal_mask(self, state: Any) -> npt.NDArray[np.bool_]:
        """``core.legal_action_mask``: (B, num_actions), the acting seat's hand (PLAY) or the pickable cards."""
        b = state.batch_size
        mask = state.hands[np.arange(b), state.current].copy()
        mask[state.phase != self.play] = False
        g = np.flatnonzero(state.phase == self.choose)
        if g.size:
            mask[g] = self._choose_mask(state, g)
        return mask  # type: ignore[no-any-return]

    def legal_actions(
        self, state: Any, actions: npt.NDArray[np.int64], running: npt.NDArray[np.bool_]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """``(legal, in_range)`` (B,): each running game's action is legal; it is a valid action id at all."""
        ar = np.arange(state.batch_size)
        in_range = (actions >= 0) & (actions < self.d)
        safe = np.where(in_range, actions, 0)
        seat = np.maximum(state.current, 0)
        legal = running & in_range & state.hands[ar, seat, safe] & (state.phase == self.play)
        choosing = np.flatnonzero(state.phase == self.choose)
        if choosing.size:
            pickable = self._choose_mask(state, choosing)
            legal[choosing] = in_range[choosing] & pickable[np.arange(choosing.size), safe[choosing]]
        return legal, in_range

    # ----------------------------------------------------------------------------------------------- step

    def resolve(self, state: Any, actions: npt.NDArray[np.int64], legal: npt.NDArray[np.bool_]) -> Resolved:
        """``core.step``'s PLAY and CHOOSE phases of the legal actions (the plain captures): a card played leaves
        the hand and becomes pending; a table card chosen is picked. Then the move completes when its capture is
        known (a lay, the one equal-rank or sum capture, the ace taking all), else the game goes on choosing
        (CHOOSE phase).

        Returns ``(card, capture, captures, done, ace_all, knock_games)`` (B,): the card of each game's move, the
        table cards it takes (where completed), it completed as a capture, it completed, it was an ace taking all;
        no game knocks (``knock_games`` is empty)."""
        b = state.batch_size
        ar = np.arange(b)
        plays = legal & (state.phase == self.play)
        picks = legal & (state.phase == self.choose)
        card = np.where(plays, actions, state.pending).astype(np.int64)
        card = np.where(legal, card, 0)
        # Play: the card leaves the hand and becomes pending.
        played = np.flatnonzero(plays)
        state.hands[played, state.current[played], actions[played]] = False
        state.pending[played] = actions[played]
        picking = np.flatnonzero(picks)
        state.picked[picking, actions[picking]] = True

        # Resolve: complete (capture or lay), or wait for picks.
        table = state.table
        counts = rank_counts(table, self.r)
        rank = self.rank[card]
        value = self.value[card]
        n_equal = counts[ar, rank]
        equal = plays & (n_equal > 0)
        if self.rules.ace_takes_all:
            ace_all = plays & ~equal & (rank == self.ace_rank) & table.any(axis=1)
        else:
            ace_all = np.zeros(b, bool)
        by_sum = (plays & ~equal & ~ace_all) | picks
        target = np.where(by_sum, value, 0)
        if picking.size:  # cards already picked count towards the capture
            counts[picking] -= rank_counts(state.picked[picking], self.r)
            target[picking] -= (state.picked[picking] * self.value).sum(axis=1)
        summing = np.flatnonzero(by_sum)
        nparts, union, unique = self.ctable.lookup(counts[summing], target[summing])
        lay = np.zeros(b, dtype=np.bool_)
        lay[summing[nparts == 0]] = True
        lay &= plays
        sum_rows = (target[summing] == 0) | unique
        sum_done = np.zeros(b, dtype=np.bool_)
        sum_done[summing[sum_rows]] = True
        equal_done = equal & (n_equal == 1)
        capture = np.zeros((b, self.d), dtype=np.bool_)
        if sum_rows.any():
            summed = summing[sum_rows]
            in_union = (union[sum_rows, None] & self.rank_bits[None, :]) != 0
            capture[summed] = state.picked[summed] | (in_union & table[summed])
        equal_games = np.flatnonzero(equal_done)
        if equal_games.size:
            capture[equal_games] = table[equal_games] & (self.rank[None, :] == rank[equal_games, None])
        if ace_all.any():
            capture[ace_all] = table[ace_all]
        captures = sum_done | equal_done | ace_all
        done = captures | lay
        state.phase[legal & ~done] = self.choose
        return card, capture, captures, done, ace_all, _NO_GAMES

    def apply_knocks(self, state: Any, g: npt.NDArray[np.intp], kind: npt.NDArray[np.int64], info: Any) -> None:
        """Knock decisions: none in the plain game (``resolve`` reports no knocking game)."""

    def knock_points(self, state: Any, g: npt.NDArray[np.intp]) -> None:
        """No knock points to score (``scoring.score_hands``' ``knock_points``)."""

    def new_hand_info(self, state: Any, info: Any) -> None:
        """The step's info of the games where a new hand was dealt: nothing to add."""

    # ----------------------------------------------------------------------------------------------- observation

    def observation_blocks(self, blocks: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
        """``observation.observation_layout``'s ``(name, size, meaning)`` blocks: unchanged."""
        return blocks

    def observe_blocks(
        self,
        state: Any,
        seat: npt.NDArray[np.int64],
        side_rows: npt.NDArray[np.int64],
        obs: npt.NDArray[np.float32],
        unseen: tuple[int, int],
        pos: int,
    ) -> None:
        """``observation.observe``'s family part: nothing to add."""


_NO_GAMES = np.zeros(0, dtype=np.intp)
"""``resolve``'s knocking games in the plain game (never written to)."""

VariantHook = ScopaHook | CirullaHook
"""A family's hook (duck-typed: ``ScopaHook``'s methods and data)."""

FAMILIES: tuple[type[CirullaHook], ...] = (CirullaHook,)
"""The families beyond the plain game, each a hook class with ``covers(rules)``; the first that covers a ``Rules``
is its family."""


def hook_class(rules: Rules) -> type[VariantHook]:
    """The hook class of the family that ``rules`` belongs to: the first of ``FAMILIES`` covering it, else
    ``ScopaHook``."""
    for family in FAMILIES:
        if family.covers(rules):
            return family
    return ScopaHook
