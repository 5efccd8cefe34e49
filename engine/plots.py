"""Display helpers for the pages: Altair chart builders and small pure data preparation.

Everything here takes plain arrays or DataFrames and returns a DataFrame, a number, a string,
an image array or an Altair chart, so it is testable without Streamlit. No streamlit, no
duckdb (see ARCHITECTURE.md, "Layers").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

import altair as alt
import cv2
import numpy as np
import pandas as pd

from engine.vocab import TASK_INFO, parse_run_id

# --------------------------------------------------------------------------------------
# Soft-label matrices (the paper's Fig. 4)
# --------------------------------------------------------------------------------------


def soft_label_frame(matrix: np.ndarray) -> pd.DataFrame:
    """A (J, J) target matrix in long form for plotting.

    Args:
        matrix: ``(J, J)`` probabilities; row k is the target distribution of true grade k.

    Returns:
        One row per cell: ``true_grade``, ``target_grade`` (ints) and ``probability``.
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"expected a square (J, J) matrix, got shape {matrix.shape}")
    j = matrix.shape[0]
    true, target = np.meshgrid(np.arange(j), np.arange(j), indexing="ij")
    return pd.DataFrame(
        {
            "true_grade": true.ravel(),
            "target_grade": target.ravel(),
            "probability": matrix.ravel(),
        }
    )


