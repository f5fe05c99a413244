"""The browser game's server (agents/play/web, Starlette on uvicorn): the JSON API, its checks, hidden information,
expiry, the command line, cirulla (knocks, fifteens, knocked cards shown, its point fields), the limits against hostile
clients (slow headers and bodies cut off, nested JSON refused with 400, the connection cap's 503, a graceful shutdown),
and a load test of 50 concurrent games. The page itself is driven in a real browser in test_web_browser.py; 200 players
beside 300 slow clients in test_web_load.py."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.nets.bot import SHIPPED_BOTS
from agents.play.web.api import MAX_JSON_DEPTH, _parse_move, json_depth_exceeds
from agents.play.web.game import WebGame
from agents.play.web.registry import GameRegistry, ServerConfig, default_bots
from agents.play.web.server import (
    MAX_HEADER_LINE,
    MAX_HEADERS,
    MAX_REQUEST_LINE,
    WebServer,
    make_server,
    plural,
    request_head_problem,
)
from scopa_env.rules.cards import format_card
from scopa_env.rules.scoring import CIRULLA_POINT_FIELDS

BOTS = {
    "bot-classic": default_bots()["bot-classic"],  # classic's shipped bot: a pimc search
    "fast-classic": f"bot:path={SHIPPED_BOTS / 'classic'},search=false",  # its network alone
    "expert": "expert",
    "greedy": "greedy",
    "random": "random",
}


@contextmanager
def serving(config: ServerConfig) -> Iterator[WebServer]:
    """A server on 127.0.0.1 and a free port, serving (uvicorn's loop) in a thread until the block ends."""
    srv = make_server(config)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    with serving(ServerConfig(bots=BOTS, max_games=500)) as srv:
        yield srv


def call(
    srv: WebServer, method: str, path: str, body: Any = None, raw: bytes | None = None, ctype: str = "application/json"
) -> tuple[int, Any]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(srv.url.rstrip("/") + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        text, status = e.read(), e.code
    try:
        return status, json.loads(text)
    except json.JSONDecodeError:
        return status, text.decode()


def hidden_codes(srv: WebServer | WebGame, game_id: str = "") -> set[str]:
    """Notation of every card the person may not see: the other hands (less the cards a cirulla knock showed) and
    the stock."""
    game = srv if isinstance(srv, WebGame) else srv.registry.get(game_id)
    rules, st = game.rules, game.state
    hidden = set()
    for seat in range(rules.num_players):
        if seat != game.human:
            secret = st.hands[0, seat] & ~st.revealed[0, seat]
            hidden |= {format_card(int(c), rules.deck) for c in np.flatnonzero(secret)}
    hidden |= {format_card(int(c), rules.deck) for c in st.deck[0, int(st.stock_pos[0]) :]}
    return hidden


def assert_nothing_hidden(srv: WebServer | WebGame, view: dict[str, Any]) -> None:
    """No hidden card, no seed, no deck order in a response (the events of an ended hand name cards of that hand,
    which may be dealt again: those are checked without the events)."""
    hidden = hidden_codes(srv, view["id"])
    hand_ended = any(e["type"] == "hand_over" for e in view["events"])
    shown = {k: v for k, v in view.items() if not (hand_ended and k == "events")}
    text = json.dumps(shown)
    leaked = {c for c in hidden if f'"{c}"' in text}
    assert not leaked, f"hidden cards in the response: {leaked}"
    for key in ("seed", "deck_order", "stock_order", "hands"):
        assert f'"{key}"' not in json.dumps(view)


def play_out(srv: WebServer, view: dict[str, Any], check_hidden: bool = False, hands: int | None = None) -> dict:
    """Play the first legal move until the match ends (or ``hands`` hands are over); returns the last view."""
    done_hands = 0
    while not view["done"] and (hands is None or done_hands < hands):
        assert view["your_turn"], view
        if view["knock_options"]:  # cirulla: knock whenever allowed
            status, view = call(srv, "POST", f"/api/games/{view['id']}/knock", {"knock": view["knock_options"][-1]})
            assert status == 200, view
            continue
        card, caps = next(iter(view["moves"].items()))
        status, view = call(srv, "POST", f"/api/games/{view['id']}/move", {"card": card, "capture": caps[-1]})
        assert status == 200, view
        done_hands += sum(e["type"] == "hand_over" for e in view["events"])
        if check_hidden:
            assert_nothing_hidden(srv, view)
    return view


def test_info_lists_variants_and_only_the_servers_bots(server: WebServer) -> None:
    status, info = call(server, "GET", "/api/info")
    assert status == 200
    names = [v["name"] for v in info["variants"]]
    assert "classic" in names and "scopone-scientifico" in names
    classic = next(v for v in info["variants"] if v["name"] == "classic")
    assert classic["default_bot"] == "bot-classic" and set(classic["bots"]) == set(BOTS)
    assert classic["short_names"] == {**{b: b for b in BOTS}, "bot-classic": "Bot"}  # the variant's own bot: "Bot"
    quattro = next(v for v in info["variants"] if v["name"] == "scopa-a-quattro")
    assert quattro["teams"] and "bot-classic" not in quattro["bots"]  # the shipped bot plays classic only
    assert "agents/bots" not in json.dumps(info)  # specs (paths) stay on the server


def test_full_classic_match_never_shows_hidden_cards(server: WebServer) -> None:
    status, view = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "greedy", "seed": 11})
    assert status == 201, view
    assert len(view["id"]) >= 32 and len(view["hand"]) == 3
    assert_nothing_hidden(server, view)
    hidden = hidden_codes(server, view["id"])
    assert len(hidden) >= 3 + 40 - 4 - 6 - 3  # the other hand (less a card if it played first) and the stock
    with pytest.raises(AssertionError, match="hidden cards"):  # the check itself catches a leak
        assert_nothing_hidden(server, {**view, "table": [*view["table"], {"code": min(hidden)}]})
    view = play_out(server, view, check_hidden=True)
    assert view["done"] and view["winner"] in (0, 1)
    assert max(s["score"] for s in view["sides"]) >= 11
    assert any(e["type"] == "match_over" for e in view["events"])
    assert view["past_hands"] and all(len(h["points"]) == 2 for h in view["past_hands"])
    status, again = call(server, "POST", f"/api/games/{view['id']}/rematch", {})
    assert status == 200 and again["match"] == 2 and not again["done"] and again["id"] == view["id"]
    assert all(s["score"] == 0 for s in again["sides"]) and again["past_hands"] == []


