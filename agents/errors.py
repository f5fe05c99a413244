"""The base of every error the ``agents`` package raises, and the tournament's error (shared by the evaluation
modules, below all of them).

Each error class of the package derives from ``ScopaError`` and keeps the built-in base its callers catch
(``ValueError`` for a bad input, ``RuntimeError`` for a failed step), so ``except ScopaError`` catches every one
and ``except ValueError`` still catches the bad inputs. Control-flow exceptions (``StopTraining``, the terminal
game's ``QuitGame``) are not errors and do not derive from it.
"""

from __future__ import annotations

__all__ = ["ScopaError", "TournamentError"]


class ScopaError(Exception):
    """Base class of the package's errors; the message says what was wrong and how to fix it."""


class TournamentError(ScopaError, ValueError):
    """A tournament that cannot run as configured; the message says what was wrong and how to fix it."""