def soft_label_heatmap(
    frame: pd.DataFrame, *, title: str = "", size: int = 140, values: bool = True
) -> alt.Chart:
    """Heatmap of a soft-label matrix: true grade down, target grade across, as in Fig. 4.

    Axis titles are left out so that five small charts fit side by side; say "rows: true
    grade, columns: target grade" next to them.

    Args:
        frame: Output of `soft_label_frame`.
        title: Chart title (the method's name).
        size: Width and height of the grid in pixels.
        values: Print each cell's probability in it.
    """
    base = alt.Chart(frame).encode(
        x=alt.X("target_grade:O", title=None, axis=alt.Axis(labelAngle=0, orient="top")),
        y=alt.Y("true_grade:O", title=None, axis=alt.Axis(labelAngle=0, labelOverlap=False)),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            "probability:Q",
            scale=alt.Scale(domain=[0, 1], scheme="blues"),
            legend=None,
        ),
        tooltip=[
            alt.Tooltip("true_grade:O", title="true grade"),
            alt.Tooltip("target_grade:O", title="target grade"),
            alt.Tooltip("probability:Q", format=".3f"),
        ],
    )
    chart = cells
    if values:
        labels = base.mark_text(fontSize=max(7, size // 18)).encode(
            text=alt.Text("probability:Q", format=".2f"),
            color=alt.condition(
                alt.datum.probability > 0.5, alt.value("white"), alt.value("black")
            ),
        )
        chart = cells + labels
    chart = chart.properties(width=size, height=size)
    return chart.properties(title=title) if title else chart


# --------------------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------------------


def grade_counts(labels: pd.DataFrame) -> pd.DataFrame:
    """Images per recorded grade and task.

    Args:
        labels: One row per image with nullable ``kl`` and ``cppd`` grade columns (the
            shape of ``store.datasets.dataset_labels``).

    Returns:
        Index ``grade`` 0..4; columns ``KL`` and ``CPPD`` with image counts (CPPD has no
        grade 4, shown as <NA>), plus a ``total`` row.
    """
    out = pd.DataFrame(index=pd.Index(range(5), name="grade"))
    for task, info in TASK_INFO.items():
        column, n_grades = info.column, info.n_grades
        values = labels[column].dropna().astype(int) if column in labels else pd.Series([])
        counts = values.value_counts().reindex(range(n_grades), fill_value=0)
        out[task] = counts.reindex(out.index).astype("Int64")
    out.loc["total"] = out.sum(skipna=True).astype("Int64")
    return out


def joint_table(labels: pd.DataFrame) -> pd.DataFrame:
    """KL × CPPD counts of the images graded for both (rows KL 0..4, columns CPPD 0..3)."""
    both = labels.dropna(subset=["kl", "cppd"])
    table = pd.crosstab(both["kl"].astype(int), both["cppd"].astype(int))
    table = table.reindex(index=range(5), columns=range(4), fill_value=0)
    table.index.name, table.columns.name = "KL", "CPPD"
    return table


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


def crop_to_box(
    image: np.ndarray, box: tuple[int, ...], *, margin: float = 0.08, size: int | None = None
) -> np.ndarray:
    """The part of ``image`` inside ``box`` = (x0, y0, x1, y1), widened by ``margin``.

    Works on ``(H, W)`` and ``(H, W, C)`` uint8 images; the crop is clipped to the image.
    With ``size``, the crop is resized to ``size`` × ``size`` pixels so a gallery lines up.
    """
    x0, y0, x1, y1 = (int(v) for v in box[:4])
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box {box} is empty")
    pad_x, pad_y = round((x1 - x0) * margin), round((y1 - y0) * margin)
    h, w = image.shape[:2]
    crop = image[max(0, y0 - pad_y) : min(h, y1 + pad_y), max(0, x0 - pad_x) : min(w, x1 + pad_x)]
    if size is None:
        return crop
    return cv2.resize(np.ascontiguousarray(crop), (size, size), interpolation=cv2.INTER_AREA)


# --------------------------------------------------------------------------------------
# Jobs: time
# --------------------------------------------------------------------------------------


def eta_seconds(elapsed_s: float | None, runs_done: int, runs_total: int | None) -> float | None:
    """Remaining time of a job, ``elapsed / runs_done * runs_left``; None before any run ends."""
    if elapsed_s is None or not runs_total or runs_done <= 0 or _is_nan(elapsed_s):
        return None
    return max(0.0, elapsed_s / runs_done * (runs_total - runs_done))


def format_devices(devices: list[str]) -> str:
    """A worker's slot devices, counted: ``"cuda:0 ×4"``, ``"cuda:0 ×2, cuda:1 ×2"``, ``"cpu"``."""
    counts = Counter(devices)
    return ", ".join(f"{d} ×{n}" if n > 1 else d for d, n in counts.items())


def format_duration(seconds: float | None) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"2 h 07 min"``; an em dash when unknown."""
    if seconds is None or _is_nan(seconds):
        return "—"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours / 24:.1f} days"


def _is_nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


# Rough training cost of ResNet18 per training image and epoch, validation included,
# calibrated on measured runs (bench/RESULTS.md). GPU (a whole card, all its slots together:
# slots share the card, so they do not divide this time): one seed of the paper protocol on
# an H200 with 4 lanes and the fast stem ran ~15,800 training images/s including every run's
# set-up and validation, ~6.3e-5 s per image at 224 px, scaling with pixel count (floored for
# the fixed per-batch cost of small images).
# CPU: `studies/quick.yaml` on an idle 2-core machine took ~7 ms per image
# and epoch at 32 px; ~7 ms up to 64 px, growing like (size / 64) ** 1.5 above that.
_S_PER_IMAGE = {"cpu": 0.007, "cuda": 6.3e-5}
_REFERENCE_PX = {"cpu": 64, "cuda": 224}
_SIZE_EXPONENT = {"cpu": 1.5, "cuda": 2.0}
_MIN_SCALE = {"cpu": 1.0, "cuda": 0.1}
_PER_RUN_S = {"cpu": 2.0, "cuda": 1.0}  # model set-up, test predictions, checkpoint
_STARTUP_S = {"cpu": 10.0, "cuda": 35.0}  # slot process start (+ compile on a GPU)


def rough_study_seconds(
    train_images: Mapping[str, int],
    runs_per_task: Mapping[str, int],
    *,
    max_epochs: int,
    image_size: int,
    device: str,
) -> float:
    """An upper-bound guess of a study's training time (every run to max_epochs) on one CPU
    slot or one GPU.

    Early stopping usually ends runs sooner, several CPU slots or GPUs divide the time, and a
    new dataset is drawn once first; the pages say so next to this number.

    Args:
        train_images: Task → images the task trains on (already the training fraction).
        runs_per_task: Task → number of runs of that task in the plan.
        max_epochs: Epoch cap per run.
        image_size: Side of the square input in pixels.
        device: 'cpu' or 'cuda' (anything starting with 'cuda').
    """
    kind = "cuda" if device.startswith("cuda") else "cpu"
    scale = max(_MIN_SCALE[kind], (image_size / _REFERENCE_PX[kind]) ** _SIZE_EXPONENT[kind])
    per_image = _S_PER_IMAGE[kind] * scale
    image_epochs = sum(
        train_images.get(task, 0) * runs * max_epochs for task, runs in runs_per_task.items()
    )
    n_runs = sum(runs_per_task.values())
    return _STARTUP_S[kind] + n_runs * _PER_RUN_S[kind] + image_epochs * per_image


def run_label(run_id: str | None) -> str:
    """A run id (see `engine.vocab.run_id`) in words.

    ``"study-ab12-KL-beta-s3-c1"`` → ``"KL · beta · seed 3 · config 1"``; ids of another
    shape come back unchanged, and None becomes an em dash.
    """
    if not run_id or (isinstance(run_id, float) and math.isnan(run_id)):
        return "—"
    key = parse_run_id(run_id)
    if key is None:
        return run_id
    return f"{key.task} · {key.method} · seed {key.seed} · config {key.config_index}"
