"""Statistics for head-to-head evaluation: paired margins, Wilson intervals, Bradley-Terry / Elo ratings, SPRT.

Everything here is numpy and the standard library; it knows nothing about cards. The tournament
(``agents.evaluation.schedule``) reduces each pairing to *deal groups*: one deal (a game seed) played once per seat
rotation, ``L`` games in all (``L = 2`` with two sides). A group gives

- a **margin**: the row agent's points per hand minus the column agent's, averaged over the group's games;
- a **score** in half points ``h = 0..2L``: each game is worth 2 (win), 1 (draw) or 0 (loss) to the row agent.

Deal groups are independent (the deals are), the games inside a group are not (they share the cards), so every
interval below is computed over groups, never over games.

>>> round(wilson_interval(60, 100).low, 3)
0.502
>>> round(score_to_elo(0.75), 1)
190.8
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "SPRT",
    "DealHistogram",
    "Interval",
    "PairingStats",
    "RatingTable",
    "SPRTResult",
    "bootstrap_ratings",
    "elo_to_score",
    "fit_bradley_terry",
    "likelihood_of_superiority",
    "mean_interval",
    "pairing_stats",
    "score_to_elo",
    "student_t_quantile",
    "wilson_interval",
]

ELO_PER_NATURAL = 400.0 / math.log(10.0)
"""Elo points per natural-log unit of the Bradley-Terry strength (P(i beats j) = 1 / (1 + 10^((r_j - r_i) / 400)))."""


# --------------------------------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval (NaN bounds when undefined, e.g. one sample)."""

    value: float
    """Point estimate."""
    low: float
    """Lower bound."""
    high: float
    """Upper bound."""

    @property
    def half_width(self) -> float:
        """Half the interval's width (the ``±`` of a symmetric interval)."""
        return (self.high - self.low) / 2.0

    def contains(self, x: float) -> bool:
        """True if ``low <= x <= high`` (False when the bounds are undefined)."""
        return bool(self.low <= x <= self.high)

    def to_dict(self) -> dict[str, float | None]:
        """JSON-ready: non-finite numbers become ``None``."""
        return {"value": _finite(self.value), "low": _finite(self.low), "high": _finite(self.high)}


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz, Numerical Recipes 6.4)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbeta) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbeta) * _betacf(b, a, 1.0 - x) / b


def _student_t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=1024)
def student_t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (bisection on the CDF)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if df <= 0:
        raise ValueError(f"df must be positive, got {df}")
    if df > 1e7:
        return NormalDist().inv_cdf(p)
    lo, hi = -1.0, 1.0
    while _student_t_cdf(lo, df) > p:
        lo *= 2.0
    while _student_t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _student_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, abs(mid)):
            break
    return 0.5 * (lo + hi)


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), e.g. 0.95; got {level}")


def mean_interval(values: npt.ArrayLike, level: float = 0.95) -> Interval:
    """Mean of independent samples with a Student-t confidence interval (NaN bounds for fewer than two samples)."""
    _check_level(level)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return Interval(math.nan, math.nan, math.nan)
    mean = float(v.mean())
    if v.size < 2:
        return Interval(mean, math.nan, math.nan)
    se = float(v.std(ddof=1)) / math.sqrt(v.size)
    half = student_t_quantile(0.5 + level / 2.0, v.size - 1) * se
    return Interval(mean, mean - half, mean + half)


def wilson_interval(successes: float, n: float, level: float = 0.95) -> Interval:
    """Wilson score interval for a proportion; draws may be counted as half successes."""
    _check_level(level)
    if n <= 0:
        return Interval(math.nan, math.nan, math.nan)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n={n}], got {successes}")
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, center - half)  # exact ends: no rounding residue at 0 or n
    high = 1.0 if successes == n else min(1.0, center + half)
    return Interval(p, low, high)


