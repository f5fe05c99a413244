"""A trained Scopa policy without the training stack: ``Bot`` runs on numpy, or on onnxruntime when it is installed.

``python -m agents.nets.export CHECKPOINT --out DIR`` writes an *export directory*:

============================  =========================================================================
``model_card.json``           variant, observation version and size, number of actions, training steps,
                              architecture, source checkpoint, export checks and ratings (``MODEL_CARD``)
``policy.npz``                the policy MLP as plain arrays: ``w0, b0, ..., w{L-1}, b{L-1}`` (torch layout
                              ``(out, in)``), ``activation`` (``tanh``, ``relu``, ...); the last layer gives
                              the action logits (``WEIGHTS``)
``policy.onnx``               the same network with the mask applied: inputs ``obs`` float32 (n, obs_size) and
                              ``action_mask`` bool (n, num_cards); outputs ``probs`` float32 (n, num_cards)
                              and ``action`` int64 (n,) (``ONNX``)
============================  =========================================================================

The masked probabilities are those of sb3-contrib's ``MaskableCategorical``: illegal logits are replaced by
``-1e8`` (``MASKED_LOGIT``) and a softmax is taken, so illegal actions get probability exactly 0.

    bot = Bot.load("agents/bots/classic")            # onnxruntime when importable, else numpy
    probs = bot.probs(obs, mask)                      # (n, 40) masked action probabilities
    actions = bot.act(obs, mask)                      # (n,) the most probable legal action of each row
    action = bot.act_state(state, game=0)             # one decision straight from a core state

Neither torch nor stable-baselines3 is imported by this module. ``bot:path=DIR`` (or the directory itself, see
``is_export_dir``) is an agent spec: ``BotPolicy`` plays in ``evaluate.py``, the envs and the league.

A *search bot* (``agents/bots/classic-search``) is an export directory whose model card also carries ``"search"``,
the ``az`` options (``agents.nets.netsearch``) under which it plays its network inside sampled-deal search: its
``act_state`` / ``act_states`` and ``bot:path=DIR`` search (``bot.search_policy()`` is the agent), ``act`` refuses
(an observation alone cannot deal the worlds) and ``act_network`` is its network alone. ``python -m agents.nets.export
SRC --out DIR --search worlds=24,prior=0.25`` writes one from a checkpoint or a bot directory.

The files are read by ``agents.nets.weights`` (``read_bot_files``, ``onnx_session``), the one way into a network's
files. Loading a bot runs no code from its directory: the model card is JSON, the weights are read with
``np.load(allow_pickle=False)`` (plain numeric arrays only), and ``policy.onnx`` is run by onnxruntime's built-in
CPU kernels (no custom-op library is registered, ONNX format only). Before use, each file is checked against the
sha256 the model card records for it (``files``), the weights must be finite, and the ONNX network must give the
numpy network's probabilities on a few real positions. Whatever its inputs, a bot only ever returns legal actions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from agents.base import MODEL_CARD, AgentSpecError, path_kind, register_agent
from agents.nets.bot_search import MAX_WORLDS, BotError, check_search, plays_pimc
from agents.nets.compat import check_fit
from agents.nets.mlp import ACTIVATIONS, mlp_logits
from agents.nets.weights import (
    CARD_FORMAT,
    CARD_VERSION,
    ONNX,
    VALUE,
    WEIGHTS,
    check_finite,
    file_sha256,
    onnx_session,
    read_bot_files,
    read_card,
)
from scopa_env.engine import core, observation
from scopa_env.errors import whole_number
from scopa_env.games.policy import MASKED_LOGIT, ActBatch, Policy
from scopa_env.rules import Rules, get_rules

if TYPE_CHECKING:
    from agents.search.pimc import PIMCAgent

__all__ = [
    "Bot",
    "BotPolicy",
    "is_export_dir",
    "make_bot_policy",
    "masked_softmax",
    "new_card",
    "shipped_bot",
    "shipped_bot_spec",
    "write_card",
    "write_numpy_export",
]

SHIPPED_BOTS = Path(__file__).resolve().parents[1] / "bots"
"""The shipped bots, one export directory per variant (``agents/bots/classic/model_card.json``)."""
MAX_THREADS = 1024
"""Most onnxruntime threads a bot may ask for."""
ONNX_AGREEMENT = 1e-4
"""Largest difference between the ONNX and numpy probabilities accepted when a bot is loaded."""

Backend = Literal["onnx", "numpy"]


def is_export_dir(path: str | Path) -> bool:
    """True if ``path`` is a directory holding a model card (what ``make_agent`` should route to ``bot``)."""
    return path_kind(path) == "bot"


def masked_softmax(logits: npt.NDArray[np.floating], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    """(n, A) float32: softmax of ``logits`` with illegal entries set to ``MASKED_LOGIT`` (exactly 0 after)."""
    z = np.where(mask, logits, np.float32(MASKED_LOGIT)).astype(np.float32, copy=False)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32, copy=False)


def _architecture(
    layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]] | None, activation: str
) -> dict[str, Any] | None:
    if layers is None:
        return None
    return {
        "type": "mlp",
        "input": int(layers[0][0].shape[1]),
        "hidden": [int(w.shape[0]) for w, _ in layers[:-1]],
        "output": int(layers[-1][0].shape[0]),
        "activation": activation,
        "parameters": int(sum(w.size + b.size for w, b in layers)),
        "masking": f"illegal logits set to {MASKED_LOGIT:g}, then softmax (sb3-contrib MaskableCategorical)",
    }


def new_card(
    rules: Rules,
    layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]] | None,
    activation: str,
    name: str | None = None,
    training_steps: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A model card for an MLP with ``layers`` (``(weight (out, in), bias)``) trained for ``rules``, plus ``extra``
    (``layers`` None: a search-only bot's card, ``"architecture": null``)."""
    card: dict[str, Any] = {
        "format": CARD_FORMAT,
        "version": CARD_VERSION,
        "name": name or f"{rules.name}-bot",
        "variant": rules.name,
        "obs_version": observation.observation_version(rules),
        "obs_size": observation.observation_size(rules),
        "num_cards": rules.num_actions,  # the number of actions (card ids, and cirulla's stop / knocks)
        "num_players": rules.num_players,
        "training_steps": None if training_steps is None else int(training_steps),
        "architecture": _architecture(layers, activation),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "ratings": {},
    }
    card.update(extra)
    return card


