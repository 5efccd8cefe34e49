"""`softgrade stats --metric set_size`: the conformal set size compared like any metric,
calibrated on each run's validation films, and one clear line for a study without them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis import conformal
from engine.analysis.metrics import (
    AMAE,
    CALIBRATED_METRICS,
    METRICS,
    SET_SIZE,
    compute_metrics,
    get_metric,
)
from jobs.services import study_analysis
from store import runs as store_runs
from store.db import connect, init_schema
from tests.helpers.cli import run_cli
from tests.helpers.synthetic_study import write_synthetic_study


@pytest.fixture
def study(tmp_path):
    """3 seeds of 3 methods; 60 patients, so each run has ~24 validation films (a finite
    90 % threshold needs 9)."""
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    return store, write_synthetic_study(store, n_seeds=3, n_patients=60)


def _brute_force_sizes(store, study_id: str) -> dict[str, float]:
    """Each selected run's mean set size, one run at a time through its own predictions and
    engine/analysis/conformal.py's calibrate and predict_sets."""
    runs = store_runs.list_runs([study_id], path=store)
    sizes = {}
    for run in runs[runs["selected"]].itertuples():
        films = store_runs.run_predictions(run.run_id, path=store)
        val, test = films[films["split"] == "val"], films[films["split"] == "test"]
        limits = conformal.calibrate(
            np.stack(val["probs"]),
            val["y_true"].to_numpy(),
            score=conformal.SET_SIZE_SCORE,
            coverage=conformal.SET_SIZE_COVERAGE,
        )
        score = conformal.SET_SIZE_SCORE
        sets = conformal.predict_sets(np.stack(test["probs"]), limits, score=score)
        sizes[run.run_id] = float(sets.sum(axis=1).mean())
    return sizes


def test_the_set_size_of_each_run_is_split_conformal_on_its_own_validation_films(study):
    store, study_id = study
    expected = _brute_force_sizes(store, study_id)
    got = study_analysis.calibrated_per_run([study_id], path=store).set_index("run_id")
    assert set(got.index) == set(expected)
    for run_id, size in expected.items():
        assert got.loc[run_id, SET_SIZE] == pytest.approx(size, abs=1e-9)
    assert (got["n_cal"] >= 9).all()
    # Not a constant: the synthetic methods differ in how often they miss, so do their sets.
    assert got[SET_SIZE].nunique() > 1
    assert (got[SET_SIZE] >= 1).all() and (got[SET_SIZE] <= 5).all()


def test_stats_compares_the_methods_on_set_size_from_the_command_line(study, tmp_path):
    store, study_id = study
    out = tmp_path / "set_size.csv"
    done = run_cli(tmp_path, "stats", study_id, "--metric", "SET_SIZE", "-o", str(out))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out, comment="#")
    assert set(table["metric"]) == {SET_SIZE}
    assert len(table) == 2 * 3  # tasks × pairs of 3 methods
    # The mean paired difference is the mean over seeds of the brute-force sizes' differences.
    sizes = pd.Series(_brute_force_sizes(store, study_id))
    runs = store_runs.list_runs([study_id], path=store).set_index("run_id").loc[sizes.index]
    by_seed = runs.assign(size=sizes).pivot_table(
        index=["task", "seed"], columns="method", values="size"
    )
    for row in table.itertuples():
        part = by_seed.loc[row.task]
        expected = (part[row.method_a] - part[row.method_b]).mean()
        assert row.mean_diff == pytest.approx(expected, abs=1e-9)
    assert table["boot_ci_low"].isna().all()  # no film bootstrap of a calibrated metric
    printed = run_cli(tmp_path, "stats", study_id, "--metric", "set_size", "--bootstrap", "0")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.count(f" {SET_SIZE} ") == 2 * 3
    assert "90 % coverage" in printed.stdout  # its coverage is said beside it


