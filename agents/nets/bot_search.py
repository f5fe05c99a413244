"""What a search bot's model card may ask for: the search it plays its network inside (``SEARCH_AGENTS``: ``az``,
``pimc`` whose bot may have no network at all, or ``vpimc`` whose bot carries a value network too) and that search's
options, checked as untrusted input (``check_search``), and ``BotError``, the error of a bot directory that cannot be
loaded. ``agents.nets.weights`` reads the card; ``agents.nets.bot`` and the exporter build and write it.
"""

from __future__ import annotations

from typing import Any

from agents.errors import ScopaError

__all__ = [
    "MAX_WORLDS",
    "SEARCH_AGENT",
    "SEARCH_AGENTS",
    "SEARCH_FLOATS",
    "SEARCH_INTS",
    "SEARCH_OPTIONS",
    "SEARCH_ROLLOUTS",
    "SEARCH_ROLLOUTS_OF",
    "VALUE_SEARCHES",
    "BotError",
    "check_search",
    "has_network",
    "plays_pimc",
    "search_agent",
]


SEARCH_AGENT = "az"
"""The search a search bot runs its network inside by default (``agents.nets.netsearch``; a model card's
``"search"``)."""
SEARCH_AGENTS = ("az", "pimc", "vpimc")
"""The searches a search bot may play (its card's ``"search"["agent"]``): ``az`` (the network inside the search: its
rollouts and prior), ``pimc`` (``agents.search.pimc``: greedy or expert rollouts and the expert prior; the bot's
network is then what ``bot:path=DIR,search=false`` plays) or ``vpimc`` (``agents.nets.vpimc``: pimc with the bot's
value network ``value.npz`` at the leaves, beside greedy rollouts)."""
VALUE_SEARCHES = ("vpimc",)
"""The searches whose bot carries a value network (``agents.nets.weights.VALUE``, listed in the card's ``files``)."""
MAX_WORLDS = 1024
"""The most sampled deals a bot may ask for: its search's ``worlds`` and its end game's ``endgame_worlds`` (the card's
field and the agent spec's option alike)."""
SEARCH_INTS = {
    "worlds": (1, MAX_WORLDS),
    "depth": (1, 4),
    "endgame": (0, 64),
    "reply": (0, 8),
    "rworlds": (0, MAX_WORLDS),
}
SEARCH_FLOATS = {"prior": (0.0, 100.0), "temp": (0.0, 100.0), "expert": (0.0, 100.0), "mix": (0.0, 0.99)}
SEARCH_ROLLOUTS = ("net", "greedy")
SEARCH_OPTIONS = {
    "az": ("worlds", "depth", "endgame", "prior", "rollout", "temp", "expert"),
    "pimc": ("worlds", "depth", "endgame", "prior", "rollout"),
    "vpimc": ("worlds", "endgame", "prior", "reply", "mix", "rworlds"),
}
"""The options each search of ``SEARCH_AGENTS`` takes from a model card."""
SEARCH_ROLLOUTS_OF = {"az": SEARCH_ROLLOUTS, "pimc": ("greedy", "expert"), "vpimc": ()}


class BotError(ScopaError, ValueError):
    """An export directory that cannot be loaded, or inputs / rules that do not fit the bot."""


def is_whole(x: Any) -> bool:
    """Whether ``x`` is an ``int`` and not a ``bool`` (a JSON number with no fraction)."""
    return isinstance(x, int) and not isinstance(x, bool)


def check_search(search: Any, where: str) -> dict[str, Any]:
    """The options of a search bot's model card field ``"search"`` (``{"agent": "az", "worlds": 16, ...}`` or
    ``{"agent": "pimc", "worlds": 256, ...}``) without ``"agent"``, checked (known keys, numbers in range: a card is
    untrusted input); raises ``BotError`` naming what is wrong. ``search_agent`` reads the agent."""
    agent = search_agent(search, where)
    known = {"agent", *SEARCH_OPTIONS[agent]}
    unknown = sorted(str(k) for k in search if k not in known)
    if unknown:
        raise BotError(f"{where}: 'search' ({agent}) has unknown options {unknown} (known: {', '.join(sorted(known))})")
    opts: dict[str, Any] = {}
    for key, (low, high) in SEARCH_INTS.items():
        if key in search:
            v = search[key]
            if not is_whole(v) or not low <= v <= high:
                raise BotError(f"{where}: search option {key!r} must be an integer in {low}..{high}, got {v!r}")
            opts[key] = int(v)
    for key, (flow, fhigh) in SEARCH_FLOATS.items():
        if key in search:
            v = search[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not flow <= v <= fhigh:
                raise BotError(f"{where}: search option {key!r} must be a number in [{flow:g}, {fhigh:g}], got {v!r}")
            opts[key] = float(v)
    if "rollout" in search:
        rollouts = SEARCH_ROLLOUTS_OF[agent]
        if search["rollout"] not in rollouts:
            got = search["rollout"]
            raise BotError(f"{where}: search option 'rollout' of {agent} must be one of {rollouts}, got {got!r}")
        opts["rollout"] = str(search["rollout"])
    if opts.get("temp", 0.0) > 0 and opts.get("rollout", "net") != "net":
        raise BotError(f"{where}: search option 'temp' > 0 needs rollout 'net' (sampled network rollouts)")
    return opts


def search_agent(search: Any, where: str) -> str:
    """The search (one of ``SEARCH_AGENTS``) a model card's ``"search"`` names; raises ``BotError`` otherwise."""
    if not isinstance(search, dict) or search.get("agent") not in SEARCH_AGENTS:
        raise BotError(
            f'{where}: \'search\' must be an object {{"agent": "az", "pimc" or "vpimc", "worlds": ..., ...}}, got '
            f"{search!r}; export the bot again"
        )
    return str(search["agent"])


def plays_pimc(card: dict[str, Any]) -> bool:
    """Whether a model card's search is ``pimc`` (the only search a bot without a network may play)."""
    return isinstance(card.get("search"), dict) and card["search"].get("agent") == "pimc"


def has_network(card: dict[str, Any]) -> bool:
    """Whether a model card describes a network (``architecture``): not a search-only pimc bot."""
    return card.get("architecture") is not None or not plays_pimc(card)
