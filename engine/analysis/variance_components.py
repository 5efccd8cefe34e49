"""Variance components of a paired difference in a factorial seeds design (issue 29, item 1).

With independent seeds one seed draws the split, the initial weights and the batch order, so
the seed-to-seed variance of a difference ``a − b`` cannot be told apart into the part the
data make and the part the training makes, and the corrected resampled t-test must assume a
between-seed correlation ρ for all of it (`engine.analysis.paired`). A factorial study
(``seeds: {splits: S, inits: I}``, `engine.seeds`) trains every split from every
initialisation, and the same init seed recurs on every split, so the per-cell difference
follows the crossed two-way random-effects model

    d_si = μ + a_s + b_i + e_si,   a_s ~ (0, σ²_split), b_i ~ (0, σ²_init), e_si ~ (0, σ²_res),

with ``e`` holding the split × init interaction (one run per cell cannot separate it from
noise). Estimators:

* balanced (every cell once): the ANOVA (method-of-moments) estimators from the mean squares,
  ``σ²_res = MS_E``, ``σ²_split = (MS_S − MS_E)/I``, ``σ²_init = (MS_I − MS_E)/S`` (Searle,
  Casella & McCulloch 1992, ch. 4), negative estimates set to 0;
* unbalanced (cells missing, e.g. a study still running): REML through statsmodels'
  ``MixedLM`` with one variance component per factor (crossed, one group), which equals the
  ANOVA estimators on balanced data whenever those are positive (a test checks it).

Intervals for the mean difference μ over the S·I cells, each ``mean ± t_df · sqrt(V)``:

* **factorial** (:data:`FACTORIAL_KIND`): ``V = σ²_split/S + σ²_init/I + σ²_res/(S·I)``, df by
  Satterthwaite over the mean squares. Assumes the splits are independent draws of data:
  it generalises to new splits and new initialisations *of these films*, not to new patients
  (the splits share their films, which it does not count).
* **per split** (:data:`SPLIT_MEANS_KIND`): a t interval on the S split means (df S − 1),
  ``V = var(split means)/S``. Assumes splits independent and inits not shared across splits
  (the nested reading, which counts the init part within each split); makes no assumption
  on the init factor's variance.
* **design-corrected** (:data:`DESIGN_KIND`): ``V = σ²_split·(1/S + n_test/n_train) +
  σ²_init/I + σ²_res/(S·I)``: Nadeau & Bengio's correction applied to the split component
  only. The correlation between seeds that resample one set of films comes from the data;
  the training's own randomness is drawn afresh for every run and carries none of it. With
  the data's correlation ρ and ``r = ρ/(1 − ρ)`` the variance of a mean over S splits
  resampling one dataset is ``σ²_split(1 + (S − 1)ρ)/(S(1 − ρ)) = σ²_split(1/S + r)`` exactly,
  so ``r = n_test/n_train`` here assumes what the corrected test assumes (NB's heuristic ρ)
  for the data part and nothing for the rest. This is the interval for new patients.

``rho_design`` is the ρ that the independent-seeds corrected test ``(1/n + r)s²`` would need
to give the design-corrected variance on these cells: the design's estimate of ρ, which the
seeds planner (`engine.analysis.power`, ``design_rho``) plans with.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.analysis import compare
from engine.analysis.metrics import METRICS
from engine.analysis.paired_tests import LEVEL, rho_of_ratio, t_quantile, t_two_sided_p
from engine.analysis.table_columns import COMPONENTS

ANOVA = "ANOVA (balanced)"
REML = "REML (MixedLM)"
FACTORIAL_KIND = (
    "factorial: σ²_split/S + σ²_init/I + σ²_res/(S·I), Satterthwaite df; splits taken as "
    "independent draws of data (new splits and inits of these films, not new patients)"
)
SPLIT_MEANS_KIND = (
    "per split: t on the S split means (df S − 1); splits independent, inits averaged "
    "within each split (no assumption on the init variance)"
)
DESIGN_KIND = (
    "design-corrected: σ²_split·(1/S + n_test/n_train) + σ²_init/I + σ²_res/(S·I); the "
    "Nadeau–Bengio ρ on the split (data) part only, the inits' part independent: for new "
    "patients"
)

#: The columns of :func:`components_table`, in order (`table_columns.COMPONENTS`).
COMPONENT_COLUMNS: tuple[str, ...] = COMPONENTS.view("computed")


@dataclass(frozen=True)
class Components:
    """Variance components of one set of per-cell differences.

    Attributes:
        n_splits, n_inits: levels of each factor present.
        n_cells: cells (runs per method) with a difference.
        mean: mean difference over the cells.
        var_split, var_init, var_residual: the components (each >= 0).
        estimator: :data:`ANOVA` or :data:`REML`.
        ms: the mean squares (split, init, residual) the intervals' Satterthwaite df use:
            the ANOVA's own, or for REML their expectations at the estimates with the mean
            number of cells per level.
        df: their degrees of freedom (S − 1, I − 1, n − S − I + 1).
        split_means: the mean difference of each split (over its inits).
        cell_sd: sample sd of the per-cell differences (what the independent-seeds tests use).
    """

    n_splits: int
    n_inits: int
    n_cells: int
    mean: float
    var_split: float
    var_init: float
    var_residual: float
    estimator: str
    ms: tuple[float, float, float]
    df: tuple[int, int, int]
    split_means: tuple[float, ...]
    cell_sd: float

    @property
    def total(self) -> float:
        """The variance of one cell's difference: the three components' sum."""
        return self.var_split + self.var_init + self.var_residual

    def shares(self) -> tuple[float, float, float]:
        """Each component's share of :attr:`total` (NaN when the total is 0)."""
        total = self.total
        if not total > 0:
            return (math.nan, math.nan, math.nan)
        return (self.var_split / total, self.var_init / total, self.var_residual / total)


