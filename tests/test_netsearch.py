"""Tests of the network-guided search ``az`` (agents/nets/netsearch.py) and of expert iteration
(agents/training/expert_iteration.py).

``az`` plays only legal actions in every variant, is deterministic for a seed and blind to hidden cards (the unseen
cards are dealt again and the decisions must not change; ``tests/test_search.py`` shows the check can fail). The
expert-iteration smoke run writes a checkpoint that ``az``, ``neural`` and the exported bot all load, and the
torch-free and torch versions of the network choose the same moves, alone and inside the search (an exported
search bot, ``--search``, against ``az`` on the torch checkpoint).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from agents.base import AgentSpecError, load_network, make_agent
from agents.nets.az import AZAgent, NetEvaluator
from agents.nets.bot import new_card, write_numpy_export
from scopa_env.engine import core, observation
from scopa_env.engine.core import Phase
from scopa_env.games.driver import play
from scopa_env.games.policy import ActBatch
from scopa_env.rules import CIRULLA_VARIANTS, Rules, get_rules
from tests.helpers import SCOPA_VARIANTS, assert_blind_to_hidden_cards, decisions, random_positions

CLASSIC_BOT = Path(__file__).resolve().parents[1] / "agents" / "bots" / "classic"


def random_net(directory: Path, variant: str, seed: int = 0, hidden: int = 24) -> Path:
    """A bot export directory holding a small random network for ``variant`` (weights ``(out, in)``)."""
    rules = get_rules(variant)
    rng = np.random.default_rng(seed)
    sizes = [observation.observation_size(rules), hidden, rules.num_cards]
    layers = [
        (rng.normal(0, 0.3, (b, a)).astype(np.float32), rng.normal(0, 0.1, b).astype(np.float32))
        for a, b in itertools.pairwise(sizes)
    ]
    return write_numpy_export(directory, new_card(rules, layers, "relu", name=f"random-{variant}"), layers, "relu")


@pytest.mark.parametrize("variant", SCOPA_VARIANTS)
def test_az_picks_legal_actions_in_every_variant(variant: str, tmp_path: Path) -> None:
    rules = get_rules(variant)
    net = random_net(tmp_path / "net", variant)
    agent = make_agent(f"az:path={net},worlds=2,endgame=4", rules, seed=1)
    assert isinstance(agent, AZAgent)
    for plies in (4, 3 * rules.num_players + 7):
        st = random_positions(rules, 6, plies, seed=plies)
        rows = np.flatnonzero(st.phase != Phase.DONE)
        mask = core.legal_action_mask(rules, st)[rows]
        actions = agent.act(ActBatch(rules, observation.observe(rules, st)[rows], mask, st, rows))
        assert mask[np.arange(rows.size), actions].all(), f"az: illegal action in {variant}"


@pytest.mark.parametrize("variant", list(CIRULLA_VARIANTS))
def test_az_plays_whole_cirulla_hands(variant: str) -> None:
    """Knock decisions (the search agents' fixed rule), fifteens and STOP picks included; a random network."""
    rules = CIRULLA_VARIANTS[variant]
    rng = np.random.default_rng(0)
    sizes = [observation.observation_size(rules), 16, rules.num_actions]
    layers = [
        (rng.normal(0, 0.3, (a, b)).astype(np.float32), np.zeros(b, np.float32)) for a, b in itertools.pairwise(sizes)
    ]
    agent = AZAgent(rules, NetEvaluator(rules, layers, "relu", "random network"), seed=1, worlds=2)
    lineups = np.zeros((3, rules.num_players), dtype=np.int64)
    res = play(rules, [agent], lineups, np.arange(3, dtype=np.uint64), mode="hands")  # core.step refuses illegal
    assert (res.hands == 1).all()


def test_az_plays_whole_hands_with_both_rollouts() -> None:
    rules = get_rules("classic")
    agents = [
        make_agent(f"az:path={CLASSIC_BOT},worlds=3", rules, seed=1),
        make_agent(f"az:path={CLASSIC_BOT},worlds=2,rollout=greedy,prior=0", rules, seed=2),
    ]
    res = play(rules, agents, np.array([[0, 1], [1, 0]]), np.array([21, 22], dtype=np.uint64), mode="hands")
    assert (res.hands == 1).all()


@pytest.mark.parametrize("options", ["worlds=4", "worlds=4,temp=1", "worlds=4,expert=1"])
def test_az_is_deterministic_for_a_seed(options: str) -> None:
    rules = get_rules("classic")
    st = random_positions(rules, 12, 8, seed=12)
    spec = f"az:path={CLASSIC_BOT},{options}"
    a = decisions(make_agent(spec, rules, seed=5), rules, st, seed=5)
    b = decisions(make_agent(spec, rules, seed=99), rules, st, seed=5)  # reseeding restores the same stream
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("variant", "options"),
    [("classic", ""), ("classic", ",temp=1"), ("classic", ",expert=1"), ("scopa-a-quattro", ",expert=0.5")],
)
def test_az_is_blind_to_hidden_cards(variant: str, options: str, tmp_path: Path) -> None:
    rules = get_rules(variant)
    net = CLASSIC_BOT if variant == "classic" else random_net(tmp_path / "net", variant)
    assert_blind_to_hidden_cards(make_agent(f"az:path={net},worlds=3{options}", rules, seed=0), rules)


