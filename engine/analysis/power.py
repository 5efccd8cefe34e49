"""How many seeds? Power of the corrected resampled t-test (`engine.analysis.paired`).

With ``n`` seeds whose paired differences have sd ``s`` and splits of test/train ratio
``ρ = n_test/n_train``, the corrected test's standard error is ``s · sqrt(1/n + ρ)``. Power
at a true mean difference ``Δ`` is that of a two-sided t test on ``n − 1`` degrees of freedom
with noncentrality ``Δ / (s · sqrt(1/n + ρ))``. The ``ρ`` term does not shrink with more
seeds: seeds that resample the same films cannot tell more than the films do, so power has a
ceiling (:func:`power_ceiling`) and an effect below it is never detected at the target power
however many seeds are run (:func:`seeds_for_power` returns None).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

ALPHA = 0.05
TARGET_POWER = 0.8
MAX_SEEDS = 500


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


def power_table(
    paired_table: pd.DataFrame,
    *,
    chosen_effect: float | None = None,
    target: float = TARGET_POWER,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Seeds needed per row of `engine.analysis.paired.paired_table`.

    Args:
        paired_table: rows with ``mean_diff``, ``sd_diff``, ``n_seeds`` and
            ``test_train_ratio``.
        chosen_effect: a mean difference to plan for (in the metric's units); None leaves
            the ``*_chosen`` columns NaN.
        target: power to reach.
        alpha: two-sided level.

    Returns:
        The key columns (``task``, ``metric``, ``method_a``, ``method_b``), ``n_seeds``,
        ``power_now`` (at the observed difference with the seeds run), ``seeds_observed``
        and ``seeds_chosen`` (seeds for ``target`` power; NA when unreachable),
        ``ceiling_observed`` and ``ceiling_chosen`` (power with unlimited seeds).
    """
    rows = []
    for r in paired_table.itertuples():
        effect, sd, ratio = float(r.mean_diff), float(r.sd_diff), float(r.test_train_ratio)
        chosen = (
            seeds_for_power(chosen_effect, sd, ratio, target=target, alpha=alpha)
            if chosen_effect
            else None
        )
        rows.append(
            {
                "task": r.task,
                "metric": r.metric,
                "method_a": r.method_a,
                "method_b": r.method_b,
                "n_seeds": r.n_seeds,
                "power_now": corrected_power(effect, sd, int(r.n_seeds), ratio, alpha=alpha),
                "seeds_observed": seeds_for_power(effect, sd, ratio, target=target, alpha=alpha),
                "seeds_chosen": chosen,
                "ceiling_observed": power_ceiling(effect, sd, ratio, alpha=alpha)
                if sd > 0
                else math.nan,
                "ceiling_chosen": power_ceiling(chosen_effect, sd, ratio, alpha=alpha)
                if chosen_effect and sd > 0
                else math.nan,
            }
        )
    table = pd.DataFrame(rows)
    for column in ("seeds_observed", "seeds_chosen"):
        if column in table:
            table[column] = table[column].astype("Int64")
    return table