def test_same_seed_same_deal_and_the_server_seeds_games_itself(server: WebServer) -> None:
    a = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": 5})[1]
    b = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": 5})[1]
    assert a["hand"] == b["hand"] and a["table"] == b["table"] and a["id"] != b["id"]
    c = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random"})[1]
    d = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random"})[1]
    assert (c["hand"], c["table"]) != (d["hand"], d["table"])


def test_team_variant_with_a_bot_partner_plays_a_hand(server: WebServer) -> None:
    body = {"variant": "scopa-a-quattro", "opponent": "greedy", "partner": "expert", "seed": 3}
    status, view = call(server, "POST", "/api/games", body)
    assert status == 201, view
    labels = {s["seat"]: s["label"] for s in view["seats"]}
    assert labels == {0: "you", 1: "opponent (greedy)", 2: "partner (expert)", 3: "opponent (greedy)"}
    assert [s["name"] for s in view["sides"]] == ["your team", "team 1+3"]
    view = play_out(server, view, check_hidden=True, hands=1)
    assert view["past_hands"], "a whole hand was played"


@pytest.mark.parametrize(
    "variant",
    ["scopa-d-assi", "scopone-scientifico", "simple-3", "simple-6-teams", "simple-8", "cirulla-3", "cirulla-4"],
)
def test_other_variants_play_a_hand(server: WebServer, variant: str) -> None:
    status, view = call(server, "POST", "/api/games", {"variant": variant, "opponent": "random", "seed": 4})
    assert status == 201, view
    assert len(view["seats"]) == len({s for side in view["sides"] for s in side["seats"]})
    view = play_out(server, view, check_hidden=True, hands=1)
    assert view["past_hands"] and len(view["past_hands"][0]["points"]) == len(view["sides"])


def test_a_chosen_capture_is_the_one_played(server: WebServer) -> None:
    """Find a position where a card captures in several ways; each choice is carried out as sent."""
    for seed in range(60):
        view = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": seed})[1]
        for _ in range(30):
            multi = [(c, caps) for c, caps in view["moves"].items() if len(caps) > 1]
            if multi or view["done"]:
                break
            card, caps = next(iter(view["moves"].items()))
            view = call(server, "POST", f"/api/games/{view['id']}/move", {"card": card, "capture": caps[0]})[1]
        if multi:
            break
    else:
        pytest.fail("no position with a choice of captures in 60 games")
    card, caps = multi[0]
    choice = caps[-1]
    status, after = call(server, "POST", f"/api/games/{view['id']}/move", {"card": card, "capture": choice})
    assert status == 200, after
    mine = next(e for e in after["events"] if e["type"] == "move" and e["seat"] == 0)
    assert mine["card"]["code"] == card and sorted(c["code"] for c in mine["capture"]) == sorted(choice)


def test_hints_from_the_bot(server: WebServer) -> None:
    # a network bot's hint carries its probabilities
    view = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "fast-classic", "seed": 2})[1]
    status, hint = call(server, "POST", f"/api/games/{view['id']}/hint", {})
    assert status == 200 and hint["bot"] == "fast-classic"
    assert hint["card"]["code"] in view["moves"]
    assert hint["options"] and abs(sum(o["prob"] for o in hint["options"]) - 1) < 1e-3
    # classic's shipped bot is a pimc search: its hint is its move, without probabilities (as a rule-based bot's)
    view = call(server, "POST", "/api/games", {"variant": "classic", "seed": 2})[1]  # default: the shipped bot
    status, hint = call(server, "POST", f"/api/games/{view['id']}/hint", {})
    assert status == 200 and hint["bot"] == "Bot" and hint["options"] == []  # the page's short name for it
    assert (view["seats"][1]["name"], view["seats"][1]["bot"], view["hint_bot"]) == ("Bot", "bot-classic", "Bot")
    assert hint["card"]["code"] in view["moves"]
    view = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "expert", "seed": 2})[1]
    status, hint = call(server, "POST", f"/api/games/{view['id']}/hint", {})
    assert status == 200 and hint["options"] == [] and hint["card"]["code"] in view["moves"]
    assert [c["code"] for c in hint["capture"]] in view["moves"][hint["card"]["code"]]


