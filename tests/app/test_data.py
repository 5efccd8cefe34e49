"""The Data page: the phantom explained, registered datasets with grade counts, the gallery."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.films import check_import
from jobs.services.importer import register_import
from pages.present.import_view import report_csv
from store import datasets as store_datasets
from store.imports import import_problems, latest_import
from store.reviews import record_review
from tests.helpers.films import meta_frame, write_film_folder
from tests.helpers.stores import V1_SCHEMA

PAGE = Path(__file__).parents[2] / "pages" / "data.py"


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=60)


def test_empty_store_explains_the_phantom_and_shows_films(home):
    at = _page().run()
    assert not at.exception
    assert "synthetic knee phantom" in at.markdown[0].value
    assert "No dataset is registered yet" in at.info[0].value
    assert len(at.get("image")) == 5 + 4  # one film per KL grade, one per CPPD grade


def test_registered_dataset_shows_its_counts_and_grades(path):
    meta = meta_frame(n_patients=40)
    dataset_id = store_datasets.register_dataset(
        spec_key="phantom(n_images=80)",
        kind="phantom",
        params={"n_images": 80},
        meta=meta,
        path=path,
    )
    at = _page().run()
    assert not at.exception
    listing = at.dataframe[2].value
    assert list(listing["dataset_id"]) == [dataset_id]
    assert int(listing["n_images"].iloc[0]) == 80
    assert int(listing["n_kl"].iloc[0]) == int(meta["kl"].notna().sum())
    counts = at.dataframe[3].value
    assert int(counts.loc["total", "CPPD"]) == 80
    assert int(counts.loc["total", "KL"]) == int(meta["kl"].notna().sum())
    joint = at.dataframe[4].value
    assert int(joint.to_numpy().sum()) == int(meta["kl"].notna().sum())


def test_mask_overlay_colours_the_films(home):
    at = _page().run()
    at.toggle(key="data_mask_overlay").set_value(True).run()
    assert not at.exception
    assert len(at.get("image")) == 9
    assert "calcifications" in "".join(m.value for m in at.markdown)


def test_gallery_can_be_hidden(home):
    at = _page().run()
    at.toggle(key="data_gallery").set_value(False).run()
    assert not at.exception
    assert not at.get("image")


def test_an_imported_dataset_shows_its_report_detector_and_films_left_out(path, tmp_path):
    folder, csv, _ = write_film_folder(tmp_path, n=8, n_joint=8, seed=2)
    (folder / "empty.png").write_bytes(b"")
    table = pd.read_csv(csv)
    extra = {"image": "empty.png", "patient_id": "q1", "side": "L", "kl": 1, "cppd": 1}
    pd.concat([table, pd.DataFrame([extra])]).to_csv(csv, index=False)
    done = register_import(check_import(folder), name="lab films", skip_bad=True, store_path=path)
    record_review(done.dataset_id, table["image"][0].removesuffix(".png"), "exclude", path=path)

    at = _page().run()
    at.selectbox(key="data_dataset").set_value(done.dataset_id).run()
    assert not at.exception
    (problems,) = [t.value for t in at.table if "what to do" in t.value.columns]
    assert problems.loc[problems["file"] == "empty.png", "severity"].tolist() == ["error"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["films registered"] == "8" and metrics["left out"] == "1"
    captions = "\n".join(c.value for c in at.caption)
    assert "Knees located by the classical detector" in captions
    assert "Crop review: 1 film(s) excluded, 0 box(es) corrected" in captions
    (expander,) = [e for e in at.expander if "licences" not in e.label]
    assert "1 by the check, 1 by crop review" in expander.label
    assert "`empty.png`" in "\n".join(m.value for m in expander.markdown)
    (download,) = at.get("download_button")
    assert download.label == "Download report (CSV)" and download.proto.url.endswith(".csv")
    summary = latest_import(done.dataset_id, path=path)
    text = report_csv(import_problems(summary.import_id, path=path), summary)
    # Headed by the import's card, and read back as the table with pandas' comment mark.
    card = dict(line[2:].split(": ", 1) for line in text.splitlines() if line.startswith("# "))
    assert card["dataset id"] == done.dataset_id and card["folder"] == summary.source
    assert card["knees located by"].startswith("the classical detector")
    assert "8 films registered" in card["counts"] and "1 left out" in card["counts"]
    table = pd.read_csv(io.StringIO(text), comment="#")
    assert table.columns.tolist() == ["file", "csv_row", "severity", "kind", "problem", "action"]
    assert table.loc[table["file"] == "empty.png", "kind"].tolist() == ["empty_file"]


def _split_seeds(dataset_id: str, seeds: range, path: Path) -> None:
    """Store a split per seed as SoftGrade does now (the rule recorded with it)."""
    images = store_datasets.dataset_labels(dataset_id, path=path)["image_id"]
    for seed in seeds:
        splits = pd.Series(["train", "val", "test"] * len(images), dtype=str)[: len(images)]
        store_datasets.save_splits(dataset_id, seed, splits.set_axis(images), path=path)


def test_new_splits_are_named_as_stratified_on_both_knees(path):
    dataset_id = store_datasets.register_dataset(
        spec_key="phantom(n_images=80)",
        kind="phantom",
        params={"n_images": 80},
        meta=meta_frame(n_patients=40),
        path=path,
    )
    at = _page().run()
    assert "no seed of this dataset has been split yet" in _markdown(at)
    _split_seeds(dataset_id, range(3), path)
    st.cache_data.clear()  # as the page's 10 s read cache expiring
    at = _page().run()
    assert not at.exception
    note = _markdown(at)
    assert "**Splits** (seeds 0–2): patients kept whole, balanced on both knees'" in note
    assert "first knee" not in note


def test_splits_of_an_older_store_are_named_as_first_knee_and_mixed_seeds_per_seed(home):
    """A version-1 store (splits stored before their rule was) upgraded in place: its splits
    read as the first-knee rule; a seed split after the upgrade reads as both knees."""
    import duckdb

    from store.db import default_store_path, init_schema

    path = default_store_path()
    con = duckdb.connect(str(path))
    con.execute(V1_SCHEMA.read_text())
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute(
        "INSERT INTO datasets (dataset_id, kind, spec_key, params, n_images) "
        "VALUES ('ds-old', 'phantom', 'phantom(old)', '{}', 2)"
    )
    con.execute("INSERT INTO images VALUES ('ds-old', 'a', 'p1', 'L', NULL)")
    con.execute("INSERT INTO images VALUES ('ds-old', 'b', 'p1', 'R', NULL)")
    con.execute("INSERT INTO labels VALUES ('ds-old', 'a', 'KL', 1, 1)")
    con.execute("INSERT INTO labels VALUES ('ds-old', 'b', 'KL', 2, 2)")
    for seed in (0, 1):
        con.execute(
            f"INSERT INTO splits VALUES ('ds-old', {seed}, 'a', 'train'), "
            f"('ds-old', {seed}, 'b', 'test')"
        )
    con.close()
    init_schema(path)  # the upgrade `python -m jobs` and the worker run on an older store

    at = _page().run()
    assert not at.exception, [e.value for e in at.exception]
    note = _markdown(at)
    assert "**Splits** (seeds 0–1): patients kept whole, balanced on the first knee's" in note
    assert "older SoftGrade" in note

    _split_seeds("ds-old", range(2, 3), path)
    st.cache_data.clear()  # as the page's 10 s read cache expiring
    at = _page().run()
    note = _markdown(at)
    assert "made by 2 rules" in note
    assert "- seeds 0–1: patients kept whole, balanced on the first knee's" in note
    assert "- seed 2: patients kept whole, balanced on both knees'" in note


def _markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_the_data_page_says_what_the_yolo_detectors_licence_means(tmp_path, monkeypatch):
    from engine.detect import yolo as yolo_module

    monkeypatch.setenv("SOFTGRADE_HOME", str(tmp_path))
    for available, words in ((True, "asks nothing of you"), (False, "classical detector")):
        monkeypatch.setattr(
            yolo_module.importlib.util, "find_spec", lambda _n, a=available: object() if a else None
        )
        at = _page().run()
        assert not at.exception
        text = " ".join(e.value for e in at.markdown)
        assert "AGPL-3.0" in text and words in text, text[-600:]
