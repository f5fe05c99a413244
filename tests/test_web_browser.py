"""The browser game in a real browser: headless Chromium (the system's package, nothing downloaded) driven by
Playwright plays a whole classic match by clicking cards and capture choices, reads the hand summaries and the
score, takes a rematch, starts a team game with a bot partner, and plays a hand of cirulla with a knock decided by
clicking (the knocked cards shown, the hand summary's cirulla points). At a phone's sizes (360x740, 420x860) and a
desktop's (1280x800): no console error, no sideways overflow, the board laid out as a board, the newest move of the
log in view, screenshots that are PNGs of the window's size; the bots' moves drawn on the table one by one; the
English/Italian switch (remembered) changing every text, the score table's and the cards' names included; one name
per seat in the seat boxes, the score table, the log and the summaries.

Needs ``pip install playwright`` (the ``web`` extra; never ``playwright install``) and ``chromium`` on the PATH
(``apt-get install chromium``); skipped cleanly without either. ``SCOPA_WEB_SCREENSHOTS=docs/img`` also saves the
docs' screenshots there (``web_desktop.png``, ``web_phone.png``).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on the PATH (apt-get install chromium)", allow_module_level=True)

from agents.play.web.registry import ServerConfig  # noqa: E402
from agents.play.web.server import WebServer, make_server  # noqa: E402

SEED = 20
CIRULLA_SEED = 83
"""A cirulla deal (against greedy) where the dealer's side takes the table as dealt, the bot knocks, and the person
may knock by sum or with three of a kind."""
DESKTOP = {"width": 1280, "height": 800}
FIRST_SCREENS = [{"width": 360, "height": 740}, {"width": 1366, "height": 768}]
"""The sizes where the whole board (the other seats, the table, the whole hand, Hint) is in the first screen."""
PHONES = [{"width": 360, "height": 740}, {"width": 420, "height": 860}]
MOVE_MS = 1000
"""How long the page draws each bot move in the test that watches it (the others turn the drawing off: ``?anim=0``)."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ANSWER_S = 60.0
"""How long a test waits for the page to draw an answer: usually well under a second, but the first end of a hand in
a process may compile kernels, slow on a loaded machine."""


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    yield from serve({"random": "random", "greedy": "greedy"}, SEED)


@pytest.fixture(scope="module")
def every_variant_server() -> Iterator[WebServer]:
    """greedy for every variant, and greedy again under the name of scopone's shipped bot: the page names a bot by its
    name on the server's list ("Bot" for the variant's own; test_web.py checks it with classic's real one), and
    greedy is quick to load for every variant."""
    yield from serve({"greedy": "greedy", "bot-scopone-scientifico": "greedy"}, SEED)


@pytest.fixture(scope="module")
def cirulla_server() -> Iterator[WebServer]:
    yield from serve({"greedy": "greedy"}, CIRULLA_SEED)


def serve(bots: dict[str, str], seed: int) -> Iterator[WebServer]:
    srv = make_server(ServerConfig(bots=bots, seed=seed))
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


@pytest.fixture
def page(browser: Any, server: WebServer) -> Iterator[Any]:
    yield from open_page(browser, server)


PageAt = Callable[..., Any]
"""``page_at(viewport, move_ms=0)``: a fresh page on the classic server (closed and checked after the test)."""


@pytest.fixture
def page_at(browser: Any, server: WebServer) -> Iterator[PageAt]:
    opened: list[Iterator[Any]] = []

    def at(viewport: dict[str, int], move_ms: int = 0) -> Any:
        pages = open_page(browser, server, viewport, move_ms)
        opened.append(pages)
        return next(pages)

    yield at
    for pages in opened:
        next(pages, None)  # closes the page and checks its console


@pytest.fixture
def cirulla_page(browser: Any, cirulla_server: WebServer) -> Iterator[Any]:
    yield from open_page(browser, cirulla_server)


