"""The trainer's progress output: a tqdm bar on a terminal, one plain line a minute in a log file (``LineProgress``).
``open_bar`` picks one; both take ``update``, ``set_postfix_str``, ``write`` and ``close``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["LineProgress", "open_bar"]


def open_bar(total: int, start: int, desc: str) -> Any:
    """A progress bar from ``start`` to ``total`` steps: tqdm when stderr is a terminal, else plain lines (a log file:
    no carriage returns)."""
    if not sys.stderr.isatty():
        return LineProgress(total, start)
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=start,
        unit="step",
        unit_scale=True,
        dynamic_ncols=True,
        smoothing=0.05,
        desc=desc,
    )


class LineProgress:
    """The progress bar's stand-in when stderr is not a terminal: one line every ``interval`` seconds."""

    def __init__(self, total: int, start: int, interval: float = 60.0) -> None:
        self.total, self.n, self.start, self.interval = total, start, start, interval
        self.t0 = self.last = time.perf_counter()
        self.postfix = ""

    def update(self, n: int) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self.last >= self.interval:
            self.last = now
            rate = (self.n - self.start) / max(now - self.t0, 1e-9)
            left = max(self.total - self.n, 0) / max(rate, 1e-9)
            print(
                f"progress: {self.n:,}/{self.total:,} steps ({100 * self.n / self.total:.0f}%), {rate:,.0f} steps/s, "
                f"{left / 60:.1f} min left{'; ' + self.postfix if self.postfix else ''}",
                file=sys.stderr,
                flush=True,
            )

    def set_postfix_str(self, text: str, refresh: bool = False) -> None:
        self.postfix = text

    def write(self, text: str) -> None:
        print(text, flush=True)

    def close(self) -> None:
        """Nothing to release."""
