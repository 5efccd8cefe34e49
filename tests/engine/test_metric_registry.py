"""One test over the whole metric registry: every metric against an oracle.

As scikit-learn checks every scorer of its registry in one place
(sklearn/metrics/tests/test_common.py), each registered metric is checked here for its
declared direction and range: its values on random predictions lie in the range and agree
with an oracle (scikit-learn, or a hand computation where scikit-learn has none), perfect
predictions reach the best end of the range, and worse predictions score worse in the
declared direction. A metric added to the registry is covered without a new test, as long as
it has an oracle: below for a built-in metric, or an ``ORACLE`` beside ``METRIC`` in a
plug-in's module (tests/helpers/metric_plugin/); the test says so when one is missing. Run
with ``SOFTGRADE_METRIC_PACKAGES=tests.helpers.metric_plugin`` these tests cover its metric
too (tests/engine/test_metric_plugins.py does).
"""

from __future__ import annotations

import ast
import math
import sys
import tokenize
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, mean_absolute_error

from engine.analysis import conformal, metrics, paired
from engine.analysis.metrics import (
    FROM_CALIBRATION,
    FROM_CONFUSION,
    FROM_PROBABILITIES,
    HIGHER,
    LOWER,
    REGISTRY,
    Metric,
    UnknownMetricError,
    get_metric,
)
from engine.analysis.probability_scores import N_BINS, CalibratedBatch, ProbabilityBatch
from store.db import connect

ROOT = Path(__file__).resolve().parents[2]
GRADE_COUNTS = (3, 4, 5)  # CPPD has 4 grades, KL 5; 3 for an odd small case


# --------------------------------------------------------------------------------------------
# Oracles: one per registered metric, on (y_true, y_pred) or (y_true, probs) of one run
# --------------------------------------------------------------------------------------------


def _per_class_mae(y_true: np.ndarray, y_pred: np.ndarray) -> list[float]:
    return [float(np.abs(y_pred[y_true == k] - k).mean()) for k in np.unique(y_true)]


def _per_class_recall(y_true: np.ndarray, y_pred: np.ndarray) -> list[float]:
    return [float((y_pred[y_true == k] == k).mean()) for k in np.unique(y_true)]


def _qwk(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> float:
    labels = list(range(n_classes))
    return float(cohen_kappa_score(y_true, y_pred, labels=labels, weights="quadratic"))


GRADE_ORACLES: dict[str, Callable[[np.ndarray, np.ndarray, int], float]] = {
    metrics.QWK: _qwk,
    metrics.MAE: lambda t, p, _: float(mean_absolute_error(t, p)),
    metrics.AMAE: lambda t, p, _: float(np.mean(_per_class_mae(t, p))),
    metrics.MMAE: lambda t, p, _: max(_per_class_mae(t, p)),
    metrics.MS: lambda t, p, _: min(_per_class_recall(t, p)),
    metrics.BA: lambda t, p, _: float(balanced_accuracy_score(t, p)),
}


def _rps(y_true: np.ndarray, probs: np.ndarray) -> float:
    """Janitza et al. 2016, one film at a time, with explicit sums."""
    scores = []
    for y, p in zip(y_true, probs, strict=True):
        total = 0.0
        for j in range(len(p)):
            predicted = sum(p[: j + 1])
            observed = 1.0 if y <= j else 0.0
            total += (predicted - observed) ** 2
        scores.append(total)
    return float(np.mean(scores))


def _binned_ece(confidence: np.ndarray, hit: np.ndarray) -> float:
    """Guo et al. 2017 with scikit-learn's bins: [0, .1], (.1, .2], ..., (.9, 1]."""
    bins = np.clip(np.ceil(confidence * N_BINS).astype(int) - 1, 0, N_BINS - 1)
    total = 0.0
    for b in range(N_BINS):
        inside = bins == b
        if inside.any():
            total += inside.mean() * abs(hit[inside].mean() - confidence[inside].mean())
    return total


def _top_ece(y_true: np.ndarray, probs: np.ndarray) -> float:
    return _binned_ece(probs.max(axis=1), probs.argmax(axis=1) == y_true)


def _cumulative_ece(y_true: np.ndarray, probs: np.ndarray) -> float:
    thresholds = range(probs.shape[1] - 1)
    return float(
        np.mean(
            [
                _binned_ece(np.clip(probs[:, k + 1 :].sum(axis=1), 0, 1), y_true > k)
                for k in thresholds
            ]
        )
    )


def _unimodal(y_true: np.ndarray, probs: np.ndarray) -> float:
    def single_peak(p: np.ndarray) -> bool:
        peak = int(np.argmax(p))
        rising = all(p[i] <= p[i + 1] + 1e-6 for i in range(peak))
        falling = all(p[i] >= p[i + 1] - 1e-6 for i in range(peak, len(p) - 1))
        return rising and falling

    return float(np.mean([single_peak(p) for p in probs]))


PROBABILITY_ORACLES: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    metrics.RPS: _rps,
    metrics.ECE: _top_ece,
    metrics.ECE_CUM: _cumulative_ece,
    metrics.UNIMODAL: _unimodal,
    metrics.WITHIN1: lambda t, p: float(np.mean(np.abs(p.argmax(axis=1) - t) <= 1)),
}


