"""The base of every error the ``agents`` package raises, and the tournament's error (shared by the evaluation
modules, below all of them).

Each error class of the package derives from ``ScopaError`` and keeps the built-in base its callers catch
(``ValueError`` for a bad input, ``RuntimeError`` for a failed step), so ``except ScopaError`` catches every one
and ``except ValueError`` still catches the bad inputs. Control-flow exceptions (``StopTraining``, the terminal
game's ``QuitGame``) are not errors and do not derive from it. ``ScopaError`` itself derives from
``scopa_env.errors.ScopaEnvError``, so ``except ScopaEnvError`` catches the envs' errors and the agents' alike.
The settings' errors the package raises too (a bad config key, a conflict with a resumed run) are the settings
machinery's, in the env layer: ``agents.cli.settings.ConfigError`` (a ``ValueError``) and ``YamlFileError`` are
``ScopaEnvError``s, not ``ScopaError``s.
"""

from __future__ import annotations

from scopa_env.errors import ScopaEnvError

__all__ = ["ScopaError", "TournamentError"]


class ScopaError(ScopaEnvError):
    """Base class of the package's errors; the message says what was wrong and how to fix it. It derives from
    ``scopa_env.errors.ScopaEnvError``, the root of every error of the project (the envs' too)."""


class TournamentError(ScopaError, ValueError):
    """A tournament that cannot run as configured; the message says what was wrong and how to fix it."""
