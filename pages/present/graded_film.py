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


# What the page says of a film it will not grade, or grades with doubt, in a clinician's words.
NO_KNEE = (
    "No knee found — is this a knee radiograph? SoftGrade grades anteroposterior knee films "
    "only, so this one gets no grade."
)
#: Below this probability of its grade the models' answer is called unsure.
MODEL_UNSURE_BELOW = 0.5


def low_knee_sentence(confidence: float) -> str:
    """A knee found with low confidence: graded, but said."""
    return (
        f"The knee was found with low confidence ({confidence:.0%}): check the outlined box "
        "is the knee before trusting the grade."
    )


def unsure_sentence(task: str, grade: int, probability: float) -> str | None:
    """The models are unsure when the grade they give has under `MODEL_UNSURE_BELOW`
    probability; None when they are sure enough to say nothing."""
    if probability >= MODEL_UNSURE_BELOW:
        return None
    return (
        f"The models are unsure: {task} {grade} has only {probability:.0%} probability. "
        "Read the probabilities beside it."
    )


def models_sentence(n_models: int) -> str:
    """Who grades, in plain words (the method and seeds are the presenter's details)."""
    if n_models == 1:
        return "One model trained on this study's films grades each knee."
    return (
        f"{n_models} models trained on this study's films grade each knee; the grade shown is "
        "the one they agree on most."
    )
