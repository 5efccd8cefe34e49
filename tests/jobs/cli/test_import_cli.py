"""``python -m jobs import``: the real CLI, in a subprocess, on a folder with planted faults."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from engine.config import StudySpec
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store.datasets import dataset_labels, load_splits
from store.db import connect
from store.imports import import_problems, latest_import, list_imports
from tests.helpers.films import (
    corrupt_jpeg_lossless_dicom,
    phantom_film,
    png_bytes,
    write_faulty_folder,
    write_film_folder,
)
from tests.helpers.studies import run_import, tiny_study


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    return write_faulty_folder(tmp_path_factory.mktemp("faulty"))


def _datasets(home: Path) -> int:
    store = home / "softgrade.duckdb"
    if not store.exists():
        return 0
    with connect(store, read_only=True) as con:
        return con.execute("SELECT count(*) FROM datasets").fetchone()[0]


@pytest.mark.slow
def test_check_names_every_fault_by_file_and_registers_nothing(faulty, tmp_path):
    done = run_import(tmp_path, str(faulty.folder), "--check")
    assert done.returncode == 1, done.stderr
    table = done.stdout.splitlines()
    assert table[0].split() == ["file", "row", "problem", "what", "to", "do"]
    for file in faulty.faults:
        assert any(line.startswith(file + " ") for line in table), (file, done.stdout)
    assert "59 good film(s), 8 left out" in done.stdout
    assert "Traceback" not in done.stderr
    assert f"checked {len(faulty.good) + 7}/{len(faulty.good) + 7} films (" in done.stderr
    assert _datasets(tmp_path) == 0 and not (tmp_path / "imports").exists()


@pytest.mark.slow
def test_an_import_with_bad_films_registers_nothing_unless_told_to_skip_them(faulty, tmp_path):
    refused = run_import(tmp_path, str(faulty.folder))
    assert refused.returncode == 1
    assert "nothing registered" in refused.stdout and "--skip-bad" in refused.stdout
    assert _datasets(tmp_path) == 0


@pytest.mark.slow
def test_skip_bad_registers_exactly_the_good_films_and_keeps_the_report(faulty, tmp_path):
    done = run_import(tmp_path, str(faulty.folder), "--skip-bad", "--name", "planted")
    assert done.returncode == 0, done.stdout + done.stderr
    store = tmp_path / "softgrade.duckdb"
    imports = list_imports(path=store)
    assert list(imports["name"]) == ["planted"]
    dataset_id = imports["dataset_id"].iloc[0]
    registered = dataset_labels(dataset_id, path=store)
    assert set(registered["image_id"] + ".png") == set(faulty.good)
    summary = latest_import(dataset_id, path=store)
    assert summary.skip_bad and summary.n_good == len(faulty.good) and summary.n_left_out == 8
    problems = import_problems(summary.import_id, path=store)
    assert set(faulty.faults) <= set(problems["file"])
    assert f"registered {dataset_id} (planted): 59 film(s)" in done.stdout
    # A study on the printed dataset runs on the registered dataset: the good films only.
    spec_line = next(x for x in done.stdout.splitlines() if x.startswith("use it"))
    labels_csv = spec_line.split("labels_csv: ")[1].rstrip("}")
    dataset = {"kind": "folder", "path": str(faulty.folder), "labels_csv": labels_csv}
    study = StudySpec.from_dict(tiny_study(dataset=dataset, tasks=["KL"], methods=["nominal"]))
    job_id = store_jobs.enqueue_job(study.to_dict(), path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded", job
    with connect(store, read_only=True) as con:
        assert con.execute(
            "SELECT dataset_id FROM studies WHERE study_id = ?", [job.study_id]
        ).fetchone() == (dataset_id,)
    split = load_splits(dataset_id, 0, path=store)
    assert set(split.index + ".png") == set(faulty.good)


@pytest.mark.slow
def test_a_clean_folder_checks_clean_and_registers(tmp_path):
    folder, csv, _ = write_film_folder(tmp_path, n=30, n_joint=30, seed=6)
    table = pd.read_csv(csv)
    table.assign(kl=[i % 5 for i in range(30)], cppd=[i % 4 for i in range(30)]).to_csv(
        csv, index=False
    )
    checked = run_import(tmp_path / "home", str(folder), "--check")
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.startswith(str(folder))  # no table: the summary alone
    done = run_import(tmp_path / "home", str(folder), "--labels", str(csv))
    assert done.returncode == 0 and "30 film(s), 0 left out" in done.stdout
    assert _datasets(tmp_path / "home") == 1
    # The audit line names who ran it (the OS user, as `backup` does), not 'local'.
    from jobs.cli.lab_commands import os_user
    from store.audit import read_audit

    line = read_audit(action="import", path=tmp_path / "home" / "softgrade.duckdb").iloc[0]
    assert (line.actor, line.target) == (os_user(), str(folder))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{root}/nowhere"], "does not exist; give the folder of films"),
        (["{root}", "--labels", "{root}/garbled.csv"], "is not UTF-8 text"),
        (["{root}", "--labels", "{root}/nowhere.csv"], "labels CSV {root}/nowhere.csv does not"),
        (["{root}"], "in no layout SoftGrade knows"),
    ],
)
def test_bad_input_gets_one_message_and_exit_2(tmp_path, args, message):
    (tmp_path / "garbled.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff garbage")
    done = run_import(tmp_path / "home", *(a.format(root=tmp_path) for a in args))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert message.format(root=tmp_path) in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_corrupt_jpeg_lossless_dicom_is_named_without_a_library_traceback(tmp_path, workers):
    folder = tmp_path / "films"
    folder.mkdir()
    (folder / "pacs.dcm").write_bytes(corrupt_jpeg_lossless_dicom())
    for i in range(3):
        (folder / f"k{i}.png").write_bytes(png_bytes(phantom_film(5, i)))
    rows = "".join(f"k{i}.png,p{i},1\n" for i in range(3))
    (folder / "labels.csv").write_text(f"image,patient_id,kl\npacs.dcm,p9,1\n{rows}")
    home = tmp_path / "home"
    done = run_import(home, str(folder), "--check", "--workers", workers)
    assert done.returncode == 1, done.stderr
    assert any(line.startswith("pacs.dcm ") for line in done.stdout.splitlines()), done.stdout
    assert "do not decode" in done.stdout
    # Nothing from pydicom, GDCM or libjpeg on the terminal: the progress lines only.
    progress = ("checked ", "reading the labels: ", "checking the rows: ")
    assert done.stderr.splitlines() and all(
        line.startswith(progress) for line in done.stderr.splitlines()
    ), done.stderr
    log = (home / "logs" / "softgrade.log").read_text()
    assert "Corrupt JPEG data" in log  # libjpeg's own line, kept for whoever digs
    if workers == "1":  # decoded in the command's process: pydicom's traceback is kept too
        assert "Traceback" in log and "AttributeError" in log


def test_the_cli_report_shows_hostile_names_escaped_never_raw(tmp_path):
    from engine.films import check_import
    from jobs.cli.import_command import format_report

    folder = tmp_path / "films"
    folder.mkdir()
    (folder / "knee\u202egnp.png").write_bytes(png_bytes(phantom_film(5, 0)))
    (folder / "labels.csv").write_text(
        "image,patient_id,kl\nknee\u202egnp.png,p1,1\nmissing\x1b[2J.png,p\x1b]0;pwn\x07,1\n"
    )
    text = format_report(check_import(folder, workers=1))
    assert "\u202e" not in text and "\x1b" not in text and "\x07" not in text
    assert "knee\\u202egnp.png" in text and "missing\\x1b[2J.png" in text
