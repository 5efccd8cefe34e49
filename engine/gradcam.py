"""Where a grade model looks: Grad-CAM maps, scored against the phantom's lesion masks.

Two analyses of the paper ("Grad-CAM", Figs. 7 and 9) are built here, for the page to show:

- **across grades**: the map of each method's selected model on test films of every grade;
- **co-occurrence stress test**: one pathology fixed at its highest grade while the other
  varies. On the phantom a test knee is redrawn with the fixed pathology at its top grade and
  the other at every grade (:func:`engine.phantom.render_variant`), so only that disease
  changes between the films.

Maps come from ``pytorch-grad-cam`` on the last block of ResNet18 (``layer4``), whose map is
7x7 cells at 224 px. Below 128 px that map is 1-3 cells a side, too coarse to show anything, so
small images use the deepest block with at least 4 cells a side (:func:`target_block`). Only
that block and what follows need gradients, so everything below is frozen while maps are made:
the backward pass stops there (the issue measured 3.7x cheaper than a full backward, same maps).

A map explains one grade. For a head whose outputs are logits (the paper's softmax head) it
explains that grade's logit, as the paper's maps do; for any other head (CORN's conditional
logits, CLM's probabilities) it explains log P(grade), the one quantity every head has
(:class:`LogProbabilities`).

A map is scored against the film's lesion mask by its *lift* on a sign: the mean heat on the
sign's pixels divided by the mean heat over the whole crop. 1 means the model looks there no
more than anywhere else; 3 means three times as much. Lift does not depend on how small a sign
is, unlike the share of heat, which is tiny for thin calcification lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from pytorch_grad_cam import GradCAM
from pytorch_grad_cam.utils.image import show_cam_on_image
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
from torch import nn

from engine.detect import Box, crop_and_resize, detect_knee_box
from engine.grade_model import GradeNet
from engine.methods.heads import PROBABILITY_FLOOR, get_head
from engine.phantom import MASK_BITS, PhantomSpec, render_variant
from engine.vocab import TOP_GRADE

#: The lesion-mask layers that are each task's own signs.
SIGN_LAYERS: dict[str, tuple[str, ...]] = {
    "KL": ("joint_space", "osteophytes", "sclerosis"),
    "CPPD": ("calcifications",),
}
OTHER_TASK: dict[str, str] = {"KL": "CPPD", "CPPD": "KL"}
BOX_COLUMNS = ("det_x0", "det_y0", "det_x1", "det_y1")


@dataclass(frozen=True)
class CamBatch:
    """Grad-CAM maps of N images with the model's output on each.

    Attributes:
        cams: (N, S, S) float32 in [0, 1], each map scaled to its own maximum.
        probs: (N, J) probabilities of the grades (the model's head's rule).
        targets: (N,) the grade each map explains.
        block: the ResNet18 block the maps were taken from.
    """

    cams: np.ndarray
    probs: np.ndarray
    targets: np.ndarray
    block: str = "layer4"

    @property
    def predicted(self) -> np.ndarray:
        """The grade with the highest probability, per image."""
        return self.probs.argmax(axis=1)


def grad_cam(
    model: GradeNet,
    images: np.ndarray,
    targets: Sequence[int] | None = None,
    *,
    chunk: int = 16,
) -> CamBatch:
    """Grad-CAM maps of ``model`` on grey uint8 ``images`` (N, S, S).

    Args:
        model: A grade model (e.g. from :func:`engine.grade_model.load_model`).
        images: (N, S, S) uint8 crops, as the model was trained on.
        targets: The grade each map explains; None explains the predicted grade.
        chunk: Images per forward pass (bounds memory).

    Returns:
        The maps, the model's probabilities and the explained grades.
    """
    if images.ndim != 3 or images.dtype != np.uint8:
        raise ValueError(f"images must be (N, S, S) uint8, got {images.shape} {images.dtype}")
    if targets is not None and len(targets) != len(images):
        raise ValueError(f"{len(targets)} targets for {len(images)} images")
    device = next(model.parameters()).device
    block = target_block(images.shape[-1])
    cams, probs, explained = [], [], []
    model.eval()
    layer = getattr(model.backbone, block)[-1]
    # The module Grad-CAM differentiates: the model itself where its outputs are logits,
    # else the model with its outputs turned into log-probabilities.
    scored: GradeNet | LogProbabilities = (
        model if get_head(model.head).logits else LogProbabilities(model)
    )
    with _gradients_from(model, block), GradCAM(scored, [layer]) as cam:
        for start in range(0, len(images), chunk):
            x = torch.from_numpy(np.ascontiguousarray(images[start : start + chunk]))
            x = x.unsqueeze(1).to(device)
            wanted = None if targets is None else targets[start : start + chunk]
            explain = None if wanted is None else [ClassifierOutputTarget(int(t)) for t in wanted]
            maps = cam(x, explain)
            p = scored.probabilities(cam.outputs.detach()).cpu().numpy()
            cams.append(maps.astype(np.float32))
            probs.append(p)
            explained.append(p.argmax(axis=1) if wanted is None else np.asarray(wanted))
    return CamBatch(np.concatenate(cams), np.concatenate(probs), np.concatenate(explained), block)


class LogProbabilities(nn.Module):
    """A grade model whose outputs are log P(grade), for Grad-CAM on heads without logits.

    Grad-CAM's target (``ClassifierOutputTarget``) picks one output per image; on these outputs
    it is the log of the grade's probability, which a CORN or CLM model has even though its
    own outputs are not J logits. Probabilities are floored (`PROBABILITY_FLOOR`) before the
    log: an output layer can give a far grade an exact 0.
    """

    def __init__(self, model: GradeNet) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = self.model.probabilities(self.model(x))
        return torch.log(probs.clamp_min(PROBABILITY_FLOOR))

    def probabilities(self, outputs: torch.Tensor) -> torch.Tensor:
        """P(grade) from this module's outputs: the floored probabilities, summing to one."""
        return torch.softmax(outputs.float(), dim=1)


