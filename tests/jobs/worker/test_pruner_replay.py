"""bench/pruner_replay.py: a pruner replayed over recorded curves stops what the lanes would."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from engine.pruning import SearchSpec
from store import runs as store_runs
from store.db import init_schema
from tests.helpers.synthetic_study import write_synthetic_study

ROOT = Path(__file__).resolve().parents[3]


def _bench():
    spec = importlib.util.spec_from_file_location("pruner_replay", ROOT / "bench/pruner_replay.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["pruner_replay"] = module
    spec.loader.exec_module(module)
    return module


pr = _bench()
SEARCH = ("KL", "beta", 0)


def curve(run_id: str, amae: float, *, epochs: int = 12, config: int = 0, loss=None):
    """A run whose validation loss falls every epoch (so its last epoch is kept) and whose
    validation AMAE is ``amae`` throughout."""
    return pr.Curve(
        run_id=run_id,
        search=SEARCH,
        config_index=config,
        val_loss=tuple(loss or [1.0 / e for e in range(1, epochs + 1)]),
        val_amae=(amae,) * epochs,
        seconds=(1.0,) * epochs,
    )


def replay(curves, search, *, patience=12, lanes=1):
    return pr.replay(curves, search, max_epochs=12, patience=patience, lanes=lanes)


def test_a_configuration_behind_at_a_rung_is_stopped_there():
    good, bad, middling = curve("a", 0.2), curve("b", 0.9, config=1), curve("c", 0.5, config=2)
    asha = SearchSpec(pruner="asha", min_epochs=2, reduction_factor=2)

    outcome = replay([good, bad, middling], asha)

    # One lane: the good run reaches every rung first and trains to its end; the other two
    # are behind it at the first rung (epoch 2) and stop there.
    assert outcome.stopped == {"b": 2, "c": 2}
    assert outcome.epochs == {"a": 12, "b": 2, "c": 2}
    costs = pr.costs([good, bad, middling], outcome)
    assert costs["epochs"] == 16 and costs["seconds"] == 16.0


def test_the_order_runs_reach_a_rung_decides_asynchronous_pruning():
    good, bad = curve("a", 0.2), curve("b", 0.9, config=1)
    asha = SearchSpec(pruner="asha", min_epochs=2, reduction_factor=2)

    # The bad run first, alone at every rung: nothing is ahead of it, so it goes on.
    assert replay([bad, good], asha).stopped == {}
    # Two lanes side by side: the good one is judged first at each epoch, the bad one after.
    assert replay([good, bad], asha, lanes=2).stopped == {"b": 2}


def test_with_no_pruner_nothing_is_stopped_and_every_curve_trains_whole():
    curves = [curve("a", 0.2), curve("b", 0.9, config=1, epochs=7)]

    outcome = replay(curves, SearchSpec())

    assert outcome.stopped == {}
    assert outcome.epochs == {"a": 12, "b": 7}


def test_a_run_its_stopping_rule_ends_has_finished_whatever_the_pruner_says():
    good = curve("a", 0.2)
    # Its loss never improves after epoch 1: with patience 1 the rule ends it at epoch 2,
    # the first rung, where it is behind.
    done = curve("b", 0.9, config=1, epochs=2, loss=[1.0, 2.0])

    outcome = replay([good, done], SearchSpec(pruner="asha", min_epochs=2), patience=1)

    assert outcome.stopped == {}
    assert outcome.epochs["b"] == 2


def test_the_reported_value_is_the_kept_epochs_validation_amae():
    # Epoch 2 has the better AMAE but a worse loss: early stopping keeps epoch 1, and the run
    # reports epoch 1's AMAE (what selection would give it if it stopped now).
    run = pr.Curve("a", SEARCH, 0, (1.0, 2.0, 0.5), (0.6, 0.1, 0.3), (1.0, 1.0, 1.0))

    assert pr.kept_epochs(run) == (1, 1, 3)
    assert pr.reported_values(run) == (0.6, 0.6, 0.3)


def test_a_loss_replay_reports_the_kept_epochs_loss_and_stops_the_higher_loss():
    run = pr.Curve("a", SEARCH, 0, (1.0, 2.0, 0.5), (0.6, 0.1, 0.3), (1.0, 1.0, 1.0))
    assert pr.reported_values(run, "loss") == (1.0, 1.0, 0.5)
    # Same AMAE, so only the loss tells them apart: by AMAE nobody is behind, by loss "b" is.
    low = curve("a", 0.5, loss=[1.0 / e for e in range(1, 13)])
    high = curve("b", 0.5, config=1, loss=[2.0 / e for e in range(1, 13)])
    search = SearchSpec(pruner="asha", min_epochs=2)
    runs = [low, high, *(curve(f"c{k}", 0.5, config=2 + k) for k in range(3))]

    by_amae = pr.replay(runs, search, max_epochs=12, patience=40, lanes=1)
    by_loss = pr.replay(runs, search, max_epochs=12, patience=40, lanes=1, report="loss")

    assert "b" not in by_amae.stopped
    assert by_loss.stopped.get("b") == 2


def test_the_replayed_selection_is_the_engines_and_skips_a_stopped_run(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    study_id = write_synthetic_study(
        store, n_seeds=2, methods=("nominal", "beta"), configs={"nominal": 3, "beta": 3}
    )
    full = pr.selected_configs(store, study_id)

    pr.mark_replayed(store, study_id, pr.Outcome())  # nothing stopped: the full selection
    assert pr.selected_configs(store, study_id) == full

    key = ("KL", "beta", 0)
    stopped = f"{study_id}-KL-beta-s0-c{full[key]}"
    pr.mark_replayed(store, study_id, pr.Outcome(stopped={stopped: 3}))
    replayed = pr.selected_configs(store, study_id)
    assert replayed[key] != full[key]
    assert {k: v for k, v in replayed.items() if k != key} == {
        k: v for k, v in full.items() if k != key
    }
    runs = store_runs.list_runs([study_id], path=store)
    assert runs.set_index("run_id").loc[stopped, "pruned"]
