"""The Gymnasium env and the SB3 vector env: API checkers, masks, rewards, league pools, equality with the AEC env."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from scopa_bench.env_speed import bench_vec_env
from scopa_env import scopa_v0
from scopa_env.engine import core, observation
from scopa_env.envs.gym import ScopaEnv, ScopaVecEnv
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import VARIANTS, Rules, get_rules
from scopa_env.rules.shuffle import derive_seed

VARIANT_NAMES = list(VARIANTS)
DOCS = Path(__file__).resolve().parents[1] / "docs" / "envs.md"


def first_legal(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    return np.asarray(mask, dtype=bool).argmax(axis=1)


def last_legal(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    mask = np.asarray(mask, dtype=bool)
    return mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1)


class FirstLegal(Policy):
    """Deterministic: the lowest legal card id. Counts the rows it was asked about."""

    name = "first-legal"

    def __init__(self, rules: Rules | str, seed: int | None = None) -> None:
        super().__init__(rules, seed)
        self.rows = 0

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        self.rows += len(batch)
        return first_legal(batch.mask)


class LastLegal(FirstLegal):
    name = "last-legal"

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        self.rows += len(batch)
        return last_legal(batch.mask)


# --------------------------------------------------------------------------------------------------- checkers


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_gymnasium_and_sb3_check_env(variant: str) -> None:
    for kwargs in ({}, {"reward": "points", "episode": "hand", "learner_seat": 0}):
        env = ScopaEnv(variant, **kwargs)  # type: ignore[arg-type]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gymnasium_check_env(env, skip_render_check=True)
            sb3_check_env(env)
        assert not [str(w.message) for w in caught]


def test_single_agent_env_masks_rewards_and_episode_end() -> None:
    env = ScopaEnv("classic", opponents="random", reward="points", learner_seat=1)
    obs, info = env.reset(seed=5)
    assert info == {"learner_seat": 1}  # nothing about the deal (a seed would rebuild every hidden card)
    assert int(env.games.state.seed[0]) == 5
    total = 0.0
    rng = np.random.default_rng(0)
    while True:
        mask = env.action_masks()
        assert np.array_equal(mask, core.legal_action_mask(env.rules, env.games.state)[0])
        assert int(env.games.state.current[0]) == 1
        assert env.observation_space.contains(obs)
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += reward
        if terminated or truncated:
            break
    assert terminated and not truncated
    assert total == info["episode_margin"]
    assert info["episode_result"] == (1 if int(env.games.state.winner[0]) == 1 else -1)
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset()
    assert int(env.games.state.seed[0]) == int(derive_seed(np.array([5], dtype=np.uint64))[0])  # next of the chain


def test_single_agent_hand_episodes_and_render() -> None:
    env = ScopaEnv("scopa-a-quattro", reward="match", episode="hand", render_mode="ansi")
    env.reset(seed=2)
    text = env.render()
    assert isinstance(text, str) and "TABLE" in text and "(you)" in text
    team = set(env.rules.sides[env.rules.seat_side[int(env.games.learner_seat[0])]])
    seats_played: set[int] = set()
    steps = 0
    while True:
        seats_played.add(int(env.games.state.current[0]))
        mask = env.action_masks()
        _, reward, terminated, truncated, info = env.step(int(np.flatnonzero(mask)[0]))
        steps += 1
        if terminated:
            break
    assert not truncated
    assert reward == info["episode_result"] == np.sign(info["episode_margin"])
    assert seats_played == team  # partner="self": the learner plays both seats of its team
    assert steps >= 2 * sum(env.rules.deal_sizes)  # every card of both hands (plus any capture picks)


# --------------------------------------------------------------------------------------------------- vec env


def run_vec_episodes(venv: ScopaVecEnv, learner: Any = last_legal) -> list[dict[str, Any]]:
    """Play until every slot finished one episode; per slot its observations, rewards and final info."""
    rules = venv.rules
    obs = venv.reset()
    out: list[dict[str, Any]] = [{"obs": [], "rew": [], "info": None} for _ in range(venv.num_envs)]
    done_once = np.zeros(venv.num_envs, dtype=bool)
    while not done_once.all():
        masks = np.stack(venv.env_method("action_masks")).reshape(venv.num_envs, -1)
        assert np.array_equal(masks, core.legal_action_mask(rules, venv.games.state))
        assert np.array_equal(masks, venv.action_masks())
        for i in np.flatnonzero(~done_once):
            out[i]["obs"].append(obs[i])
        obs, rewards, dones, infos = venv.step(learner(masks))
        for i in np.flatnonzero(~done_once):
            out[i]["rew"].append(float(rewards[i]))
            if dones[i]:
                out[i]["info"] = infos[i]
                done_once[i] = True
    return out


def run_aec_episode(
    variant: str,
    seed: int,
    learner_seat: int,
    partner: str,
    reward: Literal["match", "points"],
    max_hands: int,
) -> dict[str, Any]:
    """The same game through the AEC env: learner = last legal, opponents = first legal, partner policy = last."""
    rules = get_rules(variant)
    env = scopa_v0.raw_env(variant=variant, reward=reward, max_hands=max_hands)
    env.reset(seed=seed)
    side = rules.seat_side[learner_seat]
    learner_seats = set(rules.sides[side]) if partner == "self" else {learner_seat}
    primary = f"player_{learner_seat}"
    obs_seq: list[npt.NDArray[np.float32]] = []
    rew_seq: list[float] = []
    pending = 0.0
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            break
        seat = env.agent_name_mapping[agent]
        mask = obs["action_mask"].astype(bool)[None]
        if seat in learner_seats:
            if obs_seq:
                rew_seq.append(pending)
                pending = 0.0
            obs_seq.append(obs["observation"])
            action = last_legal(mask)
        elif rules.seat_side[seat] == side:
            action = last_legal(mask)  # the partner policy (LastLegal)
        else:
            action = first_legal(mask)
        env.step(int(action[0]))
        pending += env.rewards[primary]
    rew_seq.append(pending)
    return {"obs": obs_seq, "rew": rew_seq, "env": env}


@pytest.mark.parametrize(
    ("variant", "reward", "episode", "partner"),
    [
        ("classic", "match", "match", "self"),
        ("classic", "points", "match", "self"),
        ("scopa-d-assi", "points", "hand", "self"),
        ("scopa-a-quattro", "match", "match", "self"),
        ("scopa-a-quattro", "points", "match", "policy"),
        ("scopone-scientifico", "points", "hand", "self"),
        ("simple-3", "match", "match", "self"),
        ("simple-6-teams", "points", "match", "policy"),
    ],
)
def test_vec_env_equals_games_played_one_by_one_through_the_aec_env(
    variant: str, reward: Literal["match", "points"], episode: Literal["match", "hand"], partner: str
) -> None:
    rules = get_rules(variant)
    num_envs, seed = 2 * rules.num_players, 40
    venv = ScopaVecEnv(
        variant,
        num_envs,
        opponents=FirstLegal(rules),
        seed=seed,
        reward=reward,
        episode=episode,
        partner="self" if partner == "self" else LastLegal(rules),
    )
    vec = run_vec_episodes(venv)
    for i, got in enumerate(vec):
        seat = i % rules.num_players  # learner_seat="rotate"
        ref = run_aec_episode(variant, seed + i, seat, partner, reward, max_hands=1 if episode == "hand" else 100)
        assert len(got["obs"]) == len(ref["obs"])
        assert all(np.array_equal(a, b) for a, b in zip(got["obs"], ref["obs"], strict=True))
        info = got["info"]
        assert not info["TimeLimit.truncated"]
        if episode == "match":
            assert got["rew"] == ref["rew"]
            winner = int(ref["env"]._state.winner[0])
            assert info["episode_result"] == (1 if winner == rules.seat_side[seat] else -1)
        elif reward == "points":
            assert got["rew"] == ref["rew"]  # the AEC game was truncated after the same single hand
        if reward == "points":
            assert sum(got["rew"]) == info["episode_margin"]


@pytest.mark.parametrize("max_hands", [1, 100])
def test_vec_env_rewards_results_and_autoreset(max_hands: int) -> None:
    venv = ScopaVecEnv("classic", 8, seed=3, reward="match", max_hands=max_hands)
    obs = venv.reset()
    assert venv.games.state.seed.tolist() == [3 + i for i in range(8)]
    assert venv.get_attr("learner_seat") == [i % 2 for i in range(8)]
    ended = 0
    for _ in range(200):
        obs, rewards, dones, infos = venv.step(last_legal(venv.action_masks()))
        for i in range(8):
            if not dones[i]:
                assert rewards[i] == 0 and infos[i] == {}
                continue
            ended += 1
            info = infos[i]
            assert rewards[i] == info["episode_result"]
            assert set(info) >= {"terminal_observation", "episode_opponent", "episode_pool", "episode_margin"}
            # max_hands=1 cuts every match after its first hand (no winner); with 100 every match is won
            assert info["TimeLimit.truncated"] == (max_hands == 1)
            if max_hands == 1:
                assert info["episode_result"] == 0
            else:  # two sides: the winner's summed hand margins are the final score difference
                assert info["episode_result"] == np.sign(info["episode_margin"]) != 0
    assert ended >= 8
    assert obs.shape == (8, observation.observation_size("classic")) and obs.dtype == np.float32


def test_partner_policy_plays_the_teammate_and_the_learner_keeps_its_seat() -> None:
    rules = get_rules("scopa-a-quattro")
    partner = LastLegal(rules)
    venv = ScopaVecEnv(rules, 4, opponents=FirstLegal(rules), partner=partner, learner_seat=2, seed=0)
    obs = venv.reset()
    seat_block = next((a, b) for name, a, b, _ in observation.observation_layout(rules) if name == "seat")
    for _ in range(30):
        assert (obs[:, seat_block[0] : seat_block[1]].argmax(axis=1) == 2).all()
        obs = venv.step(first_legal(venv.action_masks()))[0]
    assert partner.rows > 0
    with pytest.raises(ValueError, match="no teams"):
        ScopaVecEnv("classic", 2, partner=FirstLegal("classic"))


def test_set_opponents_draws_new_episodes_from_the_new_pool() -> None:
    rules = get_rules("classic")
    old, a, b = FirstLegal(rules), FirstLegal(rules), LastLegal(rules)
    venv = ScopaVecEnv(rules, 6, opponents=old, seed=1, episode="hand")
    venv.reset()
    venv.step(first_legal(venv.action_masks()))
    venv.set_opponents([a, b], probs=[0.0, 1.0])
    assert venv.opponents == [a, b]
    pools: list[tuple[int, int]] = []
    for _ in range(120):
        _, _, dones, infos = venv.step(first_legal(venv.action_masks()))
        pools += [(infos[i]["episode_pool"], infos[i]["episode_opponent"]) for i in np.flatnonzero(dones)]
    first_round = pools[:6]
    assert all(p == (0, 0) for p in first_round)  # episodes in progress kept their opponent
    assert all(p == (1, 1) for p in pools[6:]) and len(pools) > 12
    assert a.rows == 0 and b.rows > 0
    rows_before = old.rows
    venv.step(first_legal(venv.action_masks()))
    assert old.rows == rows_before  # the old opponent no longer plays
    with pytest.raises(ValueError, match="probs"):
        venv.set_opponents([a, b], probs=[1.0])
    with pytest.raises(ValueError, match="built for variant"):
        venv.set_opponents(FirstLegal("simple-3"))


def test_seeding_is_reproducible() -> None:
    def trajectory(seed: int) -> list[npt.NDArray[np.float32]]:
        venv = ScopaVecEnv("simple-4-teams", 4, opponents="random", seed=seed)
        out = [venv.reset()]
        rng = np.random.default_rng(0)
        for _ in range(40):
            masks = venv.action_masks()
            keys = rng.random(masks.shape)
            keys[~masks] = -1
            out.append(venv.step(keys.argmax(axis=1))[0])
        return out

    a, b, c = trajectory(7), trajectory(7), trajectory(8)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    venv = ScopaVecEnv("classic", 3, seed=0)
    venv.seed(100)
    venv.reset()
    assert venv.games.state.seed.tolist() == [100, 101, 102]


def test_illegal_learner_actions() -> None:
    venv = ScopaVecEnv("classic", 4, seed=0)
    venv.reset()
    illegal = (~venv.action_masks()).argmax(axis=1)
    _, _, _, infos = venv.step(illegal)
    assert all(info.get("illegal_action") for info in infos)
    strict = ScopaVecEnv("classic", 4, seed=0, illegal="raise")
    strict.reset()
    with pytest.raises(core.IllegalActionError, match="action_masks"):
        strict.step((~strict.action_masks()).argmax(axis=1))
    with pytest.raises(ValueError, match="expected 4 actions"):
        strict.step(np.zeros(3, dtype=np.int64))


def test_exact_endgame_narrows_the_learners_mask_to_the_solvers_best_moves() -> None:
    from agents.search.endgame import ExactEndgameMask, open_endgame_rows, optimal_open_actions

    venv = ScopaVecEnv("classic", 64, opponents="greedy", seed=3, mask_filter=ExactEndgameMask(8))
    plain = ScopaVecEnv("classic", 64, opponents="greedy", seed=3)
    venv.reset()
    plain.reset()
    rng = np.random.default_rng(0)
    seen = narrowed = 0
    for _ in range(40):
        state = venv.games.state
        rows = open_endgame_rows(venv.rules, state, np.arange(64), 8)
        masks, legal = venv.action_masks(), core.legal_action_mask(venv.rules, state)
        assert np.array_equal(masks[rows], optimal_open_actions(venv.rules, state, rows))
        others = np.setdiff1d(np.arange(64), rows)
        assert np.array_equal(masks[others], legal[others])
        assert not (masks & ~legal).any() and masks.any(axis=1).all()
        seen += rows.size
        narrowed += int((masks[rows].sum(1) < legal[rows].sum(1)).sum())
        keys = np.where(masks, rng.random(masks.shape), -1.0)
        venv.step(keys.argmax(axis=1))
    assert seen > 100 and narrowed > 20
    env = ScopaEnv("classic", opponents="greedy", mask_filter=ExactEndgameMask(6))
    assert env.games.mask_filter.plies == 6  # type: ignore[union-attr]
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="exact_endgame must be a number of plies"):
            ExactEndgameMask(bad)
    with pytest.raises(TypeError, match="mask_filter must be None or a callable"):
        ScopaVecEnv("classic", 2, mask_filter=8)  # type: ignore[arg-type]


def test_vec_env_api_methods(capsys: pytest.CaptureFixture[str]) -> None:
    venv = ScopaVecEnv("classic", 3, seed=0, render_mode="ansi", stacked_masks=False)
    venv.reset()
    masks = venv.env_method("action_masks")
    assert len(masks) == 3 and all(np.array_equal(m, r) for m, r in zip(masks, venv.action_masks(), strict=True))
    assert len(venv.env_method("action_masks", indices=[2])) == 1
    assert venv.has_attr("action_masks")
    per_env = venv.get_attr("action_masks")
    assert np.array_equal(per_env[1](), venv.action_masks()[1])
    assert venv.env_is_wrapped(object) == [False, False, False]  # type: ignore[arg-type]
    assert venv.get_attr("render_mode") == ["ansi"] * 3
    text = venv.render()
    assert isinstance(text, str) and "TABLE" in text
    assert "TABLE" in venv.env_method("render", indices=[1])[0]
    venv.set_attr("render_mode", "human")
    venv.render()
    assert "TABLE" in capsys.readouterr().out
    with pytest.raises(ValueError, match="every index"):
        venv.set_attr("render_mode", None, indices=[0])
    with pytest.raises(AttributeError, match="supports"):
        venv.env_method("step")
    stacked = ScopaVecEnv("classic", 3, seed=0)
    stacked.reset()
    assert np.stack(stacked.env_method("action_masks")).shape == (1, 3, 40)  # MaskablePPO reshapes it
    venv.close()


def test_maskable_ppo_smoke_run_only_takes_legal_actions() -> None:
    import torch
    from sb3_contrib import MaskablePPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny network; several threads only contend on a busy machine
    try:
        venv = ScopaVecEnv("classic", 8, opponents="random", seed=0, reward="points")
        model = MaskablePPO(
            "MlpPolicy",
            venv,
            n_steps=32,
            batch_size=64,
            n_epochs=1,
            seed=0,
            device="cpu",
            policy_kwargs={"net_arch": [32]},
        )
        model.learn(total_timesteps=256)
    finally:
        torch.set_num_threads(threads)
    buf = model.rollout_buffer
    masks = buf.action_masks.reshape(32, 8, 40)
    actions = buf.actions.reshape(32, 8).astype(np.int64)
    assert masks.sum(axis=2).min() >= 1
    assert np.take_along_axis(masks, actions[..., None], axis=2).all()  # every sampled action was legal


def test_bench_vec_env_reports_both_rates() -> None:
    result = bench_vec_env("classic", batch=16, seconds=0.3, seed=0, repeats=1)
    assert result["batch"] == 16
    for key in ("learner_steps_per_s_random", "learner_steps_per_s_uniform_legal", "core_decisions_per_s"):
        assert result[key] > 0
    assert result["ratio_random"] == pytest.approx(
        result["core_decisions_per_s"] / result["learner_steps_per_s_random"], rel=0.02
    )


# --------------------------------------------------------------------------------------------------- docs


def doc_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL)


EXAMPLES = doc_examples()


def test_docs_have_the_examples() -> None:
    code = "\n".join(EXAMPLES)
    assert "scopa_v0.env(" in code and "action_mask" in code and "MaskablePPO" in code


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example{i + 1}" for i in range(len(EXAMPLES))])
def test_docs_examples_run(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    threads = torch.get_num_threads()  # the MaskablePPO example sets it; leave the process as it was
    try:
        exec(compile(code, "docs/envs.md", "exec"), {"__name__": "__docs__"})
    finally:
        torch.set_num_threads(threads)
    assert capsys.readouterr().out  # every example prints what it shows


def test_seeds_actions_and_sizes_are_checked_with_a_message() -> None:
    env = ScopaEnv("classic")
    env.reset(seed=np.int64(5))  # a numpy integer is a seed (Gymnasium's own check refused it)
    assert int(env.games.state.seed[0]) == 5
    for bad in (2.5, "5", True, [5]):
        with pytest.raises(TypeError, match=r"seed must be an integer in \[0, 2\*\*63\)"):
            env.reset(seed=bad)  # type: ignore[arg-type]
    for bad in (-1, 2**63, 2**64):
        with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*63\)"):
            env.reset(seed=bad)
    env.reset(seed=5)
    for bad in (2.5, np.inf, np.nan, "3", None):
        with pytest.raises(TypeError, match="actions must be integer card ids"):
            env.step(bad)  # type: ignore[arg-type]
    for bad in (1e30, "x", 2.5, True):
        with pytest.raises((TypeError, ValueError), match="seed must be an integer"):
            ScopaVecEnv("classic", 2, seed=bad)  # type: ignore[arg-type]
    venv = ScopaVecEnv("classic", 2, seed=0)
    for bad in (-1, 2**63 - 1):
        with pytest.raises(ValueError, match="seed must be an integer"):
            venv.seed(bad)
    with pytest.raises(TypeError, match="seed must be an integer"):
        venv.seed("1")  # type: ignore[arg-type]
    for bad in (0, 2**30, 1.5):
        with pytest.raises(ValueError, match=r"num_envs\) must be an integer in 1\.\.1048576"):
            ScopaVecEnv("classic", bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="opponents must be a Policy"):
        ScopaVecEnv("classic", 2, opponents=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probs must be 2 non-negative numbers"):
        ScopaVecEnv("classic", 2, opponents=["random", "greedy"], probs=["a", "b"])  # type: ignore[list-item]
