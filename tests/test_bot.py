"""``agents.nets.bot``: the bot never picks a masked action, acts from states, checks its rules, plays as an agent in
the arena and the envs, pickles, and loads and acts without torch or stable-baselines3."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.base import MODEL_CARD, AgentSpecError, make_agent, registered_agents
from agents.nets.bot import Bot, BotPolicy, is_export_dir, make_bot_policy, masked_softmax
from agents.nets.bot_search import BotError
from agents.nets.export_onnx import sample_inputs
from agents.nets.weights import ONNX, WEIGHTS
from scopa_env.engine import core, observation
from scopa_env.games.driver import play as arena_play
from scopa_env.games.policy import ActBatch, RandomAgent
from scopa_env.rules import get_rules
from tests.helpers import pretend_no_shipped_bot

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("numpy", "onnx")


@pytest.fixture(scope="module")
def bot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of a tiny MaskablePPO model with large random weights (so its choices are not uniform)."""
    pytest.importorskip("sb3_contrib")
    from agents.nets.export import export_checkpoint
    from tests.test_export import make_checkpoint

    d = tmp_path_factory.mktemp("bot")
    ckpt = make_checkpoint(d / "ckpt.zip", hidden=(24, 24), scale=0.5, seed=11)
    export_checkpoint(ckpt, d / "bot", check_rows=128)
    return d / "bot"


def reseal(directory: Path) -> None:
    """Record the current sha256 of the directory's files in its model card (as a forger would)."""
    card = json.loads((directory / MODEL_CARD).read_text())
    for name in (WEIGHTS, ONNX):
        if (directory / name).exists():
            card["files"][name] = {"sha256": hashlib.sha256((directory / name).read_bytes()).hexdigest()}
    (directory / MODEL_CARD).write_text(json.dumps(card))


def random_masks(rng: np.random.Generator, rows: int, d: int = 40) -> np.ndarray:
    """Masks with 1, 2, a few or all legal actions."""
    mask = np.zeros((rows, d), dtype=np.bool_)
    for i in range(rows):
        k = (1, 2, int(rng.integers(1, d + 1)), d)[i % 4]
        mask[i, rng.choice(d, size=k, replace=False)] = True
    return mask


@pytest.mark.parametrize("prefer", BACKENDS)
def test_never_picks_a_masked_action(bot_dir: Path, prefer: str) -> None:
    bot = Bot.load(bot_dir, prefer=prefer)  # type: ignore[arg-type]
    assert bot.backend == prefer
    rng = np.random.default_rng(0)
    obs = rng.random((4000, bot.obs_size), dtype=np.float32)
    mask = random_masks(rng, 4000)
    for actions in (bot.act(obs, mask), bot.act(obs, mask, rng=np.random.default_rng(1))):
        assert actions.dtype == np.int64 and actions.shape == (4000,)
        assert mask[np.arange(4000), actions].all()
    single = mask.sum(axis=1) == 1
    assert (bot.act(obs, mask)[single] == mask[single].argmax(axis=1)).all()
    p = bot.probs(obs, mask)
    assert (p[~mask] == 0).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    # greedy actions are the most probable legal ones
    assert (p[np.arange(4000), bot.act(obs, mask)] >= p.max(axis=1) - 1e-6).all()


def test_backends_agree(bot_dir: Path) -> None:
    rules = get_rules("classic")
    obs, mask = sample_inputs(rules, 1000, seed=3)
    p_np = Bot.load(bot_dir, prefer="numpy").probs(obs, mask)
    p_ox = Bot.load(bot_dir, prefer="onnx").probs(obs, mask)
    assert np.abs(p_np - p_ox).max() <= 1e-5
    np.testing.assert_allclose(masked_softmax(np.log(p_np + 1e-30), mask), p_np, atol=1e-5)


def test_sampling_follows_the_probabilities(bot_dir: Path) -> None:
    bot = Bot.load(bot_dir, prefer="numpy")
    rng = np.random.default_rng(5)
    obs = np.repeat(rng.random((1, bot.obs_size), dtype=np.float32), 20000, axis=0)
    mask = np.zeros((20000, 40), dtype=np.bool_)
    mask[:, [3, 17, 25, 38]] = True
    p = bot.probs(obs[:1], mask[:1])[0]
    counts = np.bincount(bot.act(obs, mask, rng=rng), minlength=40) / 20000
    np.testing.assert_allclose(counts[[3, 17, 25, 38]], p[[3, 17, 25, 38]], atol=0.015)


