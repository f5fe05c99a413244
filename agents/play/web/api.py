"""The browser game's JSON API: the Starlette app (``make_app``) that ``agents.play.web.server`` serves on uvicorn.

Its routes run over one game registry: every request body's fields are checked (unknown ones refused with 400), JSON
nesting is limited before parsing (``json_depth_exceeds``), game work runs in worker threads under each game's lock,
and only the page's three files are served. The HTTP limits before a request reaches the app are the server's.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, TypeVar

from agents.play.match import KNOCK_CHOICES, MoveError
from agents.play.web.game import WebGame
from agents.play.web.registry import (
    GameRegistry,
    RequestError,
    ServerConfig,
)
from agents.play.web.review_jobs import ReviewsBusy
from scopa_env.rules.cards import parse_card

try:  # the web extra; the server checks it (and says what to install) before it builds the app
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import Response
    from starlette.routing import Route
except ImportError:  # pragma: no cover - exercised by tests that hide the packages
    pass

__all__ = [
    "ALL_METHODS",
    "GAME_ACTIONS",
    "MAX_JSON_DEPTH",
    "SECURITY_HEADERS",
    "STATIC_FILES",
    "json_depth_exceeds",
    "make_app",
]


T = TypeVar("T")

MAX_JSON_DEPTH = 16
"""Deepest nesting of arrays and objects a body may have (the API's bodies nest 2 deep); checked before parsing."""

STATIC_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
"""The only files the server sends (package data of ``agents.play.web``)."""

SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:",
}
"""Headers of every answer of the app."""

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
"""Every route takes every method and answers a wrong one with the API's own 404 or 405 message."""

GAME_ACTIONS = ("move", "knock", "hint", "rematch", "review")

_GAME_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


