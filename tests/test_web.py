"""The browser game's server (agents/web): the JSON API, its checks, hidden information, expiry, the command line,
and a load test of 50 concurrent games. The page itself is driven in a real browser in test_web_browser.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.web.server import GameRegistry, ServerConfig, WebServer, default_bots, make_server
from scopa_env.cards import format_card

BOTS = {"bot-classic": default_bots()["bot-classic"], "expert": "expert", "greedy": "greedy", "random": "random"}


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    srv = make_server(ServerConfig(bots=BOTS, max_games=500))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


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


def hidden_codes(srv: WebServer, game_id: str) -> set[str]:
    """Notation of every card the person may not see: the other hands and the stock."""
    game = srv.registry.get(game_id)
    rules, st = game.rules, game.state
    hidden = set()
    for seat in range(rules.num_players):
        if seat != game.human:
            hidden |= {format_card(int(c), rules.deck) for c in np.flatnonzero(st.hands[0, seat])}
    hidden |= {format_card(int(c), rules.deck) for c in st.deck[0, int(st.stock_pos[0]) :]}
    return hidden


def assert_nothing_hidden(srv: WebServer, view: dict[str, Any]) -> None:
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


@pytest.mark.parametrize("variant", ["scopa-d-assi", "scopone-scientifico", "simple-3", "simple-6-teams", "simple-8"])
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
    view = call(server, "POST", "/api/games", {"variant": "classic", "seed": 2})[1]  # default: the shipped bot
    status, hint = call(server, "POST", f"/api/games/{view['id']}/hint", {})
    assert status == 200 and hint["bot"] == "bot-classic"
    assert hint["card"]["code"] in view["moves"]
    assert hint["options"] and abs(sum(o["prob"] for o in hint["options"]) - 1) < 1e-3
    view = call(server, "POST", "/api/games", {"variant": "classic", "opponent": "expert", "seed": 2})[1]
    status, hint = call(server, "POST", f"/api/games/{view['id']}/hint", {})
    assert status == 200 and hint["options"] == [] and hint["card"]["code"] in view["moves"]
    assert [c["code"] for c in hint["capture"]] in view["moves"][hint["card"]["code"]]


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
    import agents.web.server as web_server

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
    ],
)
def test_command_line_errors(args: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    from agents.web.server import main

    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.strip().splitlines()[-1].startswith("scopa-web: error:") and words in err, err


def test_command_line_help_and_serving() -> None:
    run = [sys.executable, "-m", "agents.web"]
    out = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--bot NAME=SPEC" in out.stdout and "127.0.0.1" in out.stdout
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
    finally:
        proc.terminate()
        proc.wait(timeout=10)


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
