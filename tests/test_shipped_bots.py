"""Every shipped bot (agents/bots/<variant>/): loads without torch, matches its model card's checksums, plays only
legal moves in a full match of its variant (and of every variant its card says it serves; an az search bot plays
two hands with 2 worlds, its full match with its card's search runs under ``-m slow``), and is what ``bot`` and the
terminal game pick for those variants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.base import MODEL_CARD, AgentSpecError, make_agent
from agents.nets.az import AZAgent
from agents.nets.bot import SHIPPED_BOTS, Bot, shipped_bot, shipped_bot_spec
from agents.nets.bot_search import VALUE_SEARCHES
from agents.nets.card import against_expert
from agents.nets.weights import VALUE, file_sha256
from agents.play.terminal import default_opponent
from agents.search.pimc import PIMCAgent
from scopa_env.engine import core, observation
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import VARIANTS, Rules, get_rules

ROOT = Path(__file__).resolve().parent.parent
ALL_BOTS = sorted(d.name for d in SHIPPED_BOTS.iterdir() if (d / MODEL_CARD).is_file())


def _card(name: str) -> dict:
    return json.loads((SHIPPED_BOTS / name / MODEL_CARD).read_text())


SEARCH_BOTS = [n for n in ALL_BOTS if "search" in _card(n)]
"""Search bots: a network inside ``az`` search, or ``pimc`` (with a network for ``search=false``, or none: a
search-only bot). A variant's own directory may hold one (its default bot: the four- and eight-player variants whose
network alone is level with expert, scopone, and the variants no network was trained for); ``<variant>-search``
(agents/bots/classic-search) is picked by path, never by default."""
SEARCH_AGENTS = (AZAgent, PIMCAgent)
BOTS = [n for n in ALL_BOTS if n in VARIANTS]
"""The variants' default bots (agents/bots/<variant>/), network-only or search."""
EXTRA_SEARCH_BOTS = [n for n in SEARCH_BOTS if n not in BOTS]
DEFAULT_SEARCH_BOTS = [n for n in BOTS if n in SEARCH_BOTS]


def play_a_full_match(agent: Policy, rules: Rules, seed: int, hands: int | None = None) -> None:
    """``agent`` in every seat of one match of ``rules``: only legal actions, and the match ends with a winner (with
    ``hands``: only legal actions until the match's first ``hands`` hands are over, or the match if sooner)."""
    state = core.reset(rules, [seed])
    played = 0
    for _ in range(20_000):
        if state.done[0] or played == hands:
            break
        mask = core.legal_action_mask(rules, state)
        action = agent.act(ActBatch(rules, observation.observe(rules, state), mask, state, np.zeros(1, np.intp)))
        assert mask[0, action[0]], f"illegal action {action[0]}"
        info = core.step(rules, state, np.asarray(action, dtype=np.int64))
        played += int(info.hand_over[0])
    if hands is not None and played == hands:
        assert not state.done[0] or int(state.winner[0]) >= 0
    else:
        assert state.done[0] and int(state.winner[0]) >= 0


def test_the_shipped_bots() -> None:
    assert {
        "classic",
        "cirulla",
        "scopa-d-assi",
        "scopa-a-quattro",
        "scopone-scientifico",
        "simple-4",
        "simple-4-teams",
        "simple-8",
    } <= set(BOTS)
    assert set(ALL_BOTS) == set(BOTS) | {"classic-search"}
    assert EXTRA_SEARCH_BOTS == ["classic-search"]
    # The variants whose network alone is level with expert ship it inside search (docs/bots.md).
    assert {"scopa-a-quattro", "simple-4", "simple-4-teams", "simple-8"} <= set(DEFAULT_SEARCH_BOTS)
    # Where the network (alone or inside az) was below pimc, the variant ships pimc with its network kept for
    # search=false (issue 36: no default bot below pimc); the variants without a network ship pimc alone.
    plays_pimc = {n for n in BOTS if _card(n).get("search", {}).get("agent") == "pimc"}
    assert {"classic", "cirulla", "scopa-a-quattro", "simple-4-teams", "simple-8"} <= plays_pimc
    # scopone plays vpimc (pimc with a learned leaf value, issue 53 item 1), its value network beside its network
    scopone = _card("scopone-scientifico")
    assert scopone["search"]["agent"] == "vpimc" and {"policy.npz", "value.npz"} <= set(scopone["files"])
    search_only = {n for n in BOTS if _card(n).get("architecture") is None}
    assert search_only == {"simple-5", "simple-6", "simple-6-teams"}
    # simple-3 keeps its pimc search beside a network trained for it (issue 53 item 3)
    assert "simple-3" in plays_pimc and _card("simple-3")["checkpoint_meta"]["variant"] == "simple-3"
    # simple-2 keeps its pimc search and holds classic's network, the same weights (the same observations and actions)
    assert _card("simple-2")["files"] == _card("classic")["files"] and "simple-2" in plays_pimc
    assert set(BOTS) | {v for n in BOTS for v in _card(n).get("serves", [])} == set(VARIANTS), "a bot for every variant"


