"""Which test films most deserve a second reader (issue 41), from stored probabilities alone.

Per film, over the seeds whose selected model tested it (each seed's test split differs):
each seed's grade, the consensus (the grade of the mean probabilities), how far the seeds
disagree (highest minus lowest seed grade), the likely range (every seed's conformal set at
the clinician's coverage, spanned: `engine.analysis.conformal.ensemble_range`) and whether
the consensus is two or more grades from the recorded label. Ranked: far from the label
first, then wider disagreement, then a wider range, then a less confident consensus.

A second reading is a new opinion beside the recorded label, never over it;
:func:`labels_with_readings` writes a labels CSV in which the readings replace the grades,
for import as a new label version of the dataset.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.analysis import conformal
from engine.analysis import probability_metrics as pm

#: Two or more grades between the consensus and the recorded label flags a film.
FAR_FROM_LABEL = 2


def second_look(
    films: pd.DataFrame,
    thresholds: dict[int, np.ndarray],
    task: str,
    *,
    score: str = conformal.DEFAULT_SCORE,
) -> pd.DataFrame:
    """The films ranked for a second reading.

    Args:
        films: ``image_id``, ``seed``, ``y_true`` (the recorded grade), ``p0..`` per seed's
            test film (`store.readings.film_probabilities`).
        thresholds: seed -> ``(J,)`` thresholds from that seed's validation films; seeds
            without any give no range.
        task: the task graded.
        score: the conformal score of the range.

    Returns:
        One row per film, most worth a look first: ``image_id``, ``label``, ``consensus``,
        ``confidence`` (its mean probability), ``n_seeds``, ``seed_grades`` (seed -> grade),
        ``spread`` (highest − lowest seed grade), ``range_lo``, ``range_hi``, ``width``
        (grades in the range; 0 without thresholds), ``far`` (consensus ≥
        :data:`FAR_FROM_LABEL` grades from the label) and ``rank`` (1 first).
    """
    rows = []
    for image_id, part in films.groupby("image_id", sort=True):
        probs, labels = pm.task_arrays(part, task)
        seeds = part["seed"].astype(int).to_numpy()
        mean = probs.mean(axis=0)
        consensus = int(mean.argmax())
        grades = probs.argmax(axis=1)
        calibrated = [i for i, s in enumerate(seeds) if s in thresholds]
        lo, hi = (-1, -2)
        if calibrated:
            lo, hi = conformal.ensemble_range(
                probs[calibrated], np.stack([thresholds[seeds[i]] for i in calibrated]), score=score
            )
            lo, hi = min(lo, consensus), max(hi, consensus)
        label = int(labels[0])
        rows.append(
            {
                "image_id": image_id,
                "label": label,
                "consensus": consensus,
                "confidence": float(mean[consensus]),
                "n_seeds": len(seeds),
                "seed_grades": dict(zip(seeds.tolist(), grades.tolist(), strict=True)),
                "spread": int(grades.max() - grades.min()),
                "range_lo": lo,
                "range_hi": hi,
                "width": hi - lo + 1,
                "far": abs(consensus - label) >= FAR_FROM_LABEL,
            }
        )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out = out.sort_values(
        ["far", "spread", "width", "confidence", "image_id"],
        ascending=[False, False, False, True, True],
        kind="stable",
    ).reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1)
    return out


def latest_readings(readings: pd.DataFrame) -> pd.DataFrame:
    """The newest reading of each film and task (``readings`` newest first, as
    `store.readings.list_readings` returns them)."""
    return readings.drop_duplicates(["image_id", "task"], keep="first")


def labels_with_readings(
    labels: pd.DataFrame, image_ids: pd.Series, readings: pd.DataFrame, columns: dict[str, str]
) -> pd.DataFrame:
    """A labels CSV's rows with each read film's grade replaced by its newest reading.

    Args:
        labels: the dataset's labels CSV as written (every cell text).
        image_ids: each row's image id (`engine.films.read_labels`' ``image_id``), in order.
        readings: ``image_id``, ``task``, ``grade``, newest first.
        columns: task -> its grade column in the CSV (``{"KL": "kl", ...}``).

    Returns:
        ``labels`` with the read grades replaced; every other cell as it was.
    """
    out = labels.copy()
    ids = pd.Series(image_ids).reset_index(drop=True)
    for task, part in latest_readings(readings).groupby("task"):
        column = columns[str(task)]
        grade_of = dict(zip(part["image_id"], part["grade"].astype(int), strict=True))
        hit = ids.isin(grade_of).to_numpy()
        if column not in out:
            out[column] = ""
        out[column] = out[column].astype(object)
        out.loc[hit, column] = [str(grade_of[i]) for i in ids[hit]]
    return out