def test_az_options_are_checked(tmp_path: Path) -> None:
    rules = get_rules("classic")
    with pytest.raises(AgentSpecError, match="needs a network"):
        make_agent("az", rules)
    with pytest.raises(AgentSpecError, match="does not exist"):
        make_agent(f"az:path={tmp_path / 'nothing'}", rules)
    with pytest.raises(AgentSpecError, match="worlds must be >= 1"):
        make_agent(f"az:path={CLASSIC_BOT},worlds=0", rules)
    with pytest.raises(AgentSpecError, match="rollout must be"):
        make_agent(f"az:path={CLASSIC_BOT},rollout=magic", rules)
    for bad in ("temp=-1", "temp=1,rollout=greedy"):
        with pytest.raises(AgentSpecError, match="temp must be >= 0 and needs rollout=net"):
            make_agent(f"az:path={CLASSIC_BOT},{bad}", rules)
    with pytest.raises(AgentSpecError, match="expert must be >= 0"):
        make_agent(f"az:path={CLASSIC_BOT},expert=-1", rules)
    quattro = random_net(tmp_path / "q", "scopa-a-quattro")
    with pytest.raises(AgentSpecError):  # a network of another variant's size
        load_network(rules, str(quattro))


def assert_checkpoint_and_export_agree(rules: Rules, st: core.State, checkpoint: Path, export: Path) -> None:
    """The fast faces: the torch checkpoint and its exported numpy bot choose the same actions on ``st``'s
    positions."""
    rows = np.flatnonzero(st.phase != Phase.DONE)
    batch = ActBatch(rules, observation.observe(rules, st)[rows], core.legal_action_mask(rules, st)[rows], st, rows)
    torch_net = make_agent(f"neural:path={checkpoint}", rules, seed=0)
    numpy_bot = make_agent(f"bot:path={export},prefer=numpy", rules, seed=0)
    assert np.array_equal(torch_net.act(batch), numpy_bot.act(batch))


