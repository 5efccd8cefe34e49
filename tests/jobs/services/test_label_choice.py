"""A study file names a label version of an imported folder; before it is queued the version
becomes that version's labels CSV, and an unknown one is one message listing the versions."""

from __future__ import annotations

import pytest

from engine.config import SpecError, StudySpec
from jobs.services.label_choice import with_label_version
from store import label_versions as store_versions
from tests.helpers.label_versions import folder_imported_twice
from tests.helpers.studies import tiny_study


@pytest.fixture
def folder(home):
    """A folder imported twice: labels.csv (v1) and second.csv (v2, from bob)."""
    return folder_imported_twice(home)


def _spec(folder, version) -> StudySpec:
    dataset = {"kind": "folder", "path": str(folder), "label_version": version}
    return StudySpec.from_dict(tiny_study(dataset=dataset, tasks=["KL"]))


def test_a_named_version_becomes_its_registered_labels(folder, home):
    store = home / "softgrade.duckdb"
    v1, v2 = store_versions.label_versions(folder, path=store)
    for named, version in ((2, v2), ("2", v2), ("latest", v2), ("original", v1), (1, v1)):
        resolved = with_label_version(_spec(folder, named), path=store)
        assert resolved.dataset.params["labels_csv"] == version.labels_csv, named
        assert "label_version" not in resolved.dataset.params
        assert resolved.dataset.key == f"folder(labels_csv={version.labels_csv},path={folder})"
    plain = StudySpec.from_dict(tiny_study(tasks=["KL"]))
    assert with_label_version(plain, path=store) is plain  # nothing named, nothing read


def test_an_unknown_version_is_one_message_listing_the_versions(folder, home):
    store = home / "softgrade.duckdb"
    with pytest.raises(SpecError) as caught:
        with_label_version(_spec(folder, 7), path=store)
    message = str(caught.value)
    assert message.startswith("dataset.label_version: ") and "no label version 7" in message
    assert "1 (labels.csv, " in message and "2 (second.csv, " in message
    assert "'latest' or 'original'" in message
    never = home / "never"
    never.mkdir()
    with pytest.raises(SpecError, match="has no imported label version; import it first"):
        with_label_version(_spec(never, 1), path=store)
    both = {"kind": "folder", "path": str(folder), "label_version": 1, "labels_csv": "x.csv"}
    with pytest.raises(SpecError, match="label_version or labels_csv, not both"):
        with_label_version(StudySpec.from_dict(tiny_study(dataset=both)), path=store)
    phantom = {"kind": "phantom", "label_version": 1}
    with pytest.raises(SpecError, match="only an imported folder has label versions"):
        with_label_version(StudySpec.from_dict(tiny_study(dataset=phantom)), path=store)
