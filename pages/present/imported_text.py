"""What SoftGrade says about a study of results imported from another tool
(`softgrade import-results`, `jobs.services.results_io`): its spec's ``imported_results``
marks it; it holds scores but no trained model, dataset or training record."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