def review_until_done(srv: WebServer, game_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Ask for a review and follow it (the server computes it in the background) until it is done."""
    deadline = time.monotonic() + 120
    while True:
        status, job = call(srv, "POST", f"/api/games/{game_id}/review", body)
        assert status == 200 and job["state"] in ("queued", "running", "done"), job
        if job["state"] == "done":
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


def test_a_review_comes_after_the_hand_and_only_of_your_moves(server: WebServer) -> None:
    """A hand is reviewed once it is over, the match once it is over, never before (a review during play would say
    more than the hint); only the person's moves, each with the hand and table they were made on, valued honestly."""
    view = call(server, "POST", "/api/games", {"variant": "scopa-a-quattro", "opponent": "greedy", "seed": 8})[1]
    url = f"/api/games/{view['id']}/review"
    for body, words in [({"hand": 1}, "not over"), ({"match": True}, "match is not over")]:
        status, answer = call(server, "POST", url, body)
        assert status == 409 and words in answer["error"], answer
    for body in [{}, {"hand": 0}, {"hand": "1"}, {"hand": 1, "match": True}, {"match": False}, {"seat": 1}]:
        status, answer = call(server, "POST", url, body)
        assert status == 400 and "error" in answer, (body, answer)
    view = play_out(server, view, hands=1)
    status, answer = call(server, "POST", url, {"hand": 2})
    assert status == 409 and "hand 2 is not over" in answer["error"], answer
    job = review_until_done(server, view["id"], {"hand": 1})
    record = server.registry.get(view["id"]).recorder.record
    assert record is not None
    mine = [m for m in record["hands"][0]["moves"] if m["seat"] == view["you"]]
    assert job["scope"] == "hand" and job["hand"] == 1 and job["done"] == job["total"] == len(mine) == 9
    review = job["review"]
    assert review["mode"] == "honest" and review["variant"] == "scopa-a-quattro"
    decisions = review["decisions"]
    assert [d["played"].split()[0] for d in decisions] == [m["card"] for m in mine]  # the person's 9 moves, no other
    for d in decisions:
        assert d["hand"] == 1 and d["played"].split()[0] in {c["code"] for c in d["position"]["hand"]}
        assert {m["move"] for m in d["moves"]} >= {d["played"], d["best"]} and d["loss"] >= 0
        held = {c["code"] for c in d["position"]["hand"]}
        assert held <= {m["card"] for m in mine} and not held & {c["code"] for c in d["position"]["table"]}
    assert review["summary"]["decisions"] <= 9 and set(review["summary"]["marks"]) == {
        "blunder",
        "mistake",
        "inaccuracy",
    }
    assert call(server, "POST", url, {"hand": 1})[1] == job  # asked again: the same review, not computed again


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"variant": "nope"}, 400, "unknown variant"),
        ({"variant": "classic", "opponent": "/etc/passwd"}, 400, "unknown bot"),
        ({"variant": "classic", "opponent": "agents/bots/classic"}, 400, "unknown bot"),
        ({"variant": "classic", "opponent": "pimc"}, 400, "unknown bot"),
        ({"variant": "classic", "partner": "greedy"}, 400, "no teams"),
        ({"variant": "scopa-a-quattro", "opponent": "bot-classic"}, 400, "cannot play"),
        ({"variant": "classic", "seat": 2}, 400, "seat"),
        ({"variant": "classic", "seed": -1}, 400, "seed"),
        ({"variant": "classic", "seed": "7"}, 400, "seed"),
        ({"variant": "classic", "color": "red"}, 400, "unknown field"),
        ([1, 2], 400, "JSON object"),
    ],
)
def test_bad_new_game_requests_are_refused(server: WebServer, body: Any, status: int, words: str) -> None:
    got, answer = call(server, "POST", "/api/games", body)
    assert got == status and words in answer["error"], answer


def test_bad_requests_are_refused_with_a_message(server: WebServer) -> None:
    view = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": 9})[1]
    gid = view["id"]
    not_mine = next(c for c in ["Ad", "2d", "3d", "4d", "5d", "Ac", "2c"] if c not in {x["code"] for x in view["hand"]})
    cases = [
        ("POST", f"/api/games/{gid}/move", {"card": not_mine, "capture": []}, 409, "don't hold"),
        ("POST", f"/api/games/{gid}/move", {"card": "zz", "capture": []}, 400, "card"),
        ("POST", f"/api/games/{gid}/move", {"card": 7, "capture": []}, 400, "card"),
        ("POST", f"/api/games/{gid}/move", {"card": "7d", "capture": "3s"}, 400, "capture"),
        ("POST", f"/api/games/{gid}/move", {"card": "7d", "capture": [], "x": 1}, 400, "unknown field"),
        ("POST", f"/api/games/{gid}/hint", {"x": 1}, 400, "unknown field"),
        ("POST", "/api/games/" + "A" * 32 + "/move", {"card": "7d"}, 404, "no such game"),
        ("GET", "/api/games/../../etc/passwd", None, 404, "no such page"),
        ("GET", "/static/server.py", None, 404, "no such page"),
        ("GET", "/static/../server.py", None, 404, "no such page"),
        ("PUT", "/api/games", {}, 405, "POST"),
        ("GET", f"/api/games/{gid}/move", None, 405, "POST"),
    ]
    for method, path, body, status, words in cases:
        got, answer = call(server, method, path, body)
        assert got == status and words in answer["error"], (method, path, body, answer)
    card, caps = next(iter(view["moves"].items()))
    wrong = [c for c in ["Ad", "Kb", "Qs"] if [c] not in caps][:1]
    got, answer = call(server, "POST", f"/api/games/{gid}/move", {"card": card, "capture": wrong})
    assert got == 409 and "legal captures" in answer["error"]
    got, answer = call(server, "POST", f"/api/games/{gid}/move", raw=b"{not json", ctype="application/json")
    assert got == 400 and "not valid JSON" in answer["error"]
    got, answer = call(server, "POST", f"/api/games/{gid}/move", raw=b'{"card": "7d"}', ctype="text/plain")
    assert got == 415
    got, answer = call(server, "POST", "/api/games", raw=b"{" + b" " * 10_000 + b"}")
    assert got == 413 and "too large" in answer["error"]
    assert call(server, "GET", f"/api/games/{gid}")[1]["hand"] == view["hand"]  # nothing above changed the game
    got, _ = call(server, "DELETE", f"/api/games/{gid}")
    assert got == 200 and call(server, "GET", f"/api/games/{gid}")[0] == 404


def test_page_files_are_served(server: WebServer) -> None:
    for path, words in [
        ("/", "<title>Scopa</title>"),
        ("/static/app.js", "/api/games"),
        ("/static/style.css", ".card"),
    ]:
        with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10) as resp:
            assert resp.status == 200 and words in resp.read().decode()
            assert "default-src 'self'" in resp.headers["Content-Security-Policy"]


def test_idle_games_expire_and_the_game_count_is_bounded() -> None:
    reg = GameRegistry(ServerConfig(bots={"random": "random"}, max_games=2, idle_minutes=1.0))
    a = reg.create({"variant": "classic"})
    reg.create({"variant": "classic"})
    with pytest.raises(Exception, match="already holds 2 games"):
        reg.create({"variant": "classic"})
    a.last_used -= 120.0
    assert reg.expire() == 1 and len(reg) == 1
    with pytest.raises(Exception, match="no such game"):
        reg.get(a.id)
    reg.create({"variant": "classic"})  # room again


