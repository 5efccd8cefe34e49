"""Grade a film's film as shown: the knee found outlined, and the grades the annotator
recorded in words. No streamlit."""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd


def film_with_box(film: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The film in RGB with the found knee outlined, to show what was graded."""
    rgb = cv2.cvtColor(film, cv2.COLOR_GRAY2RGB)
    thickness = max(2, min(film.shape) // 150)
    cv2.rectangle(rgb, box[:2], (box[2] - 1, box[3] - 1), (255, 140, 0), thickness)
    return rgb


def known_grades(row: pd.Series, tasks: list[str]) -> dict[str, str]:
    """What the annotator recorded for a test film (and the phantom's truth where it differs)."""
    out = {}
    for task in tasks:
        recorded = row.get(task.lower())
        if pd.isna(recorded):
            out[task] = f"Annotated: no {task} grade on this film."
            continue
        text = f"Annotated: **{task} {int(recorded)}**"
        truth = row.get(f"{task.lower()}_true")
        if truth is not None and not pd.isna(truth) and int(truth) != int(recorded):
            text += f" (the phantom drew {task} {int(truth)}: annotation noise)"
        out[task] = text
    return out
