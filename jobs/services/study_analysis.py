"""A study's reviewer-grade statistics in one call each: the store reads (`store.analysis`,
`store.runs`) fed to `engine.analysis`. For the pages (cache these) and the command line.

Every function takes a study id and the store path and returns what its engine function
returns; none formats anything.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from engine.analysis import (
    budget,
    calibration,
    compare,
    designs,
    expected_max,
    kld_parts,
    paired,
    power,
    probability_metrics,
    relationship,
    truth,
    variance_components,
)
from engine.analysis.metrics import (
    CALIBRATED_METRICS,
    METRICS,
    SELECTION_COLUMN,
    SELECTION_METRIC,
    lower_is_better,
)
from engine.analysis.results_file import UNSIZED_NOTE as UNSIZED_NOTE
from engine.analysis.results_file import seed_metrics_wide
from engine.analysis.table_columns import PAIRED
from store import analysis as store_analysis
from store import results as store_results
from store import runs as store_runs
from store.db import default_store_path

DEFAULT_BOOTSTRAP = 1000
JOINT_TASK = "KL × CPPD"
StorePath = Path | str | None


class _Ratios(dict):
    """Task -> ``n_test / n_train``; NaN for a task whose split sizes are unknown (imported
    results without them), so every interval that needs the ratio comes out blank."""

    def __missing__(self, task: str) -> float:
        return math.nan


def per_run(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """The six test metrics of each selected run (`engine.analysis.compare.per_run_metrics`);
    for results imported as per-seed metrics, the values the file gave."""
    return counts_and_scores([study_id], path=path)[1]


def counts_and_scores(
    study_ids: Sequence[str],
    *,
    labels: Mapping[str, str] | None = None,
    path: StorePath = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The selected runs' confusion counts of several studies, and each run's test metrics
    (`per_run`'s, the per-seed values of imported results joined). ``labels`` (study id ->
    name) tells apart a method run in more than one of them
    (`engine.analysis.compare.label_methods`), as Compare shows them."""
    counts = store_runs.confusion_counts(list(study_ids), path=path)
    if labels is not None:
        counts = compare.label_methods(counts, labels)
    scores = compare.per_run_metrics(counts)
    imported = seed_metrics_wide(store_results.seed_metric_values(list(study_ids), path=path))
    if imported.empty:
        return counts, scores
    if labels is not None:
        imported = compare.label_methods(imported, labels)
    return counts, imported if scores.empty else pd.concat([scores, imported], ignore_index=True)


#: Why a study has no calibrated metric (set size): what the command line and pages say.
NO_CALIBRATION_NOTE = (
    "it is calibrated on each run's per-film validation predictions, and this study has none "
    "(results imported as per-seed metrics, or per-film results without validation films); "
    "import per-film predictions of the validation split to get it"
)


def has_calibration_films(study_id: str, *, path: StorePath = None) -> bool:
    """Whether any selected run of the study has per-film validation predictions (what a
    calibrated metric such as the conformal set size needs)."""
    return store_analysis.selected_runs_with_films(study_id, "val", path=path) > 0


def calibrated_available(study_id: str, metric: str, *, path: StorePath = None) -> bool:
    """Whether the study has values of the calibrated ``metric``: runs with validation films
    to compute it from, or per-seed values of it an imported results file gave."""
    if has_calibration_films(study_id, path=path):
        return True
    given = store_results.seed_metric_values([study_id], path=path)
    return bool(len(given)) and metric in set(given["metric"])


def calibrated_per_run(
    study_ids: list[str], *, metrics: tuple[str, ...] = CALIBRATED_METRICS, path: StorePath = None
) -> pd.DataFrame:
    """`engine.analysis.probability_metrics.per_run_calibrated_metrics` of the selected runs:
    each run's validation films calibrate, its test films are scored (run columns,
    ``n_cal`` and one column per metric; ``nan`` where a run has no validation films)."""
    val = store_runs.selected_probabilities(study_ids, split="val", path=path)
    test = store_runs.selected_probabilities(study_ids, split="test", path=path)
    return probability_metrics.per_run_calibrated_metrics(val, test, names=metrics)


