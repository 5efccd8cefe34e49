"""Expected best validation score as a function of the number of configurations tried
(Dodge et al. 2019, "Show your work: improved reporting of experimental results", §3).

A search that tries more configurations finds a better validation score whatever the method,
so comparing each method's best of its own search compares budgets as much as methods. The
expected best of ``n`` configurations drawn from a method's search answers "how good would it
have looked had it tried ``n``?" for every ``n``, and a curve per method shows where the
ranking depends on the budget.

For one search of ``N`` validation scores ordered worst to best, ``v_(1) .. v_(N)``, the best
of ``n`` of them is ``v_(i)`` with probability

* drawn without replacement (``n`` distinct configurations of those tried, ``n <= N``):
  ``C(i - 1, n - 1) / C(N, n)``;
* drawn with replacement (Dodge et al.'s estimator, any ``n``):
  ``(i / N)^n - ((i - 1) / N)^n``;

and the expectation sums ``v_(i)`` times that probability. Tied scores share a rank; the
expectation is the same whichever way ties are ordered. Each (task, method, seed) has its own
search on its own validation films, so the curve is computed per seed and averaged over seeds,
with the seeds' spread beside it (`expected_best_table`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

GROUP = ["task", "method", "seed"]


def _ordered(values: Sequence[float] | np.ndarray, lower_is_better: bool) -> np.ndarray:
    """Finite values ordered worst first, best last."""
    array = np.asarray(values, dtype=np.float64)
    array = np.sort(array[np.isfinite(array)])
    return array[::-1] if lower_is_better else array


def best_probabilities(n_values: int, n: int, *, replace: bool = False) -> np.ndarray:
    """``P(the best of n draws is the i-th worst of N)`` for ``i = 1 .. N`` (see the module
    docstring).

    Raises:
        ValueError: ``n < 1``, or ``n > N`` without replacement.
    """
    if n < 1 or n_values < 1:
        raise ValueError(f"{n=} and {n_values=} must be >= 1")
    if not replace and n > n_values:
        raise ValueError(f"{n=} distinct configurations of {n_values} cannot be drawn")
    i = np.arange(1, n_values + 1)
    if replace:
        return (i / n_values) ** n - ((i - 1) / n_values) ** n
    total = math.comb(n_values, n)
    return np.array([math.comb(k - 1, n - 1) / total for k in i], dtype=np.float64)


def expected_best(
    values: Sequence[float] | np.ndarray,
    n: int,
    *,
    lower_is_better: bool,
    replace: bool = False,
) -> float:
    """The expected best of ``n`` configurations drawn from one search's validation scores.

    Args:
        values: the search's scores, one per configuration tried (NaN ones left out).
        n: configurations drawn.
        lower_is_better: the score's direction (AMAE: True).
        replace: draw with replacement (Dodge et al.) rather than ``n`` distinct ones.

    Returns:
        The expectation; NaN when ``values`` holds no finite score.
    """
    ordered = _ordered(values, lower_is_better)
    if ordered.size == 0:
        return math.nan
    return float(ordered @ best_probabilities(ordered.size, n, replace=replace))


def expected_best_curve(
    values: Sequence[float] | np.ndarray,
    *,
    lower_is_better: bool,
    replace: bool = False,
    n_max: int | None = None,
) -> np.ndarray:
    """`expected_best` for ``n = 1 .. n_max`` (default: the search's size; without
    replacement at most that)."""
    ordered = _ordered(values, lower_is_better)
    if ordered.size == 0:
        return np.array([], dtype=np.float64)
    top = ordered.size if n_max is None else n_max
    if not replace:
        top = min(top, ordered.size)
    return np.array(
        [ordered @ best_probabilities(ordered.size, n, replace=replace) for n in range(1, top + 1)]
    )


def expected_best_table(
    runs: pd.DataFrame,
    score: str,
    *,
    lower_is_better: bool,
    replace: bool = False,
    n_max: int | None = None,
) -> pd.DataFrame:
    """Each (task, method)'s expected best validation score against configurations tried,
    averaged over seeds.

    Args:
        runs: one row per run: ``task``, ``method``, ``seed`` and the ``score`` column (NaN
            for a run never scored; left out).
        score: the validation score's column.
        lower_is_better: its direction.
        replace: draw with replacement.
        n_max: the largest ``n`` (default: the largest search; without replacement each
            method's curve ends at its smallest search over seeds).

    Returns:
        One row per task, method and ``n``: ``expected`` (mean over seeds), ``seed_sd``
        (its sd over seeds; NaN for one seed), ``n_seeds``, ``configs`` (the method's search
        size, the largest over seeds). Empty (with these columns) when no run has a score.
    """
    columns = ["task", "method", "n", "expected", "seed_sd", "n_seeds", "configs"]
    scored = runs[np.isfinite(pd.to_numeric(runs[score], errors="coerce"))]
    if scored.empty:
        return pd.DataFrame(columns=columns)
    top = n_max or int(scored.groupby(GROUP).size().max())
    curves = []
    for (task, method, seed), part in scored.groupby(GROUP, sort=False):
        curve = expected_best_curve(
            part[score].to_numpy(), lower_is_better=lower_is_better, replace=replace, n_max=top
        )
        curves.append(
            pd.DataFrame(
                {"task": task, "method": method, "seed": seed, "n": np.arange(1, curve.size + 1),
                 "value": curve, "configs": len(part)}
            )
        )  # fmt: skip
    long = pd.concat(curves, ignore_index=True)
    seeds = long.groupby(["task", "method"], sort=False)["seed"].transform("nunique")
    # Without replacement a seed with a smaller search has no point at larger n: keep the n
    # every seed of the method reaches, so each point averages the same seeds.
    reached = long.groupby(["task", "method", "n"], sort=False)["seed"].transform("nunique")
    long = long[reached == seeds]
    table = (
        long.groupby(["task", "method", "n"], sort=False)
        .agg(
            expected=("value", "mean"),
            seed_sd=("value", "std"),
            n_seeds=("seed", "nunique"),
            configs=("configs", "max"),
        )
        .reset_index()
    )
    return table[columns]


def value_at(table: pd.DataFrame, n: int) -> pd.DataFrame:
    """The rows of `expected_best_table` at ``n`` configurations (methods whose curve reaches
    it)."""
    return table[table["n"] == n].reset_index(drop=True)