def test_expert_iteration_smoke_run_writes_a_checkpoint_every_face_loads(tmp_path: Path) -> None:
    from agents.training.expert_iteration import main

    code = main(
        [
            "--hands", "4", "--chunk", "2", "--workers", "1", "--iterations", "1", "--eval-deals", "2",
            "--eval-opponents", "greedy", "--teacher", "az:worlds=2", "--run-root", str(tmp_path), "--name", "smoke",
            "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    run = tmp_path / "classic__smoke__0"
    assert (run / "last.zip").is_file() and (run / "eval.png").is_file() and (run / "nets" / "iter_1").is_dir()
    rules = get_rules("classic")
    st = random_positions(rules, 16, 5, seed=3)
    assert_checkpoint_and_export_agree(rules, st, run / "last.zip", run / "nets" / "iter_1")
    # The search faces: az on the checkpoint and az on the exported directory search alike, move for move.
    za = decisions(make_agent(f"az:path={run / 'last.zip'},worlds=3", rules, seed=4), rules, st, seed=4, calls=1)
    zb = decisions(make_agent(f"az:path={run / 'nets' / 'iter_1'},worlds=3", rules, seed=4), rules, st, 4, calls=1)
    assert np.array_equal(za, zb)
    # The shipped kind of search bot: the checkpoint exported with --search plays az's moves on the checkpoint.
    from agents.nets.export import export_checkpoint

    export_checkpoint(run / "last.zip", tmp_path / "search-bot", search="worlds=3", check_rows=64)
    zc = decisions(make_agent(f"bot:path={tmp_path / 'search-bot'}", rules, seed=4), rules, st, seed=4, calls=1)
    assert np.array_equal(za, zc)
    # A second leg resumes where the first stopped.
    assert main(["--resume", str(run), "--iterations", "2", "--no-progress"]) == 0
    assert (run / "nets" / "iter_2").is_dir()


def test_sampled_rollouts_follow_the_networks_softmax() -> None:
    """temp=T plays cards in proportion to softmax(logits / T) over the legal cards; temp=0 is the argmax."""
    from agents.nets.az import net_rollout_policy

    rules = get_rules("classic")
    net = load_network(rules, str(CLASSIC_BOT))
    st = core.reset(rules, np.full(4000, 3, dtype=np.uint64))  # one position, 4000 times
    games = np.arange(st.batch_size, dtype=np.intp)
    logits = net.state_logits(st.take(np.array([0])))[0].astype(np.float64)
    hand = np.flatnonzero(st.hands[0, int(st.current[0])])
    p = np.exp(logits[hand] / 8.0 - (logits[hand] / 8.0).max())
    p /= p.sum()
    assert p.max() < 0.9, "the network is too sure of this position for the test to tell sampling from argmax"
    rng = np.random.default_rng(0)
    moves, best = net_rollout_policy(net, temp=8.0, rng=lambda: rng)(rules, st, games)
    played = moves.card[best]
    freq = np.array([(played == c).mean() for c in hand])
    assert np.abs(freq - p).max() < 0.03, (freq, p)  # 4000 draws: the standard error is under 0.008
    moves, best = net_rollout_policy(net)(rules, st, games)
    assert (moves.card[best] == hand[np.argmax(logits[hand])]).all()


def tiny_exit_argv(run_root: Path, name: str, iterations: int) -> list[str]:
    """``agents.training.expert_iteration`` arguments of a run of two-hand iterations (classic), in ``run_root``."""
    return [
        "--hands", "2", "--chunk", "2", "--workers", "1", "--iterations", str(iterations), "--eval-deals", "2",
        "--eval-opponents", "greedy", "--teacher", "az:worlds=1", "--run-root", str(run_root), "--name", name,
        "--no-progress",
    ]  # fmt: skip


def test_expert_iteration_stopped_mid_iteration_resumes_it_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C during an iteration's evaluation: nothing of that iteration is kept (last.zip, state.json), so the
    next leg redoes it from the network it started with instead of fitting an already-fitted network again."""
    from agents.training import expert_iteration as ei

    real = ei.ExpertIteration._evaluate

    def evaluate(self: ei.ExpertIteration, net: Path, k: int) -> dict:
        if k == 1:
            raise KeyboardInterrupt
        return real(self, net, k)

    monkeypatch.setattr(ei.ExpertIteration, "_evaluate", evaluate)
    assert ei.main(tiny_exit_argv(tmp_path, "stop", iterations=1)) == 130
    run = tmp_path / "classic__stop__0"
    assert "--resume" in capsys.readouterr().err
    assert not (run / "last.zip").exists() and not (run / "state.json").exists()
    monkeypatch.setattr(ei.ExpertIteration, "_evaluate", real)
    assert ei.main(["--resume", str(run), "--no-progress"]) == 0
    assert json.loads((run / "state.json").read_text())["iteration"] == 1 and (run / "last.zip").is_file()


@pytest.mark.parametrize("lost", [False, True])
def test_expert_iteration_stops_on_sigterm_keeping_the_finished_iterations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], lost: bool
) -> None:
    """SIGTERM during iteration 2's evaluation stops the leg with status 143, iteration 1 kept and iteration 2 not;
    also when the handler's exception is lost (numpy can discard it): the run checks for the signal between stages.
    The next leg redoes iteration 2."""
    import os
    import signal

    from agents.cli.signals import SignalStop
    from agents.training import expert_iteration as ei

    real = ei.ExpertIteration._evaluate

    def evaluate(self: ei.ExpertIteration, net: Path, k: int) -> dict:
        if k == 2:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):  # the handler runs between two bytecodes of the main thread
                    pass
            except SignalStop:
                if not lost:
                    raise
        return real(self, net, k)

    monkeypatch.setattr(ei.ExpertIteration, "_evaluate", evaluate)
    before = signal.getsignal(signal.SIGTERM)
    assert ei.main(tiny_exit_argv(tmp_path, "term", iterations=2)) == 143
    err = capsys.readouterr().err
    assert "SIGTERM" in err and "1 iteration(s)" in err and "--resume" in err
    run = tmp_path / "classic__term__0"
    assert json.loads((run / "state.json").read_text())["iteration"] == 1
    assert signal.getsignal(signal.SIGTERM) == before  # the handlers are put back
    monkeypatch.setattr(ei.ExpertIteration, "_evaluate", real)
    assert ei.main(["--resume", str(run), "--no-progress"]) == 0
    assert json.loads((run / "state.json").read_text())["iteration"] == 2


def test_az_expert_prior_adds_pimcs_heuristic_to_the_networks() -> None:
    """``expert=w`` adds w times the expert heuristic (pimc's prior) to the margins: ``move_margins`` gets the real
    position's candidates scored prior x log p(card) + w x expert, so with the same worlds the margins differ from
    ``expert=0`` by exactly w x expert on each candidate (the end game, solved exactly, keeps no prior)."""
    from agents.baselines.features import dynamic_weights, expert_scores, generate_moves
    from scopa_env.engine.state_moves import remaining_plies

    rules = get_rules("classic")
    st = random_positions(rules, 10, 4, seed=21)
    games = np.flatnonzero((st.phase != Phase.DONE) & (remaining_plies(rules, st, np.arange(10)) > 6))
    assert games.size >= 3, "too few positions before the end game: the test is void"
    plain = make_agent(f"az:path={CLASSIC_BOT},worlds=3,prior=0.5", rules, seed=4)
    both = make_agent(f"az:path={CLASSIC_BOT},worlds=3,prior=0.5,expert=2", rules, seed=4)
    plain.seed(4)
    both.seed(4)
    _, m0, _ = plain.search(st, games)
    _, m1, _ = both.search(st, games)
    real = generate_moves(rules, st, games, dynamic_weights(rules, st, games))
    extra = np.zeros_like(m0)
    extra[real.row, np.arange(len(real)) - real.starts[real.row]] = 2 * expert_scores(rules, st, real)
    finite = np.isfinite(m0)
    assert np.array_equal(finite, np.isfinite(m1)) and extra[finite].any()
    np.testing.assert_allclose(m1[finite], m0[finite] + extra[finite], atol=1e-9)
