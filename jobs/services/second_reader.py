"""The second reader's list (issue 41): a study's test films ranked for a second look, a
second reading recorded on a lab member's behalf, and the readings as a labels CSV.

The readings never change the dataset's labels. For an imported folder dataset they export
as its labels CSV with the read grades replaced, which `softgrade import FOLDER --labels
FILE` (or the Launch page's import) registers as a new dataset: a new label version, with
its own id, cache and splits, while studies of the first keep theirs. A study picks its
version (`jobs.services.label_choice`) and its card says which. A phantom dataset has
no film files to import, so its readings export as a plain table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from engine.analysis import second_look
from engine.films import read_labels
from engine.vocab import LABEL_COLUMNS
from jobs.services.access import Account, Action, actor_name, require
from jobs.services.csv_safe import escape_csv_cells
from jobs.services.grade_sets import seed_thresholds
from store import datasets as store_datasets
from store import readings as store_readings

StorePath = Path | str | None

#: Said with a phantom dataset's export.
PHANTOM_EXPORT_NOTE = (
    "This dataset is not an imported folder of films (the synthetic phantom, say): it has no "
    "labels CSV to rewrite, so its readings export as a table (film, task, grade, reader) "
    "that cannot be imported as a new label version."
)


def ranked_films(study_id: str, task: str, method: str, *, path: StorePath = None) -> pd.DataFrame:
    """`engine.analysis.second_look.second_look` of the study's selected runs of one task
    and method: each seed's test films, the ranges from each seed's validation films."""
    films = store_readings.film_probabilities(study_id, task, method, path=path)
    if films.empty:
        return pd.DataFrame()
    thresholds = seed_thresholds(study_id, method, path=path).get(task, {})
    return second_look.second_look(films, thresholds, task)


def record_second_reading(
    account: Account | None,
    dataset_id: str,
    image_id: str,
    task: str,
    grade: int,
    *,
    recorded: int | None = None,
    study_id: str | None = None,
    note: str | None = None,
    path: StorePath = None,
) -> None:
    """Append a second reading on ``account``'s behalf (members and admins; ``None``: single
    user mode), with its audit line; the recorded label is left as it was.

    Raises:
        AccessDenied: the account may not record readings.
        ValueError: an unknown task or a grade outside it.
    """
    if account is not None:
        require(account, Action.SECOND_READING)
    store_readings.record_reading(
        dataset_id,
        image_id,
        task,
        grade,
        reader=actor_name(account),
        recorded=recorded,
        study_id=study_id,
        note=(note or "").strip() or None,
        path=path,
    )


@dataclass(frozen=True)
class ReadingsExport:
    """A dataset's readings as a file: its text, name, and a note on what it is."""

    text: str
    file_name: str
    note: str
    label_version: bool


def readings_export(dataset_id: str, *, path: StorePath = None) -> ReadingsExport:
    """The readings of a dataset as a labels CSV (an imported folder) or a table (else)."""
    readings = store_readings.list_readings(dataset_id, path=path)
    found = store_datasets.dataset_params(dataset_id, path=path)
    kind, params = found if found else ("", {})
    if kind == "folder" and params.get("labels_csv"):
        root, labels_csv = Path(params["path"]), Path(params["labels_csv"])
        ids = read_labels(root, labels_csv)["image_id"]
        raw = pd.read_csv(labels_csv, dtype=str, keep_default_na=False)
        text = second_look.labels_with_readings(raw, ids, readings, dict(LABEL_COLUMNS)).to_csv(
            index=False
        )
        return ReadingsExport(
            text,
            "labels_second_reading.csv",
            f"The dataset's labels with {len(second_look.latest_readings(readings))} read "
            f"grades replaced (the newest reading of each). Import it as a new label version: "
            f"softgrade import {root} --labels labels_second_reading.csv; then pick that "
            f"version on the Launch page, or name it in a study file (dataset: {{kind: "
            f"folder, path: {root}, label_version: latest}}).",
            True,
        )
    table = readings[["image_id", "task", "grade", "recorded", "reader", "note", "read_at"]]
    # Notes are typed by people: formula-leading cells are escaped as in every export.
    text = escape_csv_cells(table).to_csv(index=False)
    return ReadingsExport(text, "second_readings.csv", PHANTOM_EXPORT_NOTE, False)
