"""The Attention page: Grad-CAM maps of a tiny trained study's saved models."""

from __future__ import annotations

import shutil
from pathlib import Path

from store import runs as store_runs
from tests.helpers.pages import copy_home, images, make_store, run_page, texts

PAGE = "../../pages/attention.py"


def test_attention_page_maps_every_grade_for_every_method(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    assert at.selectbox(key="att_study").value == finished_study.study_id
    assert at.radio(key="att_task").value == "CPPD"
    assert at.multiselect(key="att_methods").value == ["nominal", "beta", "triangular"]

    # One film and three maps for each CPPD grade that has a test film of its own.
    heads = [m.value for m in at.markdown if m.value.startswith("**CPPD")]
    assert heads == ["**CPPD 0**", "**CPPD 1**", "**CPPD 2**", "**CPPD 3**"]
    shown = images(at)
    missing = texts(at, "caption").count("No test film of this grade.")
    assert len(shown) == (4 - missing) * 4
    captions = [img.caption for img in shown]
    assert sum(c.startswith("Triangular: graded CPPD ") for c in captions) == 4 - missing
    assert "Grad-CAM heat" in texts(at, "caption")
    assert "Maps from ResNet18's layer2: at 32 px" in texts(at, "caption")


def test_attention_page_switches_task_seed_and_example(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    at.radio(key="att_task").set_value("KL").run()
    at.selectbox(key="att_seed").set_value(2).run()
    at.multiselect(key="att_methods").set_value(["beta"]).run()
    assert not at.exception
    heads = [m.value for m in at.markdown if m.value.startswith("**KL")]
    assert heads == [f"**KL {g}**" for g in range(5)]
    assert all(not img.caption.startswith("Nominal") for img in images(at))
    before = [img.caption for img in images(at)]
    example = at.number_input(key="att_example")
    if example.max > 1:
        example.set_value(2).run()
        assert [img.caption for img in images(at)] != before


def test_stress_test_redraws_the_knee_at_every_other_grade(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    at.radio(key="att_task").set_value("KL").run()
    at.button_group(key="att_view").set_value("Co-occurrence stress test").run()
    assert not at.exception
    assert "redrawn at **KL 4** with **CPPD 0 to 3**" in texts(at, "markdown")

    heads = [m.value for m in at.markdown if m.value.startswith("**CPPD")]
    assert heads == ["**CPPD 0**", "**CPPD 1**", "**CPPD 2**", "**CPPD 3**"]
    assert len(images(at)) == 4 * (1 + 3)  # the knee and three methods' maps per level
    table = at.dataframe[0].value
    assert list(table.columns) == [
        "Method",
        "CPPD grade",
        "Mean predicted KL",
        "Mean P(KL 4)",
        "Lift on KL signs",
        "Lift on CPPD signs",
    ]
    assert len(table) == 3 * 4
    assert table.loc[table["CPPD grade"] == 0, "Lift on CPPD signs"].isna().all()
    assert table.loc[table["CPPD grade"] == 3, "Lift on CPPD signs"].notna().all()
    assert len(at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")) == 2


def test_missing_weights_are_named_not_drawn(finished_study, tmp_path, monkeypatch):
    home = copy_home(finished_study, tmp_path / "copy")
    runs = store_runs.list_runs([finished_study.study_id], path=home / "softgrade.duckdb")
    for path in runs.loc[(runs["method"] == "beta") & runs["selected"], "checkpoint_path"]:
        Path(path).unlink()

    at = run_page(home, monkeypatch, PAGE)
    warning = texts(at, "warning")
    assert "The weights of Beta (seed 0, CPPD) are not on this machine" in warning
    assert not any(img.caption.startswith("Beta") for img in images(at))
    assert any(img.caption.startswith("Nominal") for img in images(at))


def test_attention_page_without_prepared_images_says_where_it_looked(
    finished_study, tmp_path, monkeypatch
):
    home = tmp_path / "copy"
    shutil.copytree(finished_study.home, home, ignore=shutil.ignore_patterns("cache"))
    at = run_page(home, monkeypatch, PAGE)
    info = texts(at, "info")
    assert "prepared images of this study's dataset are not on this machine" in info
    assert str(home / "cache") in info


def test_attention_page_names_a_study_it_cannot_read(tmp_path, monkeypatch):
    make_store(tmp_path)  # synthetic runs whose study names no dataset
    at = run_page(tmp_path, monkeypatch, PAGE)
    assert "This study cannot be read: dataset: missing" in texts(at, "error")


def test_attention_page_with_no_study_says_what_to_do(tmp_path, monkeypatch):
    at = run_page(tmp_path, monkeypatch, PAGE)
    assert "No study has finished runs yet" in texts(at, "info")


def test_cooccurrence_in_test_films_groups_top_grade_films_by_the_other_grade(
    finished_study, monkeypatch
):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    tables = []
    for task, other in (("CPPD", "KL"), ("KL", "CPPD")):
        at.radio(key="att_task").set_value(task).run()
        for seed in (0, 1, 2):
            at.selectbox(key="att_seed").set_value(seed).run()
            at.button_group(key="att_view").set_value("Co-occurrence in test films").run()
            assert not at.exception
            if at.dataframe:
                tables.append((task, other, at.dataframe[0].value))
            else:
                assert "has no film graded" in texts(at, "info")
    assert tables, "no seed of the tiny study has a test film at a top grade with both grades"
    task, other, table = tables[0]
    top = 4 if task == "KL" else 3
    assert list(table.columns) == [
        "Method",
        f"{other} grade",
        "Films",
        f"Mean P({task} {top})",
        f"Share graded {task} {top}",
    ]
    assert table[f"Mean P({task} {top})"].between(0, 1).all()
