"""engine.analysis.compare against independent computations (sklearn, numpy, statsmodels,
the paper).

How the numbers read (text, LaTeX, CSV) is tested in tests/app/test_tables.py.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from sklearn.metrics import (
    balanced_accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    mean_absolute_error,
)
from statsmodels.stats.anova import anova_lm

from engine.analysis import compare, stats
from engine.methods import grid_size, order_methods
from tests.helpers.predictions import confusion_counts_of, synthetic_predictions

# The paper's Table 4 Average rows as printed (mean, std), paper.tex lines ~450 and ~458.
PAPER_AVERAGES = {
    "CPPD": {
        "qwk": (0.737, 0.057),
        "mae": (0.522, 0.072),
        "ms": (0.351, 0.089),
        "ba": (0.546, 0.035),
        "amae": (0.529, 0.067),
        "mmae": (0.752, 0.174),
    },
    "KL": {
        "qwk": (0.735, 0.047),
        "mae": (0.606, 0.078),
        "ms": (0.268, 0.103),
        "ba": (0.522, 0.040),
        "amae": (0.592, 0.077),
        "mmae": (0.917, 0.207),
    },
}
# The paper's bold (best) and italic (second) cells of Table 4.
PAPER_MARKS = {
    ("CPPD", "qwk"): ("triangular", "beta"),
    ("CPPD", "mae"): ("triangular", "beta"),
    ("CPPD", "ms"): ("beta", "binomial"),
    ("CPPD", "ba"): ("triangular", "beta"),
    ("CPPD", "amae"): ("beta", "binomial"),
    ("CPPD", "mmae"): ("beta", "binomial"),
    ("KL", "qwk"): ("beta", "exponential"),
    ("KL", "mae"): ("beta", "exponential"),
    ("KL", "ms"): ("beta", "triangular"),
    ("KL", "ba"): ("beta", "exponential"),
    ("KL", "amae"): ("beta", "exponential"),
    ("KL", "mmae"): ("beta", "exponential"),
}


@pytest.fixture(scope="module")
def images() -> pd.DataFrame:
    return synthetic_predictions()


@pytest.fixture(scope="module")
def per_run(images) -> pd.DataFrame:
    return compare.per_run_metrics(confusion_counts_of(images))


def test_per_run_metrics_match_sklearn(images, per_run):
    for run_id, rows in images.groupby("run_id"):
        got = per_run.set_index("run_id").loc[run_id]
        labels = list(range(5 if rows["task"].iloc[0] == "KL" else 4))
        qwk = cohen_kappa_score(rows["y_true"], rows["y_pred"], weights="quadratic", labels=labels)
        assert got["qwk"] == pytest.approx(qwk)
        assert got["mae"] == pytest.approx(mean_absolute_error(rows["y_true"], rows["y_pred"]))
        assert got["ba"] == pytest.approx(balanced_accuracy_score(rows["y_true"], rows["y_pred"]))


def test_per_run_metrics_carries_extra_run_columns(images):
    counts = compare.label_methods(confusion_counts_of(images), {"st": "Study"})
    out = compare.per_run_metrics(counts)
    assert "base_method" in out.columns
    assert (out["base_method"] == out["method"]).all()


def test_summary_table_means_stds_order_and_average(per_run):
    summary = compare.summary_table(per_run)
    assert list(summary["task"]) == ["CPPD"] * 4 + ["KL"] * 4  # the paper lists CPPD first
    assert list(summary["method"][:4]) == ["nominal", "beta", "triangular", "Average"]
    for (task, method), rows in per_run.groupby(["task", "method"]):
        row = summary[(summary["task"] == task) & (summary["method"] == method)].iloc[0]
        for metric in ("qwk", "amae"):
            assert row[f"{metric}_mean"] == pytest.approx(np.mean(rows[metric]))
            assert row[f"{metric}_std"] == pytest.approx(np.std(rows[metric], ddof=1))
        assert row["n_seeds"] == 4
    for task in ("CPPD", "KL"):
        methods = summary[(summary["task"] == task) & (summary["row"] == "method")]
        average = summary[(summary["task"] == task) & (summary["row"] == "average")].iloc[0]
        assert average["mae_mean"] == pytest.approx(methods["mae_mean"].mean())
        assert average["mae_std"] == pytest.approx(methods["mae_std"].mean())


def test_average_rows_reproduce_the_papers_printed_averages():
    published = compare.published_table()
    if published is None:
        pytest.skip("../shared/reference/paper_table4.csv is not there")
    for task, expected in PAPER_AVERAGES.items():
        row = compare.average_row(published[published["task"] == task], task).iloc[0]
        for metric, (mean, std) in expected.items():
            assert round(row[f"{metric}_mean"], 3) == pytest.approx(mean, abs=1e-3)
            assert round(row[f"{metric}_std"], 3) == pytest.approx(std, abs=1e-3)


def test_rank_marks_reproduce_the_papers_bold_and_italics():
    published = compare.published_table()
    if published is None:
        pytest.skip("../shared/reference/paper_table4.csv is not there")
    as_ours = published.assign(row="method")
    marks = compare.rank_marks(as_ours)
    for (task, metric), (best, second) in PAPER_MARKS.items():
        rows = as_ours[as_ours["task"] == task]
        got_best = list(rows.loc[marks.loc[rows.index, metric] == "best", "method"])
        got_second = list(rows.loc[marks.loc[rows.index, metric] == "second", "method"])
        assert (got_best, got_second) == ([best], [second]), (task, metric)


def test_rank_marks_are_direction_aware_and_skip_ties_and_other_rows():
    summary = pd.DataFrame(
        {
            "task": ["KL"] * 4,
            "method": ["a", "b", "c", "Average"],
            "row": ["method", "method", "method", "average"],
            "qwk_mean": [0.5, 0.9, 0.7, 0.99],
            "mae_mean": [0.5, 0.9, 0.7, 0.01],
            "ms_mean": [0.2, 0.2, 0.2, 0.2],
        }
    )
    marks = compare.rank_marks(summary, metrics=["qwk", "mae", "ms"])
    assert list(marks["qwk"]) == ["", "best", "second", ""]  # higher is better
    assert list(marks["mae"]) == ["best", "", "second", ""]  # lower is better
    assert list(marks["ms"]) == ["", "", "", ""]  # all equal: nothing stands out


def test_rank_marks_share_a_mark_when_rounded_values_tie():
    summary = pd.DataFrame(
        {
            "task": ["KL"] * 3,
            "method": ["a", "b", "c"],
            "row": ["method"] * 3,
            "qwk_mean": [0.8001, 0.8004, 0.7],
        }
    )
    assert list(compare.rank_marks(summary, metrics=["qwk"])["qwk"]) == ["best", "best", "second"]


def test_published_table_missing_file_gives_none(tmp_path):
    assert compare.published_table(tmp_path / "absent.csv") is None
    bad = tmp_path / "bad.csv"
    bad.write_text("task,method\nKL,beta\n")
    assert compare.published_table(bad) is None


def test_with_published_interleaves_paper_rows_under_each_method(per_run):
    published = compare.published_table()
    if published is None:
        pytest.skip("../shared/reference/paper_table4.csv is not there")
    summary = compare.summary_table(per_run)
    shown = compare.with_published(summary, published)
    kl = shown[shown["task"] == "KL"]
    assert list(zip(kl["method"], kl["row"], strict=True)) == [
        ("nominal", "method"),
        ("nominal", "paper"),
        ("beta", "method"),
        ("beta", "paper"),
        ("triangular", "method"),
        ("triangular", "paper"),
        ("Average", "average"),  # 3 of the paper's 5 methods: no paper Average row
    ]
    paper_beta = kl[kl["row"] == "paper"].iloc[1]
    assert paper_beta["qwk_mean"] == pytest.approx(0.777)
    assert compare.with_published(summary, None) is summary
    # Paper rows never get marks.
    marks = compare.rank_marks(shown)
    assert (marks[shown["row"] != "method"] == "").all().all()


def test_with_published_adds_the_paper_average_when_all_five_methods_are_shown():
    published = compare.published_table()
    if published is None:
        pytest.skip("../shared/reference/paper_table4.csv is not there")
    ours = pd.concat(
        [
            published.assign(row="method"),
            compare.average_row(published[published.task == "KL"], "KL"),
        ]
    )
    ours = ours[ours["task"] == "KL"].reset_index(drop=True)
    shown = compare.with_published(ours, published)
    paper_average = shown[shown["row"] == "paper average"].iloc[0]
    assert paper_average["qwk_mean"] == pytest.approx(0.7352)


def test_score_frame_orders_by_task_method_seed(per_run):
    scores = compare.score_frame(per_run, "amae", ["KL"])
    assert list(scores.columns) == ["study_id", "task", "method", "seed", "value"]
    assert list(dict.fromkeys(scores["method"])) == ["nominal", "beta", "triangular"]
    assert list(scores["seed"][:4]) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        compare.score_frame(per_run, "accuracy")


def test_score_frame_feeds_the_two_way_anova_like_a_hand_built_formula(per_run):
    result = stats.two_way_anova(compare.score_frame(per_run, "amae"))
    model = smf.ols("amae ~ C(method) * C(task)", data=per_run).fit()
    expected = anova_lm(model, typ=2)
    np.testing.assert_allclose(result.table["SS"], expected["sum_sq"])
    np.testing.assert_allclose(result.table["F"].iloc[:3], expected["F"].iloc[:3])


def test_best_method_is_direction_aware(per_run):
    kl = per_run[per_run["task"] == "KL"]
    means = kl.groupby("method")[["amae", "qwk"]].mean()
    assert compare.best_method(per_run, "KL", "amae") == means["amae"].idxmin()
    assert compare.best_method(per_run, "KL", "qwk") == means["qwk"].idxmax()
    assert compare.best_method(per_run, "KL", "amae", exclude=["beta", "triangular"]) == "nominal"
    assert compare.best_method(per_run, "KL", "amae", exclude=list(means.index)) is None


def test_method_confusion_sums_and_averages_like_sklearn(images):
    counts = confusion_counts_of(images)
    rows = images[(images["task"] == "CPPD") & (images["method"] == "beta")]
    expected = sum(
        confusion_matrix(r["y_true"], r["y_pred"], labels=range(4))
        for _, r in rows.groupby("run_id")
    )
    summed, n_runs = compare.method_confusion(counts, "CPPD", "beta", how="sum")
    averaged, _ = compare.method_confusion(counts, "CPPD", "beta", how="mean")
    np.testing.assert_array_equal(summed, expected)
    np.testing.assert_allclose(averaged, expected / 4)
    assert n_runs == 4
    empty, none = compare.method_confusion(counts, "CPPD", "exponential")
    assert none == 0 and not empty.any()


def test_confusion_frame_row_shares_sum_to_one_and_absent_grade_is_nan():
    cm = np.array([[3, 1, 0], [0, 0, 0], [1, 1, 2]])
    frame = compare.confusion_frame(cm)
    shares = frame.pivot(index="true", columns="predicted", values="share")
    np.testing.assert_allclose(shares.loc[0].sum(), 1.0)
    np.testing.assert_allclose(shares.loc[2].to_numpy(), [0.25, 0.25, 0.5])
    assert shares.loc[1].isna().all()
    assert frame["count"].sum() == cm.sum()


def test_grid_frame_is_long_form():
    table = np.arange(20).reshape(5, 4)
    frame = compare.grid_frame(table)
    assert len(frame) == 20
    assert frame.set_index(["KL", "CPPD"]).loc[(3, 2), "value"] == table[3, 2]


def test_label_methods_tells_apart_a_method_shared_by_two_studies():
    frame = pd.DataFrame(
        {"study_id": ["s1", "s1", "s2", "s2"], "method": ["beta", "nominal", "beta", "triangular"]}
    )
    out = compare.label_methods(frame, {"s1": "first", "s2": "second"})
    assert list(out["method"]) == ["beta · first", "nominal", "beta · second", "triangular"]
    assert list(out["base_method"]) == ["beta", "nominal", "beta", "triangular"]
    same = compare.label_methods(frame, {"s1": "x", "s2": "x"})
    assert same["method"].iloc[0] == "beta · x (s1)"
    assert order_methods(out["method"]) == [
        "nominal",
        "beta · first",
        "beta · second",
        "triangular",
    ]


def _group_counts(spec: dict, done: dict[int, int]) -> pd.DataFrame:
    """Stored runs per group: seed -> how many of each group's planned runs are stored."""
    rows = []
    for seed, missing in done.items():
        for task in spec["tasks"]:
            for method in spec["methods"]:
                planned = min(spec["budget"], grid_size(method))
                rows.append(
                    {
                        "study_id": "s",
                        "task": task,
                        "method": method,
                        "seed": seed,
                        "n_runs": planned - (missing if method == "beta" and task == "KL" else 0),
                    }
                )
    return pd.DataFrame(rows)


