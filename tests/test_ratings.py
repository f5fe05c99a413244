"""agents.evaluation.ratings: intervals, Bradley-Terry ratings with bootstrap, likelihood of superiority and the
GSPRT."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.evaluation.ratings import (
    SPRT,
    DealHistogram,
    _mle_with_mean,
    bootstrap_ratings,
    elo_to_score,
    fit_bradley_terry,
    likelihood_of_superiority,
    mean_interval,
    pairing_stats,
    score_to_elo,
    student_t_quantile,
    wilson_interval,
)

# --------------------------------------------------------------------------------------------------- intervals


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062047), (4, 2.7764451), (10, 2.2281389), (30, 2.0422725), (1000, 1.9623391), (1e9, 1.9599640)],
)
def test_student_t_quantile_matches_tables(df: float, expected: float) -> None:
    assert student_t_quantile(0.975, df) == pytest.approx(expected, abs=2e-6)
    assert student_t_quantile(0.025, df) == pytest.approx(-expected, abs=2e-6)


def test_mean_interval_by_hand() -> None:
    iv = mean_interval([1, 2, 3, 4, 5])
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)  # t(0.975, 4) * sd / sqrt(n)
    assert iv.value == 3.0
    assert iv.low == pytest.approx(3.0 - half, abs=1e-6)
    assert iv.high == pytest.approx(3.0 + half, abs=1e-6)
    assert iv.half_width == pytest.approx(half, abs=1e-6)
    single = mean_interval([7.0])
    assert single.value == 7.0 and math.isnan(single.low) and not single.contains(7.0)
    assert mean_interval([2.0, 2.0, 2.0]).to_dict() == {"value": 2.0, "low": 2.0, "high": 2.0}
    with pytest.raises(ValueError, match="level"):
        mean_interval([1, 2], level=95)


def test_mean_interval_covers_the_true_mean_about_95_percent() -> None:
    rng = np.random.default_rng(3)
    samples = rng.normal(1.5, 2.0, size=(2000, 12))
    covered = sum(mean_interval(s).contains(1.5) for s in samples)
    assert 0.93 < covered / 2000 < 0.97


def test_wilson_interval_known_values() -> None:
    iv = wilson_interval(60, 100)
    assert (iv.value, round(iv.low, 4), round(iv.high, 4)) == (0.6, 0.502, 0.6906)
    zero = wilson_interval(0, 10)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(5, 10).low == pytest.approx(1 - wilson_interval(5, 10).high)
    assert math.isnan(wilson_interval(0, 0).value)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)


def test_elo_score_conversions() -> None:
    assert score_to_elo(0.5) == 0.0
    assert elo_to_score(0.0) == 0.5
    for elo in (-400.0, -35.0, 12.5, 200.0):
        assert score_to_elo(elo_to_score(elo)) == pytest.approx(elo)
    assert elo_to_score(400.0) == pytest.approx(10 / 11)
    assert score_to_elo(1.0) == math.inf and score_to_elo(0.0) == -math.inf


def test_likelihood_of_superiority() -> None:
    assert likelihood_of_superiority([-1.0, 1.0, -2.0, 2.0]) == pytest.approx(0.5)
    assert likelihood_of_superiority(np.full(10, 0.6), center=0.5) == 1.0
    assert likelihood_of_superiority(np.full(10, 0.4), center=0.5) == 0.0
    rng = np.random.default_rng(0)
    assert likelihood_of_superiority(rng.normal(0.3, 1.0, 400)) > 0.99
    assert likelihood_of_superiority(rng.normal(-0.3, 1.0, 400)) < 0.01


def test_pairing_stats_from_deal_groups() -> None:
    # 4 deals, 2 games each: half points 4 (2 wins), 2 (win + loss), 3 (win + draw), 1 (draw + loss)
    st = pairing_stats([1.0, 0.0, 0.5, -0.5], [4, 2, 3, 1], lineups=2, wins=4, draws=2, losses=2)
    assert (st.deals, st.games, st.hands) == (4, 8, 8)
    assert st.margin.value == pytest.approx(0.25)
    assert st.score.value == pytest.approx(10 / 16)
    assert st.win_rate.value == pytest.approx(5 / 8)
    assert st.elo.value == pytest.approx(score_to_elo(10 / 16))
    assert 0.5 < st.los < 1.0
    with pytest.raises(ValueError, match="wins"):
        pairing_stats([0.0], [2], lineups=2, wins=1, draws=0, losses=0)
    with pytest.raises(ValueError, match="one entry per deal"):
        pairing_stats([0.0, 1.0], [2], lineups=2, wins=1, draws=0, losses=1)


def test_deal_histogram() -> None:
    h = DealHistogram.from_half_points(0, 1, [0, 4, 4, 2, 3], lineups=2)
    assert h.counts.tolist() == [1, 0, 1, 1, 2]
    assert (h.deals, h.games, h.points, h.lineups) == (5, 10, 6.5, 2)
    with pytest.raises(ValueError, match=r"0\.\.4"):
        DealHistogram.from_half_points(0, 1, [5], lineups=2)


# --------------------------------------------------------------------------------------------------- ratings

TRUE = np.array([0.0, 120.0, 250.0, -180.0, 40.0])


def _expected_tables(ratings: np.ndarray, games: float) -> tuple[np.ndarray, np.ndarray]:
    k = ratings.size
    n = np.full((k, k), games) - np.diag(np.full(k, games))
    p = 1 / (1 + 10 ** ((ratings[None, :] - ratings[:, None]) / 400))
    return n * p, n


def test_bradley_terry_recovers_exact_strengths() -> None:
    score, games = _expected_tables(TRUE, 1000.0)
    r = fit_bradley_terry(score, games, anchor=0, prior_draws=0.0)
    np.testing.assert_allclose(r, TRUE, atol=1e-6)
    shifted = fit_bradley_terry(score, games, anchor=3, anchor_rating=1000.0, prior_draws=0.0)
    np.testing.assert_allclose(shifted, TRUE - TRUE[3] + 1000.0, atol=1e-6)


def test_bradley_terry_batched_equals_one_by_one() -> None:
    tables = [_expected_tables(TRUE * f, 50.0) for f in (0.5, 1.0, 2.0)]
    batch = fit_bradley_terry(np.stack([t[0] for t in tables]), np.stack([t[1] for t in tables]), anchor=2)
    for b, (s, n) in enumerate(tables):
        np.testing.assert_allclose(batch[b], fit_bradley_terry(s, n, anchor=2), atol=1e-6)


def test_bradley_terry_prior_keeps_a_perfect_record_finite() -> None:
    score = np.array([[0.0, 20.0], [0.0, 0.0]])
    games = np.array([[0.0, 20.0], [20.0, 0.0]])
    r = fit_bradley_terry(score, games, anchor=1)
    # 20 wins + 1 virtual draw vs 1 virtual draw: score 20.5 / 21
    assert r[0] == pytest.approx(score_to_elo(20.5 / 21.0), abs=1e-6)
    assert r[1] == 0.0


def test_bradley_terry_rejects_bad_tables() -> None:
    games = np.zeros((4, 4))
    games[0, 1] = games[1, 0] = games[2, 3] = games[3, 2] = 10
    with pytest.raises(ValueError, match="not connected"):
        fit_bradley_terry(games / 2, games)
    with pytest.raises(ValueError, match="anchor"):
        fit_bradley_terry(np.zeros((2, 2)), np.ones((2, 2)), anchor=5)
    with pytest.raises(ValueError, match="between 0 and"):
        fit_bradley_terry(np.full((2, 2), 3.0), np.ones((2, 2)))


def _synthetic_pairs(ratings: np.ndarray, deals: int, draw: float, rng: np.random.Generator) -> list[DealHistogram]:
    """Every pair plays ``deals`` deal groups of two games; each game is a win / draw / loss with the model's odds."""
    pairs = []
    k = ratings.size
    for i in range(k):
        for j in range(i + 1, k):
            s = elo_to_score(ratings[i] - ratings[j])
            p_draw = draw * min(s, 1 - s) * 2
            p = [1 - s - p_draw / 2, p_draw, s - p_draw / 2]  # half points 0, 1, 2 per game
            half = rng.choice(3, p=p, size=(deals, 2)).sum(axis=1)
            pairs.append(DealHistogram.from_half_points(i, j, half, 2))
    return pairs


