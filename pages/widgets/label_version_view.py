"""Launch: which label version of a registered folder a study trains on.

A folder imported more than once with other labels (the Second reader's export, corrected
grades) has several label versions (`store.label_versions`). The dataset picker lists the
folder once, by its latest version; below it, a "Label version" picker offers every version,
the latest first chosen (`jobs.services.label_choice.DEFAULT_CHOICE`), and the study is
queued on the chosen version's dataset: its labels CSV and knee detector.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import streamlit as st

from jobs.services.label_choice import DEFAULT_CHOICE, LATEST
from jobs.services.page_store import LabelVersion, label_versions
from pages.widgets import reads

CHOICE_NOTE = (
    "The latest label version is chosen unless you pick another: v1 is the folder's original "
    "import, each later version the same films with the grades of a later labels file (a "
    "second reader's export, say). The study card says which one a study trained on."
)


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner=False)
def cached_versions(path: str, folder: str) -> list[LabelVersion]:
    """The label versions of one folder (`store.label_versions.label_versions`)."""
    return label_versions(folder, path=path)


def versions_of(row: Any, path: Path) -> list[LabelVersion]:
    """The label versions of a registered dataset's folder; none for the phantom or a
    folder never imported."""
    params = json.loads(row.params)
    if row.kind != "folder" or "path" not in params:
        return []
    return cached_versions(str(path), str(params["path"]))


def older_versions(registered: dict[str, Any], path: Path) -> set[str]:
    """Dataset ids that are a label version of a folder but not its latest: the picker
    lists each folder once, the versions are picked below it."""
    older: set[str] = set()
    for row in registered.values():
        versions = versions_of(row, path)
        if len(versions) > 1 and row.dataset_id != versions[-1].dataset_id:
            older.add(row.dataset_id)
    return older


def pick_label_version(row: Any, registered: dict[str, Any], path: Path) -> Any:
    """The registered dataset of the label version picked for ``row``'s folder (``row``
    itself when the folder has one version)."""
    versions = versions_of(row, path)
    if len(versions) < 2:
        return row
    numbers = [v.version for v in versions]
    picked = st.selectbox(
        "Label version",
        numbers,
        index=len(numbers) - 1 if DEFAULT_CHOICE == LATEST else 0,
        format_func=lambda n: versions[n - 1].describe(),
        key=f"launch_label_version_{row.dataset_id}",
        help=CHOICE_NOTE,
    )
    st.caption(CHOICE_NOTE)
    return registered.get(versions[int(picked) - 1].dataset_id, row)
