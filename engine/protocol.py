"""The training protocol's declared rules, each stated once where it is decided.

* `EARLY_STOPPING`: what `engine.train.Trainer.fit` watches after every epoch, how long it
  waits for an improvement, and which epoch's weights it keeps (the paper's rule: validation
  loss, patience 40, at most 100 epochs). `engine.config` takes its defaults from it.
* `SEARCH_SELECTION`: which configuration of a (task, method, seed) search is the selected
  run whose test results every page and the report show (``store.runs.select_best_runs``
  orders by the stored ``val_<metric>`` column; store/ reads no engine module but its
  vocabulary, so a test holds the two together).

Every sentence that tells a reader these rules (the report's Methods paragraph, the Search &
learning curves page) is written from these records and the study's own settings
(``pages.present.protocol_text``), so changing a rule here changes what is said about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# engine.config reads its defaults from here, and every page imports engine.config: this module
# imports nothing at load, and the metric registry (engine.analysis, with pandas and scipy,
# ~1 s) only when a sentence asks for a metric's name.


@dataclass(frozen=True)
class EarlyStoppingRule:
    """When training stops and which epoch it keeps.

    Attributes:
        monitored: the `engine.train.EpochStats` field watched after every epoch.
        monitored_label: that quantity as a reader names it ("validation loss").
        lower_is_better: True when a smaller value is an improvement.
        patience: default epochs without an improvement before training stops.
        max_epochs: default most epochs trained.
    """

    monitored: str
    monitored_label: str
    lower_is_better: bool
    patience: int
    max_epochs: int

    def to_minimise(self, epoch_values: Mapping[str, float]) -> float:
        """The monitored value of one epoch, signed so that smaller is better.

        Args:
            epoch_values: the epoch's numbers by `EpochStats` field name.
        """
        value = float(epoch_values[self.monitored])
        return value if self.lower_is_better else -value


@dataclass(frozen=True)
class SelectionRule:
    """Which run of a search is selected.

    Attributes:
        tie_break: how ties are broken, as a reader reads it.
        metric: the metric (a key of `engine.analysis.metrics.METRIC_LABELS`) scored on the
            validation films of each run's kept epoch; None: the registry's selection metric
            (`engine.analysis.metrics.SELECTION_METRIC`, the primary metric unless declared
            otherwise there).
    """

    tie_break: str
    metric: str | None = None

    @property
    def metric_name(self) -> str:
        """The selection metric's registry key."""
        if self.metric is not None:
            return self.metric
        from engine.analysis.metrics import SELECTION_METRIC

        return SELECTION_METRIC

    @property
    def metric_label(self) -> str:
        """The metric as a reader names it ("AMAE")."""
        from engine.analysis.metrics import METRIC_LABELS

        return METRIC_LABELS[self.metric_name]

    @property
    def lower_is_better(self) -> bool:
        """True when the lowest value is the best."""
        from engine.analysis.metrics import LOWER_IS_BETTER

        return self.metric_name in LOWER_IS_BETTER


EARLY_STOPPING = EarlyStoppingRule(
    monitored="val_loss",
    monitored_label="validation loss",
    lower_is_better=True,
    patience=40,
    max_epochs=100,
)
# The selected run is the one with the best validation value of the selection metric
# (`engine.analysis.metrics.SELECTION_METRIC`, resolved by `SelectionRule.metric_name` when asked,
# so that this module stays free of imports; no metric name is spelled here).
SEARCH_SELECTION = SelectionRule(tie_break="the lower configuration number")
