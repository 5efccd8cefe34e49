"""What the Data page shows of a dataset: grade counts, the KL × CPPD table, gallery picks
and lesion-mask overlays. No streamlit, so it is unit-tested."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from engine.analysis.relationship import contingency
from engine.vocab import LABEL_COLUMNS, LEGACY_SPLIT_RULE, SPLIT_RULE, TASK_INFO, seed_ranges

#: Each split rule in plain words: (what it does, why it matters), for the Data page.
SPLIT_RULE_WORDS: dict[str, tuple[str, str]] = {
    SPLIT_RULE: (
        "patients kept whole, balanced on both knees' KL and CPPD grades",
        "Both knees of a patient stay in one part (train, validation or test) and the parts are "
        "balanced on both knees' grades, so every grade has about 30 % of its films in test, "
        "as in the paper.",
    ),
    LEGACY_SPLIT_RULE: (
        "patients kept whole, balanced on the first knee's grades only (an older SoftGrade's rule)",
        "Both knees of a patient stay in one part, but only the first knee's grades were "
        "balanced, so a grade's test share can drift from 30 % (0.25–0.39 over 20 seeds on the "
        "phantom); stored splits are kept, and seeds split from now on use both knees.",
    ),
}


def grade_counts(labels: pd.DataFrame) -> pd.DataFrame:
    """Images per recorded grade and task.

    Args:
        labels: One row per image with nullable ``kl`` and ``cppd`` grade columns (the
            shape of ``store.datasets.dataset_labels``).

    Returns:
        Index ``grade`` 0..4; columns ``KL`` and ``CPPD`` with image counts (CPPD has no
        grade 4, shown as <NA>), plus a ``total`` row.
    """
    most = max(info.n_grades for info in TASK_INFO.values())
    out = pd.DataFrame(index=pd.Index(range(most), name="grade"))
    for task, info in TASK_INFO.items():
        column, n_grades = info.column, info.n_grades
        values = labels[column].dropna().astype(int) if column in labels else pd.Series([])
        counts = values.value_counts().reindex(range(n_grades), fill_value=0)
        out[task] = counts.reindex(out.index).astype("Int64")
    out.loc["total"] = out.sum(skipna=True).astype("Int64")
    return out


def joint_table(labels: pd.DataFrame) -> pd.DataFrame:
    """KL × CPPD counts of the images graded for both, as a table (rows KL, columns CPPD).

    The counting is `engine.analysis.relationship.contingency`'s; this only labels its axes.
    """
    kl, cppd = LABEL_COLUMNS["KL"], LABEL_COLUMNS["CPPD"]
    both = labels.dropna(subset=[kl, cppd])
    counts = contingency(both[kl].astype(int).to_numpy(), both[cppd].astype(int).to_numpy())
    return pd.DataFrame(
        counts,
        index=pd.RangeIndex(counts.shape[0], name="KL"),
        columns=pd.RangeIndex(counts.shape[1], name="CPPD"),
    )


def pick_examples(labels: pd.DataFrame, column: str, per_grade: int = 1) -> pd.DataFrame:
    """The first ``per_grade`` rows of each recorded grade in ``column``, grade by grade.

    Rows whose recorded grade differs from the true one (annotation noise) are skipped when
    a clean example exists, so the gallery shows what each grade looks like.
    """
    true_column = f"{column}_true"
    graded = labels[labels[column].notna()]
    picks = []
    for grade in sorted(graded[column].astype(int).unique()):
        rows = graded[graded[column].astype(int) == grade]
        if true_column in rows:
            clean = rows[rows[true_column].astype("Int64") == grade]
            rows = clean if len(clean) else rows
        picks.append(rows.head(per_grade))
    return pd.concat(picks) if picks else graded.head(0)


#: Overlay colours (RGB) of the phantom's lesion masks, by mask layer name.
MASK_COLOURS: dict[str, tuple[int, int, int]] = {
    "joint_space": (64, 160, 255),
    "osteophytes": (255, 150, 0),
    "sclerosis": (220, 60, 220),
    "calcifications": (40, 230, 90),
}


def overlay_mask(
    film: np.ndarray,
    mask: np.ndarray,
    bits: Mapping[str, int],
    *,
    layers: tuple[str, ...] | None = None,
    alpha: float = 0.55,
) -> np.ndarray:
    """Blend coloured lesion masks over a grey film.

    Args:
        film: ``(H, W)`` uint8 grey film.
        mask: ``(H, W)`` uint8 of OR-ed flags, one bit per layer (``bits``).
        bits: Layer name → flag, e.g. ``engine.phantom.MASK_BITS``.
        layers: Layers to draw; all of ``bits`` when None.
        alpha: Opacity of the colour where a layer is set.

    Returns:
        ``(H, W, 3)`` uint8 RGB image.
    """
    rgb = np.repeat(film[..., None], 3, axis=2).astype(np.float32)
    for name in layers if layers is not None else tuple(bits):
        hit = (mask & bits[name]) > 0
        colour = np.array(MASK_COLOURS.get(name, (255, 0, 0)), dtype=np.float32)
        rgb[hit] = (1 - alpha) * rgb[hit] + alpha * colour
    return np.clip(rgb + 0.5, 0, 255).astype(np.uint8)


def dataset_settings(datasets: pd.DataFrame) -> pd.DataFrame:
    """The store's datasets as the Data page lists them, each one's settings in one line.

    Args:
        datasets: ``store.datasets.list_datasets`` rows; ``params`` is a JSON object.

    Returns:
        Columns ``dataset_id, kind, settings, n_images, n_kl, n_cppd, created_at``, where
        ``settings`` reads ``"n_images=400, seed=0"``.
    """
    settings = datasets["params"].map(
        lambda p: ", ".join(f"{k}={v}" for k, v in json.loads(p).items())
    )
    columns = ["dataset_id", "kind", "settings", "n_images", "n_kl", "n_cppd", "created_at"]
    return datasets.assign(settings=settings)[columns]


def split_rule_note(rules: pd.DataFrame) -> str:
    """Which rule made a dataset's stored splits, in plain words with a one-line explanation;
    per seed when its seeds were split by different rules.

    Args:
        rules: ``store.datasets.split_rules``'s rows (``seed``, ``rule``).

    Returns:
        Markdown for the Data page.
    """
    if rules.empty:
        return (
            "**Splits:** no seed of this dataset has been split yet. A study splits each of its "
            f"seeds when it first runs: {SPLIT_RULE_WORDS[SPLIT_RULE][0]}."
        )
    by_rule = rules.groupby("rule", sort=False)["seed"].apply(list)
    by_rule = by_rule.loc[sorted(by_rule.index, key=lambda r: min(by_rule[r]))]
    words = {rule: SPLIT_RULE_WORDS.get(rule, (rule, "")) for rule in by_rule.index}
    if len(by_rule) == 1:
        rule = by_rule.index[0]
        what, why = words[rule]
        return f"**Splits** ({seed_ranges(by_rule[rule])}): {what}. {why}".strip()
    lines = [f"**Splits** of this dataset were made by {len(by_rule)} rules:"]
    lines += [
        f"- {seed_ranges(seeds)}: {words[rule][0]}. {words[rule][1]}".strip()
        for rule, seeds in by_rule.items()
    ]
    return "\n".join(lines)
