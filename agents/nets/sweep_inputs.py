"""Sweep inputs: what the table would offer the next players, computed inside a plain MLP by three hand-set layers.

A network that leaves a sweepable table has to combine two parts of its observation: the ``plays`` block (per card
value ``v``, the table's sum after playing a card of value ``v``) and the ``unseen`` block (the cards still in the
other hands). "How many unseen cards could sweep what I leave?" is a lookup of the one by the other, which an MLP
learns only roughly. ``sweep_inputs`` computes it exactly, 2R numbers for R card values:

- ``exposure[v]``: the unseen cards (/ 4 suits) of the value the table would sum to after playing a card of value
  ``v``; 0 when the play empties the table or leaves more than the highest value (no single card then takes it all).
  Every unseen card of that value sweeps the table if its holder plays it.
- ``unseen[r]``: the unseen cards of rank ``r`` / 4.

``distil --inputs sweep`` fits a network on the observation plus these inputs and then **folds them into the
network**: ``sweep_layers`` are three ReLU layers, set by hand and exact, that pass the observation through and
compute the counts and the exposures from it; ``compose`` puts them in front of the fitted layers (the first fitted
layer absorbs the last linear step). The result is an ordinary MLP over the ordinary observation: the bot format,
ONNX, ``az``, ``evaluate.py`` and the checkpoint loaders need nothing new. The pass-through relies on every
observation value being >= 0, which ``observe`` guarantees for the variants without cirulla's blocks.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agents.nets.weights import Layers
from scopa_env.engine import observation
from scopa_env.engine.observation import PLAY_SUM_SCALE
from scopa_env.rules import Rules

__all__ = ["compose", "sweep_input_size", "sweep_inputs", "sweep_layers", "unfold"]
SUM_SHARPNESS = 2.0  # sums are whole numbers: an indicator 1 - 2|a - r| is 1 at a = r and <= -1 elsewhere


def _blocks(rules: Rules) -> tuple[int, int, int, int, npt.NDArray[np.int64]]:
    """``(obs size, unseen start, plays start, suits, rank of every card)``; raises for variants without them."""
    layout = {name: (start, stop) for name, start, stop, _ in observation.observation_layout(rules)}
    if rules.fifteens or "unseen" not in layout or "plays" not in layout:
        raise ValueError(f"sweep inputs need the unseen and plays blocks of scopa's observation; {rules.name} differs")
    r = rules.deck.num_ranks
    return (
        observation.observation_size(rules),
        layout["unseen"][0],
        layout["plays"][0],
        rules.num_cards // r,
        np.asarray(rules.deck.rank, dtype=np.int64),
    )


def sweep_input_size(rules: Rules) -> int:
    """The number of sweep inputs: 2 per card value."""
    return 2 * rules.deck.num_ranks


def sweep_inputs(rules: Rules, obs: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """(n, 2R) float32: ``exposure`` then ``unseen`` by rank (module docstring) of observations ``obs`` (n, size)."""
    size, unseen, plays, suits, rank = _blocks(rules)
    r = rules.deck.num_ranks
    obs = np.asarray(obs, dtype=np.float32)
    if obs.ndim != 2 or obs.shape[1] != size:
        raise ValueError(f"obs must be (n, {size}) {rules.name} observations, got shape {obs.shape}")
    counts = np.zeros((obs.shape[0], r), dtype=np.float32)
    np.add.at(counts.T, rank, obs[:, unseen : unseen + rules.num_cards].T)
    after = np.rint(obs[:, plays : plays + 4 * r].reshape(-1, r, 4)[:, :, 3] * PLAY_SUM_SCALE).astype(np.int64)
    takes = (after >= 1) & (after <= r)  # values are 1..R: a card of value `after` takes the whole table
    exposure = np.where(takes, np.take_along_axis(counts, np.clip(after - 1, 0, r - 1), axis=1), 0.0)
    return np.concatenate([exposure, counts], axis=1).astype(np.float32) / np.float32(suits)


def sweep_layers(rules: Rules) -> Layers:
    """Three ReLU layers ``(weight (out, in), bias)`` from the observation (size D) to ``[obs, counts, products]``
    (D + R + R*R): ``counts[k]`` the unseen cards of rank k, ``products[v, s]`` = ``counts[s - 1]`` when a card of
    value v leaves the table summing to s (else 0). ``compose`` folds the last step (the sum over s, and the
    division by the suits) into the first fitted layer."""
    d, unseen, plays, suits, rank = _blocks(rules)
    r = rules.deck.num_ranks
    eye = np.eye(d, dtype=np.float32)
    # layer 1: x; counts; relu(a_v - s) and relu(s - a_v) for every value v and sum s in 1..R (a_v: the sum after v)
    w1 = np.zeros((d + r + 2 * r * r, d), dtype=np.float32)
    b1 = np.zeros(d + r + 2 * r * r, dtype=np.float32)
    w1[:d] = eye
    w1[d + rank, unseen + np.arange(rules.num_cards)] = 1.0
    for v in range(r):
        for s in range(1, r + 1):
            up, down = d + r + 2 * (v * r + s - 1), d + r + 2 * (v * r + s - 1) + 1
            w1[up, plays + 4 * v + 3], b1[up] = PLAY_SUM_SCALE, -s
            w1[down, plays + 4 * v + 3], b1[down] = -PLAY_SUM_SCALE, s
    # layer 2: x; counts; [a_v == s] = relu(1 - 2 relu(a_v - s) - 2 relu(s - a_v))
    w2 = np.zeros((d + r + r * r, d + r + 2 * r * r), dtype=np.float32)
    b2 = np.zeros(d + r + r * r, dtype=np.float32)
    w2[: d + r, : d + r] = np.eye(d + r, dtype=np.float32)
    for i in range(r * r):
        w2[d + r + i, d + r + 2 * i : d + r + 2 * i + 2] = -SUM_SHARPNESS
        b2[d + r + i] = 1.0
    # layer 3: x; counts; counts[s - 1] * [a_v == s] = relu(counts[s - 1] + suits * [a_v == s] - suits)
    w3 = np.zeros((d + r + r * r, d + r + r * r), dtype=np.float32)
    b3 = np.zeros(d + r + r * r, dtype=np.float32)
    w3[: d + r, : d + r] = np.eye(d + r, dtype=np.float32)
    for v in range(r):
        for s in range(1, r + 1):
            i = d + r + v * r + s - 1
            w3[i, d + s - 1], w3[i, i], b3[i] = 1.0, suits, -suits
    return [(w1, b1), (w2, b2), (w3, b3)]


def compose(rules: Rules, fitted: Layers) -> Layers:
    """One MLP over the observation: ``sweep_layers`` then ``fitted`` (layers over ``[obs, sweep_inputs]``, D + 2R
    wide at the input), the first fitted layer taking the hand-set layers' outputs directly. Its logits equal the
    fitted layers' on ``[obs, sweep_inputs(obs)]`` (up to float rounding)."""
    d, _, _, suits, _ = _blocks(rules)
    r = rules.deck.num_ranks
    w, b = fitted[0]
    if w.shape[1] != d + 2 * r:
        raise ValueError(f"the fitted network takes {w.shape[1]} inputs; sweep inputs make {d + 2 * r}")
    folded = np.zeros((w.shape[0], d + r + r * r), dtype=np.float32)
    folded[:, :d] = w[:, :d]
    folded[:, d : d + r] = w[:, d + r :] / suits  # the unseen counts
    folded[:, d + r :] = np.repeat(w[:, d : d + r], r, axis=1) / suits  # exposure[v] = sum over s of products[v, s]
    return [*sweep_layers(rules), (folded, b.astype(np.float32)), *fitted[1:]]