def open_page(
    browser: Any, server: WebServer, viewport: dict[str, int] | None = None, move_ms: int = 0
) -> Iterator[Any]:
    """A fresh page (its own storage) in English at ``viewport``, drawing each move for ``move_ms``; fails the test
    on any console error or uncaught exception."""
    context = browser.new_context(viewport=viewport or {"width": 1300, "height": 860}, locale="en-US")
    pg = context.new_page()
    pg.set_default_timeout(ANSWER_S * 1000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    pg.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    pg.goto(f"{server.url}?anim={move_ms}")
    pg.wait_for_selector("#variant option[value=classic]", state="attached")
    yield pg
    context.close()
    assert errors == [], errors


def updates(page: Any) -> int:
    return int(page.evaluate("Number(document.body.dataset.updates || 0)"))


def wait_until(page: Any, expression: str, timeout_s: float = ANSWER_S) -> None:
    """Poll a JavaScript expression until it is true (``wait_for_function`` compiles its predicate with eval,
    which the page's Content-Security-Policy forbids; ``evaluate`` is not subject to it)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            message = page.evaluate("document.getElementById('message').textContent")
            pytest.fail(f"timed out waiting for {expression} (the page says: {message!r})")
        page.wait_for_timeout(10)


def click_and_wait(page: Any, locator: Any) -> None:
    """Click, then wait until the page has drawn the server's answer (after drawing the moves in it)."""
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


def play_any(page: Any) -> None:
    """Play the first playable card of the hand (its first capture when the chooser opens); wait for the answer."""
    before = updates(page)
    page.locator("#hand .card.playable").first.click()
    if page.is_visible("#chooser"):
        page.locator("#capture-options .capture-option").first.click()
    wait_until(page, f"Number(document.body.dataset.updates || 0) > {before}")


def assert_hand_begins(page: Any) -> None:
    """After a hand's summary, the status line is about the new hand (not the last move of the one before)."""
    if page.is_visible("#overlay"):
        return
    hand_no = page.evaluate("state.game.hand_no")
    message = page.locator("#message").inner_text()
    assert message.startswith(f"Hand {hand_no} begins."), message


def play_match(page: Any, max_clicks: int = 400) -> dict[str, int]:
    """Click through a whole match; returns what was seen (plays, capture choices, hand summaries)."""
    seen = {"plays": 0, "choices": 0, "hands": 0}
    for _ in range(max_clicks):
        if page.is_visible("#overlay"):
            if page.is_visible("#rematch"):
                return seen
            assert page.locator("#summary-title").inner_text().startswith("Hand ")
            assert page.locator("#summary-body table th.side-name").count() == 2  # a column per side
            seen["hands"] += 1
            page.click("#next-hand")
            assert_hand_begins(page)
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


def assert_png(path: Path, size: dict[str, int]) -> None:
    """``path`` is a PNG of ``size`` (its IHDR chunk) with something drawn in it."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
    assert struct.unpack(">II", data[16:24]) == (size["width"], size["height"])
    assert len(data) > 10_000, f"{path} is nearly empty ({len(data)} bytes)"


def box(page: Any, selector: str) -> dict[str, float]:
    b = page.locator(selector).first.bounding_box()
    assert b is not None, f"{selector} is not drawn"
    return b


def assert_newest_log_line_in_view(page: Any) -> None:
    """The log's last line lies inside the log's visible part (it scrolls to the newest move)."""
    inside = page.evaluate(
        """(() => {
        const log = document.getElementById("log"), last = log.lastElementChild;
        if (!last) return document.getElementById("overlay").hidden ? "empty log" : true;
        const l = log.getBoundingClientRect(), r = last.getBoundingClientRect();
        const seen = r.top >= l.top - 1 && r.bottom <= l.bottom + 1;
        return seen || `log ${l.top}-${l.bottom}, last line ${r.top}-${r.bottom}`;
    })()"""
    )
    assert inside is True, inside


# ------------------------------------------------------------------------------------------------ whole games


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
    assert title in ("random won the match", "You win the match!")
    final = page.locator(".final-scores").inner_text()
    assert final.startswith("Final scores: you ")
    scores = [int(x) for x in page.locator("#scores td.score").all_inner_texts()]
    assert len(scores) == 2 and max(scores) >= 11
    click_and_wait(page, page.locator("#rematch"))
    assert not page.is_visible("#overlay")
    assert [int(x) for x in page.locator("#scores td.score").all_inner_texts()] == [0, 0]
    assert page.locator("#hand .card").count() == 3
    play_any(page)  # the rematch plays
    assert page.locator("#log li").count() >= 1


def test_team_game_with_a_bot_partner_one_name_per_seat(page: Any) -> None:
    start(page, "scopa-a-quattro", "greedy", partner="random")
    # one name per seat: the seat boxes, the score table, the log and the hand summary use the same names
    names = page.locator("#others .seat .seat-name").all_inner_texts()
    assert names == ["greedy 1", "random", "greedy 3"]
    roles = page.locator("#others .seat .seat-role").all_inner_texts()
    assert roles == ["opponent", "partner", "opponent"]
    sides = ["you + random", "greedy 1 + greedy 3"]
    assert page.locator("#scores td.side-name").all_inner_texts() == sides
    for _ in range(4):
        play_any(page)
    lines = page.locator("#log li").all_inner_texts()
    assert len(lines) >= 4 * 4 - 3  # my moves and the three bots' in between
    assert all(line.split(": ")[0] in ["you", *names] for line in lines), lines
    assert {line.split(": ")[0] for line in lines} == {"you", *names}
    page.select_option("#faces", "french")
    assert page.locator("#hand .card svg text").count() >= 1  # French suit glyphs
    page.select_option("#faces", "italian")
    page.click("#hint-button")
    wait_until(page, "document.getElementById('hint').textContent.includes('suggests')")
    while not page.is_visible("#overlay"):
        play_any(page)
    assert page.locator("#summary-body th.side-name").all_inner_texts() == sides
    for text in page.locator("#summary-body p").all_inner_texts():  # the cards left on the table go to a side
        assert text.endswith(f"go to {sides[0]}.") or text.endswith(f"go to {sides[1]}."), text


def test_cirulla_knock_by_clicking_and_a_whole_hand(cirulla_page: Any) -> None:
    page = cirulla_page
    start(page, "cirulla", "greedy")
    # the dealer's side took the table as dealt and the bot knocked: both in the log, the bot's cards face up
    assert page.locator("#log li.table-take").count() == 1
    assert page.locator("#log li.knock").count() == 1 and "greedy: knock " in page.locator("#log li.knock").inner_text()
    assert "taken by" in page.locator("#log li.table-take").inner_text()
    shown = page.evaluate("state.game.seats[1].revealed.map((c) => c.code)")
    assert len(shown) == 3
    assert page.locator("#others .seat .card.revealed").evaluate_all("cs => cs.map((c) => c.dataset.card)") == shown
    # the "shown" badges sit inside their cards, below the seat's title (they used to cover it)
    title = box(page, "#others .seat .seat-title")
    badges = page.locator("#others .seat .card.revealed").evaluate_all(
        """cs => cs.map((c) => {
            const s = getComputedStyle(c, "::after"), r = c.getBoundingClientRect();
            return [s.content, parseFloat(s.top), parseFloat(s.bottom), r.top];
        })"""
    )
    for content, top, bottom, card_top in badges:
        assert content == '"shown"' and top >= 0 and bottom >= 0 and card_top >= title["y"] + title["height"]
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
    # the hand's summary has cirulla's point fields, in the page's language
    assert page.locator("#summary-title").inner_text() == "Hand 1 points"
    rows = page.locator("#summary-body table th.field")
    fields = ["cards", "coins", "settebello", "primiera", "scope", "napoli", "grande", "knocks", "total"]
    assert rows.all_inner_texts() == [*fields, "score"]
    assert page.locator("#summary-body table th.side-name").all_inner_texts() == ["you", "greedy"]
    my_knocks = page.locator('#summary-body tr:has(th[data-field="knocks"]) td').first.inner_text()
    assert int(my_knocks) >= 10
    page.click("#lang-it")
    fields = ["carte", "denari", "settebello", "primiera", "scope", "napoli", "grande", "bussate", "totale"]
    assert rows.all_inner_texts() == [*fields, "punteggio"]
    assert page.locator("#summary-body table th.side-name").all_inner_texts() == ["tu", "greedy"]
    assert page.locator("#summary-title").inner_text() == "Punti della mano 1"
    page.click("#next-hand")
    assert not page.is_visible("#overlay")
    assert page.locator("#past li").count() == 1
    assert page.locator("#message").inner_text().startswith("Inizia la mano 2.")


# ------------------------------------------------------------------------------------------------ the page


LAYOUT_SIZES = [
    PHONES[0],
    pytest.param(PHONES[1], marks=pytest.mark.slow),
    DESKTOP,
]
"""The layout test's sizes: the narrowest phone and a desktop; the wider phone (the same style rules as the
narrow one, ``max-width: 640px``, with more room) under ``-m slow``."""


@pytest.mark.parametrize("viewport", LAYOUT_SIZES, ids=lambda v: f"{v['width']}x{v['height']}")
def test_layout_from_a_phone_to_a_desktop(page_at: PageAt, viewport: dict[str, int], tmp_path: Path) -> None:
    """No sideways overflow, the board a board (the other seat at the top, the table, your hand at the bottom), the
    side panel beside it on a desktop and below it on a phone, the log at its newest move, screenshots."""
    page = page_at(viewport)
    overflow = "document.documentElement.scrollWidth <= window.innerWidth"
    assert page.evaluate(overflow), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    start(page, "classic", "greedy")
    for _ in range(7):  # 14 moves: more than the log shows at once
        assert page.evaluate(overflow), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        play_any(page)
        assert_newest_log_line_in_view(page)
    assert page.locator("#log li").count() >= 14
    page.click("#hint-button")
    wait_until(page, "document.getElementById('hint').textContent.includes('suggests')")
    assert page.evaluate(overflow), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    seat, table, hand = box(page, "#others .seat"), box(page, "#table-area"), box(page, "#hand-area")
    assert seat["y"] + seat["height"] <= table["y"] and table["y"] + table["height"] <= hand["y"]
    board, aside = box(page, "#board"), box(page, "aside")
    if viewport["width"] >= 1000:
        assert aside["x"] >= board["x"] + board["width"] and aside["y"] < hand["y"]  # beside the board
    else:
        assert aside["y"] >= board["y"] + board["height"]  # below it
        # on a phone the whole board (the others, the table, three cards in the hand) fits in the first screen
        assert hand["y"] + hand["height"] <= viewport["height"], hand
    for b in page.locator("#hand .card, #table .card, #others .seat").all():
        r = b.bounding_box()
        assert r is not None and r["x"] >= 0 and r["x"] + r["width"] <= viewport["width"], r
    name = "web_desktop.png" if viewport == DESKTOP else f"web_phone_{viewport['width']}.png"
    shot = tmp_path / name
    page.screenshot(path=str(shot))
    assert_png(shot, viewport)
    docs = os.environ.get("SCOPA_WEB_SCREENSHOTS")
    if docs and viewport in (DESKTOP, PHONES[0]):
        out = Path(docs) / ("web_desktop.png" if viewport == DESKTOP else "web_phone.png")
        page.screenshot(path=str(out))
        assert_png(out, viewport)
    # the hand summary fits too
    while not page.is_visible("#overlay"):
        play_any(page)
        assert_newest_log_line_in_view(page)
    summary = box(page, "#summary")
    assert summary["x"] >= 0 and summary["x"] + summary["width"] <= viewport["width"], summary
    assert page.evaluate(overflow), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


def test_a_team_game_fits_a_phone(page_at: PageAt) -> None:
    """Three other seats at the top of a 360 px wide board, without sideways overflow."""
    page = page_at(PHONES[0])
    start(page, "scopa-a-quattro", "greedy", partner="random")
    play_any(page)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    seats = [s.bounding_box() for s in page.locator("#others .seat").all()]
    table = box(page, "#table-area")
    assert len(seats) == 3 and all(s is not None and s["y"] + s["height"] <= table["y"] for s in seats), seats


def assert_in_first_screen(page: Any, viewport: dict[str, int], what: str) -> None:
    """The table, every card of the hand and the Hint button lie inside the window as first shown (no scrolling);
    the status line and the score table's side names are one line each."""
    page.evaluate("window.scrollTo(0, 0)")
    for selector in ["#table-area", "#hint-button", "#others", *[f"#hand .card >> nth={i}" for i in range(10)]]:
        if selector.startswith("#hand") and page.locator(selector).count() == 0:
            break
        b = box(page, selector)
        inside = b["x"] >= 0 and b["y"] >= 0 and b["x"] + b["width"] <= viewport["width"]
        assert inside and b["y"] + b["height"] <= viewport["height"], (what, selector, b)
    lines = page.evaluate(
        """[document.getElementById("message"), ...document.querySelectorAll("#scores .side-label")].map((e) =>
            e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).fontSize))"""
    )
    assert all(0 < n < 2 for n in lines), (what, lines)  # a line is about 1.2 times the font's size
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), what


