"""The store in use and the pages' cached reads of it.

Pages read through these cached wrappers (a few seconds' TTL) so that reruns do not hit the
store on every widget change, and never hold a DuckDB connection across reruns: a DuckDB
connection is not thread-safe, so none is kept in ``st.cache_resource``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd
import streamlit as st

from engine.config import StudySpec
from jobs.services.page_store import (
    StoreError,
    dataset_labels,
    default_store_path,
    init_schema_once,
    job_log,
    list_datasets,
    list_jobs,
    list_studies,
    pruned_run_counts,
    run_costs,
    run_group_counts,
    split_sizes,
    study_methods,
)
from pages.present.user_text import said

# The Launch presets, installed with the package (engine/studies/).
STUDIES_DIR = Path(str(resources.files("engine.studies")))


def store_path() -> Path:
    """The store this app uses: ``$SOFTGRADE_HOME/softgrade.duckdb``.

    The first call in a server process (or the app's warm-up, `jobs.services.import_warmup`)
    creates it if missing and upgrades an older one before any page reads it
    (`store.db.init_schema_once`: once, not every rerun, as it takes the write lock the worker
    needs). A store that cannot be used (truncated, not DuckDB, another program's, of a newer
    version) stops the page with one message; nothing in it is changed.
    """
    try:
        return init_schema_once(default_store_path())
    except StoreError as exc:
        store_unusable(exc)


STORE_UNUSABLE_TITLE = "SoftGrade cannot use its store"


def store_unusable(exc: StoreError) -> NoReturn:
    """Stop the page with why the store cannot be used and what to do (no traceback)."""
    st.error(f"**{STORE_UNUSABLE_TITLE}.** {said(exc)}", icon=":material/database:")
    st.stop()


@st.cache_data(ttl=2, show_spinner=False)
def cached_jobs(path: str) -> pd.DataFrame:
    """Every job with its progress, newest first."""
    return list_jobs(path=path)


@st.cache_data(ttl=2, show_spinner=False)
def cached_job_log(path: str, job_id: str) -> pd.DataFrame:
    """A job's log lines, oldest first."""
    return job_log(job_id, path=path)


@st.cache_data(ttl=60, show_spinner=False)
def cached_run_costs(path: str) -> pd.DataFrame:
    """Measured run costs per device (`store.costs.run_costs`); empty when unreadable, so an
    estimate falls back to its rough guess rather than failing the page."""
    try:
        return run_costs(path=path)
    except StoreError:
        return pd.DataFrame()


@st.cache_data(ttl=10, show_spinner=False)
def cached_datasets(path: str) -> pd.DataFrame:
    """Registered datasets with their image and label counts."""
    return list_datasets(path=path)


@st.cache_data(ttl=30, show_spinner=False)
def cached_dataset_labels(path: str, dataset_id: str) -> pd.DataFrame:
    """One row per image of a dataset with its KL and CPPD grades."""
    return dataset_labels(dataset_id, path=path)


@st.cache_data(ttl=60, show_spinner=False)
def load_preset(name: str) -> dict[str, Any]:
    """The validated study of ``engine/studies/<name>.yaml`` as a mapping (``StudySpec.to_dict``).

    Raises:
        SpecError: The preset file is missing or invalid.
    """
    return StudySpec.from_file(STUDIES_DIR / f"{name}.yaml").to_dict()


@st.cache_data(ttl=60, show_spinner=False)
def cached_imported_card(path: str, study_id: str) -> dict[str, Any] | None:
    """The card a study imported from a bundle came with (`store.bundle.imported_card`);
    None for a study run here or when the store cannot be read now."""
    from jobs.services.page_store import imported_card

    try:
        return imported_card(study_id, path=path)
    except StoreError:
        return None


def clear_job_caches() -> None:
    """Forget cached job reads, after this session wrote a job or a cancel request."""
    cached_jobs.clear()
    cached_job_log.clear()


RESULTS_TTL_S = 10  # a running study adds seeds; result pages re-read at most this often


def cached_studies(path: str, include_archived: bool = False) -> pd.DataFrame:
    """Every study (archived ones only if asked) with its status and run counts.

    Read again as soon as any job changes status (the jobs are re-read every 2 s), not only
    every `RESULTS_TTL_S`: a study whose job just finished must not read as still running
    on a result page opened a moment later, beside all its seeds finished."""
    return _studies(path, include_archived, _job_statuses(path))


def forget_studies() -> None:
    """Forget the cached study list (after this session changed, or found gone, a study)."""
    _studies.clear()


def _job_statuses(path: str) -> tuple[tuple[str, str], ...]:
    """Each job's id and status: what a study's status follows."""
    jobs = cached_jobs(path)
    return tuple(zip(jobs["job_id"].astype(str), jobs["status"].astype(str), strict=True))


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def _studies(
    path: str, include_archived: bool, job_statuses: tuple[tuple[str, str], ...]
) -> pd.DataFrame:
    """`cached_studies`' read, keyed on the jobs' statuses too."""
    return list_studies(include_archived=include_archived, path=path)


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_group_counts(path: str, study_ids: tuple[str, ...]) -> pd.DataFrame:
    """Stored runs per (study, task, method, seed)."""
    return run_group_counts(list(study_ids), path=path)


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_test_train_ratios(path: str, study_ids: tuple[str, ...]) -> dict[str, float]:
    """``n_test / n_train`` per task over the picked studies' splits: the correction of the
    corrected resampled t-test (`engine.analysis.paired.test_train_ratios`)."""
    # Imported here: engine.analysis.paired brings scipy.stats and baycomp (~0.5 s idle, 1.7 s
    # on a loaded machine), and every page imports this module through its sidebar.
    from engine.analysis import paired

    sizes = [split_sizes(study_id, path=path) for study_id in study_ids]
    return paired.test_train_ratios(pd.concat(sizes, ignore_index=True))


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_study_methods(path: str, study_ids: tuple[str, ...]) -> list[str]:
    """The distinct methods of the studies' stored runs (`store.runs.study_methods`)."""
    return study_methods(list(study_ids), path=path)


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_pruned_counts(path: str, study_ids: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """Study id -> (runs its pruned search stopped, runs stored), as on its study card."""
    return pruned_run_counts(study_ids, path=path)
