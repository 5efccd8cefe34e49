"""Which models the Grade-a-film page shows: best method, then its best seed with weights."""

from __future__ import annotations

import pandas as pd

from pages._model_choice import best_seed, default_method


def _runs(tmp_path, rows: list[tuple[str, str, int, float, bool]]) -> pd.DataFrame:
    """Selected runs from (task, method, seed, val_amae, weights on disk)."""
    out = []
    for task, method, seed, amae, saved in rows:
        ckpt = tmp_path / f"{task}-{method}-{seed}.pt"
        if saved:
            ckpt.write_bytes(b"weights")
        out.append(
            {
                "task": task,
                "method": method,
                "seed": seed,
                "val_amae": amae,
                "checkpoint_path": str(ckpt),
            }
        )
    return pd.DataFrame(out)


def test_default_method_has_the_lowest_mean_validation_amae(tmp_path):
    runs = _runs(
        tmp_path,
        [
            ("KL", "nominal", 0, 0.9, True),
            ("KL", "nominal", 1, 0.1, True),  # nominal's mean 0.5
            ("KL", "beta", 0, 0.4, True),
            ("KL", "beta", 1, 0.45, True),  # beta's mean 0.425
        ],
    )
    assert default_method(runs) == "beta"


def test_best_seed_is_best_over_both_tasks_among_seeds_with_every_weight(tmp_path):
    runs = _runs(
        tmp_path,
        [
            ("KL", "beta", 0, 0.5, True),
            ("CPPD", "beta", 0, 0.5, True),
            ("KL", "beta", 1, 0.1, True),
            ("CPPD", "beta", 1, 0.6, True),  # seed 1: mean 0.35, the best
            ("KL", "beta", 2, 0.0, True),
            ("CPPD", "beta", 2, 0.0, False),  # best numbers, but a weight is missing
            ("KL", "nominal", 3, 0.0, True),  # another method
        ],
    )
    seed, checkpoints = best_seed(runs, "beta", ["KL", "CPPD"])
    assert seed == 1
    assert checkpoints == {
        "KL": str(tmp_path / "KL-beta-1.pt"),
        "CPPD": str(tmp_path / "CPPD-beta-1.pt"),
    }


def test_best_seed_without_any_saved_weights_is_none(tmp_path):
    runs = _runs(tmp_path, [("KL", "beta", 0, 0.5, False)])
    assert best_seed(runs, "beta", ["KL"]) == (-1, {})
