"""What the Review crops page shows: a dataset's crops with their detector confidence, the
import's problems and the review decisions, filtered and sorted worst first; boxes drawn on
a film; typed or clicked boxes checked. No streamlit, so it is unit-tested.

The crops come from one seam, `prepare_review_crops`: a folder cache of the dataset as
imported (no review applied), built by the same code as a study's cache, so each crop, box
and confidence is what the detector in use gives (`engine.films.best_knee`, which
asks `engine.detect.find_knees` once a trained detector exists, else the classical one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pandas as pd

from engine.datasets import PreparedDataset, build_folder_cache, open_prepared
from engine.detect import Box
from engine.films import KNEE_LOW_CONFIDENCE, image_id_for
from jobs.services.review import REVIEW_PARAM

#: Side of the review crops (px): enough to judge a crop, cheap to build for every film.
REVIEW_PX = 128
#: Crops per page of the grid, and per row.
PAGE_SIZE = 24
GRID_COLUMNS = 6
#: Width the film is shown at for placing a box (px).
DISPLAY_PX = 560
#: Box colours (RGB): the detector's, the stored review's, the one being typed or clicked.
DETECTED, REVIEWED, CANDIDATE = (60, 200, 80), (255, 150, 0), (40, 170, 255)

ANY = "any"
NO_GRADE = "no grade"
#: Problem filters that do not come from the import report.
REVIEW_FILTERS = {
    "all films": lambda t: t.index == t.index,
    f"low confidence (below {KNEE_LOW_CONFIDENCE})": lambda t: (
        t["knee_confidence"] < KNEE_LOW_CONFIDENCE
    ),
    "excluded": lambda t: t["decision"] == "exclude",
    "box corrected": lambda t: t["decision"] == "box",
    "not reviewed yet": lambda t: t["decision"] == "",
}
IMPORT_PREFIX = "import report: "


def review_crops_dir(home: Path, dataset_id: str) -> Path:
    """Where a dataset's review crops are cached (apart from study caches, which the worker
    writes)."""
    return home / "review-crops" / f"{dataset_id}-{REVIEW_PX}px"


def prepare_review_crops(
    dataset_id: str,
    params: dict[str, Any],
    home: Path,
    progress: Callable[[int, int], None] | None = None,
) -> PreparedDataset:
    """The dataset's films as imported, each cropped around the detector's knee, with the
    box and confidence of each in ``meta`` (built once; later calls open it).

    Raises:
        ValueError: The films or the labels file are no longer where the dataset says.
    """
    imported = {k: v for k, v in params.items() if k != REVIEW_PARAM}
    out = review_crops_dir(home, dataset_id)
    build_folder_cache(imported, REVIEW_PX, out, progress=progress)
    return open_prepared(out)


def review_table(meta: pd.DataFrame, reviews: pd.DataFrame, problems: pd.DataFrame) -> pd.DataFrame:
    """One row per film: where its crop is, grades, the detector's box and confidence, the
    import's problems and the review decision, sorted by confidence (worst first).

    Args:
        meta: The review crops' meta (``prepare_review_crops``).
        reviews: ``store.reviews.crop_reviews`` of the dataset.
        problems: The import's problems (``store.imports.import_problems``; may be empty).

    Returns:
        Columns ``crop`` (row in the crop array), image_id, patient_id, side, kl, cppd,
        source, x0..y1, knee_confidence, problems (kinds, comma-separated), decision ('',
        'exclude' or 'box') and rx0..ry1 (the reviewed box, or NA).
    """
    table = meta[
        ["image_id", "patient_id", "side", "kl", "cppd", "source", "x0", "y0", "x1", "y1"]
    ].copy()
    table.insert(0, "crop", np.arange(len(meta)))
    table["knee_confidence"] = pd.to_numeric(meta["knee_confidence"]).astype(float)
    kinds = _problem_kinds(problems)
    table["problems"] = [
        ", ".join(kinds.get(_film_id(i, source), []))
        for i, source in zip(table["image_id"], table["source"], strict=True)
    ]
    reviewed = ("rx0", "ry0", "rx1", "ry1")
    if len(reviews):
        decided = reviews.set_index("image_id")
        table["decision"] = table["image_id"].map(decided["action"]).fillna("")
        for ours, theirs in zip(reviewed, ("x0", "y0", "x1", "y1"), strict=True):
            table[ours] = table["image_id"].map(decided[theirs]).astype("Int64")
    else:
        table["decision"] = ""
        for ours in reviewed:
            table[ours] = pd.array([pd.NA] * len(table), dtype="Int64")
    return table.sort_values(["knee_confidence", "image_id"], kind="stable").reset_index(drop=True)


def _film_id(image_id: str, source: str) -> str:
    """The id of the film an image comes from: a knee of a film listed once per knee
    ('films/0042_R', from films/0042.png) has its film's problems ('films/0042')."""
    stem, _, side = str(image_id).rpartition("_")
    is_knee = side in ("R", "L") and Path(str(source)).stem == stem.rpartition("/")[2]
    return stem if is_knee else image_id


def _problem_kinds(problems: pd.DataFrame) -> dict[str, list[str]]:
    """image id → the kinds of problem the import reported for its file."""
    if problems.empty:
        return {}
    named = problems[problems["file"] != ""]
    out: dict[str, list[str]] = {}
    for file, kind in zip(named["file"], named["kind"], strict=True):
        kinds = out.setdefault(image_id_for(str(file)), [])
        if kind not in kinds:
            kinds.append(str(kind))
    return out