def test_the_serving_loop_sweeps_idle_games(monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.play.web.server as web_server

    monkeypatch.setattr(web_server, "EXPIRE_EVERY_S", 0.0)
    srv = make_server(ServerConfig(bots={"random": "random"}, idle_minutes=1.0))
    try:
        game = srv.registry.create({"variant": "classic"})
        game.last_used -= 120.0
        srv.service_actions()  # what serve_forever calls between requests
        assert len(srv.registry) == 0
    finally:
        srv.server_close()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--bot", "nospec"], "NAME=SPEC"),
        (["--bot", "x=does/not/exist.zip"], "cannot play any variant"),
        (["--bot", "a=random", "--bot", "a=greedy"], "given twice"),
        (["--port", "70000"], "--port"),
        (["--max-games", "0"], "--max-games"),
        (["--idle-minutes", "0"], "--idle-minutes"),
        (["--seed", "-1"], "--seed"),
        (["--max-connections", "0"], "--max-connections: expected a whole number >= 1, got '0'"),
        (["--body-timeout", "0"], "--body-timeout: expected a finite number of seconds > 0, got '0'"),
        (["--body-timeout", "nan"], "--body-timeout: expected a finite number of seconds > 0, got 'nan'"),
        (["--header-timeout", "-1"], "--header-timeout: expected a finite number of seconds > 0, got '-1'"),
        (["--keep-alive", "inf"], "--keep-alive: expected a finite number of seconds > 0, got 'inf'"),
        (["--keep-alive", "x"], "--keep-alive: expected a finite number of seconds > 0, got 'x'"),
        (["--threads", "0"], "--threads: expected a whole number >= 1, got '0'"),
        (["--max-body", "10"], "--max-body: expected a whole number >= 64, got '10'"),
        (["--shutdown-timeout", "-1"], "--shutdown-timeout: expected a finite number of seconds >= 0, got '-1'"),
    ],
)
def test_command_line_errors(args: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    from agents.play.web.server import main

    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.strip().splitlines()[-1].startswith("scopa-web: error:") and words in err, err


def test_command_line_help_and_serving(capsys: pytest.CaptureFixture[str]) -> None:
    """The help (``main``, in this process) lists the options; ``python -m agents.play.web`` serves and stops."""
    from agents.play.web.server import main

    with pytest.raises(SystemExit) as e:
        main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "--bot NAME=SPEC" in out and "127.0.0.1" in out
    for option in ("--max-connections", "--header-timeout", "--body-timeout", "--keep-alive", "--shutdown-timeout"):
        assert option in out, option
    run = [sys.executable, "-m", "agents.play.web"]
    proc = subprocess.Popen(
        [*run, "--port", "0", "--bot", "r=random"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = ""
        deadline = time.monotonic() + 60
        while "open http://127.0.0.1:" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
        url = line.split("open ", 1)[1].split()[0]
        with urllib.request.urlopen(url + "api/info", timeout=10) as resp:
            assert [b["name"] for b in json.loads(resp.read())["bots"]] == ["r"]
        proc.terminate()  # SIGTERM: uvicorn's graceful shutdown, then the command stops as on Ctrl-C
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "stopped. ciao!" in stdout and "Traceback" not in stderr, (stdout, stderr)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


# --------------------------------------------------------------------------------------------------- cirulla


def knock_game(srv: WebServer, want: set[str], variant: str = "cirulla") -> dict[str, Any]:
    """A new game whose person has a knock to decide right away, with exactly the choices ``want``."""
    for seed in range(400):
        status, view = call(srv, "POST", "/api/games", {"variant": variant, "opponent": "greedy", "seed": seed})
        assert status == 201, view
        if set(view["knock_options"]) == want:
            return view
        call(srv, "DELETE", f"/api/games/{view['id']}")
    pytest.fail(f"no {variant} game in 400 seeds starts with the knock choices {want}")


def test_cirulla_knock_endpoint(server: WebServer) -> None:
    view = knock_game(server, {"none", "sum"})
    gid = view["id"]
    assert view["your_turn"] and view["phase"] == "knock" and view["moves"] == {}
    assert view["cirulla"] and view["target"] == 51 and view["point_fields"] == list(CIRULLA_POINT_FIELDS)
    assert_nothing_hidden(server, view)
    hand = [c["code"] for c in view["hand"]]
    # illegal: a knock the hand does not allow, a decision that is no decision, a move before deciding
    cases = [
        ({"knock": "tris"}, 409, "your choices: ['none', 'sum']"),
        ({"knock": "maybe"}, 400, "knock: give one of ['none', 'sum', 'tris']"),
        ({"knock": 1}, 400, "knock: give one of"),
        ({}, 400, "knock: give one of"),
        ({"knock": "sum", "card": "7d"}, 400, "unknown field"),
    ]
    for body, status, words in cases:
        got, answer = call(server, "POST", f"/api/games/{gid}/knock", body)
        assert got == status and words in answer["error"], (body, answer)
    got, answer = call(server, "POST", f"/api/games/{gid}/move", {"card": hand[0], "capture": []})
    assert got == 409 and "first decide whether to knock" in answer["error"], answer
    got, hint = call(server, "POST", f"/api/games/{gid}/hint", {})
    assert got == 200 and hint["knock"] in ("none", "sum") and hint["card"] is None, hint
    assert call(server, "GET", f"/api/games/{gid}")[1]["knock_options"] == ["none", "sum"]  # nothing changed
    # legal: the knock is made, logged with the cards it shows, and the person's seat shows them
    got, after = call(server, "POST", f"/api/games/{gid}/knock", {"knock": "sum"})
    assert got == 200, after
    mine = [e for e in after["events"] if e["type"] == "knock" and e["seat"] == 0]
    assert mine == [e for e in after["hand_log"] if e["type"] == "knock" and e["seat"] == 0]
    assert len(mine) == 1 and mine[0]["kind"] == "sum" and mine[0]["points"] == 3
    assert sorted(c["code"] for c in mine[0]["cards"]) == sorted(hand)
    assert sum(c["value"] for c in mine[0]["cards"]) <= 9 or "7c" in hand
    shown = {c["code"] for c in after["seats"][0]["revealed"]}
    assert shown <= set(hand) and shown == {c["code"] for c in after["hand"]}  # the cards not played yet
    assert after["sides"][0]["knocks"] == 3 and after["knock_options"] == [] and after["phase"] in ("play", "done")
    got, answer = call(server, "POST", f"/api/games/{gid}/knock", {"knock": "none"})
    assert got == 409 and "no knock to decide" in answer["error"], answer
    # a classic game has no knocks
    classic = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": 1})[1]
    assert classic["knock_options"] == [] and "knocks" not in classic["sides"][0] and not classic["cirulla"]
    got, answer = call(server, "POST", f"/api/games/{classic['id']}/knock", {"knock": "none"})
    assert got == 409 and "no knock to decide" in answer["error"], answer


def test_cirulla_declining_a_knock_shows_nothing(server: WebServer) -> None:
    view = knock_game(server, {"none", "sum"})
    got, after = call(server, "POST", f"/api/games/{view['id']}/knock", {"knock": "none"})
    assert got == 200, after
    assert [e["kind"] for e in after["events"] if e["type"] == "knock" and e["seat"] == 0] == ["none"]
    assert after["seats"][0]["revealed"] == [] and after["sides"][0]["knocks"] == 0


def test_cirulla_knocked_cards_of_other_seats_are_shown(server: WebServer) -> None:
    """A bot's knock shows its cards (face up in the view, in the log) until it plays them; the rest stays hidden."""
    for seed in range(200):
        view = call(server, "POST", "/api/games", {"variant": "cirulla", "opponent": "greedy", "seed": seed})[1]
        if view["seats"][1]["revealed"]:
            break
    else:
        pytest.fail("no bot knock at the start of 200 cirulla games")
    knocks = [e for e in view["events"] if e["type"] == "knock" and e["seat"] == 1]
    assert len(knocks) == 1 and knocks[0]["kind"] in ("sum", "tris") and len(knocks[0]["cards"]) == 3
    shown = {c["code"] for c in view["seats"][1]["revealed"]}
    assert shown <= {c["code"] for c in knocks[0]["cards"]} and len(shown) == view["seats"][1]["cards_in_hand"]
    assert not shown & hidden_codes(server, view["id"])
    assert_nothing_hidden(server, view)  # the other cards of that seat and the stock are not in the view
    assert view["sides"][1]["knocks"] == knocks[0]["points"]


def test_cirulla_initial_table_take_is_logged(server: WebServer) -> None:
    for seed in range(200):
        view = call(server, "POST", "/api/games", {"variant": "cirulla", "opponent": "greedy", "seed": seed})[1]
        takes = [e for e in view["events"] if e["type"] == "table_take"]
        if takes:
            break
    else:
        pytest.fail("no initial table taken in 200 cirulla games")
    take = takes[0]
    assert take["scope"] in (1, 2) and take["total"] == 15 * take["scope"] and len(take["cards"]) == 4
    assert view["hand_log"][0] == take and take["side"] == view["seats"][view["dealer"]]["side"]
    assert view["sides"][take["side"]]["scope"] >= take["scope"]


def test_cirulla_whole_match_through_the_game_api() -> None:
    """Whole matches of the three cirulla variants played through ``WebGame`` with random legal choices (knocks,
    every listed capture, captures strictly inside another one): every view hides what it must, every hand's points
    have cirulla's fields and add up to the scores, the match ends at 51."""
    reg = GameRegistry(ServerConfig(bots={"greedy": "greedy", "random": "random"}))
    seen = {"knock": 0, "no-knock": 0, "fifteen": 0, "inside": 0, "hands": 0}
    for variant, seed in (("cirulla", 83), ("cirulla-3", 5), ("cirulla-4", 6)):
        game = reg.create({"variant": variant, "opponent": "random", "seed": seed})
        rng = np.random.default_rng(seed)
        view = game.view()
        totals = [0] * len(view["sides"])
        for _ in range(2000):
            if view["done"]:
                break
            assert view["your_turn"] and view["point_fields"] == list(CIRULLA_POINT_FIELDS)
            legal = game.legal_moves()
            if view["knock_options"]:
                assert legal == [] and view["moves"] == {} and "none" in view["knock_options"]
                choice = str(rng.choice(view["knock_options"]))
                seen["knock" if choice != "none" else "no-knock"] += 1
                view = game.knock(choice)
            else:
                # the view lists exactly the core's legal moves
                listed = {(c, frozenset(cap)) for c, caps in view["moves"].items() for cap in caps}
                deck = game.rules.deck
                assert listed == {
                    (format_card(c, deck), frozenset(format_card(x, deck) for x in cap)) for c, cap in legal
                }
                inside = [
                    (c, a) for c, a in legal if a and any(k == c and a < b for k, b in legal)
                ]  # a capture strictly contained in another capture of the same card (the CHOOSE phase's stop)
                card, cap = inside[0] if inside and rng.random() < 0.5 else legal[int(rng.integers(len(legal)))]
                if (card, cap) in inside:
                    seen["inside"] += 1
                code = format_card(card, deck)
                codes = [format_card(c, deck) for c in sorted(cap)]
                kind = view["move_kinds"][code][[sorted(x) for x in view["moves"][code]].index(sorted(codes))]
                values = [int(deck.rank_values[c % deck.num_ranks]) for c in sorted(cap | {card})]
                if kind == "fifteen":  # the card and the cards it takes make 15
                    seen["fifteen"] += 1
                    assert sum(values) == 15, (code, codes)
                assert kind in ("lay", "equal", "sum", "fifteen", "ace-takes-all") and (kind == "lay") == (not cap)
                view = game.move(*_parse_move(game, {"card": code, "capture": codes}))
                mine = next(e for e in view["events"] if e["type"] == "move" and e["seat"] == game.human)
                assert mine["card"]["code"] == code and sorted(c["code"] for c in mine["capture"]) == sorted(codes)
                assert mine["kind"] == kind
            assert_nothing_hidden(game, view)
            for e in view["events"]:
                if e["type"] == "hand_over":
                    seen["hands"] += 1
                    for s, p in enumerate(e["points"]):
                        assert list(p) == list(CIRULLA_POINT_FIELDS)
                        assert p["total"] == sum(v for f, v in p.items() if f != "total")
                        totals[s] += p["total"]
                    assert e["scores"] == totals
        assert view["done"], f"{variant}: the match did not end"
        assert max(totals) >= 51 and [s["score"] for s in view["sides"]] == totals
        assert view["winner"] == int(np.argmax(totals)) and sorted(totals)[-1] > sorted(totals)[-2]
    assert all(v > 0 for v in seen.values()), seen


def test_load_50_concurrent_games(server: WebServer) -> None:
    """50 games at once, each a whole hand of classic against random, from 50 threads: no error, each game its own."""
    n = 50
    start = time.monotonic()

    def one(i: int) -> tuple[int, int]:
        status, view = call(
            server, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": 1000 + i}
        )
        assert status == 201, view
        moves = 0
        while not view["past_hands"]:
            assert time.monotonic() - start < 120, "load test over its time bound"
            card, caps = next(iter(view["moves"].items()))
            status, view = call(server, "POST", f"/api/games/{view['id']}/move", {"card": card, "capture": caps[0]})
            assert status == 200, view
            moves += 1
        return moves, view["past_hands"][0]["scores"][0]

    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(one, range(n)))
    assert len(results) == n and all(m == 18 for m, _ in results)  # 18 plays each (6 deals x 3 cards)
    # each game is isolated: the same seed played alone gives the same first-hand score
    solo = one(7)
    assert solo == results[7]


def test_the_docs_api_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "web.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/web.md[python]", "exec"), {"__name__": "__docs__"})
    out = capsys.readouterr().out
    assert "you won" in out or "greedy won" in out
    assert max(int(x) for x in re.findall(r"\d+", out.split("[", 1)[1])) >= 11