def _tail_score(film: np.ndarray, grade: int) -> float:
    """The cumulative score by its definition: the larger predicted mass beyond ``grade``."""
    return max(float(sum(film[:grade])), float(sum(film[grade + 1 :])))


def _set_size_by_hand(cal_y, cal_probs, y_true, probs) -> float:
    """Split conformal by its written definition, one film and grade at a time: the
    ceil((n + 1) 0.9)-th smallest validation score, every grade within it plus the best, the
    range between them filled."""
    assert conformal.SET_SIZE_SCORE == "cumulative"  # the score written out above
    own = sorted(_tail_score(f, int(y)) for f, y in zip(cal_probs, cal_y, strict=True))
    rank = math.ceil((len(own) + 1) * conformal.SET_SIZE_COVERAGE - 1e-9)
    limit = own[rank - 1] if rank <= len(own) else math.inf
    sizes = []
    for film in probs:
        scores = [_tail_score(film, g) for g in range(len(film))]
        inside = {g for g, s in enumerate(scores) if s <= limit + 1e-9}
        inside.add(int(np.argmin(scores)))
        sizes.append(max(inside) - min(inside) + 1)
    return float(np.mean(sizes))


#: The metrics calibrated on validation films, on (calibration, test) halves of one run.
CALIBRATED_ORACLES: dict[str, Callable[..., float]] = {metrics.SET_SIZE: _set_size_by_hand}


def _halves(y_true: np.ndarray, probs: np.ndarray) -> tuple:
    """A run's even films as its validation films, its odd ones as its test films."""
    return y_true[::2], probs[::2], y_true[1::2], probs[1::2]


def _score(metric: Metric, y_true: np.ndarray, probs: np.ndarray) -> float:
    """The registry's value of ``metric`` on one run, through its declared kind of input."""
    n_classes = probs.shape[1]
    if metric.kind == FROM_CONFUSION:
        cm = np.zeros((1, n_classes, n_classes))
        np.add.at(cm[0], (y_true, probs.argmax(axis=1)), 1)
        return float(metric.function(cm)[0])
    if metric.kind == FROM_CALIBRATION:
        cal_y, cal_probs, test_y, test_probs = _halves(y_true, probs)
        batch = CalibratedBatch.one_run(cal_probs, cal_y, test_probs, test_y)
        return float(metric.function(batch)[0])
    return float(metric.function(ProbabilityBatch.one_run(probs, y_true))[0])


def _plugin_oracle(metric: Metric) -> Callable[[np.ndarray, np.ndarray], float] | None:
    """A plug-in's own oracle: ``ORACLE(y_true, probs)`` in the module of its function."""
    return getattr(sys.modules.get(metric.function.__module__), "ORACLE", None)


def _oracle(metric: Metric, y_true: np.ndarray, probs: np.ndarray) -> float:
    if metric.name in GRADE_ORACLES:
        return GRADE_ORACLES[metric.name](y_true, probs.argmax(axis=1), probs.shape[1])
    if metric.name in PROBABILITY_ORACLES:
        return PROBABILITY_ORACLES[metric.name](y_true, probs)
    if metric.name in CALIBRATED_ORACLES:
        return CALIBRATED_ORACLES[metric.name](*_halves(y_true, probs))
    oracle = _plugin_oracle(metric)
    assert oracle is not None, metric.name
    return oracle(y_true, probs)


