"""The Data page: the phantom explained, registered datasets with grade counts, the gallery."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from engine.import_check import check_import
from jobs.importer import register_import
from pages._import_view import report_csv
from store import datasets as store_datasets
from store.imports import import_problems, latest_import
from store.reviews import record_review
from tests.conftest import meta_frame, write_film_folder

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
    (problems,) = [d.value for d in at.dataframe if "what to do" in d.value.columns]
    assert problems.loc[problems["file"] == "empty.png", "severity"].tolist() == ["error"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["films registered"] == "8" and metrics["left out"] == "1"
    captions = "\n".join(c.value for c in at.caption)
    assert "Knees located by the classical detector" in captions
    assert "Crop review: 1 film(s) excluded, 0 box(es) corrected" in captions
    (expander,) = at.expander
    assert "1 by the check, 1 by crop review" in expander.label
    assert "`empty.png`" in "\n".join(m.value for m in expander.markdown)
    (download,) = at.get("download_button")
    assert download.label == "Download report (CSV)" and download.proto.url.endswith(".csv")
    stored = import_problems(latest_import(done.dataset_id, path=path).import_id, path=path)
    assert report_csv(stored).splitlines()[0] == "file,csv_row,severity,kind,problem,action"
    assert "empty.png,10,error,empty_file" in report_csv(stored)
