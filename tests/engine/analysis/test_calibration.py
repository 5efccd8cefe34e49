"""ECE's interval and calibrated floor, and temperature scaling, on probabilities with a
known calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis import calibration
from engine.analysis import probability_metrics as pm


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _frame(sharpen: float, n_films: int = 600, n_seeds: int = 3, seed: int = 0) -> pd.DataFrame:
    """CPPD runs whose true grade is drawn from softmax(z) and whose stored probabilities are
    softmax(sharpen · z): calibrated for sharpen = 1, overconfident above."""
    rng = np.random.default_rng(seed)
    parts = []
    for s in range(n_seeds):
        z = rng.normal(0, 1.5, size=(n_films, 4))
        truth = _softmax(z)
        y = np.array([rng.choice(4, p=p) for p in truth])
        probs = _softmax(sharpen * z)
        parts.append(
            pd.DataFrame(
                {
                    "run_id": f"r{s}",
                    "task": "CPPD",
                    "method": "beta",
                    "seed": s,
                    "y_true": y,
                    "y_pred": probs.argmax(axis=1),
                    **{f"p{g}": probs[:, g] for g in range(4)},
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_ece_is_the_probability_tab_s_mean_over_seeds():
    frame = _frame(2.0)
    table = calibration.ece_uncertainty(frame, n_boot=50, n_floor=50)
    per_run = pm.per_run_probability_metrics(frame)
    assert table["ece"].iloc[0] == pytest.approx(per_run["ece"].mean())
    assert table["ci_low"].iloc[0] < table["ece"].iloc[0] < table["ci_high"].iloc[0]


def test_a_calibrated_model_scores_about_its_floor_and_an_overconfident_one_above():
    calibrated = calibration.ece_uncertainty(_frame(1.0), n_boot=50, n_floor=200).iloc[0]
    assert calibrated["floor"] > 0.01  # finite films: even perfect calibration scores > 0
    assert abs(calibrated["excess"]) < 0.02
    overconfident = calibration.ece_uncertainty(_frame(3.0), n_boot=50, n_floor=200).iloc[0]
    assert overconfident["excess"] > 0.05
    assert overconfident["ci_low"] > overconfident["floor_high"]


def test_fit_temperature_recovers_a_known_sharpening():
    frame = _frame(2.0, n_films=4000, n_seeds=1, seed=1)
    probs, y = pm.task_arrays(frame, "CPPD")
    assert calibration.fit_temperature(probs, y) == pytest.approx(2.0, rel=0.1)
    assert calibration.fit_temperature(probs[:0], y[:0]) == 1.0


def test_scaling_keeps_the_predicted_grade():
    probs = _softmax(np.random.default_rng(2).normal(size=(50, 5)))
    out = calibration.scaled(probs, 1.7)
    assert np.allclose(out.sum(axis=1), 1) and (out.argmax(axis=1) == probs.argmax(axis=1)).all()
    assert calibration.scaled(probs, 1.0) == pytest.approx(probs)


def test_temperature_scaling_on_validation_films_lowers_test_ece():
    val, test = _frame(2.5, seed=3), _frame(2.5, seed=4)
    table = calibration.temperature_scaling(val, test)
    assert len(table) == 3
    assert (table["temperature"] > 1.8).all()
    assert (table["ece_after"] < table["ece_before"]).all()
    assert (table["rps_after"] < table["rps_before"]).all()
