"""The KL × CPPD page with real stored predictions (a tiny trained study) and with bad input."""

from __future__ import annotations

import numpy as np

from engine.analysis import relationship
from store import runs as store_runs
from tests.helpers.pages import make_store, run_page, texts

PAGE = "../../pages/relationship.py"


def test_relationship_page_scores_every_method_of_a_trained_study(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    summary = at.dataframe[0].value
    assert list(summary["method"]) == ["Nominal", "Beta", "Triangular"]
    assert set(summary["n_seeds"]) == {3}

    # The numbers are the engine's, from the store's joint predictions.
    joint = store_runs.joint_predictions([finished_study.study_id], path=finished_study.store)
    _, results = relationship.relationship_by_seed(joint, eps=1e-6)
    beta = [r.kld for r in results if r.method == "beta"]
    assert summary.loc[summary["method"] == "Beta", "kld_mean"].iloc[0] == np.mean(beta)

    captions = texts(at, "caption")
    assert "ε = 1e-06" in captions and "over-estimation" in captions
    assert len(at.get("vega_lite_chart")) >= 1 + 3 + 2 + 1  # truth, residuals, detail, KLD
    assert "Shapiro–Wilk" in texts(at, "markdown")


def test_relationship_page_widgets(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    at.selectbox(key="rel_eps").set_value(1e-3).run()
    assert "ε = 0.001" in texts(at, "caption")
    at.radio(key="rel_units").set_value("points").run()
    at.selectbox(key="rel_method").set_value("triangular").run()
    at.selectbox(key="rel_correction").set_value("none").run()
    assert "unadjusted" in texts(at, "markdown") + texts(at, "caption")
    at.multiselect(key="rel_methods").set_value(["nominal", "beta"]).run()
    assert not at.exception
    assert list(at.dataframe[0].value["method"]) == ["Nominal", "Beta"]


def test_relationship_page_with_kl_only_says_cppd_is_missing(tmp_path, monkeypatch):
    make_store(tmp_path, tasks=("KL",))
    at = run_page(tmp_path, monkeypatch, PAGE)
    info = texts(at, "info")  # the study is not offered, and the page says why (issue 39)
    assert "graded only one task" in info and "both KL and CPPD" in info


def test_a_kl_only_study_is_not_offered_beside_one_with_both_tasks(tmp_path, monkeypatch):
    make_store(tmp_path, name="kl only", tasks=("KL",))
    make_store(tmp_path, name="both tasks")
    at = run_page(tmp_path, monkeypatch, PAGE)
    offered = at.multiselect(key="rel_studies").options
    assert len(offered) == 1 and "both tasks" in offered[0], offered
    assert "1 study(ies) graded only one task are not offered here" in texts(at, "caption")


def test_relationship_page_with_one_seed_and_one_method(tmp_path, monkeypatch):
    make_store(tmp_path, seeds=(0,), methods=("beta",))
    at = run_page(tmp_path, monkeypatch, PAGE)
    info = texts(at, "info")
    assert "Shapiro–Wilk needs at least 3 seeds" in info
    assert "Kruskal–Wallis needs at least 2 methods" in info
    assert list(at.dataframe[0].value["method"]) == ["Beta"]
    # One seed: the std cells are empty (never Streamlit's "None") and a caption says why.
    shown = at.dataframe[0].value
    assert list(shown["kld_std"]) == [""] and list(shown["mae_std"]) == [""]
    assert "a standard deviation needs at least 2 seeds" in texts(at, "caption")


def test_relationship_page_running_study_uses_finished_seeds(tmp_path, monkeypatch):
    make_store(tmp_path, seeds=(0, 1, 2, 3), finished_seeds=2)
    at = run_page(tmp_path, monkeypatch, PAGE)
    assert "still running" in texts(at, "warning")
    assert set(at.dataframe[0].value["n_seeds"]) == {2}


def test_relationship_page_without_results(tmp_path, monkeypatch):
    at = run_page(tmp_path, monkeypatch, PAGE)
    assert "No study has finished runs yet" in texts(at, "info")


def test_relationship_page_shows_kld_sensitivity_and_table7_as_in_the_paper(
    finished_study, monkeypatch
):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    sensitivity = at.dataframe[1].value
    assert list(sensitivity["Method"]) == ["Nominal", "Beta", "Triangular"]
    eps_columns = [f"KLD at ε = {eps:g}" for eps in relationship.SENSITIVITY_EPS]
    assert set(eps_columns) <= set(sensitivity.columns)
    # A smaller ε never lowers the KLD; the smoothed KLD needs no ε.
    assert (sensitivity[eps_columns].diff(axis=1).iloc[:, 1:] >= -1e-9).all().all()
    assert "Jeffreys" in texts(at, "caption")
    # Table 7 takes the result pages' one correction picker: Holm by default, the paper's
    # unadjusted p-values one option away, both labelled.
    picker = at.selectbox(key="rel_correction")
    assert picker.value == "holm"
    assert picker.options[:2] == [
        "Holm (SoftGrade's default)",
        "none — as in the paper (unadjusted p-values)",
    ]
    assert "Holm-adjusted" in texts(at, "caption")
    picker.set_value("none").run()
    assert not at.exception
    assert "as in the paper's Table 7" in texts(at, "caption")


def test_the_eps_picker_offers_the_eps_its_sensitivity_table_shows(tmp_path, monkeypatch):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, PAGE)
    offered = set(at.selectbox(key="rel_eps").options)
    tables = [d.value for d in at.dataframe if any("KLD at ε" in str(c) for c in d.value.columns)]
    columns = {str(c).removeprefix("KLD at ε = ") for c in tables[0].columns if "KLD at ε" in c}
    assert offered == columns, (offered, columns)
    assert at.selectbox(key="rel_eps").value == 1e-6
