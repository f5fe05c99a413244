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
import logging
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from http import HTTPStatus
from typing import Any

from agents.cli.numbers import float_arg, int_arg
from agents.cli.settings import add_field_options, parse_options, setting
from agents.play.web.api import make_app
from agents.play.web.registry import (
    MAX_SEED,
    GameRegistry,
    ServerConfig,
    default_bots,
)
from agents.search import compiled
from scopa_env.engine import kernel

try:  # the web extra; without it ``scopa-web`` says how to install it (``_require_web``)
    import h11
    import starlette  # noqa: F401 - the app's (agents.play.web.api), checked here so WEB_MISSING names it
    import uvicorn
except ImportError as _missing:  # pragma: no cover - exercised by tests that hide the packages
    WEB_MISSING: str | None = _missing.name or "starlette"
else:
    WEB_MISSING = None


__all__ = ["WebOptions", "WebServer", "main", "make_server"]

EXPIRE_EVERY_S = 10.0
"""How often the serving loop sweeps idle games away."""
SWEEP_TICK_S = 1.0
"""How often the serving loop asks ``WebServer.service_actions`` whether a sweep is due."""
INSTALL_HINT = "pip install 'scopa[web]' (or: pip install starlette uvicorn)"


def _require_web() -> None:
    if WEB_MISSING is not None:
        raise ImportError(
            f"the browser game's server needs starlette and uvicorn ({WEB_MISSING!r} is not installed): {INSTALL_HINT}"
        )


BACKLOG = 2048
"""Connections the operating system queues before the server accepts them."""


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


def plural(count: int, word: str) -> str:
    """``1 variant``, ``2 variants``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


# --------------------------------------------------------------------------------------------------- HTTP


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

    async def _serve(self, held: _HeldSignals | None = None) -> None:
        if held is not None:  # the event loop is whole now: a signal that came while it was built is handled here
            held.release()
        sweeper = asyncio.create_task(self._sweep())
        try:
            await self._server.serve(sockets=[self.socket])
        finally:
            sweeper.cancel()

    def serve_forever(self) -> None:
        """Serve until ``shutdown()`` (or, in the main thread, Ctrl-C or SIGTERM: uvicorn's graceful shutdown, then
        the signal is raised again, Ctrl-C as ``KeyboardInterrupt``)."""
        self._serving.set()
        held = _HeldSignals() if threading.current_thread() is threading.main_thread() else None
        try:
            asyncio.run(self._serve(held))
        finally:
            if held is not None:
                held.release()
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


class _HeldSignals:
    """SIGINT and SIGTERM held back (noted, not handled) in the main thread while ``asyncio.run`` builds its event loop:
    a handler's ``KeyboardInterrupt`` raised half-way through the loop's constructor leaves a loop whose collection
    prints a traceback. ``release()`` puts the handlers back and raises a noted signal again (once; again: no-op)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.came: list[int] = []
        self.handlers: dict[int, Any] | None = {sig: signal.signal(sig, self._note) for sig in self.SIGNALS}

    def _note(self, signum: int, frame: Any) -> None:
        self.came.append(signum)

    def release(self) -> None:
        if self.handlers is None:
            return
        for sig, handler in self.handlers.items():
            signal.signal(sig, handler)
        self.handlers = None
        if self.came:
            signal.raise_signal(self.came[0])


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


_DEFAULTS = ServerConfig(bots={})
"""The server's default limits, shown by ``--help``."""
_LIMITS = {
    "max_connections": "max_connections",
    "header_timeout": "header_timeout_s",
    "body_timeout": "body_timeout_s",
    "keep_alive": "keep_alive_s",
    "max_body": "max_body",
    "threads": "threads",
    "shutdown_timeout": "shutdown_timeout_s",
}
"""``WebOptions``' fields in the ``limits`` group of ``--help``, each with the ``ServerConfig`` field it sets."""


def _limit(option: str, doc: str, parse: Callable[[str], Any], metavar: str) -> Any:
    """A ``limits`` option: its default is ``ServerConfig``'s (``_LIMITS`` names the field), worded at the end of
    ``doc`` as ``--help`` shows it."""
    default = getattr(_DEFAULTS, _LIMITS[option])
    shown = f"{default:g}" if isinstance(default, float) else default
    return setting(default, f"{doc} (default {shown})", parse=parse, metavar=metavar, show_default=False)


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
    max_connections: int = _limit(
        "max_connections",
        "open connections that get answers; a request on one more gets 503",
        parse=int_arg(1),
        metavar="N",
    )
    header_timeout: float = _limit(
        "header_timeout",
        "seconds a request's headers may take to arrive; then the connection is closed",
        parse=float_arg(0, above=True, unit="seconds"),
        metavar="S",
    )
    body_timeout: float = _limit(
        "body_timeout",
        "seconds a request's body may take after its headers; then 408 and the connection is closed",
        parse=float_arg(0, above=True, unit="seconds"),
        metavar="S",
    )
    keep_alive: float = _limit(
        "keep_alive",
        "seconds an idle connection stays open between requests",
        parse=float_arg(0, above=True, unit="seconds"),
        metavar="S",
    )
    max_body: int = _limit(
        "max_body",
        "largest request body; a bigger one gets 413",
        parse=int_arg(64),
        metavar="BYTES",
    )
    threads: int = _limit("threads", "worker threads running game work at once", parse=int_arg(1), metavar="N")
    shutdown_timeout: float = _limit(
        "shutdown_timeout",
        "on Ctrl-C or SIGTERM, seconds requests in progress get to end",
        parse=float_arg(0, unit="seconds"),
        metavar="S",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``scopa-web``, ``python -m agents.play.web``)."""
    parser = argparse.ArgumentParser(
        prog="scopa-web",
        description="Play Scopa in a browser against the project's bots. Serves a page and a JSON API on "
        "localhost (docs/web.md), on uvicorn (pip install 'scopa[web]').",
    )
    add_field_options(parser, WebOptions, skip=list(_LIMITS), typed=True, once=False)
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
        **{field: getattr(args, option) for option, field in _LIMITS.items()},
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
        try:  # the bots' end-game solver runs on the compiled search: load (or compile) it now, not on a player's move
            compiled.jit()
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