def test_finished_seeds_need_every_planned_search_complete():
    spec = {"tasks": ["KL", "CPPD"], "methods": ["nominal", "beta"], "seeds": [0, 1, 2, 3]}
    spec["budget"] = 15  # nominal's grid has 3 configurations, beta's 6
    counts = _group_counts(spec, {0: 0, 1: 1, 3: 0})  # seed 1 misses one beta run
    assert compare.finished_seeds(counts, spec) == [0, 3]


def test_study_progress_and_keep_finished_seeds():
    spec = {"tasks": ["KL"], "methods": ["beta"], "seeds": [0, 1, 2], "budget": 2}
    counts = _group_counts(spec, {0: 0, 1: 1})
    studies = pd.DataFrame(
        [
            {"study_id": "s", "name": "live", "status": "running", "spec": json.dumps(spec)},
            {"study_id": "t", "name": "done", "status": "succeeded", "spec": json.dumps(spec)},
        ]
    )
    live, done = compare.study_progress(studies, counts)
    assert live.partial and live.finished == (0,) and live.planned == (0, 1, 2)
    assert not done.partial
    frame = pd.DataFrame({"study_id": ["s", "s", "t", "t"], "seed": [0, 1, 0, 1]})
    kept = compare.keep_finished_seeds(frame, [live, done])
    assert list(zip(kept["study_id"], kept["seed"], strict=True)) == [("s", 0), ("t", 0), ("t", 1)]


def test_one_dataset_keeps_the_studies_on_the_first_picked_dataset():
    studies = pd.DataFrame(
        {
            "study_id": ["a", "b", "c", "d"],
            "name": ["A", "B", "C", "D"],
            "dataset_id": ["ds1", "ds2", "ds1", None],
        }
    )
    assert compare.one_dataset(studies, ["b", "a", "c", "d"]) == (["b", "d"], ["A", "C"])
    assert compare.one_dataset(studies, ["a", "c"]) == (["a", "c"], [])


def test_pages_open_on_the_newest_finished_study():
    from engine.analysis.compare import default_study_id

    studies = pd.DataFrame(
        {
            "study_id": ["new-running", "older-done", "oldest-done"],
            "status": ["running", "succeeded", "succeeded"],
        }
    )
    assert default_study_id(studies) == "older-done"
    assert default_study_id(studies.iloc[:1]) == "new-running"
