"""The vocabulary of issue 21's reviewer tables beside the paired ones, declared once
(issue 40): the KLD's chain-rule parts (`kld_parts`), ECE with its interval and floor and
temperature scaling (`calibration`), scores against the phantom's true grade (`truth`), the
budget-matched and coverage-matched comparisons (`budget`), the films worth a second look
(`second_look`) and the seeds-for-power view (`power`).

Each is a `TableVocabulary` (`engine.analysis.table_vocabulary`); `pages.present`'s
`inference_tables` and `power_tables` build a row's cells by key, in a view's order, and put
the headers declared here above them. A column shared with the paired table (the corrected
interval and p of the truth table) is the paired table's own record.
"""

from __future__ import annotations

from engine.analysis import kld_parts
from engine.analysis.metrics import ECE, METRIC_LABELS, SELECTION_METRIC
from engine.analysis.table_columns import PAIRED
from engine.analysis.table_vocabulary import Column, TableVocabulary

_TASK = Column("task", "Task", meaning="the task (KL or CPPD)")
_METHOD = Column("method", "Method", meaning="the method")
_METRIC = Column("metric", "Metric", meaning="the metric")
_SEEDS = Column("n_seeds", "Seeds", meaning="seeds the row's means are over")

# --------------------------------------------------------------------------------------------
# The KLD by the chain rule (`kld_parts.summarise`)
# --------------------------------------------------------------------------------------------

KLD_PARTS: TableVocabulary = TableVocabulary(
    "KLD parts",
    (
        _METHOD,
        _SEEDS,
        Column("kld", "KLD", meaning="D(true ‖ predicted) of the KL × CPPD table, in nats"),
        Column("kl_marginal", "KL marginal", meaning="the part the KL grades' shares make"),
        Column("cppd_given_kl", "CPPD given KL", meaning="the part CPPD given the KL grade makes"),
        Column("marginal_share", "KL-marginal share", meaning="the KL-marginal part's share"),
        Column("mi_true", "MI true", meaning="mutual information of CPPD and KL, true table"),
        Column("mi_pred", "MI predicted", meaning="mutual information, predicted table"),
    ),
    {
        # The two parts, in the stacked bar's order.
        "parts": kld_parts.PARTS,
        # The columns in nats (written to 4 decimals).
        "nats": ("kld", *kld_parts.PARTS, "mi_true", "mi_pred"),
    },
)

# --------------------------------------------------------------------------------------------
# Calibration: ECE with its interval and floor (`calibration.ece_uncertainty`), temperature
# scaling (`calibration.temperature_scaling`)
# --------------------------------------------------------------------------------------------

CALIBRATION: TableVocabulary = TableVocabulary(
    "ECE and its floor",
    (
        _TASK,
        _METHOD,
        _SEEDS,
        Column(ECE, "ECE", meaning="mean over seeds of each seed's ECE"),
        Column("ci", "95 % CI", meaning="the ECE's 95 % interval in one cell"),
        Column("floor", "Floor (calibrated)", meaning="mean ECE a calibrated model would score"),
        Column("floor_high", "Floor, 95th pct", meaning="the floor's 95th percentile"),
        Column("excess", "ECE − floor", meaning="the ECE above the floor"),
    ),
    {
        # The ECEs, each a number to 4 decimals.
        "scores": (ECE, "floor", "floor_high", "excess"),
    },
)

TEMPERATURE: TableVocabulary = TableVocabulary(
    "temperature scaling",
    (
        _TASK,
        _METHOD,
        _SEEDS,
        Column("temperature", "Temperature", meaning="mean fitted temperature T"),
        Column("ece_before", "ECE before", meaning="test ECE before scaling"),
        Column("ece_after", "ECE after", meaning="test ECE after scaling"),
        Column("rps_before", "RPS before", meaning="test RPS before scaling"),
        Column("rps_after", "RPS after", meaning="test RPS after scaling"),
    ),
    {
        # What is averaged over a task's and method's runs.
        "averaged": ("temperature", "ece_before", "ece_after", "rps_before", "rps_after"),
    },
)

# --------------------------------------------------------------------------------------------
# Robustness: scores against the phantom's true grade (`truth.recorded_vs_true`) and the
# budget-matched comparison (`budget.BudgetMatched.table`)
# --------------------------------------------------------------------------------------------