def test_bootstrap_ratings_recover_known_strengths() -> None:
    rng = np.random.default_rng(11)
    table = bootstrap_ratings(TRUE.size, _synthetic_pairs(TRUE, 3000, 0.2, rng), anchor=0, n_boot=500, seed=1)
    assert table.order() == list(np.argsort(-TRUE))
    assert np.all(np.abs(table.ratings - TRUE) < 20)
    assert np.all((table.low <= TRUE + 1e-9) & (TRUE - 1e-9 <= table.high))
    assert table.low[0] == table.high[0] == 0.0  # the anchor is fixed in every replicate
    width = table.high - table.low
    assert np.all(width[1:] > 3) and np.all(width < 40)
    assert table.los(2, 1) > 0.99 and table.los(3, 0) < 0.01


def test_bootstrap_intervals_shrink_with_more_deals() -> None:
    rng = np.random.default_rng(5)
    small = bootstrap_ratings(3, _synthetic_pairs(TRUE[:3], 200, 0.3, rng), n_boot=300)
    big = bootstrap_ratings(3, _synthetic_pairs(TRUE[:3], 5000, 0.3, rng), n_boot=300)
    assert np.all((big.high - big.low)[1:] < (small.high - small.low)[1:] / 3)


def test_bootstrap_without_replicates_and_bad_pairs() -> None:
    rng = np.random.default_rng(0)
    table = bootstrap_ratings(2, _synthetic_pairs(TRUE[:2], 100, 0.2, rng), n_boot=0)
    assert np.isnan(table.low).all() and math.isnan(table.los(0, 1))
    with pytest.raises(ValueError, match="no pairings"):
        bootstrap_ratings(2, [])
    with pytest.raises(ValueError, match="two different agents"):
        bootstrap_ratings(2, [DealHistogram(0, 0, np.array([1, 0, 0, 0, 0]))])


