"""Play Scopa in a browser: ``scopa-web`` / ``python -m agents.play.web`` serves a page and a JSON API on localhost.

The server is a Starlette application on uvicorn (the ``web`` extra: ``pip install 'scopa[web]'``); the page
(``agents/play/web/static/``) is plain HTML, CSS and JavaScript with no build step, and only draws what the API returns:
the rules run on the server's core.

Concurrency: one asyncio event loop reads requests, waits on slow clients and writes answers; the game work (a
move and the bots' replies, a hint, a new game: CPU work in numpy and the bots) runs in worker threads
(a pool of ``--threads`` threads, FIFO), each game under its own ``threading.Lock`` (``WebGame``), the
registry under one short lock. Threads rather than an asyncio rewrite of the games, because a game step is CPU work
that would block the loop however it were written, and ``agents.play.web.game`` stays plain synchronous code usable from
tests and scripts. A slow client costs a connection and a coroutine, never a thread.

Limits (docs/web.md has the table): a request's line and headers must arrive within ``--header-timeout`` seconds (a
uvicorn protocol subclass, ``_protocol_class``) and stay within their sizes (``MAX_REQUEST_LINE``: 414;
``MAX_HEADER_LINE``, ``MAX_HEADERS_SIZE``, ``MAX_HEADERS``: 431), its body within ``--body-timeout`` seconds of the
headers (408 and the connection closed), an idle keep-alive connection is closed after ``--keep-alive`` seconds;
bodies are at most ``--max-body`` bytes (413), JSON objects nested at most ``MAX_JSON_DEPTH`` deep, checked before
parsing (400); at most ``--max-connections`` open connections get answers (uvicorn's ``limit_concurrency``: 503
beyond), at most ``--max-games`` live games (503 beyond). Shutdown is uvicorn's graceful one: the socket stops
accepting, idle connections close, requests in progress get ``--shutdown-timeout`` seconds to end; a game step
already running in its thread always finishes (the cancelled request waits for the thread), so no game is left half
stepped. Games live in memory only: nothing is written to disk.

Safe by default: it binds to 127.0.0.1 unless ``--host`` says otherwise; the page chooses bots only by the names
the server was started with (``--bot NAME=SPEC``; never a path from the browser); request bodies are size-limited
JSON objects whose fields are checked (unknown ones refused with 400 and a message); game ids are unguessable
(``secrets.token_urlsafe``); only the page's three files are served (any other path: 404); each game has its own
state, agents and lock; idle games expire (``--idle-minutes``). API: docs/web.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from http import HTTPStatus
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

from agents.cli.settings import add_field_options, parse_options, setting
from agents.play.match import KNOCK_CHOICES, MoveError
from agents.play.web.game import WebGame
from agents.play.web.registry import (
    MAX_SEED,
    GameRegistry,
    RequestError,
    ServerConfig,
    default_bots,
)
from agents.play.web.review_jobs import ReviewsBusy
from scopa_env.engine import kernel
from scopa_env.rules.cards import parse_card

try:  # the web extra; without it ``scopa-web`` says how to install it (``_require_web``)
    import anyio
    import h11
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import Response
    from starlette.routing import Route
except ImportError as _missing:  # pragma: no cover - exercised by tests that hide the packages
    WEB_MISSING: str | None = _missing.name or "starlette"
else:
    WEB_MISSING = None

if TYPE_CHECKING:
    pass

__all__ = [
    "WebOptions",
    "WebServer",
    "json_depth_exceeds",
    "main",
    "make_app",
    "make_server",
]

T = TypeVar("T")
MAX_JSON_DEPTH = 16
"""Deepest nesting of arrays and objects a body may have (the API's bodies nest 2 deep); checked before parsing."""
EXPIRE_EVERY_S = 10.0
"""How often the serving loop sweeps idle games away."""
SWEEP_TICK_S = 1.0
"""How often the serving loop asks ``WebServer.service_actions`` whether a sweep is due."""
BACKLOG = 2048
"""Connections the operating system queues before the server accepts them."""
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


def plain_response(status: int, text: str) -> bytes:
    """A whole plain-text HTTP answer that closes the connection: what the protocol itself sends, before the app."""
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n".encode()
        + body
    )


