"""What the phantom referee compares and how: a pair of methods (`Comparison`), what one
dataset says about it (`PairSample`), and the intervals (`INTERVALS`) and tests (`TESTS`) it
checks, each `engine.analysis.paired`'s (or, for a factorial design,
`engine.analysis.variance_components`') own, called, not restated. To add one, append an
`IntervalRule` or a `TestRule`; `engine.analysis.referee` scores them and re-exports these
names.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.analysis import paired, paired_tests
from engine.analysis import variance_components as vc


@dataclass(frozen=True)
class Comparison:
    """A pair of methods compared as ``a − b``; ``null`` when ``b`` is ``a`` under another
    name (the same training, other random streams: the true difference is 0)."""

    method_a: str
    method_b: str
    null: bool = False

    @property
    def name(self) -> str:
        """``"a − b"``, as the tables name the pair."""
        return f"{self.method_a} − {self.method_b}"


@dataclass(frozen=True)
class PairSample:
    """What one dataset says about one pair.

    Attributes:
        dataset: the dataset's index ``k``.
        comparison: the pair.
        diffs: ``(S,)`` per-seed differences ``a − b`` on each seed's own test split, seeds in
            order (what a study of this dataset sees).
        fresh_diffs: ``(S,)`` the same selected models' differences on the fresh test set.
        ratio: ``n_test / n_train`` of the dataset's splits (mean test films over mean films
            used to fit and select, `paired.test_train_ratios`).
        boot: the film-sampling bootstrap interval (`paired.hierarchical_bootstrap`); NaNs
            when it was not run.
        rope: the region of practical equivalence of the Bayesian test.
        lower_is_better: the metric's direction (for "a better").
        split_seeds, init_seeds: ``(S,)`` the split seed and init seed of each difference
            (`engine.seeds`), aligned with ``diffs``; None when the results do not say (a
            referee run from before they were recorded: independent seeds).
        components: the variance components of ``diffs`` (`variance_components.estimate`)
            when the seeds cross 2 or more splits with 2 or more inits; None otherwise, and
            the factorial design's intervals and tests are then not computed (NaN).
    """

    dataset: int
    comparison: Comparison
    diffs: np.ndarray
    fresh_diffs: np.ndarray
    ratio: float
    boot: tuple[float, float] = (math.nan, math.nan)
    rope: float = paired.DEFAULT_ROPE
    lower_is_better: bool = True
    split_seeds: np.ndarray | None = field(default=None, repr=False, compare=False)
    init_seeds: np.ndarray | None = field(default=None, repr=False, compare=False)
    corrected: paired.CorrectedT = field(init=False, repr=False, compare=False)
    naive: paired.CorrectedT = field(init=False, repr=False, compare=False)
    components: vc.Components | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Each interval and test below reads these; computed once per sample.
        object.__setattr__(self, "corrected", paired.corrected_resampled_t(self.diffs, self.ratio))
        object.__setattr__(self, "naive", paired.corrected_resampled_t(self.diffs, 0.0))
        object.__setattr__(self, "components", _components(self))

    @property
    def factorial(self) -> bool:
        """Whether the sample's seeds cross splits with inits (its components are known)."""
        return self.components is not None


def _components(sample: PairSample) -> vc.Components | None:
    """The variance components of a sample whose seeds cross 2+ splits with 2+ inits
    (`variance_components.is_factorial`'s rule, on arrays: it runs once per sample)."""
    if sample.split_seeds is None or sample.init_seeds is None:
        return None
    value = np.asarray(sample.diffs, dtype=np.float64)
    kept = np.isfinite(value)
    split, init = np.asarray(sample.split_seeds)[kept], np.asarray(sample.init_seeds)[kept]
    pairs = np.unique(np.column_stack([split, init]), axis=0)
    if (
        len(np.unique(split)) < 2
        or len(np.unique(init)) < 2
        or len(pairs) == len(np.unique(pairs[:, 0]))
    ):  # fewer than 2 levels of a factor, or no split trained from 2 inits: not crossed
        return None
    cells = pd.DataFrame({"split": split, "init": init, "value": value[kept]})
    try:
        return vc.estimate(cells)
    except ValueError:  # too few cells left to separate the components
        return None


Interval = tuple[float, float]


@dataclass(frozen=True)
class IntervalRule:
    """One interval for the mean difference of a pair.

    Attributes:
        key: its column name (``naive_t``).
        label: as a reader names it.
        assumes: what it assumes, in one line.
        compute: ``(sample, level) -> (low, high)``; NaNs where it cannot be computed (the
            sample is then left out of its coverage, not counted as a miss).
        targets: what it is an interval for: :data:`MEAN` (the mean difference, which the
            truth is) or another centre (the Wilcoxon's :data:`PSEUDO_MEDIAN`, scored against
            the mean all the same, and never recommended for it).
        needs: what it needs to be computed at all, for a table that says why it was not
            run ("" when it always is).
    """

    key: str
    label: str
    assumes: str
    compute: Callable[[PairSample, float], Interval]
    targets: str = "mean"
    needs: str = ""


