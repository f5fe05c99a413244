"""Stopping a command cleanly on a signal: the one mechanism of ``train.py``, ``evaluate.py`` and expert iteration.

``STOP_SIGNALS`` (Ctrl-C's SIGINT, SIGTERM, SIGHUP, where the OS has them) stop a command with exit status 128 + the
signal's number (130, 143, 129: ``exit_status``) after it has saved what it had. ``StopSignals`` catches them for a
block of code (a context manager; in the main thread only, elsewhere it does nothing):

- by default a signal raises ``SignalStop`` (a ``KeyboardInterrupt`` carrying the signal; the tournament raises its
  subclass ``TournamentInterrupted``) where the code is, as Ctrl-C does;
- ``notify=`` (the trainer): the first signal only asks for a stop (``requested``, ``notify(signum)``), which the
  code makes at its next safe point; a second one raises ``SignalStop`` of the first, to stop sooner.

Inside ``hold()`` (writing results) a signal waits for the block to end. With ``once`` (the tournament, which then
stops its workers and writes the results so far whole) the signals after the first are ignored; without it each one
raises again. A signal its parent ignored (``nohup``'s SIGHUP) stays ignored. An exception raised by a signal handler
can be lost (Python runs the handler between any two bytecodes, and numpy discards any exception raised while it
looks an attribute up), so every signal is also kept (``received``) and ``check()``, called at the code's safe points,
raises a stop whose exception was lost.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["STOP_SIGNALS", "SignalStop", "StopSignals", "exit_status", "signal_name"]

STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that stop a command cleanly, where the OS has them."""


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15; ``signal 99`` for a number the OS has no name for."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_status(stop: BaseException | int) -> int:
    """The exit status of a command stopped by ``stop`` (a ``SignalStop``, a plain ``KeyboardInterrupt``: Ctrl-C, or
    a signal number): 128 + the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
    if isinstance(stop, int):
        return 128 + stop
    return 128 + (stop.signum if isinstance(stop, SignalStop) else int(signal.SIGINT))


class SignalStop(KeyboardInterrupt):
    """A stop signal asked a command to stop; ``signum`` is the signal (``SIGINT`` for Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)

    @property
    def signal_name(self) -> str:
        return signal_name(self.signum)


class StopSignals:
    """While active (``with StopSignals(...) as stop``; ``enabled`` and in the main thread), each of ``STOP_SIGNALS``
    stops the command: see the module's doc. The previous handlers come back on exit.

    ``stop``: the exception raised (``SignalStop`` or a subclass taking the signal number). ``notify``: the first
    signal only asks (the trainer). ``once``: the signals after the first are ignored (the tournament)."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        stop: Callable[[int], BaseException] = SignalStop,
        notify: Callable[[int], None] | None = None,
        once: bool = False,
    ) -> None:
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.stop, self.notify, self.once = stop, notify, once
        self.received: list[int] = []
        """Every stop signal received, in order."""
        self.held = 0
        self.stopping = False
        """Set by the code once it is stopping (saving what it had): further signals are ignored."""
        self._saved: dict[int, Any] = {}

    @property
    def pending(self) -> int | None:
        """The first signal received, or None."""
        return self.received[0] if self.received else None

    @property
    def requested(self) -> bool:
        """A stop signal came."""
        return bool(self.received)

    def __enter__(self) -> StopSignals:
        if self.enabled:
            for sig in STOP_SIGNALS:
                if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup: SIGHUP stays ignored
                    self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._saved.items():
            signal.signal(sig, old)
        self._saved.clear()

    def _handle(self, signum: int, frame: object) -> None:
        first = not self.received
        self.received.append(signum)
        if self.stopping or (self.once and not first):
            return  # a stop is under way (check() raises it again at the next safe point if its exception was lost)
        if first and self.notify is not None:
            self.notify(signum)  # the code stops at its next safe point; a second signal stops it sooner
            return
        if not self.held:
            raise self.stop(self.received[0])

    def check(self) -> None:
        """Raise the stop of a signal whose exception was lost (none came, or a stop is under way: nothing)."""
        if self.received and not self.held and not self.stopping and self.notify is None:
            raise self.stop(self.received[0])

    @contextmanager
    def hold(self) -> Iterator[None]:
        """A block a signal does not cut: a signal that came meanwhile stops the code when it ends."""
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1
        self.check()