def with_calibrated(
    scores: pd.DataFrame, study_ids: list[str], metrics: tuple[str, ...], *, path: StorePath = None
) -> pd.DataFrame:
    """``scores`` (per-run metrics with ``run_id``) with the calibrated ``metrics`` among
    ``metrics`` joined by run; unchanged when none is asked for."""
    wanted = tuple(m for m in metrics if m in CALIBRATED_METRICS)
    if not wanted or scores.empty or "run_id" not in scores:
        return scores
    return join_calibrated(scores, calibrated_per_run(study_ids, metrics=wanted, path=path), wanted)


def join_calibrated(
    scores: pd.DataFrame, values: pd.DataFrame, metrics: tuple[str, ...]
) -> pd.DataFrame:
    """``scores`` with the calibrated ``metrics`` of ``values`` (`calibrated_per_run`)
    joined by run; where a run has none, the per-seed value an imported file gave stays."""
    scores = scores.reset_index(drop=True)
    given = scores[[m for m in metrics if m in scores]]
    joined = scores.drop(columns=list(given.columns)).merge(
        values[["run_id", *metrics]], on="run_id", how="left"
    )
    for name in given.columns:
        joined[name] = joined[name].fillna(given[name])
    return joined


def ratios(study_id: str, *, path: StorePath = None) -> dict[str, float]:
    """``n_test / n_train`` per task from the study's own splits (or the sizes its imported
    file gave); NaN for a task without them."""
    return _Ratios(paired.test_train_ratios(store_analysis.split_sizes(study_id, path=path)))


def content_key(study_id: str, *, path: StorePath = None) -> str:
    """A key under which the study's analyses can be cached across stores: the digest of its
    runs and predictions (`store.analysis.study_content_digest`) and its split sizes (the
    corrected t's ratios). The reference study imported into a second store gets the same
    key, so its bootstrap is not run again. A study with no stored predictions (per-seed
    results imported from another tool) keeps its store in the key: its numbers live in
    tables the digest does not read."""
    digest = store_analysis.study_content_digest(study_id, path=path)
    sizes = store_analysis.split_sizes(study_id, path=path).to_csv(index=False)
    text = f"{study_id}\n{digest}\n{sizes}"
    if digest[2] == 0:
        text += f"\n{Path(path if path is not None else default_store_path()).resolve()}"
    return hashlib.sha256(text.encode()).hexdigest()


def unsized_tasks(study_id: str, *, path: StorePath = None) -> list[str]:
    """Tasks of a study of imported results whose seeds have no split sizes
    (`UNSIZED_NOTE`); empty for any other study (one trained here counts its splits)."""
    if store_results.imported_results_source(study_id, path=path) is None:
        return []
    tasks = compare.task_order(per_run(study_id, path=path)["task"].unique())
    sized = set(store_analysis.split_sizes(study_id, path=path)["task"])
    return [t for t in tasks if t not in sized]


def paired_table(
    study_id: str,
    *,
    metrics: tuple[str, ...] = METRICS,
    n_boot: int = DEFAULT_BOOTSTRAP,
    ropes: Mapping[str, float] | None = None,
    path: StorePath = None,
) -> pd.DataFrame:
    """`engine.analysis.paired.paired_table` of the selected runs (``ropes``: metric ->
    region of practical equivalence, default `paired.DEFAULT_ROPE`), with the hierarchical
    bootstrap interval (``boot_ci_low``, ``boot_ci_high``, ``within_seed_sd``) when
    ``n_boot`` > 0; empty (with the paired columns) when no run is selected yet.

    A calibrated metric (`CALIBRATED_METRICS`: the set size) is computed from each run's
    validation and test films (`with_calibrated`); its rows have no film bootstrap (a
    resample would have to recalibrate), so their ``boot_*`` columns are blank."""
    scores = with_calibrated(per_run(study_id, path=path), [study_id], metrics, path=path)
    if scores.empty:
        return pd.DataFrame(columns=[*paired.PAIRED_COLUMNS, *paired.EXTRA_COLUMNS])
    table = paired.paired_table(scores, ratios(study_id, path=path), metrics=metrics, ropes=ropes)
    resampled = tuple(m for m in metrics if m not in CALIBRATED_METRICS)
    wanted = n_boot > 0 and bool(resampled)
    films = store_analysis.selected_test_films([study_id], path=path) if wanted else None
    if n_boot > 0 and (films is None or films.empty):
        # Per-seed metrics imported (no films to resample), or calibrated metrics only.
        table = table.assign(boot_ci_low=math.nan, boot_ci_high=math.nan, within_seed_sd=math.nan)
    elif films is not None:
        boot = paired.hierarchical_bootstrap(films, metrics=resampled, n_boot=n_boot)
        keys = list(PAIRED.view("compared"))
        extra = list(PAIRED.view("bootstrap_computed"))
        table = table.merge(boot[[*keys, *extra]], on=keys, how="left")
    return table


