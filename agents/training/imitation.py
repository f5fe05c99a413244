"""Warm start by imitation: clone a teacher agent's decisions into a MaskablePPO policy before self-play.

The teacher (e.g. ``expert``) plays every seat of many games on the batched core; each decision gives one
example ``(observation, legal mask, teacher action, return)``, where the return is the hand's points margin of the
acting seat's side (the quantity ``train.py`` rewards with ``reward="points"``, ``episode="hand"``, gamma 1).
The policy's actor is fitted by cross-entropy on the masked logits and its critic by mean squared error on the
returns, so PPO starts from the teacher's play with a matching value function instead of from random play.

    data = collect_teacher_data("classic", "expert", num_hands=20_000, seed=0)   # ray="auto": on a Ray cluster
    losses = pretrain_policy(model.policy, data, epochs=3)

``progress_bar`` shows either step of the warm start (and any other long wait) as a bar with its ETA.

``distill_actions`` is the same actor loss as a step of training: ``train.py`` uses it after each PPO update to pull
the policy toward the exact end-game solver's moves on the learner's own open end-game decisions (DAgger-style:
the states come from the learner's play, the labels from the solver).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from agents.base import make_agent
from scopa_env.engine import core
from scopa_env.games.driver import Decision, play
from scopa_env.games.policy import MASKED_LOGIT, Policy
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.scoring import margin_vs_best_other

__all__ = [
    "TeacherData",
    "actor_optimizer",
    "collect_teacher_data",
    "distill_actions",
    "policy_heads",
    "pretrain_policy",
    "progress_bar",
    "soft_cross_entropy",
]

LINE_INTERVAL_S = 30.0
"""Seconds between the plain progress lines ``progress_bar`` prints when stderr is not a terminal (a log file)."""


@contextlib.contextmanager
def progress_bar(total: int, desc: str, unit: str, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """A progress bar with its ETA on stderr for a wait of ``total`` ``unit``s; yields ``update(n)``.

    On a terminal it is a tqdm bar; otherwise (a log file, a pipe) a plain line every ``LINE_INTERVAL_S`` seconds
    and one at the end, so logs show the wait too. ``enabled=False`` shows nothing.
    """
    if not enabled or total <= 0:
        yield lambda n: None
        return
    if sys.stderr.isatty():
        from tqdm import tqdm

        with tqdm(total=total, desc=desc, unit=unit, unit_scale=True, dynamic_ncols=True, leave=True) as bar:
            yield bar.update
        return
    t0 = last = time.perf_counter()
    done = 0

    def line() -> None:
        elapsed = time.perf_counter() - t0
        rate = done / max(elapsed, 1e-9)
        eta = f", about {(total - done) / rate:.0f} s left" if 0 < done < total else ""
        print(f"{desc}: {done:,}/{total:,} {unit}s ({100 * done / total:.0f}%), {elapsed:.0f} s{eta}", file=sys.stderr)

    def update(n: int) -> None:
        nonlocal done, last
        done += n
        now = time.perf_counter()
        if now - last >= LINE_INTERVAL_S:
            last = now
            line()

    yield update
    line()


@dataclass
class TeacherData:
    """Teacher decisions, one row each."""

    obs: npt.NDArray[np.float32]
    """(n, obs_size) observation of the acting seat."""
    mask: npt.NDArray[np.bool_]
    """(n, num_cards) legal actions."""
    action: npt.NDArray[np.int64]
    """(n,) the teacher's action."""
    ret: npt.NDArray[np.float32]
    """(n,) hand points margin of the acting seat's side (its side's points minus the best other side's)."""

    def __len__(self) -> int:
        return int(self.action.shape[0])


def collect_teacher_data(
    rules: Rules | str,
    teacher: str,
    num_hands: int,
    seed: int = 0,
    batch: int = 512,
    progress: Callable[[int], None] | None = None,
    ray: str | None = None,
) -> TeacherData:
    """Play ``num_hands`` hands (one hand per game, seeds ``seed, seed+1, ...``) with ``teacher`` in every seat.

    The hands are played in batches of ``batch``; the teacher is seeded again with ``seed + lo`` before the batch
    whose first hand is ``lo`` (``lo`` = 0, batch, 2 batch, ...), so each batch depends on its own seeds only, not on
    the batches before it. With ``ray`` (``local``, ``auto`` or a cluster address:
    ``agents.evaluation.cluster.connect``; needs ``pip install 'scopa[ray]'``) the batches are played as Ray tasks, the
    teacher built from its spec on every worker, and concatenated in order: the arrays are identical to those of this
    process. ``progress(hands)`` is called as hands finish.
    """
    rules = get_rules(rules)
    starts = list(range(0, num_hands, batch))
    if ray is not None:
        chunks = _teacher_chunks_on_ray(ray, rules.name, teacher, num_hands, seed, batch, starts, progress)
    else:
        agent = make_agent(teacher, rules, seed=seed)
        chunks = [_teacher_batch(rules, agent, seed, lo, min(num_hands, lo + batch), progress) for lo in starts]
    return TeacherData(*(np.concatenate([c[i] for c in chunks]) for i in range(4)))