def my_moves(page: Any) -> int:
    return int(
        page.evaluate("state.game.hand_log.filter((e) => e.type === 'move' && e.seat === state.game.you).length")
    )


def resized(page: Any, sizes: list[dict[str, int]]) -> Iterator[dict[str, int]]:
    """Lay the page out at each of ``sizes`` in turn (yielding the size), then at the first again. The page's
    layout is its style sheet's alone (no script reads the window's size), so a page resized to a size is laid out
    as one opened at it."""
    for size in sizes:
        page.set_viewport_size(size)
        yield size
    page.set_viewport_size(sizes[0])


OPENED_AT = [
    pytest.param(FIRST_SCREENS[0], FIRST_SCREENS, id="360x740"),
    pytest.param(FIRST_SCREENS[1], FIRST_SCREENS[1:], id="1366x768", marks=pytest.mark.slow),
]
"""The pages of the tests checked at every size of ``FIRST_SCREENS``: the default suite opens one at the phone's size
and checks it resized to each (``resized``); ``-m slow`` also opens one at the laptop's size."""


@pytest.mark.parametrize(("viewport", "sizes"), OPENED_AT)
def test_every_variant_fits_the_first_screen_and_a_double_click_plays_once(
    browser: Any, every_variant_server: WebServer, viewport: dict[str, int], sizes: list[dict[str, int]], tmp_path: Path
) -> None:
    """In every variant, on a phone and on a laptop (``sizes``): the board in the first screen (scopone's 10-card hand
    included), one-line status and side names, before and after a move; a double click on a card sends one move (no
    409, no error in the status line)."""
    pages = open_page(browser, every_variant_server, viewport)
    page = next(pages)
    variants = page.evaluate("state.info.variants.map((v) => v.name)")
    assert len(variants) == 17
    for variant in variants:
        opponent = "bot-scopone-scientifico" if variant == "scopone-scientifico" else "greedy"
        partner = opponent if page.evaluate(f"state.info.variants.find((v) => v.name === '{variant}').teams") else None
        start(page, variant, opponent, partner)
        if variant == "scopone-scientifico":  # the shipped bot's short name, its seats numbered
            assert page.locator("#others .seat-name").all_inner_texts() == ["Bot 1", "Bot 2", "Bot 3"]
            assert page.locator("#scores td.side-name").all_inner_texts() == ["you + Bot 2", "Bot 1 + Bot 3"]
            assert page.locator("#hand .card").count() == 10
        for size in resized(page, sizes):
            if variant == "scopone-scientifico":
                shot = tmp_path / f"scopone_{size['width']}.png"
                page.screenshot(path=str(shot))
                assert_png(shot, size)
            assert_in_first_screen(page, size, variant)
        if page.is_visible("#knock"):  # cirulla: decide the knock first
            click_and_wait(page, page.locator('#knock-options button[data-knock="none"]'))
        # a card with one capture (or a lay): a double click plays it once
        single = page.evaluate(
            "Object.entries(state.game.moves).filter(([c, caps]) => caps.length === 1).map(([c]) => c)"
        )
        if not single:
            continue
        before, moves = updates(page), my_moves(page)
        page.locator(f'#hand .card[data-card="{single[0]}"]').dblclick()
        wait_until(page, f"Number(document.body.dataset.updates || 0) > {before}")
        page.wait_for_timeout(100)  # a second move's answer would be drawn by now
        assert updates(page) == before + 1, variant
        message = page.locator("#message").inner_text()
        assert my_moves(page) == moves + 1 or page.evaluate("state.game.hand_no") > 1, (variant, message)
        for wrong in ("hold", "cannot", "Wait", "not your turn", "failed", "409"):
            assert wrong not in message, (variant, message)
        for size in resized(page, sizes):
            assert_in_first_screen(page, size, f"{variant} after a move")
    page.click("#hint-button")  # the last variant's hint names its bot
    wait_until(page, "document.getElementById('hint').textContent.includes('suggests')")
    assert page.locator("#hint").inner_text().startswith("greedy suggests")
    next(pages, None)  # closes the page and checks its console


