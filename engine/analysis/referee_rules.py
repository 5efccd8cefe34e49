"""What the phantom referee compares and how: a pair of methods (`Comparison`), what one
dataset says about it (`PairSample`), and the intervals (`INTERVALS`) and tests (`TESTS`) it
checks, each `engine.analysis.paired`'s own, called, not restated. To add one, append an
`IntervalRule` or a `TestRule`; `engine.analysis.referee` scores them and re-exports these
names.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from engine.analysis import paired


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
    """

    dataset: int
    comparison: Comparison
    diffs: np.ndarray
    fresh_diffs: np.ndarray
    ratio: float
    boot: tuple[float, float] = (math.nan, math.nan)
    rope: float = paired.DEFAULT_ROPE
    lower_is_better: bool = True
    corrected: paired.CorrectedT = field(init=False, repr=False, compare=False)
    naive: paired.CorrectedT = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Each interval and test below reads these; computed once per sample.
        object.__setattr__(self, "corrected", paired.corrected_resampled_t(self.diffs, self.ratio))
        object.__setattr__(self, "naive", paired.corrected_resampled_t(self.diffs, 0.0))


Interval = tuple[float, float]


@dataclass(frozen=True)
class IntervalRule:
    """One interval for the mean difference of a pair.

    Attributes:
        key: its column name (``naive_t``).
        label: as a reader names it.
        assumes: what it assumes, in one line.
        compute: ``(sample, level) -> (low, high)``.
    """

    key: str
    label: str
    assumes: str
    compute: Callable[[PairSample, float], Interval]


@dataclass(frozen=True)
class TestRule:
    """One test of "no difference" between a pair.

    Attributes:
        key: its column name.
        label: as a reader names it.
        rejects: ``(sample, alpha) -> 1.0`` when it declares a difference, ``0.0`` when not,
            NaN when it cannot say (fewer than 2 seeds).
    """

    key: str
    label: str
    rejects: Callable[[PairSample, float], float]


def _t_interval(test: paired.CorrectedT, level: float) -> Interval:
    """The interval of a `paired.CorrectedT` at ``level`` (its own is at `paired.LEVEL`)."""
    if test.n < 2 or not math.isfinite(test.se):
        return math.nan, math.nan
    half = float(sps.t.ppf(0.5 + level / 2, test.df)) * test.se
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


def _bayes_rejects(sample: PairSample, alpha: float) -> float:
    """The Bayesian verdict names a better method (posterior ≥ `paired.BAYES_THRESHOLD` beyond
    the ROPE); ``alpha`` is not used: the rule is the verdict's own. NaN without baycomp."""
    if not has_baycomp():
        return math.nan
    probs = paired.bayes_correlated_t(sample.corrected, sample.rope)
    if not all(math.isfinite(p) for p in probs):
        return math.nan
    verdict = paired.verdict(
        "a", "b", probs, lower_is_better=sample.lower_is_better, threshold=paired.BAYES_THRESHOLD
    )
    return float(verdict not in (paired.EQUIVALENT, paired.INCONCLUSIVE))


TESTS: tuple[TestRule, ...] = (
    TestRule("naive_t", "naive paired t, p < α", _naive_rejects),
    TestRule("corrected_t", "corrected t (Nadeau-Bengio), p < α", _corrected_rejects),
    TestRule("wilcoxon", "Wilcoxon signed-rank (exact), p < α", _wilcoxon_rejects),
    TestRule("hier_bootstrap", "film-sampling bootstrap interval excludes 0", _bootstrap_rejects),
    TestRule("bayes_t", "Bayesian correlated t names a better method", _bayes_rejects),
)
