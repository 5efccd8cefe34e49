"""The training protocol in words: early stopping and search selection, written from the rules
`engine.protocol` declares (the ones `engine.train.Trainer.fit` and the search obey) and a
study's own settings. The report's Methods paragraph and the Search & learning curves page
both say them through these functions, so neither can drift from what training does.
No streamlit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine import protocol


def _extreme(lower_is_better: bool) -> str:
    return "lowest" if lower_is_better else "highest"


def _setting(spec: Mapping[str, Any] | str | None, key: str, default: int) -> int:
    """A study's own ``key`` (its spec, as a mapping or the stored JSON text), else the
    declared default (no spec, or one that does not say)."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError:
            spec = None
    value = spec.get(key) if isinstance(spec, Mapping) else None
    return int(value) if isinstance(value, int | float) else default


def stopping_sentence(spec: Mapping[str, Any] | str | None = None) -> str:
    """How training of one run stops and which epoch it keeps, with the study's patience
    and epoch limit (``spec``: the study's settings; the declared defaults without one).

    Example: "at most 100 epochs, stopping once the validation loss had not improved for 40
    epochs, and keeping the weights of the epoch with the lowest validation loss".
    """
    rule = protocol.EARLY_STOPPING
    patience = _setting(spec, "patience", rule.patience)
    max_epochs = _setting(spec, "max_epochs", rule.max_epochs)
    label = rule.monitored_label
    return (
        f"at most {max_epochs} epochs, stopping once the {label} had not improved for "
        f"{patience} epochs, and keeping the weights of the epoch with the "
        f"{_extreme(rule.lower_is_better)} {label}"
    )


def kept_epoch_phrase() -> str:
    """Which epoch of a run is kept, as a phrase: "the epoch with the lowest validation loss"."""
    rule = protocol.EARLY_STOPPING
    return f"the epoch with the {_extreme(rule.lower_is_better)} {rule.monitored_label}"


def selection_sentence() -> str:
    """Which run of a search is selected, e.g. "the configuration with the lowest validation
    AMAE at its kept epoch, ties going to the lower configuration number"."""
    rule = protocol.SEARCH_SELECTION
    return (
        f"the configuration with the {_extreme(rule.lower_is_better)} validation "
        f"{rule.metric_label} at its kept epoch, ties going to {rule.tie_break}"
    )