@pytest.mark.parametrize(("viewport", "sizes"), OPENED_AT)
def test_review_of_a_hand(
    page_at: PageAt, viewport: dict[str, int], sizes: list[dict[str, int]], tmp_path: Path
) -> None:
    """After a hand, Review: the page follows the server's progress, then steps through the person's moves on the
    board as it was (the best move's cards highlighted), a bar per legal move with its value, and the summary; the
    review's boxes inside the window on a phone and on a laptop (``sizes``)."""
    page = page_at(viewport)
    start(page, "classic", "greedy")
    while not page.is_visible("#overlay"):
        play_any(page)
    assert page.locator("#review-button").inner_text() == "Review this hand"
    page.click("#review-button")
    page.wait_for_selector("#review-body", state="visible", timeout=ANSWER_S * 1000)
    decisions = page.evaluate("state.review.job.review.decisions")
    assert len(decisions) == 18  # the person's moves of a classic hand
    summary = page.locator("#review-summary").inner_text()
    assert summary.startswith("Your 18 moves lost ") and " a move" in summary, summary
    seen_loss = False
    for i, d in enumerate(decisions):
        assert page.locator("#review-step").inner_text().startswith(f"Move {i + 1} of 18")
        bars = page.locator("#review-moves li")
        assert bars.count() == len(d["moves"]) and page.locator("#review-moves li.best").count() == 1
        assert page.locator("#review-moves li.was-played").count() == 1
        best = next(m for m in d["moves"] if m["move"] == d["best"])
        marked = page.locator("#review-box .card.best").evaluate_all("cs => cs.map((c) => c.dataset.card)")
        assert sorted(marked) == sorted([best["card"], *best["capture"]])
        verdict = page.locator("#review-verdict").inner_text()
        shoot = False
        if d["played"] != d["best"] and d["loss"] >= 0.005 and not d["forced"]:
            seen_loss = True
            assert "points lost: the best was" in verdict, verdict
            shoot = i < 12
        for size in resized(page, sizes):
            if shoot:
                page.screenshot(path=str(tmp_path / f"review_{size['width']}.png"))
            for b in page.locator("#review-box, #review-moves li").all():
                r = b.bounding_box()
                assert r is not None and r["x"] >= 0 and r["x"] + r["width"] <= size["width"], (size, r)
        if i < len(decisions) - 1:
            page.click("#review-next")
    assert seen_loss  # playing the first playable card every time loses points somewhere
    for size in sizes:
        assert_png(tmp_path / f"review_{size['width']}.png", size)
    page.click("#lang-it")
    assert page.locator("#review-title").inner_text() == "Analisi della mano 1"
    page.click("#lang-en")
    page.click("#review-close")
    assert not page.is_visible("#review") and page.is_visible("#summary")


