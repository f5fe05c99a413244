"""agents.cli.signals: the one stop-signal mechanism of train.py, evaluate.py and expert iteration.

The commands' own tests send real signals (tests/test_evaluate.py, tests/test_train*.py, tests/test_netsearch.py);
these hold the mechanism's rules on their own: the exception raised, a second signal, ``hold``, a lost exception,
``nohup``'s ignored SIGHUP, the exit status and the handlers put back.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from agents.cli.signals import STOP_SIGNALS, SignalStop, StopSignals, exit_status, signal_name
from agents.evaluation.tournament import TournamentInterrupted


def _send(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(0.05)  # the handler runs in the main thread between two bytecodes


def test_stop_signals_and_exit_status() -> None:
    assert signal.SIGINT in STOP_SIGNALS and signal.SIGTERM in STOP_SIGNALS
    assert exit_status(SignalStop(signal.SIGTERM)) == 143 and exit_status(KeyboardInterrupt()) == 130
    assert exit_status(int(signal.SIGHUP)) == 129
    assert signal_name(15) == "SIGTERM" and signal_name(250) == "signal 250"
    assert issubclass(TournamentInterrupted, SignalStop)


def test_a_signal_raises_where_the_code_is_and_the_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SignalStop) as e, StopSignals() as stop:
        _send(signal.SIGTERM)
    assert e.value.signum == signal.SIGTERM and stop.received == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_held_block_delays_the_stop_and_a_lost_one_is_raised_by_check() -> None:
    with StopSignals(stop=TournamentInterrupted, once=True) as stop:
        with pytest.raises(TournamentInterrupted), stop.hold():
            _send(signal.SIGTERM)  # waits for the block to end
        _send(signal.SIGTERM)  # once: a stop is under way, the second is ignored
        assert stop.received == [signal.SIGTERM, signal.SIGTERM]
        stop.stopping = True
        stop.check()  # stopping: nothing to raise
    with StopSignals() as stop:
        try:
            _send(signal.SIGHUP)
        except SignalStop:
            pass  # the exception is lost here, as numpy can lose it
        with pytest.raises(SignalStop) as e:
            stop.check()
        assert e.value.signum == signal.SIGHUP


def test_notify_asks_first_and_stops_on_the_second() -> None:
    asked: list[int] = []
    with StopSignals(notify=asked.append) as stop:
        _send(signal.SIGTERM)
        assert asked == [signal.SIGTERM] and stop.requested
        stop.check()  # a request is no lost exception
        with pytest.raises(SignalStop) as e:
            _send(signal.SIGINT)
    assert e.value.signum == signal.SIGTERM  # the first signal's stop: exit status 143


def test_an_ignored_signal_stays_ignored() -> None:
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with StopSignals() as stop:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            _send(signal.SIGHUP)
        assert not stop.received
    finally:
        signal.signal(signal.SIGHUP, old)


def test_outside_the_main_thread_it_does_nothing() -> None:
    import threading

    seen: list[bool] = []

    def run() -> None:
        with StopSignals() as stop:
            seen.append(stop.enabled)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [False]
