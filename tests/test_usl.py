"""The USL fit against published data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfkit.analyzers import usl

# SPEC SDM91 (Gunther, Guerrilla Capacity Planning; the R `usl` package's test data).
SDM91_N = [1, 18, 36, 72, 108, 144, 216]
SDM91_X = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]


def test_spec_sdm91_golden() -> None:
    fit = usl.fit(SDM91_N, SDM91_X)
    assert fit.peak_concurrency == pytest.approx(96.5, abs=0.05)
    assert fit.limit_throughput == pytest.approx(3245.6, rel=1e-3)
    assert fit.lam == pytest.approx(89.995, rel=1e-3)
    assert fit.sigma == pytest.approx(0.02773, rel=2e-3)
    assert fit.kappa == pytest.approx(1.0437e-4, rel=2e-3)
    assert fit.peak_throughput == pytest.approx(
        float(usl.usl(fit.peak_concurrency, fit.sigma, fit.kappa, fit.lam))
    )
    assert 0.98 < fit.r2 <= 1


def test_recovers_known_coefficients_from_exact_points() -> None:
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    fit = usl.fit(n, usl.usl(n, 0.05, 0.0002, 1000.0))
    assert (fit.sigma, fit.kappa, fit.lam) == pytest.approx((0.05, 0.0002, 1000.0), rel=1e-4)
    assert fit.peak_concurrency == pytest.approx(math.sqrt(0.95 / 0.0002), rel=1e-4)


def test_linear_scaling_has_no_peak() -> None:
    fit = usl.fit([1, 2, 4, 8], [100, 200, 400, 800])
    assert fit.sigma == 0 and fit.kappa == 0
    assert fit.peak_concurrency is None and fit.limit_throughput is None


def test_a_fit_through_as_many_levels_as_coefficients_says_so() -> None:
    # any three levels are fitted exactly (3 coefficients): R² is 1 whatever the shape
    fit = usl.fit([1, 4, 16], [2594.3, 4168.5, 3193.9])
    assert fit.exact and fit.r2 == pytest.approx(1.0)
    assert fit.caveat().startswith("3 load levels for 3 coefficients")
    more = usl.fit(SDM91_N, SDM91_X)
    assert not more.exact and more.caveat() == ""
    # three levels the bounds (σ <= 1) cannot pass through: the client-cpu-quota scenario's sweep,
    # fastest at its first level; the fit misses them and says so instead
    falls = usl.fit([1, 4, 16], [24370.9, 17255.8, 19994.0])
    assert falls.sigma == pytest.approx(1.0) and falls.r2 < usl.POOR_R2 and not falls.exact
    # √((1 − σ)/κ) is about 0 there: the curve falls from one worker, so its peak is at 1
    assert falls.peak_concurrency == 1 and falls.peak_throughput == pytest.approx(falls.lam)
    assert falls.peak_concurrency_se is None
    assert falls.caveat() == (
        "the curve misses these points (R² 0.11): its σ, κ and peak describe a sweep this one does not follow"
    )


@pytest.mark.parametrize(
    "n,x",
    [([1, 2], [1, 2]), ([1, 2, 3], [1, float("nan"), 3]), ([1, 2, 3], [1, 0, 3]), ([4, 4, 4], [1, 2, 3])],
)
def test_refuses_bad_input(n: list[float], x: list[float]) -> None:
    with pytest.raises(ValueError):
        usl.fit(n, x)


def test_standard_errors_match_the_r_usl_package_on_sdm91() -> None:
    # R usl 1.8 (smoeding/usl tests/summary.Rout.save): normalised by the scale factor 90, σ and κ
    # fitted alone: Std. Error alpha 2.183e-03, beta 1.724e-05 on 5 degrees of freedom
    fit = usl.fit(SDM91_N, SDM91_X)
    dof, cov = usl.standard_errors(
        np.array(SDM91_N, float), np.array(SDM91_X), fit.sigma, fit.kappa, fixed_lam=90.0
    )
    assert dof == 5
    assert np.sqrt(np.diag(cov)) == pytest.approx([2.183e-03, 1.724e-05], rel=2e-3)


def test_the_reported_errors_include_lambdas_uncertainty_and_carry_to_n_star() -> None:
    fit = usl.fit(SDM91_N, SDM91_X)
    # λ fitted too (one point at n=1 pins it loosely): σ's error is larger than with λ held
    assert fit.sigma_se == pytest.approx(9.12e-3, rel=1e-2) and fit.kappa_se == pytest.approx(
        1.99e-5, rel=1e-2
    )
    # N* = √((1−σ)/κ) by the delta method, against a finite-difference gradient
    dof, cov = usl.standard_errors(np.array(SDM91_N, float), np.array(SDM91_X), fit.sigma, fit.kappa, fit.lam)

    def n_star(sigma: float, kappa: float) -> float:
        return math.sqrt((1 - sigma) / kappa)

    hs, hk = fit.sigma * 1e-6, fit.kappa * 1e-6
    g = np.array(
        [
            (n_star(fit.sigma + hs, fit.kappa) - n_star(fit.sigma - hs, fit.kappa)) / (2 * hs),
            (n_star(fit.sigma, fit.kappa + hk) - n_star(fit.sigma, fit.kappa - hk)) / (2 * hk),
        ]
    )
    assert fit.peak_concurrency_se == pytest.approx(math.sqrt(g @ cov[:2, :2] @ g), rel=1e-3)


def test_no_errors_without_a_degree_of_freedom_or_with_a_coefficient_at_zero() -> None:
    three = usl.fit([1, 4, 16], [100, 350, 900])
    assert (three.sigma_se, three.kappa_se, three.peak_concurrency_se) == (None, None, None)
    linear = usl.fit([1, 2, 4, 8], [100, 200, 400, 800])
    assert linear.sigma_se is None and linear.peak_concurrency_se is None
