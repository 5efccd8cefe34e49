"""The import check: every row and every film, all problems in one report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.config import DatasetSpec
from engine.datasets import prepare_dataset
from engine.films import (
    MIN_FILMS_PER_GRADE,
    ImportSourceError,
    check_import,
    clean_labels,
    write_clean_labels,
)
from tests.helpers.films import phantom_film, png_bytes, write_faulty_folder, write_film_folder


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    return write_faulty_folder(tmp_path_factory.mktemp("faulty"))


@pytest.fixture(scope="module")
def faulty_report(faulty):
    return check_import(faulty.folder)


def _kinds(report, file):
    return set(report.problems.loc[report.problems["file"] == file, "kind"])


def test_every_planted_fault_is_named_by_its_file_in_one_report(faulty, faulty_report):
    problems = faulty_report.problems
    assert set(faulty.faults) <= set(problems["file"])
    assert _kinds(faulty_report, "truncated.png") == {"unreadable"}
    assert _kinds(faulty_report, "notes.png") == {"unreadable"}
    assert "text file" in problems.loc[problems["file"] == "notes.png", "problem"].iloc[0]
    assert _kinds(faulty_report, "empty.png") == {"empty_file"}
    assert _kinds(faulty_report, "missing.png") == {"missing_file"}
    assert _kinds(faulty_report, "odd.png") == {"bad_grade", "bad_side"}
    assert (problems["severity"] == "error").all()  # spread grades: no rare-grade warning


def test_an_image_listed_twice_names_both_rows(faulty_report):
    rows = faulty_report.problems[faulty_report.problems["kind"] == "listed_twice"]
    assert list(rows["file"]) == ["twice.png", "twice.png"]
    lines = [int(r) for r in rows["row"]]
    assert all(f"rows ({lines[0]}, {lines[1]})" in text for text in rows["problem"])


def test_the_same_pixels_under_two_patients_name_both_files_and_patients(faulty, faulty_report):
    rows = faulty_report.problems[faulty_report.problems["kind"] == "same_pixels"]
    assert len(rows) == 2 and "copy.png" in set(rows["file"])
    first = (set(rows["file"]) - {"copy.png"}).pop()
    text = rows.set_index("file")
    assert "copy.png (patient q-copy)" in text.at[first, "problem"]
    assert f"{first} (patient" in text.at["copy.png", "problem"]
    assert "leak between splits" in text.at["copy.png", "problem"]
    assert {first, "copy.png"} <= set(faulty_report.left_out)  # whose film it is is unknown


def test_the_good_films_are_exactly_those_without_an_error(faulty, faulty_report):
    assert set(faulty_report.films["image"]) == set(faulty.good)
    assert faulty_report.films["image"].is_unique
    assert set(faulty_report.left_out) == set(faulty.faults) | (
        set(faulty_report.problems["file"]) - set(faulty.faults) - {""}
    )


def test_problems_have_a_row_and_what_to_do(faulty_report):
    problems = faulty_report.problems
    assert problems["action"].str.len().gt(0).all()
    assert problems["row"].notna().all()  # every planted fault is on a CSV row
    assert list(problems["row"]) == sorted(problems["row"])


def _folder_with(tmp_path, rows, films):
    folder = tmp_path / "films"
    folder.mkdir()
    for name, pixels in films.items():
        (folder / name).write_bytes(png_bytes(pixels))
    pd.DataFrame(rows, columns=["image", "patient_id", "side", "kl", "cppd"]).to_csv(
        folder / "labels.csv", index=False
    )
    return folder


def test_a_noise_film_is_not_found_as_a_knee(tmp_path):
    noise = np.random.default_rng(0).integers(0, 256, (320, 384), dtype=np.uint8)
    films = {"knee.png": phantom_film(5, 0), "noise.png": noise, "blank.png": np.zeros_like(noise)}
    rows = [(name, f"p{i}", "L", 1, 1) for i, name in enumerate(films)]
    report = check_import(_folder_with(tmp_path, rows, films))
    no_knee = report.problems[report.problems["kind"] == "no_knee"]
    assert set(no_knee["file"]) == {"noise.png", "blank.png"}
    assert list(report.films["image"]) == ["knee.png"]
    assert report.films["knee_confidence"].iloc[0] > 0.5


def test_a_film_under_two_names_of_one_patient_keeps_its_first_name(tmp_path):
    film = phantom_film(5, 0)
    rows = [("a.png", "p1", "L", 2, 1), ("b.png", "p1", "L", 2, 1)]
    report = check_import(_folder_with(tmp_path, rows, {"a.png": film, "b.png": film}))
    assert list(report.films["image"]) == ["a.png"]
    assert set(report.problems.loc[report.problems["kind"] == "same_pixels", "file"]) == {
        "a.png",
        "b.png",
    }


def test_an_exact_duplicate_row_is_named_and_its_film_kept(tmp_path):
    rows = [("a.png", "p1", "L", 2, 1), ("a.png", "p1", "L", 2, 1)]
    report = check_import(_folder_with(tmp_path, rows, {"a.png": phantom_film(5, 0)}))
    assert list(report.problems["kind"]) == ["duplicate_row"] + ["rare_grade"] * (5 + 4)
    assert report.problems.at[0, "row"] == 3 and "repeats row 2" in report.problems.at[0, "problem"]
    assert list(report.films["image"]) == ["a.png"]


def test_three_knees_of_one_patient_are_a_warning_naming_them(tmp_path):
    films = {f"k{i}.png": phantom_film(5, i) for i in range(3)}
    rows = [(name, "p1", "", 1, 1) for name in films]
    report = check_import(_folder_with(tmp_path, rows, films))
    warned = report.problems[report.problems["kind"] == "too_many_knees"]
    assert set(warned["file"]) == set(films) and (warned["severity"] == "warning").all()
    assert "patient p1 has 3 films" in warned["problem"].iloc[0]
    assert len(report.films) == 3  # warnings leave films in


def test_grades_too_rare_for_the_splits_are_named_by_task_and_grade(tmp_path):
    films = {f"k{i}.png": phantom_film(5, i) for i in range(MIN_FILMS_PER_GRADE + 1)}
    rows = [(name, f"p{i}", "", 0 if i else 4, "") for i, name in enumerate(films)]
    report = check_import(_folder_with(tmp_path, rows, films))
    rare = report.problems[report.problems["kind"] == "rare_grade"]["problem"]
    assert rare.str.startswith("KL grade 4: 1 good film").any()
    assert rare.str.startswith("KL grade 1: 0 good film").any()
    assert not rare.str.startswith("KL grade 0").any()
    assert not rare.str.startswith("CPPD").any()  # no film has a CPPD grade


def test_bad_cells_are_each_named_with_what_is_allowed(tmp_path):
    films = {f"k{i}.png": phantom_film(5, i) for i in range(5)}
    rows = [
        ("k0.png", "p0", "left", 1.5, 1),
        ("k1.png", "", "R", 1, 1),
        ("k2.png", "p2", "right", "", ""),
        ("k3.png", "p3", "l", "two", 9),
        ("k4.png", "p4", "R", 1, 1),
    ]
    report = check_import(_folder_with(tmp_path, rows, films))
    problems = report.problems.set_index(["file", "kind"])["problem"]
    assert "not a whole number" in problems[("k0.png", "bad_grade")]
    assert ("k1.png", "no_patient") in problems.index
    assert ("k2.png", "no_grade") in problems.index
    assert "kl=two" in problems[("k3.png", "bad_grade")].iloc[0]
    assert "cppd=9" in problems[("k3.png", "bad_grade")].iloc[1]
    assert list(report.films["image"]) == ["k4.png"]


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_decoding_in_two_processes_finds_what_one_finds(faulty, faulty_report):
    seen = []
    report = check_import(faulty.folder, workers=2, progress=lambda *a: seen.append(a))
    pd.testing.assert_frame_equal(report.problems, faulty_report.problems)
    pd.testing.assert_frame_equal(report.films, faulty_report.films)
    assert seen[-1][0] == seen[-1][1] == report.n_files and seen[-1][2] > 0


def _with_csv(data: bytes):
    def make(root):
        (root / "labels.csv").write_bytes(data)
        return root

    return make


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "nowhere", "does not exist; give the folder of films"),
        (_with_csv(b"\xff\xfe\x00\x89PNG garbled"), "not UTF-8 text"),
        (_with_csv(b"image,kl\na.png,1\n"), "'patient_id' is missing"),
        (_with_csv(b"image,patient_id,grade\n"), "no grade column"),
        (_with_csv(b""), "is empty"),
        (_with_csv(b"image,patient_id,kl\n"), "no film is listed in"),
        (lambda root: root, "in no layout SoftGrade knows"),
    ],
)
def test_a_folder_or_csv_that_cannot_be_read_gets_one_message(tmp_path, make, message):
    root = tmp_path / "films"
    root.mkdir()
    with pytest.raises(ImportSourceError, match=message):
        check_import(make(root))


def test_the_good_films_become_a_dataset_of_exactly_them(faulty, faulty_report, tmp_path):
    labels = write_clean_labels(faulty_report, tmp_path / "imports")
    assert labels == write_clean_labels(faulty_report, tmp_path / "imports")  # by content
    spec = DatasetSpec("folder", {"path": str(faulty.folder), "labels_csv": str(labels)})
    data = prepare_dataset(spec, 32, tmp_path / "cache")
    assert data.images.shape == (len(faulty.good), 32, 32)
    assert set(data.meta["image_id"] + ".png") == set(faulty.good)
    columns = ["image", "patient_id", "side", "kl", "cppd"]
    assert list(clean_labels(faulty_report).columns) == columns


def test_a_clean_folder_is_clean(tmp_path):
    folder, _, labels = write_film_folder(tmp_path, n=10, n_joint=10, seed=2)
    report = check_import(folder)
    assert set(report.problems["kind"]) <= {"rare_grade"}
    assert len(report.films) == 10 and report.all_good and not report.left_out


def test_every_film_format_is_read_and_others_are_named(tmp_path):
    from PIL import Image

    folder = tmp_path / "films"
    folder.mkdir()
    film = phantom_film(5, 0)
    Image.fromarray(film).save(folder / "knee.jpg", quality=95)
    Image.fromarray(film[:, ::-1].copy()).save(folder / "knee.tif")
    Image.fromarray(film[::-1].astype(np.uint16) * 200).save(folder / "deep.png")
    Image.fromarray(film).save(folder / "knee.gif")
    Image.fromarray(film[:40]).save(folder / "strip.png")
    names = ["knee.jpg", "knee.tif", "deep.png", "knee.gif", "strip.png"]
    rows = [(name, f"p{i}", "", 1, 1) for i, name in enumerate(names)]
    pd.DataFrame(rows, columns=["image", "patient_id", "side", "kl", "cppd"]).to_csv(
        folder / "labels.csv", index=False
    )
    report = check_import(folder)
    assert list(report.films["image"]) == ["knee.jpg", "knee.tif", "deep.png"]
    problems = report.problems.set_index("file")
    assert "a GIF image; give a DICOM, PNG, JPEG, TIFF film" in problems.at["knee.gif", "problem"]
    assert problems.at["strip.png", "kind"] == "too_small"
    assert "needs at least 64 px" in problems.at["strip.png", "problem"]


@pytest.mark.parametrize(
    ("confidence", "kind", "severity"),
    [(0.1, "no_knee", "error"), (0.4, "low_confidence", "warning"), (0.9, None, None)],
)
def test_a_knee_found_with_low_confidence_is_flagged_and_none_found_left_out(
    tmp_path, monkeypatch, confidence, kind, severity
):
    import engine.films.inspection as import_films

    monkeypatch.setattr(
        import_films,
        "locate_knees",
        lambda film, laterality=None, detector=None: [((0, 0, 10, 10), confidence)],
    )
    rows = [("a.png", "p1", "L", 2, 1)]
    report = check_import(_folder_with(tmp_path, rows, {"a.png": phantom_film(5, 0)}))
    found = report.problems[report.problems["file"] == "a.png"]
    if kind is None:
        assert found.empty and list(report.films["image"]) == ["a.png"]
    else:
        assert list(found["kind"]) == [kind] and list(found["severity"]) == [severity]
        assert (len(report.films) == 1) == (severity == "warning")


def test_knees_come_from_find_knees_with_their_confidence():
    from engine.detect import find_knees
    from engine.films import locate_knees

    film = phantom_film(5, 0)
    expected = [(tuple(k.box), float(k.confidence)) for k in find_knees(film, laterality="L")]
    assert len(expected) == 1  # a film tagged L is one knee
    assert locate_knees(film, laterality="L") == expected
