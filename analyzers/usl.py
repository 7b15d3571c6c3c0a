"""The Universal Scalability Law: X(N) = λN / (1 + σ(N−1) + κN(N−1)).

σ (contention) is the share of work that queues for something shared — a lock, a log, one disk;
it alone bends the curve towards the ceiling λ/σ. κ (coherency) is the cost of keeping N workers
consistent with each other — cache lines, lock hand-offs, distributed agreement; it makes
throughput fall after the peak N* = √((1−σ)/κ). Fitted by bounded nonlinear least squares, as
the R `usl` package does; golden-tested on SPEC SDM91 (Gunther, *Guerrilla Capacity Planning*).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np

NEGLIGIBLE = 1e-4
# Below this R² the curve does not follow the points: its σ, κ and peak describe another sweep (the
# client-cpu-quota scenario's, which falls from its first level: 0.11 with σ at its bound of 1)
POOR_R2 = 0.9


@dataclass(frozen=True)
class UslFit:
    """Fitted coefficients and what follows from them. `None` where the model has no finite answer."""

    sigma: float
    kappa: float
    lam: float
    peak_concurrency: float | None  # N* = √((1−σ)/κ), at least 1; None when κ = 0 (no retrograde region)
    peak_throughput: float | None  # X(N*)
    limit_throughput: float | None  # λ/σ, the ceiling contention alone allows; None when σ = 0
    r2: float
    n_points: int
    # standard errors from the fit's covariance (s² (JᵀJ)⁻¹, N* by the delta method); None with no
    # degrees of freedom left (3 points or fewer) or a coefficient at its bound of 0
    sigma_se: float | None = None
    kappa_se: float | None = None
    peak_concurrency_se: float | None = None

    @property
    def exact(self) -> bool:
        """As many points as coefficients (3) and the curve through every one of them (a shape the
        bounds σ ≤ 1, κ ≥ 0 allow)."""
        return self.n_points <= 3 and self.r2 > 1 - NEGLIGIBLE

    def caveat(self) -> str:
        """What the fit cannot be read for, said once for every place that prints it ("" when nothing)."""
        if self.exact:
            return (
                f"{self.n_points} load levels for 3 coefficients: the curve passes through each, so R² is "
                "1 by construction and σ against κ is not tested; more levels would test it"
            )
        if self.r2 < POOR_R2:
            return (
                f"the curve misses these points (R² {self.r2:.2f}): its σ, κ and peak describe a sweep "
                "this one does not follow"
            )
        return ""

    def to_dict(self) -> dict[str, float | None]:
        d = asdict(self)
        d["lambda"] = d.pop("lam")
        return d


def usl(n: np.ndarray | float, sigma: float, kappa: float, lam: float) -> np.ndarray | float:
    """Throughput the model predicts at concurrency `n`."""
    n = np.asarray(n, dtype=float)
    return lam * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


def fit(n: np.ndarray | list[float], x: np.ndarray | list[float]) -> UslFit:
    """Fit the USL to measured (concurrency, throughput) points.

    Raises:
        ValueError: fewer than 3 distinct concurrency levels, or NaN/inf/non-positive input
            (a spoiled fit is worse than none).
    """
    n_arr = np.asarray(n, dtype=float)
    x_arr = np.asarray(x, dtype=float)
    if n_arr.shape != x_arr.shape or not (np.isfinite(n_arr).all() and np.isfinite(x_arr).all()):
        raise ValueError("USL fit needs finite concurrency and throughput values")
    if (n_arr <= 0).any() or (x_arr <= 0).any():
        raise ValueError("USL fit needs positive concurrency and throughput")
    if len(np.unique(n_arr)) < 3:
        raise ValueError("USL fit needs at least 3 distinct concurrency levels")
    from scipy.optimize import OptimizeWarning, curve_fit  # here: 0.3 s to import, and only a sweep fits

    # λ is at least the best per-worker throughput seen; start there with no contention or coherency.
    lam0 = float(np.max(x_arr / n_arr))
    best = None
    for p0 in ((0.01, 1e-4, lam0), (0.1, 1e-3, lam0), (0.001, 1e-6, lam0)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizeWarning)
                popt, _ = curve_fit(
                    usl, n_arr, x_arr, p0=p0, bounds=([0, 0, 0], [1, np.inf, np.inf]), maxfev=20000
                )
        except (RuntimeError, ValueError):
            continue
        sse = float(np.sum((x_arr - usl(n_arr, *popt)) ** 2))
        if best is None or sse < best[1]:
            best = (popt, sse)
    if best is None:
        raise ValueError("USL fit did not converge")
    (sigma, kappa, lam), sse = best
    # The optimiser stops a hair above its bound of 0. A coefficient that changes the predicted
    # throughput by under 0.01% anywhere in the measured range is zero, not a basis for extrapolation.
    n_max = float(n_arr.max())
    sigma = 0.0 if sigma * (n_max - 1) < NEGLIGIBLE else sigma
    kappa = 0.0 if kappa * n_max * (n_max - 1) < NEGLIGIBLE else kappa
    sst = float(np.sum((x_arr - x_arr.mean()) ** 2))
    r2 = 1.0 - sse / sst if sst > 0 else 1.0
    peak_n = math.sqrt((1 - sigma) / kappa) if kappa > 0 else None
    # below one worker the formula names no concurrency there is: a curve that falls from its first
    # level peaks at 1 (σ at its bound of 1 gives N* = 0: "peak concurrency 1.1e-07" in a report)
    below_one = peak_n is not None and peak_n < 1
    peak_n = 1.0 if below_one else peak_n
    se = standard_errors(n_arr, x_arr, sigma, kappa, lam) if sigma > 0 and kappa > 0 else None
    peak_se = None
    if se is not None and peak_n is not None and not below_one:
        cov, grad = se[1], np.array([-1 / (2 * peak_n * kappa), -peak_n / (2 * kappa)])
        peak_se = float(math.sqrt(max(0.0, grad @ cov[:2, :2] @ grad)))
    return UslFit(
        sigma=float(sigma),
        kappa=float(kappa),
        lam=float(lam),
        peak_concurrency=peak_n,
        peak_throughput=float(usl(peak_n, sigma, kappa, lam)) if peak_n is not None else None,
        limit_throughput=float(lam / sigma) if sigma > 0 else None,
        r2=r2,
        n_points=len(n_arr),
        sigma_se=float(math.sqrt(se[1][0, 0])) if se is not None else None,
        kappa_se=float(math.sqrt(se[1][1, 1])) if se is not None else None,
        peak_concurrency_se=peak_se,
    )


def standard_errors(
    n: np.ndarray,
    x: np.ndarray,
    sigma: float,
    kappa: float,
    lam: float | None = None,
    *,
    fixed_lam: float = 0.0,
) -> tuple[int, np.ndarray] | None:
    """(degrees of freedom, covariance of (σ, κ[, λ])) of a least-squares USL fit: s² (JᵀJ)⁻¹ with
    the model's analytic Jacobian at the fitted point. `fixed_lam` > 0 holds λ at that value (the R
    `usl` package normalises by it and fits σ and κ alone); None without a degree of freedom or
    with a singular Jacobian."""
    held = fixed_lam > 0
    lam_v = fixed_lam if held else float(lam or 0.0)
    d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)
    cols = [-lam_v * n * (n - 1.0) / d**2, -lam_v * n * n * (n - 1.0) / d**2]
    if not held:
        cols.append(n / d)
    jac = np.column_stack(cols)
    dof = len(n) - jac.shape[1]
    if dof < 1:
        return None
    resid = x - usl(n, sigma, kappa, lam_v)
    s2 = float(resid @ resid) / dof
    try:
        cov = s2 * np.linalg.inv(jac.T @ jac)
    except np.linalg.LinAlgError:
        return None
    return dof, cov
