"""Diverged epochs do not set the learning curves' scale (issue 24), on the reference study."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.analysis import explorer
from pages.present.explorer_views import clipped_sentence
from pages.present.science_charts import learning_curves_chart, line_scheme
from store import runs as store_runs
from store.bundle import REFERENCE_STUDY, import_study
from store.db import init_schema


@pytest.fixture(scope="module")
def reference_curves(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The bundled reference study's learning curves, as the Search page reads them."""
    store = tmp_path_factory.mktemp("reference") / "softgrade.duckdb"
    init_schema(store)
    study = import_study(REFERENCE_STUDY, path=store)
    epochs = store_runs.study_epoch_metrics([study.study_id], selected_only=True, path=store)
    return explorer.learning_curves(epochs)


def _panel_values(chart: object, series: str) -> pd.Series:
    """The y values one panel of `learning_curves_chart` draws."""
    spec = chart.to_dict()
    datasets = spec["datasets"]
    for panel in spec["hconcat"]:
        layer = panel["layer"][0]
        data = layer.get("data", panel.get("data"))
        rows = pd.DataFrame(datasets[data["name"]])
        if set(rows["series"]) == {series}:
            assert layer["encoding"]["y"]["field"] == "shown"
            return rows["shown"]
    raise AssertionError(f"no {series} panel")


def test_the_reference_validation_loss_has_diverged_epochs_of_a_billion(reference_curves):
    val = reference_curves[reference_curves["series"] == "val_loss"]["value"]
    assert val.max() > 1e9 and val.median() < 2  # what flattened every curve onto zero


@pytest.mark.parametrize(
    ("by", "shown"), [("seed", {"method": "nominal"}), ("method", {"seed": 9})]
)
def test_diverged_epochs_do_not_set_the_validation_loss_scale(reference_curves, by, shown):
    lines = explorer.overlay(reference_curves, by, task="KL", **shown)
    drawn = _panel_values(learning_curves_chart(lines), "val_loss")
    val = lines[lines["series"] == "val_loss"]["value"]
    assert drawn.max() < 10 * val.median()  # the scale is the curves', not the 1e9 spikes
    assert drawn.max() < val.max() / 1e6
    # Every other panel keeps its largest value: nothing diverged there (lines by method
    # draw their losses relative to epoch 1: methods minimise different losses, issue 39).
    for series in ("train_loss", "val_amae") if by == "seed" else ("val_amae",):
        values = lines[lines["series"] == series]["value"]
        assert _panel_values(learning_curves_chart(lines), series).max() == values.max()


def test_the_caption_names_exactly_the_runs_drawn_at_the_ceiling(reference_curves):
    lines = explorer.overlay(reference_curves, "seed", task="KL", method="nominal")
    marked = explorer.clip_diverged(lines)
    hit = marked[marked["clipped"]]
    sentence = clipped_sentence(lines)
    assert sentence is not None and sentence.startswith("Diverged epochs do not set the scale.")
    assert f"{len(hit)} epoch(s) of {hit['line'].nunique()} run(s)" in sentence
    assert f"up to {hit['value'].max():.3g}" in sentence
    seeds = sorted(set(hit["seed"]))
    assert "(" + ", ".join(f"seed {s}" for s in seeds) + ")" in sentence
    clean = marked[~marked["line"].isin(hit["line"]) & (marked["series"] == "val_loss")]
    assert not any(f"seed {s}," in sentence for s in set(clean["seed"]) - set(seeds))


def test_a_study_without_divergence_gets_no_ceiling_and_no_caption(reference_curves):
    lines = explorer.overlay(reference_curves, "method", task="KL", seed=9)
    calm = lines[lines["series"] != "val_loss"]
    assert not explorer.clip_diverged(calm)["clipped"].any()
    assert clipped_sentence(calm) is None


def test_twenty_seeds_get_twenty_distinct_colours():
    assert line_scheme([f"seed {s}" for s in range(20)]) == "tableau20"
    assert line_scheme(["Nominal", "Beta"]) != "tableau20"
