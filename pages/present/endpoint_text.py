"""The primary endpoint in words: the result clause and the sentence with its numbers.

The Compare page's Statistics tab and the study report both say it, so it lives below both
(the tab once imported it from the report's comparisons section, climbing up into the
report to reach it).
"""

from __future__ import annotations

import pandas as pd

from engine.analysis.metrics import LOWER_IS_BETTER, METRIC_LABELS
from engine.analysis.paired import ALPHA, PRIMARY_METRIC
from pages.present import tables
from pages.present.inference_tables import interval_text, p_text


def count_of(k: int, n: int) -> str:
    """``"none of the 8"``, ``"all 8"``, ``"3 of the 8"``."""
    if k == 0:
        return f"none of the {n}"
    return f"all {n}" if k == n else f"{k} of the {n}"


def endpoint_result(endpoint: pd.DataFrame) -> str:
    """The primary endpoint's result in one clause: how many comparisons are significant
    after Holm, e.g. "none of the 8 primary comparisons is significant after Holm's
    correction (smallest Holm-adjusted p = 1)"."""
    n, k = len(endpoint), int(endpoint["significant"].sum())
    if endpoint["p_corrected_holm"].isna().all():  # imported results without split sizes
        return (
            f"the {n} primary comparison{'s' * (n != 1)} cannot be tested: the corrected "
            "resampled t-test needs the split sizes (n_train, n_test) these results lack"
        )
    verb = "is" if k in (0, 1) else "are"
    smallest = p_text(endpoint["p_corrected_holm"].min())
    return (
        f"{count_of(k, n)} primary comparison{'s' * (n != 1)} {verb} significant after "
        f"Holm's correction (corrected resampled t-test, α = {ALPHA:g}; smallest "
        f"Holm-adjusted p = {smallest})"
    )


def endpoint_sentence(endpoint: pd.DataFrame) -> str:
    """The primary endpoint's result in plain words, with the numbers."""
    if endpoint.empty:
        return "The primary endpoint needs selected runs of Nominal and a soft method."
    metric = METRIC_LABELS[PRIMARY_METRIC]
    lower = PRIMARY_METRIC in LOWER_IS_BETTER
    text = f"Result: {endpoint_result(endpoint)}."
    significant = endpoint[endpoint["significant"]]
    if len(significant):
        named = "; ".join(
            f"{r.task} {tables.method_title(r.method)} {r.mean_diff:+.3f} "
            f"{interval_text(r.ci_low, r.ci_high)}, Holm p = {p_text(r.p_corrected_holm)}"
            for r in significant.itertuples()
        )
        text += f" Significant: {named}."
    n = len(endpoint)
    better = endpoint["mean_diff"] < 0 if lower else endpoint["mean_diff"] > 0
    zero = int(((endpoint["ci_low"] <= 0) & (endpoint["ci_high"] >= 0)).sum())
    word = "lower" if lower else "higher"
    low, high = endpoint["mean_diff"].abs().min(), endpoint["mean_diff"].abs().max()
    text += (
        f" In {count_of(int(better.sum()), n)} comparisons the soft method's mean {metric} is "
        f"{word} than Nominal's (by {low:.3f} to {high:.3f} over the comparisons)"
    )
    if endpoint["ci_low"].isna().all():  # no split sizes: no corrected interval
        return text + "; the Wilcoxon below says how consistently, over seeds (exploratory)."
    text += f"; {count_of(zero, n)} corrected 95 % intervals include 0."
    if significant.empty:
        text += (
            f" These seeds therefore do not show, at the corrected test's assumed ρ, that any "
            f"soft label changes {metric} (each row's verdict says whether the difference is "
            "inconclusive or within the ROPE); a difference that is consistent over seeds "
            "(Wilcoxon, below) is a weaker, exploratory claim."
        )
    return text