# --------------------------------------------------------------------------------------------------- SPRT


def _pentanomial(elo: float, draw: float = 0.3) -> np.ndarray:
    """Probabilities of half points 0..4 over a deal pair of two independent games with expected score elo."""
    s = elo_to_score(elo)
    p_draw = draw * min(s, 1 - s) * 2
    game = np.array([1 - s - p_draw / 2, p_draw, s - p_draw / 2])
    return np.convolve(game, game)


def test_mle_with_mean_is_the_constrained_maximum() -> None:
    values = np.arange(5) / 4
    probs = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    for s in (0.3, 0.5, 0.62):
        q = _mle_with_mean(values, probs, s)
        assert q.sum() == pytest.approx(1.0) and (q * values).sum() == pytest.approx(s, abs=1e-9)
        loglik = (probs * np.log(q)).sum()
        rng = np.random.default_rng(0)
        for _ in range(50):  # any other distribution with the same mean is less likely
            d = rng.normal(size=5)
            d -= d.mean()
            d -= ((d * values).sum() - 0) / ((values - values.mean()) ** 2).sum() * (values - values.mean())
            other = q + 1e-3 * d
            assert (other * values).sum() == pytest.approx(s, abs=1e-9)
            if (other > 0).all():
                assert (probs * np.log(other)).sum() <= loglik + 1e-12


def test_sprt_bounds_and_llr_basics() -> None:
    t = SPRT(0.0, 10.0)
    assert t.lower == pytest.approx(math.log(0.05 / 0.95)) and t.upper == pytest.approx(math.log(0.95 / 0.05))
    assert float(t.llr(np.zeros(5))) == 0.0
    assert t.llr([10, 20, 40, 20, 10]) < 0 < t.llr([5, 20, 40, 25, 10])  # score 0.5 favours H0; 0.525 favours H1
    # The LLR grows linearly with the evidence at a fixed observed distribution.
    assert t.llr([20, 80, 160, 100, 40]) == pytest.approx(4 * t.llr([5, 20, 40, 25, 10]))
    assert t.decide(3.0) == "H1" and t.decide(-3.0) == "H0" and t.decide(0.0) == "inconclusive"
    with pytest.raises(ValueError, match="elo0 < elo1"):
        SPRT(5.0, 5.0)
    with pytest.raises(ValueError, match="alpha"):
        SPRT(0.0, 5.0, alpha=0.7)
    with pytest.raises(ValueError, match="bins"):
        t.llr([1, 2, 3])


@pytest.mark.parametrize(("true_elo", "expected"), [(60.0, "H1"), (-30.0, "H0"), (0.0, "H0"), (40.0, "H1")])
def test_sprt_decides_on_synthetic_streams(true_elo: float, expected: str) -> None:
    t = SPRT(0.0, 20.0)
    rng = np.random.default_rng(int(true_elo) + 1000)
    stream = rng.choice(5, p=_pentanomial(true_elo), size=20000)
    used, llr, decision = t.scan(stream)
    assert decision == expected
    assert used < stream.size
    counts = np.bincount(stream[:used], minlength=5)
    assert float(t.llr(counts)) == pytest.approx(llr)
    # It stops at the first crossing: one deal earlier the test was still running.
    before = np.bincount(stream[: used - 1], minlength=5)
    assert t.lower < float(t.llr(before)) < t.upper
    res = t.result(counts)
    assert (res.decision, res.deals) == (expected, used)


def test_sprt_scan_continues_from_prior_counts() -> None:
    t = SPRT(0.0, 20.0)
    rng = np.random.default_rng(9)
    stream = rng.choice(5, p=_pentanomial(10.0), size=300)
    used, llr, decision = t.scan(stream[200:], prior_counts=np.bincount(stream[:200], minlength=5))
    assert decision == "inconclusive" and used == 100
    assert llr == pytest.approx(float(t.llr(np.bincount(stream, minlength=5))))


def test_sprt_error_rates_are_about_alpha_and_beta() -> None:
    t = SPRT(0.0, 30.0)
    rng = np.random.default_rng(2)
    runs = 60
    false_pos = sum(t.scan(rng.choice(5, p=_pentanomial(0.0), size=8000))[2] == "H1" for _ in range(runs))
    false_neg = sum(t.scan(rng.choice(5, p=_pentanomial(30.0), size=8000))[2] == "H0" for _ in range(runs))
    # alpha = beta = 0.05: at most a handful of wrong decisions in 60 runs (6 would be 10%).
    assert false_pos <= 6 and false_neg <= 6


def test_sprt_with_more_rotations_uses_more_bins() -> None:
    t = SPRT(0.0, 50.0, lineups=6)
    assert t.values.tolist() == [i / 12 for i in range(13)]
    rng = np.random.default_rng(4)
    game = np.array([0.2, 0.15, 0.65])  # a strong candidate: expected score 0.725 per game
    half = rng.choice(3, p=game, size=(3000, 6)).sum(axis=1)
    _, _, decision = t.scan(half)
    assert decision == "H1"