@pytest.fixture(scope="module")
def torchless_loads() -> dict[str, dict[str, object]]:
    """Every shipped bot loaded (onnx, then numpy) and asked for a legal first move in ONE fresh process that has not
    imported torch: per bot, "ok" or the error, and the heavy modules its load brought in (one process for all of
    them, rather than one each: the same check, a sixteenth of the start-ups)."""
    code = f"""
import json, sys
from agents.nets.bot import Bot
from scopa_env.engine import core
HEAVY = ("torch", "stable_baselines3", "sb3_contrib")
def heavy():
    return {{m for m in sys.modules if m.split(".")[0] in HEAVY}}
out = {{}}
for name, path, variant in {[(n, str(SHIPPED_BOTS / n), _card(n)["variant"]) for n in ALL_BOTS]!r}:
    before = heavy()
    try:
        for prefer in ("onnx", "numpy"):
            bot = Bot.load(path, prefer=prefer)
            state = core.reset(variant, [1])
            assert core.legal_action_mask(variant, state)[0, bot.act_state(state, 0)], "an illegal first move"
        result = "ok"
    except Exception as e:
        result = f"{{type(e).__name__}}: {{e}}"
    out[name] = {{"result": result, "heavy": sorted(heavy() - before)}}
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ALL_BOTS)
def test_files_match_the_model_card_and_load_without_torch(
    name: str, torchless_loads: dict[str, dict[str, object]]
) -> None:
    d = SHIPPED_BOTS / name
    card = _card(name)
    assert card["variant"] == (name if name in BOTS else name.removesuffix("-search"))
    network = card.get("architecture") is not None
    value = {VALUE} if card.get("search", {}).get("agent") in VALUE_SEARCHES else set()  # a learned leaf value
    assert set(card["files"]) == ({"policy.npz", "policy.onnx"} if network else set()) | value, "the card's files"
    for file, entry in card["files"].items():
        assert file_sha256(d / file) == entry["sha256"] and (d / file).stat().st_size == entry["size"]
    assert card["ratings"]["ratings"], "the card carries its measured ratings"
    assert torchless_loads[name] == {"result": "ok", "heavy": []}


@pytest.mark.parametrize("name", ALL_BOTS)
def test_the_card_says_whether_the_bot_beats_expert(name: str) -> None:
    """Issue 19: a bot beats expert with its 95% interval above 0 on >= 1,000 deals, else its card says it does not."""
    card = _card(name)
    verdict = against_expert(card["name"], [card["ratings"], *card.get("more_ratings", [])])
    assert verdict["margins"], "the card rates the bot against expert"
    assert card["against_expert"] == verdict
    if not verdict["beats_expert"]:
        assert "does not beat expert" in card.get("note", ""), "the card says so, and why"


@pytest.mark.parametrize("name", ALL_BOTS)
def test_the_card_carries_the_ratings_it_shipped_on(name: str) -> None:
    """Issue 53: every card's ratings (``ratings`` and ``more_ratings``, what the bot shipped on) name each agent's
    spec, the deals and their seed, and each pairing's 95% interval: with them the ratings can be played again."""
    card = _card(name)
    network = card.get("network_from", {})  # a search bot keeps its network's own ratings here: the same holds
    for rated in [card, network] if "ratings" in network else [card]:
        for block in [rated["ratings"], *rated.get("more_ratings", [])]:
            assert isinstance(block["seed"], int) and block["deals_from"] == f"seed {block['seed']}", block["source"]
            assert isinstance(block["deals"], int) and block["deals"] > 0
            assert all(r["spec"] for r in block["ratings"])
            for p in block["pairings"]:
                assert p["margin"]["low"] <= p["margin"]["value"] <= p["margin"]["high"], (block["source"], p["agent"])
        for row in rated.get("against_expert", {"margins": []})["margins"]:
            assert isinstance(row["seed"], int), row["source"]