def _random_run(rng: np.random.Generator, n_classes: int, n: int = 60) -> tuple:
    """Every grade present in ``y_true``, probabilities from a Dirichlet (some peaked)."""
    y_true = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)])
    probs = rng.dirichlet(np.full(n_classes, rng.choice([0.3, 1.0, 3.0])), size=n)
    return y_true, probs


def _one_hot(grades: np.ndarray, n_classes: int) -> np.ndarray:
    return np.eye(n_classes)[grades]


# --------------------------------------------------------------------------------------------
# The registry as a whole
# --------------------------------------------------------------------------------------------


def test_every_registered_metric_has_an_oracle():
    missing = {
        name
        for name, metric in REGISTRY.items()
        if name not in GRADE_ORACLES
        and name not in PROBABILITY_ORACLES
        and name not in CALIBRATED_ORACLES
        and _plugin_oracle(metric) is None
    }
    assert not missing, (
        f"add an oracle for {sorted(missing)} to this test (a built-in metric) or as ORACLE "
        "beside its METRIC (a plug-in)"
    )


@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("n_classes", GRADE_COUNTS)
def test_a_metric_agrees_with_its_oracle_and_stays_in_its_range(name, n_classes):
    metric = get_metric(name)
    low, high = metric.bounds(n_classes)
    rng = np.random.default_rng([n_classes, len(name)])
    for _ in range(20):
        y_true, probs = _random_run(rng, n_classes)
        value = _score(metric, y_true, probs)
        assert value == pytest.approx(_oracle(metric, y_true, probs), abs=1e-9)
        assert low - 1e-12 <= value <= high + 1e-12


@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("n_classes", GRADE_COUNTS)
def test_perfect_predictions_reach_the_best_end_of_the_range(name, n_classes):
    metric = get_metric(name)
    # Eight films a grade: a calibrated metric's half (12+ films) is enough for a finite
    # 90 % threshold (9 films), below which its set is every grade whatever the model.
    y_true = np.repeat(np.arange(n_classes), 8)
    perfect = _score(metric, y_true, _one_hot(y_true, n_classes))
    assert perfect == pytest.approx(metric.best(n_classes))


@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("n_classes", GRADE_COUNTS)
def test_worse_predictions_score_worse_in_the_declared_direction(name, n_classes):
    metric = get_metric(name)
    y_true = np.repeat(np.arange(n_classes), 8)
    perfect = _score(metric, y_true, _one_hot(y_true, n_classes))
    # Every film sure of a grade far from its own: wrong, far and confident, but still one
    # peak, so it does not hurt the unimodal share.
    farthest = np.where(y_true < n_classes / 2, n_classes - 1, 0)
    far = _score(metric, y_true, _one_hot(farthest, n_classes))
    # Half the mass on each end grade: two peaks, and mostly wrong.
    bimodal = np.full((len(y_true), n_classes), 0.0)
    bimodal[:, 0] = bimodal[:, -1] = 0.5
    split = _score(metric, y_true, bimodal)
    worse = [far, split] if name != metrics.UNIMODAL else [split]
    for value in worse:
        if metric.direction == LOWER:
            assert value > perfect
        else:
            assert metric.direction == HIGHER
            assert value < perfect


@pytest.mark.parametrize("n_classes", GRADE_COUNTS)
def test_grade_counts_reach_every_grade_when_the_model_is_sure_and_wrong(n_classes):
    # A model sure of the farthest grade: its validation films' true grades score 1, so the
    # threshold lets every grade in and the set size is J, the declared high end.
    y_true = np.zeros(40, dtype=np.int64)  # 20 validation films: a finite threshold
    far = _one_hot(np.full(40, n_classes - 1), n_classes)
    counted = [m for m in REGISTRY.values() if m.counts_grades]
    assert counted
    for metric in counted:
        assert _score(metric, y_true, far) == pytest.approx(metric.bounds(n_classes)[1])


@pytest.mark.parametrize("n_classes", GRADE_COUNTS)
def test_grade_scaled_ranges_are_reached_at_the_far_end(n_classes):
    # MAE, AMAE, MMAE and RPS reach J − 1 when every film is sure of the farthest grade.
    y_true = np.zeros(6, dtype=np.int64)
    far = _one_hot(np.full(6, n_classes - 1), n_classes)
    for metric in REGISTRY.values():
        if metric.scales_with_grades:
            assert _score(metric, y_true, far) == pytest.approx(n_classes - 1), metric.name


