"""engine.analysis.explorer: the search explorer's and the learning curves' frames, by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.analysis import explorer


def _runs() -> pd.DataFrame:
    """`store.runs.list_runs`-shaped rows: two seeds of a triangular search and a nominal one."""
    rows = []
    tri = [(0.001, 0.05, 0.8), (0.01, 0.05, 0.8), (0.001, 0.1, 1.0)]
    amae = {0: [0.40, 0.55, 0.30], 1: [0.35, 0.60, 0.45]}
    for seed in (0, 1):
        for i, (lr, alpha2, eta) in enumerate(tri):
            rows.append(
                {
                    "run_id": f"st-KL-triangular-s{seed}-c{i}",
                    "study_id": "st",
                    "task": "KL",
                    "method": "triangular",
                    "seed": seed,
                    "config_index": i,
                    "config": json.dumps(
                        {"task": "KL", "lr": lr, "alpha2": alpha2, "eta": eta, "p": None}
                    ),
                    "selected": amae[seed][i] == min(amae[seed]),
                    "best_epoch": 5 + i,
                    "epochs_run": 10 + i,
                    "val_amae": amae[seed][i],
                    "duration_s": 2.0,
                }
            )
    for i, lr in enumerate((0.0001, 0.001)):
        rows.append(
            {
                "run_id": f"st-KL-nominal-s0-c{i}",
                "study_id": "st",
                "task": "KL",
                "method": "nominal",
                "seed": 0,
                "config_index": i,
                "config": json.dumps({"lr": lr, "eta": None}),
                "selected": i == 1,
                "best_epoch": 3,
                "epochs_run": 8,
                "val_amae": 0.7 - 0.1 * i,
                "duration_s": 1.0,
            }
        )
    return pd.DataFrame(rows)


def test_search_table_expands_the_config_and_ranks_each_search():
    table = explorer.search_table(_runs())
    assert list(table["method"].unique()) == ["nominal", "triangular"]  # paper's order
    row = table.set_index("run_id").loc["st-KL-triangular-s0-c2"]
    assert (row["lr"], row["alpha2"], row["eta"]) == (0.001, 0.1, 1.0)
    assert np.isnan(row["p"])
    assert row["config_key"] == "lr=0.001, eta=1, alpha2=0.1"
    assert row["rank"] == 1 and row["selected"]
    seed1 = table[(table["method"] == "triangular") & (table["seed"] == 1)]
    assert seed1.set_index("config_index")["rank"].to_dict() == {0: 1, 1: 3, 2: 2}
    nominal = table[table["method"] == "nominal"]
    assert nominal["eta"].isna().all() and list(nominal["config_key"]) == ["lr=0.0001", "lr=0.001"]
    # The same configuration has the same key in every seed.
    keys = table[table["config_index"] == 1].groupby("method")["config_key"].nunique()
    assert keys["triangular"] == 1
    assert not table["pruned"].any()  # runs stored without the column: none was pruned


def test_a_run_the_pruner_stopped_ranks_after_every_run_that_trained_on():
    # Seed 0's best triangular value belongs to a run the pruner stopped (at an early epoch,
    # as can happen): the store never selects it, so it cannot rank 1 either.
    table = explorer.search_table(_pruned_runs())
    seed0 = table[(table["method"] == "triangular") & (table["seed"] == 0)]
    assert seed0.set_index("config_index")["rank"].to_dict() == {0: 1, 1: 2, 2: 3}
    assert (seed0["rank"] == 1).eq(seed0["selected"]).all()
    assert seed0.set_index("config_index")["pruned"].to_dict() == {0: False, 1: False, 2: True}


def test_a_run_that_diverged_ranks_after_every_run_that_stayed_finite():
    runs = _runs()
    best = runs.index[(runs["method"] == "triangular") & (runs["seed"] == 1)][0]
    runs["diverged_epoch"] = np.nan
    runs.loc[best, "diverged_epoch"] = 3
    table = explorer.search_table(runs).set_index("run_id")
    assert table.loc[runs.loc[best, "run_id"], "diverged"]
    seed1 = table[(table["method"] == "triangular") & (table["seed"] == 1)]
    assert seed1["rank"].max() == seed1.loc[runs.loc[best, "run_id"], "rank"]
    assert not explorer.search_table(_runs())["diverged"].any()


def test_search_overview_summarises_each_search():
    overview = explorer.search_overview(explorer.search_table(_runs()))
    row = overview.set_index(["method", "seed"]).loc[("triangular", 1)]
    assert row["n_configs"] == 3
    assert (row["best_val_amae"], row["worst_val_amae"]) == (0.35, 0.60)
    assert row["selected_index"] == 0 and row["selected_config"] == "lr=0.001, eta=0.8, alpha2=0.05"
    assert (row["selected_epochs_run"], row["selected_best_epoch"]) == (10, 5)
    assert row["duration_s"] == pytest.approx(6.0)
    assert len(overview) == 3


def test_parameter_effects_have_one_row_per_run_and_parameter_it_has():
    effects = explorer.parameter_effects(explorer.search_table(_runs()))
    per_method = effects.groupby("method")["param"].apply(lambda s: sorted(set(s))).to_dict()
    assert per_method == {"nominal": ["lr"], "triangular": ["alpha2", "eta", "lr"]}
    assert len(effects) == 2 + 6 * 3
    lr = effects[(effects["method"] == "triangular") & (effects["param"] == "lr")]
    assert sorted(lr["value"]) == [0.001, 0.001, 0.001, 0.001, 0.01, 0.01]
    with pytest.raises(ValueError, match="unknown hyper-parameters"):
        explorer.parameter_effects(explorer.search_table(_runs()), ["momentum"])


def test_parameter_summary_averages_over_seeds_and_counts_wins():
    summary = explorer.parameter_summary(
        explorer.parameter_effects(explorer.search_table(_runs()))
    ).set_index(["method", "param", "value"])
    small_lr = summary.loc[("triangular", "lr", 0.001)]
    assert small_lr["n_runs"] == 4 and small_lr["n_seeds"] == 2
    assert small_lr["val_amae_mean"] == pytest.approx(np.mean([0.40, 0.30, 0.35, 0.45]))
    assert small_lr["val_amae_std"] == pytest.approx(np.std([0.40, 0.30, 0.35, 0.45], ddof=1))
    # Both triangular searches picked lr = 0.001: seed 0 config 2 and seed 1 config 0.
    assert small_lr["n_selected"] == 2 and small_lr["selected_share"] == 1.0
    assert summary.loc[("triangular", "lr", 0.01), "n_selected"] == 0
    eta = summary.loc[("triangular", "eta")]
    assert eta["selected_share"].to_dict() == {0.8: 0.5, 1.0: 0.5}


def _pruned_runs() -> pd.DataFrame:
    """`_runs` where the pruner stopped seed 0's triangular config 2 (lr 0.001, η 1) early,
    at an AMAE (0.30) better than any run that trained on: its early epochs' value."""
    runs = _runs()
    runs["pruned"] = runs["run_id"] == "st-KL-triangular-s0-c2"
    runs["selected"] = runs["run_id"].isin(
        ["st-KL-triangular-s0-c0", "st-KL-triangular-s1-c0", "st-KL-nominal-s0-c1"]
    )
    return runs