def write_card(directory: str | Path, card: dict[str, Any]) -> Path:
    """Write ``model_card.json`` into ``directory``."""
    path = Path(directory) / MODEL_CARD
    path.write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    return path


def write_numpy_export(
    directory: str | Path,
    card: dict[str, Any],
    layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]],
    activation: str,
) -> Path:
    """Write ``policy.npz`` and ``model_card.json`` (everything the numpy path needs) into ``directory``."""
    if activation not in ACTIVATIONS:
        raise BotError(f"activation {activation!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, npt.NDArray[Any]] = {"activation": np.array(activation), "num_layers": np.array(len(layers))}
    for i, (w, b) in enumerate(layers):
        arrays[f"w{i}"] = np.asarray(w, dtype=np.float32)
        arrays[f"b{i}"] = np.asarray(b, dtype=np.float32)
    np.savez(d / WEIGHTS, **arrays)  # type: ignore[arg-type]
    files = card.setdefault("files", {})
    files[WEIGHTS] = {"sha256": file_sha256(d / WEIGHTS), "size": (d / WEIGHTS).stat().st_size}
    write_card(d, card)
    return d


class Bot:
    """A trained policy: masked action probabilities and greedy actions from observations, in numpy or onnxruntime.

    Build it with ``Bot.load(DIR)``. ``backend`` says which path ``probs`` / ``act`` use; ``probs_numpy`` is
    always available.
    """

    def __init__(
        self,
        card: dict[str, Any],
        layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]] | None,
        activation: str | None,
        directory: Path | None = None,
        backend: Backend = "numpy",
        threads: int = 1,
        rules: Rules | None = None,
    ) -> None:
        if layers is None:  # a search-only bot: pimc, no network
            if not plays_pimc(card):
                raise BotError("a bot without a network must be a pimc search bot (its card's search agent 'pimc')")
        elif activation not in ACTIVATIONS:
            raise BotError(f"activation {activation!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
        if not whole_number(threads, 1, MAX_THREADS):
            raise BotError(
                f"threads must be an integer in 1..{MAX_THREADS} (onnxruntime threads per call), got {threads!r}"
            )
        if layers is not None:
            check_finite(layers, "the bot's weights")
        self.card = card
        self.layers = layers
        """The network's layers, or None for a search-only bot (``has_network``)."""
        self.activation = activation
        self._act_fn = ACTIVATIONS[activation].numpy if activation is not None else None
        self.directory = directory
        self.threads = threads
        self.obs_size = int(card["obs_size"])
        self.num_cards = int(card["num_cards"])
        self.rules = rules if rules is not None else get_rules(card["variant"])
        self.search: dict[str, Any] | None = (
            check_search(card["search"], "the model card") if card.get("search") is not None else None
        )
        """A search bot's options (its card's ``"search"``), or None for a network-only bot."""
        self.search_agent: str | None = str(card["search"]["agent"]) if self.search is not None else None
        """``az`` or ``pimc`` for a search bot (``SEARCH_AGENTS``), else None."""
        self.backend: Backend = "numpy"
        self._session: Any = None
        self._searcher: Policy | None = None
        if backend == "onnx":
            self._start_onnx()

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(
        cls,
        directory: str | Path,
        prefer: Backend = "onnx",
        rules: Rules | str | None = None,
        any_variant: bool = False,
        threads: int = 1,
    ) -> Bot:
        """Load an export directory.

        ``prefer="onnx"`` uses onnxruntime when it is importable and ``policy.onnx`` exists, else numpy;
        ``prefer="numpy"`` always uses numpy. ``rules`` (default: the model card's variant) is checked against the
        card: same variant (or, with ``any_variant``, the same observation and action sizes) and the observation
        version of this code. ``threads`` limits onnxruntime's threads (1: one core per decision).
        """
        if not isinstance(prefer, str) or prefer not in ("onnx", "numpy"):
            raise BotError(f"prefer must be 'onnx' or 'numpy', got {prefer!r}")
        if not isinstance(any_variant, (bool, np.bool_)):
            raise BotError(f"any_variant must be True or False, got {any_variant!r}")
        if not isinstance(directory, (str, Path)) or not str(directory):
            raise BotError(f"directory must be the path of an export directory, got {directory!r}")
        files = read_bot_files(directory)
        d, card = files.directory, files.card
        try:
            target = get_rules(rules if rules is not None else card["variant"])
        except (TypeError, ValueError) as e:
            raise BotError(f"{d}: {e}") from None
        bot = cls(card, files.layers, files.activation, directory=d, backend="numpy", threads=threads, rules=target)
        bot.check_rules(target, any_variant=any_variant)
        if prefer == "onnx" and bot.has_network and (d / ONNX).is_file():
            try:
                import onnxruntime  # noqa: F401
            except ImportError:
                return bot
            bot._start_onnx()
        return bot

    def _start_onnx(self) -> None:
        if self.directory is None:
            raise BotError(f"no {ONNX} in {self.directory}; load with prefer='numpy'")
        session = onnx_session(self.directory, self.card, self.threads)
        state = core.reset(self.rules, np.arange(4, dtype=np.uint64))
        obs, mask = observation.observe(self.rules, state), core.legal_action_mask(self.rules, state)
        mask[::2] = True  # every action legal in half the rows
        try:
            got = np.asarray(session.run(["probs"], {"obs": obs, "action_mask": mask})[0], dtype=np.float32)
        except Exception as e:  # onnxruntime raises its own exception types
            raise BotError(f"onnxruntime cannot run {self.directory / ONNX}: {e}") from None
        want = masked_softmax(self.logits(obs), mask)
        if got.shape != want.shape or not np.abs(got - want).max() <= ONNX_AGREEMENT:
            raise BotError(
                f"{self.directory / ONNX} does not compute the policy of {WEIGHTS} (probabilities differ by more "
                f"than {ONNX_AGREEMENT:g}); re-export the checkpoint, or load with prefer='numpy'"
            )
        self._session = session
        self.backend = "onnx"

    def check_rules(self, rules: Rules, any_variant: bool = False) -> None:
        """Raise ``BotError`` unless the bot can play ``rules`` with this code's observations."""
        card = {**self.card, "obs_size": self.obs_size, "num_cards": self.num_cards}
        check_fit("the bot", card, rules, any_variant, error=BotError)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_session"] = None
        state["_act_fn"] = None
        state["_searcher"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        backend = state["backend"]
        self.__dict__.update(state)
        self._act_fn = ACTIVATIONS[self.activation].numpy if self.activation is not None else None
        self.backend = "numpy"
        if backend == "onnx":
            self._start_onnx()

    # ------------------------------------------------------------------ properties

    @property
    def variant(self) -> str:
        """The variant the bot was trained for."""
        return str(self.card["variant"])

    @property
    def obs_version(self) -> int:
        return int(self.card["obs_version"])

    @property
    def training_steps(self) -> int | None:
        steps = self.card.get("training_steps")
        return int(steps) if steps is not None else None

    def __repr__(self) -> str:
        kind = f", search={self.search_agent}" if self.search is not None else ""
        return f"Bot({str(self.directory)!r}, variant={self.variant!r}, backend={self.backend!r}{kind})"

    def search_policy(self, rules: Rules | None = None, seed: int | None = 0, **overrides: Any) -> Policy:
        """The search of a search bot as a ``scopa_env.games.policy.Policy``: an ``az`` agent
        (``agents.nets.netsearch``) with this bot's network, a ``pimc`` agent (``agents.search.pimc``) or a ``vpimc``
        agent (``agents.nets.vpimc``) with this bot's value network, with its card's ``"search"`` options
        (``overrides`` replace some of them).

        Raises ``BotError`` for a network-only bot (its card has no ``"search"``)."""
        if self.search is None:
            raise BotError(f"{self!r} is a network-only bot (its model card has no 'search'); use act / act_state")
        target = rules if rules is not None else self.rules
        if self.search_agent == "pimc":
            from agents.search.pimc import PIMCAgent

            return PIMCAgent(target, seed, **{**self.search, **overrides})
        if self.search_agent == "vpimc":
            from agents.nets.vpimc import ValuePIMC, read_value_net

            if self.directory is None:
                raise BotError(f"{self!r} has no directory, so no {VALUE} for its vpimc search; load it with Bot.load")
            path = Path(self.directory) / VALUE
            try:
                value = read_value_net(path, target)
            except (OSError, ValueError) as e:
                raise BotError(f"{path}: the value network of {self!r} cannot be used: {e}") from None
            return ValuePIMC(target, seed, value=value, **{**self.search, **overrides})
        from agents.nets.az import AZAgent, NetEvaluator

        if self.layers is None or self.activation is None:  # a search-only card never names az (check_search)
            raise BotError(f"{self!r} has no network for az search")

        net = NetEvaluator(target, self.layers, self.activation, str(self.directory or self.card.get("name")))
        return AZAgent(target, net, seed, **{**self.search, **overrides})

    def _search_act(self, state: core.State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        if self._searcher is None:
            self._searcher = self.search_policy(seed=0)
        sub = state.take(games)
        obs, mask = observation.observe(self.rules, sub), core.legal_action_mask(self.rules, sub)
        batch = ActBatch(self.rules, obs, mask, state, games)
        return np.asarray(self._searcher.act(batch), dtype=np.int64)

    def _no_search_from_obs(self) -> None:
        if self.search is not None:
            raise BotError(
                f"{self!r} is a search bot: its moves search sampled deals, which needs the game state, not only "
                "an observation; call bot.act_state(state) / bot.act_states(state), or play the spec "
                f"bot:path={self.directory} (bot.probs gives its network's probabilities)"
            )

    # ------------------------------------------------------------------ inference

    def _inputs(self, obs: npt.ArrayLike, mask: npt.ArrayLike) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        try:
            o = np.asarray(obs, dtype=np.float32)
        except (TypeError, ValueError) as e:
            what = type(obs).__name__
            raise BotError(f"obs must be an (n, {self.obs_size}) array of numbers, got {what} ({e})") from None
        m = np.asarray(mask)
        if m.dtype.kind not in "biuf":
            raise BotError(f"mask must be an (n, {self.num_cards}) bool array, got dtype {m.dtype}")
        if o.ndim != 2 or o.shape[1] != self.obs_size:
            raise BotError(
                f"obs must have shape (n, {self.obs_size}), got {o.shape}; for one observation pass obs[None] "
                "or use act_one"
            )
        if m.shape != (o.shape[0], self.num_cards):
            raise BotError(f"mask must have shape ({o.shape[0]}, {self.num_cards}) to match obs, got {m.shape}")
        m = m if m.dtype == np.bool_ else m != 0
        if not np.isfinite(o).all():
            row = int(np.flatnonzero(~np.isfinite(o).all(axis=1))[0])
            raise BotError(
                f"obs row {row} holds NaN or infinite values; observations come from "
                "scopa_env.engine.observation.observe"
            )
        empty = ~m.any(axis=1)
        if empty.any():
            raise BotError(f"mask row {int(np.flatnonzero(empty)[0])} allows no action; a decision needs one")
        return np.ascontiguousarray(o), np.ascontiguousarray(m)

    @property
    def has_network(self) -> bool:
        """False for a search-only bot (a pimc search bot exported from a variant name, no weights)."""
        return self.layers is not None

    def _need_network(self) -> None:
        if self.layers is None or self._act_fn is None:
            raise BotError(
                f"{self!r} is a search-only bot: it has no network, so no probabilities or moves from an "
                "observation; call bot.act_state(state) / bot.act_states(state), or play the spec "
                f"bot:path={self.directory}"
            )

    def logits(self, obs: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """(n, num_cards) float32: the policy's raw action logits (numpy path, no mask)."""
        self._need_network()
        assert self.layers is not None and self._act_fn is not None
        return mlp_logits(self.layers, self._act_fn, obs)

    def probs_numpy(self, obs: npt.ArrayLike, mask: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """(n, num_cards) float32 masked action probabilities computed in numpy."""
        o, m = self._inputs(obs, mask)
        return masked_softmax(self.logits(o), m)

    def probs(self, obs: npt.ArrayLike, mask: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """(n, num_cards) float32 masked action probabilities (0 for every illegal action)."""
        self._need_network()
        o, m = self._inputs(obs, mask)
        if self._session is not None:
            p = np.asarray(self._session.run(["probs"], {"obs": o, "action_mask": m})[0], dtype=np.float32)
            bad = ~np.isfinite(p).all(axis=1)
            if bad.any():  # the numpy network, whose weights were checked finite, for those rows
                p[bad] = masked_softmax(self.logits(o[bad]), m[bad])
            return p
        return masked_softmax(self.logits(o), m)

    def act(
        self, obs: npt.ArrayLike, mask: npt.ArrayLike, rng: np.random.Generator | None = None
    ) -> npt.NDArray[np.int64]:
        """(n,) int64: the most probable legal action of each row, or a sample from the probabilities with ``rng``.

        A network-only bot's move; a search bot (``search``) raises ``BotError``: its moves need the game state
        (``act_state`` / ``act_states``), and ``act_network`` is its network alone."""
        self._no_search_from_obs()
        return self.act_network(obs, mask, rng)

    def act_network(
        self, obs: npt.ArrayLike, mask: npt.ArrayLike, rng: np.random.Generator | None = None
    ) -> npt.NDArray[np.int64]:
        """``act`` for any bot: the network's move (a search bot's network without its search)."""
        self._need_network()
        o, m = self._inputs(obs, mask)
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise BotError(f"rng must be a numpy Generator (to sample) or None (greedy), got {type(rng).__name__}")
        if rng is None:
            if self._session is not None:
                action = self._session.run(["action"], {"obs": o, "action_mask": m})[0]
                out = np.asarray(action, dtype=np.int64).reshape(-1)
                return _legal_or_best(out, m, lambda rows: masked_softmax(self.logits(o[rows]), m[rows]))
            return _best_legal(masked_softmax(self.logits(o), m), m)
        p = np.where(m, self.probs(o, m), np.float32(0)).astype(np.float64)
        total = p.sum(axis=1)
        flat = ~(np.isfinite(total) & (total > 0))
        if flat.any():  # no usable probabilities (overflowing inputs): uniform over the legal actions
            p[flat] = m[flat]
        cdf = np.cumsum(p, axis=1)
        u = rng.random(o.shape[0]) * cdf[:, -1]
        out = (cdf > u[:, None]).argmax(axis=1).astype(np.int64)
        return _legal_or_best(out, m, lambda rows: p[rows])

    def act_one(self, obs: npt.ArrayLike, mask: npt.ArrayLike) -> int:
        """The most probable legal action for one observation (obs_size,) and mask (num_cards,)."""
        return int(self.act(np.asarray(obs, dtype=np.float32)[None], np.asarray(mask)[None])[0])

    # ------------------------------------------------------------------ from a game state

    def probs_state(self, state: core.State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.float32]:
        """(n, num_cards) probabilities for the acting seat of games ``games`` (default: all) of a core state."""
        st = state if games is None else state.take(np.asarray(games).reshape(-1))
        return self.probs(observation.observe(self.rules, st), core.legal_action_mask(self.rules, st))

    def act_states(self, state: core.State, games: npt.ArrayLike | None = None) -> npt.NDArray[np.int64]:
        """(n,) the bot's action for the acting seat of games ``games`` (default: all) of a core state (a search
        bot searches each of them)."""
        if self.search is not None:
            g = np.arange(state.batch_size) if games is None else np.asarray(games).reshape(-1)
            return self._search_act(state, g.astype(np.intp))
        st = state if games is None else state.take(np.asarray(games).reshape(-1))
        return self.act(observation.observe(self.rules, st), core.legal_action_mask(self.rules, st))

    def act_state(self, state: core.State, game: int = 0) -> int:
        """The bot's action for the seat to act in game ``game`` of a core state (one call: observe, mask, act).

        Raises ``BotError`` if that game is over. Feed the action to ``core.step``; in the CHOOSE phase it is the
        next table card to pick, so call again until ``info.move_done``.
        """
        if not isinstance(state, core.State):
            raise BotError(f"state must be a scopa_env.engine.core.State, got {type(state).__name__}")
        if not whole_number(game, 0, state.batch_size - 1):
            raise BotError(f"game {game!r} is out of range: the state holds {state.batch_size} games")
        st = state.take([int(game)]) if state.batch_size > 1 else state
        if st.phase[0] == core.Phase.DONE:
            raise BotError(f"game {game} is over; there is no decision to take")
        if self.search is not None:
            return int(self._search_act(st, np.zeros(1, dtype=np.intp))[0])
        return int(self.act(observation.observe(self.rules, st), core.legal_action_mask(self.rules, st))[0])


def _best_legal(p: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """(n,) the most probable legal action of each row (the first legal one where no probability is a number).

    The same as ``p.argmax(axis=1)`` for masked probabilities (illegal ones are 0, the best legal one is not).
    """
    return np.where(mask, np.nan_to_num(p, nan=-1.0), -2.0).argmax(axis=1).astype(np.int64)


def _legal_or_best(
    actions: npt.NDArray[np.int64],
    mask: npt.NDArray[np.bool_],
    probs_of: Callable[[npt.NDArray[np.intp]], npt.NDArray[np.floating]],
) -> npt.NDArray[np.int64]:
    """``actions``, with any illegal (or out-of-range) one replaced by the best legal action of ``probs_of(rows)``."""
    d = mask.shape[1]
    ok = (actions >= 0) & (actions < d)
    ok[ok] = mask[np.flatnonzero(ok), actions[ok]]
    if not ok.all():
        rows = np.flatnonzero(~ok)
        actions = actions.copy()
        actions[rows] = _best_legal(np.asarray(probs_of(rows), dtype=np.float32), mask[rows])
    return actions


class BotPolicy(Policy):
    """A ``Bot`` as a ``scopa_env.games.policy.Policy``: greedy (most probable legal action) unless ``sample``.

    ``endgame=N`` (N > 0) plays the last N plies of a hand exactly once they are an open book (the stock is empty
    and the unseen cards are all in the one opponent's hand), with the minimax solver that ``expert`` uses
    (``agents.search.endgame.solve_open``); it needs the game state (the arena and the envs pass it) and only public
    information. The policy's probabilities (``action_probs``, the terminal game's ``hint``) are unchanged.

    ``endgame_worlds=W`` (W > 0, at most ``MAX_WORLDS``: 1024, as in a model card) plays closed end games too: once
    at most ``endgame`` plies are left, every position, open or not, is played by ``pimc``'s exact end game: the move
    of best mean margin over W deals of the unseen cards consistent with what the seat has seen, each solved to the
    end of the hand (an open book is one deal). In scopone, where a book opens only at the last two plies, this
    covers the last two rounds.
    """

    name = "bot"
    needs_state = False

    def __init__(
        self,
        rules: Rules,
        bot: Bot,
        seed: int | None = None,
        sample: bool = False,
        endgame: int = 0,
        endgame_worlds: int = 0,
    ) -> None:
        for opt, value in (("endgame", endgame), ("endgame_worlds", endgame_worlds)):
            if not whole_number(value, 0):
                raise AgentSpecError(f"agent bot: {opt} must be >= 0 (0: the policy alone), got {value!r}")
        if endgame_worlds > MAX_WORLDS:
            raise AgentSpecError(
                f"agent bot: endgame_worlds must be >= 0 sampled deals and at most {MAX_WORLDS} (the model card's "
                f"bound), got {endgame_worlds!r}"
            )
        self.closed: PIMCAgent | None = None
        if endgame_worlds > 0 and endgame > 0:
            from agents.search.pimc import PIMCAgent

            self.closed = PIMCAgent(rules, seed, worlds=int(endgame_worlds), endgame=int(endgame), prior=0.0)
        super().__init__(rules, seed)
        self.bot = bot
        self.sample = sample
        self.endgame = int(endgame)
        self.endgame_worlds = int(endgame_worlds)
        self.needs_state = self.endgame > 0

    def seed(self, seed: int | None = None) -> None:
        super().seed(seed)
        if self.closed is not None:  # set before Policy.__init__ seeds
            self.closed.seed(seed)

    def act(self, batch: ActBatch) -> npt.NDArray[np.int64]:
        actions = self.bot.act_network(batch.obs, batch.mask, rng=self.rng if self.sample else None)
        if self.closed is not None:
            from agents.baselines.features import require_state
            from scopa_env.engine.state_moves import remaining_plies

            state, games = require_state(batch, f"bot (endgame={self.endgame},endgame_worlds={self.endgame_worlds})")
            rows = np.flatnonzero(remaining_plies(self.rules, state, games) <= self.endgame)
            if rows.size:
                actions = np.array(actions, dtype=np.int64)
                sub = ActBatch(self.rules, batch.obs[rows], batch.mask[rows], state, games[rows])
                actions[rows] = self.closed.act(sub)
        elif self.endgame > 0:
            from agents.search.endgame import play_exact_endgame

            actions = play_exact_endgame(batch, actions, self.endgame, f"bot (endgame={self.endgame})")
        return actions

    def action_probs(self, batch: ActBatch) -> npt.NDArray[np.float32]:
        """(n, num_cards) the bot's masked action probabilities (used by the terminal game's ``hint``)."""
        return self.bot.probs(batch.obs, batch.mask)


_CACHE: dict[tuple[str, str, bool, str, int, float], Bot] = {}


def shipped_bot(rules: Rules | str, root: Path = SHIPPED_BOTS) -> Path | None:
    """The export directory of the shipped bot that plays ``rules``' variant, or None.

    ``root/<variant>/`` first; else a bot whose model card lists the variant under ``"serves"``: a variant whose
    rules during a hand are the bot's own (``classic-15`` and ``classic-21`` differ from ``classic`` only in the
    target), which the bot plays with ``any_variant`` (same observation and action shapes).
    """
    name = get_rules(rules).name
    if (root / name / MODEL_CARD).is_file():
        return root / name
    if not root.is_dir():
        return None
    for d in sorted(root.iterdir()):
        try:
            card = read_card(d) if (d / MODEL_CARD).is_file() else None
        except BotError:
            continue  # a damaged bot serves nothing; loading it by path says why
        if card is not None and name in card.get("serves", []):
            return d
    return None


def shipped_bot_spec(rules: Rules | str, root: Path = SHIPPED_BOTS) -> str | None:
    """The agent spec of ``shipped_bot`` (its directory, or ``bot:path=DIR,any_variant=true`` for a bot that serves
    the variant), or None when no shipped bot plays it."""
    d = shipped_bot(rules, root)
    if d is None:
        return None
    return str(d) if d.name == get_rules(rules).name else f"bot:path={d},any_variant=true"


@register_agent(
    "bot",
    "exported policy (numpy / onnxruntime): bot:path=DIR[,prefer=numpy][,sample=true][,endgame=N (default: card's)]"
    "[,endgame_worlds=W (default: card's)]; "
    "bot alone: the shipped bot of the variant; a search bot (agents/bots/classic-search) plays its network inside "
    "az search (search=false: the network alone)",
)
def make_bot_policy(
    rules: Rules | str,
    seed: int | None = None,
    path: str | None = None,
    prefer: str = "onnx",
    sample: bool = False,
    any_variant: bool = False,
    threads: int = 1,
    endgame: int | None = None,
    search: bool = True,
    endgame_worlds: int | None = None,
) -> Policy:
    """Factory of spec ``bot:path=DIR``: a ``BotPolicy`` for the export directory ``path`` (loads are cached).

    Without ``path`` (spec ``bot``), the shipped bot of the variant (``shipped_bot``).
    ``endgame=N``: exact play of the last N plies of an open-book hand end (see ``BotPolicy``); default: the model
    card's ``"endgame"`` (0 when it has none). ``endgame_worlds=W``: closed end games too, over W sampled deals (see
    ``BotPolicy``); default: the card's ``"endgame_worlds"`` (0 when it has none: open books only).

    A search bot (its card has ``"search"``) gives its ``az`` search (``Bot.search_policy``; ``endgame=N`` sets the
    search's exact end game); ``search=false`` plays its network alone, as a network-only bot."""
    if path is None:
        found = shipped_bot(rules)
        if found is None:
            have = sorted(d.name for d in SHIPPED_BOTS.iterdir() if (d / MODEL_CARD).is_file())
            raise AgentSpecError(
                f"agent 'bot': no shipped bot plays {get_rules(rules).name!r} (shipped: {', '.join(have)}); give an "
                "export directory: bot:path=DIR"
            )
        path = str(found)
        any_variant = any_variant or found.name != get_rules(rules).name
    if not isinstance(path, (str, Path)) or not str(path):
        raise AgentSpecError(f"agent bot: path must be an export directory, got {path!r}")
    if prefer not in ("onnx", "numpy"):
        raise AgentSpecError(f"agent bot:path={path}: prefer must be 'onnx' or 'numpy', got {prefer!r}")
    for opt, value in (("sample", sample), ("any_variant", any_variant), ("search", search)):
        if not (isinstance(value, (bool, np.bool_, int)) and value in (0, 1)):
            raise AgentSpecError(f"agent bot:path={path}: {opt} must be true or false, got {value!r}")
    if not whole_number(threads, 1, MAX_THREADS):
        raise AgentSpecError(f"agent bot:path={path}: threads must be an integer in 1..{MAX_THREADS}, got {threads!r}")
    if endgame is not None and not whole_number(endgame, 0):
        raise AgentSpecError(
            f"agent bot:path={path}: endgame must be >= 0 plies (0: the policy alone), got {endgame!r}"
        )
    if endgame_worlds is not None and not whole_number(endgame_worlds, 0, MAX_WORLDS):
        raise AgentSpecError(
            f"agent bot:path={path}: endgame_worlds must be >= 0 sampled deals and at most {MAX_WORLDS}, as in a "
            f"model card (0: open-book end games only), got {endgame_worlds!r}"
        )
    rules = get_rules(rules)
    d = Path(str(path))
    card_path = d / MODEL_CARD
    mtime = card_path.stat().st_mtime if card_path.is_file() else 0.0
    key = (str(d.resolve()), str(prefer), bool(any_variant), rules.name, int(threads), mtime)
    bot = _CACHE.get(key)
    if bot is None:
        try:
            bot = Bot.load(d, prefer=prefer, rules=rules, any_variant=bool(any_variant), threads=int(threads))  # type: ignore[arg-type]
        except BotError as e:
            raise AgentSpecError(f"agent bot:path={path}: {e}") from None
        _CACHE[key] = bot
    if bot.search is not None and search:
        if sample:
            raise AgentSpecError(
                f"agent bot:path={path}: a search bot plays the search's best move; sample=true samples a network: "
                "add search=false to sample its network"
            )
        if endgame_worlds is not None:
            raise AgentSpecError(
                f"agent bot:path={path}: endgame_worlds is for the network alone: add search=false (the search "
                "already solves its end games over sampled deals)"
            )
        return bot.search_policy(rules, seed, **({} if endgame is None else {"endgame": int(endgame)}))
    if not bot.has_network:
        raise AgentSpecError(
            f"agent bot:path={path}: a search-only bot (pimc, no network) has no network to play alone; drop "
            "search=false"
        )
    if endgame is None:
        endgame = int(bot.card.get("endgame", 0))
    if endgame_worlds is None:
        endgame_worlds = int(bot.card.get("endgame_worlds", 0))
    return BotPolicy(rules, bot, seed, sample=bool(sample), endgame=int(endgame), endgame_worlds=int(endgame_worlds))
