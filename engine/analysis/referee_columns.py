"""The phantom referee's tables, declared once (issue 40): what `softgrade
calibrate-inference` writes and the Statistics tab's "What the referee measured" shows
(coverage per interval, type-I error and power per test, the realised between-seed
correlation; `engine.analysis.referee.summary_table`), and what `softgrade calibrate-sets`
prints of the grade sets' referee (`engine.analysis.conformal`).

Each is a `TableVocabulary` (`engine.analysis.table_vocabulary`). A coverage or test table
has, between its first column and its last, one column per pair the result compared, headed
by the pair's title (data, not vocabulary); `pages.present.referee_tables` writes those.
"""

from __future__ import annotations

from engine.analysis import referee
from engine.analysis.table_vocabulary import Column, TableVocabulary

#: The column that says why a procedure was not run (only where one was not).
_NOT_RUN = Column("not_run", "Not run because", meaning="why the procedure has no number")

REFEREE_COVERAGE: TableVocabulary = TableVocabulary(
    "referee's coverage",
    (
        Column("interval", "Interval", meaning="the interval procedure"),
        Column("mean_width", "Mean width (real pairs)", meaning="its mean width, real pairs"),
        _NOT_RUN,
    ),
    # Before the pairs' columns, and after them.
    {"first": ("interval",), "last": ("mean_width", "not_run")},
)

REFEREE_TESTS: TableVocabulary = TableVocabulary(
    "referee's tests",
    (Column("test", "Test", meaning="the test procedure"), _NOT_RUN),
    {"first": ("test",), "last": ("not_run",)},
)

REFEREE_CORRELATION: TableVocabulary = TableVocabulary(
    "referee's between-seed correlation",
    (
        Column("pair", "Pair", meaning="the pair of methods (null: the method and its twin)"),
        Column(
            referee.RHO_REALISED,
            "ρ realised [95% CI]",
            meaning="the between-seed correlation realised over the datasets",
        ),
        Column(
            "r_realised",
            "r = ρ/(1 − ρ) realised",
            meaning="the ratio the corrected variance would need",
        ),
        Column(
            referee.RHO_ASSUMED,
            "ρ assumed (n_test/n)",
            meaning="the ρ the corrected test assumes",
        ),
        Column(
            referee.RHO_TRAINING,
            "ρ from shared training films",
            meaning="the part of ρ shared training films alone give",
        ),
    ),
)

# `softgrade calibrate-sets` prints its summary under the keys (the CSV's columns).
SETS_REFEREE: TableVocabulary = TableVocabulary(
    "grade sets' referee",
    (
        Column("task", "Task", meaning="the task (KL or CPPD)"),
        Column("method", "Method", meaning="the method"),
        Column("score", "Score", meaning="the conformal score"),
        Column("per_grade", "Thresholds", meaning="per grade, or one threshold"),
        Column(
            "coverage", "Coverage", meaning="mean share of fresh films whose grade is in its set"
        ),
        Column("mc_low", "", meaning="low end of the 95 % Monte-Carlo interval over datasets"),
        Column("mc_high", "", meaning="high end of the 95 % Monte-Carlo interval over datasets"),
        Column("min_grade_coverage", "", meaning="the lowest per-grade coverage"),
        Column("true_coverage", "", meaning="coverage of the noiseless true grade"),
        Column("mean_size", "Mean set size", meaning="grades in a set, on average"),
        Column("holds", "", meaning="the interval reaches the target"),
    ),
    {
        "printed": (
            "task",
            "method",
            "score",
            "per_grade",
            "coverage",
            "mc_low",
            "mc_high",
            "min_grade_coverage",
            "true_coverage",
            "mean_size",
            "holds",
        )
    },
)

#: Every table declared here.
TABLES: tuple[TableVocabulary, ...] = (
    REFEREE_COVERAGE,
    REFEREE_TESTS,
    REFEREE_CORRELATION,
    SETS_REFEREE,
)