def score_to_elo(score: float) -> float:
    """Logistic Elo difference that gives an expected ``score`` in [0, 1] (±inf at the ends, NaN for NaN)."""
    if math.isnan(score):
        return math.nan
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_to_score(elo: float) -> float:
    """Expected score of a player ``elo`` logistic-Elo points stronger."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def likelihood_of_superiority(values: npt.ArrayLike, center: float = 0.0) -> float:
    """P(true mean > ``center``) from independent samples, normal approximation: Phi((mean - center) / se)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return math.nan
    diff = float(v.mean()) - center
    se = float(v.std(ddof=1)) / math.sqrt(v.size) if v.size > 1 else 0.0
    if se == 0.0:
        return 0.5 if diff == 0.0 else float(diff > 0.0)
    return NormalDist().cdf(diff / se)


# --------------------------------------------------------------------------------------------------- pairings


@dataclass(frozen=True)
class DealHistogram:
    """One pairing's deal groups reduced to counts: ``counts[h]`` deals gave the row agent ``h`` half points."""

    row: int
    """Index of the row agent (the one whose score is counted)."""
    col: int
    """Index of the column agent."""
    counts: npt.NDArray[np.int64]
    """(2L + 1,) int64: number of deal groups by the row agent's half points h = 0..2L."""

    @property
    def lineups(self) -> int:
        """Games per deal group (L)."""
        return (self.counts.size - 1) // 2

    @property
    def deals(self) -> int:
        return int(self.counts.sum())

    @property
    def games(self) -> int:
        return self.deals * self.lineups

    @property
    def points(self) -> float:
        """The row agent's score in games (a win is 1, a draw 1/2)."""
        return float((self.counts * np.arange(self.counts.size)).sum()) / 2.0

    @staticmethod
    def from_half_points(row: int, col: int, half_points: npt.ArrayLike, lineups: int) -> DealHistogram:
        """Build from each deal group's half points (integers in 0..2 * lineups)."""
        h = np.asarray(half_points, dtype=np.int64).reshape(-1)
        if h.size and (h.min() < 0 or h.max() > 2 * lineups):
            raise ValueError(f"half points must be in 0..{2 * lineups}, got {h.min()}..{h.max()}")
        return DealHistogram(row, col, np.bincount(h, minlength=2 * lineups + 1).astype(np.int64))


