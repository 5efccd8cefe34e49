"""Tests for engine.analysis.stats against direct scipy / statsmodels / numpy computations."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.multitest import multipletests

from engine.analysis.stats import (
    TestResult,
    TukeyResult,
    homogeneous_subsets,
    kruskal_across_methods,
    shapiro_by_method,
    tukey_hsd,
    two_way_anova,
    wilcoxon_pairwise,
)

# Shaped like the paper's AMAE results (Table 6): nominal clearly worse, the soft-label
# methods close together.
PAPER_MEANS = {
    "Nominal": 0.777,
    "Binomial": 0.527,
    "Triangular": 0.505,
    "Exponential": 0.503,
    "Beta": 0.490,
}


def _scores(
    means: dict[str, float] = PAPER_MEANS,
    seeds: int = 20,
    tasks: tuple[str, ...] = ("KL", "CPPD"),
    spread: float = 0.02,
    rng_seed: int = 0,
) -> pd.DataFrame:
    rng = np.random.default_rng(rng_seed)
    rows = [
        {
            "method": method,
            "task": task,
            "seed": seed,
            "value": mean + (0.02 if task == "KL" else -0.02) + rng.normal(0, spread),
        }
        for task in tasks
        for method, mean in means.items()
        for seed in range(seeds)
    ]
    return pd.DataFrame(rows)


def _one_task(scores: pd.DataFrame, task: str = "KL") -> pd.DataFrame:
    return scores[scores["task"] == task].drop(columns="task").reset_index(drop=True)


# --- Shapiro-Wilk ---------------------------------------------------------------------


def test_shapiro_matches_scipy_per_method():
    scores = _one_task(_scores())
    # Make one method clearly non-normal: 19 values near 0.5 and one far outlier.
    beta = scores["method"] == "Beta"
    scores.loc[beta, "value"] = [0.49] * 10 + [0.50] * 9 + [0.95]
    result = shapiro_by_method(scores)
    assert isinstance(result, TestResult)
    assert list(result.table["method"]) == list(PAPER_MEANS)  # caller's order kept
    for _, row in result.table.iterrows():
        values = scores.loc[scores["method"] == row["method"], "value"]
        expected = stats.shapiro(values)
        assert row["W"] == pytest.approx(expected.statistic)
        assert row["p"] == pytest.approx(expected.pvalue)
        assert row["normal"] == (expected.pvalue >= 0.05)
    assert not result.table.set_index("method").loc["Beta", "normal"]
    assert "not normal for Beta" in result.reading
    assert result.note is None


def test_shapiro_needs_three_values_per_method():
    scores = _one_task(_scores())
    scores = scores[(scores["method"] != "Beta") | (scores["seed"] < 2)]
    result = shapiro_by_method(scores)
    beta = result.table.set_index("method").loc["Beta"]
    assert beta["n"] == 2
    assert np.isnan(beta["W"]) and np.isnan(beta["p"]) and pd.isna(beta["normal"])
    assert "at least 3 seeds per method" in result.note
    assert "Beta (2)" in result.note


def test_shapiro_with_one_seed_returns_empty_table_and_note():
    result = shapiro_by_method(_one_task(_scores(seeds=1)))
    assert result.table.empty
    assert "at least 3 seeds" in result.note
    assert result.reading == result.note


# --- Kruskal-Wallis -------------------------------------------------------------------


def test_kruskal_matches_scipy():
    scores = _one_task(_scores())
    result = kruskal_across_methods(scores)
    groups = [scores.loc[scores["method"] == m, "value"] for m in PAPER_MEANS]
    expected = stats.kruskal(*groups)
    row = result.table.iloc[0]
    assert row["H"] == pytest.approx(expected.statistic)
    assert row["p"] == pytest.approx(expected.pvalue)
    assert row["df"] == 4 and row["methods"] == 5 and row["n"] == 100
    assert result.reading.startswith("Methods differ overall (Kruskal–Wallis H = ")
    assert "p < 0.001" in result.reading


def test_kruskal_reports_no_difference():
    scores = _one_task(_scores(means={"A": 0.5, "B": 0.5}, spread=0.05, rng_seed=3))
    result = kruskal_across_methods(scores)
    assert result.table.iloc[0]["p"] >= 0.05
    assert result.reading.startswith("No overall difference between methods detected")


def test_kruskal_leaves_out_single_value_methods():
    scores = _one_task(_scores(means={"A": 0.5, "B": 0.6, "C": 0.7}))
    scores = scores[(scores["method"] != "C") | (scores["seed"] == 0)]
    result = kruskal_across_methods(scores)
    assert result.table.iloc[0]["methods"] == 2
    assert "C (1)" in result.note


def test_kruskal_needs_two_methods():
    result = kruskal_across_methods(_one_task(_scores(means={"Beta": 0.5})))
    assert result.table.empty
    assert result.note == (
        "Kruskal–Wallis needs at least 2 methods with 2 or more seeds each; this study has 1."
    )


# --- Wilcoxon -------------------------------------------------------------------------


def test_wilcoxon_pairs_by_shared_seeds_and_matches_scipy():
    scores = _one_task(_scores())
    # Seed 3 is missing for Beta: every pair with Beta must use the other 19 seeds.
    scores = scores[~((scores["method"] == "Beta") & (scores["seed"] == 3))]
    result = wilcoxon_pairwise(scores)
    assert len(result.table) == 10  # all pairs of 5 methods
    wide = scores.pivot(index="seed", columns="method", values="value")
    for _, row in result.table.iterrows():
        paired = wide[[row["method_a"], row["method_b"]]].dropna()
        expected = stats.wilcoxon(paired[row["method_a"]], paired[row["method_b"]])
        assert row["n_seeds"] == len(paired)
        assert row["statistic"] == pytest.approx(expected.statistic)
        assert row["p"] == pytest.approx(expected.pvalue)
    beta_rows = result.table[(result.table[["method_a", "method_b"]] == "Beta").any(axis=1)]
    assert set(beta_rows["n_seeds"]) == {19}


def test_wilcoxon_holm_equals_multipletests():
    result = wilcoxon_pairwise(_one_task(_scores()))
    expected = multipletests(result.table["p"], alpha=0.05, method="holm")
    np.testing.assert_allclose(result.table["p_adj"], expected[1])
    np.testing.assert_array_equal(result.table["significant"], expected[0])
    assert set(result.table["correction"]) == {"Holm"}
    assert "Holm-adjusted" in result.reading


@pytest.mark.parametrize(
    ("correction", "label"), [("bonferroni", "Bonferroni"), ("fdr_bh", "Benjamini–Hochberg")]
)
def test_wilcoxon_other_corrections_are_named(correction, label):
    result = wilcoxon_pairwise(_one_task(_scores()), correction=correction)
    expected = multipletests(result.table["p"], method=correction)[1]
    np.testing.assert_allclose(result.table["p_adj"], expected)
    assert set(result.table["correction"]) == {label}
    assert f"{label}-adjusted" in result.reading


def test_wilcoxon_without_correction_keeps_raw_p():
    result = wilcoxon_pairwise(_one_task(_scores()), correction="none")
    np.testing.assert_array_equal(result.table["p_adj"], result.table["p"])
    assert "unadjusted" in result.reading


def test_wilcoxon_one_pair_reading():
    # Beta and Triangular from the same distribution, 20 seeds: expect no difference.
    scores = _one_task(_scores(means={"Beta": 0.5, "Triangular": 0.5}, spread=0.05))
    result = wilcoxon_pairwise(scores)
    row = result.table.iloc[0]
    assert not row["significant"]
    p_text = f"Holm-adjusted p = {row['p_adj']:.2g}"
    assert result.reading == (
        f"Triangular and Beta do not differ (Wilcoxon, 20 paired seeds, {p_text})."
    )


def test_wilcoxon_exact_p_for_consistent_improvement():
    # One method better on all 20 seeds: the exact two-sided p is 2 / 2**20 (paper Table 7).
    scores = pd.DataFrame(
        {
            "method": ["Nominal"] * 20 + ["Beta"] * 20,
            "seed": list(range(20)) * 2,
            "value": list(np.linspace(0.5, 0.9, 20)) + list(np.linspace(0.1, 0.2, 20)),
        }
    )
    result = wilcoxon_pairwise(scores)
    assert result.table.iloc[0]["p"] == pytest.approx(2 / 2**20)
    assert result.reading.startswith("Beta is lower than Nominal")


def test_wilcoxon_identical_methods_are_not_different():
    scores = pd.DataFrame(
        {"method": ["A"] * 5 + ["B"] * 5, "seed": list(range(5)) * 2, "value": [0.3] * 10}
    )
    row = wilcoxon_pairwise(scores).table.iloc[0]
    assert row["p"] == 1.0 and not row["significant"]


def test_wilcoxon_with_one_seed_explains_what_is_missing():
    result = wilcoxon_pairwise(_one_task(_scores(seeds=1)))
    assert result.table.empty
    assert result.note == "Wilcoxon needs at least 2 seeds run for both methods; this study has 1."


def test_wilcoxon_warns_when_too_few_seeds_can_never_be_significant():
    result = wilcoxon_pairwise(_one_task(_scores(seeds=4)))
    assert not result.table.empty
    assert "cannot reach p < 0.05" in result.note
    assert "0.125" in result.note  # 2 / 2**4


def test_wilcoxon_rejects_repeated_method_seed_and_unknown_correction():
    with pytest.raises(ValueError, match="one task"):
        wilcoxon_pairwise(_scores())  # both tasks: two values per (method, seed)
    with pytest.raises(ValueError, match="correction"):
        wilcoxon_pairwise(_one_task(_scores()), correction="magic")


def test_missing_values_are_dropped_and_counted():
    scores = _one_task(_scores())
    scores.loc[0, "value"] = np.nan
    result = kruskal_across_methods(scores)
    assert result.table.iloc[0]["n"] == 99
    assert "1 scores without a value" in result.note


def test_missing_columns_raise():
    with pytest.raises(ValueError, match="lack columns"):
        shapiro_by_method(pd.DataFrame({"method": ["a"], "value": [1.0]}))


# --- two-way ANOVA --------------------------------------------------------------------


def test_two_way_anova_matches_hand_computed_balanced_anova():
    scores = _scores(spread=0.05)
    result = two_way_anova(scores)
    table = result.table.set_index("factor")
    assert list(table.index) == ["Method", "Task", "Method × Task", "Residual"]
    # Paper Table 5 degrees of freedom: 5 methods, 2 tasks, 20 seeds.
    assert list(table["DF"]) == [4, 1, 4, 190]

    # Balanced design: type-II SS equal the classical decomposition around cell means.
    grand = scores["value"].mean()
    n_cell = 20
    method_mean = scores.groupby("method")["value"].mean()
    task_mean = scores.groupby("task")["value"].mean()
    cell_mean = scores.groupby(["method", "task"])["value"].mean()
    ss_method = 2 * n_cell * ((method_mean - grand) ** 2).sum()
    ss_task = 5 * n_cell * ((task_mean - grand) ** 2).sum()
    interaction = [
        cell_mean[(m, t)] - method_mean[m] - task_mean[t] + grand
        for m, t in itertools.product(method_mean.index, task_mean.index)
    ]
    ss_inter = n_cell * np.sum(np.square(interaction))
    fitted = scores.set_index(["method", "task"]).index.map(cell_mean)
    ss_resid = float(((scores["value"] - fitted) ** 2).sum())
    ms_resid = ss_resid / 190
    for factor, ss, df in [
        ("Method", ss_method, 4),
        ("Task", ss_task, 1),
        ("Method × Task", ss_inter, 4),
    ]:
        f_value = (ss / df) / ms_resid
        assert table.loc[factor, "SS"] == pytest.approx(ss)
        assert table.loc[factor, "F"] == pytest.approx(f_value)
        assert table.loc[factor, "p"] == pytest.approx(stats.f.sf(f_value, df, 190))
    assert table.loc["Residual", "SS"] == pytest.approx(ss_resid)
    assert np.isnan(table.loc["Residual", "F"])
    assert result.reading.startswith("Values differ by method (F = ")
    assert "no method × task interaction" in result.reading


def test_two_way_anova_matches_statsmodels_formula_when_unbalanced():
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    scores = _scores(spread=0.05)
    scores = scores.drop(index=[0, 1, 2, 45]).reset_index(drop=True)  # uneven cells
    expected = anova_lm(smf.ols("value ~ C(method) * C(task)", data=scores).fit(), typ=2)
    result = two_way_anova(scores)
    np.testing.assert_allclose(result.table["SS"], expected["sum_sq"])
    np.testing.assert_allclose(result.table["F"], expected["F"])  # NaN on residual row
    np.testing.assert_allclose(result.table["p"], expected["PR(>F)"])


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (_scores(tasks=("KL",)), "at least 2 methods and 2 tasks; this study has 5 and 1"),
        (_scores(means={"Beta": 0.5}), "at least 2 methods and 2 tasks; this study has 1 and 2"),
        (_scores(seeds=1), "more than 1 seed per method and task"),
        (
            _scores().query("not (method == 'Beta' and task == 'KL')"),
            "every method run on every task; 1 missing",
        ),
    ],
)
def test_two_way_anova_too_little_data(scores, message):
    result = two_way_anova(scores)
    assert result.table.empty
    assert message in result.note


# --- Tukey HSD and homogeneous subsets ------------------------------------------------


def test_tukey_table_matches_statsmodels():
    scores = _scores()
    result = tukey_hsd(scores)
    assert isinstance(result, TukeyResult)
    expected = pairwise_tukeyhsd(scores["value"], scores["method"], alpha=0.05)
    np.testing.assert_allclose(result.table["meandiff"], expected.meandiffs)
    np.testing.assert_allclose(result.table["p_adj"], expected.pvalues)
    np.testing.assert_array_equal(result.table["reject"], expected.reject)
    summary = pd.DataFrame(expected.summary().data[1:], columns=expected.summary().data[0])
    assert list(result.table["group1"]) == list(summary["group1"])
    assert list(result.table["group2"]) == list(summary["group2"])


def test_tukey_gives_the_papers_two_subsets():
    # Means 0.78 vs 0.49-0.53 with a per-seed SD of 0.1 (the paper's order of spread):
    # Nominal alone, every soft label together.
    result = tukey_hsd(_scores(spread=0.1), descending=True)
    subsets = result.subsets
    assert list(subsets.columns) == ["method", "n", "mean", "S1", "S2"]
    assert subsets["method"].iloc[0] == "Nominal"  # highest mean first, as in Table 6
    in_s1 = subsets.dropna(subset=["S1"])["method"].tolist()
    in_s2 = subsets.dropna(subset=["S2"])["method"].tolist()
    assert in_s1 == ["Nominal"]
    assert sorted(in_s2) == sorted(set(PAPER_MEANS) - {"Nominal"})
    # Cells hold the group mean where the method belongs to the subset.
    nominal = subsets.set_index("method").loc["Nominal"]
    assert nominal["S1"] == pytest.approx(nominal["mean"])
    assert nominal["mean"] == pytest.approx(PAPER_MEANS["Nominal"], abs=0.03)
    assert "2 subsets" in result.reading and "S1 = Nominal" in result.reading


def test_tukey_one_subset_when_nothing_differs():
    scores = _scores(means={"A": 0.5, "B": 0.5, "C": 0.5}, spread=0.05, rng_seed=1)
    result = tukey_hsd(scores)
    assert list(result.subsets.columns) == ["method", "n", "mean", "S1"]
    assert result.reading.startswith("No two methods differ")


def test_tukey_with_one_seed_explains_what_is_missing():
    result = tukey_hsd(_scores(seeds=1, tasks=("KL",)))
    assert result.table.empty and result.subsets.empty
    assert "at least 2 methods with 2 or more seeds each; this study has 0" in result.note


@pytest.mark.parametrize(
    ("not_different", "expected"),
    [
        # Everything alike: one subset in ascending mean order.
        ({("A", "B"), ("A", "C"), ("B", "C")}, [["A", "B", "C"]]),
        # Nothing alike: each method alone.
        (set(), [["A"], ["B"], ["C"]]),
        # A~B and B~C but A differs from C: two overlapping subsets sharing B.
        ({("A", "B"), ("B", "C")}, [["A", "B"], ["B", "C"]]),
        # Only the top two alike.
        ({("B", "C")}, [["A"], ["B", "C"]]),
        # A~C alone is not contiguous in mean order (B lies between, differs): no merge.
        ({("A", "C")}, [["A"], ["B"], ["C"]]),
    ],
)
def test_homogeneous_subsets_hand_cases(not_different, expected):
    means = {"C": 0.9, "A": 0.1, "B": 0.5}
    pairs = {frozenset(pair) for pair in not_different}
    assert homogeneous_subsets(means, pairs) == expected


def test_homogeneous_subsets_descending_like_paper_table():
    means = dict(PAPER_MEANS)
    soft = [m for m in means if m != "Nominal"]
    pairs = {frozenset(p) for p in itertools.combinations(soft, 2)}
    assert homogeneous_subsets(means, pairs, descending=True) == [
        ["Nominal"],
        ["Binomial", "Triangular", "Exponential", "Beta"],
    ]
    assert homogeneous_subsets(means, pairs) == [
        ["Beta", "Exponential", "Triangular", "Binomial"],
        ["Nominal"],
    ]
