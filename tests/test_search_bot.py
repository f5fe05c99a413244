"""Search bots (issue 17): a bot export directory whose model card carries ``"search"`` plays its network inside
``az`` search through ``agents.nets.bot.Bot`` and ``bot:`` specs.

``python -m agents.nets.export`` writes one from a checkpoint (``--search``) or from another bot's directory (its
network, byte for byte); the card's search options are untrusted input and checked on load; the search bot searches
exactly as ``az`` on the same network does, is blind to hidden cards, and refuses to act from an observation alone (its
moves need the game state). The torch / exported agreement on a trained checkpoint is in ``tests/test_netsearch.py``
(the expert-iteration smoke run); the shipped ``classic-search`` in ``tests/test_shipped_bots.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.base import MODEL_CARD, AgentSpecError, make_agent
from agents.nets.az import AZAgent
from agents.nets.bot import Bot, BotPolicy
from agents.nets.bot_search import BotError
from agents.nets.export import export_bot, export_search_only
from agents.nets.mlp import ExportArgumentError
from agents.search.pimc import PIMCAgent
from scopa_env.engine import core, observation
from scopa_env.engine.core import Phase
from scopa_env.rules import get_rules
from tests.test_netsearch import random_net
from tests.test_search import decisions, random_positions, reshuffle_hidden

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def search_bot(tmp_path: Path) -> tuple[Path, Path]:
    """(a random classic network's bot directory, the search bot made from it with worlds=3, prior=1)."""
    src = random_net(tmp_path / "net", "classic", seed=1)
    export_bot(src, tmp_path / "search", search="worlds=3,prior=1", check_rows=64)
    return src, tmp_path / "search"


def test_export_bot_copies_the_network_and_adds_the_search(search_bot: tuple[Path, Path]) -> None:
    src, out = search_bot
    card = json.loads((out / MODEL_CARD).read_text())
    source = json.loads((src / MODEL_CARD).read_text())
    assert card["search"] == {"agent": "az", "worlds": 3, "prior": 1}
    assert card["files"]["policy.npz"] == source["files"]["policy.npz"]  # the same bytes
    assert card["network_from"]["path"] == str(src) and card["name"] == "random-classic-search"
    assert card["ratings"] == {} and card["checks"]["max_abs_diff_numpy_vs_source"] == 0.0
    bot = Bot.load(out, prefer="numpy")
    assert bot.search == {"worlds": 3, "prior": 1.0} and "search=az" in repr(bot)


def test_a_search_bot_keeps_its_networks_ratings(search_bot: tuple[Path, Path], tmp_path: Path) -> None:
    """A search bot made from a rated network-only bot carries that bot's ratings under network_from (they rate
    ``search=false``); its own ratings start empty, and a search bot made from a search bot keeps the network's ratings
    its source kept (the network is the same one; the source's own ratings rate its search)."""
    src, _ = search_bot
    card = json.loads((src / MODEL_CARD).read_text())
    rated = {"ratings": [{"agent": "net", "rating": 12.0}], "pairings": []}
    card["ratings"], card["more_ratings"] = rated, [{"ratings": [], "pairings": []}]
    (src / MODEL_CARD).write_text(json.dumps(card))
    first = export_bot(src, tmp_path / "s1", search="worlds=3", check_rows=16)
    assert first["network_from"]["ratings"] == rated and first["ratings"] == {}
    assert first["network_from"]["more_ratings"] == card["more_ratings"]
    assert "against_expert" not in first["network_from"]  # the source had none
    again = export_bot(tmp_path / "s1", tmp_path / "s2", search="worlds=4", check_rows=16)
    assert again["network_from"]["ratings"] == rated and again["network_from"]["path"] == str(tmp_path / "s1")


def test_a_bot_made_from_another_leaves_the_sources_verdict_against_expert(
    search_bot: tuple[Path, Path], tmp_path: Path
) -> None:
    """``against_expert`` rates the source bot: without ratings of its own the new bot's card has none (SOURCE_ONLY)."""
    src, _ = search_bot
    card = json.loads((src / MODEL_CARD).read_text())
    card["against_expert"] = {"beats_expert": True, "min_deals": 1000, "margins": []}
    (src / MODEL_CARD).write_text(json.dumps(card))
    made = export_bot(src, tmp_path / "s1", search="worlds=3", check_rows=16)
    assert "against_expert" not in made and made["ratings"] == {}


def test_a_search_bot_searches_as_az_on_its_network(search_bot: tuple[Path, Path]) -> None:
    src, out = search_bot
    rules = get_rules("classic")
    st = random_positions(rules, 12, 7, seed=2)
    agent = make_agent(f"bot:path={out}", rules, seed=5)
    assert isinstance(agent, AZAgent) and (agent.worlds, agent.prior) == (3, 1.0)
    az = make_agent(f"az:path={src},worlds=3,prior=1", rules, seed=5)
    assert np.array_equal(decisions(agent, rules, st, seed=5), decisions(az, rules, st, seed=5))
    # Blind to hidden cards: the unseen cards dealt again, the same moves.
    again = reshuffle_hidden(rules, st, np.random.default_rng(0))
    assert np.array_equal(decisions(agent, rules, st, seed=5), decisions(agent, rules, again, seed=5))
    # search=false: its network alone, as the source bot plays.
    net = make_agent(f"bot:path={out},search=false", rules, seed=0)
    plain = make_agent(f"bot:path={src}", rules, seed=0)
    assert isinstance(net, BotPolicy)
    assert np.array_equal(decisions(net, rules, st, 0, 1), decisions(plain, rules, st, 0, 1))
    assert make_agent(f"bot:path={out},endgame=2", rules).endgame == 2


def test_bot_act_state_searches_deterministically_and_legally(search_bot: tuple[Path, Path]) -> None:
    _, out = search_bot
    rules = get_rules("classic")
    st = random_positions(rules, 6, 9, seed=4)
    live = np.flatnonzero(st.phase != Phase.DONE)
    first = Bot.load(out, prefer="numpy").act_states(st, live)
    assert np.array_equal(first, Bot.load(out, prefer="numpy").act_states(st, live))  # a fresh load: the same
    mask = core.legal_action_mask(rules, st)
    assert mask[live, first].all()
    bot = Bot.load(out)
    assert bot.act_state(st, int(live[0])) in np.flatnonzero(mask[live[0]])
    with pytest.raises(BotError, match=r"search bot.*act_state"):
        bot.act(observation.observe(rules, st), mask)
    assert np.allclose(bot.probs(observation.observe(rules, st), mask).sum(axis=1), 1.0, atol=1e-5)  # its network


def test_a_pimc_search_bot_plays_pimc_and_its_network_alone(search_bot: tuple[Path, Path], tmp_path: Path) -> None:
    src, _ = search_bot
    out = tmp_path / "pimc"
    export_bot(src, out, search="pimc:worlds=3,endgame=4,prior=2", check_rows=64)
    card = json.loads((out / MODEL_CARD).read_text())
    assert card["search"] == {"agent": "pimc", "worlds": 3, "endgame": 4, "prior": 2}
    rules = get_rules("classic")
    st = random_positions(rules, 10, 7, seed=3)
    agent = make_agent(f"bot:path={out}", rules, seed=5)
    assert isinstance(agent, PIMCAgent) and (agent.worlds, agent.endgame, agent.prior) == (3, 4, 2.0)
    pimc = make_agent("pimc:worlds=3,endgame=4,prior=2", rules, seed=5)
    assert np.array_equal(decisions(agent, rules, st, seed=5), decisions(pimc, rules, st, seed=5))
    again = reshuffle_hidden(rules, st, np.random.default_rng(1))
    assert np.array_equal(decisions(agent, rules, st, seed=5), decisions(agent, rules, again, seed=5))
    assert "search=pimc" in repr(Bot.load(out))
    net = make_agent(f"bot:path={out},search=false", rules, seed=0)
    plain = make_agent(f"bot:path={src}", rules, seed=0)
    assert isinstance(net, BotPolicy)
    assert np.array_equal(decisions(net, rules, st, 0, 1), decisions(plain, rules, st, 0, 1))
    live = np.flatnonzero(st.phase != Phase.DONE)
    assert core.legal_action_mask(rules, st)[live, Bot.load(out).act_states(st, live)].all()


@pytest.mark.parametrize("search", ["pimc:temp=1", "pimc:rollout=net", "pimc:worlds=0", "mcts:worlds=2"])
def test_export_refuses_bad_pimc_options(search_bot: tuple[Path, Path], tmp_path: Path, search: str) -> None:
    with pytest.raises(ExportArgumentError):
        export_bot(search_bot[0], tmp_path / "bad", search=search, check_rows=64)
    assert not (tmp_path / "bad").exists()


def test_a_search_bot_refuses_to_sample(search_bot: tuple[Path, Path]) -> None:
    with pytest.raises(AgentSpecError, match="search=false"):
        make_agent(f"bot:path={search_bot[1]},sample=true", "classic")


@pytest.mark.parametrize(
    ("search", "match"),
    [
        ("az", "must be an object"),
        ({"agent": "mcts", "worlds": 4}, "must be an object"),
        ({"agent": "pimc", "temp": 1.0}, "unknown options \\['temp'\\]"),
        ({"agent": "pimc", "rollout": "net"}, "'rollout' of pimc must be one of"),
        ({"agent": "az", "worlds": 4, "exec": "import os"}, "unknown options \\['exec'\\]"),
        ({"agent": "az", "worlds": 0}, "'worlds' must be an integer in 1..1024"),
        ({"agent": "az", "worlds": 2.5}, "'worlds' must be an integer"),
        ({"agent": "az", "worlds": True}, "'worlds' must be an integer"),
        ({"agent": "az", "prior": float("nan")}, "'prior' must be a number"),
        ({"agent": "az", "prior": -1}, "'prior' must be a number"),
        ({"agent": "az", "rollout": "magic"}, "'rollout' of az must be one of"),
        ({"agent": "az", "rollout": "greedy", "temp": 1}, "'temp' > 0 needs rollout 'net'"),
    ],
)
def test_a_damaged_search_card_is_refused_on_load(search_bot: tuple[Path, Path], search: object, match: str) -> None:
    card_path = search_bot[1] / MODEL_CARD
    card = json.loads(card_path.read_text())
    card["search"] = search
    card_path.write_text(json.dumps(card))
    with pytest.raises(BotError, match=match):
        Bot.load(search_bot[1])
    with pytest.raises(AgentSpecError, match=match):
        make_agent(f"bot:path={search_bot[1]}", "classic")


def test_export_refuses_bad_search_options_before_writing(tmp_path: Path) -> None:
    src = random_net(tmp_path / "net", "classic")
    for bad, match in (("worlds=0", "'worlds' must be"), ("depth=2,magic=1", "unknown options"), ("x", "key=value")):
        with pytest.raises(ExportArgumentError, match=match):
            export_bot(src, tmp_path / "out", search=bad)
        assert not (tmp_path / "out").exists()
    with pytest.raises(ExportArgumentError, match="is the source bot directory"):
        export_bot(src, src, search="worlds=2")
    cmd = [sys.executable, "-m", "agents.nets.export", str(src), "--out", str(tmp_path / "cli")]
    proc = subprocess.run([*cmd, "--search", "worlds=9999"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "'worlds' must be an integer in 1..1024" in proc.stderr
    proc = subprocess.run([*cmd, "--endgame", "4"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "--endgame applies to a checkpoint" in proc.stderr
    assert not (tmp_path / "cli").exists()
    proc = subprocess.run([*cmd, "--search", "worlds=2"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "inside az:" in proc.stdout and Bot.load(tmp_path / "cli").search == {"worlds": 2}


def test_bot_latency_times_a_search_bots_search(search_bot: tuple[Path, Path]) -> None:
    cmd = [sys.executable, "bench/bot_latency.py", "--bot", str(search_bot[1]), "--calls", "3", "--batch", "8"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["search"] == {"worlds": 3, "prior": 1.0} and "act_state is its search" in proc.stdout
    assert out["results"]["numpy"]["act_state"]["median_us"] > 0
    # and its network as an agent plays it (search=false, the card's exact end game), from the deal to the last move
    assert out["policy"] == "endgame=0, endgame_worlds=0" and "policy: the network as an agent plays it" in proc.stdout
    assert out["results"]["numpy"]["policy"]["median_us"] > 0


def test_search_agreement_counts_overrides(search_bot: tuple[Path, Path]) -> None:
    from tests.test_fuzz_bench_scripts import load_script

    bench = load_script("search_agreement")
    src, out = search_bot
    same = bench.measure(f"bot:path={src}", f"bot:path={src}", hands=2, seed=0)  # the network against itself
    assert same["search_plays_the_networks_move"]["share"] == 1.0 and same["override_found_again"]["n"] == 0
    r = bench.measure(f"bot:path={out}", f"bot:path={src}", hands=2, seed=0)
    n = r["search_plays_the_networks_move"]["n"]
    assert n > 2 * 30 and r["search_agrees_with_itself"]["n"] == n
    overrides = round(n * (1 - r["search_plays_the_networks_move"]["share"]))
    assert overrides == r["override_found_again"]["n"] > 0  # a random network: the search overrides it often


def test_export_records_the_commands_and_the_cost_per_move(search_bot: tuple[Path, Path], tmp_path: Path) -> None:
    """``--commands FILE`` and ``--cost FILE.json`` fill the card's "commands" and "cost_per_move" (read as text and
    JSON only); a bad file is refused before anything is written, and a new export does not inherit the source's."""
    src, _ = search_bot
    commands = tmp_path / "commands.txt"
    commands.write_text(
        "# how this bot was made\npython -m agents.nets.export a --out b\n\n  python evaluate.py --hands 9  \n"
    )
    cost = tmp_path / "latency.json"
    cost.write_text('bot x (classic)\n{"act_state_us": {"median": 2.5}, "calls": 3}\n')  # bot_latency's last line
    cmd = [sys.executable, "-m", "agents.nets.export", str(src), "--out", str(tmp_path / "cli"), "--search", "worlds=2"]
    proc = subprocess.run(
        [*cmd, "--commands", str(commands), "--cost", str(cost)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    card = json.loads((tmp_path / "cli" / MODEL_CARD).read_text())
    assert card["commands"] == ["python -m agents.nets.export a --out b", "python evaluate.py --hands 9"]
    assert card["cost_per_move"] == {"act_state_us": {"median": 2.5}, "calls": 3}
    (tmp_path / "pretty.json").write_text(json.dumps({"median_ms": 23.7, "p99_ms": 48.6}, indent=2))
    pretty = export_bot(src, tmp_path / "pretty", search="worlds=2", cost=tmp_path / "pretty.json", check_rows=16)
    assert pretty["cost_per_move"] == {"median_ms": 23.7, "p99_ms": 48.6}  # a whole JSON file, indented
    again = export_bot(tmp_path / "cli", tmp_path / "again", search="worlds=3", check_rows=16)
    assert "commands" not in again and "cost_per_move" not in again  # they describe the source bot
    (tmp_path / "empty.txt").write_text("# nothing\n\n")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    bad_cases = (
        ({"commands": tmp_path / "missing.txt"}, "no such file"),
        ({"commands": tmp_path / "empty.txt"}, "no command in it"),
        ({"commands": ["ok", 3]}, "list of command lines"),
        ({"cost": tmp_path / "list.json"}, "not an object"),
        ({"cost": tmp_path / "bad.json"}, "not JSON"),
        ({"cost": tmp_path / "deep.json"}, "nests too deeply"),
    )
    for kwargs, match in bad_cases:
        with pytest.raises(ExportArgumentError, match=match):
            export_bot(src, tmp_path / "out", search="worlds=2", **kwargs)  # type: ignore[arg-type]
        assert not (tmp_path / "out").exists()
    proc = subprocess.run(
        [*cmd[:5], str(tmp_path / "cli2"), "--cost", str(tmp_path / "bad.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and "--cost" in proc.stderr and "not JSON" in proc.stderr
    assert not (tmp_path / "cli2").exists()


def test_a_search_bot_may_add_the_expert_prior(search_bot: tuple[Path, Path], tmp_path: Path) -> None:
    """``--search worlds=3,expert=1`` ships az with pimc's expert heuristic beside the network's prior; the card's
    number is checked like the others (a negative or huge weight is refused on load)."""
    src, _ = search_bot
    export_bot(src, tmp_path / "e", search="worlds=3,prior=0.5,expert=1", check_rows=16)
    bot = Bot.load(tmp_path / "e")
    assert bot.search == {"worlds": 3, "prior": 0.5, "expert": 1.0}
    agent = make_agent(f"bot:path={tmp_path / 'e'}", "classic", seed=1)
    assert isinstance(agent, AZAgent) and agent.expert == 1.0
    card_path = tmp_path / "e" / MODEL_CARD
    card = json.loads(card_path.read_text())
    card["search"]["expert"] = -1
    card_path.write_text(json.dumps(card))
    with pytest.raises(BotError, match="'expert' must be a number in"):
        Bot.load(tmp_path / "e")


def test_a_search_only_bot_plays_pimc_without_a_network(tmp_path: Path) -> None:
    out = tmp_path / "s3"
    card = export_search_only("simple-3", out, "pimc:worlds=3,prior=2", name="s3-pimc")
    assert card["architecture"] is None and card["search"] == {"agent": "pimc", "worlds": 3, "prior": 2}
    assert sorted(p.name for p in out.iterdir()) == [MODEL_CARD]
    rules = get_rules("simple-3")
    st = random_positions(rules, 8, 7, seed=6)
    agent = make_agent(f"bot:path={out}", rules, seed=5)
    assert isinstance(agent, PIMCAgent)
    pimc = make_agent("pimc:worlds=3,prior=2", rules, seed=5)
    assert np.array_equal(decisions(agent, rules, st, seed=5), decisions(pimc, rules, st, seed=5))
    bot = Bot.load(out)
    assert not bot.has_network and bot.backend == "numpy"
    live = np.flatnonzero(st.phase != Phase.DONE)
    assert core.legal_action_mask(rules, st)[live, bot.act_states(st, live)].all()
    with pytest.raises(BotError, match="search-only bot"):
        bot.probs(observation.observe(rules, st), core.legal_action_mask(rules, st))
    with pytest.raises(AgentSpecError, match="no network to play alone"):
        make_agent(f"bot:path={out},search=false", rules)
    with pytest.raises(AgentSpecError, match="search-only bot"):
        make_agent(f"az:path={out}", rules)


def test_a_search_only_card_must_be_pimc(tmp_path: Path) -> None:
    out = tmp_path / "s3"
    export_search_only("simple-3", out, "pimc:worlds=3")
    card_path = out / MODEL_CARD
    card = json.loads(card_path.read_text())
    card["search"] = {"agent": "az", "worlds": 3}  # az without a network: it must not load as a search-only bot
    card_path.write_text(json.dumps(card))
    with pytest.raises(BotError):
        Bot.load(out)


@pytest.mark.parametrize(
    ("variant", "search", "match"),
    [
        ("simple-3", "worlds=8", "plays pimc"),
        ("simple-3", None, "needs --search"),
        ("nonsense", "pimc:worlds=8", "not a variant"),
        ("simple-3", "pimc:temp=1", "unknown options"),
    ],
)
def test_export_search_only_refuses_bad_arguments(tmp_path: Path, variant: str, search: object, match: str) -> None:
    with pytest.raises(ExportArgumentError, match=match):
        export_search_only(variant, tmp_path / "x", search)  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()


def test_export_command_writes_a_search_only_bot(tmp_path: Path) -> None:
    out = tmp_path / "s5"
    done = subprocess.run(
        [sys.executable, "-m", "agents.nets.export", "simple-5", "--search", "pimc:worlds=4", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "search-only bot of simple-5" in done.stdout
    assert Bot.load(out).search == {"worlds": 4}
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.nets.export",
            "simple-5",
            "--search",
            "pimc:worlds=4",
            "--out",
            str(out),
            "--endgame",
            "3",
            "--force",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert bad.returncode == 2 and "--endgame applies to a network" in bad.stderr
