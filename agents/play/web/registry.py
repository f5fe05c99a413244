"""The browser game's state on the server: its settings (``ServerConfig``), the bots it offers (``BotEntry``) and the
live games (``GameRegistry``: created, looked up by unguessable id, expired when idle). ``agents.play.web.server``
serves them over HTTP; the registry holds no HTTP code, so tests and scripts drive it directly.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.base import make_agent
from agents.errors import ScopaError
from agents.nets.bot import SHIPPED_BOTS, shipped_bot, shipped_bot_spec
from agents.play.web.game import WebGame
from agents.play.web.review_jobs import ReviewService
from scopa_env.rules import VARIANTS, Rules, get_rules

if TYPE_CHECKING:
    from scopa_env.games.policy import Policy

__all__ = [
    "HINT_SEED",
    "MAX_BODY",
    "MAX_SEED",
    "BotEntry",
    "GameRegistry",
    "RequestError",
    "ServerConfig",
    "default_bots",
]

MAX_BODY = 4096
"""Default largest request body accepted, in bytes (``--max-body``; a move is well under 200)."""
MAX_SEED = 2**63 - 1
HINT_SEED = 12345
"""Seed of the separate hint-bot instance (hints never change the opponents' random draws)."""
SHORT_BOT_NAME = "Bot"
"""The page's name for the variant's own shipped bot (its name on the server's list is ``bot-<variant>``)."""


class RequestError(ScopaError, ValueError):
    """A request the server refuses: the HTTP status and a message saying what was wrong and how to fix it;
    ``close``: the connection is closed after the answer (a body left unread or late)."""

    def __init__(self, status: int, message: str, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.close = close


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
    """The shipped bot's directory of each variant that has one (``agents.nets.bot.shipped_bot``: its own, or one whose
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
    max_connections: int = 1000
    """Open connections that get answers (uvicorn's ``limit_concurrency``); a request on one more is refused with
    503 and its connection closed."""
    header_timeout_s: float = 10.0
    """Seconds a request's line and headers may take to arrive (from the connection's opening or the previous
    answer); then the connection is closed."""
    body_timeout_s: float = 10.0
    """Seconds a request's body may take to arrive after its headers; then 408 and the connection is closed."""
    keep_alive_s: float = 5.0
    """Seconds an idle keep-alive connection stays open between requests."""
    shutdown_timeout_s: float = 10.0
    """On shutdown, seconds requests in progress get to end before they are cancelled (a running game step still
    finishes)."""
    threads: int = 4
    """Worker threads running game work at once (requests beyond wait, holding no thread)."""
    max_body: int = MAX_BODY
    """Largest request body in bytes; a bigger one is refused with 413."""

    def __post_init__(self) -> None:
        checks = [
            ("max_games", self.max_games >= 1, "at least 1"),
            ("idle_minutes", self.idle_minutes > 0, "positive"),
            ("max_connections", self.max_connections >= 1, "at least 1"),
            ("header_timeout_s", self.header_timeout_s > 0, "positive"),
            ("body_timeout_s", self.body_timeout_s > 0, "positive"),
            ("keep_alive_s", self.keep_alive_s > 0, "positive"),
            ("shutdown_timeout_s", self.shutdown_timeout_s >= 0, "0 or more"),
            ("threads", self.threads >= 1, "at least 1"),
            ("max_body", self.max_body >= 64, "at least 64 (a move's body is about 40 bytes)"),
        ]
        for name, ok, want in checks:
            if not ok:
                raise ValueError(f"ServerConfig.{name} must be {want}, got {getattr(self, name)!r}")
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"ServerConfig.seed must be 0..2**63-1 or None, got {self.seed!r}")


class GameRegistry:
    """The live games by id, the bots and their variants; thread-safe."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.shipped = _shipped_bots_by_variant(config.variants)
        """Each variant's shipped bot directory (the variants without one are left out)."""
        self.bots = {name: _probe_bot(name, spec, config.variants, self.shipped) for name, spec in config.bots.items()}
        self._games: dict[str, WebGame] = {}
        self._lock = threading.Lock()
        self.reviews = ReviewService()
        """The games' reviews, computed in the background (``WebGame.review``)."""
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

    def short_name(self, bot: str, variant: str) -> str:
        """The bot's name on the page: ``Bot`` for the variant's own shipped bot (``bot-<variant>``, or the one whose
        model card serves the variant), else its name on the server's list (``expert``, a ``--bot`` NAME)."""
        served = self.shipped.get(variant)
        return SHORT_BOT_NAME if served is not None and bot == f"bot-{served.name}" else bot

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
                    "short_names": {b: self.short_name(b, name) for b in self.bots_for(name)},
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
            short = {name: self.short_name(name, variant) for name in {opp_name, mate_name}}
            game = WebGame(
                game_id, rules, seat, seat_agents, names, hint, int(seed), hint_name=short[opp_name], short_names=short
            )
            self._games[game_id] = game
        return game
