"""A pruned search across lanes: one Optuna study per (study, task, method, seed) in a file.

The configurations of one search train side by side in different lanes, slot processes and
Ray actors. They share one Optuna study through a journal file (Optuna's
``JournalFileBackend``: an append-only log written under a file lock) under
``$SOFTGRADE_HOME/pruning/<study id>/``, which every lane on the node sees, and which Ray nodes
see as they see the dataset cache (a shared SOFTGRADE_HOME). Each configuration is one trial,
named by its run id; it reports after every epoch (`engine.pruning.PRUNING`) and stops when
the pruner (`engine.pruning.make_pruner`) says so. Optuna samples nothing: the configurations
are the study's own plan (`engine.study.plan_runs`).

A run retried after its slot died takes its trial back (the one still running under its run
id), so the rungs it passed stay passed; a trial whose run had finished but was not stored
(the worker stopped between) is left and a new one opened. Nothing here touches the store:
the slot reports ``pruned`` with the run, and the worker writes it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.pruning import SearchSpec, make_pruner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PruningTask:
    """What a slot needs to join its search's shared Optuna study; picklable.

    Attributes:
        journal: the search's journal file.
        study_name: the Optuna study's name (the search's (task, method, seed)).
        search: the study's search setting (which pruner).
        max_epochs: the study's most epochs (the pruner's rungs follow from it).
        run_id: the run, which names its trial.
        lower_is_better: the direction of the selection metric reported.
    """

    journal: str
    study_name: str
    search: SearchSpec
    max_epochs: int
    run_id: str
    lower_is_better: bool


def journal_path(home: Path, study_id: str, task: str, method: str, seed: int) -> Path:
    """The journal file of one search: ``home/pruning/<study id>/<task>-<method>-seed<N>.log``
    (`store.studies.delete_study` removes them with the study)."""
    from store.studies import PRUNING_DIR  # the worker's import; slot processes need no store

    return home / PRUNING_DIR / study_id / f"{task}-{method}-seed{seed}.log"


def search_name(task: str, method: str, seed: int) -> str:
    """The Optuna study's name of one search."""
    return f"{task}-{method}-seed{seed}"


class SearchTrial:
    """One configuration's trial in its search's shared study."""

    def __init__(self, task: PruningTask) -> None:
        import optuna
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        Path(task.journal).parent.mkdir(parents=True, exist_ok=True)
        storage = JournalStorage(JournalFileBackend(task.journal))
        self.study = optuna.create_study(
            study_name=task.study_name,
            storage=storage,
            direction="minimize" if task.lower_is_better else "maximize",
            pruner=make_pruner(task.search, task.max_epochs),
            sampler=optuna.samplers.RandomSampler(seed=0),  # asked for nothing: no sampling
            load_if_exists=True,
        )
        self.trial = self._trial_of(task.run_id)

    def _trial_of(self, run_id: str) -> Any:
        """The run's trial: its own still running (a retry), else a new one named by it."""
        import optuna
        from optuna.trial import TrialState

        for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            if frozen.user_attrs.get("run_id") == run_id:
                log.info("run %s takes back its pruning trial %d", run_id, frozen.number)
                return optuna.trial.Trial(self.study, frozen._trial_id)
        trial = self.study.ask()
        trial.set_user_attr("run_id", run_id)
        return trial

    def should_prune(self, epoch: int, value: float) -> bool:
        """Report ``value`` at ``epoch`` and ask the pruner (`engine.train.PruneCheck`)."""
        # A retried run reports its epochs again; the values its trial holds stay (the same
        # configuration and seed give the same ones).
        if epoch not in self.trial._cached_frozen_trial.intermediate_values:
            self.trial.report(value, epoch)
        return bool(self.trial.should_prune())

    def finish(self, *, pruned: bool, value: float) -> None:
        """Close the trial: pruned, or complete with the run's final value."""
        from optuna.trial import TrialState

        if pruned:
            self.study.tell(self.trial, state=TrialState.PRUNED)
        else:
            self.study.tell(self.trial, value)