def target_block(image_size: int) -> str:
    """The deepest ResNet18 block whose feature map has at least 4 cells a side.

    ``layer1`` .. ``layer4`` shrink the image 4, 8, 16 and 32 times (rounding up), so 128 px
    and up use ``layer4``, as the paper does at 224 px.
    """
    for block, stride in (("layer4", 32), ("layer3", 16), ("layer2", 8)):
        if -(-image_size // stride) >= 4:
            return block
    return "layer1"


@contextmanager
def _gradients_from(model: GradeNet, block: str) -> Iterator[None]:
    """Let only ``block`` and what follows it need gradients; restore the flags after."""
    params = list(model.parameters())
    before = [p.requires_grad for p in params]
    downstream = False
    try:
        for name, child in model.backbone.named_children():
            downstream = downstream or name == block
            for p in child.parameters():
                p.requires_grad_(downstream)
        yield
    finally:
        for p, flag in zip(params, before, strict=True):
            p.requires_grad_(flag)


def sign_lift(cams: np.ndarray, masks: np.ndarray) -> pd.DataFrame:
    """Lift of each map on each lesion layer: mean heat on the layer ÷ mean heat overall.

    Args:
        cams: (N, S, S) maps.
        masks: (N, S, S) uint8 lesion masks with :data:`engine.phantom.MASK_BITS` flags.

    Returns:
        One row per image, one column per layer; NaN where the film has no such sign (a
        CPPD 0 film has no calcifications) or the map is empty.
    """
    if cams.shape != masks.shape:
        raise ValueError(f"maps {cams.shape} and masks {masks.shape} differ in shape")
    overall = cams.mean(axis=(1, 2))
    columns = {}
    for layer, bit in MASK_BITS.items():
        on = (masks & bit) > 0
        count = on.sum(axis=(1, 2))
        heat = (cams * on).sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            lift = np.where((count > 0) & (overall > 0), heat / count / overall, np.nan)
        columns[layer] = lift
    return pd.DataFrame(columns)


def task_lift(lift: pd.DataFrame, task: str) -> pd.Series:
    """Lift on a task's own signs: the mean of its layers' lifts (those present)."""
    return lift[list(SIGN_LAYERS[task])].mean(axis=1, skipna=True)


def overlay(image: np.ndarray, cam: np.ndarray, weight: float = 0.45) -> np.ndarray:
    """An RGB uint8 picture of a grey uint8 crop with its map on top (jet colours)."""
    rgb = np.repeat(image[..., None].astype(np.float32) / 255.0, 3, axis=2)
    return show_cam_on_image(rgb, cam, use_rgb=True, image_weight=1.0 - weight)


def grade_examples(meta: pd.DataFrame, splits: pd.Series, task: str, grade: int) -> pd.DataFrame:
    """Test-split rows of ``meta`` whose recorded ``task`` grade is ``grade``.

    Where the phantom's true grade is known, only films whose recorded grade is the true one
    are kept, so an example is never a film the annotator mislabelled. Rows keep ``meta``'s
    index (the row of the film in the cached image array).
    """
    split = splits.reindex(meta["image_id"]).to_numpy()
    return meta[(split == "test") & graded_as(meta, task, grade)]


def graded_as(meta: pd.DataFrame, task: str, grade: int) -> np.ndarray:
    """Rows whose recorded ``task`` grade is ``grade`` and, where known, so is the true one."""
    column = task.lower()
    keep = (meta[column] == grade).fillna(False).to_numpy()
    truth = f"{column}_true"
    if truth in meta:
        keep = keep & (meta[truth] == grade).fillna(False).to_numpy()
    return keep


def cooccurrence_films(
    meta: pd.DataFrame, splits: pd.Series, fixed: str
) -> dict[int, pd.DataFrame]:
    """Test films at ``fixed``'s top grade, grouped by their grade of the other disease.

    The paper's stress test on real films: different knees, all at the top grade of one
    disease, with none to the most of the other. Both grades must be recorded (and, on the
    phantom, equal to the true grades).
    """
    varied = OTHER_TASK[fixed]
    at_top = grade_examples(meta, splits, fixed, TOP_GRADE[fixed])
    levels = range(TOP_GRADE[varied] + 1)
    return {level: at_top[graded_as(at_top, varied, level)] for level in levels}


def predict(model: GradeNet, images: np.ndarray, *, chunk: int = 32) -> np.ndarray:
    """Grade probabilities (N, J) of uint8 crops (N, S, S), forward only."""
    device = next(model.parameters()).device
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(images), chunk):
            x = torch.from_numpy(np.ascontiguousarray(images[start : start + chunk]))
            out.append(model.probabilities(model(x.unsqueeze(1).to(device))).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def stress_knees(meta: pd.DataFrame, splits: pd.Series, fixed: str) -> pd.DataFrame:
    """Test-split phantom films to redraw for the stress test, best candidates first.

    Any knee can be redrawn at the top grade; films that are at the top grade already come
    first (their own signs change least), then the others from the highest true grade down.
    """
    truth = f"{fixed.lower()}_true"
    split = splits.reindex(meta["image_id"]).to_numpy()
    rows = meta[(split == "test") & meta[truth].notna().to_numpy()]
    order = np.argsort(-rows[truth].to_numpy(dtype=np.int64), kind="stable")
    return rows.iloc[order]


@dataclass(frozen=True)
class StressFilms:
    """The stress test's films: one knee, ``fixed`` at its top grade, ``varied`` 0..top.

    Attributes:
        fixed: the pathology held at its top grade (the task whose model is tested).
        varied: the other pathology, drawn at every grade.
        image_id: the test film whose knee was redrawn.
        original_grade: that film's own true grade of ``fixed``.
        images: (L, S, S) uint8 crops, one per level of the varied pathology.
        masks: (L, S, S) uint8 lesion masks of the same crops.
        levels: (L,) the varied pathology's grade of each film.
    """

    fixed: str
    varied: str
    image_id: str
    original_grade: int
    images: np.ndarray
    masks: np.ndarray
    levels: np.ndarray


def stress_films(spec: PhantomSpec, row: pd.Series, fixed: str, image_size: int) -> StressFilms:
    """Redraw the knee of a phantom ``row`` at ``fixed``'s top grade and every other grade.

    The crops use the film's detected knee box from the dataset cache (``det_x0..det_y1``), so
    every level is framed exactly as the original film was for training and testing.
    """
    varied = OTHER_TASK[fixed]
    box = tuple(int(row[c]) for c in BOX_COLUMNS)
    images, masks = [], []
    levels = np.arange(TOP_GRADE[varied] + 1)
    for level in levels:
        grades = {fixed: TOP_GRADE[fixed], varied: int(level)}
        film, mask, _ = render_variant(spec, row, grades)
        images.append(crop_and_resize(film, box, image_size))
        masks.append(crop_and_resize(mask, box, image_size, nearest=True))
    own = int(row[f"{fixed.lower()}_true"])
    return StressFilms(
        fixed, varied, str(row["image_id"]), own, np.stack(images), np.stack(masks), levels
    )


def stress_table(films: StressFilms, batch: CamBatch, method: str) -> pd.DataFrame:
    """One row per level: the fixed task's prediction and the map's lift on both tasks' signs."""
    lift = sign_lift(batch.cams, films.masks)
    top = TOP_GRADE[films.fixed]
    return pd.DataFrame(
        {
            "method": method,
            "level": films.levels,
            "predicted": batch.predicted,
            "p_top": batch.probs[:, top],
            "lift_own": task_lift(lift, films.fixed).to_numpy(),
            "lift_other": task_lift(lift, films.varied).to_numpy(),
        }
    )


@dataclass(frozen=True)
class FilmReading:
    """One film graded by one model per task.

    Attributes:
        box: where the knee was found on the film (film pixels).
        crop: (S, S) uint8 knee crop the models saw.
        grades: per task, the model's probabilities and its map on the crop.
    """

    box: Box
    crop: np.ndarray
    grades: dict[str, CamBatch]


def read_film(
    film: np.ndarray, models: dict[str, GradeNet], image_size: int, *, box: Box | None = None
) -> FilmReading:
    """Find the knee on a whole film, crop it as training did, and grade it with each model.

    ``box`` is the knee when another detector already found it (e.g. a study's trained
    detector); None finds it with the classical detector.
    """
    box = detect_knee_box(film) if box is None else box
    crop = crop_and_resize(film, box, image_size)
    return FilmReading(box, crop, {task: grad_cam(m, crop[None]) for task, m in models.items()})
