"""Positions and a value network for ``vpimc`` (``agents.nets.vpimc``: pimc with a learned leaf value, issue 53's
learned search): ``collect`` plays hands and keeps the positions with their outcomes, ``fit`` fits the value MLP::

    python bench/value_pimc.py collect --hands 100000 --seed 103 --temp 0.5 --all-seats --out runs/value3/d3.npz
    python bench/value_pimc.py fit --data runs/value3/d3.npz --arch 512,256 --epochs 3 --threads 1 --seed 3 \
        --out runs/value3/v3.npz
    python evaluate.py --variant scopone-scientifico \
        --gauntlet "v=vpimc:value=runs/value3/v3.npz,worlds=128,endgame=10,prior=2,reply=3,mix=0.5,rworlds=256" \
        --agents "tuned=pimc:worlds=256,endgame=10,prior=2" --hands 1000 --seed 20261601 --workers 1

``collect`` plays hands with a network's policy (a bot directory; its card sampled from the softmax at ``--temp``,
greedy's capture for that card, as ``az``'s rollouts) and keeps, after every move, the features from the mover's
chair (``--all-seats``: from every chair) and the hand's final margin of that chair's side; with ``--share P``, a
share P of those positions (drawn at random), each valued instead by the network's argmax play from it to the end of
the hand (the outcome of the very deal the features show, without the sampled play's luck; about 12 s of one core a
thousand hands at P = 0.25, where the plain collect takes 2 s). ``fit`` fits the MLP
(mean squared error) and writes its weights as plain arrays (``agents.nets.vpimc.read_value_net`` reads them with
``allow_pickle=False``: nothing in the file runs). Measured in docs/strength.md. (``--plugin scopa_bench.value_pimc``,
which older commands name, still works: the agent is registered by ``agents.nets.vpimc``, which this imports.)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import load_network
from agents.cli.numbers import float_arg, int_arg
from agents.cli.settings import add_field_options, parse_options, setting
from agents.nets.az import net_rollout_policy, one_blas_thread
from agents.nets.vpimc import SCOPE_SCALE, raw_features, scope_columns, scope_margin
from agents.nets.weights import read_npz
from agents.search.lookahead import play_ply, resolve_knocks, rollout
from scopa_env.engine import core
from scopa_env.engine.core import Phase, State
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.scoring import margin_vs_mean_of_others

__all__ = ["collect", "fit", "read_data"]

MAX_DATA_BYTES = 1 << 34  # collect's data: 289 bytes a position (a million hands from every chair: 45 GB)


def collect(
    variant: str,
    net_path: str,
    hands: int,
    seed: int,
    temp: float,
    batch: int = 1000,
    all_seats: bool = False,
    share: float = 0.0,
) -> dict[str, npt.NDArray[Any]]:
    """Play ``hands`` hands with the network's policy; return the features after every move (from the mover's seat)
    and the hand's final margin of the mover's side. With ``share`` > 0, only that share of the positions (drawn at
    random), each with the margin of the network's best play from there on (its argmax card, nothing sampled: the
    outcome of the very deal the features show, without the sampled play's luck)."""
    rules = get_rules(variant)
    net = load_network(rules, net_path)
    rng = np.random.default_rng(seed)
    policy = net_rollout_policy(net, temp, lambda: rng)
    best_play = net_rollout_policy(net)
    xs, ys, hs = [], [], []
    start = time.monotonic()
    for first in range(0, hands, batch):
        b = min(batch, hands - first)
        state = core.reset(rules, (seed * 1_000_003 + first + np.arange(b)).astype(np.uint64))
        resolve_knocks(rules, state)
        feats: list[npt.NDArray[np.uint8]] = []
        owner: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], int]] = []  # games, chairs, first snapshot row
        snaps: list[State] = []
        rows = 0
        points = np.zeros((b, rules.num_sides))
        with one_blas_thread():
            while True:
                live = np.flatnonzero(state.phase != Phase.DONE)
                if live.size == 0:
                    break
                mover = state.current.astype(np.intp).copy()
                ended, pts = play_ply(rules, state, live, policy)
                points[ended] = pts[ended]
                keep = live[~ended[live]]
                if share > 0:
                    keep = keep[rng.random(keep.size) < share]
                if keep.size:
                    after = state.take(keep)
                    for k in range(rules.num_players if all_seats else 1):  # the mover's chair, then the others'
                        seat = (mover[keep] + k) % rules.num_players
                        feats.append(raw_features(rules, after, seat))
                        owner.append((keep, seat, rows))
                    if share > 0:  # the positions to play out; without a share the hand's outcome is every row's
                        snaps.append(after)
                        rows += keep.size
            # each position's outcome: the hand's (one row a game), or its own best play's (one row a position)
            outcomes = rollout(rules, State.concat(snaps), best_play) if share > 0 and snaps else points
        margins = margin_vs_mean_of_others(outcomes)
        side_of = np.asarray(rules.seat_side, dtype=np.intp)
        for f, (g, m, at) in zip(feats, owner, strict=True):
            row = at + np.arange(g.size) if share > 0 else g
            xs.append(f)
            ys.append(margins[row, side_of[m]].astype(np.float32))
            hs.append((first + g).astype(np.int32))
        done = first + b
        el = time.monotonic() - start
        print(
            f"collect: {done}/{hands} hands, {sum(len(y) for y in ys):,} positions, {el:.0f}s, "
            f"ETA {el / done * (hands - done):.0f}s",
            file=sys.stderr,
            flush=True,
        )
    return {"x": np.concatenate(xs), "y": np.concatenate(ys), "hand": np.concatenate(hs)}


