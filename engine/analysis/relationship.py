"""KL x CPPD joint-grade analysis (paper, "KL & CPPD relationship" and its results).

For each seed, the KL model and the CPPD model of one method both grade the same jointly
annotated test images; their predictions form a predicted ``(5, 4)`` contingency table
(rows KL 0-4, columns CPPD 0-3) that is compared with the true table of those images:

* KLD ``D_KL(P || Q)`` with ``P`` the true table and ``Q`` the predicted one, both
  normalised to proportions (natural log, so in nats);
* residuals, predicted minus true (positive = the model over-estimates that combination);
* the MAE of cell counts.

Test sets differ between seeds (each seed draws its own split), so the truth is taken per
seed and each seed's prediction is scored against its own truth; the paper then reports the
mean and standard deviation over seeds of KLD and MAE.

Sign convention: the paper writes the residual as ``R = P - Q`` (true minus predicted) but
reads positive residuals as over-estimation, which holds only for predicted minus true. We
follow the reading: :func:`residuals` returns predicted minus true.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.analysis.metrics import MAE
from engine.vocab import TASK_CLASSES

logger = logging.getLogger(__name__)

KL_GRADES = TASK_CLASSES["KL"]
CPPD_GRADES = TASK_CLASSES["CPPD"]
# Proportion given to an empty predicted cell before renormalising, so that a combination
# the model never predicts but the truth contains costs a large, finite divergence.
DEFAULT_EPS: float = 1e-6
# The ε shown side by side so a reader sees how much of a KLD is ε's doing: each factor of
# 1000 adds about (share of the truth in never-predicted cells) × ln 1000 ≈ 6.9 × that share.
SENSITIVITY_EPS: tuple[float, ...] = (1e-3, 1e-6, 1e-9)
# Jeffreys' prior: half an image added to every predicted cell count (`kld_smoothed`).
JEFFREYS_ALPHA: float = 0.5

_FRAME_COLUMNS = ("method", "seed", "image_id", "kl_true", "cppd_true", "kl_pred", "cppd_pred")


def contingency(kl: np.ndarray, cppd: np.ndarray) -> np.ndarray:
    """Count images per (KL, CPPD) grade combination.

    Args:
        kl: ``(N,)`` KL grades in ``0 .. 4``.
        cppd: ``(N,)`` CPPD grades in ``0 .. 3``, same images in the same order.

    Returns:
        ``(5, 4)`` int64 counts; ``[i, j]`` = images with KL ``i`` and CPPD ``j``.
    """
    kl = np.asarray(kl, dtype=np.int64).ravel()
    cppd = np.asarray(cppd, dtype=np.int64).ravel()
    if kl.size != cppd.size:
        raise ValueError(f"kl has {kl.size} grades but cppd has {cppd.size}")
    for name, grades, upper in (("kl", kl, KL_GRADES), ("cppd", cppd, CPPD_GRADES)):
        if grades.size and (grades.min() < 0 or grades.max() >= upper):
            raise ValueError(f"{name} grades must lie in 0..{upper - 1}")
    cells = np.bincount(kl * CPPD_GRADES + cppd, minlength=KL_GRADES * CPPD_GRADES)
    return cells.reshape(KL_GRADES, CPPD_GRADES)


def kld(p_counts: np.ndarray, q_counts: np.ndarray, eps: float = DEFAULT_EPS) -> float:
    """Kullback-Leibler divergence ``D_KL(P || Q)`` between two contingency tables, in nats.

    ``P`` is the true table normalised to sum 1 and ``Q`` the predicted table normalised
    the same way. Cells where ``P = 0`` contribute 0 (the limit of ``p log p``), so
    predicting a combination absent from the truth is not penalised directly. Cells where
    ``Q = 0`` would make the divergence infinite; they are set to ``eps`` and ``Q`` is
    renormalised, which is what the UI shows as "ε for empty cells". With no empty
    predicted cell this equals ``scipy.stats.entropy(P, Q)``. Because every empty
    predicted cell takes ``eps``, even a prediction that matches the truth exactly scores
    ``log(1 + k * eps)`` for ``k`` empty cells (at most ~2e-5 for a 5 x 4 table at the
    default ``eps``) instead of 0.

    Args:
        p_counts: true counts (or proportions), any shape, e.g. ``(5, 4)``.
        q_counts: predicted counts of the same shape.
        eps: proportion given to each empty predicted cell, > 0.

    Returns:
        The divergence, >= 0.
    """
    p = _proportions(p_counts, "p_counts")
    q = _proportions(q_counts, "q_counts")
    if p.shape != q.shape:
        raise ValueError(f"shapes differ: {p.shape} vs {q.shape}")
    if eps <= 0:
        raise ValueError(f"{eps=} must be > 0")
    if (q == 0).any():
        q = np.where(q == 0, eps, q)
        q = q / q.sum()
    support = p > 0
    return float(np.sum(p[support] * np.log(p[support] / q[support])))


def missed_mass(p_counts: np.ndarray, q_counts: np.ndarray) -> float:
    """Share of the true table in cells the prediction leaves empty.

    This is what makes :func:`kld` depend on ε: for small ε the divergence grows by
    ``missed_mass × ln(1/ε)``, so each factor of 1000 in ε adds ``missed_mass × 6.91`` nats.
    Zero means the KLD does not depend on ε at all (up to ``log(1 + k ε)``).
    """
    p = _proportions(p_counts, "p_counts")
    q = np.asarray(q_counts, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"shapes differ: {p.shape} vs {q.shape}")
    return float(p[q == 0].sum())


def kld_smoothed(
    p_counts: np.ndarray, q_counts: np.ndarray, alpha: float = JEFFREYS_ALPHA
) -> float:
    """``D_KL(P || Q)`` with ``alpha`` images added to every predicted cell, in nats.

    A principled alternative to ε: ``Q = (counts + alpha) / (N + alpha K)`` for ``K`` cells,
    the posterior mean of the predicted proportions under a symmetric Dirichlet(alpha) prior
    (alpha = 1/2 is Jeffreys' prior). It needs no cut-off and never diverges; it shrinks
    every predicted cell a little towards uniform, so a perfect prediction scores a small
    positive value that falls as the test set grows.

    Args:
        p_counts: true counts, e.g. ``(5, 4)``.
        q_counts: predicted counts (not proportions: alpha is in images).
        alpha: pseudo-count per cell, > 0.
    """
    p = _proportions(p_counts, "p_counts")
    q = np.asarray(q_counts, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"shapes differ: {p.shape} vs {q.shape}")
    if alpha <= 0:
        raise ValueError(f"{alpha=} must be > 0")
    q = _proportions(q + alpha, "q_counts")
    support = p > 0
    return float(np.sum(p[support] * np.log(p[support] / q[support])))


def kld_sensitivity(
    results: list[SeedRelationship], eps_values: tuple[float, ...] = SENSITIVITY_EPS
) -> pd.DataFrame:
    """Every (method, seed)'s KLD at several ε, beside what does not depend on ε.

    Args:
        results: from :func:`relationship_by_seed` (any ε: each table is re-scored here).
        eps_values: the ε to score at.

    Returns:
        One row per (method, seed, ε), in ``results``' order: columns ``method``, ``seed``,
        ``eps``, ``kld`` (:func:`kld` at that ε), ``missed_mass`` (:func:`missed_mass`) and
        ``kld_smoothed`` (:func:`kld_smoothed`, Jeffreys; the same on each of the rows).
    """
    rows = [
        {
            "method": r.method,
            "seed": r.seed,
            "eps": float(eps),
            "kld": kld(r.truth, r.table, eps=eps),
            "missed_mass": missed_mass(r.truth, r.table),
            "kld_smoothed": kld_smoothed(r.truth, r.table),
        }
        for r in results
        for eps in eps_values
    ]
    columns = ["method", "seed", "eps", "kld", "missed_mass", "kld_smoothed"]
    return pd.DataFrame(rows, columns=columns)


def residuals(
    pred_counts: np.ndarray, true_counts: np.ndarray, normalise: bool = True
) -> np.ndarray:
    """Cell-wise predicted minus true (positive = the model over-estimates that cell).

    Args:
        pred_counts: predicted table, e.g. ``(5, 4)`` counts or a mean over seeds.
        true_counts: true table of the same shape.
        normalise: compare proportions (each table divided by its total, the paper's
            ``Q - P``) rather than raw counts.

    Returns:
        Float array of the input shape; with ``normalise`` it sums to 0.
    """
    pred = np.asarray(pred_counts, dtype=np.float64)
    true = np.asarray(true_counts, dtype=np.float64)
    if pred.shape != true.shape:
        raise ValueError(f"shapes differ: {pred.shape} vs {true.shape}")
    if normalise:
        return _proportions(pred, "pred_counts") - _proportions(true, "true_counts")
    return pred - true


def count_mae(pred_counts: np.ndarray, true_counts: np.ndarray) -> float:
    """Mean absolute difference of cell counts between two tables (paper's table MAE).

    Args:
        pred_counts: predicted table, e.g. ``(5, 4)``.
        true_counts: true table of the same shape.

    Returns:
        ``mean(|pred - true|)`` over all cells, in images per cell.
    """
    return float(np.mean(np.abs(residuals(pred_counts, true_counts, normalise=False))))


@dataclass(frozen=True, eq=False)  # eq=False: arrays make the generated __eq__ ambiguous
class SeedRelationship:
    """One method's joint-grade result on one seed's test images.

    Attributes:
        seed: the split seed.
        method: the method whose KL and CPPD models made the predictions.
        table: ``(5, 4)`` predicted counts.
        kld: ``D_KL(truth || table)`` in nats.
        mae: :func:`count_mae` of ``table`` against ``truth``.
        truth: ``(5, 4)`` true counts of the same images.
        n_images: images in both tables.
    """

    seed: int
    method: str
    table: np.ndarray
    kld: float
    mae: float
    truth: np.ndarray
    n_images: int


def relationship_by_seed(
    frame: pd.DataFrame, eps: float = DEFAULT_EPS
) -> tuple[np.ndarray, list[SeedRelationship]]:
    """Score every (method, seed) predicted joint table against that seed's truth.

    Args:
        frame: one row per jointly annotated test image per method and seed, columns
            ``method``, ``seed``, ``image_id``, ``kl_true``, ``cppd_true``, ``kl_pred``,
            ``cppd_pred``.
        eps: see :func:`kld`.

    Returns:
        ``(truth, results)``: ``truth`` is the ``(5, 4)`` float mean over seeds of each
        seed's true table (every seed's distinct test images counted once), on the same
        scale as a method's mean predicted table, for display and residuals; ``results``
        holds one :class:`SeedRelationship` per (method, seed), sorted by method (first
        appearance) then seed.

    Raises:
        ValueError: on missing columns, an empty frame, or an image whose true grades
            differ between rows of the same seed.
    """
    missing = [column for column in _FRAME_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks columns {missing}")
    if frame.empty:
        raise ValueError("frame has no rows")
    images = frame.drop_duplicates(["seed", "image_id", "kl_true", "cppd_true"])
    conflicting = images.duplicated(["seed", "image_id"])
    if conflicting.any():
        example = images.loc[conflicting, ["seed", "image_id"]].iloc[0].tolist()
        raise ValueError(f"true grades differ between rows of seed/image {example}")

    seed_truth = {
        seed: contingency(group["kl_true"], group["cppd_true"])
        for seed, group in images.groupby("seed", sort=True)
    }
    truth = np.mean(np.stack(list(seed_truth.values())), axis=0)

    results = []
    for (method, seed), group in frame.groupby(["method", "seed"], sort=False):
        duplicated = group["image_id"].duplicated()
        if duplicated.any():
            image = group.loc[duplicated, "image_id"].iloc[0]
            raise ValueError(f"{method} seed {seed} lists image {image!r} more than once")
        # Score against the images this method actually graded: normally the seed's whole
        # test set, but a run with missing predictions must not be compared with images
        # it never saw.
        own_truth = contingency(group["kl_true"], group["cppd_true"])
        if not np.array_equal(own_truth, seed_truth[seed]):
            logger.warning(
                "%s seed %s graded %d of the seed's %d images; scoring on those only",
                method,
                seed,
                len(group),
                int(seed_truth[seed].sum()),
            )
        table = contingency(group["kl_pred"], group["cppd_pred"])
        results.append(
            SeedRelationship(
                seed=int(seed),
                method=str(method),
                table=table,
                kld=kld(own_truth, table, eps=eps),
                mae=count_mae(table, own_truth),
                truth=own_truth,
                n_images=len(group),
            )
        )
    order = {method: rank for rank, method in enumerate(pd.unique(frame["method"].astype(str)))}
    results.sort(key=lambda r: (order[r.method], r.seed))
    return truth, results


def summarise_relationship(results: list[SeedRelationship]) -> pd.DataFrame:
    """Average each method's per-seed results (the numbers above the paper's heatmaps).

    Args:
        results: from :func:`relationship_by_seed`.

    Returns:
        One row per method (first-appearance order) with columns ``method``, ``n_seeds``,
        ``kld_mean``, ``kld_std``, ``mae_mean``, ``mae_std`` (sample std, ddof=1, NaN for
        one seed), ``mean_table`` and ``mean_truth`` (``(5, 4)`` float arrays: mean
        predicted and mean true counts over the method's seeds) and ``residuals``
        (``(5, 4)``, :func:`residuals` of ``mean_table`` against ``mean_truth``, as
        proportions).
    """
    columns = [
        "method",
        "n_seeds",
        "kld_mean",
        "kld_std",
        "mae_mean",
        "mae_std",
        "mean_table",
        "mean_truth",
        "residuals",
    ]
    by_method: dict[str, list[SeedRelationship]] = {}
    for result in results:
        by_method.setdefault(result.method, []).append(result)
    rows = []
    for method, items in by_method.items():
        klds = np.array([item.kld for item in items])
        maes = np.array([item.mae for item in items])
        mean_table = np.mean([item.table for item in items], axis=0)
        mean_truth = np.mean([item.truth for item in items], axis=0)
        spread = len(items) > 1
        rows.append(
            {
                "method": method,
                "n_seeds": len(items),
                "kld_mean": float(klds.mean()),
                "kld_std": float(klds.std(ddof=1)) if spread else np.nan,
                "mae_mean": float(maes.mean()),
                "mae_std": float(maes.std(ddof=1)) if spread else np.nan,
                "mean_table": mean_table,
                "mean_truth": mean_truth,
                "residuals": residuals(mean_table, mean_truth),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def relationship_scores(results: list[SeedRelationship], value: str = "kld") -> pd.DataFrame:
    """Per-seed scores in the long shape that :mod:`engine.analysis.stats` tests take.

    Args:
        results: from :func:`relationship_by_seed`.
        value: ``"kld"`` or ``"mae"``.

    Returns:
        Columns ``method``, ``seed``, ``value``; one row per result.
    """
    if value not in ("kld", MAE):
        raise ValueError(f"{value=} must be 'kld' or {MAE!r}")
    return pd.DataFrame(
        {
            "method": [r.method for r in results],
            "seed": [r.seed for r in results],
            "value": [getattr(r, value) for r in results],
        }
    )


def _proportions(counts: np.ndarray, name: str) -> np.ndarray:
    """Divide a non-negative table by its total."""
    table = np.asarray(counts, dtype=np.float64)
    if (table < 0).any():
        raise ValueError(f"{name} has negative entries")
    total = table.sum()
    if total <= 0:
        raise ValueError(f"{name} is empty")
    return table / total
