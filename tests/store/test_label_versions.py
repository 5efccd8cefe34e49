"""A folder's label versions: each labels CSV it was imported with, numbered by first
import, with who imported it and when; read back from a study's labels CSV on its card."""

from __future__ import annotations

from store import jobs as store_jobs
from store import label_versions as versions
from store.studies import study_card
from tests.helpers.label_versions import record_label_version


def test_each_labels_csv_of_a_folder_is_a_version_numbered_by_first_import(store, tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    first = record_label_version(store, folder, "labels.csv", [0, 1, 2], by="alice")
    second = record_label_version(store, folder, "second.csv", [1, 1, 2], by="bob")
    # The same labels again (another import of version 1) make no new version.
    assert record_label_version(store, folder, "labels.csv", [0, 1, 2]) == first
    other = tmp_path / "elsewhere"
    other.mkdir()
    record_label_version(store, other, "labels.csv", [3, 3, 3])

    found = versions.label_versions(folder, path=store)
    assert [(v.version, v.dataset_id) for v in found] == [(1, first), (2, second)]
    assert [v.imported_by for v in found] == ["alice", "bob"]
    assert found[0].imported_at <= found[1].imported_at
    assert found[1].latest and not found[0].latest
    assert found[0].describe().startswith("v1 of 2 (the original): labels.csv, imported ")
    assert found[1].describe().startswith("v2 of 2 (the latest): second.csv, imported ")
    assert "by bob, 3 images" in found[1].describe()
    # The same folder written another way is the same folder.
    assert versions.label_versions(f"{folder}/../films/", path=store) == found
    assert versions.label_versions(tmp_path / "never", path=store) == []


def test_the_study_card_says_which_label_version_the_study_trains_on(store, tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    record_label_version(store, folder, "labels.csv", [0, 1, 2])
    record_label_version(store, folder, "second.csv", [1, 1, 2], by="bob")
    v2 = versions.label_versions(folder, path=store)[1]
    dataset = {"kind": "folder", "path": str(folder), "labels_csv": v2.labels_csv}
    job = store_jobs.enqueue_job(
        {"name": "on v2", "dataset": dataset, "tasks": ["KL"], "methods": ["nominal"],
         "seeds": [0]},
        path=store,
    )  # fmt: skip
    card = study_card(store_jobs.get_job(job, path=store).study_id, path=store)
    assert card["label version"] == v2.describe()
    assert "by bob" in card["label version"]
    # Labels a study file names directly are said to be no imported version.
    direct = dict(dataset, labels_csv=str(folder / "mine.csv"))
    job = store_jobs.enqueue_job(
        {"name": "own", "dataset": direct, "tasks": ["KL"], "methods": ["nominal"], "seeds": [0]},
        path=store,
    )
    card = study_card(store_jobs.get_job(job, path=store).study_id, path=store)
    assert card["label version"] == "mine.csv (not one of this store's imported label versions)"
    # The phantom has no label versions: no line.
    job = store_jobs.enqueue_job(
        {"name": "ph", "dataset": "phantom", "tasks": ["KL"], "methods": ["nominal"], "seeds": [0]},
        path=store,
    )
    assert "label version" not in study_card(
        store_jobs.get_job(job, path=store).study_id, path=store
    )
