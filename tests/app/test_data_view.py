"""What the Data page shows: grade tables, gallery picks and mask overlays."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pages.present import data_view


def _labels() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "kl": pd.array([0, 0, 2, None, 4], dtype="Int64"),
            "kl_true": pd.array([1, 0, 2, 3, 4], dtype="Int64"),
            "cppd": [0, 1, 1, 3, 0],
            "cppd_true": [0, 1, 1, 3, 0],
        }
    )


def test_grade_counts_per_task_with_a_total():
    counts = data_view.grade_counts(_labels())
    assert counts["KL"].tolist()[:5] == [2, 0, 1, 0, 1]
    assert counts["CPPD"].tolist()[:4] == [2, 2, 0, 1]
    assert pd.isna(counts.loc[4, "CPPD"])  # CPPD has no grade 4
    assert counts.loc["total"].tolist() == [4, 5]


def test_joint_table_counts_only_images_graded_for_both():
    table = data_view.joint_table(_labels())
    assert table.shape == (5, 4)
    assert table.to_numpy().sum() == 4
    assert table.loc[0, 1] == 1 and table.loc[4, 0] == 1


def test_pick_examples_prefers_films_whose_recorded_grade_is_true():
    picks = data_view.pick_examples(_labels(), "kl")
    assert picks["kl"].tolist() == [0, 2, 4]
    assert picks.index.tolist() == [1, 2, 4]  # row 0 is a noisy KL 0 (truly 1)


def test_overlay_mask_colours_only_the_chosen_layers():
    film = np.full((4, 4), 100, dtype=np.uint8)
    mask = np.zeros((4, 4), dtype=np.uint8)
    mask[0, 0] = 1 | 8
    mask[1, 1] = 8
    bits = {"joint_space": 1, "calcifications": 8}
    out = data_view.overlay_mask(film, mask, bits, layers=("calcifications",), alpha=1.0)
    assert out.shape == (4, 4, 3) and out.dtype == np.uint8
    assert out[1, 1].tolist() == list(data_view.MASK_COLOURS["calcifications"])
    assert out[0, 0].tolist() == list(data_view.MASK_COLOURS["calcifications"])
    assert out[2, 2].tolist() == [100, 100, 100]


def test_dataset_settings_reads_each_datasets_params_in_one_line():
    datasets = pd.DataFrame(
        {
            "dataset_id": ["ds-1"],
            "kind": ["phantom"],
            "spec_key": ["phantom-ab"],
            "params": ['{"n_images": 400, "seed": 0}'],
            "n_images": [400],
            "n_kl": [240],
            "n_cppd": [400],
            "created_at": [pd.Timestamp("2026-01-01")],
        }
    )
    table = data_view.dataset_settings(datasets)
    assert list(table.columns) == [
        "dataset_id",
        "kind",
        "settings",
        "n_images",
        "n_kl",
        "n_cppd",
        "created_at",
    ]
    assert table["settings"].item() == "n_images=400, seed=0"


def test_split_rule_note_names_one_rule_per_seed_group_in_plain_words():
    from engine.vocab import LEGACY_SPLIT_RULE, SPLIT_RULE
    from pages.present.data_view import SPLIT_RULE_WORDS, split_rule_note

    new = pd.DataFrame({"seed": [0, 1], "rule": [SPLIT_RULE] * 2})
    what, why = SPLIT_RULE_WORDS[SPLIT_RULE]
    assert split_rule_note(new) == f"**Splits** (seeds 0–1): {what}. {why}"
    rules = [SPLIT_RULE, LEGACY_SPLIT_RULE, LEGACY_SPLIT_RULE, SPLIT_RULE]
    mixed = pd.DataFrame({"seed": [0, 1, 2, 3], "rule": rules})
    lines = split_rule_note(mixed).splitlines()
    assert lines[0] == "**Splits** of this dataset were made by 2 rules:"
    assert lines[1].startswith("- seeds 0, 3: patients kept whole, balanced on both knees'")
    assert lines[2].startswith("- seeds 1–2: patients kept whole, balanced on the first knee's")
    unknown = pd.DataFrame({"seed": [4], "rule": ["a rule from the future"]})
    assert split_rule_note(unknown) == "**Splits** (seed 4): a rule from the future."
    assert "no seed" in split_rule_note(pd.DataFrame(columns=["seed", "rule"]))