@pytest.mark.parametrize("prefer", BACKENDS)
def test_acts_from_game_states(bot_dir: Path, prefer: str) -> None:
    rules = get_rules("classic")
    bot = Bot.load(bot_dir, prefer=prefer)  # type: ignore[arg-type]
    state = core.reset(rules, np.arange(6, dtype=np.uint64))
    for _ in range(150):  # the bot plays every seat of six games, CHOOSE picks included
        if state.done.all():
            break
        live = np.flatnonzero(~state.done)
        actions = np.zeros(6, dtype=np.int64)
        actions[live] = bot.act_states(state, live)
        for g in live[:2]:
            assert bot.act_state(state, int(g)) == actions[g]
        obs, mask = observation.observe(rules, state), core.legal_action_mask(rules, state)
        assert (bot.act(obs[live], mask[live]) == actions[live]).all()
        np.testing.assert_array_equal(bot.probs_state(state, live), bot.probs(obs[live], mask[live]))
        assert bot.act_one(obs[live[0]], mask[live[0]]) == actions[live[0]]
        core.step(rules, state, actions)  # raises on an illegal action
    one = core.reset(rules, [9])
    one.phase[0] = core.Phase.DONE
    with pytest.raises(BotError, match="is over"):
        bot.act_state(one)


def test_bad_inputs_are_explained(bot_dir: Path) -> None:
    bot = Bot.load(bot_dir, prefer="numpy")
    obs = np.zeros((2, bot.obs_size), dtype=np.float32)
    with pytest.raises(BotError, match=r"obs must have shape \(n, 336\)"):
        bot.act(obs[0], np.ones(40, bool))
    with pytest.raises(BotError, match="mask must have shape"):
        bot.act(obs, np.ones((2, 39), bool))
    mask = np.ones((2, 40), bool)
    mask[1] = False
    with pytest.raises(BotError, match="mask row 1 allows no action"):
        bot.probs(obs, mask)
    # a 0/1 float mask works like a bool one
    m = np.zeros((2, 40), np.float32)
    m[:, 4] = 1.0
    assert (bot.act(obs, m) == 4).all()