def test_a_shipped_bot_is_offered_for_the_variants_its_card_serves() -> None:
    """classic's card serves classic-15 and classic-21 (the same rules during a hand): the page offers bot-classic
    there, as the default opponent, and a whole hand against it plays (through its ``any_variant`` spec)."""
    reg = GameRegistry(ServerConfig(bots={"bot-classic": default_bots()["bot-classic"], "random": "random"}))
    for variant in ("classic", "classic-15", "classic-21"):
        assert reg.bots_for(variant) == ["bot-classic", "random"] and reg.default_bot(variant) == "bot-classic"
    assert reg.bots_for("scopa-d-assi") == ["random"]  # the classic bot serves no other rules
    game = reg.create({"variant": "classic-21", "opponent": "bot-classic", "seed": 4})
    view = game.view()
    assert view["target"] == 21
    for _ in range(40):  # the human plays its first legal move each turn; the bot answers
        if view["hand_no"] > 1 or view["done"]:
            break
        view = game.move(*game.legal_moves()[0])
    assert view["hand_no"] == 2 or view["done"]


# --------------------------------------------------------------------------------------------------- limits


def port_of(srv: WebServer) -> int:
    return int(srv.url.rstrip("/").rsplit(":", 1)[1])


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a socket timeout fails the test)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_json_depth_is_counted_without_recursion() -> None:
    assert not json_depth_exceeds(b'{"card": "7d", "capture": ["3s", "4c"]}', 2)
    assert json_depth_exceeds(b'{"capture": [[]]}', 2)
    assert not json_depth_exceeds(b'{"card": "[[[[[[{{{{{{\\\\\\" [[["}', 1)  # brackets in strings do not count
    assert json_depth_exceeds(b"[" * 100_000, MAX_JSON_DEPTH)  # a loop, not a recursion
    assert not json_depth_exceeds(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, MAX_JSON_DEPTH)


