"""engine.analysis.probability_metrics against hand cases, dlordinal and scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from dlordinal.metrics import ranked_probability_score
from sklearn.calibration import calibration_curve

from engine.analysis import compare, stats
from engine.analysis import probability_metrics as pm


def _frame(runs: dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """A probability frame as `store.runs.selected_probabilities` returns it."""
    parts = []
    for (task, method, seed), (probs, y_true) in runs.items():
        part = pd.DataFrame(
            {
                "study_id": "s",
                "run_id": f"s-{task}-{method}-s{seed}-c0",
                "task": task,
                "method": method,
                "seed": seed,
                "y_true": y_true,
                "y_pred": probs.argmax(axis=1),
            }
        )
        for g in range(5):
            part[f"p{g}"] = probs[:, g] if g < probs.shape[1] else np.nan
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _random_runs(n_films: int = 60) -> dict:
    rng = np.random.default_rng(7)
    runs = {}
    for task, j in (("KL", 5), ("CPPD", 4)):
        for method in ("nominal", "beta", "triangular"):
            for seed in range(3):
                probs = rng.dirichlet(np.full(j, 0.6), size=n_films)
                runs[(task, method, seed)] = (probs, rng.integers(0, j, n_films))
    return runs


def _naive_ece(predicted: np.ndarray, observed: np.ndarray, n_bins: int = 10) -> float:
    """ECE with explicit bin masks: [0, 0.1], (0.1, 0.2], ..., (0.9, 1]."""
    edges = np.linspace(0, 1, n_bins + 1)
    total = 0.0
    for b in range(n_bins):
        low, high = edges[b], edges[b + 1]
        mask = (predicted <= high) & ((predicted > low) if b else (predicted >= low))
        if mask.any():
            gap = abs(observed[mask].mean() - predicted[mask].mean())
            total += mask.sum() / predicted.size * gap
    return total


def test_rps_matches_dlordinal_per_run_and_its_docstring_example():
    runs = _random_runs()
    per_run = pm.per_run_probability_metrics(_frame(runs)).set_index("run_id")
    for (task, method, seed), (probs, y_true) in runs.items():
        expected = ranked_probability_score(y_true, probs)
        assert per_run.loc[f"s-{task}-{method}-s{seed}-c0", "rps"] == pytest.approx(expected)
    # dlordinal's own example: not divided by J - 1.
    probs = np.array(
        [[0.2, 0.4, 0.2, 0.2], [0.7, 0.1, 0.1, 0.1], [0.5, 0.05, 0.1, 0.35], [0.1, 0.05, 0.65, 0.2]]
    )
    assert pm.rps_per_film(probs, np.array([0, 0, 3, 2])).mean() == pytest.approx(0.506875)


def test_rps_ranges_from_zero_to_j_minus_one():
    certain = np.eye(5)
    assert pm.rps_per_film(certain, np.arange(5)) == pytest.approx(np.zeros(5))
    worst = np.array([[0, 0, 0, 0, 1.0]])
    assert pm.rps_per_film(worst, np.array([0])) == pytest.approx([4.0])


def test_top_label_ece_on_a_hand_case():
    # Confidences 0.9 (right), 0.9 (wrong), 0.6 (right), 0.6 (right):
    # bin (0.8, 0.9]: acc 0.5 vs conf 0.9 -> 2/4 * 0.4; bin (0.5, 0.6]: acc 1 vs 0.6 -> 2/4 * 0.4.
    probs = np.array(
        [
            [0.9, 0.05, 0.05, 0.0],
            [0.9, 0.05, 0.05, 0.0],
            [0.2, 0.6, 0.1, 0.1],
            [0.1, 0.1, 0.6, 0.2],
        ]
    )
    y_true = np.array([0, 1, 1, 2])
    per_run = pm.per_run_probability_metrics(_frame({("CPPD", "beta", 0): (probs, y_true)}))
    assert per_run["ece"].iloc[0] == pytest.approx(0.4)
    assert per_run["within1"].iloc[0] == pytest.approx(1.0)


def test_ece_top_and_cumulative_match_an_explicit_bin_loop():
    runs = _random_runs()
    per_run = pm.per_run_probability_metrics(_frame(runs)).set_index("run_id")
    for (task, method, seed), (probs, y_true) in runs.items():
        row = per_run.loc[f"s-{task}-{method}-s{seed}-c0"]
        top = _naive_ece(probs.max(axis=1), probs.argmax(axis=1) == y_true)
        assert row["ece"] == pytest.approx(top)
        cumulative = [
            _naive_ece(probs[:, k + 1 :].sum(axis=1), y_true > k) for k in range(probs.shape[1] - 1)
        ]
        assert row["ece_cum"] == pytest.approx(np.mean(cumulative))


def test_reliability_bins_match_scikit_learn_calibration_curve():
    runs = _random_runs(n_films=200)
    frame = _frame(runs)
    table = pm.reliability_table(frame)
    for task in ("KL", "CPPD"):
        pooled = [v for k, v in runs.items() if k[0] == task and k[1] == "beta"]
        probs = np.concatenate([p for p, _ in pooled])
        y_true = np.concatenate([y for _, y in pooled])
        rows = table[(table["task"] == task) & (table["method"] == "beta")]
        for k in range(probs.shape[1] - 1):
            prob_true, prob_pred = calibration_curve(
                y_true > k, np.clip(1 - probs[:, : k + 1].sum(axis=1), 0, 1), n_bins=10
            )
            event = rows[rows["event"] == f"grade > {k}"].sort_values("bin")
            assert event["accuracy"].to_numpy() == pytest.approx(prob_true)
            assert event["confidence"].to_numpy() == pytest.approx(prob_pred)
            assert event["count"].sum() == len(y_true)
        top = rows[rows["event"] == pm.TOP_LABEL].sort_values("bin")
        prob_true, prob_pred = calibration_curve(
            probs.argmax(axis=1) == y_true, probs.max(axis=1), n_bins=10
        )
        assert top["accuracy"].to_numpy() == pytest.approx(prob_true)
        assert top["confidence"].to_numpy() == pytest.approx(prob_pred)
        assert (top["threshold"] == -1).all()


def test_reliability_ece_of_one_seed_equals_the_run_ece():
    runs = _random_runs()
    frame = _frame(runs)
    table = pm.reliability_table(frame, by=("task", "method", "seed"))
    per_run = pm.per_run_probability_metrics(frame)
    row = per_run[(per_run["task"] == "KL") & (per_run["method"] == "nominal")].iloc[0]
    bins = table[
        (table["task"] == "KL")
        & (table["method"] == "nominal")
        & (table["seed"] == row["seed"])
        & (table["event"] == pm.TOP_LABEL)
    ]
    assert pm.expected_calibration_error(bins) == pytest.approx(row["ece"])
    assert (table["bin_high"] - table["bin_low"]).to_numpy() == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("probs", "unimodal"),
    [
        ([0.1, 0.2, 0.4, 0.2, 0.1], True),
        ([0.7, 0.2, 0.05, 0.03, 0.02], True),  # peak at the first grade
        ([0.0, 0.0, 0.1, 0.3, 0.6], True),  # peak at the last grade
        ([0.5, 0.5, 0.0, 0.0, 0.0], True),  # a flat top is one mode
        ([0.4, 0.1, 0.1, 0.4, 0.0], False),  # two peaks with a flat valley
        ([0.3, 0.1, 0.3, 0.2, 0.1], False),
        ([0.6, 0.3, 0.1, 0.0, 2e-7], True),  # a rise below the tolerance is a tie
        ([0.6, 0.3, 0.05, 0.0, 0.05], False),
    ],
)
def test_unimodality_of_hand_distributions(probs, unimodal):
    assert pm.is_unimodal(np.array([probs]))[0] == unimodal


def test_within_one_matches_the_confusion_matrix_and_unimodal_share_is_a_share():
    runs = _random_runs()
    per_run = pm.per_run_probability_metrics(_frame(runs)).set_index("run_id")
    for (task, method, seed), (probs, y_true) in runs.items():
        row = per_run.loc[f"s-{task}-{method}-s{seed}-c0"]
        y_pred = probs.argmax(axis=1)
        j = probs.shape[1]
        cm = np.zeros((j, j))
        np.add.at(cm, (y_true, y_pred), 1)
        near = sum(cm[i, k] for i in range(j) for k in range(j) if abs(i - k) <= 1)
        assert row["within1"] == pytest.approx(near / len(y_true))
        assert row["unimodal"] == pytest.approx(pm.is_unimodal(probs).mean())
        assert row["n_films"] == len(y_true)


def test_summary_is_mean_and_sample_std_over_seeds():
    per_run = pm.per_run_probability_metrics(_frame(_random_runs()))
    summary = pm.probability_summary(per_run).set_index(["task", "method"])
    rows = per_run[(per_run["task"] == "CPPD") & (per_run["method"] == "triangular")]
    assert summary.loc[("CPPD", "triangular"), "rps_mean"] == pytest.approx(rows["rps"].mean())
    assert summary.loc[("CPPD", "triangular"), "ece_std"] == pytest.approx(
        np.std(rows["ece"], ddof=1)
    )
    assert summary.loc[("CPPD", "triangular"), "n_seeds"] == 3


def test_probability_metrics_flow_into_score_frame_and_the_tests():
    per_run = pm.per_run_probability_metrics(_frame(_random_runs()))
    scores = compare.score_frame(per_run, "rps", ["KL"])
    assert list(scores.columns) == ["study_id", "task", "method", "seed", "value"]
    assert list(dict.fromkeys(scores["method"])) == ["nominal", "beta", "triangular"]
    result = stats.kruskal_across_methods(scores)
    assert len(result.table) == 1
    with pytest.raises(ValueError, match="column of per_run"):
        compare.score_frame(per_run, "brier")


def test_a_task_without_its_grade_columns_is_refused_and_empty_input_gives_empty_frames():
    frame = _frame(_random_runs()).drop(columns=["p4"])
    with pytest.raises(ValueError, match="p0..p4"):
        pm.per_run_probability_metrics(frame[frame["task"] == "KL"])
    empty = pm.per_run_probability_metrics(frame.iloc[:0])
    assert set(pm.PROBABILITY_METRICS) <= set(empty.columns) and empty.empty
    assert pm.reliability_table(frame.iloc[:0]).empty
    assert pm.probability_summary(empty).empty


def test_every_metric_has_a_label_a_note_and_a_direction():
    assert set(pm.PROBABILITY_LABELS) == set(pm.PROBABILITY_NOTES) == set(pm.PROBABILITY_METRICS)
    assert {"rps", "ece", "ece_cum"} == pm.PROBABILITY_LOWER_IS_BETTER
    for metric, note in pm.PROBABILITY_NOTES.items():
        better = "Lower" if metric in pm.PROBABILITY_LOWER_IS_BETTER else "Higher"
        assert note.endswith(f"{better} is better.")