def test_rules_and_card_checks(bot_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(BotError, match=r"trained for 'classic', not 'classic-15'.*any_variant"):
        Bot.load(bot_dir, rules="classic-15")
    assert Bot.load(bot_dir, rules="classic-15", any_variant=True).rules.name == "classic-15"
    size = observation.observation_size("scopa-a-quattro")
    with pytest.raises(BotError, match=f"'scopa-a-quattro' has {size} and 40"):
        Bot.load(bot_dir, rules="scopa-a-quattro", any_variant=True)
    copy = tmp_path / "copy"
    shutil.copytree(bot_dir, copy)
    card = json.loads((copy / MODEL_CARD).read_text())
    card["obs_version"] = observation.OBS_VERSION + 1
    (copy / MODEL_CARD).write_text(json.dumps(card))
    with pytest.raises(BotError, match="observation version"):
        Bot.load(copy)
    (copy / MODEL_CARD).unlink()
    assert not is_export_dir(copy) and is_export_dir(bot_dir)
    with pytest.raises(BotError, match=r"model_card\.json is missing.*agents\.nets\.export"):
        Bot.load(copy)
    with pytest.raises(BotError, match="does not exist"):
        Bot.load(tmp_path / "nowhere")
    with pytest.raises(BotError, match="prefer must be"):
        Bot.load(bot_dir, prefer="gpu")  # type: ignore[arg-type]
    shutil.copy(bot_dir / MODEL_CARD, copy / MODEL_CARD)
    with np.load(copy / WEIGHTS) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["w1"] = arrays["w1"][:, :5]
    np.savez(copy / WEIGHTS, **arrays)
    reseal(copy)
    with pytest.raises(BotError, match="layer 1 has weights"):
        Bot.load(copy)


def test_agent_spec_factory(bot_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_no_shipped_bot(monkeypatch, "simple-2")
    assert "bot" in registered_agents()
    rules = get_rules("classic")
    policy = make_bot_policy(rules, 0, path=str(bot_dir), prefer="numpy")
    assert isinstance(policy, BotPolicy) and policy.bot.backend == "numpy"
    assert make_bot_policy(rules, 1, path=str(bot_dir), prefer="numpy").bot is policy.bot  # loads are cached
    with pytest.raises(AgentSpecError, match="no shipped bot plays 'simple-2'"):
        make_bot_policy(get_rules("simple-2"), 0)
    with pytest.raises(AgentSpecError, match="trained for 'classic'"):
        make_bot_policy(get_rules("classic-21"), 0, path=str(bot_dir))
    assert make_bot_policy(get_rules("classic-21"), 0, path=str(bot_dir), any_variant=True).rules.name == "classic-21"


@pytest.mark.parametrize("prefer", BACKENDS)
def test_plays_whole_matches_in_the_arena(bot_dir: Path, prefer: str) -> None:
    rules = get_rules("classic")
    bot = make_bot_policy(rules, 0, path=str(bot_dir), prefer=prefer)
    sampler = make_bot_policy(rules, 0, path=str(bot_dir), prefer=prefer, sample=True)
    lineups = np.array([[0, 1], [1, 0], [0, 2], [2, 0]] * 2)
    res = arena_play(rules, [bot, RandomAgent(rules, 0), sampler], lineups, np.arange(8), mode="matches")
    assert (res.winner >= 0).all() and (res.scores.max(axis=1) >= 11).all()


def test_opponent_in_the_env(bot_dir: Path) -> None:
    pytest.importorskip("gymnasium")
    from scopa_env.envs.gym import ScopaEnv

    rules = get_rules("classic")
    env = ScopaEnv("classic", opponents=make_bot_policy(rules, 0, path=str(bot_dir)))
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(200):
        mask = env.action_masks()
        _, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated or truncated:
            break
    assert terminated or truncated


def test_pickles_for_worker_processes(bot_dir: Path) -> None:
    rules = get_rules("classic")
    policy = make_bot_policy(rules, 0, path=str(bot_dir), prefer="onnx")
    clone = pickle.loads(pickle.dumps(policy))
    assert clone.bot.backend == "onnx"
    obs, mask = sample_inputs(rules, 100, seed=1)
    batch = ActBatch(rules, obs, mask)
    assert (clone.act(batch) == policy.act(batch)).all()
    np.testing.assert_array_equal(clone.action_probs(batch), policy.action_probs(batch))


def test_loads_and_acts_without_torch_or_stable_baselines3(bot_dir: Path) -> None:
    code = f"""
import sys, numpy as np
from agents.nets.bot import Bot, make_bot_policy
from scopa_env.engine import core, observation
for prefer in ("onnx", "numpy"):
    bot = Bot.load({str(bot_dir)!r}, prefer=prefer)
    state = core.reset("classic", [1, 2])
    a = bot.act_state(state, 1)
    assert core.legal_action_mask("classic", state)[1, a]
    p = bot.probs(observation.observe("classic", state), core.legal_action_mask("classic", state))
    print(prefer, bot.backend, a, round(float(p.sum()), 4))
make_bot_policy("classic", 0, path={str(bot_dir)!r})
# (gymnasium may load: import scopa_env registers the Gymnasium ids; it is light and a core dependency)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "stable_baselines3", "sb3_contrib", "pettingzoo"))
print("heavy:", heavy)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "heavy: []" in proc.stdout
    assert "onnx onnx" in proc.stdout and "numpy numpy" in proc.stdout


def test_endgame_option_plays_the_exact_solver_in_open_endgames_only() -> None:
    from agents.base import make_agent
    from tests.helpers import check_endgame_option

    rules = get_rules("classic")
    shipped = str(ROOT / "agents" / "bots" / "classic")
    plain = make_agent(f"bot:path={shipped},search=false,endgame=0", rules)  # its network (its default: pimc)
    exact = make_agent(f"bot:path={shipped},search=false,endgame=8", rules)
    obs, mask = check_endgame_option(rules, plain, exact)
    with pytest.raises(AgentSpecError, match="endgame must be >= 0"):
        make_agent(f"bot:path={shipped},endgame=-1", rules)
    with pytest.raises(AgentSpecError, match="endgame_worlds is for the network alone: add search=false"):
        make_agent(f"bot:path={shipped},endgame_worlds=8", rules)
    for worlds in (1025, 10**9, 2**64):  # the model card's bound, 0..1024 (10**9 deals would ask for 849 GiB)
        with pytest.raises(AgentSpecError, match=r"endgame_worlds must be >= 0 sampled deals and at most 1024"):
            make_agent(f"bot:path={shipped},search=false,endgame_worlds={worlds}", rules)
    with pytest.raises(AgentSpecError, match=r"at most 1024"):
        BotPolicy(rules, plain.bot, endgame=8, endgame_worlds=10**9)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="needs the game state"):
        exact.act(ActBatch(rules, obs[:1], mask[:1]))


def copy_bot(bot_dir: Path, to: Path) -> Path:
    shutil.copytree(bot_dir, to)
    return to


def test_files_that_do_not_match_the_model_card_are_refused(bot_dir: Path, tmp_path: Path) -> None:
    """The card's sha256 of each file used to be ignored: a changed policy.npz (NaN weights) loaded and played."""
    d = copy_bot(bot_dir, tmp_path / "changed")
    with np.load(d / WEIGHTS) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["w0"] = arrays["w0"].copy()
    arrays["w0"][0, 0] = np.nan
    np.savez(d / WEIGHTS, **arrays)
    with pytest.raises(BotError, match=r"policy\.npz does not match its model card: sha256 .*--force"):
        Bot.load(d, prefer="numpy")
    reseal(d)  # a consistent card does not make NaN weights playable
    with pytest.raises(BotError, match="layer 0 holds NaN or infinite weights"):
        Bot.load(d, prefer="numpy")
    d2 = copy_bot(bot_dir, tmp_path / "onnx")
    (d2 / ONNX).write_bytes((d2 / ONNX).read_bytes()[:-10])
    with pytest.raises(BotError, match=r"policy\.onnx does not match its model card"):
        Bot.load(d2, prefer="onnx")
    assert Bot.load(d2, prefer="numpy").backend == "numpy"  # the numpy path does not read policy.onnx


def test_an_onnx_file_of_another_network_is_refused(bot_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    d = copy_bot(bot_dir, tmp_path / "swapped")
    shutil.copy(ROOT / "agents" / "bots" / "classic" / ONNX, d / ONNX)  # same inputs and outputs, other weights
    reseal(d)
    with pytest.raises(BotError, match=r"does not compute the policy of policy\.npz.*prefer='numpy'"):
        Bot.load(d, prefer="onnx")


class _Payload:
    """Unpickling this creates the file ``path``: the proof that loading ran code from a file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def test_loading_a_bot_never_runs_code_from_its_files(bot_dir: Path, tmp_path: Path) -> None:
    """A pickled object in policy.npz, a custom operator in policy.onnx, a crafted card: refused, nothing runs."""
    marker = tmp_path / "payload-ran"
    d = copy_bot(bot_dir, tmp_path / "pickled")
    with np.load(d / WEIGHTS) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["activation"] = np.array([_Payload(marker)], dtype=object)  # np.savez pickles object arrays
    np.savez(d / WEIGHTS, **arrays)
    reseal(d)
    with pytest.raises(BotError, match="cannot read the weights"):
        Bot.load(d, prefer="numpy")
    assert not marker.exists()
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    d2 = copy_bot(bot_dir, tmp_path / "custom-op")
    node = helper.make_node("PyOp", ["obs", "action_mask"], ["probs", "action"], domain="ai.onnx.contrib")
    graph = helper.make_graph(
        [node],
        "payload",
        [
            helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["n", 336]),
            helper.make_tensor_value_info("action_mask", TensorProto.BOOL, ["n", 40]),
        ],
        [
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["n", 40]),
            helper.make_tensor_value_info("action", TensorProto.INT64, ["n"]),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.contrib", 1)]
    )
    onnx.save(model, str(d2 / ONNX))
    reseal(d2)
    with pytest.raises(BotError, match="onnxruntime cannot load"):
        Bot.load(d2, prefer="onnx")
    d3 = copy_bot(bot_dir, tmp_path / "card")
    card = json.loads((d3 / MODEL_CARD).read_text())
    for key, bad, message in (
        ("obs_size", "336", "'obs_size' must be a positive integer"),
        ("num_cards", True, "'num_cards' must be a positive integer"),
        ("variant", ["classic"], "'variant' must be a variant name"),
        ("variant", "briscola", "unknown variant 'briscola'"),
        ("endgame", -2, "'endgame' must be a number of plies"),
        ("files", [], "'files' must map file names"),
    ):
        (d3 / MODEL_CARD).write_text(json.dumps({**card, key: bad}))
        with pytest.raises(BotError, match=message):
            Bot.load(d3, prefer="numpy")
    (d3 / MODEL_CARD).write_text("[" * 100_000 + "]" * 100_000)  # RecursionError in json.loads
    with pytest.raises(BotError, match="nests too deeply"):
        Bot.load(d3)
    (d3 / MODEL_CARD).write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(BotError, match="cannot read the model card"):
        Bot.load(d3)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("prefer", BACKENDS)
def test_never_returns_an_illegal_action_even_for_overflowing_inputs(bot_dir: Path, prefer: str) -> None:
    bot = Bot.load(bot_dir, prefer=prefer)  # type: ignore[arg-type]
    rng = np.random.default_rng(3)
    obs = (rng.random((64, bot.obs_size), dtype=np.float32) - 0.5) * np.float32(3e38)  # logits overflow to inf
    mask = random_masks(rng, 64)
    for actions in (bot.act(obs, mask), bot.act(obs, mask, rng=np.random.default_rng(0))):
        assert mask[np.arange(64), actions].all()
    with pytest.raises(BotError, match="obs row 1 holds NaN or infinite values"):
        bot.act(np.where(np.arange(64)[:, None] == 1, np.nan, obs), mask)


def test_load_and_spec_options_are_checked(bot_dir: Path, tmp_path: Path) -> None:
    rules = get_rules("classic")
    for bad in (None, 5, ""):
        with pytest.raises(BotError, match="directory must be the path of an export directory"):
            Bot.load(bad)  # type: ignore[arg-type]
    with pytest.raises(BotError, match="is a file, not a bot export directory"):
        Bot.load(bot_dir / MODEL_CARD)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(BotError, match=r"threads must be an integer in 1\.\.1024"):
            Bot.load(bot_dir, prefer="numpy", threads=bad)  # type: ignore[arg-type]
    with pytest.raises(BotError, match="unknown variant"):
        Bot.load(bot_dir, rules="briscola")
    for opts, message in (
        ({"threads": "two"}, r"threads must be an integer in 1\.\.1024"),
        ({"prefer": "gpu"}, "prefer must be 'onnx' or 'numpy'"),
        ({"sample": "yes"}, "sample must be true or false"),
        ({"endgame": 2.5}, "endgame must be >= 0 plies"),
        ({"endgame": -1}, "endgame must be >= 0 plies"),
        ({"endgame_worlds": -2}, "endgame_worlds must be >= 0 sampled deals"),
        ({"endgame_worlds": 1.5}, "endgame_worlds must be >= 0 sampled deals"),
        ({"endgame_worlds": 1025}, r"endgame_worlds must be >= 0 sampled deals and at most 1024"),
        ({"endgame_worlds": 10**9}, r"at most 1024.*got 1000000000"),
        ({"endgame_worlds": 2**64}, r"at most 1024.*got 18446744073709551616"),
    ):
        with pytest.raises(AgentSpecError, match=message):
            make_bot_policy(rules, 0, path=str(bot_dir), **opts)  # type: ignore[arg-type]
    with pytest.raises(AgentSpecError, match="path must be an export directory"):
        make_bot_policy(rules, 0, path=5)  # type: ignore[arg-type]
    (tmp_path / "empty").mkdir()
    with pytest.raises(AgentSpecError, match=r"not a bot export directory: model_card\.json is missing"):
        make_bot_policy(rules, 0, path=str(tmp_path / "empty"))


def test_shipped_bots_are_found_by_variant_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bot`` alone is the variant's shipped bot: its own directory, or a bot whose card lists it under "serves"."""
    from agents.nets.bot import shipped_bot, shipped_bot_spec

    classic = ROOT / "agents" / "bots" / "classic"
    assert shipped_bot("classic") == classic and shipped_bot_spec("classic") == str(classic)
    for variant in ("classic-15", "classic-21"):  # classic's rules during a hand, another target
        assert shipped_bot(variant) == classic
        assert shipped_bot_spec(variant) == f"bot:path={classic},any_variant=true"
        rules = get_rules(variant)
        agent = make_agent("bot", rules, seed=0)
        st = core.reset(rules, np.arange(4))
        mask = core.legal_action_mask(rules, st)
        acts = agent.act(ActBatch(rules, observation.observe(rules, st), mask, st, np.arange(4)))
        assert mask[np.arange(4), acts].all()
    assert shipped_bot("simple-3") == ROOT / "agents" / "bots" / "simple-3"  # a search-only bot
    pretend_no_shipped_bot(monkeypatch, "simple-3")
    with pytest.raises(AgentSpecError, match=r"no shipped bot plays 'simple-3' \(shipped: .*classic"):
        make_agent("bot", "simple-3")
    # another root: a damaged card serves nothing, a card's "serves" must be a list of names
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / MODEL_CARD).write_text("{not json")
    shutil.copytree(classic, tmp_path / "mine")
    assert shipped_bot("classic-21", tmp_path) == tmp_path / "mine" and shipped_bot("simple-2", tmp_path) is None
    card = json.loads((tmp_path / "mine" / MODEL_CARD).read_text())
    card["serves"] = "classic-21"
    (tmp_path / "mine" / MODEL_CARD).write_text(json.dumps(card))
    assert shipped_bot("classic-21", tmp_path) is None
    with pytest.raises(BotError, match="'serves' must be a list of variant names"):
        Bot.load(tmp_path / "mine", prefer="numpy")
