"""The Data page: the phantom explained, registered datasets with grade counts, the gallery."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from store import datasets as store_datasets
from tests.conftest import meta_frame

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
