"""The training protocol in words: early stopping and search selection, written from the rules
`engine.protocol` declares (the ones `engine.train.Trainer.fit` and the search obey) and a
study's own settings. The report's Methods paragraph and the Search & learning curves page
both say them through these functions, so neither can drift from what training does.
No streamlit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
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


def search_sentence(spec: Mapping[str, Any] | str | None) -> str | None:
    """How a pruned study searched (`engine.pruning`), or None for the full search (the
    paper's protocol, every study stored before pruning, and results imported)."""
    from engine.pruning import PrunerError, SearchSpec

    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError:
            return None
    if not isinstance(spec, Mapping):
        return None
    try:
        search = SearchSpec.from_value(spec.get("search"))
    except PrunerError:
        return None
    if not search.pruned:
        return None
    max_epochs = _setting(spec, "max_epochs", protocol.EARLY_STOPPING.max_epochs)
    return (
        f"The search was {search.describe(max_epochs)}: configurations that had already lost "
        "were stopped early and never selected, so a method's selected configuration can "
        "differ from the full search's."
    )


def pruned_search_note(
    studies: Iterable[tuple[str, Mapping[str, Any] | str | None, tuple[int, int] | None]],
) -> str:
    """The Compare page's note beside every comparison, naming each picked study whose search
    was pruned, with its pruner and how many of its runs the pruner stopped; empty when none
    was.

    Args:
        studies: (study name, its spec, (runs stopped, runs stored) or None when not read)
            triples; the counts are the study card's (`store.studies.pruned_run_counts`).
    """
    from engine.pruning import SearchSpec

    parts = []
    for name, spec, counts in studies:
        if search_sentence(spec) is None:
            continue
        parsed = json.loads(spec) if isinstance(spec, str) else spec
        pruner = SearchSpec.from_value((parsed or {}).get("search")).pruner
        parts.append(f"“{name}” ({pruner}{stopped_runs_text(counts)})")
    if not parts:
        return ""
    return (
        f"Pruned search in {', '.join(parts)}: configurations that had already lost were "
        "stopped early and never selected, so these selected models come from a pruned "
        "search, not the paper's full protocol. Its verdicts can differ from a full "
        "search's (on the phantom, 9 of 120 Statistics-tab decisions changed at three "
        "seeds): compare pruned studies with pruned ones."
    )


def stopped_runs_text(counts: tuple[int, int] | None) -> str:
    """The clause ", the pruner stopped 194 of 270 runs" for a pruned study's (runs stopped,
    runs stored); empty when they are not known or no run is stored yet."""
    if counts is None or counts[1] <= 0:
        return ""
    stopped, total = counts
    return f", the pruner stopped {stopped} of {total} run{'s' * (total != 1)}"