def test_stats_by_default_compares_every_metric_set_size_included(study, tmp_path):
    _, study_id = study
    out = tmp_path / "paired.csv"
    done = run_cli(tmp_path, "stats", study_id, "-o", str(out), "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out, comment="#")
    assert list(dict.fromkeys(table["metric"])) == [*METRICS, *CALIBRATED_METRICS]


def test_a_study_without_validation_predictions_says_so_in_one_line(study, tmp_path):
    store, study_id = study
    with connect(store) as con:  # as results imported with test films only leave a study
        con.execute("DELETE FROM predictions WHERE split = 'val'")
    refused = run_cli(tmp_path, "stats", study_id, "--metric", SET_SIZE)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert get_metric(SET_SIZE).label in refused.stderr and "not available" in refused.stderr
    assert "validation predictions" in refused.stderr
    # Every metric: the grade metrics are compared, and a note says why set size is not.
    plain = run_cli(tmp_path, "stats", study_id, "--bootstrap", "0")
    assert plain.returncode == 0, plain.stderr
    assert f" {SET_SIZE} " not in plain.stdout.split("\n\n", 1)[0]
    assert plain.stdout.count("not available") == 1


def _per_film_file(path, rng: np.random.Generator) -> pd.DataFrame:
    """Per-film KL predictions from another tool: 2 methods × 3 seeds, 30 validation and 30
    test films each; "sharp" puts more mass on the recorded grade than "blunt"."""
    rows = []
    for method, peak in (("sharp", 6.0), ("blunt", 1.5)):
        for seed in range(3):
            for i in range(60):
                grade = int(rng.integers(0, 5))
                probs = rng.dirichlet(np.ones(5))
                probs[grade] += peak * rng.random()
                probs /= probs.sum()
                rows.append(
                    {"task": "KL", "method": method, "seed": seed, "film": f"s{seed}f{i}",
                     "grade": grade, "split": "val" if i < 30 else "test",
                     **{f"p{g}": probs[g] for g in range(5)}}
                )  # fmt: skip
    frame = pd.DataFrame(rows)
    frame.to_csv(path, index=False)
    return frame


def test_an_imported_study_with_validation_films_gets_its_set_size(tmp_path):
    files = _per_film_file(tmp_path / "other.csv", np.random.default_rng(3))
    done = run_cli(tmp_path, "import-results", str(tmp_path / "other.csv"))
    assert done.returncode == 0, done.stderr
    study_id = done.stdout.split("(", 1)[1].split(")", 1)[0]
    out = tmp_path / "set_size.csv"
    stats = run_cli(tmp_path, "stats", study_id, "--metric", SET_SIZE, "-o", str(out))
    assert stats.returncode == 0, stats.stderr
    (row,) = pd.read_csv(out, comment="#").itertuples()
    # Brute force on the file's own rows: calibrate on a seed's val films, size its test sets.
    size = {}
    for (method, seed), part in files.groupby(["method", "seed"]):
        probs = part[[f"p{g}" for g in range(5)]].to_numpy()
        val = (part["split"] == "val").to_numpy()
        score = conformal.SET_SIZE_SCORE
        limits = conformal.calibrate(
            probs[val], part["grade"].to_numpy()[val], score=score, coverage=0.9
        )
        size[method, seed] = conformal.predict_sets(probs[~val], limits, score=score).sum(1).mean()
    a, b = row.method_a, row.method_b
    expected = np.mean([size[a, s] - size[b, s] for s in range(3)])
    assert row.mean_diff == pytest.approx(expected, abs=1e-6)  # stored as float32
    # The validation films calibrate only: the grade metrics are the test films'.
    scores = study_analysis.per_run(study_id, path=tmp_path / "softgrade.duckdb")
    sharp = scores[(scores["method"] == "sharp") & (scores["seed"] == 0)][AMAE].iloc[0]
    part = files[(files["method"] == "sharp") & (files["seed"] == 0) & (files["split"] == "test")]
    probs = part[[f"p{g}" for g in range(5)]].to_numpy()
    assert sharp == pytest.approx(compute_metrics(part["grade"], probs, 5)[AMAE])
