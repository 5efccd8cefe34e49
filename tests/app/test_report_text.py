"""The report's and the Search page's sentences say what the code does: the declared
early-stopping and selection rules, the primary endpoint's result, clipped intervals, pooled
reliability bins, the learning curves' markers and an imported study's run counts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from engine import protocol
from engine.analysis.ranking import critical_difference
from jobs.services.export_cards import one_line
from jobs.services.report_inputs import gather_report_inputs
from pages.present import explorer_views, report, science_charts
from pages.present import protocol_text as words
from store.db import init_schema
from tests.helpers.synthetic_study import write_synthetic_study


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    store = tmp_path_factory.mktemp("report_text") / "softgrade.duckdb"
    init_schema(store)
    return store, write_synthetic_study(store, n_seeds=3, n_patients=20)


# Gathers the whole report's inputs of a new study (~2.7 s of CPU): over the fast tier's ~2 s.
@pytest.mark.slow
def test_changing_the_declared_stopping_rule_changes_every_sentence_about_it(
    synthetic, monkeypatch
):
    store, study = synthetic
    (inputs,) = gather_report_inputs([study], path=store, n_boot=0).studies
    before = report.protocol_text(inputs)
    assert "stopping once the validation loss had not improved for 40 epochs" in before
    assert "at most 100 epochs" in before
    rule = replace(
        protocol.EARLY_STOPPING,
        monitored="val_amae",
        monitored_label="validation AMAE",
        patience=7,
        max_epochs=9,
    )
    monkeypatch.setattr(protocol, "EARLY_STOPPING", rule)
    after = report.protocol_text(inputs)  # the synthetic spec sets neither: defaults
    assert "stopping once the validation AMAE had not improved for 7 epochs" in after
    assert "at most 9 epochs" in after and "lowest validation AMAE" in after
    for note in (explorer_views.rank_note(None), explorer_views.curves_note(None)):
        assert "validation AMAE had not improved for 7 epochs" in note


def test_a_studys_own_patience_and_epochs_are_the_ones_said():
    spec = {"patience": 25, "max_epochs": 60}
    assert "at most 60 epochs" in words.stopping_sentence(spec)
    assert "not improved for 25 epochs" in words.stopping_sentence('{"patience": 25}')
    assert "not improved for 40 epochs" in words.stopping_sentence("not json")


def test_the_declared_selection_metric_is_the_registrys_primary_metric():
    from engine.analysis import metrics, paired

    assert protocol.SEARCH_SELECTION.metric_name == paired.PRIMARY_METRIC
    assert protocol.SEARCH_SELECTION.metric_label == metrics.METRIC_LABELS[paired.PRIMARY_METRIC]


def test_changing_the_declared_selection_metric_changes_the_selection_sentence(monkeypatch):
    assert "lowest validation AMAE" in report.statistics_text()
    monkeypatch.setattr(
        protocol, "SEARCH_SELECTION", replace(protocol.SEARCH_SELECTION, metric="qwk")
    )
    assert "highest validation QWK" in report.statistics_text()
    assert "highest validation QWK" in explorer_views.intro_note()


ENDPOINT = pd.DataFrame(
    {
        "task": ["KL", "KL", "CPPD"],
        "method": ["binomial", "beta", "beta"],
        "n_seeds": [20, 20, 20],
        "mean_diff": [-0.065, -0.05, 0.01],
        "ci_low": [-0.1, -0.12, -0.02],
        "ci_high": [-0.03, 0.02, 0.04],
        "p_corrected": [0.001, 0.16, 0.5],
        "p_corrected_holm": [0.003, 0.32, 0.5],
        "p_wilcoxon": [0.0005, 0.01, 0.6],
        "d_z": [1.0, 0.8, -0.1],
        "rank_biserial": [0.8, 0.6, -0.1],
        "significant": [True, False, False],
    }
)


def test_the_endpoint_sentence_counts_and_names_the_significant_comparisons():
    text = report.endpoint_sentence(ENDPOINT)
    assert text.startswith("Result: 1 of the 3 primary comparisons is significant after Holm")
    assert "KL Binomial -0.065 [-0.100, -0.030], Holm p = 0.003" in text
    assert "In 2 of the 3 comparisons the soft method's mean AMAE is lower" in text
    assert "2 of the 3 corrected 95 % intervals include 0" in text
    none = report.endpoint_sentence(ENDPOINT.assign(significant=False))
    assert none.startswith("Result: none of the 3 primary comparisons is significant")
    frame = report.endpoint_frame(ENDPOINT)
    assert list(frame["Significant after Holm"]) == ["yes", "no", "no"]
    assert list(frame["Method − Nominal"]) == ["Binomial", "Beta", "Beta"]


def test_the_rank_reading_is_exploratory_and_names_its_blocks_assumption():
    rng = np.random.default_rng(0)
    rows = [
        {"method": m, "seed": s, "value": base + rng.normal(0, 0.01)}
        for s in range(12)
        for m, base in (("nominal", 0.6), ("binomial", 0.5), ("beta", 0.51))
    ]
    cd = critical_difference(pd.DataFrame(rows), lower_is_better=True)
    lead, caution = report.ranks_reading(cd, ENDPOINT)
    assert lead.startswith("Exploratory.") and "Binomial" in lead
    assert "independent blocks" in caution
    assert "1 of the 3 primary comparisons is significant" in caution


def test_a_one_seed_studys_table4_says_its_intervals_need_two_seeds(tmp_path):
    """The report and the Statistics tab share one Table 4 (`reviewer_tables.mean_ci_table`):
    one seed has a mean but no interval, and the report says so rather than "nan"."""
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=1, n_patients=20)
    inputs = gather_report_inputs([study], path=store, n_boot=0)
    table4 = "".join(report.table4_section(inputs))
    assert "needs 2 seeds" in table4
    assert "nan" not in table4.lower()


def test_the_reliability_legend_says_how_many_seeds_it_pools():
    table = pd.DataFrame(
        {
            "method": ["nominal"],
            "event": ["top label"],
            "threshold": [-1],
            "bin": [5],
            "bin_low": [0.5],
            "bin_high": [0.6],
            "confidence": [0.55],
            "accuracy": [0.5],
            "count": [6000],
        }
    )
    spec = str(science_charts.reliability_diagram(table, pooled_seeds=20).to_dict())
    assert "Films, 20 seeds pooled" in spec
    assert "20 seeds pooled" not in str(science_charts.reliability_diagram(table).to_dict())


def test_the_learning_curve_caption_names_the_colour_the_triangles_are_drawn_in():
    epochs = np.arange(1, 6)
    lines = pd.DataFrame(
        {
            "line": "nominal",
            "colour": "nominal",
            "method": "nominal",
            "seed": 0,
            "config_index": 0,
            "epoch": np.tile(epochs, 2),
            "series": ["val_loss"] * 5 + ["train_loss"] * 5,
            "value": [1.0, 0.9, 1e9, 0.8, 0.85, 1.0, 0.9, 0.8, 0.7, 0.6],
            "best": [False, False, False, True, False] * 2,
        }
    )
    chart = science_charts.learning_curves_chart(lines, series=("val_loss",)).to_dict()
    triangles = next(
        layer
        for layer in chart["hconcat"][0]["layer"]
        if isinstance(layer["mark"], dict) and layer["mark"].get("shape") == "triangle-up"
    )
    assert "color" not in triangles["mark"]  # no fixed colour: the line's, by encoding
    assert chart["title"]["subtitle"].count("triangles in the line's colour") == 1
    assert "red triangles" not in explorer_views.clipped_sentence(lines)


def test_an_imported_study_in_parts_explains_its_status_and_run_counts():
    runs = pd.DataFrame({"seed": [0] * 90 + [1] * 90 + [2] * 90})
    card = report.study_card({"status": "succeeded, 270/270 runs (job import-x)"}, True, runs)
    assert card == {"status in this store": "imported from a bundle: 270 runs of 3 seeds stored"}
    imported = {
        "runs_stored": {"seeds 0-1": 200, "seeds 2-2": 90},
        "job": {"seeds 0-1": {"status": "cancelled"}, "seeds 2-2": {"status": "succeeded"}},
    }
    (note,) = report.run_count_notes(imported, runs)
    assert "seeds 0-1: its job ended cancelled after storing 200 runs" in note
    assert "the bundle keeps the 180 runs of seeds 0-1 (the other 20 were runs of seeds" in note
    assert report.run_count_notes(None, runs) == []


def test_a_bundle_cards_nested_fields_read_without_underscores():
    job = {"seeds 0-12": {"started_at": "2026-11-26", "status": "cancelled"}}
    assert one_line(job) == "seeds 0-12 started at 2026-11-26, status cancelled"


def test_the_store_selects_runs_by_the_declared_selection_rule(tmp_path):
    """store/ reads no engine module but its vocabulary, so this holds the store's selection
    (`store.runs.select_best_runs`) to `engine.protocol.SEARCH_SELECTION`."""
    from store import runs as store_runs

    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    study = write_synthetic_study(
        store, n_seeds=2, n_patients=20, configs={"nominal": 3, "binomial": 3, "beta": 3}
    )
    rule = protocol.SEARCH_SELECTION
    column = f"val_{rule.metric_name}"
    runs = store_runs.list_runs([study], path=store)
    assert rule.lower_is_better
    for _, group in runs.groupby(["task", "method", "seed"]):
        ranked = group.sort_values([column, "config_index"])
        assert ranked["selected"].tolist() == [True] + [False] * (len(group) - 1)


def test_the_appendix_matrix_reads_each_pair_from_both_sides():
    table = pd.DataFrame(
        {
            "task": ["KL"] * 3,
            "method_a": ["binomial", "binomial", "beta"],
            "method_b": ["beta", "triangular", "triangular"],
            "mean_diff": [-0.02, 0.001, 0.03],
            "verdict": [
                "binomial better (exploratory)",
                "equivalent (exploratory)",
                "inconclusive",
            ],
        }
    )
    matrix = report.verdict_matrix(table).set_index("A \\ B")
    assert matrix.loc["Binomial", "Beta"] == "-0.020 ▲"
    assert matrix.loc["Beta", "Binomial"] == "+0.020 ▼"
    assert matrix.loc["Triangular", "Binomial"] == "-0.001 ≈"
    assert matrix.loc["Beta", "Triangular"] == "+0.030 ·"
    assert matrix.loc["Beta", "Beta"] == ""
