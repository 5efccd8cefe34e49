"""Tests for engine.analysis.metrics: hand-computed cases, library cross-checks, batching.

The hand-computed cases check the paper's six metrics by their registry constants; whatever
covers every metric (perfect predictions, empty runs, batching) reads the registry, so a
metric added by record or plug-in (docs/add-a-metric.md) passes these tests unchanged.
"""

import math
import time

import numpy as np
import pytest
import torch
from dlordinal.metrics import amae, minimum_sensitivity, mmae
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, mean_absolute_error

from engine.analysis.metrics import (
    AMAE,
    BA,
    LOWER_IS_BETTER,
    MAE,
    METRIC_LABELS,
    METRICS,
    MMAE,
    MS,
    QWK,
    REGISTRY,
    STATS_METRICS,
    compute_metrics,
    confusion_matrices,
    metrics_from_confusion,
)

# dlordinal's docstring example, J = 4.
HAND_TRUE = [0, 0, 1, 2, 3, 0, 0]
HAND_PRED = [0, 1, 1, 2, 3, 0, 1]


def test_metric_names_are_consistent():
    # The labels and directions cover what the paired statistics compare: the grade metrics
    # and the calibrated ones (the set size).
    assert set(METRIC_LABELS) == set(STATS_METRICS)
    assert set(METRICS) <= set(STATS_METRICS)
    assert LOWER_IS_BETTER.issubset(STATS_METRICS)


