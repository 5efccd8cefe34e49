"""Inverted films are named in the import report with what to do (issue 39): a MONOCHROME1
film exported as PNG as is shows bone dark on bright air inside a dark collimated frame (the
unexposed edge is the lowest value as stored), which the border check alone took for a film
the right way round. PNG and DICOM; films the right way round, framed or not, are not named."""

from __future__ import annotations

import numpy as np

from engine.detect.classical import inverted_polarity
from engine.films import check_import
from tests.engine.test_import_hardening import _write_labels
from tests.helpers.films import dicom_bytes, phantom_film, png_bytes


def framed(film: np.ndarray, level: int, share: float = 0.08) -> np.ndarray:
    """``film`` with a uniform collimated frame of ``level`` along its four edges."""
    out = film.copy()
    b = int(min(film.shape) * share)
    out[:b], out[-b:], out[:, :b], out[:, -b:] = level, level, level, level
    return out


def test_an_inverted_film_inside_a_dark_frame_is_seen_and_a_bright_framed_one_is_not():
    films = [phantom_film(seed, i) for seed in (5, 8) for i in range(10)]
    inverted = [inverted_polarity(framed(255 - f, 12)) for f in films]
    right = [inverted_polarity(framed(f, 243)) for f in films]
    assert sum(inverted) >= 19 and not any(right)


def test_a_monochrome1_png_exported_as_is_is_named_inverted_with_what_to_do(tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    films = {f"k{i}.png": phantom_film(5, i) for i in range(4)}
    for name, pixels in films.items():
        (folder / name).write_bytes(png_bytes(framed(255 - pixels, 10)))
    (folder / "right.png").write_bytes(png_bytes(framed(phantom_film(5, 7), 245)))
    _write_labels(folder, [(n, f"p{i}", "L", 1, 1) for i, n in enumerate([*films, "right.png"])])
    report = check_import(folder, workers=1)
    named = report.problems[report.problems["kind"] == "inverted"]
    assert set(named["file"]) == set(films)
    assert named["action"].str.contains("bone bright").all()
    assert named["problem"].str.contains("MONOCHROME1").all()
    assert "right.png" not in set(report.problems["file"])


def test_a_framed_dicom_whose_pixels_contradict_its_tag_is_named(tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    films = {f"k{i}.dcm": phantom_film(5, i) for i in range(3)}
    for name, pixels in films.items():  # MONOCHROME1 pixels exported under MONOCHROME2
        data = dicom_bytes(framed(255 - pixels, 10).astype(np.uint16) * 16)
        (folder / name).write_bytes(data)
    right = framed(phantom_film(5, 7), 245).astype(np.uint16) * 16
    (folder / "right.dcm").write_bytes(dicom_bytes(right))
    _write_labels(folder, [(n, f"p{i}", "L", 1, 1) for i, n in enumerate([*films, "right.dcm"])])
    report = check_import(folder, layout="csv", workers=1)
    named = report.problems[report.problems["kind"] == "polarity_tag"]
    assert set(named["file"]) == set(films)
    assert named["action"].str.contains("PhotometricInterpretation").all()
    assert "right.dcm" not in set(report.problems["file"])
