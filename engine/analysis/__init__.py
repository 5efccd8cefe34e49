"""Analysis of finished runs: metrics, statistics, rankings and the tables pages show.

==========================  =================================================================
``metrics``                 the six metrics of the paper, from confusion matrices
``probability_metrics``     metrics of predicted probabilities (RPS, calibration, unimodality)
``stats``                   the paper's tests (Shapiro-Wilk, ANOVA, Tukey, Wilcoxon, ...)
``ranking``                 Friedman and Nemenyi over seeds, critical differences
``compare``                 per-run metrics, summary tables, rank marks
``relationship``            the KL × CPPD relationship of predictions (contingency, KLD)
``explorer``                the hyper-parameter search explorer's frames
==========================  =================================================================

The submodules are imported by name (``from engine.analysis import stats``, or
``engine.analysis.stats``): ``stats`` and ``ranking`` load statsmodels and scikit-posthocs,
which a training process (it needs only ``metrics``) should not pay for, so this package
imports none of them eagerly.
"""

__all__ = [
    "compare",
    "explorer",
    "metrics",
    "probability_metrics",
    "ranking",
    "relationship",
    "stats",
]
