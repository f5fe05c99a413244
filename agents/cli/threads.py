"""One BLAS / OpenMP thread per process: the environment variables, set before numpy loads its libraries.

    from agents.cli.threads import pin_blas_threads   # first thing, before anything imports numpy
    pin_blas_threads()

BLAS and OpenMP read their thread counts when their libraries load, that is when numpy (or torch) is first
imported; afterwards the variables change nothing in this process, only in the processes it starts. The tools that
run many games side by side (``evaluate.py``'s workers, the benchmarks) pin every process to one thread so that
thread pools do not fight over the cores.

This module imports ``os`` only, and its package's ``__init__`` imports nothing heavy, so importing it does not
load numpy. (``scopa_env`` cannot hold it: ``import scopa_env`` registers the Gymnasium ids, which loads numpy.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["THREAD_VARS", "pin_blas_threads", "restore_threads"]

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Environment variables that size the BLAS / OpenMP thread pools (OpenMP, MKL, OpenBLAS)."""


def pin_blas_threads(force: bool = False) -> dict[str, str | None]:
    """Set every ``THREAD_VARS`` variable to ``"1"``; returns their previous values (None: unset).

    By default a variable already set is kept (``os.environ.setdefault``: a user's own choice wins); ``force``
    overrides it too (worker processes, latency benchmarks). Call it before numpy is imported, or before
    starting processes that should inherit it; ``restore_threads`` puts the previous values back.
    """
    saved = {var: os.environ.get(var) for var in THREAD_VARS}
    for var in THREAD_VARS:
        if force:
            os.environ[var] = "1"
        else:
            os.environ.setdefault(var, "1")
    return saved


def restore_threads(saved: Mapping[str, str | None]) -> None:
    """Put back the values ``pin_blas_threads`` returned (None: unset the variable)."""
    for var, value in saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
