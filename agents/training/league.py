"""The trainer's league: the opponents a learner meets, sampled by prioritized fictitious self-play (PFSP).

Members are the *baselines* (``random``, ``greedy``, ``expert``... never dropped) and frozen *snapshots* of the
learner taken every K training steps (the newest ``max_snapshots`` are kept). The league tracks the learner's
recent score against each member from the episodes it finishes (win 1, draw 1/2, loss 0; an exponential moving
window of about ``window`` episodes, plus a prior of one drawn game) and samples opponents with weight

    w_i = max((1 - p_i) ** power, floor)

so opponents the learner does not beat yet are met most, and beaten ones still now and then. A share
``self_play_fraction`` of the episodes goes to the newest snapshot whatever its score (plain self-play).
``snapshot_share`` caps the snapshots' total share (self-play included): PFSP alone weighs alike every member the
learner beats about half the time, so ten snapshots of a learner at its plateau would take most of the games from
a baseline it still loses to.

The trainer pushes the pool into the vector env between rollouts and feeds back the finished episodes::

    league = League([make_agent("random", rules), make_agent("greedy", rules)], max_snapshots=8)
    league.publish(venv)                         # venv.set_opponents(policies, probs)
    ... infos with "episode_pool", "episode_opponent", "episode_result" ...
    league.record(pools, opponents, results)
    league.add_snapshot(NeuralPolicy.from_sb3_policy(model.policy, rules, "snapshot@1000000"), step=1_000_000)

Episodes are attributed to members through the pool *generation* (the env's ``episode_pool``: 0 for the pool the
env was built with, +1 per ``set_opponents``), so results of games that started before a republish still count for
the right member.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from scopa_env.games.policy import Policy

__all__ = ["League", "Member", "pfsp_weights"]


class _OpponentSink(Protocol):
    def set_opponents(self, policies: Sequence[Policy], probs: Sequence[float] | None = None) -> None: ...


@dataclass
class Member:
    """One opponent of the league and the learner's recent results against it."""

    uid: int
    """Unique id within the league (never reused)."""
    name: str
    """Display name: the baseline's spec, or ``snapshot@<step>``."""
    policy: Policy
    """The opponent policy."""
    kind: Literal["baseline", "snapshot"]
    """Baselines are kept for good; snapshots are dropped when the league holds more than ``max_snapshots``."""
    step: int = 0
    """Training step at which the member joined."""
    score: float = 0.0
    """Decayed sum of the learner's results (win 1, draw 0.5, loss 0)."""
    games: float = 0.0
    """Decayed number of episodes (tends to ``window``)."""
    total_games: int = 0
    """All episodes played against this member."""

    def win_rate(self, prior: float = 1.0) -> float:
        """The learner's recent score against this member, shrunk toward 1/2 by ``prior`` drawn games."""
        return (self.score + 0.5 * prior) / (self.games + prior)


def pfsp_weights(win_rates: npt.ArrayLike, power: float = 2.0, floor: float = 0.05) -> npt.NDArray[np.float64]:
    """PFSP "hard" weights ``max((1 - p) ** power, floor)`` for the learner's win rates ``p`` (not normalized)."""
    p = np.clip(np.asarray(win_rates, dtype=np.float64), 0.0, 1.0)
    return np.maximum((1.0 - p) ** power, floor)


