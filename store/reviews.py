"""Crop review: a reviewer's decisions on a dataset's films (leave one out, or crop it with
a corrected box), and the reviewed boxes a detector can be trained on.

Written by the app (the Review crops page), one small write per decision, like a job
request; read by the pages and by `jobs.services.review.reviewed_spec`, which turns them into the
review file a study's dataset spec names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pandas as pd

from store.audit import LOCAL_ACTOR
from store.db import StoreError, connect, one_value

#: What a reviewer may decide about a film.
REVIEW_ACTIONS = ("exclude", "box")
#: Columns of `crop_reviews`, in order.
REVIEW_COLUMNS = ("image_id", "action", "x0", "y0", "x1", "y1", "who", "reviewed_at")
BOX_COLUMNS = ("x0", "y0", "x1", "y1")


@contextmanager
def _reviews_store(
    path: Path | str | None, *, read_only: bool
) -> Iterator[duckdb.DuckDBPyConnection]:
    """`connect`, with one message when the store predates the crop review table."""
    with connect(path, read_only=read_only) as con:
        found = one_value(
            con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'crop_reviews'"
        )
        if not found:
            raise StoreError(
                "this store has no crop review table yet: start `python -m jobs up` (or a "
                "worker) once, which adds it"
            )
        yield con


def check_box(box: Sequence[int]) -> tuple[int, int, int, int]:
    """A box as four whole film-pixel coordinates (x0, y0, x1, y1).

    Raises:
        ValueError: Not four whole numbers, a negative one, or x1 <= x0 or y1 <= y0 (the
            message says which).
    """
    if len(box) != 4:
        raise ValueError(f"a box is four numbers x0, y0, x1, y1; got {len(box)}")
    values = []
    for name, value in zip(BOX_COLUMNS, box, strict=True):
        if float(value) != int(value):
            raise ValueError(f"{name}={value} is not a whole number of pixels")
        values.append(int(value))
    x0, y0, x1, y1 = values
    if min(values) < 0:
        raise ValueError(f"box {tuple(values)}: coordinates start at 0 (the film's top left)")
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box {tuple(values)}: x1 must be above x0 and y1 above y0")
    return x0, y0, x1, y1


def record_review(
    dataset_id: str,
    image_id: str,
    action: str,
    box: Sequence[int] | None = None,
    *,
    who: str = LOCAL_ACTOR,
    path: Path | str | None = None,
) -> None:
    """Store a decision on one film, replacing any earlier one.

    Args:
        action: 'exclude' (leave the film out) or 'box' (crop it with ``box``).
        box: (x0, y0, x1, y1) in film pixels, for 'box' only.
        who: Who decided: the signed-in person (`LOCAL_ACTOR` in single-user mode).

    Raises:
        ValueError: An unknown action, a 'box' without a valid box, or an 'exclude' with one.
    """
    if action not in REVIEW_ACTIONS:
        raise ValueError(f"action {action!r} is not known; allowed: {', '.join(REVIEW_ACTIONS)}")
    if action == "box":
        if box is None:
            raise ValueError("a 'box' decision needs the box (x0, y0, x1, y1)")
        coords: tuple[int | None, ...] = check_box(box)
    else:
        if box is not None:
            raise ValueError("an 'exclude' decision takes no box")
        coords = (None, None, None, None)
    with _reviews_store(path, read_only=False) as con:
        con.execute(
            "DELETE FROM crop_reviews WHERE dataset_id = ? AND image_id = ?", [dataset_id, image_id]
        )
        con.execute(
            "INSERT INTO crop_reviews (dataset_id, image_id, action, x0, y0, x1, y1, who) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [dataset_id, image_id, action, *coords, who],
        )


def clear_review(dataset_id: str, image_id: str, *, path: Path | str | None = None) -> None:
    """Forget the decision on one film: it is kept and cropped by the detector again."""
    with _reviews_store(path, read_only=False) as con:
        con.execute(
            "DELETE FROM crop_reviews WHERE dataset_id = ? AND image_id = ?", [dataset_id, image_id]
        )


def crop_reviews(dataset_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """Every decision on a dataset's films, by image id: `REVIEW_COLUMNS` (box columns are
    nullable integers, empty for 'exclude'); an empty frame when there is none."""
    with _reviews_store(path, read_only=True) as con:
        frame = con.execute(
            f"SELECT {', '.join(REVIEW_COLUMNS)} FROM crop_reviews WHERE dataset_id = ? "
            "ORDER BY image_id",
            [dataset_id],
        ).df()
    for column in BOX_COLUMNS:
        frame[column] = frame[column].astype("Int64")
    return frame


def reviewed_boxes(dataset_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """The (film, knee box) pairs a reviewer set, to train a detector on.

    Returns:
        One row per image whose box was corrected (or confirmed): ``image_id``,
        ``film_path`` (the film file, from the dataset's images), ``x0, y0, x1, y1`` in film
        pixels and ``knees_on_film`` (how many of the dataset's images share that film: 2 for
        each knee of a bilateral film, so a trainer can tell a film whose every knee has a
        reviewed box); excluded films are not among them.
    """
    with _reviews_store(path, read_only=True) as con:
        frame = con.execute(
            """
            SELECT r.image_id, i.source AS film_path, r.x0, r.y0, r.x1, r.y1,
                   n.knees_on_film
            FROM crop_reviews r JOIN images i USING (dataset_id, image_id)
            JOIN (
                SELECT source, count(*) AS knees_on_film FROM images
                WHERE dataset_id = ? GROUP BY source
            ) n USING (source)
            WHERE r.dataset_id = ? AND r.action = 'box' AND i.source IS NOT NULL
            ORDER BY r.image_id
            """,
            [dataset_id, dataset_id],
        ).df()
    frame["knees_on_film"] = frame["knees_on_film"].astype("int64")
    for column in BOX_COLUMNS:
        frame[column] = frame[column].astype("int64")
    return frame


def excluded_films(dataset_id: str, *, path: Path | str | None = None) -> set[str]:
    """The film files (``images.source``) of a dataset with an image the review excluded."""
    with _reviews_store(path, read_only=True) as con:
        rows = con.execute(
            """
            SELECT DISTINCT i.source FROM crop_reviews r JOIN images i USING (dataset_id, image_id)
            WHERE r.dataset_id = ? AND r.action = 'exclude' AND i.source IS NOT NULL
            """,
            [dataset_id],
        ).fetchall()
    return {str(r[0]) for r in rows}