def test_a_stopped_runs_early_amae_is_counted_apart_from_the_per_value_means():
    summary = explorer.parameter_summary(
        explorer.parameter_effects(explorer.search_table(_pruned_runs()))
    ).set_index(["method", "param", "value"])
    small_lr = summary.loc[("triangular", "lr", 0.001)]
    assert small_lr["n_runs"] == 4 and small_lr["n_pruned"] == 1
    assert small_lr["val_amae_mean"] == pytest.approx(np.mean([0.40, 0.35, 0.45]))
    assert small_lr["val_amae_median"] == pytest.approx(0.40)
    # η = 1 was tried by two runs; the stopped one is left out of its mean, not its count.
    eta_one = summary.loc[("triangular", "eta", 1.0)]
    assert (eta_one["n_runs"], eta_one["n_pruned"]) == (2, 1)
    assert eta_one["val_amae_mean"] == pytest.approx(0.45) and np.isnan(eta_one["val_amae_std"])
    assert summary.loc[("triangular", "lr", 0.01), "n_pruned"] == 0


def test_a_value_every_run_of_which_was_stopped_has_no_mean():
    runs = _pruned_runs()
    runs["pruned"] = runs["run_id"].str.endswith("-c2")  # both seeds' η = 1 runs
    summary = explorer.parameter_summary(explorer.parameter_effects(explorer.search_table(runs)))
    eta_one = summary.set_index(["method", "param", "value"]).loc[("triangular", "eta", 1.0)]
    assert eta_one["n_pruned"] == eta_one["n_runs"] == 2
    assert np.isnan(eta_one["val_amae_mean"]) and np.isnan(eta_one["val_amae_median"])


