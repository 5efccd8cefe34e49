"""Page tests: synthetic stores to render, a page run through Streamlit's AppTest, what it shows."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest, app_test

from pages.widgets.sign_in import TOKEN_KEY
from store import jobs as store_jobs
from store import runs as store_runs
from store import sign_in as store_sign_in
from store import users as store_users
from store.db import StoreError, init_schema
from tests.helpers.stores import config0_run, repoint_checkpoints

COMPARE_PAGE = "../../pages/compare.py"  # from tests/helpers, as from tests/app
TIMEOUT_S = 120  # the first run imports torch, scipy and statsmodels


def make_store(
    home: Path,
    *,
    name: str = "synthetic",
    tasks: tuple[str, ...] = ("KL", "CPPD"),
    methods: tuple[str, ...] = ("nominal", "beta"),
    seeds: tuple[int, ...] = (0, 1, 2),
    finished_seeds: int | None = None,
) -> str:
    """A store of synthetic selected runs (one configuration per search); returns the study id.

    ``finished_seeds`` leaves the job running with only that many seeds stored (the next
    seed half stored), as a study in progress looks.
    """
    path = home / "softgrade.duckdb"
    if not path.exists():
        init_schema(path)
    spec = {"name": name, "tasks": list(tasks), "methods": list(methods), "seeds": list(seeds)}
    spec["budget"] = 1
    job_id = store_jobs.enqueue_job(spec, path=path)
    job = store_jobs.claim_next_job("test-worker", path=path)
    assert job is not None and job.job_id == job_id
    rng = np.random.default_rng(7)
    stored_seeds = seeds if finished_seeds is None else seeds[: finished_seeds + 1]
    runs: list[store_runs.RunRecord] = []  # written in one transaction
    for position, seed in enumerate(stored_seeds):
        grades = np.random.default_rng(seed)
        kl = grades.integers(0, 5, 30)
        cppd = np.concatenate([np.minimum(kl, 3), grades.integers(0, 4, 10)])
        images = [f"j{i:02d}" for i in range(30)] + [f"c{i:02d}" for i in range(10)]
        split = np.where(np.arange(40) % 3 == 0, "val", "test")
        for task in tasks:
            for m_index, method in enumerate(methods):
                if finished_seeds is not None and position == finished_seeds and m_index > 0:
                    break  # the seed in progress: only its first search is done
                truth, n_classes = (kl, 5) if task == "KL" else (cppd, 4)
                step = rng.integers(-1, 2, truth.size) * (
                    rng.random(truth.size) < 0.3 + m_index / 10
                )
                predictions = pd.DataFrame(
                    {
                        "image_id": images[: truth.size],
                        "split": split[: truth.size],
                        "y_true": truth,
                        "y_pred": np.clip(truth + step, 0, n_classes - 1),
                        "probs": [np.full(n_classes, 1 / n_classes, dtype=np.float32)] * truth.size,
                    }
                )
                runs.append(config0_run(job.study_id, job_id, task, method, seed, predictions))
    store_runs.record_runs(runs, path=path)
    store_runs.select_best_runs(job.study_id, path=path)
    if finished_seeds is None:
        store_jobs.finish_job(job_id, store_jobs.JobStatus.SUCCEEDED, path=path)
    return job.study_id


def run_page(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    page: str = COMPARE_PAGE,
    *,
    tab: str | None = None,
    query: dict[str, str | list[str]] | None = None,
) -> AppTest:
    """Render a page against the store in ``home`` (on Compare, with ``tab`` open; opened by
    a link with ``query`` as its URL parameters); fail on any exception."""
    monkeypatch.setenv("SOFTGRADE_HOME", str(home))
    at = AppTest.from_file(page, default_timeout=TIMEOUT_S)
    if tab is not None:
        at.session_state["compare_tab"] = tab  # as a click on the tab does
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest, kind: str) -> str:
    """Every element of one kind (info, warning, caption, markdown, ...) as one string, as a
    person reads it: markdown's backslash escapes removed (names, paths and error messages
    are escaped as text, pages/present/user_text.py)."""
    joined = "\n".join(str(element.value) for element in at.get(kind))
    return re.sub(r"\\(.)", r"\1", joined)


def images(at) -> list:
    """Every st.image element's images, in page order."""
    return [img for element in at.get("image") for img in element.proto.imgs]


def copy_home(finished_study, home: Path, *ignore: str) -> Path:
    """A copy of the study's home (leaving out ``ignore`` patterns) whose store points at the
    copy's own checkpoints, so removing a file there is what the page sees."""
    shutil.copytree(finished_study.home, home, ignore=shutil.ignore_patterns(*ignore))
    repoint_checkpoints(home / "softgrade.duckdb", finished_study.home, home)
    return home


ROOT = Path(__file__).parents[2]


PASSWORD = "correct horse battery"


def signed_in(page: str, name: str, role: str, path: Path) -> AppTest:
    """The page as ``name`` (added with ``role`` if new), signed in through the store."""
    try:
        store_users.get_user(name, path=path)
    except StoreError:  # not there yet
        store_users.add_user(name, role, PASSWORD, path=path)
    _, token = store_sign_in.sign_in(name, PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=30)
    at.session_state[TOKEN_KEY] = token
    return at


def download_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[AppTest], dict[str, tuple[str, str]]]:
    """A reader of what each download button of a page run serves: key -> (file type, text).

    AppTest keeps the files in a real in-memory media store that it drops after each run;
    this subclass only remembers the last one so the test can read the files back.
    """
    storages: list[app_test.MemoryMediaFileStorage] = []

    class Remembered(app_test.MemoryMediaFileStorage):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            storages.append(self)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", Remembered)

    def read(at: AppTest) -> dict[str, tuple[str, str]]:
        served = {}
        for button in at.get("download_button"):
            name = button.proto.url.rsplit("/", 1)[-1]
            if not name:  # a download made only when clicked (the HTML report)
                continue
            content = storages[-1].get_file(name).content
            served[button.proto.id.split("-")[-1]] = (name.rsplit(".", 1)[-1], content.decode())
        return served

    return read


def finished_synthetic_store(home: Path, n_seeds: int, **kwargs: object) -> str:
    """A store in ``home`` holding one finished `write_synthetic_study` (patients, splits,
    true grades); returns the study id."""
    from tests.helpers.synthetic_study import write_synthetic_study

    path = home / "softgrade.duckdb"
    init_schema(path)
    study_id = write_synthetic_study(path, n_seeds=n_seeds, **kwargs)  # type: ignore[arg-type]
    job = store_jobs.claim_next_job("test-worker", path=path)
    assert job is not None and job.study_id == study_id
    store_jobs.finish_job(job.job_id, store_jobs.JobStatus.SUCCEEDED, path=path)
    return study_id
