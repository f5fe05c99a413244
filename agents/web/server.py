"""Play Scopa in a browser: ``scopa-web`` / ``python -m agents.web`` serves a page and a JSON API on localhost.

The server is the standard library's ``ThreadingHTTPServer``; the page (``agents/web/static/``) is plain HTML, CSS
and JavaScript with no build step, and only draws what the API returns: the rules run on the server's core.

Safe by default: it binds to 127.0.0.1 unless ``--host`` says otherwise; the page chooses bots only by the names
the server was started with (``--bot NAME=SPEC``; never a path from the browser); request bodies are size-limited
JSON objects whose fields are checked (unknown ones refused with 400 and a message); game ids are unguessable
(``secrets.token_urlsafe``); each game has its own state, agents and lock; idle games expire (``--idle-minutes``)
and at most ``--max-games`` live at once. API: docs/web.md.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.base import make_agent
from agents.bot import shipped_bot, shipped_bot_spec
from agents.play import SHIPPED_BOTS
from agents.web.game import KNOCK_CHOICES, MoveError, WebGame
from scopa_env.cards import parse_card
from scopa_env.rules import VARIANTS, Rules, get_rules

if TYPE_CHECKING:
    from agents.base import Policy

__all__ = ["BotEntry", "GameRegistry", "RequestError", "ServerConfig", "default_bots", "main", "make_server"]

MAX_BODY = 4096
"""Largest request body accepted, in bytes (a move is well under 200)."""
MAX_SEED = 2**63 - 1
EXPIRE_EVERY_S = 10.0
"""How often the serving loop sweeps idle games away."""
HINT_SEED = 12345
"""Seed of the separate hint-bot instance (hints never change the opponents' random draws)."""
STATIC_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
"""The only files the server sends (package data of ``agents.web``)."""
_GAME_PATH = re.compile(r"^/api/games/([A-Za-z0-9_-]{16,64})(?:/(move|knock|hint|rematch))?$")


class RequestError(ValueError):
    """A request the server refuses: the HTTP status and a message saying what was wrong and how to fix it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class BotEntry:
    """A bot the page may choose: its name (what the browser sends), its spec and the variants it can play."""

    name: str
    spec: str
    variants: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """Why it cannot play the other variants (shown in ``--help``-style notes at start-up)."""
    served: dict[str, str] = field(default_factory=dict)
    """Variants a shipped bot plays because its model card serves them (``"serves"``), and the spec that plays each."""

    def spec_for(self, variant: str) -> str:
        """The agent spec that plays ``variant``."""
        return self.served.get(variant, self.spec)


def default_bots() -> dict[str, str]:
    """The default ``--bot`` list: every shipped bot (``bot-<variant>``) and the baselines."""
    bots = {f"bot-{d.name}": str(d) for d in sorted(SHIPPED_BOTS.iterdir()) if (d / "model_card.json").is_file()}
    bots.update({"expert": "expert", "greedy": "greedy", "random": "random"})
    return bots


def _shipped_bots_by_variant(variants: Sequence[str]) -> dict[str, Path]:
    """The shipped bot's directory of each variant that has one (``agents.bot.shipped_bot``: its own, or one whose
    card serves it), looked up once: each lookup may read the model cards."""
    found = {v: shipped_bot(v) for v in variants}
    return {v: d for v, d in found.items() if d is not None}


def _probe_bot(name: str, spec: str, variants: Sequence[str], shipped: dict[str, Path]) -> BotEntry:
    entry = BotEntry(name, spec)
    for v in variants:
        served = shipped.get(v)  # a shipped bot plays the variants its card serves with any_variant
        if served is not None and served.name != v and Path(spec).resolve() == served.resolve():
            entry.served[v] = shipped_bot_spec(v) or spec
        try:
            make_agent(entry.spec_for(v), v, 0)
        except Exception as e:  # an operator's spec may fail in any way; it only makes the bot unavailable
            entry.errors[v] = " ".join(str(e).split())[:300]
            entry.served.pop(v, None)
        else:
            entry.variants.append(v)
    return entry


@dataclass
class ServerConfig:
    """Options of the server (the command line's flags)."""

    bots: dict[str, str] = field(default_factory=default_bots)
    """Bot name -> agent spec; the page chooses among these names only."""
    max_games: int = 200
    """Games alive at once (after idle ones expire); a new game beyond it is refused with 503."""
    idle_minutes: float = 30.0
    """A game untouched for this long is forgotten."""
    variants: tuple[str, ...] = tuple(VARIANTS)
    seed: int | None = None
    """Seed of the first game (the next games count up from it), for reproducible demos and tests; None: every
    game gets a random seed."""


class GameRegistry:
    """The live games by id, the bots and their variants; thread-safe."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.shipped = _shipped_bots_by_variant(config.variants)
        """Each variant's shipped bot directory (the variants without one are left out)."""
        self.bots = {name: _probe_bot(name, spec, config.variants, self.shipped) for name, spec in config.bots.items()}
        self._games: dict[str, WebGame] = {}
        self._lock = threading.Lock()
        self._next_seed = config.seed

    def bots_for(self, variant: str) -> list[str]:
        """Names of the bots that can play ``variant``."""
        return [b.name for b in self.bots.values() if variant in b.variants]

    def default_bot(self, variant: str) -> str | None:
        """The shipped bot of the variant when there is one, else the first bot that plays it."""
        names = self.bots_for(variant)
        served = self.shipped.get(variant)
        preferred = f"bot-{served.name if served is not None else variant}"
        return preferred if preferred in names else (names[0] if names else None)

    def info(self) -> dict[str, Any]:
        """What the page needs to offer a game: variants (with their bots) and bots."""
        variants = []
        for name in self.config.variants:
            rules = get_rules(name)
            variants.append(
                {
                    "name": name,
                    "description": rules.description,
                    "players": rules.num_players,
                    "sides": [list(s) for s in rules.sides],
                    "teams": any(len(s) > 1 for s in rules.sides),
                    "target": rules.target,
                    "deck": rules.deck_name,
                    "bots": self.bots_for(name),
                    "default_bot": self.default_bot(name),
                }
            )
        return {"variants": variants, "bots": [{"name": b.name, "variants": b.variants} for b in self.bots.values()]}

    def expire(self) -> int:
        """Forget games idle for longer than ``idle_minutes``; returns how many."""
        limit = time.monotonic() - 60.0 * self.config.idle_minutes
        with self._lock:
            old = [gid for gid, g in self._games.items() if g.last_used < limit]
            for gid in old:
                del self._games[gid]
        return len(old)

    def __len__(self) -> int:
        with self._lock:
            return len(self._games)

    def get(self, game_id: str) -> WebGame:
        """The live game ``game_id``; ``RequestError`` 404 when there is none (never existed, or expired)."""
        self.expire()
        with self._lock:
            game = self._games.get(game_id)
        if game is None:
            raise RequestError(404, "no such game (it may have expired after being idle); start a new game")
        return game

    def delete(self, game_id: str) -> None:
        """End a game."""
        with self._lock:
            if self._games.pop(game_id, None) is None:
                raise RequestError(404, "no such game (it may have expired after being idle)")

    def _agent(self, field_name: str, bot: str, rules: Rules, seed: int) -> tuple[str, Policy]:
        entry = self.bots.get(bot)
        if entry is None:
            raise RequestError(400, f"{field_name}: unknown bot {bot!r}; this server offers: {sorted(self.bots)}")
        if rules.name not in entry.variants:
            raise RequestError(
                400,
                f"{field_name}: bot {bot!r} cannot play {rules.name}; "
                f"bots for {rules.name}: {self.bots_for(rules.name)}",
            )
        return bot, make_agent(entry.spec_for(rules.name), rules, seed)

    def create(self, body: dict[str, Any]) -> WebGame:
        """A new game from a checked request body (``variant``, ``opponent``, ``partner``, ``seat``, ``seed``)."""
        variant = body.get("variant", "classic")
        if not isinstance(variant, str) or variant not in self.config.variants:
            raise RequestError(400, f"variant: unknown variant {variant!r}; choose one of {list(self.config.variants)}")
        rules = get_rules(variant)
        seat = body.get("seat", 0)
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < rules.num_players:
            raise RequestError(
                400, f"seat: must be a whole number 0..{rules.num_players - 1} for {variant}, got {seat!r}"
            )
        seed = body.get("seed")
        if seed is None and self._next_seed is not None:
            with self._lock:
                seed, self._next_seed = self._next_seed, (self._next_seed + 1) % (MAX_SEED + 1)
        elif seed is None:
            seed = secrets.randbits(63)
        elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise RequestError(400, f"seed: must be a whole number 0..2**63-1, got {seed!r}")
        opponent = body.get("opponent") or self.default_bot(variant)
        if opponent is None:
            raise RequestError(400, f"opponent: no bot of this server can play {variant}")
        if not isinstance(opponent, str):
            raise RequestError(400, f"opponent: must be a bot name (one of {self.bots_for(variant)}), got {opponent!r}")
        human_side = rules.seat_side[seat]
        has_partner = len(rules.sides[human_side]) > 1
        partner = body.get("partner")
        if partner is not None and not has_partner:
            raise RequestError(400, f"partner: {variant} has no teams, so there is no partner; leave it out")
        if partner is not None and not isinstance(partner, str):
            raise RequestError(400, f"partner: must be a bot name (one of {self.bots_for(variant)}), got {partner!r}")
        partner = partner or opponent
        opp_name, opp = self._agent("opponent", opponent, rules, seed % 2**32)
        mate_name, mate = (
            (opp_name, opp) if partner == opponent else self._agent("partner", partner, rules, (seed + 1) % 2**32)
        )
        _, hint = self._agent("opponent", opponent, rules, HINT_SEED)
        seat_agents = {}
        names = {}
        for s in range(rules.num_players):
            if s != seat:
                mine = rules.seat_side[s] == human_side
                seat_agents[s] = mate if mine else opp
                names[s] = mate_name if mine else opp_name
        self.expire()
        with self._lock:
            if len(self._games) >= self.config.max_games:
                raise RequestError(
                    503, f"the server already holds {self.config.max_games} games; try again when idle ones expire"
                )
            game_id = secrets.token_urlsafe(24)
            game = WebGame(game_id, rules, seat, seat_agents, names, hint, int(seed), hint_name=opp_name)
            self._games[game_id] = game
        return game


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


class Handler(BaseHTTPRequestHandler):
    """The page's files and the JSON API; every error is a JSON ``{"error": message}`` with its status."""

    server: WebServer
    server_version = "scopa-web"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    # ------------------------------------------------------------------ replies

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, separators=(",", ":")).encode(), "application/json")

    def _body(self) -> dict[str, Any]:
        length_text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            raise RequestError(411, "send the body with a Content-Length (no chunked encoding)")
        try:
            length = int(length_text or "0")
        except ValueError:
            raise RequestError(400, "bad Content-Length") from None
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            raise RequestError(413, f"request body too large ({length} bytes; at most {MAX_BODY})")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise RequestError(415, "send the body as JSON with Content-Type: application/json")
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RequestError(400, f"the body is not valid JSON ({e})") from None
        if not isinstance(body, dict):
            raise RequestError(400, f"the body must be a JSON object, got {type(body).__name__}")
        return body

    def _handle(self, method: str) -> None:
        try:
            self._route(method)
        except RequestError as e:
            self._json(e.status, {"error": str(e)})
        except MoveError as e:
            self._json(409, {"error": str(e)})
        except Exception as e:  # never a traceback to the browser; the server keeps serving
            print(f"scopa-web: internal error on {method} {self.path}: {type(e).__name__}: {e}", file=sys.stderr)
            self._json(500, {"error": f"internal error ({type(e).__name__}); see the server's output"})

    def _route(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        reg = self.server.registry
        if method in ("GET", "HEAD"):
            if path in ("/", "/index.html"):
                return self._static("index.html")
            if path.startswith("/static/") and path[len("/static/") :] in STATIC_FILES:
                return self._static(path[len("/static/") :])
            if path == "/api/info":
                return self._json(200, reg.info())
        if path == "/api/games":
            if method != "POST":
                raise RequestError(405, "use POST /api/games to start a game")
            body = self._body()
            _check_fields(body, {"variant", "opponent", "partner", "seat", "seed"})
            return self._json(201, reg.create(body).view())
        m = _GAME_PATH.match(path)
        if m is None:
            raise RequestError(404, f"no such page or API: {path[:100]!r} (the API is under /api/, see docs/web.md)")
        game_id, action = m.group(1), m.group(2)
        if action is None:
            if method == "GET":
                return self._json(200, reg.get(game_id).view())
            if method == "DELETE":
                reg.delete(game_id)
                return self._json(200, {"deleted": game_id})
            raise RequestError(405, "use GET (the game) or DELETE (end it) on /api/games/<id>")
        if method != "POST":
            raise RequestError(405, f"use POST on /api/games/<id>/{action}")
        body = self._body()
        game = reg.get(game_id)
        if action == "move":
            card, capture = _parse_move(game, body)
            return self._json(200, game.move(card, capture))
        if action == "knock":
            return self._json(200, game.knock(_parse_knock(body)))
        _check_fields(body, set())
        if action == "hint":
            return self._json(200, game.hint())
        return self._json(200, game.rematch())

    def _static(self, name: str) -> None:
        data = resources.files("agents.web").joinpath("static").joinpath(name).read_bytes()
        self._send(200, data, STATIC_FILES[name])

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")


class WebServer(ThreadingHTTPServer):
    """The HTTP server with its game registry."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], registry: GameRegistry, verbose: bool = False) -> None:
        super().__init__(address, Handler)
        self.registry = registry
        self.verbose = verbose
        self._last_sweep = time.monotonic()

    def service_actions(self) -> None:
        """Called by ``serve_forever`` between requests: forget idle games every few seconds, even when no
        request comes."""
        now = time.monotonic()
        if now - self._last_sweep >= EXPIRE_EVERY_S:
            self._last_sweep = now
            self.registry.expire()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = text if ":" not in text else f"[{text}]"
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


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``scopa-web``, ``python -m agents.web``)."""
    parser = argparse.ArgumentParser(
        prog="scopa-web",
        description="Play Scopa in a browser against the project's bots. Serves a page and a JSON API on "
        "localhost (docs/web.md).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    parser.add_argument(
        "--bot",
        action="append",
        type=_bot_arg,
        default=None,
        metavar="NAME=SPEC",
        help="a bot the page may choose, by NAME; SPEC is any agent spec (expert, pimc:worlds=16, a checkpoint "
        "runs/<run>/best.zip, an export directory). Repeatable; default: the shipped bots and expert, greedy, "
        "random. With --bot, only the bots given (add --bot greedy=greedy etc. to keep them)",
    )
    parser.add_argument("--max-games", type=int, default=200, help="games alive at once (default 200)")
    parser.add_argument("--idle-minutes", type=float, default=30.0, help="forget games idle this long (default 30)")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the first game, the next ones count up (reproducible demos); default: random deals",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    if args.max_games < 1:
        parser.error(f"--max-games must be at least 1, got {args.max_games}")
    if not args.idle_minutes > 0:
        parser.error(f"--idle-minutes must be positive, got {args.idle_minutes}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        parser.error(f"--seed must be 0..2**63-1, got {args.seed}")
    bots = default_bots() if args.bot is None else {}
    for name, spec in args.bot or []:
        if name in bots:
            parser.error(f"--bot: the name {name!r} is given twice")
        bots[name] = spec
    config = ServerConfig(bots=bots, max_games=args.max_games, idle_minutes=args.idle_minutes, seed=args.seed)
    try:
        registry = GameRegistry(config)
    except KeyboardInterrupt:
        return 130
    for entry in registry.bots.values():
        if not entry.variants:
            reason = next(iter(entry.errors.values()), "unknown reason")
            parser.error(f"--bot {entry.name}={entry.spec}: cannot play any variant: {reason}")
    try:
        server = WebServer((args.host, args.port), registry, args.verbose)
    except OSError as e:
        parser.error(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}")
    for entry in registry.bots.values():
        print(f"bot {entry.name}: {entry.spec} (plays {len(entry.variants)} variants)", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {args.host}: other machines can reach this server", flush=True)
    print(f"scopa-web: open {server.url} in a browser (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nstopped. ciao!")
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
