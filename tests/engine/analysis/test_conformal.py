"""Conformal grade sets: each score and set against a brute-force definition, the finite-sample
quantile, and coverage on exchangeable synthetic probabilities."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.analysis import conformal


def _dirichlet(n: int, j: int, seed: int, concentration: float = 0.7) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(j, concentration), size=n)


def _brute_score(p: list[float], y: int, name: str) -> float:
    """Each score from its written definition, one film and one grade at a time."""
    j = len(p)
    if name == "lac":
        return 1 - p[y]
    if name == "aps":  # the own grade's mass counted half (APS's u fixed at 1/2)
        return sum(p[k] for k in range(j) if p[k] > p[y]) + p[y] / 2
    if name == "cumulative":
        return max(sum(p[:y]), sum(p[y + 1 :]))
    # ordinal: grow a range from the mode, the more likely neighbour (lower on a tie) first
    lo = hi = max(range(j), key=lambda k: (p[k], -k))
    before = 0.0  # the range's mass before y joins it
    while not lo <= y <= hi:
        before += p[lo] if lo == hi else 0.0
        left = p[lo - 1] if lo > 0 else -1.0
        right = p[hi + 1] if hi < j - 1 else -1.0
        if left >= right:
            lo -= 1
            joined = p[lo]
        else:
            hi += 1
            joined = p[hi]
        if not lo <= y <= hi:
            before += joined
    return before + p[y] / 2


def _brute_set(p: list[float], limits: list[float], name: str) -> list[int]:
    j = len(p)
    scores = [_brute_score(p, y, name) for y in range(j)]
    chosen = {y for y in range(j) if scores[y] <= limits[y] + conformal.TOLERANCE}
    chosen.add(min(range(j), key=lambda y: (scores[y], y)))
    if conformal.SCORES[name].ordinal:
        chosen = set(range(min(chosen), max(chosen) + 1))
    return sorted(chosen)


@pytest.mark.parametrize("name", list(conformal.SCORES))
@pytest.mark.parametrize("j", [4, 5])
def test_scores_match_their_brute_force_definition(name: str, j: int) -> None:
    probs = _dirichlet(200, j, seed=j)
    matrix = conformal.SCORES[name].scores(probs)
    for i, p in enumerate(probs.tolist()):
        for y in range(j):
            assert matrix[i, y] == pytest.approx(_brute_score(p, y, name), abs=1e-12)


@pytest.mark.parametrize("name", list(conformal.SCORES))
@pytest.mark.parametrize("per_grade", [False, True])
def test_sets_match_their_brute_force_definition(name: str, per_grade: bool) -> None:
    cal = _dirichlet(300, 5, seed=1)
    y = np.random.default_rng(2).integers(0, 5, 300)
    limits = conformal.calibrate(cal, y, score=name, coverage=0.8, per_grade=per_grade)
    probs = _dirichlet(200, 5, seed=3)
    sets = conformal.predict_sets(probs, limits, score=name)
    for i, p in enumerate(probs.tolist()):
        assert np.flatnonzero(sets[i]).tolist() == _brute_set(p, limits.tolist(), name)


@pytest.mark.parametrize("name", list(conformal.SCORES))
@pytest.mark.parametrize("per_grade", [False, True])
def test_a_model_sure_of_the_right_grade_gets_single_grades(name: str, per_grade: bool) -> None:
    """A model that puts all its probability on the recorded grade is the sharpest there is:
    its sets are that one grade (counting the own grade's whole mass, APS-type scores gave
    it every grade: the threshold and every grade's score were both 1)."""
    y = np.random.default_rng(5).integers(0, 5, 300)
    sure = np.eye(5)[y]
    limits = conformal.calibrate(sure, y, score=name, coverage=0.9, per_grade=per_grade)
    sets = conformal.predict_sets(sure, limits, score=name)
    assert (sets.sum(axis=1) == 1).all() and sets[np.arange(300), y].all()


@pytest.mark.parametrize("name", ["ordinal", "cumulative"])
def test_ordinal_scores_give_ranges_even_with_per_grade_thresholds(name: str) -> None:
    cal = _dirichlet(400, 5, seed=4)
    y = np.random.default_rng(5).integers(0, 5, 400)
    limits = conformal.calibrate(cal, y, score=name, coverage=0.9, per_grade=True)
    sets = conformal.predict_sets(_dirichlet(500, 5, seed=6), limits, score=name)
    assert conformal.set_summary(sets, np.zeros(500, dtype=int))["range_share"] == 1.0
    assert sets.any(axis=1).all()


def test_quantile_is_the_finite_sample_rank() -> None:
    scores = np.arange(1, 11, dtype=float)  # n = 10
    # ceil(11 · 0.9) = 10 -> the largest; ceil(11 · 0.5) = 6 -> the sixth
    assert conformal.conformal_quantile(scores, 0.9) == 10
    assert conformal.conformal_quantile(scores, 0.5) == 6
    # ceil(11 · 0.95) = 11 > 10: too few films for 95 %, every grade is in
    assert conformal.conformal_quantile(scores, 0.95) == math.inf
    assert conformal.conformal_quantile(np.array([]), 0.9) == math.inf
    for coverage in (0.1, 0.37, 0.8, 0.9):
        q = conformal.conformal_quantile(scores, coverage)
        # the smallest score with at least (n + 1)(1 − α) scores at or below it
        assert (scores <= q).sum() >= (scores.size + 1) * coverage - 1e-9
        assert (scores < q).sum() < (scores.size + 1) * coverage


def test_bad_score_and_coverage_are_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="lac, aps, ordinal, cumulative"):
        conformal.get_score("nope")
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="between 0 and 1"):
            conformal.check_coverage(bad)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _draw(rng: np.random.Generator, n: int, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Ordinal-looking films: a latent grade, a model that is overconfident (sharpened), and
    true grades drawn from the unsharpened distribution, so calibration matters."""
    centre = rng.uniform(-0.5, j - 0.5, size=n)
    logits = -((np.arange(j)[None, :] - centre[:, None]) ** 2)
    truth = _softmax(logits)
    y = (rng.random(n)[:, None] > truth.cumsum(axis=1)).sum(axis=1)
    return _softmax(2.5 * logits), np.minimum(y, j - 1)


@pytest.mark.parametrize("name", list(conformal.SCORES))
def test_coverage_on_exchangeable_draws_is_at_least_nominal_on_average(name: str) -> None:
    rng = np.random.default_rng(7)
    coverage, n_cal, reps = 0.9, 100, 150
    hits, per_grade_hits = [], []
    for _ in range(reps):
        cal_p, cal_y = _draw(rng, n_cal, 5)
        test_p, test_y = _draw(rng, 400, 5)
        limits = conformal.calibrate(cal_p, cal_y, score=name, coverage=coverage)
        hits.append(
            conformal.set_summary(conformal.predict_sets(test_p, limits, score=name), test_y)[
                "coverage"
            ]
        )
        limits = conformal.calibrate(cal_p, cal_y, score=name, coverage=coverage, per_grade=True)
        summary = conformal.set_summary(conformal.predict_sets(test_p, limits, score=name), test_y)
        per_grade_hits.append([summary[f"coverage_g{g}"] for g in range(5)])
    # Monte-Carlo standard error of the mean over 150 draws is about 0.0025
    assert np.mean(hits) >= coverage - 0.008
    # a marginal threshold is close to nominal, not trivially the full set
    assert np.mean(hits) <= coverage + 1 / (n_cal + 1) + 0.03
    per_grade = np.nanmean(np.array(per_grade_hits), axis=0)
    assert (per_grade >= coverage - 0.02).all(), per_grade


def _frame(probs: np.ndarray, y: np.ndarray, run: str, method: str, seed: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": run,
            "task": "KL",
            "method": method,
            "seed": seed,
            "y_true": y,
            **{f"p{g}": probs[:, g] for g in range(probs.shape[1])},
        }
    )


def test_run_sets_calibrates_each_run_on_its_own_validation_films() -> None:
    rng = np.random.default_rng(8)
    val, test = [], []
    for s in range(2):
        for method in ("nominal", "beta"):
            run = f"{method}-{s}"
            val.append(_frame(*_draw(rng, 150, 5), run, method, s))
            test.append(_frame(*_draw(rng, 200, 5), run, method, s))
    test.append(_frame(*_draw(rng, 50, 5), "no-val", "nominal", 9))  # nothing to calibrate on
    per_run = conformal.run_sets(pd.concat(val), pd.concat(test), coverage=0.8)
    assert set(per_run["run_id"]) == {"nominal-0", "nominal-1", "beta-0", "beta-1"}
    assert len(per_run) == 4 * len(conformal.SCORES)
    assert (per_run["n_cal"] == 150).all()
    summary = conformal.method_summary(per_run)
    assert len(summary) == 2 * len(conformal.SCORES)
    assert (summary["n_seeds"] == 2).all()
    assert summary["mean_size"].between(1, 5).all()
    assert (summary.loc[summary["score"].isin(["ordinal", "cumulative"]), "range_share"] == 1).all()


def test_ensemble_range_covers_every_seed_set_and_reads_in_words() -> None:
    probs = np.array([[0.05, 0.6, 0.3, 0.05, 0.0], [0.0, 0.1, 0.5, 0.35, 0.05]])
    limits = np.full((2, 5), 0.85)
    lo, hi = conformal.ensemble_range(probs, limits, score="ordinal")
    assert (lo, hi) == (1, 3)
    assert conformal.range_words(2, 3, "KL", 0.9) == "likely range KL 2–3 at 90 %"
    assert conformal.range_words(2, 2, "KL", 0.9) == "likely KL 2 at 90 %"
    # Every grade is no finding: said so, not offered as a range.
    assert conformal.range_words(0, 4, "KL", 0.9) == (
        "any grade KL 0–4 at 90 %: the models cannot narrow it"
    )
    assert conformal.range_words(0, 3, "CPPD", 0.9).startswith("any grade CPPD 0–3")
    assert conformal.range_words(0, 3, "KL", 0.9) == "likely range KL 0–3 at 90 %"