@dataclass(frozen=True)
class Interval:
    """One interval for the mean difference: ``mean ± t_df · se``, its p and its kind."""

    low: float
    high: float
    se: float
    df: float
    p: float
    kind: str


def anova_components(cells: pd.DataFrame) -> Components:
    """ANOVA estimators of a balanced crossed design, one value per (split, init).

    Args:
        cells: columns ``split``, ``init`` and ``value`` (the difference), every
            (split, init) pair exactly once.

    Raises:
        ValueError: the design is not balanced, or has fewer than 2 levels of a factor.
    """
    wide = cells.pivot(index="split", columns="init", values="value")
    if wide.isna().any().any():
        raise ValueError("the ANOVA estimators need every (split, init) cell; use REML")
    y = wide.to_numpy(dtype=np.float64)
    n_s, n_i = y.shape
    if n_s < 2 or n_i < 2:
        raise ValueError(f"{n_s} split(s) × {n_i} init(s): each factor needs 2 levels")
    grand = y.mean()
    split_means, init_means = y.mean(axis=1), y.mean(axis=0)
    ms_split = n_i * float(((split_means - grand) ** 2).sum()) / (n_s - 1)
    ms_init = n_s * float(((init_means - grand) ** 2).sum()) / (n_i - 1)
    residual = y - split_means[:, None] - init_means[None, :] + grand
    df_res = (n_s - 1) * (n_i - 1)
    ms_res = float((residual**2).sum()) / df_res
    return Components(
        n_splits=n_s,
        n_inits=n_i,
        n_cells=y.size,
        mean=float(grand),
        var_split=max((ms_split - ms_res) / n_i, 0.0),
        var_init=max((ms_init - ms_res) / n_s, 0.0),
        var_residual=ms_res,
        estimator=ANOVA,
        ms=(ms_split, ms_init, ms_res),
        df=(n_s - 1, n_i - 1, df_res),
        split_means=tuple(float(m) for m in split_means),
        cell_sd=float(y.std(ddof=1)),
    )


def reml_components(cells: pd.DataFrame) -> Components:
    """REML estimates through statsmodels' MixedLM: a variance component for the split and
    one for the init (crossed: one group holds every cell), the residual as its scale.

    Args:
        cells: columns ``split``, ``init`` and ``value``; cells may be missing.

    Raises:
        ValueError: fewer than 2 levels of a factor, or too few cells to leave a residual.
    """
    import statsmodels.api as sm

    cells = cells.dropna(subset=["value"])
    n_s, n_i, n = cells["split"].nunique(), cells["init"].nunique(), len(cells)
    df_res = n - n_s - n_i + 1
    if n_s < 2 or n_i < 2 or df_res < 1:
        raise ValueError(f"{n} cells over {n_s} split(s) × {n_i} init(s): too few to separate")
    model = sm.MixedLM.from_formula(
        "value ~ 1",
        groups=np.zeros(n),
        re_formula="0",
        vc_formula={"split": "0 + C(split)", "init": "0 + C(init)"},
        data=cells.reset_index(drop=True),
    )
    with warnings.catch_warnings():
        # A component at its boundary (0) is a legitimate estimate; statsmodels warns on it.
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True)
    by_name = dict(zip(model.exog_vc.names, np.asarray(fit.vcomp, dtype=float), strict=True))
    var_split, var_init = max(by_name["split"], 0.0), max(by_name["init"], 0.0)
    var_res = float(fit.scale)
    # Mean squares expected at the estimates, with the mean cells per level, for the df.
    per_split, per_init = n / n_s, n / n_i
    ms = (var_res + per_split * var_split, var_res + per_init * var_init, var_res)
    split_means = cells.groupby("split")["value"].mean()
    return Components(
        n_splits=n_s,
        n_inits=n_i,
        n_cells=n,
        mean=float(fit.fe_params.iloc[0]),
        var_split=var_split,
        var_init=var_init,
        var_residual=var_res,
        estimator=REML,
        ms=ms,
        df=(n_s - 1, n_i - 1, df_res),
        split_means=tuple(float(m) for m in split_means),
        cell_sd=float(cells["value"].std(ddof=1)),
    )


