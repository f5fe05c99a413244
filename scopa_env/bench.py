"""Moved: the speed benchmark of the core, the reference engine and the vector env is ``bench/env_speed.py`` (the
installed package ``scopa_bench``, the ``scopa-bench`` command, ``make bench``). This name stays so that
``python -m scopa_env.bench`` and imports from it keep working; nothing in ``scopa_env`` imports it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from scopa_bench import env_speed as _env_speed
from scopa_bench.env_speed import MAX_BATCH, MAX_SEED, _random_legal, bench_core, bench_reference, bench_vec_env

__all__ = ["MAX_BATCH", "MAX_SEED", "_random_legal", "bench_core", "bench_reference", "bench_vec_env", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m scopa_env.bench``: ``scopa_bench.env_speed.main`` under its old name."""
    return _env_speed.main(argv, prog="python -m scopa_env.bench")


if __name__ == "__main__":
    sys.exit(main())
