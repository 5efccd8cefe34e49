"""How the reviewer-grade statistics of issue 21 read on the KL × CPPD page and on Compare's
Probabilities and Robustness tabs: the KLD's chain-rule parts, paired tables with the
corrected test beside the Wilcoxon, ECE with its interval and floor, temperature scaling,
scores against the phantom's true grade and the budget-matched comparison.

The numbers come from ``engine.analysis`` (``kld_parts``, ``paired``, ``calibration``,
``truth``, ``budget``); this module only writes them as tables and sentences. No streamlit,
so every format is unit-tested (tests/app/test_inference_tables.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis import kld_parts, paired
from engine.analysis.compare import PAIR_ORDER_RULE, task_order
from engine.analysis.inference_columns import (
    BUDGET_MATCHED,
    CALIBRATION,
    KLD_PARTS,
    TEMPERATURE,
    TRUTH,
)
from engine.analysis.metrics import ECE, LOWER_IS_BETTER, METRIC_LABELS
from engine.analysis.table_columns import PAIRED
from engine.methods import method_sort_key
from pages.present import reviewer_tables as rt
from pages.present.tables import headed_frame, is_missing_value, method_title, metric_header

#: The paired tables' headers are `reviewer_tables.PAIRED_HEADERS`, one mapping for every page.
CI_HEADER = rt.PAIRED_HEADERS["ci"]
P_CORRECTED_HEADER = rt.PAIRED_HEADERS["p_corrected"]


def p_text(value: Any) -> str:
    """A p-value as ``"< 0.001"`` or 3 significant digits; blank when missing."""
    if is_missing_value(value):
        return ""
    return "< 0.001" if float(value) < 0.001 else f"{float(value):.3g}"


def interval_text(low: Any, high: Any, digits: int = 3) -> str:
    """``"[-0.029, 0.159]"``; blank when either end is missing."""
    if is_missing_value(low) or is_missing_value(high):
        return ""
    return f"[{float(low):.{digits}f}, {float(high):.{digits}f}]"


def _share(value: float) -> str:
    return f"{100 * value:.1f} %"


# --------------------------------------------------------------------------------------------
# KL × CPPD: the KLD by the chain rule
# --------------------------------------------------------------------------------------------

KLD_PARTS_NOTE = (
    "D(true ‖ predicted) = KL-marginal part + CPPD-given-KL part, exactly (chain rule). The "
    "KL-marginal part only says the KL grades are predicted in the wrong proportions; the "
    "CPPD-given-KL part is where the relationship enters, and the mutual information (MI) of "
    "a table measures the dependence of CPPD on KL itself (0 = independent)."
)
#: The two parts, key -> label, in the stacked bar's order.
PART_LABELS: dict[str, str] = {k: KLD_PARTS.column(k).header for k in KLD_PARTS.view("parts")}


def kld_parts_frame(parts: pd.DataFrame) -> pd.DataFrame:
    """`engine.analysis.kld_parts.summarise` as a table to read (nats, 4 decimals)."""
    cells = {k: parts[k].round(4) for k in KLD_PARTS.view("nats")}
    return headed_frame(
        KLD_PARTS,
        {
            **cells,
            "method": parts["method"].map(method_title),
            "n_seeds": parts["n_seeds"].astype(int),
            "marginal_share": [_share(v) for v in parts["marginal_share"]],
        },
    )


def kld_parts_long(parts: pd.DataFrame) -> pd.DataFrame:
    """The two parts per method in long form for the stacked bar chart: ``method``,
    ``part`` (its label), ``nats``, ``order`` (the stacking order)."""
    rows = [
        {"method": r["method"], "part": PART_LABELS[p], "nats": float(r[p]), "order": i}
        for r in parts.to_dict("records")
        for i, p in enumerate(PART_LABELS)
    ]
    return pd.DataFrame(rows, columns=["method", "part", "nats", "order"])


def kl_marginal_gap(mean_table: np.ndarray, mean_truth: np.ndarray) -> tuple[int, float, float]:
    """The KL grade that adds most to the KL-marginal part ``Σ p_k log(p_k / q_k)``: the grade
    the method predicts too rarely where it matters most.

    Returns:
        ``(grade, predicted share, true share)`` (shares of the films, 0–1).
    """
    predicted = np.asarray(mean_table, dtype=np.float64).sum(axis=1)
    true = np.asarray(mean_truth, dtype=np.float64).sum(axis=1)
    predicted, true = predicted / predicted.sum(), true / true.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(true > 0, true * np.log(true / np.maximum(predicted, 1e-12)), -np.inf)
    grade = int(np.argmax(terms))
    return grade, float(predicted[grade]), float(true[grade])


def kld_part_reading(part: Mapping[str, Any], mean_table: Any, mean_truth: Any) -> str:
    """Which part drives one method's KLD, in plain words.

    Args:
        part: a row of `kld_parts.summarise` (``method``, ``kld``, ``kl_marginal``,
            ``cppd_given_kl``, ``marginal_share``, ``mi_true``, ``mi_pred``).
        mean_table, mean_truth: the method's mean predicted and true tables
            (`relationship.summarise_relationship`), for the grade it mispredicts most.
    """
    name = method_title(str(part["method"]))
    kld, marginal = float(part["kld"]), float(part["kl_marginal"])
    grade, predicted, true = kl_marginal_gap(mean_table, mean_truth)
    gap = f"it predicts KL {grade} for {_share(predicted)} of films against {_share(true)}"
    if marginal >= float(part["cppd_given_kl"]):
        head = (
            f"{name}'s KLD is mostly its KL marginal ({marginal:.3f} of {kld:.3f} nats, "
            f"{_share(float(part['marginal_share']))}): {gap}"
        )
    else:
        head = (
            f"{name}'s KLD is mostly the CPPD-given-KL part ({kld - marginal:.3f} of {kld:.3f} "
            f"nats): given the KL grade, its CPPD grades are spread unlike the truth's; its KL "
            f"marginal adds {marginal:.3f} ({gap})"
        )
    mi_pred, mi_true = float(part["mi_pred"]), float(part["mi_true"])
    return (
        f"{head}. Its predicted tables tie CPPD to KL {_tie_strength(part)} the truth does "
        f"(MI {mi_pred:.3f} vs {mi_true:.3f} nats)."
    )


def _tie_strength(part: Mapping[str, Any]) -> str:
    """How strongly a method's predicted tables tie CPPD to KL against the truth, in words
    (`kld_parts.dependence_vs_truth`'s rule)."""
    return {
        "as": "about as strongly as",
        "more": "more strongly than",
        "less": "less strongly than",
    }[kld_parts.dependence_vs_truth(float(part["mi_pred"]), float(part["mi_true"]))]


def kld_parts_grouped(parts: pd.DataFrame) -> list[str]:
    """The chain-rule readings of many methods in a few sentences: the methods whose KLD is
    mostly their KL marginal, those whose KLD is mostly the CPPD-given-KL part, and how
    strongly each group's predicted tables tie CPPD to KL (the numbers are the table's)."""
    rows = parts.to_dict("records")
    mostly_marginal = [r for r in rows if float(r["kl_marginal"]) >= float(r["cppd_given_kl"])]
    groups = (
        (
            mostly_marginal,
            "its KL marginal (they predict the KL grades in other shares than they occur)",
        ),
        (
            [r for r in rows if r not in mostly_marginal],
            "the CPPD-given-KL part (given the "
            "KL grade, their CPPD grades are spread unlike the truth's)",
        ),
    )
    out = [
        f"{len(members)} of {len(rows)} methods have a KLD that is mostly {what}: "
        f"{_named(members)}."
        for members, what in groups
        if members
    ]
    by_tie: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_tie.setdefault(_tie_strength(r), []).append(r)
    ties = "; ".join(f"{how} the truth does: {_named(members)}" for how, members in by_tie.items())
    return [*out, f"The predicted tables tie CPPD to KL {ties}."]


def _named(rows: Sequence[Mapping[str, Any]]) -> str:
    """The methods of ``rows`` by their titles, comma-separated."""
    return ", ".join(method_title(str(r["method"])) for r in rows)


# --------------------------------------------------------------------------------------------
# Paired tables: the corrected test beside the Wilcoxon
# --------------------------------------------------------------------------------------------

PAIRED_NOTE = (
    f"Difference = A − B over the seeds both have: {PAIR_ORDER_RULE}. The corrected resampled "
    "t-test (Nadeau & Bengio 2003) counts that every seed resamples the same films by assuming "
    "a between-seed correlation ρ = n_test/n, which one dataset cannot measure: its p and "
    "interval answer “would it hold for new patients?” at that ρ, and its p is also shown at ρ "
    "= 0, 0.09, 0.17 with the break-even ρ where it crosses 0.05. The exact Wilcoxon (Holm "
    "within the metric) treats the seeds as independent and answers “is A better on most "
    f"seeds?” — consistent over seeds, a weaker claim. {paired.VERDICT_RULE} Effect size dz = "
    "mean / sd of the differences; rank-biserial r = the matched-pairs rank-biserial "
    "correlation."
)


NO_SPLITS_REASON = (
    "The corrected test needs this study's split sizes (films held out for testing over films "
    "used to fit and select), and the store records no splits for {task}."
)


def no_splits_reason(task: str) -> str:
    """Why the corrected test is not shown for ``task`` (its study recorded no splits)."""
    return NO_SPLITS_REASON.format(task=task)


def paired_frame(
    table: pd.DataFrame, *, metric_label: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """`engine.analysis.paired.paired_table` as a table to read, one reading per row.

    Args:
        table: the paired table.
        metric_label: metric → name shown (default: `tables.metric_header`).
    """
    labels = dict(metric_label or {})
    headers = rt.paired_headers(table)
    rows = []
    for r in table.to_dict("records"):
        tested = not is_missing_value(r["p_corrected"])
        unestimable = str(r.get("verdict", "")).startswith(paired.NOT_ESTIMABLE)
        # Each cell's text by key; which are shown, in what order (verdict first), is the
        # engine's `table_columns.PAIRED` view "relationship".
        cells = {
            "task": r["task"],
            "metric": labels.get(r["metric"]) or metric_header(str(r["metric"])),
            "method_a": method_title(str(r["method_a"])),
            "method_b": method_title(str(r["method_b"])),
            "n_seeds": int(r["n_seeds"]),
            "mean_diff": f"{float(r['mean_diff']):.4f}",
            "ci": interval_text(r["ci_low"], r["ci_high"], 4),
            "verdict": rt.verdict_text(r.get("verdict")) if tested or unestimable else "",
            "p_corrected_holm": p_text(r.get("p_corrected_holm")),
            "p_corrected": p_text(r["p_corrected"]),
            "p_strip": rt.p_strip_text(r) if tested else "",
            "r_break_even": rt.break_even_text(r) if tested else "",
            "p_wilcoxon": p_text(r["p_wilcoxon"]),
            "p_wilcoxon_holm": p_text(r["p_wilcoxon_holm"]),
            "d_z": effect_text(r["d_z"]),
            "rank_biserial": effect_text(r["rank_biserial"]),
            "reading": _paired_reading(r),
        }
        rows.append({headers[k]: cells[k] for k in PAIRED.view("relationship")})
    return pd.DataFrame(rows)


def effect_text(value: Any) -> str:
    """An effect size to two decimals; blank when missing."""
    return "" if is_missing_value(value) else f"{float(value):.2f}"


def _paired_reading(row: Mapping[str, Any]) -> str:
    if str(row.get("verdict", "")).startswith(paired.NOT_ESTIMABLE):
        return paired.reading(row)  # says why: too few seeds, or no spread
    if any(is_missing_value(row[c]) for c in PAIRED.view("reading_needs")):
        return "Too few seeds to test."
    return paired.reading(row)


# --------------------------------------------------------------------------------------------
# Calibration: ECE with its interval and floor, temperature scaling
# --------------------------------------------------------------------------------------------

POOLING_NOTE = (
    "The reliability diagram below pools the test films of every seed of a method; the ECE in "
    "the tables is computed per seed and then averaged over seeds, so the two need not agree."
)


def calibration_frame(unc: pd.DataFrame) -> pd.DataFrame:
    """`engine.analysis.calibration.ece_uncertainty` as a table to read (tasks and methods in
    the paper's order)."""
    unc = _in_paper_order(unc)
    return headed_frame(
        CALIBRATION,
        {
            **{k: unc[k].round(4) for k in CALIBRATION.view("scores")},
            **_task_method(unc),
            "n_seeds": unc["n_seeds"].astype(int),
            "ci": [
                interval_text(lo, hi, 4)
                for lo, hi in zip(unc["ci_low"], unc["ci_high"], strict=True)
            ],
        },
    )


def _in_paper_order(table: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered by task (CPPD first, as the paper) then method (the paper's order)."""
    tasks = {t: i for i, t in enumerate(task_order(table["task"].unique()))}
    keys = [
        (tasks[t], method_sort_key(m)) for t, m in zip(table["task"], table["method"], strict=True)
    ]
    return table.iloc[sorted(range(len(table)), key=keys.__getitem__)].reset_index(drop=True)


def calibration_reading(unc: pd.DataFrame) -> str:
    """What the floor means for these films: the range of the floor and which methods'
    ECE stays within the floor's 95th percentile."""
    if unc.empty:
        return ""
    low, high = float(unc["floor"].min()), float(unc["floor"].max())
    spread = float((unc["floor_high"] - unc["floor"]).max())
    within = unc[unc[ECE] <= unc["floor_high"]]
    text = (
        f"A perfectly calibrated model would still score an ECE of {low:.3f}–{high:.3f} on these "
        "films (the floor): differences of ECE smaller than the floor's own spread "
        f"(up to {spread:.3f} above its mean) are noise."
    )
    if not within.empty:
        names = ", ".join(
            f"{method_title(m)} ({t}: ECE {e:.3f}, 95 % CI {interval_text(lo, hi)})"
            for t, m, e, lo, hi in zip(
                within["task"],
                within["method"],
                within[ECE],
                within["ci_low"],
                within["ci_high"],
                strict=True,
            )
        )
        text += (
            " Within the floor's 95th percentile, so no evidence of miscalibration on these "
            f"films (which is not evidence of calibration; the interval says how far it may "
            f"be): {names}."
        )
    return text


def temperature_frame(scaled: pd.DataFrame) -> pd.DataFrame:
    """`engine.analysis.calibration.temperature_scaling`'s runs averaged over seeds per task
    and method: mean temperature, test ECE and RPS before and after."""
    columns = list(TEMPERATURE.view("averaged"))
    grouped = scaled.groupby(["task", "method"], sort=False)
    means = grouped[columns].mean().reset_index()
    means["n"] = grouped.size().to_numpy()
    order = sorted(
        range(len(means)), key=lambda i: (means["task"][i], method_sort_key(means["method"][i]))
    )
    means = means.iloc[order]
    return headed_frame(
        TEMPERATURE,
        {
            **{k: means[k].round(4).to_numpy() for k in columns},
            "temperature": means["temperature"].round(3).to_numpy(),
            "task": means["task"].to_numpy(),
            "method": means["method"].map(method_title).to_numpy(),
            "n_seeds": means["n"].astype(int).to_numpy(),
        },
    )


TEMPERATURE_NOTE = (
    "One temperature T per run, fitted on that run's own validation probabilities (negative "
    "log-likelihood, softmax(log p / T)), then applied to its test probabilities; T > 1 "
    "softens over-confident probabilities. The predicted grade (argmax) does not change, so "
    "AMAE, QWK and the other grade metrics stay as they are. Means over seeds."
)


# --------------------------------------------------------------------------------------------
# Robustness: truth and noise on the phantom, budget matching
# --------------------------------------------------------------------------------------------

NO_TRUTH_REASON = (
    "This study's films have no true grade (real, imported films record only the annotated "
    "grade), so nothing can be scored against the truth."
)
TRUTH_NOTE = (
    "The phantom records each film's grade with annotation noise (adjacent-grade errors) and "
    "keeps the noiseless true grade. Shift = metric on the true grade − on the recorded one; "
    "“vs Nominal” is that shift minus Nominal's, per seed, with the corrected test."
)


def _task_method(table: pd.DataFrame) -> dict[str, pd.Series]:
    """The task and the method of each row, as a person reads them, by key."""
    return {"task": table["task"], "method": table["method"].map(method_title)}


def _task_method_metric(table: pd.DataFrame) -> dict[str, pd.Series]:
    """The first three columns of a per-(task, method, metric) table, as a person reads
    them, by key."""
    return {**_task_method(table), "metric": table["metric"].map(metric_header)}


def truth_frame(table: pd.DataFrame) -> pd.DataFrame:
    """`engine.analysis.truth.recorded_vs_true` as a table to read."""
    table = _in_paper_order(table)
    return headed_frame(
        TRUTH,
        {
            **_task_method_metric(table),
            **{k: table[k].round(4) for k in TRUTH.view("scores")},
            "n_seeds": table["n_seeds"].astype(int),
            "shift_vs_nominal": [
                "" if is_missing_value(v) else f"{float(v):.4f}" for v in table["shift_vs_nominal"]
            ],
            "ci": [
                interval_text(lo, hi, 4)
                for lo, hi in zip(table["ci_low"], table["ci_high"], strict=True)
            ],
            "p_corrected": [p_text(v) for v in table["p_corrected"]],
        },
    )


#: Past this many soft methods of one task with no evidence, they share one sentence (with
#: fourteen methods the page read 26 near-identical sentences); the table has their numbers.
GROUPED_NO_EVIDENCE = 3


def truth_readings(
    table: pd.DataFrame, metric: str = paired.PRIMARY_METRIC, alpha: float = 0.05
) -> list[str]:
    """Per task and soft method, in plain words: does it gain more than nominal when scored
    against the truth instead of the noisy record? Past `GROUPED_NO_EVIDENCE` methods of a
    task without evidence, one sentence names them all."""
    rows = table[(table["metric"] == metric) & table["shift_vs_nominal"].notna()]
    lower = metric in LOWER_IS_BETTER
    label = METRIC_LABELS[metric]
    lines = []
    for task, part in rows.groupby("task", sort=False):
        found, none = [], []
        for r in part.to_dict("records"):
            diff = float(r["shift_vs_nominal"])
            gains = diff < 0 if lower else diff > 0
            name = method_title(str(r["method"]))
            ci = interval_text(r["ci_low"], r["ci_high"], 3)
            evidence = (
                f"difference of shifts {diff:+.3f} {label}, 95 % CI {ci}, "
                f"corrected p {p_text(r['p_corrected'])}"
            )
            if float(r["p_corrected"]) < alpha:
                verdict = "gains more" if gains else "gains less"
                found.append(
                    f"{task}: {name} {verdict} than Nominal against the truth than against the "
                    f"noisy labels ({evidence})."
                )
            else:
                none.append(
                    (
                        name,
                        f"{task}: no evidence that {name} gains more or less than Nominal "
                        f"against the truth ({evidence}). That is not evidence of no "
                        f"difference: the data allow a difference of shifts anywhere in {ci}.",
                    )
                )
        lines += found
        if len(none) > GROUPED_NO_EVIDENCE:
            names = ", ".join(name for name, _ in none)
            lines.append(
                f"{task}: no evidence that any of {names} gains more or less than Nominal "
                f"against the truth (corrected p ≥ {alpha:g} for each; the table gives each "
                "difference of shifts and its 95 % CI). That is not evidence of no "
                "difference: the intervals say how large a difference the data allow."
            )
        else:
            lines += [line for _, line in none]
    return lines


def search_budget_sentence(configs: Mapping[str, int]) -> str:
    """The methods' unequal search budgets in one sentence.

    Args:
        configs: method → configurations searched per task and seed.
    """
    if not configs:
        return ""
    counts = sorted(configs.items(), key=lambda item: method_sort_key(item[0]))
    parts = ", ".join(f"{method_title(m)} {n}" for m, n in counts)
    return (
        f"Each method kept the best of its own search by validation AMAE ({parts} "
        "configurations per task and seed); the best of more candidates wins more often "
        "whatever the loss, so below the methods are compared at matched budgets: by the "
        "expected best against the configurations tried, and re-selected among one "
        "configuration per learning rate of Nominal's grid."
    )


def budget_unavailable_sentence(n_lacking: int, n_runs: int) -> str:
    """Why budget matching cannot run on a study without every run's test predictions."""
    return (
        f"Budget matching needs the test predictions of every run, and this study holds them "
        f"for {n_runs - n_lacking} of its {n_runs} runs (a study imported from a bundle keeps "
        "only its selected runs'): run the study in this store, or, where it ran, export it "
        "with every run's test predictions (`softgrade export STUDY_ID --all-test-predictions "
        "-o study.zip`) and import that bundle here (`softgrade import-study study.zip`)."
    )


def budget_table_frame(table: pd.DataFrame) -> pd.DataFrame:
    """`BudgetMatched.table` as a table to read: the study's mean beside the matched one."""
    table = _in_paper_order(table)
    return headed_frame(
        BUDGET_MATCHED,
        {
            **_task_method_metric(table),
            "configs": table["configs"].astype(int),
            "mean_study": table["mean_study"].round(4),
            "mean_matched": table["mean_matched"].round(4),
            "draws": [
                interval_text(lo, hi, 4)
                for lo, hi in zip(table["draw_low"], table["draw_high"], strict=True)
            ],
        },
    )


def budget_draws_sentence(
    draws: pd.DataFrame, budget: int, alpha: float = 0.05, *, grid: Sequence[float] = ()
) -> str:
    """How often the primary endpoint (AMAE, soft vs nominal, Holm over 8) came out
    significant over the draws at matched budget (``grid``: the learning rates matched by
    coverage, `engine.analysis.budget.COVERAGE`).

    The share describes how much the verdict depends on which configurations were drawn; it
    is not a test: every draw re-selects among the same seeds' runs, so the draws are not
    independent samples and the share is no p-value or power (issue 29, item 6)."""
    if draws.empty:
        return ""
    n_draws = int(draws["draw"].nunique())
    significant = draws["p_corrected_holm"] < alpha
    lead = draws["mean_diff"] < 0
    share = float(significant.mean()) if len(draws) else math.nan
    each = (
        f"one configuration per learning rate of Nominal's grid ({len(grid)} per method)"
        if grid
        else f"{budget} configuration{'s' * (budget != 1)} per method"
    )
    return (
        f"Over {n_draws} draws of {each}, a "
        f"soft method's AMAE was below Nominal's in {_share(float(lead.mean()))} of the "
        "comparisons and significantly so (corrected test, Holm over the primary family) in "
        f"{_share(share)}. {DRAWS_NOT_A_TEST}"
    )


#: Said after the share of significant draws: what it describes and why it is no inference.
DRAWS_NOT_A_TEST = (
    "This share describes how much the verdict depends on which configurations were drawn; "
    "it is not a test: every draw reuses the same seeds and runs, so the draws are not "
    "independent samples."
)
