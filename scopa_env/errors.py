"""The root of every error the project raises: ``ScopaEnvError``.

Each error class of ``scopa_env`` derives from it and keeps the built-in base its callers catch (``ValueError``
for a bad input, ``RuntimeError`` for a missing dependency), and so does ``agents.errors.ScopaError``, the base of
every error class of the ``agents`` package: one ``except ScopaEnvError`` catches every mistake the project reports
(the settings' ``ConfigError`` and ``YamlFileError`` of ``agents.cli.settings`` included), ``except ScopaError`` those
of the agents' own classes, and ``except ValueError`` still catches the bad inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ScopaEnvError", "whole_number"]


class ScopaEnvError(Exception):
    """Base class of the project's errors (the envs' and, through ``agents.errors.ScopaError``, the agents');
    the message says what was wrong and how to fix it."""


def whole_number(x: Any, low: int | None = None, high: int | None = None) -> bool:
    """Whether ``x`` is an integer (a Python or numpy int, not a bool) from ``low`` to ``high`` (both included; None:
    no bound): the check behind the bad-input errors of counts, indices and seeds."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        return False
    return bool((low is None or x >= low) and (high is None or x <= high))