def test_confusion_matrices_counts_per_run():
    run = np.array([0, 0, 1, 1, 1])
    true = np.array([0, 1, 1, 1, 2])
    pred = np.array([0, 2, 1, 0, 2])
    cm = confusion_matrices(run, true, pred, n_runs=3, n_classes=3)
    assert cm.shape == (3, 3, 3)
    assert cm.dtype == np.int64
    np.testing.assert_array_equal(cm[0], [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(cm[1], [[0, 0, 0], [1, 1, 0], [0, 0, 1]])
    # A run without rows gets an all-zero matrix rather than disappearing.
    np.testing.assert_array_equal(cm[2], np.zeros((3, 3)))


@pytest.mark.parametrize(
    ("run", "true", "pred"),
    [
        ([0, 0], [0, 1], [0]),  # lengths differ
        ([0, 2], [0, 1], [0, 1]),  # run index out of range
        ([0, 0], [0, 4], [0, 1]),  # grade out of range
        ([0, 0], [0, 1], [-1, 1]),  # negative grade
    ],
)
def test_confusion_matrices_rejects_bad_input(run, true, pred):
    with pytest.raises(ValueError):
        confusion_matrices(np.array(run), np.array(true), np.array(pred), n_runs=2, n_classes=4)


def test_hand_computed_case():
    # Confusion matrix (rows true, columns predicted):
    #   [[2, 2, 0, 0],
    #    [0, 1, 0, 0],
    #    [0, 0, 1, 0],
    #    [0, 0, 0, 1]]
    # MAE  = two errors of distance 1 over 7 samples = 2/7.
    # Per-class MAE = [2/4, 0, 0, 0] -> AMAE = 0.5/4 = 0.125, MMAE = 0.5.
    # Recalls = [2/4, 1, 1, 1] -> MS = 0.5, BA = 3.5/4 = 0.875.
    # QWK: rows n_i = [4, 1, 1, 1], columns m_j = [2, 3, 1, 1], N = 7.
    #   observed sum w*O = 2 (two cells at (i-j)^2 = 1);
    #   sum_ij n_i m_j (i-j)^2 = 4*(3+4+9) + (2+1+4) + (8+3+1) + (18+12+1) = 114,
    #   so sum w*E = 114/7 and QWK = 1 - 2/(114/7) = 1 - 14/114 = 100/114.
    result = compute_metrics(np.array(HAND_TRUE), np.array(HAND_PRED), n_classes=4)
    assert result[MAE] == pytest.approx(2 / 7)
    assert result[AMAE] == pytest.approx(0.125)
    assert result[MMAE] == pytest.approx(0.5)
    assert result[MS] == pytest.approx(0.5)
    assert result[BA] == pytest.approx(0.875)
    assert result[QWK] == pytest.approx(100 / 114)
    assert all(isinstance(value, float) for value in result.values())


def test_perfect_predictions_score_the_best_value_of_every_metric():
    # Diagonal confusion matrix: no error, full sensitivity, QWK = 1.
    result = compute_metrics(np.array([0, 1, 2, 3, 4]), np.array([0, 1, 2, 3, 4]), n_classes=5)
    assert result == {name: REGISTRY[name].best(5) for name in METRICS}
    assert result[QWK] == 1.0 and result[MAE] == 0.0 and result[MS] == 1.0


def test_class_absent_from_test_set_is_dropped():
    # J = 4, grade 2 is never true but is predicted once.
    #   [[1, 0, 1, 0],     class 0: |0-2| = 2 over 2 -> MAE 1,   recall 1/2
    #    [0, 2, 0, 0],     class 1: 0 over 2        -> MAE 0,   recall 1
    #    [0, 0, 0, 0],     class 2: absent          -> dropped
    #    [0, 1, 0, 1]]     class 3: |3-1| = 2 over 2 -> MAE 1,  recall 1/2
    # AMAE = (1 + 0 + 1)/3 = 2/3, MMAE = 1, MS = 1/2, BA = 2/3, MAE = 4/6.
    true = np.array([0, 0, 1, 1, 3, 3])
    pred = np.array([0, 2, 1, 1, 3, 1])
    result = compute_metrics(true, pred, n_classes=4)
    assert result[AMAE] == pytest.approx(2 / 3)
    assert result[MMAE] == pytest.approx(1.0)
    assert result[MS] == pytest.approx(0.5)
    assert result[BA] == pytest.approx(2 / 3)
    assert result[MAE] == pytest.approx(4 / 6)
    # dlordinal sees grade 2 in y_pred, so its matrix is full size and agrees on AMAE/MMAE;
    # sklearn drops the absent class from BA just as we do.
    assert result[AMAE] == pytest.approx(amae(true, pred))
    assert result[MMAE] == pytest.approx(mmae(true, pred))
    with pytest.warns(UserWarning, match="not in y_true"):
        assert result[BA] == pytest.approx(balanced_accuracy_score(true, pred))
    # dlordinal's minimum_sensitivity scores the never-true grade as 0 (documented).
    with pytest.warns(Warning):
        assert minimum_sensitivity(true, pred) == 0.0


def test_class_absent_from_both_keeps_true_grade_distances():
    # Grade 2 appears in neither y_true nor y_pred. The error 3 -> 1 is two grades.
    # Ours: class MAEs [0, 0, -, 2/2] -> AMAE = 1/3, MMAE = 1.
    # dlordinal relabels {0, 1, 3} as {0, 1, 2}, so the same error counts as 1:
    # class MAEs [0, 0, 1/2] -> AMAE = 1/6, MMAE = 0.5. This is the documented difference.
    true = np.array([0, 1, 3, 3])
    pred = np.array([0, 1, 3, 1])
    result = compute_metrics(true, pred, n_classes=4)
    assert result[AMAE] == pytest.approx(1 / 3)
    assert result[MMAE] == pytest.approx(1.0)
    assert amae(true, pred) == pytest.approx(1 / 6)
    assert mmae(true, pred) == pytest.approx(0.5)


def test_qwk_is_nan_when_all_labels_are_one_grade():
    # Expected weighted disagreement is zero: kappa is 0/0, reported as nan (sklearn too).
    result = compute_metrics(np.array([2, 2, 2]), np.array([2, 2, 2]), n_classes=4)
    assert math.isnan(result[QWK])
    with pytest.warns(Warning):
        assert math.isnan(cohen_kappa_score([2, 2, 2], [2, 2, 2], weights="quadratic"))
    # The other metrics remain defined.
    assert result[MAE] == 0.0
    assert result[MS] == 1.0


def test_qwk_is_zero_when_predictions_are_constant_but_wrong():
    # All true 0, all predicted 1: E puts all mass on (0, 1), as does O, so QWK = 1 - 1 = 0.
    result = compute_metrics(np.array([0, 0, 0]), np.array([1, 1, 1]), n_classes=4)
    assert result[QWK] == 0.0


def test_empty_run_gives_nan_everywhere():
    result = metrics_from_confusion(np.zeros((4, 4), dtype=np.int64))
    assert all(math.isnan(value) for value in result.values())


def _random_labels(n_classes: int, seed: int, size: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Imbalanced labels with every grade present in y_true, noisy ordinal predictions."""
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(n_classes))
    true = np.concatenate([np.arange(n_classes), rng.choice(n_classes, size, p=weights)])
    noise = rng.choice([-2, -1, 0, 0, 0, 1, 2], size=true.size)
    pred = np.clip(true + noise, 0, n_classes - 1)
    return true, pred


@pytest.mark.parametrize("n_classes", [4, 5])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_dlordinal_and_sklearn_on_random_data(n_classes, seed):
    true, pred = _random_labels(n_classes, seed)
    result = compute_metrics(true, pred, n_classes=n_classes)
    labels = list(range(n_classes))
    expected = {
        QWK: cohen_kappa_score(true, pred, weights="quadratic", labels=labels),
        MAE: mean_absolute_error(true, pred),
        AMAE: amae(true, pred),
        MMAE: mmae(true, pred),
        MS: minimum_sensitivity(true, pred),
        BA: balanced_accuracy_score(true, pred),
    }
    for name, value in expected.items():  # the paper's six; the registry may hold more
        assert result[name] == pytest.approx(value, rel=1e-12), name


@pytest.mark.parametrize("n_classes", [4, 5])
def test_numpy_and_torch_inputs_agree(n_classes):
    true, pred = _random_labels(n_classes, seed=7)
    rng = np.random.default_rng(7)
    # Probabilities whose argmax is `pred`, as a model's softmax output would be.
    proba = rng.dirichlet(np.ones(n_classes), size=pred.size) * 0.5
    proba[np.arange(pred.size), pred] += 0.5
    from_numpy = compute_metrics(true, proba, n_classes=n_classes)
    from_labels = compute_metrics(true, pred, n_classes=n_classes)
    from_torch = compute_metrics(
        torch.from_numpy(true),
        torch.tensor(proba, dtype=torch.float32, requires_grad=True),
        n_classes=n_classes,
    )
    one_hot_true = torch.nn.functional.one_hot(torch.from_numpy(true), n_classes)
    from_one_hot = compute_metrics(one_hot_true, torch.from_numpy(pred), n_classes=n_classes)
    assert from_numpy == from_labels == from_torch == from_one_hot


def test_float_labels_must_be_whole_numbers():
    assert compute_metrics(np.array([0.0, 1.0]), np.array([0.0, 1.0]), 2)[MAE] == 0.0
    with pytest.raises(ValueError, match="whole numbers"):
        compute_metrics(np.array([0.5, 1.0]), np.array([0, 1]), 2)


@pytest.mark.parametrize("n_classes", [4, 5])
def test_batched_equals_per_run_loop(n_classes):
    rng = np.random.default_rng(n_classes)
    n_runs = 6
    runs, trues, preds = [], [], []
    for run in range(n_runs - 1):  # the last run has no rows at all
        size = int(rng.integers(5, 60))
        true = rng.integers(0, n_classes, size)
        if run == 0:
            true[true == 1] = 0  # grade 1 absent from this run's test set
        runs.append(np.full(size, run))
        trues.append(true)
        preds.append(np.clip(true + rng.integers(-1, 2, size), 0, n_classes - 1))
    run_index = np.concatenate(runs)
    order = rng.permutation(run_index.size)  # rows need not be grouped by run
    cm = confusion_matrices(
        run_index[order],
        np.concatenate(trues)[order],
        np.concatenate(preds)[order],
        n_runs=n_runs,
        n_classes=n_classes,
    )
    batched = metrics_from_confusion(cm)
    for name in METRICS:
        assert batched[name].shape == (n_runs,)
        assert math.isnan(batched[name][-1])
    for run in range(n_runs - 1):
        single = compute_metrics(trues[run], preds[run], n_classes=n_classes)
        for name in METRICS:
            assert batched[name][run] == pytest.approx(single[name], nan_ok=True), (run, name)


def test_two_thousand_runs_are_fast():
    # The compare page scores ~2,000 runs / 1.5 M rows per render; budget well under 1 s.
    rng = np.random.default_rng(0)
    n_rows, n_runs = 1_500_000, 2_000
    run_index = rng.integers(0, n_runs, n_rows)
    true = rng.integers(0, 5, n_rows)
    pred = rng.integers(0, 5, n_rows)
    start = time.perf_counter()
    metrics = metrics_from_confusion(confusion_matrices(run_index, true, pred, n_runs, 5))
    elapsed = time.perf_counter() - start
    assert all(values.shape == (n_runs,) for values in metrics.values())
    assert elapsed < 0.5


def test_weighted_rows_count_like_repeated_rows():
    run = np.array([0, 0, 1])
    yt = np.array([1, 2, 0])
    yp = np.array([1, 0, 0])
    n = np.array([3, 2, 4])
    expected = confusion_matrices(
        np.repeat(run, n), np.repeat(yt, n), np.repeat(yp, n), n_runs=2, n_classes=3
    )
    weighted = confusion_matrices(run, yt, yp, n_runs=2, n_classes=3, weights=n)
    np.testing.assert_array_equal(weighted, expected)