def unfold(rules: Rules, layers: Layers) -> Layers:
    """The fitted layers (over ``[obs, sweep_inputs]``) of a network that ``compose`` made, so that a fit can start
    from it (``agents.training.distil --init``): ``unfold(rules, compose(rules, fitted))`` gives ``fitted`` back (up to
    float rounding). Raises ``ValueError`` for a network whose first three layers are not ``sweep_layers``."""
    d, _, _, suits, _ = _blocks(rules)
    r = rules.deck.num_ranks
    hand_set = sweep_layers(rules)
    if len(layers) < 5 or not all(
        np.array_equal(w, hw) and np.array_equal(b, hb) for (w, b), (hw, hb) in zip(layers[:3], hand_set, strict=True)
    ):
        raise ValueError("the network does not start with the hand-set sweep layers (not fitted with sweep inputs)")
    folded, b = layers[3]
    if folded.shape[1] != d + r + r * r:
        raise ValueError(f"the fourth layer takes {folded.shape[1]} inputs; the sweep layers give {d + r + r * r}")
    exposure = folded[:, d + r :].reshape(-1, r, r)  # (out, value, sum): the same column for every sum
    if not np.allclose(exposure, exposure[:, :, :1], rtol=0, atol=1e-6 * max(1.0, float(np.abs(exposure).max()))):
        raise ValueError("the fourth layer's exposure columns differ across sums: it is not a folded sweep network")
    w = np.zeros((folded.shape[0], d + 2 * r), dtype=np.float32)
    w[:, :d] = folded[:, :d]
    w[:, d : d + r] = exposure[:, :, 0] * suits
    w[:, d + r :] = folded[:, d : d + r] * suits
    return [(w, np.asarray(b, dtype=np.float32)), *layers[4:]]