def estimate(cells: pd.DataFrame) -> Components:
    """ANOVA when every (split, init) cell is there once, else REML (MixedLM)."""
    cells = cells.dropna(subset=["value"])
    n_s, n_i = cells["split"].nunique(), cells["init"].nunique()
    balanced = len(cells) == n_s * n_i and not cells.duplicated(["split", "init"]).any()
    return anova_components(cells) if balanced else reml_components(cells)


def mean_variance(comp: Components, *, split_weight: float) -> tuple[float, float]:
    """``V = split_weight·σ²_split + σ²_init/I + σ²_res/(S·I)`` and its Satterthwaite df.

    V is written as a combination of the mean squares, ``Σ a_j MS_j``, through the
    components' expressions (``σ²_split = (MS_S − MS_E)/I``, ``σ²_init = (MS_I − MS_E)/S``,
    ``σ²_res = MS_E``; a component estimated at 0 drops out), and ``df = V² / Σ (a_j MS_j)²
    / df_j`` (Satterthwaite 1946).

    Args:
        comp: the components.
        split_weight: the split component's weight: ``1/S`` for the factorial interval,
            ``1/S + n_test/n_train`` for the design-corrected one.
    """
    per_split = comp.n_cells / comp.n_splits  # cells per split: I when balanced
    per_init = comp.n_cells / comp.n_inits  # cells per init: S when balanced
    init_weight, res_weight = 1 / comp.n_inits, 1 / comp.n_cells
    coef = [0.0, 0.0, res_weight]  # on MS_S, MS_I, MS_E
    if comp.var_split > 0:
        coef[0] += split_weight / per_split
        coef[2] -= split_weight / per_split
    if comp.var_init > 0:
        coef[1] += init_weight / per_init
        coef[2] -= init_weight / per_init
    variance = (
        split_weight * comp.var_split + init_weight * comp.var_init + res_weight * comp.var_residual
    )
    terms = [(a * ms) ** 2 / df for a, ms, df in zip(coef, comp.ms, comp.df, strict=True) if a]
    df = variance**2 / sum(terms) if sum(terms) > 0 else math.inf
    return variance, df


def _interval(mean: float, variance: float, df: float, kind: str, level: float) -> Interval:
    if not variance > 0 or not math.isfinite(variance):
        exact = 1.0 if mean == 0 else 0.0
        return Interval(mean, mean, 0.0, df, exact, kind)
    se = math.sqrt(variance)
    half = t_quantile(0.5 + level / 2, df) * se
    p = t_two_sided_p(mean / se, df)
    return Interval(mean - half, mean + half, se, df, p, kind)


def factorial_interval(comp: Components, *, level: float = LEVEL) -> Interval:
    """:data:`FACTORIAL_KIND`: the crossed design's interval, splits as independent data."""
    variance, df = mean_variance(comp, split_weight=1 / comp.n_splits)
    return _interval(comp.mean, variance, df, FACTORIAL_KIND, level)


def design_interval(comp: Components, ratio: float, *, level: float = LEVEL) -> Interval:
    """:data:`DESIGN_KIND`: Nadeau & Bengio's ``r = n_test/n_train`` on the split part only."""
    variance, df = mean_variance(comp, split_weight=1 / comp.n_splits + ratio)
    return _interval(comp.mean, variance, df, DESIGN_KIND, level)


def split_means_interval(comp: Components, *, level: float = LEVEL) -> Interval:
    """:data:`SPLIT_MEANS_KIND`: t on the S split means, df S − 1."""
    means = np.asarray(comp.split_means, dtype=np.float64)
    variance = float(means.var(ddof=1)) / means.size
    return _interval(float(means.mean()), variance, means.size - 1, SPLIT_MEANS_KIND, level)


def design_rho(comp: Components, ratio: float) -> float:
    """The ρ the independent-seeds corrected test ``(1/n + r)s²`` needs to give the
    design-corrected variance on these cells (0 to 1; NaN when the cells do not vary)."""
    s2 = comp.cell_sd**2
    if not s2 > 0 or not math.isfinite(ratio):
        return math.nan
    variance, _ = mean_variance(comp, split_weight=1 / comp.n_splits + ratio)
    r = max((variance - s2 / comp.n_cells) / s2, 0.0)
    return rho_of_ratio(r)