def test_a_deeply_nested_body_is_refused_with_400_not_500(server: WebServer) -> None:
    """Under 4,096 bytes, but nested 4,000 deep: json.loads would raise RecursionError (a 500 before)."""
    for raw in (b'{"variant":' + b"[" * 4000, b'{"variant":' + b"[" * 2000 + b"]" * 2000 + b"}"):
        got, answer = call(server, "POST", "/api/games", raw=raw)
        assert got == 400 and f"more than {MAX_JSON_DEPTH} deep" in answer["error"], answer
    view = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": 3})[1]
    got, answer = call(server, "POST", f"/api/games/{view['id']}/move", raw=b'{"card": ' + b"{" * 3000)
    assert got == 400 and "deep" in answer["error"], answer
    assert call(server, "GET", f"/api/games/{view['id']}")[1]["hand"] == view["hand"]


def test_a_slow_body_is_cut_off_with_408_and_holds_no_thread() -> None:
    """Slow clients announce a 100-byte body and send one byte: each is answered 408 and closed after the body
    deadline, and while they wait the server answers others (a slow client holds a connection, never a thread)."""
    with serving(ServerConfig(bots={"random": "random"}, body_timeout_s=1.0, threads=1)) as srv:
        head = b"POST /api/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        slow = [socket.create_connection(("127.0.0.1", port_of(srv)), timeout=60) for _ in range(30)]
        try:
            for sock in slow:
                sock.sendall(head)
            status, info = call(srv, "GET", "/api/info")  # threads=1: a slow body held no thread
            assert status == 200 and info["bots"], info
            for sock in slow:
                answer = read_all(sock)  # the server closes the connection after its answer
                assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
                error = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
                assert "did not arrive within 1 s" in error and "--body-timeout" in error
        finally:
            for sock in slow:
                sock.close()
        assert len(srv.registry) == 0  # no game was made from a half body


