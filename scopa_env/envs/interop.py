"""Any project agent as a player in another library's loop: ``act_env(policy, env)`` gives its action.

    from scopa_env import scopa_v0
    from scopa_env.envs.interop import act_env
    from scopa_env.games.policy import resolve_policy   # agent specs, once the agents package is installed

    expert = resolve_policy("expert", "classic", seed=0)
    env = scopa_v0.env(variant="classic")
    env.reset(seed=1)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        action = act_env(expert, env) if agent == "player_1" else my_action(obs)   # None once done
        env.step(action)

``act_env`` works on the envs of this package, wrapped or not:

- the AEC env (``scopa_v0.env`` / ``raw_env``): the action of the agent to act (``agent`` defaults to it; another
  agent is an error), or None for an agent that is done (its ``step(None)``);
- the parallel env (``scopa_v0.parallel_env``): the acting agent's action; 0 for any other live agent (its action
  is ignored), so ``{a: act_env(p, env, a) for a in env.agents}`` is a valid ``actions`` dict;
- the Gymnasium env (``scopa_env.envs.gym.ScopaEnv``, ``gymnasium.make("scopa/...")``): the learner's action, with the
  env's own mask (``action_masks()``); the vector envs ``ScopaVecEnv`` and ``gymnasium.make_vec``'s
  ``SyncVectorEnv`` of them: a (num_envs,) array, one action per game.

Rule-based and search agents (``greedy``, ``expert``, ``pimc``...) need the game state (``Policy.needs_state``), so
``act_env`` reads it from inside the env; the env never shows it. What the agent gets is what any agent gets in a
tournament: the state of its own game (a copy, without the seed that fixes the later deals), the acting seat's
observation and legal mask; every agent is blind to the other hands and the stock order by construction (it reads
only what the acting seat may know, RULES.md section 7). The caller gets back only the action. Agents that need no
state (``random``, the shipped bot ``bot:path=agents/bots/classic``, checkpoints) also act on an observation alone:
``act_observation(policy, rules, obs, mask)``.

The agent's random generator is the caller's to seed (``policy.seed(s)``); given the same seeds, a game played
through ``act_env`` is the game ``scopa_env.games.driver.play`` plays with the same agents.

Importing this module loads no PettingZoo (nor torch or stable-baselines3): ``act_env`` on a Gymnasium env stays as
light as the env.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core, observation
from scopa_env.games.learner import LearnerGames
from scopa_env.games.policy import ActBatch, Policy
from scopa_env.rules import Rules, get_rules

if TYPE_CHECKING:
    from scopa_env.envs.aec import raw_env

__all__ = ["act_env", "act_observation"]


def _check_policy(policy: Any, rules: Rules) -> Policy:
    if not isinstance(policy, Policy):
        raise TypeError(
            f"act_env needs a scopa_env.games.policy.Policy, got {type(policy).__name__}; build one once with "
            "agents.base.make_agent(spec, variant) or scopa_env.games.policy.resolve_policy(spec, variant)"
        )
    if policy.rules != rules:
        raise ValueError(
            f"{policy!r} was built for {policy.rules.name!r} but the env plays {rules.name!r}: build the agent with "
            f"the env's variant (make_agent(spec, {rules.name!r}))"
        )
    return policy


def _actions(
    policy: Policy, rules: Rules, state: core.State, games: npt.NDArray[np.intp], mask: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """The policy's actions for ``games`` of ``state`` (rows of ``mask``), checked legal."""
    sub = state.take(games)
    sub.seed[:] = 0  # the seed fixes every later deal: no agent may see it
    obs = observation.observe(rules, sub)
    out = np.asarray(policy.act(ActBatch(rules, obs, mask, sub, np.arange(games.size))))
    if out.shape != (games.size,):
        raise ValueError(f"{policy!r} returned actions of shape {out.shape} for {games.size} decisions")
    ok = (out >= 0) & (out < rules.num_actions)
    ok &= mask[np.arange(games.size), np.where(ok, out, 0)]
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise core.IllegalActionError(
            f"{policy!r} chose the illegal action {int(out[i])}; legal actions were {np.flatnonzero(mask[i]).tolist()}"
        )
    return out.astype(np.int64)