def test_the_bots_moves_are_drawn_on_the_table(page_at: PageAt) -> None:
    """After the person's move, each bot move of the answer is drawn on the table it was played on: the card played
    (marked with the bot's name), the cards it takes marked; then the table as it is now."""
    page = page_at(PHONES[1], move_ms=MOVE_MS)
    start(page, "classic", "greedy")
    seen: list[str] = []
    while set(seen) != {"capture", "lay"}:  # both kinds of bot move drawn
        assert len(seen) < 8, seen
        if page.is_visible("#overlay"):
            page.click("#next-hand")
        before = updates(page)
        page.locator("#hand .card.playable").first.click()
        if page.is_visible("#chooser"):
            page.locator("#capture-options .capture-option").first.click()
        wait_until(page, "document.querySelector('#table .card.played.by-other') !== null")
        bot = page.evaluate("state.game.events.filter((e) => e.type === 'move' && e.seat !== state.game.you)")[0]
        played = page.locator("#table .card.played.by-other")
        assert played.get_attribute("data-card") == bot["card"]["code"]
        assert played.get_attribute("data-who") == "greedy"
        assert played.is_visible() and "greedy" in page.locator("#message").inner_text()
        taken = page.locator("#table .card.taken").evaluate_all("cs => cs.map((c) => c.dataset.card)")
        assert sorted(taken) == sorted(c["code"] for c in bot["capture"])
        table = page.locator("#table .card").evaluate_all("cs => cs.map((c) => c.dataset.card)")
        assert sorted(table) == sorted([*(c["code"] for c in bot["table_before"]), bot["card"]["code"]])
        wait_until(page, f"Number(document.body.dataset.updates || 0) > {before}")
        now = page.locator("#table .card").evaluate_all("cs => cs.map((c) => c.dataset.card)")
        assert page.locator("#table .card.played, #table .card.taken").count() == 0
        assert sorted(now) == sorted(c["code"] for c in page.evaluate("state.game.table"))
        assert not set(taken) & set(now)
        seen.append("capture" if bot["capture"] else "lay")
    # a click on the board while the moves are drawn skips to the position now (the bot's move not drawn), and
    # plays nothing
    if page.is_visible("#overlay"):
        page.click("#next-hand")
    cards = page.locator("#hand .card").count()
    before, frames = updates(page), int(page.evaluate("Number(document.body.dataset.frames)"))
    page.locator("#hand .card.playable").first.click()
    if page.is_visible("#chooser"):
        page.locator("#capture-options .capture-option").first.click()
    wait_until(page, "document.querySelector('#table .card.played.by-you') !== null")
    page.locator("#hand .card").first.click()
    wait_until(page, f"Number(document.body.dataset.updates || 0) > {before}")
    assert page.locator("#table .card.played").count() == 0
    assert int(page.evaluate("Number(document.body.dataset.frames)")) == frames + 1  # my move's only
    page.wait_for_timeout(200)
    assert updates(page) == before + 1 and page.locator("#hand .card").count() in (cards - 1, 3)  # 3: a new deal


