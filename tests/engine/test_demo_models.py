"""Which models grade a film in a demo: best method, its best seed with weights, every seed's
model for the seeds' agreement, and films spread over the grades."""

from __future__ import annotations

import pandas as pd

from engine.demo_models import (
    best_seed,
    default_method,
    example_films,
    seed_checkpoints,
    seed_probabilities,
)


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


def test_seed_checkpoints_lists_every_seed_with_weights_per_task(tmp_path):
    runs = _runs(
        tmp_path,
        [
            ("KL", "beta", 2, 0.5, True),
            ("KL", "beta", 0, 0.5, True),
            ("KL", "beta", 1, 0.5, False),  # no weights here
            ("CPPD", "beta", 1, 0.5, True),
            ("KL", "nominal", 3, 0.5, True),  # another method
        ],
    )
    found = seed_checkpoints(runs, "beta", ["KL", "CPPD"])
    assert found == {
        "KL": {0: str(tmp_path / "KL-beta-0.pt"), 2: str(tmp_path / "KL-beta-2.pt")},
        "CPPD": {1: str(tmp_path / "CPPD-beta-1.pt")},
    }
    assert list(found["KL"]) == [0, 2]  # ascending seeds


def test_example_films_take_each_grade_in_turn_and_ungraded_films_last():
    films = pd.DataFrame(
        {
            "image_id": list("abcdefg"),
            "kl": pd.array([0, 0, 0, 2, None, 2, 4], dtype="Int64"),
        }
    )
    chosen = example_films(films, 5, "KL")
    assert list(chosen["image_id"]) == ["a", "d", "g", "b", "f"]
    assert list(example_films(films, 10, "KL")["image_id"])[-1] == "e"
    films["all_seeds"] = [False, True, False, False, False, True, False]
    first = example_films(films, 4, "KL", first="all_seeds")
    assert list(first["image_id"]) == ["b", "f", "a", "d"]  # preferred films first


def test_seed_probabilities_are_each_saved_models_own(tmp_path):
    import numpy as np
    import torch

    from engine.config import TrainConfig
    from engine.train import build_model, save_checkpoint

    crop = np.random.default_rng(0).integers(0, 256, (32, 32), dtype=np.uint8)
    paths = {}
    for seed in (0, 1):
        torch.manual_seed(seed)
        model, _ = build_model(5)
        paths[seed] = tmp_path / f"kl-{seed}.pt"
        save_checkpoint(
            paths[seed],
            model.state_dict(),
            TrainConfig(task="KL", method="nominal", lr=1e-3, image_size=32),
        )
    probs = seed_probabilities(paths, crop)
    assert set(probs) == {0, 1}
    assert all(p.shape == (5,) and abs(p.sum() - 1) < 1e-5 for p in probs.values())
    assert not np.allclose(probs[0], probs[1])  # two models, two answers


def test_knee_finding_is_the_import_checks_rule():
    from engine.films import KNEE_LOW_CONFIDENCE, KNEE_NOT_FOUND, knee_finding

    assert knee_finding(0.9, 0) == "none"  # nothing returned at all
    assert knee_finding(KNEE_NOT_FOUND - 0.01) == "none"
    assert knee_finding(KNEE_NOT_FOUND) == "low"
    assert knee_finding(KNEE_LOW_CONFIDENCE - 0.01) == "low"
    assert knee_finding(KNEE_LOW_CONFIDENCE) == "found"


def test_noise_a_flat_image_and_a_chest_like_film_have_no_knee_to_grade():
    from engine.demo_models import knee_to_grade
    from tests.helpers.films import films_without_a_knee, phantom_film

    for name, film in films_without_a_knee().items():
        assert knee_to_grade(film).finding == "none", name
    knee = knee_to_grade(phantom_film(index=0))
    assert knee.finding == "found" and knee.box is not None and knee.confidence > 0.5
