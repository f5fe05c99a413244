"""Agents anywhere (issue 20, item 5): ``act_env(agent, env)`` in the AEC, parallel, Gymnasium and vector envs;
a game played through it is the game the shared driver plays with the same agents and seeds."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import scopa_env
from agents.base import act_env, act_observation, make_agent
from scopa_env import scopa_v0
from scopa_env.envs.gym import ScopaEnv, ScopaVecEnv
from scopa_env.games.driver import play

BOT = "bot:path=agents/bots/classic"


def _driver_actions(variant: str, specs: list[str], seed: int) -> list[int]:
    n = scopa_env.rules.get_rules(variant).num_players
    lineup = np.array([[i % len(specs) for i in range(n)]])
    agents = [make_agent(s, variant, seed=7) for s in specs]
    actions: list[int] = []
    play(variant, agents, lineup, [seed], mode="matches", on_decision=lambda d: actions.append(int(d.actions[0])))
    return actions


@pytest.mark.parametrize(
    ("variant", "specs"),
    [("classic", ["greedy", "expert"]), ("classic", ["pimc:worlds=4,depth=2", BOT]), ("scopa-a-quattro", ["expert"])],
)
def test_aec_game_through_act_env_is_the_driver_game(variant: str, specs: list[str]) -> None:
    agents = [make_agent(s, variant, seed=7) for s in specs]
    env = scopa_v0.env(variant=variant)
    env.reset(seed=3)
    actions = []
    for name in env.agent_iter():
        action = act_env(agents[int(name.split("_")[1]) % len(specs)], env)
        if action is not None:
            actions.append(action)
        env.step(action)
    assert actions == _driver_actions(variant, specs, 3)


def test_parallel_env_actions_for_every_agent() -> None:
    expert = make_agent("expert", "scopone-scientifico", seed=0)
    env = scopa_v0.parallel_env(variant="scopone-scientifico")
    obs, _ = env.reset(seed=1)
    steps = 0
    while env.agents:
        actions = {a: act_env(expert, env, a) for a in env.agents}
        actor = env.acting_agent
        assert obs[actor]["action_mask"][actions[actor]] == 1
        assert all(actions[a] == 0 for a in env.agents if a != actor)
        obs, *_ = env.step(actions)
        steps += 1
    assert steps >= 40
    with pytest.raises(RuntimeError, match="over"):
        act_env(expert, env)


def test_gymnasium_env_and_vector_envs() -> None:
    bot = make_agent(BOT, "classic", seed=0)
    env = gymnasium.make("scopa/Classic-v0", opponents="greedy")
    env.reset(seed=0)
    done = False
    while not done:
        action = act_env(bot, env)
        assert env.unwrapped.action_masks()[action]
        _, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    with pytest.raises(RuntimeError, match="reset"):
        act_env(bot, env)
    venv = ScopaVecEnv("classic", 4, opponents="random", seed=0)
    venv.reset()
    acts = act_env(make_agent("greedy", "classic"), venv)
    assert acts.shape == (4,) and venv.action_masks()[np.arange(4), acts].all()
    sync = gymnasium.make_vec("scopa/Classic-v0", num_envs=2, opponents="random")
    sync.reset(seed=0)
    acts = act_env(make_agent("expert", "classic"), sync)
    assert acts.shape == (2,) and all(m[a] for m, a in zip(sync.call("action_masks"), acts, strict=True))


def test_act_observation_for_state_free_agents() -> None:
    spec = BOT + ",search=false,endgame=0"  # the shipped bot's network alone (its pimc search needs the state)
    env = scopa_v0.raw_env(variant="classic")
    env.reset(seed=5)
    obs = env.observe(env.agent_selection)
    assert act_observation(make_agent(spec, "classic"), "classic", obs) == act_env(make_agent(spec, "classic"), env)
    batch = act_observation(make_agent(spec, "classic"), "classic", obs["observation"][None], obs["action_mask"][None])
    assert batch.shape == (1,) and obs["action_mask"][batch[0]]
    with pytest.raises(ValueError, match="needs the game state"):
        act_observation(make_agent("greedy", "classic"), "classic", obs)


def test_errors_name_the_problem() -> None:
    env = scopa_v0.env(variant="classic")
    env.reset(seed=0)
    greedy = make_agent("greedy", "classic")
    other = "player_1" if env.agent_selection == "player_0" else "player_0"
    with pytest.raises(ValueError, match="turn"):
        act_env(greedy, env, other)
    with pytest.raises(ValueError, match="unknown agent"):
        act_env(greedy, env, "player_9")
    with pytest.raises(ValueError, match="built for 'scopa-d-assi'"):
        act_env(make_agent("greedy", "scopa-d-assi"), env)
    with pytest.raises(TypeError, match="make_agent"):
        act_env("greedy", env)
    with pytest.raises(TypeError, match="envs"):
        act_env(greedy, object())
    gym_env = ScopaEnv("classic")
    gym_env.reset(seed=0)
    with pytest.raises(ValueError, match="one agent"):
        act_env(greedy, gym_env, "player_0")


def test_the_env_keeps_its_state_and_seed() -> None:
    """The agent gets a copy without the seed; the env's game is untouched."""
    seen = {}

    class Spy(scopa_env.games.policy.Policy):
        needs_state = True

        def act(self, batch):  # type: ignore[no-untyped-def]
            seen["seed"] = int(batch.state.seed[0])
            batch.state.hands[:] = False  # a misbehaving agent cannot change the env's game
            return np.flatnonzero(batch.mask[0])[:1]

    env = scopa_v0.raw_env(variant="classic")
    env.reset(seed=123)
    before = env._state.copy()
    act_env(Spy("classic"), env)
    assert seen["seed"] == 0
    assert np.array_equal(env._state.hands, before.hands) and int(env._state.seed[0]) == 123
