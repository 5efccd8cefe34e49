"""The report's folds for many methods, on small hand-made frames: grouped readings past
eight rows, merged detail columns, tasks side by side, grade sets one row per method, the
residuals as one small-multiple figure and the KLD's parts in a few sentences."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.analysis import paired
from pages.present import charts, inference_tables, sets_tables
from pages.present.report import comparisons
from pages.present.report.common import MANY_ROWS, tasks_side_by_side
from pages.present.reviewer_tables import PAIRED_HEADERS

METHODS = ["binomial", "beta", "triangular", "exponential", "geometric", "poisson"]
METHODS += ["sord", "cdw_ce", "emd", "qwk", "clm", "corn"]


def _row(b: str, *, wilcoxon: float, corrected: float, holm: float, verdict: str) -> dict:
    """One paired row of Nominal against ``b`` on KL with the p-values given."""
    return {
        "task": "KL",
        "metric": "amae",
        "method_a": "nominal",
        "method_b": b,
        "mean_diff": 0.05,
        "p_wilcoxon": wilcoxon,
        "p_corrected": corrected,
        "p_corrected_holm": holm,
        "rho_assumed": 0.3,
        "verdict": verdict,
        "p_bayes_a_better": 0.1,
        "p_bayes_b_better": 0.5,
        "p_bayes_equivalent": 0.4,
        "rope": paired.DEFAULT_ROPE,
    }


def _rows() -> pd.DataFrame:
    """12 rows: 5 separated by the Wilcoxon only, 4 by neither, 1 by both but not after
    Holm, 1 with a verdict and 1 whose Holm p is below α beside an inconclusive verdict."""
    rows = [
        _row(m, wilcoxon=0.03, corrected=0.2, holm=1.0, verdict="inconclusive") for m in METHODS[:5]
    ]
    rows += [
        _row(m, wilcoxon=0.4, corrected=0.5, holm=1.0, verdict="inconclusive") for m in METHODS[5:9]
    ]
    rows.append(_row("qwk", wilcoxon=0.03, corrected=0.01, holm=0.2, verdict="inconclusive"))
    rows.append(_row("clm", wilcoxon=0.03, corrected=0.001, holm=0.01, verdict="clm better"))
    rows.append(_row("corn", wilcoxon=0.03, corrected=0.001, holm=0.01, verdict="inconclusive"))
    return pd.DataFrame(rows)


def test_past_eight_rows_the_readings_group_the_pairs_holm_does_not_separate():
    rows = _rows()
    assert len(rows) > MANY_ROWS
    readings = comparisons.paired_readings(rows)
    assert len(readings) == 2 + 3  # CLM and CORN their own; three findings, one sentence each
    assert readings[0].startswith("KL: Nominal's AMAE") and "CLM" in readings[0]
    assert "CORN" in readings[1] and "reaches into it" in readings[1]  # the ROPE explained
    grouped = readings[2:]
    assert grouped[0].startswith("KL: in 5 pairs (Nominal − Binomial; Nominal − Beta;")
    assert "the two methods differ on most seeds (Wilcoxon" in grouped[0]
    assert grouped[1].startswith("KL: in 4 pairs") and "are separated by neither" in grouped[1]
    assert grouped[2].startswith("KL: in 1 pair (Nominal − QWK loss) the two methods differ")
    assert "not after Holm" in grouped[2]
    for title in ("Binomial", "Beta", "Triangular", "SORD", "EMD", "QWK loss"):
        assert sum(f"Nominal − {title})" in r or f"Nominal − {title};" in r for r in grouped) == 1


def test_up_to_eight_rows_every_row_keeps_its_own_reading():
    rows = _rows().head(MANY_ROWS)
    readings = comparisons.paired_readings(rows)
    assert len(readings) == MANY_ROWS
    assert all(r.startswith("KL: ") and "pairs" not in r for r in readings)


def _detail() -> pd.DataFrame:
    """Two rows of the report's paired columns as text."""
    h = PAIRED_HEADERS
    return pd.DataFrame(
        {
            h["task"]: ["KL", "CPPD"],
            h["p_corrected"]: ["0.2", "0.3"],
            h["rho_assumed"]: ["0.30", "0.30"],
            h["p_strip"]: ["0.01 · 0.05 · 0.1 · 0.2 (ρ 0.30)", "0.02 · 0.1 · 0.2 · 0.3 (ρ 0.30)"],
            h["p_wilcoxon"]: ["0.03", "0.5"],
            h["p_wilcoxon_holm"]: ["0.3", "1"],
            h["d_z"]: ["1.2", "0.1"],
            h["rank_biserial"]: ["0.9", "0.1"],
            h["p_bayes_a_better"]: ["0.10", "0.20"],
            h["p_bayes_equivalent"]: ["0.40", "0.30"],
            h["p_bayes_b_better"]: ["0.50", "0.50"],
        }
    )


