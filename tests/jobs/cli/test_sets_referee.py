"""`softgrade calibrate-sets`: the grade sets refereed on fresh phantom films, at tiny size on
the CPU; its summary's arithmetic on synthetic draws; one line for bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.analysis import conformal
from jobs.cli.sets_referee_command import main


def test_referee_summary_gives_a_monte_carlo_interval_over_datasets():
    rng = np.random.default_rng(0)
    rows = []
    for dataset in range(10):
        for seed in range(2):
            cov = 0.9 + rng.normal(0, 0.01)
            rows.append(
                {
                    "task": "KL", "method": "beta", "score": "ordinal", "per_grade": False,
                    "target": 0.9, "dataset": dataset, "seed": seed, "coverage": cov,
                    "coverage_g0": cov, "coverage_g1": cov - 0.05, "true_coverage": cov,
                    "mean_size": 2.0, "singleton_share": 0.1,
                }
            )  # fmt: skip
    summary = conformal.referee_summary(pd.DataFrame(rows))
    row = summary.iloc[0]
    assert row["datasets"] == 10
    assert row["mc_low"] < row["coverage"] < row["mc_high"]
    assert row["min_grade_coverage"] == pytest.approx(row["coverage_g1"])
    assert row["holds"]


def test_bad_input_is_one_line(tmp_path, capsys):
    (tmp_path / "old.csv").write_text("kept")
    assert main(["-o", str(tmp_path)]) == 2
    assert "new or empty folder" in capsys.readouterr().err
    assert main(["-o", str(tmp_path / "new"), "--coverage", "2"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err
    assert main(["-o", str(tmp_path / "new"), "--methods", "nope"]) == 2
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_the_referee_runs_at_tiny_size_on_the_cpu(tmp_path, capsys):
    out = tmp_path / "sets"
    code = main(
        [
            "-o", str(out), "--datasets", "2", "--seeds", "2", "--methods", "nominal",
            "--task", "CPPD", "--n-images", "40", "--fresh-test", "40", "--epochs", "1",
            "--render-workers", "1", "--cache-dir", str(tmp_path),
        ]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    draws = pd.read_csv(out / "sets_draws.csv")
    assert len(draws) == 2 * 2 * 1 * len(conformal.SCORES) * 2  # datasets, seeds, scores, kinds
    summary = pd.read_csv(out / "sets_summary.csv")
    assert set(summary["score"]) == set(conformal.SCORES)
    assert (summary["datasets"] == 2).all()
    assert summary["coverage"].between(0, 1).all()
    assert json.loads((out / "sets.json").read_text())["tasks"]["CPPD"]["datasets_done"] == 2
    assert "Monte-Carlo" in (out / "sets.md").read_text()