#: What an :class:`IntervalRule` covers.
MEAN, PSEUDO_MEDIAN = "mean", "pseudo-median"
#: Why the factorial design's intervals and tests may be missing, as the tables say it.
NEEDS_FACTORIAL = "needs a factorial design (--seeds SxI, e.g. 3x2)"


@dataclass(frozen=True)
class TestRule:
    """One test of "no difference" between a pair.

    Attributes:
        key: its column name.
        label: as a reader names it.
        rejects: ``(sample, alpha) -> 1.0`` when it declares a difference, ``0.0`` when not,
            NaN when it cannot say (fewer than 2 seeds; no factorial design).
        needs: what it needs to be computed at all ("" when it always is).
    """

    key: str
    label: str
    rejects: Callable[[PairSample, float], float]
    needs: str = ""


def _t_interval(test: paired.CorrectedT, level: float) -> Interval:
    """The interval of a `paired.CorrectedT` at ``level`` (its own is at `paired.LEVEL`)."""
    if test.n < 2 or not math.isfinite(test.se):
        return math.nan, math.nan
    half = paired_tests.t_quantile(0.5 + level / 2, test.df) * test.se
    return test.mean - half, test.mean + half


def _naive_interval(sample: PairSample, level: float) -> Interval:
    return _t_interval(sample.naive, level)


def _corrected_interval(sample: PairSample, level: float) -> Interval:
    return _t_interval(sample.corrected, level)


def _bayes_interval(sample: PairSample, level: float) -> Interval:
    """The equal-tailed credible interval of the Bayesian correlated t-test's posterior:
    Student t on ``n − 1`` df at the mean, scale the corrected standard error, as
    `paired.bayes_correlated_t` hands it to baycomp's ``Posterior``. Under its flat prior it
    is the corrected interval, number for number: the row shows that the Bayesian verdict
    inherits the corrected test's ρ."""
    test = sample.corrected
    if test.n < 2 or not math.isfinite(test.se):
        return math.nan, math.nan
    if test.se == 0:
        return test.mean, test.mean
    low, high = sps.t.interval(level, test.df, loc=test.mean, scale=test.se)
    return float(low), float(high)


def _bootstrap_interval(sample: PairSample, level: float) -> Interval:
    """The hierarchical bootstrap's percentile interval as it was computed (at the level the
    run used; see `engine.referee_runs`)."""
    return sample.boot


def _hodges_lehmann_interval(sample: PairSample, level: float) -> Interval:
    """The exact signed-rank interval around the Hodges–Lehmann estimate
    (`paired.hodges_lehmann`); NaNs where no finite interval exists (5 or fewer seeds at
    95 %)."""
    result = paired.hodges_lehmann(sample.diffs, level=level)
    if not (math.isfinite(result.low) and math.isfinite(result.high)):
        return math.nan, math.nan
    return result.low, result.high


def _ends(interval: vc.Interval) -> Interval:
    return interval.low, interval.high


def _factorial_interval(sample: PairSample, level: float) -> Interval:
    """`variance_components.factorial_interval`; NaNs without a factorial design."""
    comp = sample.components
    return (math.nan, math.nan) if comp is None else _ends(vc.factorial_interval(comp, level=level))


def _split_means_interval(sample: PairSample, level: float) -> Interval:
    """`variance_components.split_means_interval`; NaNs without a factorial design."""
    comp = sample.components
    if comp is None:
        return math.nan, math.nan
    return _ends(vc.split_means_interval(comp, level=level))


def _design_interval(sample: PairSample, level: float) -> Interval:
    """`variance_components.design_interval` at the dataset's ``n_test/n_train``; NaNs
    without a factorial design."""
    comp = sample.components
    if comp is None or not math.isfinite(sample.ratio):
        return math.nan, math.nan
    return _ends(vc.design_interval(comp, sample.ratio, level=level))


INTERVALS: tuple[IntervalRule, ...] = (
    IntervalRule(
        "naive_t",
        "naive paired t",
        "seeds independent: mean ± t(n−1) · s/√n",
        _naive_interval,
    ),
    IntervalRule(
        "corrected_t",
        "corrected t (Nadeau-Bengio)",
        "between-seed correlation ρ = n_test/n: mean ± t(n−1) · √((1/n + n_test/n_train) s²)",
        _corrected_interval,
    ),
    IntervalRule(
        "bayes_t",
        "Bayesian correlated t (credible)",
        "flat prior, the corrected variance (so the same ρ)",
        _bayes_interval,
    ),
    IntervalRule(
        "hier_bootstrap",
        "film-sampling bootstrap",
        "seeds, then test patients, resampled as if independent",
        _bootstrap_interval,
        needs="needs --bootstrap > 0",
    ),
    IntervalRule(
        "wilcoxon_hl",
        "Wilcoxon / Hodges–Lehmann (pseudo-median)",
        "seeds independent; exact signed-rank interval of the pseudo-median, which is the "
        "mean only for symmetric differences",
        _hodges_lehmann_interval,
        targets=PSEUDO_MEDIAN,
        needs="needs 6 or more seeds for a finite 95 % interval",
    ),
    IntervalRule(
        "factorial",
        "factorial (split + init components)",
        "splits independent draws of data: σ²_split/S + σ²_init/I + σ²_res/(S·I), Satterthwaite df",
        _factorial_interval,
        needs=NEEDS_FACTORIAL,
    ),
    IntervalRule(
        "split_means",
        "factorial: t on the split means",
        "splits independent, inits averaged within each split: t on S split means, df S − 1",
        _split_means_interval,
        needs=NEEDS_FACTORIAL,
    ),
    IntervalRule(
        "design_corrected",
        "factorial, design-corrected (NB ρ on the split part)",
        "Nadeau–Bengio's n_test/n_train on the split component only, inits independent",
        _design_interval,
        needs=NEEDS_FACTORIAL,
    ),
)