def test_slow_or_missing_headers_are_cut_off() -> None:
    with serving(ServerConfig(bots={"random": "random"}, header_timeout_s=1.0)) as srv:
        with socket.create_connection(("127.0.0.1", port_of(srv)), timeout=60) as partial:
            partial.sendall(b"GET /api/info HTTP/1.1\r\nHost: x\r\n")  # the headers never end
            answer = read_all(partial)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"--header-timeout" in answer, answer
        with socket.create_connection(("127.0.0.1", port_of(srv)), timeout=60) as silent:
            assert read_all(silent) == b""  # nothing sent: closed without an answer
        assert call(srv, "GET", "/api/info")[0] == 200  # a whole request on time is served


def raw_exchange(srv: WebServer, data: bytes, piece: int | None = None) -> bytes:
    """Send ``data`` on a new connection, at once or in pieces of ``piece`` bytes (each its own TCP segment), and
    read until the server closes it. The server may close before the rest is sent (a refused head): the send
    stops there and the answer already sent is read."""
    with socket.create_connection(("127.0.0.1", port_of(srv)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for start in range(0, len(data), piece or len(data)):
                sock.sendall(data[start : start + (piece or len(data))])
                if piece:
                    time.sleep(0.002)
        except OSError:  # closed by the server after its answer
            pass
        return read_all(sock)


def _head(line: bytes = b"GET /api/info HTTP/1.1", headers: Sequence[bytes] = ()) -> bytes:
    return b"\r\n".join([line, b"Host: x", *headers]) + b"\r\n\r\n"


HEADS_OVER_THE_LIMITS = {
    "a 70 KB request line": (_head(b"GET /" + b"a" * 70_000 + b" HTTP/1.1"), 414, b"request line is longer"),
    "a request line of 8193 bytes": (
        _head(b"GET /" + b"a" * (MAX_REQUEST_LINE - 13) + b" HTTP/1.1"),
        414,
        b"request line is longer",
    ),
    "a 17 KB header": (_head(headers=[b"X-A: " + b"b" * 17_000]), 431, b"a header is longer"),
    "a 64 KB header": (_head(headers=[b"Cookie: " + b"b" * 64_000]), 431, b"a header is longer"),
    "a folded header of 9 KB": (_head(headers=[b"X-A: b", *[b" " + b"c" * 999] * 9]), 431, b"a header is longer"),
    "5,000 headers": (_head(headers=[b"X-%d: b" % i for i in range(5000)]), 431, b"more than 100 headers"),
    "101 headers": (_head(headers=[b"X-%d: b" % i for i in range(100)]), 431, b"more than 100 headers"),
    "three 6 KB headers": (_head(headers=[b"X-%d: " % i + b"c" * 6000 for i in range(3)]), 431, b"together"),
}


@pytest.mark.parametrize("piece", [None, 1000], ids=["at once", "in pieces"])
@pytest.mark.parametrize("case", list(HEADS_OVER_THE_LIMITS))
def test_request_heads_over_the_limits_are_refused(server: WebServer, case: str, piece: int | None) -> None:
    """docs/web.md's limits on a request's line (414) and headers (431), whether the head arrives in one read or
    in pieces (h11's own limit sees only a head still incomplete: one read of 64 KB was parsed whole and served)."""
    data, status, words = HEADS_OVER_THE_LIMITS[case]
    answer = raw_exchange(server, data, piece)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:300]
    assert words in answer and b"connection: close" in answer, answer[:300]


@pytest.mark.parametrize("piece", [None, 1000], ids=["at once", "in pieces"])
def test_request_heads_at_the_limits_are_served(server: WebServer, piece: int | None) -> None:
    longest_line = _head(b"GET /api/info?" + b"a" * (MAX_REQUEST_LINE - 23) + b" HTTP/1.1", [b"Connection: close"])
    assert longest_line.index(b"\r\n") == MAX_REQUEST_LINE
    answer = raw_exchange(server, longest_line, piece)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    most = [b"Connection: close", *[b"X-%d: " % i + b"c" * 100 for i in range(MAX_HEADERS - 2)]]
    answer = raw_exchange(server, _head(headers=most), piece)  # 100 headers, 11 KB together
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    answer = raw_exchange(server, _head(headers=[b"Connection: close", b"X-A: " + b"b" * (MAX_HEADER_LINE - 5)]))
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]


def test_a_pipelined_head_over_the_limits_is_refused(server: WebServer) -> None:
    """A request that waits in the buffer behind another is checked too, when its turn comes."""
    answer = raw_exchange(server, _head() + _head(headers=[b"X-A: " + b"b" * 17_000]))
    first, second = answer.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200 ") and second.startswith(b"431 "), answer[:300]


def test_request_head_problem_reads_only_about_the_limits() -> None:
    assert request_head_problem(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"X" * 10**6) is None  # a body is not read
    assert request_head_problem(b"GET /" + b"a" * 100) is None  # still arriving, within the limits
    assert request_head_problem(b"GET /" + b"a" * 10**7)[0] == 414  # type: ignore[index]
    assert request_head_problem(b"GET / HTTP/1.1\nX: " + b"b" * 10**7)[0] == 431  # type: ignore[index]
    started = time.perf_counter()
    for _ in range(200):
        request_head_problem(b"GET / HTTP/1.1\r\nX: " + b"b" * 5000 + b"\r\n" + b"b" * 10**6)
    assert time.perf_counter() - started < 1.0


def hold_connection(srv: WebServer) -> socket.socket:
    """A keep-alive connection that made one request (so the server has surely accepted it) and stays open."""
    conn = http.client.HTTPConnection("127.0.0.1", port_of(srv), timeout=60)
    conn.request("GET", "/api/info")
    answer = conn.getresponse()
    assert answer.status == 200 and answer.getheader("Connection") != "close"
    answer.read()
    assert conn.sock is not None
    return conn.sock


