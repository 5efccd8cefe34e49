"""Launch lists a folder imported with several label versions once, offers its versions
(the latest chosen unless another is picked) and queues the study on the version picked."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import jobs as store_jobs
from store import label_versions as store_versions
from tests.helpers.label_versions import record_label_version

PAGE = Path(__file__).parents[2] / "pages" / "launch.py"
GRADES = [g % 5 for g in range(20)]  # one film per patient, every KL grade, enough to split


def _two_versions(path: Path) -> list[store_versions.LabelVersion]:
    folder = path.parent / "films"
    folder.mkdir()
    record_label_version(path, folder, "labels.csv", GRADES)
    record_label_version(path, folder, "second.csv", [min(g + 1, 4) for g in GRADES], by="bob")
    return store_versions.label_versions(folder, path=path)


def _queued_labels(path: Path) -> str:
    (job_id,) = store_jobs.list_jobs(path=path)["job_id"]
    return store_jobs.get_job(job_id, path=path).spec["dataset"]["labels_csv"]


# Each renders the Launch page three times or more: over the fast tier's ~2 s of CPU.
@pytest.mark.slow
def test_the_latest_label_version_is_chosen_and_queued(path):
    v1, v2 = _two_versions(path)
    at = AppTest.from_file(str(PAGE), default_timeout=120).run()
    options = at.selectbox(key="launch_dataset").options
    # The folder once (options read as their labels: the dataset's key names its folder).
    folder = str(path.parent / "films")
    (shown,) = [o for o in options if f"path={folder}" in o]
    assert shown.endswith("· 2 label versions") and v2.labels_csv in shown
    at.selectbox(key="launch_dataset").set_value(v2.dataset_id).run()
    picker = at.selectbox(key=f"launch_label_version_{v2.dataset_id}")
    assert picker.value == 2 and picker.options == [v1.describe(), v2.describe()]
    assert any("The latest label version is chosen" in c.value for c in at.caption)
    at.button(key="launch_submit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _queued_labels(path) == v2.labels_csv


@pytest.mark.slow
def test_the_original_label_version_can_be_picked_instead(path):
    v1, v2 = _two_versions(path)
    at = AppTest.from_file(str(PAGE), default_timeout=120).run()
    at.selectbox(key="launch_dataset").set_value(v2.dataset_id).run()
    at.selectbox(key=f"launch_label_version_{v2.dataset_id}").set_value(1).run()
    at.button(key="launch_submit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _queued_labels(path) == v1.labels_csv