@pytest.mark.parametrize(("name", "variant"), [(n, v) for n in BOTS for v in [n, *_card(n).get("serves", [])]])
def test_plays_a_full_match_legally_and_is_the_variants_default(name: str, variant: str) -> None:
    rules = get_rules(variant)
    assert shipped_bot(rules) == SHIPPED_BOTS / name
    spec = shipped_bot_spec(rules)
    assert default_opponent(rules) == (spec, [])
    agent = make_agent("bot", rules, seed=0)  # bot alone: the variant's shipped bot
    hands = None
    if isinstance(agent, SEARCH_AGENTS):  # a search bot: the same search with 2 worlds (the card's setting: -m slow)
        # az's search rolls every world out with the network: simple-4's match (9 hands, about 1.3 s each) plays its
        # first two hands here, the whole match with the card's search under -m slow (the test below)
        hands = 2 if isinstance(agent, AZAgent) and name in DEFAULT_SEARCH_BOTS and variant == name else None
        agent = Bot.load(SHIPPED_BOTS / name, prefer="numpy", rules=rules, any_variant=True).search_policy(
            rules, seed=0, worlds=2
        )
    play_a_full_match(agent, rules, seed=11, hands=hands)


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFAULT_SEARCH_BOTS)
def test_a_variants_search_bot_plays_a_full_match_with_its_cards_search(name: str) -> None:
    rules = get_rules(name)
    play_a_full_match(make_agent("bot", rules, seed=0), rules, seed=11)


def test_bot_loads_check_the_variant() -> None:
    with pytest.raises(Exception, match="cirulla"):
        Bot.load(SHIPPED_BOTS / "cirulla", prefer="numpy", rules=get_rules("classic"))


@pytest.mark.parametrize("name", EXTRA_SEARCH_BOTS)
def test_a_search_bot_plays_a_full_match_legally_and_is_never_a_default(name: str) -> None:
    card = _card(name)
    rules = get_rules(card["variant"])
    assert shipped_bot(rules) != SHIPPED_BOTS / name  # the fast bot stays the variant's default
    fast = Bot.load(SHIPPED_BOTS / rules.name, prefer="numpy")
    bot = Bot.load(SHIPPED_BOTS / name, prefer="numpy")
    assert bot.search == {k: v for k, v in card["search"].items() if k != "agent"}
    assert card["files"]["policy.npz"] == fast.card["files"]["policy.npz"], "the fast bot's network, unchanged"
    agent = make_agent(f"bot:path={SHIPPED_BOTS / name}", rules, seed=0)
    assert isinstance(agent, AZAgent) and agent.worlds == card["search"]["worlds"]
    play_a_full_match(agent, rules, seed=12)


@pytest.mark.parametrize("name", DEFAULT_SEARCH_BOTS)
def test_a_variants_search_bot_is_its_default_and_its_network_is_rated(name: str) -> None:
    """A variant's default bot that searches: ``bot`` gives its az search, ``bot:search=false`` its network alone,
    and the card keeps the network's own measured ratings (``network_from``) beside the search's."""
    card = _card(name)
    rules = get_rules(name)
    agent = make_agent("bot", rules, seed=0)
    kind = AZAgent if card["search"]["agent"] == "az" else PIMCAgent
    assert isinstance(agent, kind) and agent.worlds == card["search"]["worlds"]
    if card.get("architecture") is None:  # a search-only bot: no network to play alone
        with pytest.raises(AgentSpecError, match="no network"):
            make_agent("bot:search=false", rules, seed=0)
    else:
        assert not isinstance(make_agent("bot:search=false", rules, seed=0), SEARCH_AGENTS)
        assert card["network_from"]["ratings"]["ratings"], "the network alone's ratings are kept"
    assert card["against_expert"]["beats_expert"], "a search bot ships as a default only where it beats expert"