def _aec_action(policy: Policy, aec: raw_env, agent: str | None, parallel: bool) -> int | None:
    state = aec._require_state()
    if not aec.agents:
        raise RuntimeError("the match is over: call reset() to play again")
    acting = aec.agent_selection
    agent = acting if agent is None else agent
    if agent not in aec.possible_agents:
        raise ValueError(f"unknown agent {agent!r}; the agents are {', '.join(aec.possible_agents)}")
    if aec.terminations.get(agent) or aec.truncations.get(agent):
        return None
    if agent != acting:
        if parallel:
            return 0  # not this agent's turn: the parallel env ignores its action
        raise ValueError(f"it is {acting}'s turn, not {agent}'s: act_env gives the action of the agent to act")
    mask = core.legal_action_mask(aec.rules, state)
    return int(_actions(_check_policy(policy, aec.rules), aec.rules, state, np.array([0]), mask)[0])


def _learner_actions(policy: Policy, games: LearnerGames) -> npt.NDArray[np.int64]:
    live = np.flatnonzero(~games.finished)
    if live.size < games.num_games:
        raise RuntimeError("the episode is over: call reset() before asking for an action")
    return _actions(_check_policy(policy, games.rules), games.rules, games.state, live, games.mask[live])


def act_env(policy: Policy, env: Any, agent: str | None = None) -> Any:
    """``policy``'s action in ``env``'s current position (see the module docstring for each kind of env).

    AEC env: an int, or None for a done agent. Parallel env: an int (0 for an agent not to act). Gymnasium env: an
    int. Vector envs (``ScopaVecEnv``, a ``SyncVectorEnv`` of ``ScopaEnv``): a (num_envs,) int64 array.
    Raises ``TypeError`` for an env of another kind, ``ValueError`` for an agent of another variant or an unknown
    agent name, ``RuntimeError`` once the game is over.
    """
    inner = getattr(env, "unwrapped", env)
    # the PettingZoo envs: an env of their classes exists only once their module is loaded (importing them here
    # would load PettingZoo for every Gymnasium user of act_env)
    parallel = sys.modules.get("scopa_env.envs.parallel")
    if parallel is not None and isinstance(inner, parallel.parallel_env):
        if not inner.agents:
            raise RuntimeError("the match is over (or not started): call reset() first")
        return _aec_action(policy, inner._aec, agent, parallel=True)
    aec = sys.modules.get("scopa_env.envs.aec")
    if aec is not None and isinstance(inner, aec.raw_env):
        return _aec_action(policy, inner, agent, parallel=False)
    games = getattr(inner, "games", None)
    if isinstance(games, LearnerGames):
        if agent is not None:
            raise ValueError("a Gymnasium env has one agent, the learner: call act_env(policy, env) without agent")
        out = _learner_actions(policy, games)
        return out if games.num_games > 1 or hasattr(inner, "num_envs") else int(out[0])
    sub_envs = getattr(inner, "envs", None)
    if isinstance(sub_envs, (list, tuple)) and sub_envs:
        return np.array([act_env(policy, e) for e in sub_envs], dtype=np.int64)
    raise TypeError(
        f"act_env works on this package's envs (scopa_v0.env / raw_env / parallel_env, scopa_env.envs.gym.ScopaEnv and "
        f"ScopaVecEnv, gymnasium.make('scopa/...') and its SyncVectorEnv), got {type(env).__name__}"
    )


def act_observation(
    policy: Policy, rules: Rules | str, obs: Any, mask: npt.ArrayLike | None = None
) -> npt.NDArray[np.int64] | int:
    """``policy``'s action for an observation alone, for agents that need no game state (``needs_state`` False).

    ``obs``: the AEC dict ``{"observation", "action_mask"}`` (``mask`` then optional), or a (obs_size,) vector or
    (n, obs_size) batch with its mask(s). Returns an int for one observation, an (n,) array for a batch.
    """
    rules = get_rules(rules)
    policy = _check_policy(policy, rules)
    if policy.needs_state:
        raise ValueError(
            f"{policy!r} needs the game state (a rule-based or search agent): use act_env(policy, env) instead"
        )
    if isinstance(obs, dict):
        mask = obs["action_mask"] if mask is None else mask
        obs = obs["observation"]
    if mask is None:
        raise ValueError("act_observation needs the legal-action mask (the env's action_mask / action_masks())")
    o = np.asarray(obs, dtype=np.float32)
    m = np.asarray(mask).astype(np.bool_)
    single = o.ndim == 1
    o, m = np.atleast_2d(o), np.atleast_2d(m)
    size = observation.observation_size(rules)
    if o.shape[1] != size or m.shape != (o.shape[0], rules.num_actions):
        raise ValueError(
            f"observations must be (n, {size}) and masks (n, {rules.num_actions}) for {rules.name!r}, got "
            f"{o.shape} and {m.shape}"
        )
    if not m.any(axis=1).all():
        raise ValueError("a mask has no legal action: that agent is not to act")
    out = np.asarray(policy.act(ActBatch(rules, o, m)), dtype=np.int64)
    return int(out[0]) if single else out
