"""The second reader's list as a table and its sentences (no streamlit): one row per film,
every cell plain data text (st.dataframe shows it as text, never markdown)."""

from __future__ import annotations

import pandas as pd

from engine.analysis.inference_columns import SECOND_LOOK
from pages.present.tables import headed_frame

#: What the page says above the list.
LIST_NOTE = (
    "Test films most worth a second look: first those where the models' grade is two or more "
    "grades from the recorded label, then those where the seeds' models disagree most, then "
    "those with the widest likely range (90 %). A second reading is stored beside the "
    "recorded label and never replaces it."
)
#: Shown rows at most (the whole list is in the CSV).
SHOWN_ROWS = 50


def seed_grades_text(seed_grades: dict[int, int], task: str) -> str:
    """``"seed 0: KL 2 · seed 1: KL 3"``."""
    return " · ".join(f"seed {s}: {task} {g}" for s, g in sorted(seed_grades.items()))


def range_text(lo: int, hi: int, task: str) -> str:
    """``"KL 2–3"``, ``"KL 2"``, or a dash without a range."""
    if hi < lo:
        return "—"
    return f"{task} {lo}" if lo == hi else f"{task} {lo}–{hi}"


def list_frame(ranked: pd.DataFrame, task: str) -> pd.DataFrame:
    """The ranked films with display headers."""
    return headed_frame(
        SECOND_LOOK,
        {
            "rank": ranked["rank"],
            "image_id": ranked["image_id"].astype(str),
            "label": [f"{task} {g}" for g in ranked["label"]],
            "consensus": [f"{task} {g}" for g in ranked["consensus"]],
            "seed_grades": [seed_grades_text(g, task) for g in ranked["seed_grades"]],
            "range": [
                range_text(lo, hi, task)
                for lo, hi in zip(ranked["range_lo"], ranked["range_hi"], strict=True)
            ],
            "spread": ranked["spread"],
            "far": ranked["far"].map({True: "yes", False: ""}),
        },
    )


def list_csv(ranked: pd.DataFrame, task: str) -> str:
    """The whole list as CSV (the shown columns)."""
    return list_frame(ranked, task).to_csv(index=False)
