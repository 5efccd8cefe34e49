"""Which label version of an imported folder a study trains on (`store.label_versions`).

A study file names it in its dataset, ``dataset: {kind: folder, path: FOLDER,
label_version: 2}`` (a number, ``latest`` or ``original``); before the study is queued the
version becomes that version's registered dataset: its canonical labels CSV and knee
detector. So the worker trains on exactly the labels the version holds, through the ordinary
path, and the study card reads the version back from the labels CSV the study names. The
Launch page picks among the versions of a registered folder the same way
(`pages.widgets.launch_form`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.config import DatasetSpec, SpecError, StudySpec
from store import datasets as store_datasets
from store import label_versions as store_versions
from store.label_versions import LabelVersion

StorePath = Path | str | None

#: The dataset setting that names a label version.
LABEL_VERSION = "label_version"
LATEST = "latest"
ORIGINAL = "original"
#: Which version Launch offers first when a folder has several: the newest import, since
#: a lab imports a new version (second readings, corrected grades) to train on it.
DEFAULT_CHOICE = LATEST


def versions_list(versions: list[LabelVersion]) -> str:
    """The versions in one line, for a message: ``"1 (labels.csv, 2026-11-28 21:00), 2 (...)"``."""
    return ", ".join(
        f"{v.version} ({Path(v.source_labels).name if v.source_labels else 'grade folders'}, "
        f"{v.imported_at:%Y-%m-%d %H:%M})"
        for v in versions
    )


def pick_version(versions: list[LabelVersion], wanted: Any, folder: str) -> LabelVersion:
    """The version ``wanted`` names: a number, ``latest`` or ``original``.

    Raises:
        SpecError: the folder has no imported version, or none called ``wanted``; the message
            lists the versions there are.
    """
    if not versions:
        raise SpecError(
            f"dataset.{LABEL_VERSION}: {folder} has no imported label version; import it "
            "first (softgrade import FOLDER --labels FILE, or the Launch page's import)"
        )
    text = str(wanted).strip().lower()
    if text in (LATEST, ORIGINAL):
        return versions[-1] if text == LATEST else versions[0]
    found = next((v for v in versions if text.isdigit() and v.version == int(text)), None)
    if found is None:
        raise SpecError(
            f"dataset.{LABEL_VERSION}: {folder} has no label version {wanted!r}; its versions: "
            f"{versions_list(versions)}; or '{LATEST}' or '{ORIGINAL}'"
        )
    return found


def version_dataset(version: LabelVersion, *, path: StorePath = None) -> dict[str, Any]:
    """A version's dataset mapping as registered (kind, path, labels CSV, detector)."""
    found = store_datasets.dataset_params(version.dataset_id, path=path)
    if found is None:  # a version is read from the datasets table: cannot happen
        raise SpecError(f"dataset.{LABEL_VERSION}: dataset {version.dataset_id} is gone")
    kind, params = found
    return {"kind": kind, **params}


def with_label_version(spec: StudySpec, *, path: StorePath = None) -> StudySpec:
    """``spec`` with its ``dataset.label_version`` replaced by that version's registered
    dataset; unchanged when it names none.

    Raises:
        SpecError: the version is not one of the folder's (the message lists them), or the
            study names a labels CSV as well.
    """
    params = dict(spec.dataset.params)
    if LABEL_VERSION not in params:
        return spec
    wanted = params.pop(LABEL_VERSION)
    if spec.dataset.kind != "folder":
        raise SpecError(
            f"dataset.{LABEL_VERSION}: only an imported folder has label versions, not a "
            f"{spec.dataset.kind} dataset"
        )
    if "labels_csv" in params:
        raise SpecError(
            f"dataset: give {LABEL_VERSION} or labels_csv, not both (a label version is a "
            "labels CSV the store registered)"
        )
    folder = str(params.pop("path"))
    version = pick_version(store_versions.label_versions(folder, path=path), wanted, folder)
    mapping = version_dataset(version, path=path) | params
    kind = str(mapping.pop("kind"))
    return replace(spec, dataset=DatasetSpec(kind=kind, params=mapping))
