"""Poisson soft labels: the target of grade k is a Poisson distribution with its mode at k,
truncated to the grades and renormalised.

Row k is ``P(j) = pois(j; lambda_k) / sum_i pois(i; lambda_k)`` for grades j = 0 .. J - 1 with
``lambda_k = k + 1/2``: a Poisson's mode is floor(lambda), so the true grade is the single most
likely one, and mass falls off with distance, more slowly above than below. This is the
unimodal Poisson of Beckham & Pal 2017 (a softmax over the log-pmf, temperature 1), as Liu et
al. 2020 use it for soft labels, with lambda placed so the mode is the grade.

dlordinal's ``PoissonLoss`` is not used: it applies a softmax to the pmf values themselves
(not their logarithm), which gives nearly uniform rows (at most 0.234 for J = 5), and puts
lambda at k + 1, which ties grade k with grade k + 1.

Search space: learning rate and eta as the paper's soft methods; the distribution has no
parameter of its own.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from engine.methods.base import ETA, LEARNING_RATE, TARGET_DISTRIBUTION, Method, MethodParams
from engine.methods.targets import check_classes, matrix_target

if TYPE_CHECKING:
    import numpy as np


def poisson_rows(num_classes: int, params: MethodParams) -> np.ndarray:
    """The (J, J) unmixed targets: row k the truncated Poisson(k + 1/2) over the grades."""
    import numpy as np

    check_classes(num_classes)
    grades = np.arange(num_classes)
    rows = []
    for k in range(num_classes):
        lam = k + 0.5
        log_pmf = grades * math.log(lam) - lam - np.array([math.lgamma(j + 1) for j in grades])
        pmf = np.exp(log_pmf - log_pmf.max())
        rows.append(pmf / pmf.sum())
    return np.asarray(rows, dtype=np.float32)


_loss, _matrix = matrix_target(poisson_rows)


METHOD = Method(
    name="poisson",
    label="Poisson",
    family=TARGET_DISTRIBUTION,
    description="Targets follow a Poisson distribution whose mode is the true grade, "
    "truncated to the grades: mass falls off with distance, more slowly above.",
    hyperparameters=(LEARNING_RATE, ETA),
    source="Beckham & Pal 2017's unimodal Poisson, lambda = grade + 1/2 (mode at the grade); "
    "the paper's Table 3 eta grid",
    loss=_loss,
    target_matrix=_matrix,
    rank=100,
)
