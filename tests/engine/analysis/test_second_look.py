"""The second reader's list: films far from their label, then seed disagreement, then range
width, first; readings replace grades in a labels CSV without touching anything else."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.analysis import second_look


def _film(image_id: str, label: int, per_seed: list[list[float]]) -> pd.DataFrame:
    probs = np.array(per_seed)
    return pd.DataFrame(
        {
            "image_id": image_id,
            "seed": range(len(per_seed)),
            "y_true": label,
            **{f"p{g}": probs[:, g] for g in range(probs.shape[1])},
        }
    )


def test_films_far_from_their_label_then_disagreeing_seeds_come_first():
    sure = [0.9, 0.05, 0.03, 0.01, 0.01]
    films = pd.concat(
        [
            _film("agreed", 0, [sure, sure]),
            _film("split", 1, [[0.1, 0.6, 0.2, 0.1, 0.0], [0.0, 0.1, 0.2, 0.6, 0.1]]),
            _film("far", 3, [sure, sure]),
        ]
    )
    thresholds = {0: np.full(5, 0.8), 1: np.full(5, 0.8)}
    ranked = second_look.second_look(films, thresholds, "KL")
    assert list(ranked["image_id"]) == ["far", "split", "agreed"]
    assert list(ranked["rank"]) == [1, 2, 3]
    far = ranked.iloc[0]
    assert far["far"] and far["consensus"] == 0 and far["label"] == 3
    split = ranked.iloc[1]
    assert split["seed_grades"] == {0: 1, 1: 3} and split["spread"] == 2
    assert split["range_lo"] <= 1 and split["range_hi"] >= 3
    # without thresholds there is no range, and the order still stands
    bare = second_look.second_look(films, {}, "KL")
    assert (bare["width"] == 0).all() and list(bare["image_id"]) == list(ranked["image_id"])


def test_readings_replace_only_the_read_grades_newest_first():
    labels = pd.DataFrame(
        {"image": ["a.png", "b.png", "c.png"], "patient_id": ["1", "2", "3"], "kl": ["0", "2", ""]}
    )
    readings = pd.DataFrame(
        {"image_id": ["b", "b", "c"], "task": ["KL", "KL", "KL"], "grade": [3, 1, 4]}
    )  # newest first: b's latest reading is 3
    out = second_look.labels_with_readings(
        labels, pd.Series(["a", "b", "c"]), readings, {"KL": "kl", "CPPD": "cppd"}
    )
    assert list(out["kl"]) == ["0", "3", "4"]
    assert list(out["image"]) == list(labels["image"]) and list(labels["kl"]) == ["0", "2", ""]
