"""How many seeds? Power of the corrected resampled t-test (`engine.analysis.paired`).

With ``n`` seeds whose paired differences have sd ``s`` and splits of test/train ratio
``ρ = n_test/n_train``, the corrected test's standard error is ``s · sqrt(1/n + ρ)``. Power
at a true mean difference ``Δ`` is that of a two-sided t test on ``n − 1`` degrees of freedom
with noncentrality ``Δ / (s · sqrt(1/n + ρ))``. The ``ρ`` term does not shrink with more
seeds: seeds that resample the same films cannot tell more than the films do, so power has a
ceiling (:func:`power_ceiling`) and an effect below it is never detected at the target power
however many seeds are run (:func:`seeds_for_power` returns None).

That ceiling is a consequence of the assumed correlation: ``ρ = n_test/n_train`` is the
correlation the corrected test assumes, and one dataset cannot measure it (the same seed
draws the split, the weights and the batch order; Bengio & Grandvalet 2004). So
:func:`power_table` plans for a smallest effect of interest (never the observed effect:
post-hoc power only restates the p-value) over a range of between-seed correlations
(:data:`PLAN_RHOS`, plus the design's own estimate where a design gives one), each at the
observed sd of the paired differences and at its upper confidence bound
(:func:`sd_upper_bound`), since an sd from a few seeds is itself uncertain (Browne 1995).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

ALPHA = 0.05
TARGET_POWER = 0.8
MAX_SEEDS = 500
#: Default smallest effect of interest to plan for (0.05 AMAE, the planner's old default).
DEFAULT_EFFECT = 0.05
#: Between-seed correlations ρ the planner plans over (ρ = r / (1 + r), r = n_test/n_train).
PLAN_RHOS: tuple[float, ...] = (0.0, 0.1, 0.3)
#: One-sided confidence of the sd's upper bound (Browne 1995 plans with the 80 % bound).
SD_CONFIDENCE = 0.8
FIXED = "fixed"
DESIGN = "design estimate"


def corrected_power(
    effect: float, sd: float, n_seeds: int, ratio: float, *, alpha: float = ALPHA
) -> float:
    """Power of the two-sided corrected test with ``n_seeds`` seeds at mean difference
    ``effect`` (NaN for fewer than 2 seeds or sd 0)."""
    if n_seeds < 2 or not sd > 0:
        return math.nan
    df = n_seeds - 1
    noncentrality = abs(effect) / (sd * math.sqrt(1.0 / n_seeds + ratio))
    critical = sps.t.ppf(1 - alpha / 2, df)
    return float(
        sps.nct.sf(critical, df, noncentrality) + sps.nct.cdf(-critical, df, noncentrality)
    )


def power_ceiling(effect: float, sd: float, ratio: float, *, alpha: float = ALPHA) -> float:
    """The power infinitely many seeds would reach: ``Φ(δ − z) + Φ(−δ − z)`` with
    ``δ = |effect| / (sd · sqrt(ρ))`` (1 when ``ρ`` is 0)."""
    if ratio <= 0:
        return 1.0
    delta = abs(effect) / (sd * math.sqrt(ratio))
    z = sps.norm.ppf(1 - alpha / 2)
    return float(sps.norm.cdf(delta - z) + sps.norm.cdf(-delta - z))


def seeds_for_power(
    effect: float,
    sd: float,
    ratio: float,
    *,
    target: float = TARGET_POWER,
    alpha: float = ALPHA,
    max_seeds: int = MAX_SEEDS,
) -> int | None:
    """The fewest seeds at which the corrected test reaches ``target`` power, or None when
    no number up to ``max_seeds`` does (the ceiling is below the target)."""
    if not sd > 0 or effect == 0 or power_ceiling(effect, sd, ratio, alpha=alpha) < target:
        return None
    n = np.arange(2, max_seeds + 1)
    df = n - 1
    noncentrality = abs(effect) / (sd * np.sqrt(1.0 / n + ratio))
    critical = sps.t.ppf(1 - alpha / 2, df)
    power = sps.nct.sf(critical, df, noncentrality) + sps.nct.cdf(-critical, df, noncentrality)
    reached = np.nonzero(power >= target)[0]
    return int(n[reached[0]]) if reached.size else None


def sd_upper_bound(sd: float, n: int, *, confidence: float = SD_CONFIDENCE) -> float:
    """One-sided upper ``confidence`` bound of a normal sd estimated from ``n`` values:
    ``s · sqrt((n − 1) / χ²_{1−confidence}(n − 1))``; NaN with fewer than 2 values."""
    if n < 2 or not sd >= 0:
        return math.nan
    return float(sd * math.sqrt((n - 1) / sps.chi2.ppf(1 - confidence, n - 1)))


def power_table(
    paired_table: pd.DataFrame,
    *,
    effect: float,
    rhos: tuple[float, ...] = PLAN_RHOS,
    design_rho: float | None = None,
    target: float = TARGET_POWER,
    alpha: float = ALPHA,
    sd_confidence: float = SD_CONFIDENCE,
) -> pd.DataFrame:
    """Seeds needed per row of `engine.analysis.paired.paired_table` to detect a smallest
    effect of interest, over a range of between-seed correlations.

    Args:
        paired_table: rows with ``sd_diff`` and ``n_seeds`` (and the key columns).
        effect: the smallest mean difference of interest, in the metric's units.
        rhos: between-seed correlations to plan for.
        design_rho: the design's own estimate of ρ (a factorial seeds design), planned for
            as well; None where the design gives none.
        target: power to reach.
        alpha: two-sided level.
        sd_confidence: confidence of the sd's upper bound.

    Returns:
        One row per pair and ρ: the key columns (``task``, ``metric``, ``method_a``,
        ``method_b``), ``n_seeds``, ``effect``, ``rho``, ``rho_source`` (:data:`FIXED` or
        :data:`DESIGN`), ``rho_assumed`` (the ρ the pair's corrected test assumes, from its
        ``test_train_ratio``; NaN without one), ``sd_diff``, ``sd_upper``, ``seeds`` and
        ``seeds_sd_upper`` (seeds for ``target`` power at the sd and at its upper bound; NA
        when unreachable),
        ``ceiling`` and ``ceiling_sd_upper`` (power with unlimited seeds at that ρ).
    """
    planned = [(float(rho), FIXED) for rho in rhos]
    if design_rho is not None and not math.isnan(design_rho):
        planned.append((float(design_rho), DESIGN))
    rows = []
    for r in paired_table.itertuples():
        sd, n = float(r.sd_diff), int(r.n_seeds)
        upper = sd_upper_bound(sd, n, confidence=sd_confidence)
        split_ratio = float(getattr(r, "test_train_ratio", math.nan))
        for rho, source in planned:
            ratio = rho / (1.0 - rho)
            rows.append(
                {
                    "task": r.task,
                    "metric": r.metric,
                    "method_a": r.method_a,
                    "method_b": r.method_b,
                    "n_seeds": n,
                    "effect": effect,
                    "rho": rho,
                    "rho_source": source,
                    "rho_assumed": split_ratio / (1.0 + split_ratio),
                    "sd_diff": sd,
                    "sd_upper": upper,
                    "seeds": _seeds(effect, sd, ratio, target, alpha),
                    "seeds_sd_upper": _seeds(effect, upper, ratio, target, alpha),
                    "ceiling": _ceiling(effect, sd, ratio, alpha),
                    "ceiling_sd_upper": _ceiling(effect, upper, ratio, alpha),
                }
            )
    table = pd.DataFrame(rows)
    for column in ("seeds", "seeds_sd_upper"):
        if column in table:
            table[column] = table[column].astype("Int64")
    return table


def _seeds(effect: float, sd: float, ratio: float, target: float, alpha: float) -> int | None:
    if not effect or not sd > 0:
        return None
    return seeds_for_power(effect, sd, ratio, target=target, alpha=alpha)


def _ceiling(effect: float, sd: float, ratio: float, alpha: float) -> float:
    if not effect or not sd > 0:
        return math.nan
    return power_ceiling(effect, sd, ratio, alpha=alpha)
