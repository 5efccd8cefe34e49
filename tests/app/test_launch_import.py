"""The Launch page's import: check a folder, one table of every problem, register its good
films (directly when clean, by skipping the bad ones otherwise), then queue a study on the
registered dataset; nothing is queued before."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from engine.films import check_import
from jobs.services.importer import register_import
from store import jobs as store_jobs
from store import sign_in as store_sign_in
from store.datasets import dataset_labels
from store.imports import latest_import, list_imports
from store.reviews import record_review
from tests.helpers.films import write_film_folder

PAGE = Path(__file__).parents[2] / "pages" / "launch.py"


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=120)


def _texts(elements) -> str:
    return "\n".join(e.value for e in elements)


def _folder(root: Path, *, n: int = 12, bad_film: bool = False, bad_row: bool = False) -> Path:
    """``n`` phantom films, every one KL-graded, with labels.csv; optionally a listed text
    file posing as a film, or a row with kl=7."""
    folder, csv, _ = write_film_folder(root, n=n, n_joint=n, seed=4)
    table = pd.read_csv(csv)
    if bad_film:
        (folder / "notes.png").write_text("not a film\n")
        extra = {"image": "notes.png", "patient_id": "q9", "side": "L", "kl": 1, "cppd": 1}
        table = pd.concat([table, pd.DataFrame([extra])], ignore_index=True)
    if bad_row:
        table.loc[1, "kl"] = 7
    table.to_csv(csv, index=False)
    return folder


def _import(at: AppTest, folder: Path) -> AppTest:
    at.selectbox(key="launch_dataset").set_value("folder").run()
    at.text_input(key="launch_folder").set_value(str(folder)).run()
    return at.button(key="launch_import_check").click().run()


def _problems(at: AppTest) -> pd.DataFrame:
    """The report's one problems table (file, row, severity, problem, what to do), each cell
    as a person reads it (the table renders markdown, so the page escapes every cell)."""
    (table,) = [t.value for t in at.table if "what to do" in t.value.columns]
    return table.map(lambda cell: re.sub(r"\\(.)", r"\1", str(cell)))


def _jobs(path: Path) -> list:
    return list(store_jobs.list_jobs(path=path)["job_id"])


def test_nothing_can_be_queued_before_the_folder_is_checked(path, tmp_path):
    folder = _folder(tmp_path)
    at = _page().run()
    at.selectbox(key="launch_dataset").set_value("folder").run()
    at.text_input(key="launch_folder").set_value(str(folder)).run()
    assert "check the folder first" in _texts(at.error)
    assert at.button(key="launch_submit").disabled and not at.exception
    # No detector trained in this home: the page says the classical one will crop.
    assert "Knees will be located by the classical detector" in _texts(at.caption)


def test_a_bad_film_is_named_skipped_and_the_good_films_queued(path, tmp_path):
    folder = _folder(tmp_path, bad_film=True)
    at = _import(_page().run(), folder)
    assert not at.exception
    problems = _problems(at)
    row = problems[problems["file"] == "notes.png"].iloc[0]
    assert row["severity"] == "error" and "a text file" in row["problem"]
    assert row["row"] == "14"  # header is line 1, twelve films, then this row
    assert "**1 error(s)**" in _texts(at.markdown) and "**12 good film(s)**" in _texts(at.markdown)
    assert "Left out: `notes.png`." in _texts(at.markdown)
    assert "1 error(s) left 1 film(s)" in _texts(at.error)
    assert at.button(key="launch_submit").disabled and _jobs(path) == []
    assert "launch_import_register" not in [b.key for b in at.button]  # only by skipping

    at.button(key="launch_import_skip_bad").click().run()
    assert not at.exception
    (dataset_id,) = list_imports(path=path)["dataset_id"]
    assert len(dataset_labels(dataset_id, path=path)) == 12
    assert latest_import(dataset_id, path=path).n_left_out == 1
    assert "Registered" in _texts(at.success) and _jobs(path) == []

    at.button(key="launch_submit").click().run()
    (job_id,) = _jobs(path)
    dataset = store_jobs.get_job(job_id, path=path).spec["dataset"]
    assert dataset["kind"] == "folder" and dataset["path"] == str(folder)
    assert Path(dataset["labels_csv"]).parent.parent == path.parent / "imports"


def test_a_folder_without_errors_registers_directly(path, tmp_path):
    at = _import(_page().run(), _folder(tmp_path))
    assert set(_problems(at)["severity"]) <= {"warning"}  # rare grades of a tiny folder
    assert "launch_import_skip_bad" not in [b.key for b in at.button]
    at.button(key="launch_import_register").click().run()
    assert len(list_imports(path=path)) == 1
    assert not at.button(key="launch_submit").disabled


def test_a_bad_row_is_named_and_a_changed_folder_needs_a_new_check(path, tmp_path):
    at = _import(_page().run(), _folder(tmp_path, bad_row=True))
    problems = _problems(at)
    assert "kl=7" in " ".join(problems["problem"]) and "3" in problems["row"].tolist()
    at.text_input(key="launch_folder").set_value(str(tmp_path / "elsewhere")).run()
    assert "changed since the check" in _texts(at.error)
    assert _jobs(path) == []


def test_a_folder_that_cannot_be_read_gets_one_message(path, tmp_path):
    at = _import(_page().run(), tmp_path / "nowhere")
    assert "The folder cannot be imported" in _texts(at.error) and not at.exception
    assert at.button(key="launch_submit").disabled


def test_a_registered_folder_too_small_for_a_split_is_refused_before_queueing(path, tmp_path):
    at = _import(_page().run(), _folder(tmp_path, n=3))
    at.button(key="launch_import_register").click().run()
    assert "split leaves no" in _texts(at.error)
    assert at.button(key="launch_submit").disabled and _jobs(path) == []


def test_a_reviewed_dataset_is_queued_with_its_crop_review(path, tmp_path):
    done = register_import(check_import(_folder(tmp_path)), store_path=path)
    first = dataset_labels(done.dataset_id, path=path)["image_id"].iloc[0]
    record_review(done.dataset_id, first, "exclude", path=path)
    at = _page().run()
    at.selectbox(key="launch_dataset").set_value(done.dataset_id).run()
    assert "1 film(s) left out, 0 box(es) corrected" in _texts(at.caption)
    at.button(key="launch_submit").click().run()
    (job_id,) = _jobs(path)
    dataset = store_jobs.get_job(job_id, path=path).spec["dataset"]
    assert Path(dataset["review_csv"]).parent.parent == path.parent / "reviews"
    assert dataset["labels_csv"] == done.spec.params["labels_csv"]


def test_an_import_on_the_launch_page_is_audited_under_the_signed_in_member(path, tmp_path):
    from pages.widgets.sign_in import TOKEN_KEY
    from store import users as store_users
    from store.audit import read_audit

    store_users.add_user("mo", "member", "correct horse battery", path=path)
    _, token = store_sign_in.sign_in("mo", "correct horse battery", path=path)
    at = _page()
    at.session_state[TOKEN_KEY] = token
    folder = _folder(tmp_path)
    at = _import(at.run(), folder)
    at.button(key="launch_import_register").click().run()
    assert not at.exception
    (line,) = read_audit(action="import", path=path).itertuples()
    assert (line.actor, line.target) == ("mo", str(folder))


def test_a_truncated_png_and_an_empty_dicom_are_named_with_problem_and_remedy_in_full(
    path, tmp_path
):
    # An interactive table cuts long cells at its column width: every problem and what to
    # do about it must be readable in the one report without widening a column.
    folder = _folder(tmp_path)
    film = sorted(folder.glob("*.png"))[3]
    film.write_bytes(film.read_bytes()[:2000])  # cut short, as an interrupted copy leaves it
    (folder / "empty.dcm").write_bytes(b"")
    table = pd.read_csv(folder / "labels.csv")
    extra = {"image": "empty.dcm", "patient_id": "z9", "side": "L", "kl": 1, "cppd": 1}
    pd.concat([table, pd.DataFrame([extra])], ignore_index=True).to_csv(
        folder / "labels.csv", index=False
    )
    expected = check_import(folder).problems  # what the check says, in full
    at = _import(_page().run(), folder)
    assert not at.exception
    # Shown as a static table (its cells wrap), not an interactive one that cuts them.
    assert not [d for d in at.dataframe if "what to do" in d.value.columns]
    problems = _problems(at)
    assert len(problems) == len(expected)  # one report listing every problem
    shown = set(zip(problems["file"], problems["problem"], problems["what to do"], strict=True))
    for row in expected.itertuples(index=False):
        assert (row.file or "(the whole dataset)", row.problem, row.action) in shown, row
    assert [b.proto.label for b in at.get("download_button")] == ["Download report (CSV)"]
    by_file = problems.set_index("file")
    for name in (film.name, "empty.dcm"):
        assert by_file.loc[name, "severity"] == "error" and by_file.loc[name, "what to do"]
    at.button(key="launch_import_skip_bad").click().run()
    (dataset_id,) = list_imports(path=path)["dataset_id"]
    assert len(dataset_labels(dataset_id, path=path)) == 11  # the twelve less the cut one