def test_merged_columns_keep_every_value_in_fewer_columns():
    merged = comparisons.merged_columns(_detail())
    assert list(merged.columns) == [
        "Task",
        PAIRED_HEADERS["p_strip"],
        "p Wilcoxon (exact · Holm)",
        "dz · rank-biserial r",
        "P(A better · equivalent · B better)",
    ]
    assert merged.iloc[0].tolist()[2:] == ["0.03 · 0.3", "1.2 · 0.9", "0.10 · 0.40 · 0.50"]
    # The corrected p and its ρ leave only where the p strip repeats them.
    without_strip = comparisons.merged_columns(_detail().drop(columns=PAIRED_HEADERS["p_strip"]))
    assert PAIRED_HEADERS["p_corrected"] in without_strip


def test_many_rows_split_into_a_compact_verdict_table_and_one_merged_detail_table():
    detail = pd.concat([_detail()] * 5, ignore_index=True)  # 10 rows
    tables = comparisons.split_tables(detail, 2, 1)
    assert len(tables) == 2 and all('class="dataframe compact"' in t for t in tables)
    assert len(comparisons.split_tables(detail.head(4), 2, 1)) == 3  # few rows: as before


def test_tasks_side_by_side_halves_the_rows_and_leaves_a_missing_task_blank():
    frame = pd.DataFrame(
        {"Task": ["CPPD", "CPPD", "KL"], "B": ["Beta", "CLM", "Beta"], "Mean": ["1", "2", "3"]}
    )
    wide = tasks_side_by_side(frame, ["B"])
    assert wide.to_dict("records") == [
        {"B": "Beta", "CPPD · Mean": "1", "KL · Mean": "3"},
        {"B": "CLM", "CPPD · Mean": "2", "KL · Mean": ""},
    ]


def _sets_summary() -> pd.DataFrame:
    """Two tasks × two methods × two scores of `conformal.method_summary`."""
    rows = []
    for task in ("KL", "CPPD"):
        for method in ("beta", "nominal"):  # not in display order: Nominal comes first
            for score in ("lac", "aps"):
                rows.append(
                    {
                        "task": task,
                        "method": method,
                        "score": score,
                        "n_seeds": 3,
                        "coverage": 0.9 if method == "beta" else 0.95,
                        "mean_size": 2.0,
                        "singleton_share": 0.25,
                        "range_share": 1.0,
                        "coverage_g0": 1.0,
                        "coverage_g1": 0.8 if method == "beta" else 1.0,
                        "coverage_g2": np.nan,  # no film of grade 2: not a worst grade
                    }
                )
    return pd.DataFrame(rows)


def test_grade_sets_take_one_row_per_method_with_every_task_and_score():
    table = sets_tables.sets_by_method(_sets_summary())
    assert list(table["Method"]) == ["Nominal", "Beta"]
    assert list(table.columns[2:]) == [  # the paper's task order, the registry's scores
        "CPPD · LAC (1 − p)",
        "CPPD · APS (mass above)",
        "KL · LAC (1 − p)",
        "KL · APS (mass above)",
    ]
    assert table.loc[1, "KL · LAC (1 − p)"] == "0.900 / 2.00"


def test_the_set_shapes_name_the_worst_grade_or_that_every_grade_is_covered():
    table = sets_tables.set_shapes_by_method(_sets_summary()).set_index(["Task", "Method"])
    column = "LAC (1 − p): single · range · worst grade"
    assert table.loc[("KL", "Beta"), column] == "0.25 · 1.00 · 0.800 (grade 1)"
    assert table.loc[("KL", "Nominal"), column] == "0.25 · 1.00 · every grade 1"


def test_the_residuals_are_one_figure_of_a_panel_per_method_on_one_scale():
    frame = pd.concat(
        [
            pd.DataFrame({"KL": [0, 1], "CPPD": [0, 0], "value": [v, -v], "method": m})
            for m, v in (("beta", 0.5), ("nominal", 2.0))
        ]
    )
    spec = charts.residual_small_multiples(frame, limit=3.0).to_dict()
    assert spec["facet"]["field"] == "Method" and spec["facet"]["sort"] == ["Nominal", "Beta"]
    colour = spec["spec"]["layer"][0]["encoding"]["color"]
    assert colour["scale"]["domain"] == [-3.0, 3.0] and colour["scale"]["domainMid"] == 0


def test_the_kld_parts_of_many_methods_read_in_a_few_sentences_naming_each_once():
    parts = pd.DataFrame(
        {
            "method": ["nominal", "beta", "clm"],
            "kl_marginal": [0.6, 0.1, 0.1],
            "cppd_given_kl": [0.4, 0.9, 0.5],
            "mi_true": [0.3] * 3,
            "mi_pred": [0.3, 0.1, 0.5],
        }
    )
    marginal, given, ties = inference_tables.kld_parts_grouped(parts)
    assert marginal.startswith("1 of 3 methods have a KLD that is mostly its KL marginal")
    assert marginal.endswith(": Nominal.") and given.endswith(": Beta, CLM.")
    assert "about as strongly as the truth does: Nominal" in ties
    assert "less strongly than the truth does: Beta" in ties
    assert "more strongly than the truth does: CLM" in ties
