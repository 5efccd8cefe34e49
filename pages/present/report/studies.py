"""The report's Studies section: each study's card in words and what its run counts mean."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from jobs.services.card_lines import field_label
from jobs.services.report_record import ReportInputs
from pages.present import report_html as rh
from pages.present.report.common import PHANTOM


def studies_section(inputs: ReportInputs) -> list[str]:
    """Each study's card (where and how it ran) with what its run counts mean, and its
    notes."""
    out: list[str] = []
    for study in inputs.studies:
        imported, runs, notes = study.imported_card, study.runs, study.notes
        dataset = (study.dataset_kind, study.dataset_params)
        shown = study_card(dict(study.card), imported is not None, runs, dataset)
        out += [rh.heading(study.card.get("study", study.study_id)), rh.card_html(shown)]
        out += [rh.paragraph(text, note=True) for text in run_count_notes(imported, runs)]
        out.append(rh.paragraph(f"Notes: {notes}" if notes else "No notes.", note=not notes))
    return out


def study_card(
    card: dict[str, str],
    imported: bool,
    runs: pd.DataFrame,
    dataset: tuple[str | None, Mapping[str, Any]] = (None, {}),
) -> dict[str, str]:
    """The card as the report shows it: the dataset in words (``dataset``: its kind and
    parameters), and an imported study's ``status`` as its import into this store (the job
    that trained it is the bundle's)."""
    kind, params = dataset
    if "dataset" in card:
        card["dataset"] = dataset_card_text(card["dataset"], kind, params)
    if imported and "status" in card:
        seeds = runs["seed"].nunique() if len(runs) else 0
        status = f"imported from a bundle: {len(runs)} runs of {seeds} seeds stored"
        card = {("status in this store" if k == "status" else k): v for k, v in card.items()}
        card["status in this store"] = status
    return card


#: A dataset parameter as the card names it.
DATASET_PARAM_LABELS: dict[str, str] = {
    "n_images": "films",
    "n_joint": "films with both grades",
    "seed": "generator seed",
    "annotation_noise": "annotation noise",
    "labels_csv": "labels file",
    "path": "folder",
}


def dataset_card_text(text: str, kind: str | None, params: Mapping[str, Any]) -> str:
    """The card's dataset line in words: ``"ds-1: synthetic knee phantom (films 2170, ...)"``
    rather than its key (``phantom(n_images=2170,...)``); the line as is when unknown."""
    if kind is None:
        return text
    dataset_id = text.split(" ", 1)[0]
    what = "synthetic knee phantom" if kind == PHANTOM else f"{kind} of imported films"
    values = ", ".join(
        f"{DATASET_PARAM_LABELS.get(k, field_label(k))} {v}" for k, v in sorted(params.items())
    )
    return f"{dataset_id}: {what}" + (f" ({values})" if values else "")


def run_count_notes(imported: Mapping[str, Any] | None, runs: pd.DataFrame) -> list[str]:
    """What the card's run counts mean for a study imported from a bundle, part by part for
    one run in parts (each part's own job, and the runs the bundle kept of it)."""
    if imported is None:
        return []
    text = (
        f"This study was trained elsewhere and imported from a bundle; the “bundle …” rows "
        f"are the card it came with. This store holds its {len(runs)} runs."
    )
    stored, jobs = imported.get("runs_stored"), imported.get("job")
    if not isinstance(stored, Mapping):
        return [text]
    parts = []
    for part, count in stored.items():
        seeds = _part_seeds(str(part))
        kept = int(runs["seed"].isin(seeds).sum()) if seeds else None
        job = jobs.get(part, {}) if isinstance(jobs, Mapping) else {}
        status = job.get("status") if isinstance(job, Mapping) else None
        ended = (
            f"its job ended {status} after storing {count} runs"
            if status
            else (f"its job stored {count} runs")
        )
        if kept is not None:
            ended += f"; the bundle keeps the {kept} runs of {part}"
            if isinstance(count, int) and count > kept:
                ended += (
                    f" (the other {count - kept} were runs of seeds outside {part}, which the "
                    "bundle takes from the part that completed them)"
                )
        parts.append(f"{part}: {ended}")
    text += (
        f" It was run in {len(stored)} parts, merged into one bundle; the “bundle job” and "
        f"“bundle runs stored by its job” rows describe each part's own job: {'; '.join(parts)}."
    )
    return [text]


def _part_seeds(part: str) -> list[int]:
    """The seeds a bundle part's key names: ``"seeds 0-12"`` -> 0..12 (either dash)."""
    found = re.fullmatch(r"seeds? (\d+)(?:[-–](\d+))?", part.strip())
    if not found:
        return []
    low = int(found.group(1))
    return list(range(low, int(found.group(2) or low) + 1))