def test_the_connection_cap_answers_503() -> None:
    config = ServerConfig(bots={"random": "random"}, max_connections=3, keep_alive_s=60.0, header_timeout_s=60.0)
    with serving(config) as srv:
        held = [hold_connection(srv) for _ in range(2)]
        assert call(srv, "GET", "/api/info")[0] == 200  # the third connection is within the cap
        held.append(hold_connection(srv))
        status, answer = call(srv, "GET", "/api/info")  # a fourth: refused, the three held ones stay
        assert status == 503 and "Service Unavailable" in str(answer), answer
        held.pop().close()
        for _ in range(100):  # the server notices the close on its loop; then there is room again
            status, _ = call(srv, "GET", "/api/info")
            if status == 200:
                break
            time.sleep(0.05)
        assert status == 200
        for sock in held:
            sock.close()


def test_graceful_shutdown_closes_idle_connections_and_stops() -> None:
    config = ServerConfig(bots={"random": "random"}, keep_alive_s=60.0, header_timeout_s=60.0)
    srv = make_server(config)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    idle = hold_connection(srv)
    status, view = call(srv, "POST", "/api/games", {"variant": "classic", "seed": 1})
    assert status == 201, view
    srv.shutdown()  # returns once serving has stopped
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert read_all(idle) == b""  # the idle keep-alive connection was closed, not left hanging
    idle.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port_of(srv)), timeout=5).close()
    srv.server_close()
    assert len(srv.registry) == 1  # the game made before is whole in memory (nothing half written)


def test_without_the_web_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import agents.play.web.server as web_server

    monkeypatch.setattr(web_server, "WEB_MISSING", "uvicorn")
    with pytest.raises(SystemExit) as e:
        web_server.main(["--port", "0", "--bot", "r=random"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "pip install 'scopa[web]'" in err and "'uvicorn' is not installed" in err, err
    with pytest.raises(ImportError, match=r"pip install 'scopa\[web\]'"):
        make_server(ServerConfig(bots={"random": "random"}))


def test_answers_are_not_held_back_by_nagle() -> None:
    """Every accepted connection has TCP_NODELAY: uvicorn writes an answer's headers and body apart, and with Nagle's
    algorithm on the body waits for the client's delayed ACK (about 40 ms a request). asyncio sets it only on
    sockets made as IPPROTO_TCP, which ``socket.create_server``'s are not."""
    with serving(ServerConfig(bots={"random": "random"}, keep_alive_s=60.0)) as srv:
        held = hold_connection(srv)
        connections = list(srv._server.server_state.connections)
        assert connections
        for protocol in connections:
            sock = protocol.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        held.close()


def test_the_open_file_limit_is_raised_or_a_warning_says_how() -> None:
    import resource

    from agents.play.web.server import _raise_file_limit

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert _raise_file_limit(1) is None  # already room for one connection
    warning = _raise_file_limit(10**9)  # more than any hard limit allows
    assert warning is not None and "ulimit -n" in warning and "--max-connections" in warning, warning
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= soft  # raised as far as allowed, never lowered


def test_more_signals_during_the_shutdown_still_exit_0() -> None:
    """SIGTERM, then SIGINT and SIGTERM again while the command stops (its last game step, made slow here, still
    running): it finishes its shutdown and exits 0 (these signals were a KeyboardInterrupt traceback, status 130
    or 143)."""
    slow_end = (
        "import sys, time; import agents.play.web.api as a, agents.play.web.server as s; close = a._Api.close; "
        "a._Api.close = lambda self: (time.sleep(2.5), close(self))[1]; sys.exit(s.main(sys.argv[1:]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", slow_end, "--port", "0", "--bot", "r=random"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        assert lines[0].startswith("bot r: random (plays ") and lines[0].rstrip().endswith(" variants)"), lines
        assert "open http://127.0.0.1:" in lines[1], lines
        proc.send_signal(signal.SIGTERM)
        for sig in (signal.SIGINT, signal.SIGTERM):
            time.sleep(0.6)
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "stopped. ciao!" in stdout, (proc.returncode, stdout, stderr)
        assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_plural() -> None:
    assert (plural(1, "variant"), plural(17, "variant"), plural(0, "bot")) == ("1 variant", "17 variants", "0 bots")


@pytest.mark.parametrize("shutdown_timeout", [10.0, 0.0])
def test_a_shutdown_during_a_move_leaves_the_game_whole(
    monkeypatch: pytest.MonkeyPatch, shutdown_timeout: float
) -> None:
    """A shutdown while a move runs: with time to finish, the player gets the answer; with none, the request is
    cancelled but the move, already running in its thread, still finishes whole (never half applied) before
    ``serve_forever`` returns."""
    config = ServerConfig(bots={"random": "random"}, shutdown_timeout_s=shutdown_timeout)
    srv = make_server(config)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    status, view = call(srv, "POST", "/api/games", {"variant": "classic", "opponent": "random", "seed": 5})
    assert status == 201, view
    game = srv.registry.get(view["id"])
    started, real_move = threading.Event(), game.move

    def slow_move(card: int, capture: frozenset[int]) -> dict[str, Any]:
        started.set()
        time.sleep(1.0)  # the shutdown comes while this move runs
        return real_move(card, capture)

    monkeypatch.setattr(game, "move", slow_move)
    card, caps = next(iter(view["moves"].items()))
    answers: list[Any] = []
    mover = threading.Thread(
        target=lambda: (
            answers.append(call(srv, "POST", f"/api/games/{view['id']}/move", {"card": card, "capture": caps[0]}))
            if True
            else None
        )
    )
    mover.start()
    assert started.wait(30)
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=30)
    assert not thread.is_alive()
    after = game.view()  # the move was applied whole: the card left the hand, the lock is free
    assert card not in {c["code"] for c in after["hand"]}
    assert any(e["type"] == "move" and e["seat"] == 0 and e["card"]["code"] == card for e in after["hand_log"])
    assert game.lock.acquire(blocking=False)
    game.lock.release()
    mover.join(timeout=30)
    if shutdown_timeout > 0:
        assert answers and answers[0][0] == 200, answers
