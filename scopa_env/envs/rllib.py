"""RLlib glue (new API stack): Scopa as an RLlib ``MultiAgentEnv`` and a PPO module that masks illegal cards.

RLlib's action-masking modules read a ``Dict`` observation with the keys ``observations`` and ``action_mask``;
the PettingZoo env (``scopa_v0.env``) says ``observation`` and ``action_mask``. ``ScopaMultiAgentEnv`` is the AEC
env with RLlib's keys (the mask as ``float32`` 0/1): each step returns the observation of the one agent to act, an
agent's reward arrives with its next observation (PettingZoo's cumulative rewards), and when the match ends every
agent gets its last observation and reward at once. ``ActionMaskingPPOModule`` is RLlib's default PPO torch module
run on the ``observations`` part, with the logits of illegal cards pushed to the float minimum.
With ``opponents`` in its config (agent specs: ``"expert"``, ``["greedy", "expert"]``) the env plays those seats
itself and shows RLlib one side only (the project's baselines as fixed opponents). ``masked_ppo_config(variant, ...)``
puts both together: one shared policy for every seat, the env checker off
(it steps the env with random actions, masks ignored: harmless on ``scopa_v0.env``, where an illegal card just ends
the match, but not a check of anything the masked module will do). Example (docs/integrations.md)::

    import ray
    from scopa_env.envs.rllib import masked_ppo_config

    ray.init(address="local", num_cpus=1)
    algo = masked_ppo_config("classic").env_runners(num_env_runners=0).build_algo()
    print(algo.train()["env_runners"]["num_env_steps_sampled_lifetime"])

Needs ``pip install 'scopa[rllib]'`` (``ray[rllib]``). Importing this module loads nothing of Ray: the classes are
built on first use (``from scopa_env.envs.rllib import ScopaMultiAgentEnv``), so the rest of the package never pays for
RLlib and a missing RLlib is an ``ImportError`` saying what to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.rllib.algorithms.ppo import PPOConfig

__all__ = ["SHARED_POLICY", "ActionMaskingPPOModule", "ScopaMultiAgentEnv", "masked_ppo_config"]

SHARED_POLICY = "shared"
"""The module id ``masked_ppo_config`` maps every seat to."""

_LAZY = ("ActionMaskingPPOModule", "ScopaMultiAgentEnv")
ActionMaskingPPOModule: type[Any]  # declared only: __getattr__ builds both classes on first use
ScopaMultiAgentEnv: type[Any]


def _require_rllib() -> None:
    try:
        import ray.rllib  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"scopa_env.envs.rllib needs RLlib ({exc}): install it with pip install 'scopa[rllib]' "
            "(or pip install 'ray[rllib]==2.60.0')"
        ) from exc


def _build() -> dict[str, Any]:
    """Define the RLlib classes (imports Ray); ``__getattr__`` caches them in the module."""
    _require_rllib()
    import gymnasium
    import numpy as np
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    from scopa_env.envs import aec
    from scopa_env.envs.interop import act_env
    from scopa_env.games.policy import Policy, resolve_policy

    class ScopaMultiAgentEnv(MultiAgentEnv):
        """``scopa_v0.env(**config)`` as an RLlib multi-agent env with ``observations`` / ``action_mask`` keys.

        ``config`` (RLlib's ``env_config``) takes ``scopa_v0.env``'s keywords: ``variant``, ``reward``,
        ``max_hands``, ``render_mode``. An illegal card ends the match with -1 for its agent, as in ``scopa_v0.env``.

        ``opponents`` (an agent spec such as ``"expert"``, a ``Policy``, or a list of them: one drawn per match) makes
        the env play fixed opponents itself: the learner holds one side (every seat of it; side ``k % num_sides`` in
        the env's k-th match, so it plays every side in turn), the opponents all the other seats, and RLlib sees only
        the learner's seats (observations, rewards, ends). The specs are built by
        ``scopa_env.games.policy.resolve_policy`` (the project's agents: ``greedy``, ``expert``, ``pimc:worlds=8``, a
        checkpoint path), seeded with ``opponent_seed`` (default 0) and again with the ``seed`` of every
        ``reset(seed=...)``; they read the game state inside the env (``scopa_env.envs.interop.act_env``), which the
        learner never sees. Without ``opponents`` every seat is RLlib's (self-play).
        """

        def __init__(self, config: dict[str, Any] | None = None) -> None:
            super().__init__()
            config = dict(config or {})
            opponents = config.pop("opponents", None)
            opponent_seed = int(config.pop("opponent_seed", 0))
            self.env = aec.env(**config)
            rules = self.env.unwrapped.rules
            agents: list[str] = list(self.env.possible_agents)
            inner = self.env.observation_space(agents[0])
            num_cards = int(inner["action_mask"].shape[0])
            space = gymnasium.spaces.Dict(
                {
                    "observations": inner["observation"],
                    "action_mask": gymnasium.spaces.Box(0.0, 1.0, shape=(num_cards,), dtype=np.float32),
                }
            )
            observation_spaces: dict[str, gymnasium.Space[Any]] = dict.fromkeys(agents, space)
            action_spaces: dict[str, gymnasium.Space[Any]] = {a: gymnasium.spaces.Discrete(num_cards) for a in agents}
            self.possible_agents: list[Any] = list(agents)
            self.agents: list[Any] = list(agents)
            self.observation_spaces: dict[Any, gymnasium.Space[Any]] = dict(observation_spaces)
            self.action_spaces: dict[Any, gymnasium.Space[Any]] = dict(action_spaces)
            self.observation_space = gymnasium.spaces.Dict(observation_spaces)
            self.action_space = gymnasium.spaces.Dict(action_spaces)
            self.opponents: list[Policy] = []
            if opponents is not None:
                specs = list(opponents) if isinstance(opponents, (list, tuple)) else [opponents]
                if not specs:
                    raise ValueError("opponents must name at least one agent, e.g. 'greedy' (or leave it out)")
                self.opponents = [resolve_policy(s, rules, opponent_seed, what="opponents") for s in specs]
            self._sides = [[agents[seat] for seat in side] for side in rules.sides]
            self._matches = 0
            self._rng = np.random.default_rng(opponent_seed)
            self._opponent: Policy | None = None
            self.learners: list[str] = list(agents)
            """The seats RLlib plays in the current match (all of them without ``opponents``)."""

        def _observe(self, observation: dict[str, Any]) -> dict[str, Any]:
            return {
                "observations": observation["observation"],
                "action_mask": observation["action_mask"].astype(np.float32),
            }

        def reset(
            self, *, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[dict[Any, Any], dict[Any, Any]]:
            """Deal a new match; the observation of the (learner's) agent to act first."""
            self.env.reset(seed=seed, options=options)
            if self.opponents:
                if seed is not None:
                    self._rng = np.random.default_rng(seed)
                    for p in self.opponents:
                        p.seed(seed)
                self.learners = self._sides[self._matches % len(self._sides)]
                self._opponent = self.opponents[int(self._rng.integers(len(self.opponents)))]
                self._matches += 1
                self.agents = list(self.learners)
                obs, _, _, _, infos = self._advance()
                return obs, infos
            agent = self.env.agent_selection
            return {agent: self._observe(self.env.observe(agent))}, {agent: {}}

        def step(self, action_dict: dict[Any, Any]) -> Any:  # type: ignore[override]  # (gymnasium.Env's is 1-agent)
            """Play the acting agent's card; the next (learner's) agent's observation, or every (learner's) agent's
            at the match's end."""
            agent = self.env.agent_selection
            if agent not in action_dict:
                raise ValueError(f"{agent} is to act, but the actions are for {sorted(action_dict)}")
            self.env.step(int(action_dict[agent]))
            return self._advance()

        def _advance(self) -> Any:
            """Play the opponents' turns and the finished agents' passes up to the next learner decision or the
            match's end; what RLlib sees of it."""
            obs: dict[str, Any] = {}
            rewards: dict[str, float] = {}
            terminated: dict[str, bool] = {}
            truncated: dict[str, bool] = {}
            infos: dict[str, Any] = {}
            while self.env.agents:
                observation, reward, term, trunc, info = self.env.last()
                agent = self.env.agent_selection
                if agent not in self.learners:  # a fixed opponent: its card, or its pass once the match is over
                    self.env.step(None if (term or trunc) else act_env(self._opponent or self.opponents[0], self.env))
                    continue
                obs[agent] = self._observe(observation)
                rewards[agent] = float(reward)
                terminated[agent], truncated[agent], infos[agent] = bool(term), bool(trunc), dict(info)
                if not (term or trunc):
                    break
                self.env.step(None)  # a finished agent passes its final step
            # self.agents stays the match's seats until the next reset: the last step reports every one of them
            over = not self.env.agents
            terminated["__all__"] = over and any(terminated.values())
            truncated["__all__"] = over and not terminated["__all__"]
            return obs, rewards, terminated, truncated, infos

        def render(self) -> Any:
            """The text picture (``render_mode="ansi"``) of the position."""
            return self.env.render()

        def close(self) -> None:
            """Close the PettingZoo env."""
            self.env.close()

    class ActionMaskingPPOModule(DefaultPPOTorchRLModule):
        """RLlib's default PPO torch module on ``obs["observations"]``, illegal cards' logits at the float minimum.

        Built for a ``Dict`` observation space with ``observations`` and ``action_mask`` (``ScopaMultiAgentEnv``'s);
        the networks (``model_config``, e.g. ``{"fcnet_hiddens": [256, 256]}``) see the ``observations`` only.
        """

        def __init__(self, *args: Any, observation_space: Any = None, **kwargs: Any) -> None:
            if not isinstance(observation_space, gymnasium.spaces.Dict) or set(observation_space.spaces) != {
                "observations",
                "action_mask",
            }:
                raise ValueError(
                    "ActionMaskingPPOModule needs a Dict observation space with the keys 'observations' and "
                    f"'action_mask' (scopa_env.envs.rllib.ScopaMultiAgentEnv's), got {observation_space}"
                )
            self._space_with_mask = observation_space
            super().__init__(*args, observation_space=observation_space["observations"], **kwargs)

        def setup(self) -> None:
            """Build the networks for the ``observations`` space, then show RLlib the space with the mask."""
            super().setup()
            self.observation_space = self._space_with_mask

        @staticmethod
        def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
            obs = batch[Columns.OBS]
            if not isinstance(obs, dict):
                raise ValueError("ActionMaskingPPOModule expects observations as {'observations', 'action_mask'}")
            inner = dict(batch)
            inner[Columns.OBS] = obs["observations"]
            return obs["action_mask"], inner

        @staticmethod
        def _mask(out: dict[str, Any], mask: Any) -> dict[str, Any]:
            logits = out[Columns.ACTION_DIST_INPUTS]
            out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask <= 0, torch.finfo(logits.dtype).min)
            return out

        def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            mask, inner = self._split(batch)
            return self._mask(super()._forward(inner, **kwargs), mask)

        def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            mask, inner = self._split(batch)
            return self._mask(super()._forward_train(inner, **kwargs), mask)

        def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
            """The value head on the ``observations`` (or on the training pass's embeddings)."""
            if embeddings is None:
                batch = self._split(batch)[1]
            return super().compute_values(batch, embeddings)

    for cls in (ScopaMultiAgentEnv, ActionMaskingPPOModule):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__  # pickled by reference: scopa_env.envs.rllib.<name>
    return {"ScopaMultiAgentEnv": ScopaMultiAgentEnv, "ActionMaskingPPOModule": ActionMaskingPPOModule}


def __getattr__(name: str) -> Any:
    """The RLlib classes, built once on first use (module attributes from then on)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in globals():
        globals().update(_build())
    return globals()[name]


def _to_shared(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return SHARED_POLICY


def masked_ppo_config(variant: str = "classic", **env_config: Any) -> PPOConfig:
    """A ``PPOConfig`` for self-play on ``variant``: every seat plays one shared, action-masked PPO module.

    ``env_config`` goes to ``ScopaMultiAgentEnv``: ``scopa_v0.env``'s keywords (``reward="points"``,
    ``max_hands=...``) and ``opponents=`` / ``opponent_seed=`` (fixed opponents the env plays itself). The result
    is an ordinary ``PPOConfig``: set ``env_runners``, ``training``, ``learners`` on it as usual, then ``build_algo()``.
    """
    _require_rllib()
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from scopa_env.rules import get_rules

    get_rules(variant)  # an unknown variant fails here, with the list of variants
    module = __getattr__("ActionMaskingPPOModule")  # the module's classes (built on the first call only)
    return (
        PPOConfig()
        .environment(
            __getattr__("ScopaMultiAgentEnv"), env_config={"variant": variant, **env_config}, disable_env_checking=True
        )
        .multi_agent(policies={SHARED_POLICY}, policy_mapping_fn=_to_shared)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={SHARED_POLICY: RLModuleSpec(module_class=module)}))
    )
