"""The referee's design (datasets, the null pair, configurations, phantom specs) and the
trainer's scoring of kept weights on other films."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.config import TrainConfig
from engine.datasets import TaskSplit
from engine.methods import get_method, paper_methods
from engine.referee.design import (
    FIXED,
    FRESH_SEED_OFFSET,
    TWIN_SEED_OFFSET,
    RefereeDesign,
    fixed_config,
)
from engine.train import Trainer

BASE, SOFT = paper_methods()[0], paper_methods()[1]


def _design(**kw) -> RefereeDesign:
    return RefereeDesign(**{"methods": (BASE, SOFT), "null_method": BASE, "task": "KL", **kw})


def test_comparisons_are_every_pair_then_the_null_pair_of_the_twin():
    design = _design(methods=(BASE, SOFT, paper_methods()[2]))
    names = [(c.method_a, c.method_b, c.null) for c in design.comparisons]
    assert names == [
        (BASE, SOFT, False),
        (BASE, paper_methods()[2], False),
        (SOFT, paper_methods()[2], False),
        (BASE, design.twin, True),
    ]
    assert design.trained == (BASE, SOFT, paper_methods()[2], design.twin)


def test_the_twin_trains_its_method_on_the_same_split_with_other_streams():
    design = _design()
    params = design.configs(design.twin, 3)[0]
    twin = design.train_config(design.twin, 3, params)
    original = design.train_config(BASE, 3, params)
    assert twin.method == original.method == BASE
    assert original.seed == design.train_seed(BASE, 3)
    assert twin.seed == original.seed + TWIN_SEED_OFFSET
    assert twin.lr == original.lr and dict(twin.hparams) == dict(original.hparams)


def test_every_dataset_draws_its_own_initialisations_reproducibly():
    design = _design(datasets=40)
    streams = [design.train_seed(BASE, 0, k) for k in range(40)]
    assert len(set(streams)) == 40  # no init shared across datasets: independent replicates
    assert streams == [design.train_seed(BASE, 0, k) for k in range(40)]
    assert design.train_seed(BASE, 0, 0) != design.train_seed(BASE, 1, 0)
    run = design.train_config(BASE, 0, fixed_config(BASE), dataset=7)
    assert run.seed == run.init_seed == streams[7]
    assert all(0 <= s < 2**31 - TWIN_SEED_OFFSET for s in streams)


def test_independent_seeds_draw_split_and_streams_from_one_seed():
    design = _design(seeds=3)
    assert not design.factorial and design.seed_design is None
    assert design.cells() == [(0, [(0, 0)]), (1, [(1, 1)]), (2, [(2, 2)])]
    assert design.describe_seeds() == "3 seeds"


def test_a_factorial_design_trains_every_split_from_the_same_inits():
    design = _design(seeds=3, inits=2)
    assert design.factorial and design.n_cells == 6
    # Pairing seed split · I + init, as a study's `seeds: {splits: 3, inits: 2}`.
    assert design.cells() == [
        (0, [(0, 0), (1, 1)]),
        (1, [(2, 0), (3, 1)]),
        (2, [(4, 0), (5, 1)]),
    ]
    assert design.seed_design is not None and design.seed_design.pairing_seeds() == tuple(range(6))
    assert design.runs() == 3 * 6 * 3
    assert design.describe_seeds() == "3 splits × 2 inits (6 seeds)"
    params = design.configs(BASE, 1)[0]
    run = design.train_config(BASE, 1, params, split_seed=2)
    twin = design.train_config(design.twin, 1, params, split_seed=2)
    streams = design.train_seed(BASE, 1)
    assert (run.split_seed, run.init_seed) == (2, streams)
    assert (twin.split_seed, twin.init_seed) == (2, streams + TWIN_SEED_OFFSET)
    # The same init on every split of a dataset (the crossed design), another on the next.
    assert design.train_config(BASE, 1, params, split_seed=0).init_seed == streams
    assert design.train_config(BASE, 1, params, split_seed=2, dataset=1).init_seed != streams


def test_fixed_configuration_is_each_hyper_parameter_mid_grid():
    params = fixed_config(SOFT)
    for h in get_method(SOFT).hyperparameters:
        assert params[h.name] == h.values[(len(h.values) - 1) // 2]
    assert _design().configs(SOFT, 0) == [params]
    assert _design().runs() == 3 * 3 * 3


def test_a_search_budget_draws_the_studys_configurations():
    design = _design(budget=2, datasets=6)
    assert len(design.configs(SOFT, 5)) == 2
    # Each dataset (and the twin) searches its own sample, as a new study would.
    draws = {tuple(p.as_dict().items()) for k in range(6) for p in design.configs(SOFT, 5, k)}
    assert len(draws) > 2
    assert design.configs(SOFT, 5, 3) == design.configs(SOFT, 5, 3)
    assert "2 sampled configurations" in design.selection()
    assert "fixed" in _design().selection()


def test_datasets_are_new_phantoms_and_the_fresh_set_shares_none_of_their_seeds():
    design = _design(datasets=4, n_images=60, fresh_test=90)
    seeds = [design.dataset_spec(k).seed for k in range(4)]
    assert len(set(seeds)) == 4
    assert design.fresh_spec().seed == design.data_seed + FRESH_SEED_OFFSET
    # Only jointly graded films carry KL: a KL dataset is all joint films.
    assert design.dataset_spec(0).n_joint == design.dataset_spec(0).n_images == 60
    cppd = _design(task="CPPD", n_images=100)
    assert 0 < cppd.dataset_spec(0).n_joint < 100


def test_patience_never_exceeds_the_epochs():
    assert _design(epochs=2).patience == 2
    assert _design(epochs=100).patience == 40


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"datasets": 1}, "datasets"),
        ({"seeds": 1}, "seeds"),
        ({"inits": 0}, "inits"),
        ({"methods": ()}, "methods"),
        ({"methods": (BASE, BASE)}, "each once"),
        ({"methods": (BASE, "no_such_method")}, "no_such_method"),
        ({"null_method": SOFT, "methods": (BASE,)}, "null method"),
        ({"task": "hip"}, "hip"),
        ({"n_images": 5}, "n_images"),
        ({"image_size": 8}, "image_size"),
        ({"metric": "nope"}, "metric"),
        ({"device": "gpu"}, "device"),
        ({"budget": -1}, "budget"),
        ({"max_minutes": 0.0}, "max_minutes"),
    ],
)
def test_a_bad_design_says_which_setting_and_what_is_allowed(change, message):
    with pytest.raises(ValueError, match=message):
        _design(**change)


def test_budget_zero_is_the_fixed_configuration():
    assert FIXED == 0 and _design(budget=FIXED).configs(BASE, 0) == [fixed_config(BASE)]


@pytest.mark.slow
def test_score_gives_the_kept_weights_probabilities_on_other_films(images, labels):
    """Scoring the test films again after `fit` reproduces fit's own test probabilities: the
    referee's fresh-set scores come from the selected run's kept weights."""
    data = TaskSplit(
        images,
        labels,
        images[:4],
        labels[:4],
        images[4:],
        labels[4:],
        [f"i{k}" for k in range(4)],
        [f"i{k}" for k in range(4, 8)],
        4,
    )
    config = TrainConfig(
        task="CPPD",
        method=BASE,
        lr=1e-3,
        max_epochs=2,
        patience=2,
        batch_size=4,
        image_size=32,
        device="cpu",
    )
    trainer = Trainer(num_classes=4, device=torch.device("cpu"), fast=False)
    with pytest.raises(RuntimeError, match="fit"):
        trainer.score(images, labels)
    result = trainer.fit(config, data)
    again = trainer.score(data.x_test, data.y_test)
    np.testing.assert_allclose(again, result.test_probs, atol=1e-6)
    assert trainer.score(images, labels).shape == (8, 4)