def _p_below(p: float, alpha: float) -> float:
    return math.nan if not math.isfinite(p) else float(p < alpha)


def _naive_rejects(sample: PairSample, alpha: float) -> float:
    return _p_below(sample.naive.p, alpha)


def _corrected_rejects(sample: PairSample, alpha: float) -> float:
    return _p_below(sample.corrected.p, alpha)


def _wilcoxon_rejects(sample: PairSample, alpha: float) -> float:
    d = sample.diffs[np.isfinite(sample.diffs)]
    return math.nan if d.size < 2 else _p_below(paired.wilcoxon_exact_p(d), alpha)


def _bootstrap_rejects(sample: PairSample, alpha: float) -> float:
    low, high = sample.boot
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan
    return float(low > 0 or high < 0)


@functools.cache
def has_baycomp() -> bool:
    """Whether baycomp is importable: the Bayesian test's probabilities are its ``Posterior``'s
    (`paired.bayes_correlated_t`); without it that test's row is left empty (NaN)."""
    try:
        import baycomp.single  # noqa: F401
    except ImportError:
        return False
    return True


def _verdict_of(sample: PairSample) -> str | None:
    """The paired table's verdict of one sample (`paired.verdict` at its thresholds, one
    comparison: no Holm family), or None without baycomp or a finite posterior."""
    if not has_baycomp():
        return None
    probs = paired.bayes_correlated_t(sample.corrected, sample.rope)
    if not all(math.isfinite(p) for p in probs):
        return None
    return paired.verdict("a", "b", probs, lower_is_better=sample.lower_is_better)


def _bayes_rejects(sample: PairSample, alpha: float) -> float:
    """The verdict names a better method (posterior ≥ `paired.BAYES_THRESHOLD` beyond the
    ROPE); ``alpha`` is not used: the rule is the verdict's own. NaN without baycomp."""
    said = _verdict_of(sample)
    return math.nan if said is None else float(paired.better_method(said) is not None)


def _equivalent_called(sample: PairSample, alpha: float) -> float:
    """The verdict reads "equivalent" (TOST's rule within the ROPE): on a real pair whose
    difference exceeds the ROPE, a wrong call. NaN without baycomp."""
    said = _verdict_of(sample)
    return math.nan if said is None else float(said == paired.EQUIVALENT)


def _factorial_rejects(sample: PairSample, alpha: float) -> float:
    comp = sample.components
    return math.nan if comp is None else _p_below(vc.factorial_interval(comp).p, alpha)


def _split_means_rejects(sample: PairSample, alpha: float) -> float:
    comp = sample.components
    return math.nan if comp is None else _p_below(vc.split_means_interval(comp).p, alpha)


def _design_rejects(sample: PairSample, alpha: float) -> float:
    comp = sample.components
    if comp is None or not math.isfinite(sample.ratio):
        return math.nan
    return _p_below(vc.design_interval(comp, sample.ratio).p, alpha)


TESTS: tuple[TestRule, ...] = (
    TestRule("naive_t", "naive paired t, p < α", _naive_rejects),
    TestRule("corrected_t", "corrected t (Nadeau-Bengio), p < α", _corrected_rejects),
    TestRule("wilcoxon", "Wilcoxon signed-rank (exact), p < α", _wilcoxon_rejects),
    TestRule(
        "hier_bootstrap",
        "film-sampling bootstrap interval excludes 0",
        _bootstrap_rejects,
        needs="needs --bootstrap > 0",
    ),
    TestRule(
        "bayes_t",
        "verdict names a better method (posterior 0.975 beyond the ROPE)",
        _bayes_rejects,
        needs="needs baycomp installed",
    ),
    TestRule(
        "verdict_equivalent",
        "verdict reads equivalent (TOST within the ROPE)",
        _equivalent_called,
        needs="needs baycomp installed",
    ),
    TestRule("factorial", "factorial t, p < α", _factorial_rejects, needs=NEEDS_FACTORIAL),
    TestRule(
        "split_means",
        "factorial: t on the split means, p < α",
        _split_means_rejects,
        needs=NEEDS_FACTORIAL,
    ),
    TestRule(
        "design_corrected",
        "factorial, design-corrected t, p < α",
        _design_rejects,
        needs=NEEDS_FACTORIAL,
    ),
)