def cell_frame(per_run: pd.DataFrame, factors: pd.DataFrame) -> pd.DataFrame:
    """Attach each run's split and init seed to the per-run metrics.

    Args:
        per_run: one row per selected run with ``task``, ``method``, ``seed`` and the
            metric columns (`engine.analysis.compare.per_run_metrics`).
        factors: ``seed``, ``split_seed``, ``init_seed`` per pairing seed
            (`store.runs.seed_factors`).
    """
    keys = factors[["seed", "split_seed", "init_seed"]].drop_duplicates("seed")
    return per_run.merge(keys, on="seed", how="inner")


def is_factorial(factors: pd.DataFrame) -> bool:
    """Whether the seeds cross at least 2 split seeds with at least 2 init seeds, some split
    trained from several inits (independent seeds have split = init = seed: never)."""
    if factors.empty:
        return False
    crossed = factors.groupby("split_seed")["init_seed"].nunique().max() >= 2
    return bool(
        crossed and factors["split_seed"].nunique() >= 2 and factors["init_seed"].nunique() >= 2
    )


def components_table(
    cells: pd.DataFrame,
    ratios: Mapping[str, float],
    *,
    metrics: Sequence[str] = METRICS,
    level: float = LEVEL,
) -> pd.DataFrame:
    """Variance components and the three intervals of every pair's difference.

    Args:
        cells: :func:`cell_frame`'s rows: ``task``, ``method``, ``seed``, ``split_seed``,
            ``init_seed`` and a column per metric.
        ratios: task -> ``n_test/n_train`` (`engine.analysis.paired.test_train_ratios`);
            NaN leaves the design-corrected interval blank.
        metrics: metric columns to decompose.
        level: confidence level of the intervals.

    Returns:
        :data:`COMPONENT_COLUMNS`, one row per task × metric × pair of methods (``a − b``,
        methods in the paper's order), for pairs with at least 2 splits and 2 inits.
    """
    rows = []
    for task in compare.task_order(cells["task"].unique()):
        ratio = float(ratios.get(task, math.nan))
        for metric in metrics:
            if metric not in cells:
                continue
            part = compare.score_frame(cells, metric, [task])
            rows.extend(_pair_rows(part, cells, task, metric, ratio, level))
    return pd.DataFrame(rows, columns=list(COMPONENT_COLUMNS))


def _pair_rows(
    scores: pd.DataFrame,
    cells: pd.DataFrame,
    task: str,
    metric: str,
    ratio: float,
    level: float,
) -> list[dict[str, object]]:
    """The rows of one task and metric."""
    factors = cells[cells["task"] == task].drop_duplicates("seed").set_index("seed")
    wide = scores.pivot_table(index="seed", columns="method", values="value", aggfunc="first")
    methods = [m for m in pd.unique(scores["method"]) if m in wide.columns]
    rows = []
    for a, b in compare.method_pairs(methods):
        diffs = (wide[a] - wide[b]).dropna()
        frame = pd.DataFrame(
            {
                "split": factors.loc[diffs.index, "split_seed"].to_numpy(),
                "init": factors.loc[diffs.index, "init_seed"].to_numpy(),
                "value": diffs.to_numpy(),
            }
        )
        try:
            comp = estimate(frame)
        except ValueError:
            continue  # too few splits or inits for this pair (yet)
        rows.append(_row(comp, task, metric, a, b, ratio, level))
    return rows


def _row(
    comp: Components, task: str, metric: str, a: str, b: str, ratio: float, level: float
) -> dict[str, object]:
    factorial = factorial_interval(comp, level=level)
    by_split = split_means_interval(comp, level=level)
    design = (
        design_interval(comp, ratio, level=level)
        if math.isfinite(ratio)
        else Interval(math.nan, math.nan, math.nan, math.nan, math.nan, DESIGN_KIND)
    )
    shares = comp.shares()
    return {
        "task": task,
        "metric": metric,
        "method_a": a,
        "method_b": b,
        "n_splits": comp.n_splits,
        "n_inits": comp.n_inits,
        "n_cells": comp.n_cells,
        "mean_diff": comp.mean,
        "var_split": comp.var_split,
        "var_init": comp.var_init,
        "var_residual": comp.var_residual,
        "share_split": shares[0],
        "share_init": shares[1],
        "share_residual": shares[2],
        "estimator": comp.estimator,
        "ci_factorial_low": factorial.low,
        "ci_factorial_high": factorial.high,
        "p_factorial": factorial.p,
        "df_factorial": factorial.df,
        "ci_split_means_low": by_split.low,
        "ci_split_means_high": by_split.high,
        "p_split_means": by_split.p,
        "ci_design_low": design.low,
        "ci_design_high": design.high,
        "p_design": design.p,
        "df_design": design.df,
        "test_train_ratio": ratio,
        "rho_design": design_rho(comp, ratio),
    }
