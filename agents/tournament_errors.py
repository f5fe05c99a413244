"""The error every tournament module raises for a tournament that cannot run as configured (``evaluate.py`` prints
its message as ``evaluate.py: error: ...``); it lives apart so that deals, entries and schedule can share it."""

from __future__ import annotations

__all__ = ["TournamentError"]


class TournamentError(ValueError):
    """A tournament that cannot run as configured; the message says what was wrong and how to fix it."""