def _check_fields(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise RequestError(400, f"unknown field(s) {unknown}; allowed: {sorted(allowed)}")


def _parse_move(game: WebGame, body: dict[str, Any]) -> tuple[int, frozenset[int]]:
    _check_fields(body, {"card", "capture"})
    deck = game.rules.deck
    card_text = body.get("card")
    capture_list = body.get("capture", [])
    if not isinstance(card_text, str):
        raise RequestError(400, f'card: give the card to play in notation, e.g. "7d", got {card_text!r}')
    if not isinstance(capture_list, list) or not all(isinstance(c, str) for c in capture_list):
        raise RequestError(400, f'capture: give a list of card notations, e.g. ["3s", "4c"], got {capture_list!r}')
    if len(capture_list) > deck.num_cards:
        raise RequestError(400, "capture: too many cards")
    try:
        card = parse_card(card_text, deck)
        capture = frozenset(parse_card(c, deck) for c in capture_list)
    except ValueError as e:
        raise RequestError(400, f"card: {e}") from None
    return card, capture


def _parse_knock(body: dict[str, Any]) -> str:
    _check_fields(body, {"knock"})
    choice = body.get("knock")
    if not isinstance(choice, str) or choice not in KNOCK_CHOICES:
        raise RequestError(400, f"knock: give one of {list(KNOCK_CHOICES)} (none: no knock), got {choice!r}")
    return choice


def _parse_review(body: dict[str, Any]) -> int | None:
    """A review's body: ``{"hand": N}`` (hand N of this match, from 1) or ``{"match": true}`` (the whole match)."""
    _check_fields(body, {"hand", "match"})
    hand, match = body.get("hand"), body.get("match")
    if match is True and hand is None:
        return None
    if match is None and isinstance(hand, int) and not isinstance(hand, bool) and 1 <= hand <= 10_000:
        return hand
    raise RequestError(
        400, f'give {{"hand": N}} (a hand of this match, from 1) or {{"match": true}}, got {body!r}'[:300]
    )


def json_depth_exceeds(raw: bytes, limit: int) -> bool:
    """Whether the JSON text ``raw`` nests arrays and objects more than ``limit`` deep.

    One pass over the bytes with a counter (brackets inside strings do not count): no recursion, so a hostile body
    of thousands of ``[`` is refused before ``json.loads``, whose C scanner recurses once per level.
    """
    depth = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # closing quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False


def _json_response(status: int, obj: Any, close: bool = False) -> Response:
    headers = dict(SECURITY_HEADERS)
    if close:
        headers["Connection"] = "close"
    return Response(json.dumps(obj, separators=(",", ":")).encode(), status, headers, "application/json")


def _not_found(request: Request) -> RequestError:
    path = request.url.path
    return RequestError(404, f"no such page or API: {path[:100]!r} (the API is under /api/, see docs/web.md)")


class _Api:
    """The routes' handlers over one registry: every answer is JSON (errors ``{"error": message}``) but the page's
    three files. Game work runs in a pool of ``config.threads`` worker threads (first come, first served) under each
    game's own lock; reading bodies and waiting happen on the event loop, so a slow client holds no thread."""

    def __init__(self, registry: GameRegistry, config: ServerConfig) -> None:
        self.registry = registry
        self.config = config
        self.pool = ThreadPoolExecutor(max_workers=config.threads, thread_name_prefix="scopa-web-game")
        """The worker threads; ``close`` waits for their last game steps."""

    async def _run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread. A request cancelled (a graceful shutdown past its timeout) before its step
        started never runs it; one cancelled while its step runs waits for the step to end: a game is never left
        half stepped, and no step is still running once the server has stopped."""
        job = self.pool.submit(fn)
        step = asyncio.wrap_future(job)  # a future, not a task: the loop's last cancellations do not reach it
        cancelled = False
        while True:
            try:
                result = await asyncio.shield(step)  # a cancel stops this wait, never the step
                break
            except asyncio.CancelledError:
                if step.done() or job.cancel():  # done, or not started yet (now never will)
                    raise
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError("the request was cancelled while its game step ran; the step finished")
        return result

    def close(self) -> None:
        """Wait for the game steps still running, then stop the worker threads; stop the reviews."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.registry.reviews.close()

    def route(self, path: str, handler: Callable[[Request], Awaitable[Response]]) -> Route:
        """A Starlette route for every method (each handler answers a wrong method itself, with the API's message),
        whose errors become JSON answers: ``RequestError`` its status, ``MoveError`` 409, anything else 500 with no
        traceback to the client (the server's output has it)."""

        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestError as e:
                return _json_response(e.status, {"error": str(e)}, close=e.close)
            except MoveError as e:
                return _json_response(409, {"error": str(e)})
            except ReviewsBusy as e:
                return _json_response(503, {"error": str(e)})
            except Exception as e:  # never a traceback to the browser; the server keeps serving
                print(
                    f"scopa-web: internal error on {request.method} {request.url.path}: {type(e).__name__}: {e}",
                    file=sys.stderr,
                    flush=True,
                )
                return _json_response(500, {"error": f"internal error ({type(e).__name__}); see the server's output"})

        return Route(path, endpoint, methods=ALL_METHODS)

    async def body(self, request: Request) -> dict[str, Any]:
        """The request's JSON object: at most ``max_body`` bytes (413), arriving within ``body_timeout_s`` (408),
        ``application/json`` (415), nesting at most ``MAX_JSON_DEPTH`` deep and valid (400)."""
        headers = request.headers
        if headers.get("transfer-encoding"):
            raise RequestError(411, "send the body with a Content-Length (no chunked encoding)", close=True)
        try:
            length = int(headers.get("content-length") or "0")
        except ValueError:
            raise RequestError(400, "bad Content-Length", close=True) from None
        limit = self.config.max_body
        if length < 0 or length > limit:
            raise RequestError(413, f"request body too large ({length} bytes; at most {limit})", close=True)
        raw = b""
        if length:
            timeout = self.config.body_timeout_s
            try:
                with anyio.fail_after(timeout):
                    raw = await request.body()
            except TimeoutError:
                raise RequestError(
                    408,
                    f"the request body did not arrive within {timeout:g} s (--body-timeout); send the whole body "
                    "at once, right after the headers",
                    close=True,
                ) from None
            except ClientDisconnect:
                raise RequestError(400, "the client closed the connection before sending its whole body") from None
        if not raw.strip():
            return {}
        ctype = (headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise RequestError(415, "send the body as JSON with Content-Type: application/json")
        if json_depth_exceeds(raw, MAX_JSON_DEPTH):
            raise RequestError(
                400, f"the body nests arrays or objects more than {MAX_JSON_DEPTH} deep; the API's bodies nest 2 deep"
            )
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise RequestError(400, f"the body is not valid JSON ({e})") from None
        if not isinstance(body, dict):
            raise RequestError(400, f"the body must be a JSON object, got {type(body).__name__}")
        return body

    # ------------------------------------------------------------------ routes

    async def page(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            raise _not_found(request)
        return await self._static("index.html")

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if request.method not in ("GET", "HEAD") or name not in STATIC_FILES:
            raise _not_found(request)
        return await self._static(name)

    async def _static(self, name: str) -> Response:
        data = await self._run(
            lambda: resources.files("agents.play.web").joinpath("static").joinpath(name).read_bytes()
        )
        return Response(data, 200, dict(SECURITY_HEADERS), STATIC_FILES[name])

    async def info(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            raise _not_found(request)
        return _json_response(200, await self._run(self.registry.info))

    async def games(self, request: Request) -> Response:
        if request.method != "POST":
            raise RequestError(405, "use POST /api/games to start a game")
        body = await self.body(request)
        _check_fields(body, {"variant", "opponent", "partner", "seat", "seed"})
        return _json_response(201, await self._run(lambda: self.registry.create(body).view()))

    async def game(self, request: Request) -> Response:
        game_id = request.path_params["game_id"]
        if not _GAME_ID.fullmatch(game_id):
            raise _not_found(request)
        if request.method == "GET":
            return _json_response(200, await self._run(lambda: self.registry.get(game_id).view()))
        if request.method == "DELETE":
            await self._run(lambda: self.registry.delete(game_id))
            return _json_response(200, {"deleted": game_id})
        raise RequestError(405, "use GET (the game) or DELETE (end it) on /api/games/<id>")

    async def action(self, request: Request) -> Response:
        game_id, action = request.path_params["game_id"], request.path_params["action"]
        if not _GAME_ID.fullmatch(game_id) or action not in GAME_ACTIONS:
            raise _not_found(request)
        if request.method != "POST":
            raise RequestError(405, f"use POST on /api/games/<id>/{action}")
        body = await self.body(request)

        def act() -> dict[str, Any]:
            game = self.registry.get(game_id)
            if action == "move":
                return game.move(*_parse_move(game, body))
            if action == "knock":
                return game.knock(_parse_knock(body))
            if action == "review":
                return game.review(_parse_review(body), self.registry.reviews)
            _check_fields(body, set())
            return game.hint() if action == "hint" else game.rematch()

        return _json_response(200, await self._run(act))

    async def not_found(self, request: Request) -> Response:
        raise _not_found(request)


def make_app(registry: GameRegistry) -> Starlette:
    """The ASGI application (Starlette) over ``registry``: the page's files and the JSON API of docs/web.md.
    ``app.state.api.close()`` waits for its last game steps and stops its worker threads."""
    api = _Api(registry, registry.config)
    routes = [
        api.route("/", api.page),
        api.route("/index.html", api.page),
        api.route("/static/{name}", api.static),
        api.route("/api/info", api.info),
        api.route("/api/games", api.games),
        api.route("/api/games/{game_id}", api.game),
        api.route("/api/games/{game_id}/{action}", api.action),
        api.route("/{path:path}", api.not_found),  # any other path: the API's 404 message, never a redirect
    ]
    app = Starlette(routes=routes)
    app.state.api = api
    return app