def is_factorial(study_id: str, *, path: StorePath = None) -> bool:
    """Whether the study's runs cross split seeds with init seeds (a factorial design)."""
    return variance_components.is_factorial(store_runs.seed_factors(study_id, path=path))


def components_table(
    study_id: str, *, metrics: tuple[str, ...] = METRICS, path: StorePath = None
) -> pd.DataFrame:
    """`engine.analysis.variance_components.components_table` of the selected runs: each
    pair's split, init and residual variance and the intervals they support; empty (with its
    columns) for a study whose seeds are not a factorial design."""
    factors = store_runs.seed_factors(study_id, path=path)
    if not variance_components.is_factorial(factors):
        return pd.DataFrame(columns=list(variance_components.COMPONENT_COLUMNS))
    scores = with_calibrated(per_run(study_id, path=path), [study_id], metrics, path=path)
    cells = variance_components.cell_frame(scores, factors)
    return variance_components.components_table(cells, ratios(study_id, path=path), metrics=metrics)


def probability_paired_table(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.paired.paired_table` of the probability metrics (RPS, ECE, ...:
    `engine.analysis.probability_metrics.PROBABILITY_METRICS`) of the selected runs."""
    frame = store_runs.selected_probabilities([study_id], path=path)
    if frame.empty:  # per-seed values of probability metrics, when an imported file gave any
        scores = per_run(study_id, path=path)
        given = [m for m in probability_metrics.PROBABILITY_METRICS if m in scores]
        if scores.empty or not given:
            return pd.DataFrame(columns=[*paired.PAIRED_COLUMNS, *paired.EXTRA_COLUMNS])
        return paired.paired_table(scores, ratios(study_id, path=path), metrics=given)
    scores = probability_metrics.per_run_probability_metrics(frame)
    return paired.paired_table(
        scores, ratios(study_id, path=path), metrics=probability_metrics.PROBABILITY_METRICS
    )


def kld_paired_table(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.paired.paired_table` of the KL × CPPD divergence per seed (task
    ``"KL × CPPD"``, metric ``"kld"``); the joint films are KL-graded films, so the KL
    split's ``n_test / n_train`` applies. Empty when no seed has both tasks."""
    joint = store_runs.joint_predictions([study_id], path=path)
    if joint.empty:
        return pd.DataFrame(columns=[*paired.PAIRED_COLUMNS, *paired.EXTRA_COLUMNS])
    _, results = relationship.relationship_by_seed(joint)
    scores = relationship.relationship_scores(results, "kld").rename(columns={"value": "kld"})
    scores = scores.assign(study_id=study_id, task=JOINT_TASK)
    return paired.paired_table(
        scores, {JOINT_TASK: ratios(study_id, path=path)["KL"]}, metrics=("kld",)
    )


def mean_intervals(
    study_id: str, *, metrics: tuple[str, ...] = METRICS, path: StorePath = None
) -> pd.DataFrame:
    """Table 4's means with their corrected interval (`paired.mean_intervals`) of
    ``metrics`` (a calibrated one joined by `with_calibrated`); a metric no seed has a value
    of (one an imported per-seed file left out, a set size without validation films) has no
    row."""
    scores = with_calibrated(per_run(study_id, path=path), [study_id], metrics, path=path)
    table = paired.mean_intervals(scores, ratios(study_id, path=path), metrics=metrics)
    return table[table["n_seeds"] > 0].reset_index(drop=True) if len(table) else table


def blocked_anova(
    study_id: str, metric: str = paired.PRIMARY_METRIC, *, path: StorePath = None
) -> dict:
    """``{"blocked": ..., "ols": ...}``: the seed-blocked ANOVA per task (Greenhouse–Geisser
    corrected) and the paper's OLS ANOVA ("as in the paper") of one metric, each an
    `stats.TestResult` with partial η²."""
    scores = compare.score_frame(per_run(study_id, path=path), metric)
    return {
        "blocked": designs.seed_blocked_anova(scores),
        "ols": designs.ols_anova_with_effect_sizes(scores[["method", "task", "seed", "value"]]),
    }


def kld_decomposition(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.kld_parts.summarise` of the study's joint predictions (empty when no
    seed has both tasks' selected runs)."""
    joint = store_runs.joint_predictions([study_id], path=path)
    if joint.empty:
        return pd.DataFrame()
    _, results = relationship.relationship_by_seed(joint)
    return kld_parts.summarise(kld_parts.decompose(results))


def against_truth(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.truth.recorded_vs_true` (empty for real data without true grades)."""
    recorded = per_run(study_id, path=path)
    true = compare.per_run_metrics(store_analysis.true_grade_counts([study_id], path=path))
    return truth.recorded_vs_true(recorded, true, ratios(study_id, path=path))


def calibration_uncertainty(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.calibration.ece_uncertainty` of the selected runs' test films."""
    return calibration.ece_uncertainty(store_runs.selected_probabilities([study_id], path=path))


def temperature_scaled(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.calibration.temperature_scaling`: T fitted on each selected run's
    validation films, test ECE and RPS before and after."""
    val = store_runs.selected_probabilities([study_id], split="val", path=path)
    test = store_runs.selected_probabilities([study_id], split="test", path=path)
    return calibration.temperature_scaling(val, test)


def seeds_needed(
    study_id: str,
    *,
    metric: str = paired.PRIMARY_METRIC,
    effect: float = power.DEFAULT_EFFECT,
    design_rho: float | None = None,
    path: StorePath = None,
) -> pd.DataFrame:
    """`engine.analysis.power.power_table` of one metric's pairs: seeds to detect the
    smallest effect of interest ``effect`` over `power.PLAN_RHOS` (and ``design_rho``)."""
    table = paired_table(study_id, metrics=(metric,), n_boot=0, path=path)
    return power.power_table(table, effect=effect, design_rho=design_rho)


def budget_matched(
    study_id: str,
    *,
    n_draws: int = budget.N_DRAWS,
    match: str = budget.COVERAGE,
    path: StorePath = None,
) -> budget.BudgetMatched:
    """`engine.analysis.budget.budget_matched` of every run of the study (by default each
    method re-selected among one configuration per learning rate of nominal's grid).

    Raises:
        engine.analysis.budget.BudgetUnavailable: some runs lack test predictions (a study
            imported from a bundle without them); its message says what to do.
    """
    runs = store_runs.list_runs([study_id], path=path)
    runs = runs[runs[SELECTION_COLUMN].notna()]  # runs that were scored in a search
    lacking = store_analysis.runs_lacking_test_predictions(study_id, path=path)
    budget.check_test_scores(study_id, lacking, len(runs))
    counts = store_analysis.all_run_test_counts(study_id, path=path)
    scores = compare.per_run_metrics(counts).merge(
        runs[["run_id", "selected", "config"]], on="run_id"
    )
    return budget.budget_matched(scores, ratios(study_id, path=path), n_draws=n_draws, match=match)


def searched_runs(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """Every run of the study with its validation selection score (`SELECTION_COLUMN`;
    NaN for a run never scored on validation films, e.g. results imported from another
    tool), its configuration and whether it was selected."""
    return store_runs.list_runs([study_id], path=path)


def expected_best_validation(
    study_id: str, *, replace: bool = False, path: StorePath = None
) -> pd.DataFrame:
    """`engine.analysis.expected_max.expected_best_table` of the runs' validation selection
    metric: each method's expected best against the configurations tried."""
    return expected_max.expected_best_table(
        searched_runs(study_id, path=path),
        SELECTION_COLUMN,
        lower_is_better=lower_is_better(SELECTION_METRIC),
        replace=replace,
    )


def coverage_matched_validation(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.budget.coverage_matched_validation` of the study's runs.

    Raises:
        engine.analysis.budget.BudgetUnavailable: no nominal runs with a learning rate.
    """
    return budget.coverage_matched_validation(searched_runs(study_id, path=path))
