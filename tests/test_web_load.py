"""The browser game's server under load (``bench/web_load.py``, installed as ``scopa_bench.web_load``): 200 players
finish whole matches of scopone scientifico (the shortest matches, about 30 moves) against the shipped bot's network
at once, while 300 slow clients hold connections by sending a body a byte a second (under ``-m slow``; the default
suite runs 25 players beside 50 slow clients), against
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


@pytest.mark.parametrize(
    ("players", "slow"),
    [(25, 50), pytest.param(200, 300, marks=pytest.mark.slow)],
    ids=["25-players-50-slow", "200-players-300-slow"],
)
def test_players_finish_matches_while_slow_clients_hold_connections(players: int, slow: int) -> None:
    """The default suite's load is a sixth to an eighth of the documented one (200 players beside 300 slow clients,
    under -m slow and in bench/web_load.py): the same server paths, both kinds of client at once, in less time."""
    bot = shipped_bot(VARIANT)
    assert bot is not None
    # The server under load is what is tested, not the bot: its network alone (about 0.2 ms a move) rather than the
    # shipped pimc search (about 14 ms a move, which made this one test take four minutes on two cores).
    bots = {"bot": f"bot:path={bot},search=false"}
    with started_server(bots, players + 10, body_timeout=5.0, connections=players + slow) as server:
        report = asyncio.run(run_load(server.url, players, slow, VARIANT, "bot", seed=0, min_cut_offs=slow))
    print(report.summary())
    assert report.error_count == 0, report.errors
    assert report.matches == players and report.moves >= players * 10  # whole matches: 10 moves a hand at least
    assert report.cut_offs >= slow  # every slow client was cut off at least once (on average)
    assert not [line for line in server.output if "internal error" in line or "Traceback" in line], server.output
