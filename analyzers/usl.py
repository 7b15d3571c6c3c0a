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
from scipy.optimize import OptimizeWarning, curve_fit

NEGLIGIBLE = 1e-4


@dataclass(frozen=True)
class UslFit:
    """Fitted coefficients and what follows from them. `None` where the model has no finite answer."""

    sigma: float
    kappa: float
    lam: float
    peak_concurrency: float | None  # N* = √((1−σ)/κ); None when κ = 0 (no retrograde region)
    peak_throughput: float | None  # X(N*)
    limit_throughput: float | None  # λ/σ, the ceiling contention alone allows; None when σ = 0
    r2: float
    n_points: int

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
    return UslFit(
        sigma=float(sigma),
        kappa=float(kappa),
        lam=float(lam),
        peak_concurrency=peak_n,
        peak_throughput=float(usl(peak_n, sigma, kappa, lam)) if peak_n is not None else None,
        limit_throughput=float(lam / sigma) if sigma > 0 else None,
        r2=r2,
        n_points=len(n_arr),
    )