class League:
    """Baselines plus the newest snapshots of the learner, with PFSP sampling; see the module docstring."""

    snapshot_share: float = 1.0  # the default for leagues pickled before the cap existed

    def __init__(
        self,
        baselines: Sequence[Policy],
        max_snapshots: int = 8,
        power: float = 2.0,
        floor: float = 0.05,
        self_play_fraction: float = 0.0,
        window: int = 2000,
        prior: float = 1.0,
        snapshot_share: float = 1.0,
    ) -> None:
        if max_snapshots < 0:
            raise ValueError(f"max_snapshots must be >= 0, got {max_snapshots}")
        if power < 0:
            raise ValueError(f"the PFSP power must be >= 0, got {power}")
        if not 0.0 < floor <= 1.0:
            raise ValueError(f"the PFSP floor must be in (0, 1] so every member keeps a chance, got {floor}")
        if not 0.0 <= self_play_fraction <= 1.0:
            raise ValueError(f"self_play_fraction must be in [0, 1], got {self_play_fraction}")
        if not 0.0 <= snapshot_share <= 1.0:
            raise ValueError(f"snapshot_share must be in [0, 1], got {snapshot_share}")
        if window < 1:
            raise ValueError(f"the win-rate window must be at least 1 episode, got {window}")
        if prior <= 0:
            raise ValueError(f"the win-rate prior must be positive, got {prior}")
        self.max_snapshots = int(max_snapshots)
        self.power = float(power)
        self.floor = float(floor)
        self.self_play_fraction = float(self_play_fraction)
        self.window = int(window)
        self.prior = float(prior)
        self.snapshot_share = float(snapshot_share)
        self.members: list[Member] = []
        self._next_uid = 0
        self._generations: dict[int, list[int]] = {}
        self._generation = -1
        for policy in baselines:
            self._add(policy.name, policy, "baseline", 0)
        if not self.members and max_snapshots == 0:
            raise ValueError("the league has no baselines and keeps no snapshots: it would have no opponent")

    # ------------------------------------------------------------------------------------------------ members

    def _add(self, name: str, policy: Policy, kind: Literal["baseline", "snapshot"], step: int) -> Member:
        member = Member(self._next_uid, name, policy, kind, int(step))
        self._next_uid += 1
        self.members.append(member)
        return member

    @property
    def snapshots(self) -> list[Member]:
        """Snapshot members, oldest first."""
        return [m for m in self.members if m.kind == "snapshot"]

    @property
    def baselines(self) -> list[Member]:
        return [m for m in self.members if m.kind == "baseline"]

    def add_snapshot(self, policy: Policy, step: int, name: str | None = None) -> Member:
        """Add a frozen copy of the learner; drops the oldest snapshot beyond ``max_snapshots``."""
        if self.max_snapshots == 0:
            raise ValueError("this league keeps no snapshots (max_snapshots=0)")
        member = self._add(name or f"snapshot@{step}", policy, "snapshot", step)
        snaps = self.snapshots
        for old in snaps[: max(0, len(snaps) - self.max_snapshots)]:
            self.members.remove(old)
        return member

    def member(self, uid: int) -> Member | None:
        for m in self.members:
            if m.uid == uid:
                return m
        return None

    # ------------------------------------------------------------------------------------------------ sampling

    def win_rates(self) -> npt.NDArray[np.float64]:
        """(M,) the learner's recent score against each member."""
        return np.array([m.win_rate(self.prior) for m in self.members], dtype=np.float64)

    def probs(self) -> npt.NDArray[np.float64]:
        """(M,) sampling probability of each member: PFSP, plus ``self_play_fraction`` on the newest snapshot, with
        the snapshots' total scaled down to ``snapshot_share`` when it is larger (and baselines exist)."""
        if not self.members:
            raise ValueError("the league is empty: add a baseline or a snapshot first")
        w = pfsp_weights(self.win_rates(), self.power, self.floor)
        p = w / w.sum()
        snaps = [i for i, m in enumerate(self.members) if m.kind == "snapshot"]
        if snaps and self.self_play_fraction > 0:
            p *= 1.0 - self.self_play_fraction
            p[snaps[-1]] += self.self_play_fraction
        share = p[snaps].sum() if snaps else 0.0
        if share > self.snapshot_share and share < 1.0:
            is_snap = np.zeros(p.size, dtype=np.bool_)
            is_snap[snaps] = True
            p[is_snap] *= self.snapshot_share / share
            p[~is_snap] *= (1.0 - self.snapshot_share) / (1.0 - share)
        return p

    def publish(self, env: _OpponentSink) -> int:
        """Push the current pool and probabilities into ``env``; returns the pool generation it starts.

        The first call must be for the pool the env was built with (generation 0) or the first ``set_opponents``
        on an env built with some other pool; ``register_initial_pool`` covers the latter.
        """
        probs = self.probs()
        env.set_opponents([m.policy for m in self.members], probs.tolist())
        return self._new_generation()

    def register_initial_pool(self) -> int:
        """Record the current members as the pool the env was built with (generation 0); call before ``publish``."""
        if self._generation >= 0:
            raise ValueError("the initial pool must be registered before the first publish")
        return self._new_generation()

    def _new_generation(self) -> int:
        self._generation += 1
        self._generations[self._generation] = [m.uid for m in self.members]
        for g in [g for g in self._generations if g < self._generation - 16]:
            del self._generations[g]  # episodes never last 16 republishes
        return self._generation

    @property
    def generation(self) -> int:
        """The pool generation most recently published (-1 before any)."""
        return self._generation

    def record(self, pools: npt.ArrayLike, opponents: npt.ArrayLike, results: npt.ArrayLike) -> int:
        """Account finished episodes: pool generation, opponent index in that pool, result (+1 / 0 / -1).

        Returns the number of episodes attributed (those against members since dropped are ignored).
        """
        pools = np.asarray(pools, dtype=np.int64).reshape(-1)
        opponents = np.asarray(opponents, dtype=np.int64).reshape(-1)
        scores = (np.asarray(results, dtype=np.float64).reshape(-1) + 1.0) / 2.0
        if not pools.size == opponents.size == scores.size:
            raise ValueError(
                f"pools, opponents and results differ in length: {pools.size}, {opponents.size}, {scores.size}"
            )
        by_uid: dict[int, list[float]] = {}
        for g, o, s in zip(pools.tolist(), opponents.tolist(), scores.tolist(), strict=True):
            uids = self._generations.get(g)
            if uids is None or not 0 <= o < len(uids):
                continue
            by_uid.setdefault(uids[o], []).append(s)
        counted = 0
        keep = 1.0 - 1.0 / self.window  # per-episode decay: about `window` recent episodes count
        for uid, vals in by_uid.items():
            m = self.member(uid)
            if m is None:
                continue
            n = len(vals)
            old = keep**n
            fresh = (1.0 - old) / (1.0 - keep) if keep < 1.0 else float(n)  # total weight of the n new episodes
            m.score = m.score * old + sum(vals) / n * fresh
            m.games = m.games * old + fresh
            m.total_games += n
            counted += n
        return counted

    # ------------------------------------------------------------------------------------------------ reporting

    def summary(self) -> dict[str, Any]:
        """Composition and per-member numbers, for logs and TensorBoard."""
        probs = self.probs()
        rates = self.win_rates()
        return {
            "size": len(self.members),
            "baselines": len(self.baselines),
            "snapshots": len(self.snapshots),
            "generation": self._generation,
            "members": [
                {
                    "name": m.name,
                    "kind": m.kind,
                    "step": m.step,
                    "win_rate": float(rates[i]),
                    "prob": float(probs[i]),
                    "games": m.total_games,
                }
                for i, m in enumerate(self.members)
            ],
        }

    def __repr__(self) -> str:
        names = ", ".join(m.name for m in self.members)
        return f"League({len(self.members)} members: {names})"
