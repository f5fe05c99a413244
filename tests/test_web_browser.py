"""The browser game in a real browser: headless Chromium (the system's package, nothing downloaded) driven by
Playwright plays a whole classic match by clicking cards and capture choices, reads the hand summaries and the
score, takes a rematch, starts a team game with a bot partner, and plays a hand of cirulla with a knock decided by
clicking (the knocked cards shown, the hand summary's cirulla points).

Needs ``pip install playwright`` (the ``web`` extra; never ``playwright install``) and ``chromium`` on the PATH
(``apt-get install chromium``); skipped cleanly without either. ``SCOPA_WEB_SCREENSHOT=docs/img/web.png`` also
saves the README's screenshot.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on the PATH (apt-get install chromium)", allow_module_level=True)

from agents.web.server import ServerConfig, WebServer, make_server  # noqa: E402

SEED = 20
CIRULLA_SEED = 83
"""A cirulla deal (against greedy) where the dealer's side takes the table as dealt, the bot knocks, and the person
may knock by sum or with three of a kind."""


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    bots = {"random": "random", "greedy": "greedy", "expert": "expert"}
    srv = make_server(ServerConfig(bots=bots, seed=SEED))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def cirulla_server() -> Iterator[WebServer]:
    srv = make_server(ServerConfig(bots={"greedy": "greedy"}, seed=CIRULLA_SEED))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def page(browser: Any, server: WebServer) -> Iterator[Any]:
    yield from open_page(browser, server)


@pytest.fixture
def cirulla_page(browser: Any, cirulla_server: WebServer) -> Iterator[Any]:
    yield from open_page(browser, cirulla_server)


def open_page(browser: Any, server: WebServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1300, "height": 860})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    pg.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    pg.goto(server.url)
    pg.wait_for_selector("#variant option[value=classic]", state="attached")
    yield pg
    context.close()
    assert errors == [], errors


def updates(page: Any) -> int:
    return int(page.evaluate("Number(document.body.dataset.updates || 0)"))


def wait_until(page: Any, expression: str, timeout_s: float = 15.0) -> None:
    """Poll a JavaScript expression until it is true (``wait_for_function`` compiles its predicate with eval,
    which the page's Content-Security-Policy forbids; ``evaluate`` is not subject to it)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {expression}")
        page.wait_for_timeout(10)


def click_and_wait(page: Any, locator: Any) -> None:
    """Click, then wait until the page has drawn the server's answer."""
    before = updates(page)
    locator.click()
    wait_until(page, f"Number(document.body.dataset.updates || 0) > {before}")


def start(page: Any, variant: str, opponent: str, partner: str | None = None) -> None:
    page.select_option("#variant", variant)
    page.select_option("#opponent", opponent)
    if partner is not None:
        assert page.is_visible("#partner-label")
        page.select_option("#partner", partner)
    else:
        assert not page.is_visible("#partner-label")
    click_and_wait(page, page.locator("#new-game"))
    page.wait_for_selector("#hand .card")


def play_match(page: Any, max_clicks: int = 400) -> dict[str, int]:
    """Click through a whole match; returns what was seen (plays, capture choices, hand summaries)."""
    seen = {"plays": 0, "choices": 0, "hands": 0}
    for _ in range(max_clicks):
        if page.is_visible("#overlay"):
            if page.is_visible("#rematch"):
                return seen
            assert page.locator("#summary-title").inner_text().startswith("Hand ")
            assert page.locator("#summary-body table tr").count() == 3  # header + two sides
            seen["hands"] += 1
            page.click("#next-hand")
            continue
        # prefer a card with several captures, to go through the chooser
        multi = page.evaluate("Object.entries(state.game.moves).filter(([c, caps]) => caps.length > 1).map(([c]) => c)")
        card = page.locator(f'#hand .card[data-card="{multi[0]}"]') if multi else page.locator("#hand .card.playable")
        if multi:
            card.click()
            page.wait_for_selector("#chooser", state="visible")
            options = page.locator("#capture-options .capture-option")
            assert options.count() == len(page.evaluate(f"state.game.moves['{multi[0]}']")) >= 2
            seen["choices"] += 1
            click_and_wait(page, options.last)
        else:
            click_and_wait(page, card.first)
        seen["plays"] += 1
    pytest.fail(f"the match did not end in {max_clicks} clicks: {seen}")


def test_full_classic_match_by_clicking_then_rematch(page: Any) -> None:
    start(page, "classic", "random")
    # the cards are drawn with readable ranks and suits
    first = page.locator("#hand .card").first
    assert first.get_attribute("data-card") and " of " in (first.get_attribute("title") or "")
    assert page.locator("#hand .card svg.pip").count() == page.locator("#hand .card").count() > 0
    # a hint points at a card of the hand
    page.click("#hint-button")
    wait_until(page, "document.getElementById('hint').textContent.includes('suggests')")
    assert page.locator("#hand .card.hinted").count() == 1
    seen = play_match(page)
    assert seen["hands"] >= 1 and seen["plays"] >= 18 and seen["choices"] >= 1, seen
    title = page.locator("#summary-title").inner_text()
    assert "wins the match" in title or "You win" in title
    final = page.locator(".final-scores").inner_text()
    assert final.startswith("Final scores: you ")
    scores = [int(x) for x in page.locator("#scores td.score").all_inner_texts()]
    assert len(scores) == 2 and max(scores) >= 11
    click_and_wait(page, page.locator("#rematch"))
    assert not page.is_visible("#overlay")
    assert [int(x) for x in page.locator("#scores td.score").all_inner_texts()] == [0, 0]
    assert page.locator("#hand .card").count() == 3
    click_and_wait(page, page.locator("#hand .card.playable").first)  # the rematch plays
    assert page.locator("#log li").count() >= 1


def test_team_game_with_a_bot_partner(page: Any, tmp_path: Any) -> None:
    start(page, "scopa-a-quattro", "greedy", partner="expert")
    labels = page.locator("#others .seat").all_inner_texts()
    assert len(labels) == 3 and any("partner (expert)" in x for x in labels)
    assert sum("opponent (greedy)" in x for x in labels) == 2
    for _ in range(4):
        click_and_wait(page, page.locator("#hand .card.playable").first)
    assert page.locator("#log li").count() >= 4 * 4 - 3  # my moves and the three bots' in between
    page.select_option("#faces", "french")
    assert page.locator("#hand .card svg text").count() >= 1  # French suit glyphs
    page.select_option("#faces", "italian")
    page.click("#hint-button")
    wait_until(page, "document.getElementById('hint').textContent.includes('suggests')")
    out = os.environ.get("SCOPA_WEB_SCREENSHOT") or str(tmp_path / "web.png")
    page.screenshot(path=out)
    assert os.path.getsize(out) > 10_000


def test_cirulla_knock_by_clicking_and_a_whole_hand(cirulla_page: Any) -> None:
    page = cirulla_page
    start(page, "cirulla", "greedy")
    # the dealer's side took the table as dealt and the bot knocked: both in the log, the bot's cards face up
    assert page.locator("#log li.table-take").count() == 1
    assert page.locator("#log li.knock").count() == 1 and ": knock " in page.locator("#log li.knock").inner_text()
    assert "taken by" in page.locator("#log li.table-take").inner_text()
    shown = page.evaluate("state.game.seats[1].revealed.map((c) => c.code)")
    assert len(shown) == 3
    assert page.locator("#others .seat .card.revealed").evaluate_all("cs => cs.map((c) => c.dataset.card)") == shown
    # the person's knock decision: only the legal choices, and no card can be played before it
    assert page.is_visible("#knock") and "knock or not" in page.locator("#turn-info").inner_text()
    choices = page.locator("#knock-options button").evaluate_all("bs => bs.map((b) => b.dataset.knock)")
    assert choices == page.evaluate("state.game.knock_options") == ["none", "sum", "tris"]
    assert page.locator("#hand .card.playable").count() == 0
    page.locator("#hand .card").first.click()
    wait_until(page, "document.getElementById('message').textContent.includes('decide whether to knock')")
    page.click("#hint-button")
    wait_until(page, "document.getElementById('hint').textContent.includes('suggests')")
    assert page.locator("#knock-options button.hinted").count() == 1
    hand = page.locator("#hand .card").evaluate_all("cs => cs.map((c) => c.dataset.card)")
    click_and_wait(page, page.locator('#knock-options button[data-knock="tris"]'))
    assert not page.is_visible("#knock")
    assert page.locator("#log li.knock").count() == 2 and "you: knock with three of a kind (+10)" in page.inner_text(
        "#log"
    )
    # my knocked cards are marked in my hand, and counted in the score table
    revealed = page.locator("#hand .card.revealed").evaluate_all("cs => cs.map((c) => c.dataset.card)")
    assert revealed == hand
    assert page.locator("#scores th").all_inner_texts()[-1] == "kn."
    assert page.locator("#scores tr.mine td").last.inner_text() == "10"
    # play the rest of the hand by clicking (any further knock declined), through the chooser when it opens
    clicks = 0
    while not page.is_visible("#overlay"):
        clicks += 1
        assert clicks < 60, "the hand did not end"
        if page.is_visible("#knock"):
            click_and_wait(page, page.locator('#knock-options button[data-knock="none"]'))
            continue
        multi = page.evaluate("Object.entries(state.game.moves).filter(([c, caps]) => caps.length > 1).map(([c]) => c)")
        if multi:
            page.locator(f'#hand .card[data-card="{multi[0]}"]').click()
            page.wait_for_selector("#chooser", state="visible")
            options = page.locator("#capture-options .capture-option")
            kinds = page.evaluate(f"state.game.move_kinds['{multi[0]}']")
            assert options.count() == len(page.evaluate(f"state.game.moves['{multi[0]}']")) == len(kinds) >= 2
            labels = page.locator("#capture-options .capture-kind").all_inner_texts()
            assert len(labels) == len(kinds) and (("fifteen" in labels) == ("fifteen" in kinds))
            click_and_wait(page, options.first)
        else:
            click_and_wait(page, page.locator("#hand .card.playable").first)
    # the hand's summary has cirulla's point fields
    assert page.locator("#summary-title").inner_text() == "Hand 1 points"
    header = page.locator("#summary-body table tr").first.locator("th").all_inner_texts()
    fields = ["carte", "denari", "settebello", "primiera", "scope", "napoli", "grande", "knocks", "total"]
    assert header == ["", *fields, "score"]
    rows = page.locator("#summary-body table tr")
    assert rows.count() == 3
    my_knocks = rows.nth(1).locator("td").nth(8).inner_text()
    assert int(my_knocks) >= 10
    page.click("#next-hand")
    assert not page.is_visible("#overlay")
    assert page.locator("#past li").count() == 1