def test_language_switch_english_italian(page_at: PageAt) -> None:
    """The toggle switches every text of the page, the score table's and the cards' names included, and is
    remembered."""
    page = page_at(DESKTOP)
    start(page, "classic", "greedy")
    play_any(page)
    columns = page.locator("#scores th").all_inner_texts()
    assert columns == ["", "score", "cards", "coins", "7s", "sb.", "scope"]
    code = page.locator("#hand .card").first.get_attribute("data-card")
    card = page.evaluate(f"state.game.hand.find((c) => c.code === '{code}')")
    rank = {"A": "Ace", "J": "Jack", "Q": "Knight", "K": "King"}.get(card["rank"], card["rank"])
    suit_en = {"d": "coins", "c": "cups", "s": "swords", "b": "clubs"}[card["suit"]]
    suit_it = {"d": "denari", "c": "coppe", "s": "spade", "b": "bastoni"}[card["suit"]]
    assert page.locator("#hand .card").first.get_attribute("title", timeout=1000).startswith(f"{rank} of {suit_en} (")
    # one name and one corner letter per rank in each language (the 9 is the Knight, Q in the notation)
    ranks = "['A', 'J', 'Q', 'K'].map((r) => rankLabel(r) + ' ' + rankName(r))"
    assert page.evaluate(ranks) == ["A Ace", "J Jack", "Q Knight", "K King"]
    english = page.inner_text("body")
    log = page.locator("#log li").all_inner_texts()
    assert page.get_attribute("html", "lang") == "en" and "Your hand" in english
    page.click("#lang-it")
    assert page.get_attribute("html", "lang") == "it"
    assert page.locator("#scores th").all_inner_texts() == ["", "punti", "carte", "denari", "sette", "sb.", "scope"]
    rank_it = {"A": "Asso", "J": "Fante", "Q": "Cavallo", "K": "Re"}.get(card["rank"], card["rank"])
    assert page.locator("#hand .card").first.get_attribute("title").startswith(f"{rank_it} di {suit_it} (")
    assert page.evaluate(ranks) == ["A Asso", "F Fante", "C Cavallo", "R Re"]
    italian = page.inner_text("body")
    for word in ["La tua mano", "Tavolo", "Punteggio", "Questa mano", "Consiglio", "Variante", "carte nel mazzo"]:
        assert word in italian, word
    for word in ["Your hand", "Table", "Score", "This hand", "Hint", "Variant", "in the stock", "of", "opponent"]:
        assert not re.search(rf"\b{word}\b", italian), word
    log_it = page.locator("#log li").all_inner_texts()
    assert len(log_it) == len(log) and log_it != log and all(" di " in line for line in log_it)
    assert page.locator("#others .seat .seat-role").inner_text() == "avversario"
    # remembered: a new visit opens in Italian
    page.reload()
    page.wait_for_selector("#variant option[value=classic]", state="attached")
    assert page.get_attribute("html", "lang") == "it" and page.locator("#new-game").inner_text() == "Nuova partita"
    assert "Due giocatori" in page.locator("#variant option[value=classic]").inner_text()
    page.click("#lang-en")
    assert page.locator("#new-game").inner_text() == "New game"