def test_an_unknown_metric_name_is_an_error_listing_the_valid_names():
    with pytest.raises(UnknownMetricError) as caught:
        get_metric("accuracy")
    message = str(caught.value)
    assert "'accuracy'" in message
    for name in REGISTRY:
        assert name in message
    assert "softgrade metrics" in message
    assert isinstance(caught.value, ValueError)  # the CLI and pages catch ValueError


def test_the_derived_views_follow_the_registry():
    confusion = [m.name for m in REGISTRY.values() if m.kind == FROM_CONFUSION]
    probability = [m.name for m in REGISTRY.values() if m.kind == FROM_PROBABILITIES]
    calibrated = [m.name for m in REGISTRY.values() if m.kind == FROM_CALIBRATION]
    assert list(metrics.METRICS) == confusion
    assert list(metrics.PROBABILITY_METRICS) == probability
    assert list(metrics.CALIBRATED_METRICS) == calibrated
    assert list(metrics.STATS_METRICS) == confusion + calibrated
    compared = confusion + calibrated
    assert {n for n in compared if REGISTRY[n].direction == LOWER} == metrics.LOWER_IS_BETTER
    assert {
        n for n in probability if REGISTRY[n].direction == LOWER
    } == metrics.PROBABILITY_LOWER_IS_BETTER
    assert {n: REGISTRY[n].label for n in compared} == metrics.METRIC_LABELS
    assert {n: REGISTRY[n].meaning for n in probability} == metrics.PROBABILITY_NOTES


def test_table_4_orders_the_papers_six_metrics_of_the_confusion_counts():
    # The paper's Table 4 (QWK, MAE, MS, BA, AMAE, MMAE): its metrics only. A metric added
    # later joins METRICS and every table, but not the paper's column order.
    paper = {metrics.QWK, metrics.MAE, metrics.MS, metrics.BA, metrics.AMAE, metrics.MMAE}
    assert set(metrics.PAPER_TABLE_ORDER) == paper
    assert len(metrics.PAPER_TABLE_ORDER) == len(paper)
    assert paper <= set(metrics.METRICS)


def test_primary_and_selection_metrics_are_registered_and_declared_once():
    assert metrics.PRIMARY_METRIC in metrics.METRICS
    assert metrics.SELECTION_METRIC in metrics.METRICS
    assert paired.PRIMARY_METRIC is metrics.PRIMARY_METRIC


def test_the_selection_column_is_a_stored_column_of_runs_and_epochs(store):
    # store/ reads no engine module, so this holds the registry and the schema together:
    # choosing another selection metric needs its val_<metric> column in the schema.
    with connect(store, read_only=True) as con:
        for table in ("runs", "epoch_metrics"):
            columns = {row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()}
            assert metrics.SELECTION_COLUMN in columns, table


def test_a_metric_record_refuses_an_unknown_direction_or_kind():
    fields = dict(name="x", label="X", range=(0.0, 1.0), function=lambda cm: cm, meaning="x")
    with pytest.raises(ValueError, match="direction"):
        Metric(direction="up", kind=FROM_CONFUSION, **fields)
    with pytest.raises(ValueError, match="kind"):
        Metric(direction=HIGHER, kind="logits", **fields)


# --------------------------------------------------------------------------------------------
# Nothing outside the registry spells a metric's name
# --------------------------------------------------------------------------------------------

# engine/methods holds method names, one of which ("qwk", the QWK loss) is also a metric's.
REGISTRIES = {Path("engine/analysis/metrics.py")}
SKIPPED_FOLDERS = {Path("engine/methods")}


def _python_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("engine", "store", "jobs", "pages"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return [
        f
        for f in files
        if f.relative_to(ROOT) not in REGISTRIES
        and not any(f.relative_to(ROOT).is_relative_to(s) for s in SKIPPED_FOLDERS)
    ]


def test_no_module_spells_a_metric_name_outside_the_registry():
    spelled = []
    for path in _python_files():
        with path.open("rb") as handle:
            for token in tokenize.tokenize(handle.readline):
                if token.type != tokenize.STRING:
                    continue
                try:
                    value = ast.literal_eval(token.string)
                except (ValueError, SyntaxError):  # f-strings and the like
                    continue
                if isinstance(value, str) and value in REGISTRY:
                    spelled.append(f"{path.relative_to(ROOT)}:{token.start[0]} {value!r}")
    assert not spelled, "use engine.analysis.metrics' constants:\n" + "\n".join(spelled)