def fit(
    rules: Rules,
    x: npt.NDArray[np.uint8],
    y: npt.NDArray[np.float32],
    arch: list[int],
    epochs: int,
    seed: int,
    threads: int,
    hand: npt.NDArray[np.int64] | None = None,
) -> tuple[dict[str, npt.NDArray[np.float32]], dict[str, float]]:
    """Fit the value MLP to ``y`` (MSE, Adam, cosine decay); 5% held out: whole hands where ``hand`` (each row's
    hand) is given, since a hand's positions (and each from four chairs) share its outcome, else rows. Returns the
    arrays and the fit's losses."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    if hand is None:
        order = rng.permutation(len(y))
        hold, train = order[: len(y) // 20], order[len(y) // 20 :]
    else:
        held_hands = rng.random(int(hand.max()) + 1) < 0.05
        held_hands[int(rng.integers(held_hands.size))] = True  # at least one
        hold, train = np.flatnonzero(held_hands[hand]), np.flatnonzero(~held_hands[hand])
    sizes = [x.shape[1], *arch, 1]
    mods: list[Any] = []
    for i in range(len(sizes) - 1):
        mods.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            mods.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*mods)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps = epochs * (len(train) // 2048 + 1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    y = (y - scope_margin(rules, x)).astype(np.float32)  # the network predicts what the scope so far leaves open
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)  # x: raw features (uint8)
    col = torch.ones(x.shape[1])
    col[scope_columns(rules)] = 1.0 / SCOPE_SCALE

    def inp(idx: Any) -> Any:
        return xt[idx].float() * col

    def held() -> float:
        with torch.no_grad():
            out = torch.cat([model(inp(hold[k : k + 65536]))[:, 0] for k in range(0, len(hold), 65536)])
            return float(((out - yt[hold]) ** 2).mean())

    base = float(((yt[hold] - yt[train].mean()) ** 2).mean())
    print(f"fit: {len(train):,} rows, held-out MSE of the mean {base:.3f}", file=sys.stderr, flush=True)
    for e in range(epochs):
        perm = torch.from_numpy(rng.permutation(train))
        for k in range(0, len(perm), 2048):
            idx = perm[k : k + 2048]
            loss = ((model(inp(idx))[:, 0] - yt[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"fit: epoch {e + 1}/{epochs}: held-out MSE {held():.3f}", file=sys.stderr, flush=True)
    arrays: dict[str, npt.NDArray[np.float32]] = {}
    linears = [m for m in mods if isinstance(m, torch.nn.Linear)]
    for i, lin in enumerate(linears):
        arrays[f"W{i}"] = lin.weight.detach().numpy().T.copy()
        arrays[f"b{i}"] = lin.bias.detach().numpy().copy()
    return arrays, {"held_out_mse": held(), "mean_only_mse": base}


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    step: str = setting(option="step", choices=["collect", "fit"], doc="collect positions, or fit the value network")
    out: Path = setting(doc="the data file (collect) or the value network (fit) to write, .npz")
    data: list[Path] = setting(default_factory=list, doc="fit: the data files written by collect", nargs="*")
    variant: str = setting("scopone-scientifico", "the variant")
    net: str = setting("agents/bots/scopone-scientifico", "collect: the network whose play makes the positions")
    hands: int = setting(20000, "collect: hands played, 1..10**6", parse=int_arg(1, 10**6))
    seed: int = setting(0, "collect: the deals' and the sampling's seed; fit: the weights', split's and order's")
    temp: float = setting(0.5, "collect: the temperature of the network's softmax the cards are sampled from")
    all_seats: bool = setting(False, "collect: every position from every seat's chair", negatable=False)
    share: float = setting(
        0.0,
        "collect: keep this share of the positions, each valued by the network's argmax play from it (0: all, "
        "each valued by the hand's sampled play)",
        parse=float_arg(0, 1),
    )
    arch: str = setting("512,256", "fit: hidden layer sizes, comma-separated")
    epochs: int = setting(6, "fit: passes over the rows", parse=int_arg(1, 1000))
    threads: int = setting(2, "fit: torch threads", parse=int_arg(1, 64))


def read_arrays(path: str | Path, max_bytes: int = MAX_DATA_BYTES) -> dict[str, npt.NDArray[Any]]:
    """The arrays of a file this module wrote, through the project's guarded reader (no pickles, sizes checked)."""
    return read_npz(path, max_bytes=max_bytes)