def test_a_searchs_best_and_worst_are_of_the_runs_that_trained_on():
    overview = explorer.search_overview(explorer.search_table(_pruned_runs()))
    row = overview.set_index(["method", "seed"]).loc[("triangular", 0)]
    assert row["n_configs"] == 3 and row["n_pruned"] == 1
    assert (row["best_val_amae"], row["worst_val_amae"]) == (0.40, 0.55)
    assert overview.set_index(["method", "seed"]).loc[("triangular", 1), "n_pruned"] == 0


def _epochs() -> pd.DataFrame:
    rows = []
    for method, seed, n, best in (("beta", 0, 4, 2), ("beta", 1, 3, 3), ("nominal", 0, 5, 1)):
        for epoch in range(1, n + 1):
            rows.append(
                {
                    "study_id": "st",
                    "run_id": f"st-KL-{method}-s{seed}-c0",
                    "task": "KL",
                    "method": method,
                    "seed": seed,
                    "config_index": 0,
                    "selected": True,
                    "best_epoch": best,
                    "epochs_run": n,
                    "epoch": epoch,
                    "train_loss": 1.0 / epoch,
                    "val_loss": 1.2 / epoch if epoch != 3 else None,
                    "val_amae": 0.5,
                    "duration_s": 0.1,
                }
            )
    return pd.DataFrame(rows)


def test_learning_curves_are_long_with_the_best_epoch_marked():
    curves = explorer.learning_curves(_epochs())
    assert set(curves["series"]) == set(explorer.CURVE_SERIES)
    assert len(curves) == 12 * 3 - 3  # epoch 3 of each run has no validation loss
    best = curves[curves["best"]]
    assert set(zip(best["run_id"], best["epoch"], strict=True)) == {
        ("st-KL-beta-s0-c0", 2),
        ("st-KL-beta-s1-c0", 3),
        ("st-KL-nominal-s0-c0", 1),
    }
    assert len(best) == 3 * 3 - 1  # beta seed 1's best epoch has no validation loss
    point = curves[
        (curves["run_id"] == "st-KL-nominal-s0-c0")
        & (curves["series"] == "train_loss")
        & (curves["epoch"] == 4)
    ]
    assert point["value"].item() == pytest.approx(0.25)


def test_overlay_colours_by_method_or_by_seed():
    curves = explorer.learning_curves(_epochs())
    by_method = explorer.overlay(curves, "method", task="KL", series=["train_loss"])
    assert list(dict.fromkeys(by_method["colour"])) == ["nominal", "beta"]
    assert by_method["line"].nunique() == 3
    one_seed = explorer.overlay(curves, "method", task="KL", seed=1)
    assert set(one_seed["run_id"]) == {"st-KL-beta-s1-c0"}
    by_seed = explorer.overlay(curves, "seed", task="KL", method="beta")
    assert set(by_seed["colour"]) == {"seed 0", "seed 1"}
    with pytest.raises(ValueError, match="give method"):
        explorer.overlay(curves, "seed", task="KL")
    with pytest.raises(ValueError, match="must be one of"):
        explorer.overlay(curves, "study", task="KL")


def test_mean_curves_average_the_runs_still_training():
    curves = explorer.learning_curves(_epochs())
    mean = explorer.mean_curves(curves).set_index(["method", "series", "epoch"])
    assert mean.loc[("beta", "train_loss", 2), "value"] == pytest.approx(0.5)
    assert mean.loc[("beta", "train_loss", 3), "n_runs"] == 2
    assert mean.loc[("beta", "train_loss", 4), "n_runs"] == 1
    assert mean.loc[("nominal", "train_loss", 5), "value"] == pytest.approx(0.2)


def test_in_flight_point_reads_the_jobs_current_run():
    point = explorer.in_flight_point("study-ab-CPPD-exponential-s3-c7", 12, 0.41)
    row = point.iloc[0]
    assert (row["task"], row["method"], row["seed"], row["config_index"]) == (
        "CPPD",
        "exponential",
        3,
        7,
    )
    assert (row["epoch"], row["value"], row["series"]) == (12, 0.41, "val_amae")
    assert explorer.in_flight_point(None, None, None).empty
    assert explorer.in_flight_point("not a run id", 3, 0.5).empty


def test_empty_inputs_give_empty_frames_with_the_columns():
    empty = explorer.search_table(_runs().iloc[:0])
    assert "config_key" in empty.columns and empty.empty
    assert explorer.search_overview(empty).empty
    assert explorer.parameter_summary(explorer.parameter_effects(empty)).empty
    curves = explorer.learning_curves(_epochs().iloc[:0])
    assert list(curves.columns)[-3:] == ["series", "value", "best"]
    assert explorer.mean_curves(curves).empty