@dataclass(frozen=True)
class PairingStats:
    """Everything reported for one pairing, from the row agent's point of view."""

    deals: int
    """Deal groups played."""
    games: int
    """Games played (deals x rotations)."""
    hands: int
    """Hands played (equals ``games`` in hands mode)."""
    margin: Interval
    """Points per hand, row minus column, with a t interval over deal groups."""
    score: Interval
    """Expected score per game (win 1, draw 1/2), t interval over deal groups."""
    elo: Interval
    """``score`` converted to a logistic Elo difference."""
    win_rate: Interval
    """(wins + draws / 2) / games with a Wilson interval (treats games as independent, so it is conservative)."""
    wins: int
    draws: int
    losses: int
    los: float
    """Likelihood of superiority: P(row is the stronger agent), from the deal-group scores."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "deals": self.deals,
            "games": self.games,
            "hands": self.hands,
            "margin": self.margin.to_dict(),
            "score": self.score.to_dict(),
            "elo": self.elo.to_dict(),
            "win_rate": self.win_rate.to_dict(),
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "los": _finite(self.los),
        }


def pairing_stats(
    margins: npt.ArrayLike,
    half_points: npt.ArrayLike,
    lineups: int,
    wins: int,
    draws: int,
    losses: int,
    hands: int | None = None,
    level: float = 0.95,
) -> PairingStats:
    """Statistics of one pairing from its per-deal-group margins and half points (see the module docstring)."""
    m = np.asarray(margins, dtype=np.float64).reshape(-1)
    h = np.asarray(half_points, dtype=np.float64).reshape(-1)
    if m.size != h.size:
        raise ValueError(f"margins and half_points must have one entry per deal group, got {m.size} and {h.size}")
    games = m.size * lineups
    if wins + draws + losses != games:
        raise ValueError(f"wins + draws + losses = {wins + draws + losses} but {m.size} deals x {lineups} = {games}")
    per_deal_score = h / (2.0 * lineups)
    score = mean_interval(per_deal_score, level)
    elo = Interval(score_to_elo(score.value), score_to_elo(score.low), score_to_elo(score.high))
    return PairingStats(
        deals=int(m.size),
        games=int(games),
        hands=int(games if hands is None else hands),
        margin=mean_interval(m, level),
        score=score,
        elo=elo,
        win_rate=wilson_interval(wins + draws / 2.0, games, level),
        wins=int(wins),
        draws=int(draws),
        losses=int(losses),
        los=likelihood_of_superiority(per_deal_score, 0.5),
    )


# --------------------------------------------------------------------------------------------------- ratings


def _check_connected(games: npt.NDArray[np.float64]) -> None:
    k = games.shape[-1]
    played = (games > 0) | (games.T > 0)
    seen = {0}
    todo = [0]
    while todo:
        i = todo.pop()
        for j in np.flatnonzero(played[i]):
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    if len(seen) != k:
        missing = sorted(set(range(k)) - seen)
        raise ValueError(
            f"ratings need every agent linked to every other by games played; agents {missing} are not connected "
            "to agent 0 — play a round robin or a gauntlet that includes them"
        )


def fit_bradley_terry(
    score: npt.ArrayLike,
    games: npt.ArrayLike,
    anchor: int = 0,
    anchor_rating: float = 0.0,
    prior_draws: float = 1.0,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> npt.NDArray[np.float64]:
    """Bradley-Terry ratings on the logistic Elo scale, by Newton's method; batched over leading axes.

    ``score[..., i, j]`` is what agent i scored against j (a draw counts 1/2) in ``games[..., i, j]`` games, with
    ``score[i, j] + score[j, i] = games[i, j]``. The model is P(i beats j) = 1 / (1 + 10^((r_j - r_i) / 400)).
    ``prior_draws`` virtual drawn games are added to every pair that played (BayesElo's prior), so an agent that
    won every game still gets a finite rating. Agent ``anchor`` is fixed at ``anchor_rating``.
    Returns (..., k) float64.
    """
    w = np.asarray(score, dtype=np.float64)
    n = np.asarray(games, dtype=np.float64)
    if w.shape != n.shape or w.ndim < 2 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"score and games must both have shape (..., k, k), got {w.shape} and {n.shape}")
    k = w.shape[-1]
    if not 0 <= anchor < k:
        raise ValueError(f"anchor must index one of the {k} agents, got {anchor}")
    if prior_draws < 0:
        raise ValueError(f"prior_draws must be >= 0, got {prior_draws}")
    if np.any(w < -1e-9) or np.any(w > n + 1e-9):
        raise ValueError("each score must lie between 0 and the number of games of its pair")
    _check_connected(n.reshape(-1, k, k).sum(axis=0))
    played = n > 0
    n = n + prior_draws * played
    w = w + 0.5 * prior_draws * played
    batch = w.shape[:-2]
    theta = np.zeros((*batch, k), dtype=np.float64)
    free = np.array([i for i in range(k) if i != anchor], dtype=np.intp)
    for _ in range(max_iter):
        diff = theta[..., :, None] - theta[..., None, :]
        p = 1.0 / (1.0 + np.exp(-diff))
        grad = (w - n * p).sum(axis=-1)
        h = n * p * (1.0 - p)
        lap = -h
        idx = np.arange(k)
        lap[..., idx, idx] = h.sum(axis=-1)
        sub = lap[..., free[:, None], free[None, :]]
        step = np.linalg.solve(sub, grad[..., free][..., None])[..., 0]
        step = np.clip(step, -2.0, 2.0)  # a trust region for the first steps far from the optimum
        theta[..., free] += step
        if np.abs(step).max() < tol:
            break
    elo = theta * ELO_PER_NATURAL
    return elo - elo[..., anchor : anchor + 1] + anchor_rating


@dataclass(frozen=True)
class RatingTable:
    """Ratings of k agents with bootstrap confidence intervals."""

    ratings: npt.NDArray[np.float64]
    """(k,) point estimates (Elo scale)."""
    low: npt.NDArray[np.float64]
    """(k,) lower bounds."""
    high: npt.NDArray[np.float64]
    """(k,) upper bounds."""
    samples: npt.NDArray[np.float64] = field(repr=False)
    """(n_boot, k) bootstrap replicates (empty when n_boot = 0)."""
    anchor: int = 0
    """Index of the agent whose rating is fixed."""
    anchor_rating: float = 0.0
    """The anchor's fixed rating."""

    def los(self, i: int, j: int) -> float:
        """Share of bootstrap replicates in which agent i is rated above agent j (ties count 1/2)."""
        if self.samples.shape[0] == 0:
            return math.nan
        d = self.samples[:, i] - self.samples[:, j]
        return float((d > 0).mean() + 0.5 * (d == 0).mean())

    def order(self) -> list[int]:
        """Agent indices from the highest rating down."""
        return [int(i) for i in np.argsort(-self.ratings, kind="stable")]


def _pair_matrices(k: int, pairs: Sequence[DealHistogram]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    score = np.zeros((k, k))
    games = np.zeros((k, k))
    for p in pairs:
        score[p.row, p.col] += p.points
        score[p.col, p.row] += p.games - p.points
        games[p.row, p.col] += p.games
        games[p.col, p.row] += p.games
    return score, games


def bootstrap_ratings(
    num_agents: int,
    pairs: Sequence[DealHistogram],
    anchor: int = 0,
    anchor_rating: float = 0.0,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    prior_draws: float = 1.0,
) -> RatingTable:
    """Bradley-Terry ratings with percentile bootstrap intervals.

    Each replicate redraws every pairing's deal groups with replacement (a multinomial draw over its histogram, the
    same thing as resampling the deals), so the paired structure of duplicate deals is kept. The anchor is fixed in
    every replicate: the intervals are relative to it.
    """
    _check_level(level)
    if not pairs:
        raise ValueError("no pairings to rate: play at least one pairing")
    for p in pairs:
        if not (0 <= p.row < num_agents and 0 <= p.col < num_agents) or p.row == p.col:
            raise ValueError(f"pairing ({p.row}, {p.col}) must name two different agents among {num_agents}")
    score, games = _pair_matrices(num_agents, pairs)
    ratings = fit_bradley_terry(score, games, anchor, anchor_rating, prior_draws)
    if n_boot <= 0:
        nan = np.full(num_agents, np.nan)
        return RatingTable(ratings, nan, nan.copy(), np.zeros((0, num_agents)), anchor, anchor_rating)
    rng = np.random.default_rng(seed)
    bs = np.zeros((n_boot, num_agents, num_agents))
    bg = np.zeros((n_boot, num_agents, num_agents))
    for p in pairs:
        if p.deals == 0:
            continue
        counts = rng.multinomial(p.deals, p.counts / p.deals, size=n_boot)
        pts = counts @ np.arange(p.counts.size) / 2.0
        bs[:, p.row, p.col] += pts
        bs[:, p.col, p.row] += p.games - pts
        bg[:, p.row, p.col] += p.games
        bg[:, p.col, p.row] += p.games
    samples = fit_bradley_terry(bs, bg, anchor, anchor_rating, prior_draws)
    tail = (1.0 - level) / 2.0
    low = np.quantile(samples, tail, axis=0)
    high = np.quantile(samples, 1.0 - tail, axis=0)
    return RatingTable(ratings, low, high, samples, anchor, anchor_rating)


# --------------------------------------------------------------------------------------------------- SPRT


def _mle_with_mean(
    values: npt.NDArray[np.float64], probs: npt.NDArray[np.float64], s: float
) -> npt.NDArray[np.float64]:
    """The distribution on ``values`` closest (max likelihood) to empirical ``probs`` (..., m) with mean ``s``.

    Its form is p_i / (1 + x (a_i - s)); x solves sum_i p_i (a_i - s) / (1 + x (a_i - s)) = 0, found by bisection
    on the interval where every weight stays positive (Van den Bergh's construction, used by fishtest).
    """
    d = values - s
    lo = np.full(probs.shape[:-1], -1.0 / d.max())
    hi = np.full(probs.shape[:-1], -1.0 / d.min())
    span = hi - lo
    lo = lo + 1e-12 * span
    hi = hi - 1e-12 * span
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        f = (probs * d / (1.0 + mid[..., None] * d)).sum(axis=-1)
        pos = f > 0  # f decreases in x: the root is above mid
        lo = np.where(pos, mid, lo)
        hi = np.where(pos, hi, mid)
    x = 0.5 * (lo + hi)
    out = probs / (1.0 + x[..., None] * d)
    return out / out.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class SPRTResult:
    """Outcome of a sequential test."""

    decision: Literal["H1", "H0", "inconclusive"]
    """``H1`` accepted (at least ``elo1`` better), ``H0`` accepted (at most ``elo0``), or out of budget."""
    llr: float
    """Log-likelihood ratio when the test stopped."""
    lower: float
    """Bound that accepts H0."""
    upper: float
    """Bound that accepts H1."""
    deals: int
    """Deal groups used."""
    elo0: float
    elo1: float
    alpha: float
    beta: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "llr": self.llr,
            "lower": self.lower,
            "upper": self.upper,
            "deals": self.deals,
            "elo0": self.elo0,
            "elo1": self.elo1,
            "alpha": self.alpha,
            "beta": self.beta,
        }

    def describe(self) -> str:
        """One line for people."""
        what = {
            "H1": f"H1 accepted: the candidate is stronger (elo >= {self.elo1:g})",
            "H0": f"H0 accepted: the candidate is not stronger than elo {self.elo0:g}",
            "inconclusive": "inconclusive: the budget ran out before a decision",
        }[self.decision]
        bounds = f"[{self.lower:.2f}, {self.upper:.2f}]"
        return f"SPRT [{self.elo0:g}, {self.elo1:g}] {what}; LLR {self.llr:.2f} in {bounds} after {self.deals} deals"


@dataclass(frozen=True)
class SPRT:
    """Generalized SPRT on deal-group outcomes (pentanomial with two rotations), in logistic Elo.

    A deal group's outcome is the candidate's half points h = 0..2L over its L games, i.e. a score h / 2L in [0, 1];
    with two sides (L = 2) that is the pentanomial of fastchess / fishtest. H0: Elo = ``elo0``, H1: Elo = ``elo1``.
    The log-likelihood ratio is the GSPRT one, N * sum_i p_i log(p1_i / p0_i), with p0, p1 the maximum-likelihood
    distributions of mean score ``elo_to_score(elo0)`` and ``elo_to_score(elo1)`` near the observed one. Empty
    outcome bins get 1e-3 pseudo-counts (as fishtest does) so the ratio is defined from the first deal.
    """

    elo0: float
    """Elo difference of H0 (the candidate is no better than this)."""
    elo1: float
    """Elo difference of H1 (the candidate is at least this much better)."""
    alpha: float = 0.05
    """False-positive rate (accepting H1 when H0 holds)."""
    beta: float = 0.05
    """False-negative rate (accepting H0 when H1 holds)."""
    lineups: int = 2
    """Games per deal group (L)."""

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"SPRT needs elo0 < elo1, got elo0={self.elo0}, elo1={self.elo1}")
        if not (0 < self.alpha < 0.5 and 0 < self.beta < 0.5):
            raise ValueError(f"SPRT alpha and beta must be in (0, 0.5), got {self.alpha}, {self.beta}")
        if self.lineups < 1:
            raise ValueError(f"lineups must be >= 1, got {self.lineups}")

    @property
    def lower(self) -> float:
        """log(beta / (1 - alpha)): at or below it H0 is accepted."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """log((1 - beta) / alpha): at or above it H1 is accepted."""
        return math.log((1.0 - self.beta) / self.alpha)

    @property
    def values(self) -> npt.NDArray[np.float64]:
        """(2L + 1,) the score of each outcome bin."""
        return np.arange(2 * self.lineups + 1) / (2.0 * self.lineups)

    def llr(self, counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Log-likelihood ratio for outcome histograms ``counts`` (..., 2L + 1); returns shape (...)."""
        c = np.asarray(counts, dtype=np.float64)
        if c.shape[-1] != 2 * self.lineups + 1:
            raise ValueError(f"counts must have {2 * self.lineups + 1} bins on the last axis, got {c.shape}")
        total = c.sum(axis=-1)
        reg = np.where(c > 0, c, 1e-3)
        probs = reg / reg.sum(axis=-1, keepdims=True)
        v = self.values
        p0 = _mle_with_mean(v, probs, elo_to_score(self.elo0))
        p1 = _mle_with_mean(v, probs, elo_to_score(self.elo1))
        out = total * (probs * (np.log(p1) - np.log(p0))).sum(axis=-1)
        return np.where(total > 0, out, 0.0)

    def decide(self, llr: float) -> Literal["H1", "H0", "inconclusive"]:
        if llr >= self.upper:
            return "H1"
        if llr <= self.lower:
            return "H0"
        return "inconclusive"

    def scan(
        self, outcomes: npt.ArrayLike, prior_counts: npt.ArrayLike | None = None
    ) -> tuple[int, float, Literal["H1", "H0", "inconclusive"]]:
        """Feed outcomes (half points per deal group, in play order) after ``prior_counts``; stop at the first bound.

        Returns ``(used, llr, decision)``: how many of ``outcomes`` were used (all of them if no bound was crossed),
        the LLR after them, and the decision.
        """
        h = np.asarray(outcomes, dtype=np.int64).reshape(-1)
        m = 2 * self.lineups + 1
        if h.size and (h.min() < 0 or h.max() >= m):
            raise ValueError(f"outcomes must be half points in 0..{m - 1}, got {h.min()}..{h.max()}")
        base = np.zeros(m) if prior_counts is None else np.asarray(prior_counts, dtype=np.float64)
        if h.size == 0:
            llr = float(self.llr(base))
            return 0, llr, self.decide(llr)
        counts = base.copy()
        block = 256  # prefixes evaluated at once; stop at the first block where a bound is crossed
        for lo in range(0, h.size, block):
            part = h[lo : lo + block]
            onehot = np.zeros((part.size, m))
            onehot[np.arange(part.size), part] = 1.0
            cum = counts[None, :] + np.cumsum(onehot, axis=0)
            llrs = self.llr(cum)
            crossed = np.flatnonzero((llrs >= self.upper) | (llrs <= self.lower))
            if crossed.size:
                i = int(crossed[0])
                return lo + i + 1, float(llrs[i]), self.decide(float(llrs[i]))
            counts = cum[-1]
        llr = float(llrs[-1])
        return h.size, llr, "inconclusive"

    def result(self, counts: npt.ArrayLike) -> SPRTResult:
        """The test's state after outcome histogram ``counts``."""
        c = np.asarray(counts, dtype=np.float64)
        llr = float(self.llr(c))
        return SPRTResult(
            self.decide(llr), llr, self.lower, self.upper, int(c.sum()), self.elo0, self.elo1, self.alpha, self.beta
        )
