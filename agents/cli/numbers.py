"""Numbers on the command line: the argparse ``type`` of every numeric option (whole numbers in a range, finite
numbers of seconds, shares), written once for every command.

A bad value never reaches the program: argparse prints ``prog: error: argument --seed: expected a whole number from 0
to 2**64-1, got '1e30'`` (the value and what was wanted) and exits with status 2. nan and inf are refused wherever a
number is wanted, as are values out of range.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["float_arg", "int_arg"]


def int_arg(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number in ``lo..hi`` (``hi`` None: no upper bound); the error names the value
    and the range.

    ``int("1e30")`` and ``int("-3")`` never reach the program: argparse prints ``prog: error: argument --seed:
    expected a whole number from 0 to 2**64-1, got '1e30'`` and exits with status 2.
    """
    wanted = f"a whole number >= {lo}" if hi is None else f"a whole number from {lo} to {_show_int(hi)}"

    def parse(text: str) -> int:
        try:
            value: int | None = int(text.strip(), 10)
        except ValueError:
            value = None
        if value is None or value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {_shown(text)!r}")
        return value

    parse.__name__ = "whole number"
    return parse


def float_arg(
    lo: float, hi: float | None = None, *, above: bool = False, unit: str = "", note: str = ""
) -> Callable[[str], float]:
    """An argparse ``type`` for a finite number from ``lo`` (excluded where ``above``) to ``hi`` (None: no upper
    bound), e.g. ``float_arg(0, above=True, unit="seconds")``: "expected a finite number of seconds > 0, got '-1'";
    ``note`` is added to the message in brackets."""
    number = f"a finite number of {unit}" if unit else "a finite number"
    wanted = f"{number} {'>' if above else '>='} {lo:g}" if hi is None else f"{number} from {lo:g} to {hi:g}"
    if note:
        wanted += f" ({note})"

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < lo or (above and value == lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {_shown(text)!r}")
        return value

    parse.__name__ = "number"
    return parse


def _shown(text: str) -> str:
    """A value as the errors quote it: at most 40 characters."""
    return text if len(text) <= 40 else text[:37] + "..."


def _show_int(n: int) -> str:
    """``n`` as people read it: ``65536``, or ``2**64-1`` / ``2**64`` for the large powers of two."""
    for k, text in ((n + 1, "-1"), (n, "")):
        if k >= 2**32 and k & (k - 1) == 0:
            return f"2**{k.bit_length() - 1}{text}"
    return str(n)
