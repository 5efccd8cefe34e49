"""What SoftGrade says about a study of results imported from another tool
(`softgrade import-results`, `jobs.services.results_io`): its spec's ``imported_results``
marks it; it holds scores but no trained model, dataset or training record."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from engine import methods as method_registry
from engine.analysis.results_file import UNSIZED_NOTE
from engine.vocab import seed_ranges

#: Said by the pages that show trained models (Attention, Grade a film) for such a study.
NO_MODELS_HERE = (
    "This study was imported from another tool's results: it has no trained models, so "
    "there is nothing to show here; pick a trained study."
)


def is_imported_results(spec: Mapping[str, Any] | str | None) -> bool:
    """Whether a study's spec (a mapping or its stored JSON text) marks imported results."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            return False
    return isinstance(spec, Mapping) and isinstance(spec.get("imported_results"), Mapping)


def protocol_paragraph(study_id: str, spec: Mapping[str, Any], unsized: Sequence[str]) -> str:
    """The report's protocol paragraph of a study of imported results: SoftGrade trained,
    searched and selected nothing; what the file holds (tasks, methods, seeds); and which
    intervals its lack of split sizes (``unsized``: the tasks without them,
    `jobs.services.study_analysis.unsized_tasks`) leaves out (`UNSIZED_NOTE`)."""
    source = spec["imported_results"]
    tasks = [str(t) for t in spec.get("tasks", [])]
    methods = [method_registry.method_label(m) for m in spec.get("methods", [])]
    seeds = [int(s) for s in spec.get("seeds", [])]
    provenance = str(source.get("provenance", "imported")).capitalize()
    return (
        f"Protocol ({spec.get('name', study_id)}). {provenance}. SoftGrade trained nothing "
        f"for this study: the results of {_count(tasks, 'task')} ({', '.join(tasks)}), "
        f"{_count(methods, 'method')} ({', '.join(methods)}) and {_count(seeds, 'seed')} "
        f"({seed_ranges(seeds)}) were imported from {source.get('file', 'a file')} "
        f"({source.get('format', 'results')}) as another tool computed them. No configurations "
        "were sampled, no run was stopped early and none was selected on validation here: each "
        "(task, method, seed) holds the one result the file gives, and nothing of the data, "
        "the model, the training, the search or the selection behind it is known. "
        + _sizes_sentence(unsized)
    )


def _sizes_sentence(unsized: Sequence[str]) -> str:
    """Which intervals the file's split sizes allow."""
    if not unsized:
        return (
            "The file gives each seed's split sizes (n_train, n_test), so the corrected "
            "intervals and tests below use them as given."
        )
    return f"No split sizes (n_train, n_test) for {', '.join(unsized)}: {UNSIZED_NOTE}."


def metrics_source(selected: str, imported: Sequence[str], n_studies: int) -> str:
    """The statistics paragraph's first sentence: where each test metric comes from.
    ``selected`` is the sentence for studies trained here (each search's selected run); a
    study of imported results (``imported``: their names, of ``n_studies`` studies in all)
    selected nothing here, so its metrics are the file's."""
    if not imported:
        return selected
    given = (
        "each (task, method, seed)'s result as the imported file gives it (SoftGrade searched, "
        "stopped and selected nothing for it)"
    )
    if len(imported) == n_studies:
        return f"Test metrics are {given}."
    names = ", ".join(f"“{name}”" for name in imported)
    return f"{selected.rstrip('.')}; those of the imported results of {names} are {given}."


def _count(items: Sequence[Any], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"