def read_data(paths: list[Path]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32], npt.NDArray[np.int64] | None]:
    """The rows of collect's files, one after another, and each row's hand (numbered apart in each file; None where a
    file has none). Read one file at a time into arrays of the full size: a few GB a file is read at most once more."""
    xs: list[npt.NDArray[np.uint8]] = []
    ys: list[npt.NDArray[np.float32]] = []
    hands: list[npt.NDArray[np.int64]] | None = []
    next_hand = 0
    for path in paths:
        q = read_arrays(path)
        xs.append(q.pop("x"))
        ys.append(q.pop("y"))
        if hands is not None and "hand" in q:
            hands.append(q["hand"].astype(np.int64) + next_hand)
            next_hand = int(hands[-1].max()) + 1
        else:
            hands = None
        del q
    if len(xs) == 1:
        return xs[0], ys[0], hands[0] if hands else None
    x = np.empty((sum(len(v) for v in xs), xs[0].shape[1]), dtype=np.uint8)
    at = 0
    while xs:  # each part freed as it is copied
        part = xs.pop(0)
        x[at : at + len(part)] = part
        at += len(part)
        del part
    return x, np.concatenate(ys), np.concatenate(hands) if hands else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python bench/value_pimc.py",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_field_options(p, Options, typed=True, once=False)
    a = parse_options(p, Options, argv)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    if a.step == "collect":
        data = collect(a.variant, a.net, a.hands, a.seed, a.temp, all_seats=a.all_seats, share=a.share)
        np.savez_compressed(a.out, x=data["x"], y=data["y"], hand=data["hand"])
        print(f"wrote {len(data['y']):,} positions to {a.out}")
        return 0
    if not a.data:
        p.error("fit needs --data FILE [FILE ...] (what collect wrote)")
    x, y, hand = read_data(a.data)
    arch = [int(v) for v in a.arch.split(",")]
    arrays, report = fit(get_rules(a.variant), x, y, arch, a.epochs, a.seed, a.threads, hand)
    np.savez(a.out, **arrays)  # type: ignore[arg-type]
    print(f"wrote {a.out}: {report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
