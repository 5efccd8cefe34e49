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


TINY = [
    "--seeds", "2", "--methods", "nominal", "--task", "CPPD", "--n-images", "40",
    "--fresh-test", "40", "--epochs", "1", "--render-workers", "1",
]  # fmt: skip


@pytest.mark.slow
def test_parts_trained_apart_and_combined_equal_one_whole_run(tmp_path, capsys):
    """`--first-dataset` trains one part of the design; `--combine` joins the parts into the
    result one whole run gives: the same datasets, fresh films and draws."""
    cache = ["--cache-dir", str(tmp_path)]
    whole, first, second = tmp_path / "whole", tmp_path / "first", tmp_path / "second"
    assert main(["-o", str(whole), "--datasets", "3", *TINY, *cache]) == 0
    assert main(["-o", str(first), "--datasets", "2", *TINY, *cache]) == 0
    # A part of one dataset cannot be summarised alone: it says so and keeps its draws.
    assert main(["-o", str(second), "--first-dataset", "2", "--datasets", "3", *TINY, *cache]) == 2
    assert "train more parts and join them with --combine" in capsys.readouterr().err
    assert pd.read_csv(second / "sets_draws.csv")["dataset"].unique().tolist() == [2]
    joined = tmp_path / "joined"
    assert main(["--combine", str(first), str(second), "-o", str(joined)]) == 0
    draws = [pd.read_csv(folder / "sets_draws.csv") for folder in (whole, joined)]
    pd.testing.assert_frame_equal(draws[0], draws[1])
    summaries = [pd.read_csv(folder / "sets_summary.csv") for folder in (whole, joined)]
    pd.testing.assert_frame_equal(summaries[0], summaries[1])
    card = json.loads((joined / "sets.json").read_text())
    assert [p["first_dataset"] for p in card["parts"]] == [0, 2]
    assert card["tasks"]["CPPD"]["datasets_done"] == 3
    assert card["tasks"]["CPPD"]["fresh_films"] == 40


def _part(folder, *, first, datasets, coverage=0.9, seeds=2, dataset_ids=None):
    """A part's folder as calibrate-sets writes it, with synthetic draws."""
    from engine.referee.design import RefereeDesign
    from jobs.services.sets_referee_parts import write_sets_design

    folder.mkdir()
    design = RefereeDesign(
        methods=("nominal",), null_method="nominal", task="CPPD", datasets=datasets,
        first_dataset=first, seeds=seeds, n_images=40, fresh_test=40, epochs=1,
        image_size=32, batch_size=32, device="cpu", data_seed=1000, bootstrap=0,
    )  # fmt: skip
    write_sets_design(folder, [design], coverage)
    rows = [
        {
            "task": "CPPD", "method": "nominal", "score": "ordinal", "per_grade": False,
            "target": coverage, "dataset": k, "seed": s, "coverage": 0.9, "coverage_g0": 0.9,
            "true_coverage": 0.9, "mean_size": 2.0, "singleton_share": 0.1,
        }
        for k in (dataset_ids if dataset_ids is not None else range(first, datasets))
        for s in range(seeds)
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(folder / "sets_draws.csv", index=False)
    return folder


@pytest.mark.parametrize(
    ("second", "words"),
    [
        ({"coverage": 0.8}, "coverage is 0.9 against 0.8"),
        ({"seeds": 3}, "seeds is 2 against 3"),
        ({"dataset_ids": [1, 2]}, "dataset 1 was trained in both"),
    ],
)
def test_parts_that_are_not_one_design_are_refused_naming_why(tmp_path, capsys, second, words):
    a = _part(tmp_path / "a", first=0, datasets=2)
    b = _part(tmp_path / "b", first=2, datasets=4, **second)
    assert main(["--combine", str(a), str(b), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --combine: ") and words in err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_combine_names_a_folder_that_is_not_a_part(tmp_path, capsys):
    a = _part(tmp_path / "a", first=0, datasets=2)
    (tmp_path / "stray").mkdir()
    assert main(["--combine", str(a), str(tmp_path / "stray"), "-o", str(tmp_path / "o")]) == 2
    assert "has no sets_design.json" in capsys.readouterr().err
    (tmp_path / "stray" / "sets_design.json").write_text('{"coverage": 0.9}')
    assert main(["--combine", str(a), str(tmp_path / "stray"), "-o", str(tmp_path / "o")]) == 2
    assert "does not hold calibrate-sets' designs" in capsys.readouterr().err


def test_a_damaged_part_is_named_in_one_line(tmp_path, capsys):
    a = _part(tmp_path / "a", first=0, datasets=2)
    b = _part(tmp_path / "b", first=2, datasets=4)
    (b / "sets.json").write_text('{"tasks": ["not", "a", "mapping"], "created_at": 5}')
    assert main(["--combine", str(a), str(b), "-o", str(tmp_path / "ok")]) == 0
    pd.DataFrame({"dataset": [2], "coverage": [0.9]}).to_csv(b / "sets_draws.csv", index=False)
    assert main(["--combine", str(a), str(b), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "sets_draws.csv lacks the columns seed, task" in err and err.count("\n") == 1
    design = json.loads((a / "sets_design.json").read_text())
    (a / "sets_design.json").write_text(json.dumps(design | {"coverage": "most"}))
    assert main(["--combine", str(a), str(b), "-o", str(tmp_path / "o")]) == 2
    assert "coverage:" in capsys.readouterr().err


def test_combined_synthetic_parts_summarise_every_dataset(tmp_path):
    a = _part(tmp_path / "a", first=0, datasets=2)
    b = _part(tmp_path / "b", first=2, datasets=5)
    out = tmp_path / "out"
    assert main(["--combine", str(a), str(b), "-o", str(out)]) == 0
    summary = pd.read_csv(out / "sets_summary.csv")
    assert summary["datasets"].tolist() == [5]
    card = json.loads((out / "sets.json").read_text())
    assert card["parts"] == [
        {"folder": "a", "first_dataset": 0, "datasets_done": {"CPPD": 2}},
        {"folder": "b", "first_dataset": 2, "datasets_done": {"CPPD": 3}},
    ]
    design = json.loads((out / "sets_design.json").read_text())["designs"]["CPPD"]
    assert (design["first_dataset"], design["datasets"]) == (0, 5)
