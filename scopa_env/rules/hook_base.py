"""What every variant family's hook shares (``HookBase``): the core's tables it keeps, its phase numbers, its data.

``scopa_env.rules.variant.ScopaHook`` (the plain game) and ``scopa_env.rules.cirulla.CirullaHook`` derive from it. It
lives in its own module because ``scopa_env.rules.variant`` imports ``scopa_env.rules.cirulla``; like them it sits below
the core and never imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scopa_env.rules import Rules

__all__ = ["HookBase", "Resolved"]

Resolved = tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.bool_],
    npt.NDArray[np.bool_],
    npt.NDArray[np.bool_],
    npt.NDArray[np.bool_],
    npt.NDArray[np.intp],
]
"""What a family hook's ``resolve`` returns: ``(card, capture, captures, done, ace_all, knock_games)``."""


class HookBase:
    """A family's hook for one ``Rules``, bound to the core's per-rules ``tables`` (``d``, ``r``, ``value``,
    ``rank``, ``ace_rank``: kept here; a family keeps the others it uses); ``play``, ``choose``, ``knock``: the core's
    ``Phase`` numbers. Each family sets the data below."""

    family: str
    """The family's name (``scopa``, ``cirulla``)."""
    point_fields: tuple[str, ...]
    """Last axis of ``scoring.score_hands``' result."""
    obs_version: int
    """The observation's version (``observation.observation_version``)."""
    state_fields: tuple[str, ...]
    """``State`` fields the family uses beyond the plain game's (saved states and records hold them)."""
    matta: str | None
    """The wild card, if any."""
    action_words: str
    """What the action ids are, in the errors of bad actions."""
    single_learner: bool
    """The kernel's compiled ``RandomAgent`` play knows the family's moves: ``learner_single.SingleLearnerGame`` (the
    Gymnasium env's loop, every family) may draw a ``RandomAgent`` opponent's moves in compiled code."""
    extra_scope: int
    """Scope a side may make in a hand beyond one per play (the observation's bounds)."""

    def __init__(self, rules: Rules, tables: Any, *, play: int, choose: int, knock: int) -> None:
        self.rules = rules
        self.d, self.r = tables.d, tables.r
        self.value = tables.value
        self.rank = tables.rank
        self.ace_rank = tables.ace_rank
        self.play, self.choose, self.knock = play, choose, knock
        self.variant_label = ""
        """Said after ``game i`` in an illegal action's error: nothing (the plain game), or the variant's name."""
