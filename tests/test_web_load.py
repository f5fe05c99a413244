"""The browser game's server under load (``bench/web_load.py``, installed as ``scopa_bench.web_load``): 200 players
finish whole matches of scopone scientifico (the shortest matches, about 30 moves) against the shipped bot's network
at once, while 300 slow clients hold connections by sending a body a byte a second, against
``python -m agents.play.web`` on 127.0.0.1 (its own process). No request may fail; the server must cut the slow
clients off (its body deadline, 408) and print no internal error. The latency numbers go to docs/web.md from the same
script, never into an assert.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("h11")
pytest.importorskip("uvicorn")

from agents.nets.bot import shipped_bot
from scopa_bench.web_load import run_load, started_server

VARIANT = "scopone-scientifico"
PLAYERS = 200
SLOW = 300


def test_200_players_finish_matches_while_300_slow_clients_hold_connections() -> None:
    bot = shipped_bot(VARIANT)
    assert bot is not None
    # The server under load is what is tested, not the bot: its network alone (about 0.2 ms a move) rather than the
    # shipped pimc search (about 14 ms a move, which made this one test take four minutes on two cores).
    bots = {"bot": f"bot:path={bot},search=false"}
    with started_server(bots, PLAYERS + 10, body_timeout=5.0, connections=PLAYERS + SLOW) as server:
        report = asyncio.run(run_load(server.url, PLAYERS, SLOW, VARIANT, "bot", seed=0, min_cut_offs=SLOW))
    print(report.summary())
    assert report.error_count == 0, report.errors
    assert report.matches == PLAYERS and report.moves >= PLAYERS * 10  # whole matches: 10 moves a hand at least
    assert report.cut_offs >= SLOW  # every slow client was cut off at least once (on average)
    assert not [line for line in server.output if "internal error" in line or "Traceback" in line], server.output