HEADER_TIMEOUT_RESPONSE = plain_response(
    408, "the request's headers did not arrive in time (--header-timeout); send them at once"
)
"""What a connection whose request headers came only in part gets when its header deadline passes."""
MAX_REQUEST_LINE = 8192
"""Longest request line (method, path and query, version), in bytes; a longer one gets 414 (the page's are under
200)."""
MAX_HEADER_LINE = 8192
"""Longest header (name and value, a folded one's lines together), in bytes; a longer one gets 431."""
MAX_HEADERS_SIZE = 16384
"""Most bytes of all the headers of a request together (each header's line and line end); more get 431."""
MAX_HEADERS = 100
"""Most headers in a request (a browser sends about 15); more get 431."""
H11_BUFFER = 2 * (MAX_REQUEST_LINE + MAX_HEADERS_SIZE)
"""h11's own limit on a request head still incomplete; above the ones checked here, so theirs always speak first."""
FILES_BESIDES_CONNECTIONS = 128
"""Open files a server needs besides its connections (the listening socket, the bots' files, Python's own)."""
INSTALL_HINT = "pip install 'scopa[web]' (or: pip install starlette uvicorn)"


def plural(count: int, word: str) -> str:
    """``1 variant``, ``2 variants``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _require_web() -> None:
    if WEB_MISSING is not None:
        raise ImportError(
            f"the browser game's server needs starlette and uvicorn ({WEB_MISSING!r} is not installed): {INSTALL_HINT}"
        )


# --------------------------------------------------------------------------------------------------- HTTP


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
    _require_web()
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


def request_head_problem(head: bytes) -> tuple[int, str] | None:
    """The limit that the start of a request breaks, as ``(status, message)``, or None.

    ``head`` is what has come of the request so far: its line and headers, complete or still arriving (whatever
    follows the blank line that ends them is not looked at). A request line over ``MAX_REQUEST_LINE`` bytes is 414;
    a header over ``MAX_HEADER_LINE`` bytes (a folded header's lines count together), headers over
    ``MAX_HEADERS_SIZE`` bytes together or more than ``MAX_HEADERS`` of them are 431. An unfinished line counts with
    what has come of it, so a request that arrives in pieces is refused as soon as it is over a limit, one that
    arrives at once as soon as it is read. Reads at most about the limits' bytes, however long ``head`` is."""
    end = head.find(b"\n", 0, MAX_REQUEST_LINE + 2)
    length = (end - (end > 0 and head[end - 1] == 0x0D)) if end >= 0 else len(head)
    if length > MAX_REQUEST_LINE:
        return 414, f"the request line is longer than {MAX_REQUEST_LINE} bytes (the page's requests are under 200)"
    count = total = current = 0
    pos = end + 1 if end >= 0 else len(head)
    while pos < len(head):
        end = head.find(b"\n", pos, pos + MAX_HEADERS_SIZE + 2)
        line_end = end if end >= 0 else min(len(head), pos + MAX_HEADERS_SIZE + 2)
        length = line_end - pos - (end > pos and head[end - 1] == 0x0D)
        if end >= 0 and length == 0:
            return None  # the blank line: the head is complete and within the limits
        if head[pos] in b" \t":  # an obsolete folded line: more of the header before it
            current += length
        else:
            count, current = count + 1, length
        total += (end + 1 - pos) if end >= 0 else length
        if count > MAX_HEADERS:
            return 431, f"more than {MAX_HEADERS} headers (a browser sends about 15)"
        if current > MAX_HEADER_LINE:
            return 431, f"a header is longer than {MAX_HEADER_LINE} bytes"
        if total > MAX_HEADERS_SIZE:
            return 431, f"the headers are longer than {MAX_HEADERS_SIZE} bytes together"
        if end < 0:
            return None
        pos = end + 1
    return None


def _protocol_class(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a deadline on a request's line and headers, and their sizes checked.

    uvicorn times out only idle keep-alive connections; a client that sends its headers a byte at a time would hold
    its connection (and a place under ``--max-connections``) forever. Here every request's headers must be complete
    ``header_timeout`` seconds after the connection opens or the previous answer ends; otherwise the connection is
    closed (after a 408 when part of a request had come). The body has its own deadline (``_Api.body``).

    h11 limits only a request head that is still incomplete (``max_incomplete_event_size``): one that arrives in a
    single read, however large, is parsed whole. So the connection checks the head buffered so far
    (``request_head_problem``) before each parse of a new request, whether it came at once, in pieces or
    pipelined behind another, and a head over a limit gets 414 or 431 and the connection is closed."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadLimitConnection(h11.Connection):
        head_problem: tuple[int, str] | None = None

        def next_event(self) -> Any:
            if self.their_state is h11.IDLE:  # a new request's line and headers are (partly) in the buffer
                self.head_problem = request_head_problem(self.trailing_data[0])
                if self.head_problem is not None:
                    raise h11.RemoteProtocolError(self.head_problem[1], error_status_hint=self.head_problem[0])
            return super().next_event()

    class HeaderDeadlineProtocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.head_limits = HeadLimitConnection(h11.SERVER, H11_BUFFER)
            self.conn = self.head_limits
            self._header_deadline: asyncio.TimerHandle | None = None

        def send_400_response(self, msg: str) -> None:
            problem = self.head_limits.head_problem
            if problem is None:  # a malformed request: uvicorn's plain 400
                super().send_400_response(msg)
                return
            self.transport.write(plain_response(*problem))
            self.transport.close()

        def _arm_header_deadline(self) -> None:
            self._cancel_header_deadline()
            self._header_deadline = self.loop.call_later(header_timeout, self._header_deadline_passed)

        def _cancel_header_deadline(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _header_deadline_passed(self) -> None:
            self._header_deadline = None
            if self.transport.is_closing():
                return
            answering = self.cycle is not None and not self.cycle.response_complete
            if answering or self.conn.their_state is not h11.IDLE:
                return  # a request is being read (its body has the app's deadline) or answered
            if self.conn.trailing_data[0]:  # part of a request line or headers came
                self.transport.write(HEADER_TIMEOUT_RESPONSE)
            self.transport.close()

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._arm_header_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_header_deadline()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_deadline()
            super().connection_lost(exc)

    return HeaderDeadlineProtocol


def _listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening. Made with ``IPPROTO_TCP`` (not ``socket.create_server``'s
    protocol 0): asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on sockets that say they are TCP, and
    without it every answer (headers and body written apart) waits about 40 ms for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if sys.platform != "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def _cancelled_request_in_one_line(record: logging.LogRecord) -> bool:
    """A filter on uvicorn's error log: a request cancelled because ``--shutdown-timeout`` ran out is one line,
    not uvicorn's "Exception in ASGI application" and a traceback (the cancel is the documented behaviour)."""
    if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
        record.msg = "a request still running when --shutdown-timeout ran out was cancelled"
        record.args, record.exc_info, record.exc_text = (), None, None
    return True


class WebServer:
    """The browser game's server: the Starlette app (``make_app``) on uvicorn, on a socket bound at construction
    (so ``url`` is known and a busy port fails here).

    Used like the standard library's servers: ``serve_forever()`` (in a thread, or the main thread where Ctrl-C and
    SIGTERM shut it down gracefully), ``shutdown()`` from another thread (returns when serving has stopped),
    ``server_close()``. It serves once: after ``shutdown`` the socket is closed.
    """

    def __init__(
        self,
        address: tuple[str, int],
        registry: GameRegistry,
        verbose: bool = False,
        log_config: dict[str, Any] | None = None,
    ) -> None:
        _require_web()
        config = registry.config
        self.registry = registry
        self.verbose = verbose
        host, port = address
        self.socket = _listening_socket(host, port)
        self.app = make_app(registry)
        self.uvicorn_config = uvicorn.Config(
            self.app,
            http=_protocol_class(config.header_timeout_s),
            loop="asyncio",
            lifespan="off",
            log_config=log_config,
            log_level="info" if verbose else "warning",
            access_log=verbose,
            proxy_headers=False,
            server_header=False,
            headers=[("Server", "scopa-web")],
            backlog=BACKLOG,
            timeout_keep_alive=config.keep_alive_s,  # type: ignore[arg-type]  # uvicorn's hint says int; a float works
            limit_concurrency=config.max_connections + 1,  # uvicorn counts the asking connection too
            timeout_graceful_shutdown=config.shutdown_timeout_s,  # type: ignore[arg-type]
        )
        self._server = uvicorn.Server(self.uvicorn_config)
        error_log = logging.getLogger("uvicorn.error")
        if _cancelled_request_in_one_line not in error_log.filters:
            error_log.addFilter(_cancelled_request_in_one_line)
        self._last_sweep = time.monotonic()
        self._serving = threading.Event()
        self._stopped = threading.Event()

    def service_actions(self) -> None:
        """Called on the serving loop every second (in a worker thread): forget idle games every
        ``EXPIRE_EVERY_S`` seconds, even when no request comes."""
        now = time.monotonic()
        if now - self._last_sweep >= EXPIRE_EVERY_S:
            self._last_sweep = now
            self.registry.expire()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_TICK_S)
            await asyncio.to_thread(self.service_actions)

    async def _serve(self) -> None:
        sweeper = asyncio.create_task(self._sweep())
        try:
            await self._server.serve(sockets=[self.socket])
        finally:
            sweeper.cancel()

    def serve_forever(self) -> None:
        """Serve until ``shutdown()`` (or, in the main thread, Ctrl-C or SIGTERM: uvicorn's graceful shutdown, then
        the signal is raised again, Ctrl-C as ``KeyboardInterrupt``)."""
        self._serving.set()
        try:
            asyncio.run(self._serve())
        finally:
            self.app.state.api.close()
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serving gracefully: no new connections; requests in progress end (within ``shutdown_timeout_s``;
        a game step already running always finishes); returns once ``serve_forever`` has returned."""
        self._server.should_exit = True
        if self._serving.is_set():
            self._stopped.wait()

    def server_close(self) -> None:
        """Close the listening socket and stop the worker threads (after their last game steps)."""
        self.socket.close()
        self.app.state.api.close()

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        shown = host if ":" not in host else f"[{host}]"
        if shown in ("0.0.0.0", "[::]"):
            shown = "127.0.0.1"
        return f"http://{shown}:{port}/"


def make_server(
    config: ServerConfig | None = None, host: str = "127.0.0.1", port: int = 0, verbose: bool = False
) -> WebServer:
    """A ready server (not yet serving): ``server.serve_forever()`` in a thread, ``server.url``, ``shutdown()``."""
    return WebServer((host, port), GameRegistry(config or ServerConfig()), verbose)


# --------------------------------------------------------------------------------------------------- command line


def _bot_arg(text: str) -> tuple[str, str]:
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name) or not spec.strip():
        raise argparse.ArgumentTypeError(
            f"expected NAME=SPEC with a short name of letters, digits, '-', '_' or '.', e.g. "
            f"mybot=runs/<run>/best.zip or deep=pimc:worlds=32, got {text!r}"
        )
    return name, spec.strip()


class _StopOnce:
    """The command's handler of SIGINT and SIGTERM outside uvicorn's serving (which captures them, shuts down
    gracefully and raises them again): the first stops the command as Ctrl-C does (``KeyboardInterrupt``, then
    ``stopped. ciao!`` and status 0) and from then on both signals are ignored (``SIG_IGN``, which also holds while
    the interpreter exits, when Python handlers are gone), so a second Ctrl-C or SIGTERM during the shutdown
    changes nothing. Inside uvicorn's shutdown a second Ctrl-C only skips its wait for open connections."""

    def __call__(self, signum: int, frame: Any) -> None:
        self.ignore()
        raise KeyboardInterrupt

    def install(self) -> None:
        """Handle SIGINT and SIGTERM in this (the main) thread."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self)

    @staticmethod
    def ignore() -> None:
        """Ignore SIGINT and SIGTERM from now on (the command is stopping; in the main thread only)."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)


def _raise_file_limit(max_connections: int) -> str | None:
    """Raise this process's open-file limit (the soft one, up to the hard one) to fit ``max_connections``; a
    warning when it cannot."""
    try:
        import resource
    except ImportError:  # not on this platform (Windows)
        return None
    need = max_connections + FILES_BESIDES_CONNECTIONS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return None
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        target = soft
    if target >= need:
        return None
    return (
        f"warning: this process may open only {target} files but --max-connections {max_connections} needs about "
        f"{need}: raise the limit (ulimit -n {need}) or lower --max-connections"
    )


def _positive(kind: type[int] | type[float], at_least: float = 0.0, strict: bool = True) -> Callable[[str], Any]:
    """An argparse type: a number of ``kind`` above ``at_least`` (or at least it, ``strict=False``)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {kind.__name__}, got {text!r}") from None
        if (value <= at_least) if strict else (value < at_least):
            raise argparse.ArgumentTypeError(f"must be {'above' if strict else 'at least'} {at_least:g}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse's "invalid <name> value" names the type
    return parse


_DEFAULTS = ServerConfig(bots={})
"""The server's default limits, shown by ``--help``."""
_LIMITS = (
    "max_connections",
    "header_timeout",
    "body_timeout",
    "keep_alive",
    "max_body",
    "threads",
    "shutdown_timeout",
)
"""``WebOptions``' fields in the ``limits`` group of ``--help``."""


@dataclass
class WebOptions:
    """The command line's options (``agents.cli.settings``: each field's doc is its help); ``main`` makes the
    ``ServerConfig`` from them."""

    host: str = setting("127.0.0.1", "address to bind (default 127.0.0.1: this machine only)", show_default=False)
    port: int = setting(8000, "port (default 8000; 0 picks a free one)", show_default=False)
    bot: list[tuple[str, str]] | None = setting(
        None,
        "a bot the page may choose, by NAME; SPEC is any agent spec (expert, pimc:worlds=16, a checkpoint "
        "runs/<run>/best.zip, an export directory). Repeatable; default: the shipped bots and expert, greedy, "
        "random. With --bot, only the bots given (add --bot greedy=greedy etc. to keep them)",
        parse=_bot_arg,
        metavar="NAME=SPEC",
        repeat=True,
    )
    max_games: int = setting(200, "games alive at once (default 200)", show_default=False)
    idle_minutes: float = setting(30.0, "forget games idle this long (default 30)", show_default=False)
    seed: int | None = setting(
        None,
        "seed of the first game, the next ones count up (reproducible demos); default: random deals",
    )
    verbose: bool = setting(False, "log every request", negatable=False, show_default=False)
    max_connections: int = setting(
        _DEFAULTS.max_connections,
        f"open connections that get answers; a request on one more gets 503 (default {_DEFAULTS.max_connections})",
        parse=_positive(int),
        metavar="N",
        show_default=False,
    )
    header_timeout: float = setting(
        _DEFAULTS.header_timeout_s,
        f"seconds a request's headers may take to arrive; then the connection is closed "
        f"(default {_DEFAULTS.header_timeout_s:g})",
        parse=_positive(float),
        metavar="S",
        show_default=False,
    )
    body_timeout: float = setting(
        _DEFAULTS.body_timeout_s,
        f"seconds a request's body may take after its headers; then 408 and the connection is closed "
        f"(default {_DEFAULTS.body_timeout_s:g})",
        parse=_positive(float),
        metavar="S",
        show_default=False,
    )
    keep_alive: float = setting(
        _DEFAULTS.keep_alive_s,
        f"seconds an idle connection stays open between requests (default {_DEFAULTS.keep_alive_s:g})",
        parse=_positive(float),
        metavar="S",
        show_default=False,
    )
    max_body: int = setting(
        _DEFAULTS.max_body,
        f"largest request body; a bigger one gets 413 (default {_DEFAULTS.max_body})",
        parse=_positive(int, 64, strict=False),
        metavar="BYTES",
        show_default=False,
    )
    threads: int = setting(
        _DEFAULTS.threads,
        f"worker threads running game work at once (default {_DEFAULTS.threads})",
        parse=_positive(int),
        metavar="N",
        show_default=False,
    )
    shutdown_timeout: float = setting(
        _DEFAULTS.shutdown_timeout_s,
        f"on Ctrl-C or SIGTERM, seconds requests in progress get to end (default {_DEFAULTS.shutdown_timeout_s:g})",
        parse=_positive(float, 0, strict=False),
        metavar="S",
        show_default=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``scopa-web``, ``python -m agents.play.web``)."""
    parser = argparse.ArgumentParser(
        prog="scopa-web",
        description="Play Scopa in a browser against the project's bots. Serves a page and a JSON API on "
        "localhost (docs/web.md), on uvicorn (pip install 'scopa[web]').",
    )
    add_field_options(parser, WebOptions, skip=_LIMITS, typed=True, once=False)
    limits = parser.add_argument_group("limits", "against slow, greedy or hostile clients (docs/web.md has the table)")
    others = [f.name for f in fields(WebOptions) if f.name not in _LIMITS]
    add_field_options(limits, WebOptions, skip=others, typed=True, once=False)
    args = parse_options(parser, WebOptions, argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    if args.max_games < 1:
        parser.error(f"--max-games must be at least 1, got {args.max_games}")
    if not args.idle_minutes > 0:
        parser.error(f"--idle-minutes must be positive, got {args.idle_minutes}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        parser.error(f"--seed must be 0..2**63-1, got {args.seed}")
    if WEB_MISSING is not None:
        parser.error(f"the server runs on starlette and uvicorn, and {WEB_MISSING!r} is not installed: {INSTALL_HINT}")
    bots = default_bots() if args.bot is None else {}
    for name, spec in args.bot or []:
        if name in bots:
            parser.error(f"--bot: the name {name!r} is given twice")
        bots[name] = spec
    config = ServerConfig(
        bots=bots,
        max_games=args.max_games,
        idle_minutes=args.idle_minutes,
        seed=args.seed,
        max_connections=args.max_connections,
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        keep_alive_s=args.keep_alive,
        shutdown_timeout_s=args.shutdown_timeout,
        threads=args.threads,
        max_body=args.max_body,
    )
    try:
        registry = GameRegistry(config)
    except KeyboardInterrupt:
        return 130
    for entry in registry.bots.values():
        if not entry.variants:
            reason = next(iter(entry.errors.values()), "unknown reason")
            parser.error(f"--bot {entry.name}={entry.spec}: cannot play any variant: {reason}")
    from uvicorn.config import LOGGING_CONFIG

    try:
        server = WebServer((args.host, args.port), registry, args.verbose, log_config=LOGGING_CONFIG)
    except OSError as e:
        parser.error(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}")
    stop = _StopOnce()
    if threading.current_thread() is threading.main_thread():
        stop.install()
    try:
        for entry in registry.bots.values():
            print(f"bot {entry.name}: {entry.spec} (plays {plural(len(entry.variants), 'variant')})", flush=True)
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(f"warning: listening on {args.host}: other machines can reach this server", flush=True)
        warning = _raise_file_limit(config.max_connections)
        if warning:
            print(warning, flush=True)
        try:  # the bots' end-game solver runs on the compiled kernel: load (or compile) it now, not on a player's move
            kernel.jit()
        except kernel.KernelUnavailableError as e:
            print(f"warning: {e}; bots fail at the end of a hand until it is fixed", flush=True)
        print(f"scopa-web: open {server.url} in a browser (Ctrl-C stops)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.ignore()  # from here on a signal changes nothing: the shutdown ends, then status 0
        server.server_close()
    print("\nstopped. ciao!", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
