"""The KL × CPPD divergence decomposed by the chain rule.

With ``P`` the true joint table of a seed's test films and ``Q`` a method's predicted table
(smoothed as `engine.analysis.relationship.kld` smooths it: empty cells get ε, then renormalised),

    D(P ‖ Q) = D(P_KL ‖ Q_KL) + Σ_k P_KL(k) · D(P_CPPD|KL=k ‖ Q_CPPD|KL=k)

exactly: the **KL-marginal part** (are the KL grades predicted in the right proportions?) and
the **CPPD-given-KL part** (given the KL grade, is the CPPD grade distributed as in the
truth?). Only the second says anything about the KL–CPPD relationship, and even it mixes the
CPPD marginal with the dependence; the **mutual information** of the true and of the
predicted table (in nats) measures the dependence itself: a method reproduces the
relationship when its predicted table's MI is close to the truth's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from engine.analysis.relationship import DEFAULT_EPS, SeedRelationship

PARTS: tuple[str, ...] = ("kl_marginal", "cppd_given_kl")


def smoothed(q_counts: np.ndarray, eps: float = DEFAULT_EPS) -> np.ndarray:
    """``Q`` as proportions with empty cells at ``eps`` and renormalised (as `kld` does)."""
    q = np.asarray(q_counts, dtype=np.float64)
    q = q / q.sum()
    if (q == 0).any():
        q = np.where(q == 0, eps, q)
        q = q / q.sum()
    return q


def chain_rule_parts(
    p_counts: np.ndarray, q_counts: np.ndarray, eps: float = DEFAULT_EPS
) -> dict[str, float]:
    """The two chain-rule parts of ``D(P ‖ Q)`` for ``(KL, CPPD)`` tables (rows KL).

    Returns:
        ``kl_marginal``, ``cppd_given_kl`` and their sum ``kld`` (equal to
        `engine.analysis.relationship.kld` at the same ``eps``).
    """
    p = np.asarray(p_counts, dtype=np.float64)
    p = p / p.sum()
    q = smoothed(q_counts, eps)
    p_kl, q_kl = p.sum(axis=1), q.sum(axis=1)
    rows = p_kl > 0
    marginal = float(np.sum(p_kl[rows] * np.log(p_kl[rows] / q_kl[rows])))
    conditional = 0.0
    for k in np.nonzero(rows)[0]:
        p_c, q_c = p[k] / p_kl[k], q[k] / q_kl[k]
        cells = p_c > 0
        conditional += p_kl[k] * float(np.sum(p_c[cells] * np.log(p_c[cells] / q_c[cells])))
    return {"kl_marginal": marginal, "cppd_given_kl": conditional, "kld": marginal + conditional}


def mutual_information(counts: np.ndarray) -> float:
    """Mutual information of a joint table's two grades, in nats (0 for independence)."""
    joint = np.asarray(counts, dtype=np.float64)
    joint = joint / joint.sum()
    outer = np.outer(joint.sum(axis=1), joint.sum(axis=0))
    cells = joint > 0
    return float(np.sum(joint[cells] * np.log(joint[cells] / outer[cells])))


def decompose(results: Sequence[SeedRelationship], eps: float = DEFAULT_EPS) -> pd.DataFrame:
    """Every (method, seed) result's KLD in its parts.

    Args:
        results: from `engine.analysis.relationship.relationship_by_seed`.
        eps: as used for the KLD.

    Returns:
        One row per result: ``method``, ``seed``, ``kld``, ``kl_marginal``,
        ``cppd_given_kl``, ``mi_true``, ``mi_pred``.
    """
    rows = []
    for r in results:
        parts = chain_rule_parts(r.truth, r.table, eps)
        rows.append(
            {
                "method": r.method,
                "seed": r.seed,
                **parts,
                "mi_true": mutual_information(r.truth),
                "mi_pred": mutual_information(r.table),
            }
        )
    return pd.DataFrame(rows, columns=["method", "seed", "kld", *PARTS, "mi_true", "mi_pred"])


def summarise(parts: pd.DataFrame) -> pd.DataFrame:
    """Per method: the mean over seeds of each part, the KL-marginal share of the KLD and
    which part drives it.

    Returns:
        ``method``, ``n_seeds``, ``kld``, ``kl_marginal``, ``cppd_given_kl``,
        ``marginal_share`` (``kl_marginal / kld``), ``mi_true``, ``mi_pred``, ``driver``
        (``"kl_marginal"`` or ``"cppd_given_kl"``), ``reading``.
    """
    grouped = parts.groupby("method", sort=False)
    table = grouped[["kld", *PARTS, "mi_true", "mi_pred"]].mean()
    table.insert(0, "n_seeds", grouped.size())
    table["marginal_share"] = table["kl_marginal"] / table["kld"]
    table["driver"] = np.where(table["kl_marginal"] >= table["cppd_given_kl"], *PARTS)
    table = table.reset_index()
    table["reading"] = [reading(row) for row in table.to_dict("records")]
    return table


#: How far (a share of the truth's) the predicted tables' mutual information may stray and
#: still read as tying CPPD to KL as strongly as the truth does.
MI_TOLERANCE: float = 0.25


def dependence_vs_truth(mi_pred: float, mi_true: float) -> Literal["as", "more", "less"]:
    """Whether the predicted grades tie CPPD to KL as strongly as the truth (within
    :data:`MI_TOLERANCE`), more or less: the word each reading of the KLD parts builds on."""
    if abs(mi_pred - mi_true) <= MI_TOLERANCE * mi_true:
        return "as"
    return "more" if mi_pred > mi_true else "less"


def reading(row: dict[str, object]) -> str:
    """Which part drives a method's KLD, and whether it reproduces the dependence."""
    method = row["method"]
    kld, marginal = float(row["kld"]), float(row["kl_marginal"])  # type: ignore[arg-type]
    mi_pred, mi_true = float(row["mi_pred"]), float(row["mi_true"])  # type: ignore[arg-type]
    if row["driver"] == "kl_marginal":
        head = (
            f"{method}'s KLD ({kld:.3g} nats) is mostly a marginal finding: {marginal:.3g} nats "
            "come from predicting the KL grades in the wrong proportions, before any question "
            "of how CPPD relates to KL"
        )
    else:
        head = (
            f"{method}'s KLD ({kld:.3g} nats) is mostly the CPPD-given-KL part "
            f"({kld - marginal:.3g} nats): given the KL grade, its CPPD grades are distributed "
            "unlike the truth's"
        )
    how = {"as": "as dependent as", "more": "more dependent than", "less": "less dependent than"}[
        dependence_vs_truth(mi_pred, mi_true)
    ]
    tail = f"its predicted grades are {how} the truth's (MI {mi_pred:.3f} vs {mi_true:.3f} nats)"
    return f"{head}; {tail}."