def _teacher_batch(
    rules: Rules, agent: Policy, seed: int, lo: int, hi: int, progress: Callable[[int], None] | None
) -> tuple[npt.NDArray[Any], ...]:
    """Hands ``lo`` to ``hi - 1`` (deal seeds ``seed + lo`` ...), the teacher seeded with ``seed + lo``."""
    agent.seed(seed + lo)
    return teacher_games(rules, agent, np.arange(seed + lo, seed + hi, dtype=np.uint64), progress)


_RAY_TEACHERS: dict[tuple[str, str, int], Policy] = {}
"""In a Ray worker process: the teacher built for (variant, spec, seed), reused by that worker's later batches."""


def teacher_batch_remote(variant: str, teacher: str, seed: int, lo: int, hi: int) -> tuple[npt.NDArray[Any], ...]:
    """One batch of teacher hands in a Ray worker (``_teacher_batch``), the teacher built there from its spec."""
    key = (variant, teacher, seed)
    if key not in _RAY_TEACHERS:
        _RAY_TEACHERS.clear()
        _RAY_TEACHERS[key] = make_agent(teacher, get_rules(variant), seed=seed)
    return _teacher_batch(get_rules(variant), _RAY_TEACHERS[key], seed, lo, hi, None)


def _teacher_chunks_on_ray(
    address: str,
    variant: str,
    teacher: str,
    num_hands: int,
    seed: int,
    batch: int,
    starts: list[int],
    progress: Callable[[int], None] | None,
) -> list[tuple[npt.NDArray[Any], ...]]:
    """Every batch as a Ray task (at most twice the cluster's CPUs in flight), results in batch order."""
    from agents.evaluation.cluster import RAY_MAX_RETRIES, cluster_cpus, connect, ray_error

    make_agent(teacher, get_rules(variant), seed=seed)  # a bad spec fails here, not on every worker
    chunks: dict[int, tuple[npt.NDArray[Any], ...]] = {}
    with connect(address) as ray:
        remote = ray.remote(num_cpus=1, max_retries=RAY_MAX_RETRIES, retry_exceptions=False)(teacher_batch_remote)
        window = 2 * cluster_cpus(ray)
        todo = starts[::-1]
        pending: dict[Any, int] = {}
        try:
            while todo or pending:
                while todo and len(pending) < window:
                    lo = todo.pop()
                    pending[remote.remote(variant, teacher, seed, lo, min(num_hands, lo + batch))] = lo
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    lo = pending.pop(ref)
                    try:
                        chunks[lo] = ray.get(ref)
                    except ray.exceptions.RayError as e:
                        raise ray_error(ray, e, f"teacher hands {lo} to {min(num_hands, lo + batch) - 1}") from e
                    if progress is not None:
                        progress(min(num_hands, lo + batch) - lo)
        finally:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
    return [chunks[lo] for lo in starts]


def teacher_games(
    rules: Rules,
    agent: Policy,
    seeds: npt.NDArray[np.uint64],
    progress: Callable[[int], None] | None,
    on_act: Callable[[], None] | None = None,
) -> tuple[npt.NDArray[Any], ...]:
    """(obs, mask, action, return) of every decision of one hand per seed, on the game driver.

    The driver's decision hook captures each decision (observation, mask, action, the acting side) and its step
    hook the hand margins of the games whose hand ended. ``on_act()`` is called with each decision captured (after
    the agent's call), so a caller can keep what the agent computed for it (``search_labels.labelled_hands``).
    """
    side_of = np.array(rules.seat_side)
    b = seeds.size
    obs_l, mask_l, act_l, game_l, side_l = [], [], [], [], []
    margin = np.zeros((b, rules.num_sides), dtype=np.float32)

    def capture(d: Decision) -> None:
        obs_l.append(d.obs)
        mask_l.append(d.mask)
        act_l.append(d.actions)
        game_l.append(d.games)
        side_l.append(side_of[d.state.current[d.games]])
        if on_act is not None:
            on_act()

    def hand_margins(state: core.State, info: core.StepInfo, finished: npt.NDArray[np.bool_]) -> None:
        ended = np.flatnonzero(info.hand_over & finished)
        if ended.size:  # own side's points minus the best other side's
            margin[ended] = margin_vs_best_other(info.hand_points[ended, :, -1])
            if progress is not None:
                progress(int(ended.size))

    lineups = np.zeros((b, rules.num_players), dtype=np.int64)
    play(rules, [agent], lineups, seeds, mode="hands", on_decision=capture, after_step=hand_margins, observe=True)
    games = np.concatenate(game_l)
    sides = np.concatenate(side_l)
    return np.concatenate(obs_l), np.concatenate(mask_l), np.concatenate(act_l), margin[games, sides]


def soft_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy of ``logits`` (n, A) against distributions ``targets`` (n, A)."""
    return -(targets * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


def policy_heads(policy: Any, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """An SB3 actor-critic policy's masked logits (illegal actions at ``MASKED_LOGIT``) and values for a batch."""
    pi_latent, vf_latent = policy.mlp_extractor(policy.extract_features(obs))
    return policy.action_net(pi_latent).masked_fill(~mask, MASKED_LOGIT), policy.value_net(vf_latent).squeeze(-1)


