"""Second readings exported as a labels CSV that imports as a new label version of the
dataset, the first version and its label untouched; members only."""

from __future__ import annotations

import pytest

from engine.films import check_import
from jobs.services import second_reader
from jobs.services.access import AccessDenied
from jobs.services.importer import register_import
from store import datasets as store_datasets
from store.db import init_schema
from store.users import Account, Role
from tests.helpers.films import write_film_folder


def test_readings_import_as_a_new_label_version(tmp_path):
    store = tmp_path / "s.duckdb"
    init_schema(store)
    folder, _, labels = write_film_folder(tmp_path, n=8, n_joint=8, seed=3)
    first = register_import(check_import(folder), name="lab", store_path=store, home=tmp_path)
    film = str(labels["image_id"].iloc[0])
    recorded = int(labels["kl"].iloc[0])
    new_grade = (recorded + 2) % 5
    member = Account("mo", Role.MEMBER)
    second_reader.record_second_reading(
        member, first.dataset_id, film, "KL", new_grade, recorded=recorded, path=store
    )
    export = second_reader.readings_export(first.dataset_id, path=store)
    assert export.label_version and "softgrade import" in export.note
    relabelled = folder / export.file_name
    relabelled.write_text(export.text)

    second = register_import(
        check_import(folder, labels_csv=relabelled), name="lab v2", store_path=store, home=tmp_path
    )
    assert second.dataset_id != first.dataset_id  # a new label version, its own dataset
    new = store_datasets.dataset_labels(second.dataset_id, path=store)
    old = store_datasets.dataset_labels(first.dataset_id, path=store)
    assert _kl_of(new, film) == new_grade
    assert _kl_of(old, film) == recorded  # the first label is never overwritten
    assert len(new) == len(old)


def _kl_of(labels, image_id: str) -> int:
    return int(labels.loc[labels["image_id"] == image_id, "kl"].iloc[0])


def test_a_viewer_may_not_record_a_reading(tmp_path):
    store = tmp_path / "s.duckdb"
    init_schema(store)
    with pytest.raises(AccessDenied, match="record second readings"):
        second_reader.record_second_reading(
            Account("vi", Role.VIEWER), "d", "f", "KL", 1, path=store
        )