def problem_filters(table: pd.DataFrame) -> list[str]:
    """The problem filter's options: the review's own, then each kind the import reported
    for a film of this dataset."""
    kinds = sorted({k for text in table["problems"] if text for k in text.split(", ")})
    return [*REVIEW_FILTERS, *(IMPORT_PREFIX + k for k in kinds)]


def grade_options(top: int) -> list[str]:
    """A grade filter's options: any, each grade 0..top, no grade."""
    return [ANY, *(str(g) for g in range(top + 1)), NO_GRADE]


def filter_review(table: pd.DataFrame, *, kl: str, cppd: str, problem: str) -> pd.DataFrame:
    """The films matching the grade and problem filters, still worst confidence first."""
    keep = pd.Series(True, index=table.index)
    for column, wanted in (("kl", kl), ("cppd", cppd)):
        if wanted == NO_GRADE:
            keep &= table[column].isna()
        elif wanted != ANY:
            keep &= table[column].astype("Int64").eq(int(wanted)).fillna(False).astype(bool)
    if problem.startswith(IMPORT_PREFIX):
        kind = problem.removeprefix(IMPORT_PREFIX)
        keep &= table["problems"].map(lambda text: kind in text.split(", "))
    else:
        keep &= np.asarray(REVIEW_FILTERS[problem](table), dtype=bool)
    return table[keep.to_numpy(dtype=bool)]


def tile_caption(row: Any) -> str:
    """A crop's caption: id, grades, confidence, and the review decision."""
    grades = " · ".join(
        f"{name} {int(value)}"
        for name, value in (("KL", row.kl), ("CPPD", row.cppd))
        if not pd.isna(value)
    )
    confidence = "—" if pd.isna(row.knee_confidence) else f"{row.knee_confidence:.2f}"
    decision = {"exclude": " · EXCLUDED", "box": " · box corrected"}.get(row.decision, "")
    return f"{row.image_id} · {grades} · conf {confidence}{decision}"


def detected_box(row: Any) -> Box:
    """The detector's box of a film (film pixels)."""
    return (int(row.x0), int(row.y0), int(row.x1), int(row.y1))


def reviewed_box(row: Any) -> Box | None:
    """The box a reviewer set for a film, or None."""
    if row.decision != "box" or pd.isna(row.rx0):
        return None
    return (int(row.rx0), int(row.ry0), int(row.rx1), int(row.ry1))


def box_on_film(box: Sequence[float], shape: tuple[int, ...]) -> Box:
    """A typed or clicked box, checked against the film it is placed on.

    Raises:
        ValueError: x1 <= x0 or y1 <= y0, or a corner outside the film (the message says
            what is allowed).
    """
    h, w = shape[:2]
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"x1 must be above x0 and y1 above y0 (got {x0}, {y0}, {x1}, {y1})")
    if x0 < 0 or y0 < 0 or x1 > w or y1 > h:
        raise ValueError(f"the box must lie on the film: x from 0 to {w}, y from 0 to {h}")
    return x0, y0, x1, y1


def clicks_box(clicks: Sequence[tuple[float, float]], shape: tuple[int, ...]) -> Box:
    """The box two clicks span (any two opposite corners), clipped to the film."""
    (ax, ay), (bx, by) = clicks
    h, w = shape[:2]
    x0, x1 = sorted((min(max(ax, 0), w), min(max(bx, 0), w)))
    y0, y1 = sorted((min(max(ay, 0), h), min(max(by, 0), h)))
    return int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))


def click_on_film(value: dict[str, Any], shape: tuple[int, ...]) -> tuple[float, float]:
    """A click on the shown film (``streamlit-image-coordinates``' value: x, y and the
    width and height it was shown at) in film pixels."""
    h, w = shape[:2]
    return value["x"] * w / value["width"], value["y"] * h / value["height"]


def draw_boxes(
    film: np.ndarray,
    boxes: Sequence[tuple[Box | None, tuple[int, int, int]]],
    *,
    width: int = DISPLAY_PX,
    marks: Sequence[tuple[float, float]] = (),
) -> np.ndarray:
    """A grey film as RGB at ``width`` px wide (never enlarged) with boxes and click marks.

    Args:
        film: (H, W) uint8.
        boxes: (box in film pixels or None, RGB colour), drawn in order.
        width: Width shown (px).
        marks: Clicked points in film pixels, drawn as small crosses.
    """
    scale = min(1.0, width / film.shape[1])
    size = (max(1, round(film.shape[1] * scale)), max(1, round(film.shape[0] * scale)))
    rgb = cv2.cvtColor(cv2.resize(film, size, interpolation=cv2.INTER_AREA), cv2.COLOR_GRAY2RGB)
    for box, colour in boxes:
        if box is None:
            continue
        x0, y0, x1, y1 = (round(v * scale) for v in box)
        cv2.rectangle(rgb, (x0, y0), (max(x0, x1 - 1), max(y0, y1 - 1)), colour, 2)
    for x, y in marks:
        cv2.drawMarker(
            rgb, (round(x * scale), round(y * scale)), CANDIDATE, cv2.MARKER_CROSS, 14, 2
        )
    return rgb


def review_counts(table: pd.DataFrame) -> str:
    """How many films, how many look doubtful, and what was decided (markdown)."""
    low = int((table["knee_confidence"] < KNEE_LOW_CONFIDENCE).sum())
    excluded = int((table["decision"] == "exclude").sum())
    boxes = int((table["decision"] == "box").sum())
    return (
        f"**{len(table)} films** · {low} below {KNEE_LOW_CONFIDENCE} confidence · "
        f"**{excluded} excluded** · **{boxes} box(es) corrected**"
    )