def actor_optimizer(policy: Any, learning_rate: float) -> torch.optim.Adam:
    """An Adam optimizer over the actor's parameters only (policy network and action head)."""
    params = [*policy.mlp_extractor.policy_net.parameters(), *policy.action_net.parameters()]
    if not policy.share_features_extractor:
        params += list(policy.pi_features_extractor.parameters())
    return torch.optim.Adam(params, lr=learning_rate)


def distill_actions(
    policy: Any,
    obs: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_],
    target: npt.NDArray[np.bool_] | npt.NDArray[np.int64],
    coef: float = 1.0,
    batch_size: int = 1024,
    max_grad_norm: float = 0.5,
    seed: int = 0,
    optimizer: torch.optim.Optimizer | None = None,
) -> dict[str, float]:
    """One pass of ``coef`` x ``-log P(target)`` over the rows, stepping ``optimizer`` (default: the policy's own);
    only the actor gets gradients. ``target``: (n,) actions, or (n, D) bool sets of equally good actions (the loss
    is then minus the log of their total probability, so ties between best moves cost nothing). Returns the mean
    loss and the share of rows whose most probable action was already a target.

    A separate optimizer (``actor_optimizer``) keeps these steps from being scaled by the moment estimates of
    another loss: Adam divides by the running size of the gradients it has seen.
    """
    device = policy.device
    optimizer = policy.optimizer if optimizer is None else optimizer
    n = int(mask.shape[0])
    if target.ndim == 1:
        sets = np.zeros(mask.shape, dtype=np.bool_)
        sets[np.arange(n), target] = True
    else:
        sets = np.asarray(target, dtype=np.bool_)
    if not (sets & mask).any(axis=1).all():
        raise ValueError("distill_actions: every row needs at least one legal target action")
    o_all, m_all, t_all = torch.as_tensor(obs), torch.as_tensor(mask), torch.as_tensor(sets)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    policy.set_training_mode(True)
    loss_sum = hits = 0.0
    for lo in range(0, n, batch_size):
        idx = perm[lo : lo + batch_size]
        o, m, t = o_all[idx].to(device), m_all[idx].to(device), t_all[idx].to(device)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(o))).masked_fill(
            ~m, MASKED_LOGIT
        )
        nll = torch.logsumexp(logits, dim=1) - torch.logsumexp(logits.masked_fill(~t, MASKED_LOGIT), dim=1)
        loss = coef * nll.mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
        optimizer.step()
        loss_sum += loss.item() * idx.numel()
        hits += t.gather(1, logits.argmax(dim=1, keepdim=True)).sum().item()
    policy.set_training_mode(False)
    return {"loss": loss_sum / max(n, 1), "accuracy": hits / max(n, 1)}


def pretrain_policy(
    policy: Any,
    data: TeacherData,
    epochs: int = 3,
    batch_size: int = 4096,
    learning_rate: float = 1e-3,
    value_coef: float = 0.5,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    targets: npt.NDArray[np.float32] | None = None,
) -> dict[str, float]:
    """Fit an SB3 ``MaskableActorCriticPolicy`` to teacher data; returns the last epoch's mean losses and accuracy.

    ``targets``: (n, A) distributions over actions to fit instead of ``data.action`` (soft cross-entropy; the
    accuracy is then the share of rows whose most probable action is the target's). ``progress(rows)`` is called
    after each minibatch (``epochs * len(data)`` rows in all)."""
    device = policy.device
    gen = torch.Generator().manual_seed(seed)
    obs = torch.as_tensor(data.obs)
    mask = torch.as_tensor(data.mask)
    act = torch.as_tensor(data.action)
    ret = torch.as_tensor(data.ret)
    soft = None if targets is None else torch.as_tensor(targets)
    opt = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    policy.set_training_mode(True)
    stats: dict[str, float] = {}
    n = len(data)
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        tot = {"policy_loss": 0.0, "value_loss": 0.0, "accuracy": 0.0}
        batches = 0
        for lo in range(0, n, batch_size):
            idx = perm[lo : lo + batch_size]
            o, m, a, r = obs[idx].to(device), mask[idx].to(device), act[idx].to(device), ret[idx].to(device)
            logits, values = policy_heads(policy, o, m)
            if soft is not None:
                t = soft[idx].to(device)
                p_loss = soft_cross_entropy(logits, t)
                a = t.argmax(dim=1)
            else:
                p_loss = F.cross_entropy(logits, a)
            v_loss = F.mse_loss(values, r)
            loss = p_loss + value_coef * v_loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            opt.step()
            tot["policy_loss"] += p_loss.item()
            tot["value_loss"] += v_loss.item()
            tot["accuracy"] += (logits.argmax(dim=1) == a).float().mean().item()
            batches += 1
            if progress is not None:
                progress(int(idx.numel()))
        stats = {k: v / max(batches, 1) for k, v in tot.items()}
    policy.set_training_mode(False)
    return stats