TRUTH: TableVocabulary = TableVocabulary(
    "recorded against true grade",
    (
        _TASK,
        _METHOD,
        _METRIC,
        _SEEDS,
        Column("mean_recorded", "Recorded", meaning="the metric on the recorded grade"),
        Column("mean_true", "True", meaning="the metric on the noiseless true grade"),
        Column("shift", "Shift", meaning="on the true grade − on the recorded one"),
        Column("shift_vs_nominal", "Shift vs Nominal", meaning="the shift minus Nominal's"),
        PAIRED.column("ci"),
        PAIRED.column("p_corrected"),
    ),
    {
        # The scores, each a number to 4 decimals.
        "scores": ("mean_recorded", "mean_true", "shift"),
    },
)

BUDGET_MATCHED: TableVocabulary = TableVocabulary(
    "budget-matched comparison",
    (
        _TASK,
        _METHOD,
        _METRIC,
        Column("configs", "Configurations", meaning="configurations the method searched"),
        Column("mean_study", "As selected", meaning="the metric as the study selected"),
        Column("mean_matched", "At matched budget", meaning="mean over draws at matched budget"),
        Column("draws", "Range over draws", meaning="the draws' range in one cell"),
    ),
)

#: What a search selects by, as the budget tables name it ("validation AMAE").
SELECTION_SCORE = f"validation {METRIC_LABELS[SELECTION_METRIC]}"


def one_per_rate_header(rates: str) -> str:
    """The coverage-matched table's column for the learning rates ``rates`` ("0.001, 0.01")."""
    return f"One per learning rate ({rates})"


# `budget.coverage_matched_validation`: each method's best of its own search beside its
# expected best among one configuration per learning rate of the baseline's grid, whose
# column (:func:`one_per_rate_header`) names the rates.
COVERAGE_MATCHED: TableVocabulary = TableVocabulary(
    "coverage-matched selection",
    (
        _TASK,
        _METHOD,
        Column("configs", "Its search", meaning="configurations the method searched"),
        Column(
            "own_best",
            f"Best of its search ({SELECTION_SCORE})",
            meaning="the best score of the method's whole search",
        ),
        Column(
            "uncovered", "Seeds lacking a rate", meaning="seeds whose search missed a grid rate"
        ),
    ),
    {"before_matched": ("task", "method", "configs", "own_best"), "after_matched": ("uncovered",)},
)

# The expected best score by configurations tried (`expected_max`), per method and task: the
# budget chart's tooltip.
EXPECTED_BEST: TableVocabulary = TableVocabulary(
    "expected best by configurations tried",
    (
        _METHOD,
        Column("n", "Configurations", meaning="configurations tried"),
        Column(
            "expected",
            f"Expected best {SELECTION_SCORE}",
            meaning="the expected best score of that many configurations drawn",
        ),
        Column("seed_sd", "SD over seeds", meaning="its sd over seeds"),
        _SEEDS,
        COVERAGE_MATCHED.column("configs"),
    ),
    {"tooltip": ("method", "n", "expected", "seed_sd", "n_seeds", "configs")},
)

# --------------------------------------------------------------------------------------------
# The films worth a second look (`second_look`), one row per film
# --------------------------------------------------------------------------------------------

SECOND_LOOK: TableVocabulary = TableVocabulary(
    "films worth a second look",
    (
        Column("rank", "Rank", meaning="1 = the film most worth a second reading"),
        Column("image_id", "Film", meaning="the film"),
        Column("label", "Recorded", meaning="the grade the film's label records"),
        Column("consensus", "Models' grade", meaning="the grade most seeds' models give"),
        Column("seed_grades", "Each seed", meaning="each seed's model's grade"),
        Column("range", "Likely range", meaning="the grades the 90 % range holds"),
        Column("spread", "Seed spread", meaning="how much the seeds' models disagree"),
        Column("far", "≥ 2 grades from label", meaning="the models' grade is 2+ from the label"),
    ),
)

# --------------------------------------------------------------------------------------------
# How many seeds: the power view of a study's pairs (`power.power_table`); one column per
# assumed ρ follows these (`pages.present.power_tables.rho_column`)
# --------------------------------------------------------------------------------------------

POWER: TableVocabulary = TableVocabulary(
    "seeds for power",
    (
        _TASK,
        PAIRED.column("pair"),
        Column("n_seeds", "Seeds run", meaning="seeds both methods ran"),
        Column("sd", "sd (80 % upper bound)", meaning="sd of the differences and its upper bound"),
    ),
)

#: Every table declared here.
TABLES: tuple[TableVocabulary, ...] = (
    KLD_PARTS,
    CALIBRATION,
    TEMPERATURE,
    TRUTH,
    BUDGET_MATCHED,
    COVERAGE_MATCHED,
    EXPECTED_BEST,
    SECOND_LOOK,
    POWER,
)
