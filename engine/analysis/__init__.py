"""Analysis of finished runs: metrics, statistics, rankings and the tables pages show.

==========================  =================================================================
``metrics``                 the six metrics of the paper, from confusion matrices
``probability_metrics``     metrics of predicted probabilities (RPS, calibration, unimodality)
``stats``                   the paper's tests (Shapiro-Wilk, ANOVA, Tukey, Wilcoxon, ...)
``ranking``                 Friedman and Nemenyi over seeds, critical differences
``compare``                 per-run metrics, summary tables, rank marks
``relationship``            the KL × CPPD relationship of predictions (contingency, KLD)
``explorer``                the hyper-parameter search explorer's frames
``paired``                  paired comparisons that count films and seeds: the corrected
                            resampled t-test, a hierarchical bootstrap, effect sizes, Holm
``designs``                 seed-blocked ANOVA, Friedman omnibus, CD ranking of every metric
``power``                   seeds needed for 80 % power under the corrected variance
``kld_parts``               the joint KLD by the chain rule; mutual information of tables
``truth``                   every metric against the phantom's true grades
``calibration``             ECE with its interval and calibrated floor; temperature scaling
``budget``                  Table 4 and paired tests at nominal's search budget
==========================  =================================================================

The submodules are imported by name (``from engine.analysis import stats``, or
``engine.analysis.stats``): ``stats`` and ``ranking`` load statsmodels and scikit-posthocs,
which a training process (it needs only ``metrics``) should not pay for, so this package
imports none of them eagerly. docs/statistics.md says what each test assumes.
"""

__all__ = [
    "budget",
    "calibration",
    "compare",
    "designs",
    "explorer",
    "kld_parts",
    "metrics",
    "paired",
    "power",
    "probability_metrics",
    "ranking",
    "relationship",
    "stats",
    "truth",
]
