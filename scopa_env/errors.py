"""The root of every error the project raises: ``ScopaEnvError``.

Each error class of ``scopa_env`` derives from it and keeps the built-in base its callers catch (``ValueError``
for a bad input, ``RuntimeError`` for a missing dependency), and so does ``agents.errors.ScopaError``, the base of
every error class of the ``agents`` package: one ``except ScopaEnvError`` catches every mistake the project reports
(the settings' ``ConfigError`` and ``YamlFileError`` of ``agents.cli.settings`` included), ``except ScopaError`` those
of the agents' own classes, and ``except ValueError`` still catches the bad inputs.
"""

from __future__ import annotations

__all__ = ["ScopaEnvError"]


class ScopaEnvError(Exception):
    """Base class of the project's errors (the envs' and, through ``agents.errors.ScopaError``, the agents');
    the message says what was wrong and how to fix it."""
