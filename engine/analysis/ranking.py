"""Critical-difference ranking: Friedman's test and post-hoc ranks over seeds as blocks.

The data of a critical-difference diagram (Demšar 2006, JMLR 7:1-30): each method's mean
rank over blocks (1 = best), the Friedman test of "all methods rank alike", a post-hoc
p-value for every pair, the Nemenyi critical difference and the groups of methods that no
test tells apart (the diagram's bars). Input is the long ``scores`` frame of
`engine.analysis.stats` (``method``, ``seed``, ``value``; ``task`` optional), so any per-run metric
(AMAE, RPS, KLD, ...) can be ranked.

Blocking by seed (:data:`BLOCKING_SENTENCE`, which a page shows next to the diagram): every
method is trained and tested on the same split of each seed, so the methods are ranked
within each seed and only those within-seed ranks are compared; how easy a seed's split
happens to be moves every method alike and drops out. With several tasks in ``scores``,
each (task, seed) is one block.

The test statistics come from scipy (``friedmanchisquare``, ``studentized_range``) and
scikit-posthocs (``posthoc_nemenyi_friedman``, ``posthoc_conover_friedman``); this module
only arranges the data, guards small samples and words the result, as `engine.analysis.stats` does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats

from engine.analysis.stats import ALPHA, TestResult, _prepare

logger = logging.getLogger(__name__)

BLOCKING_SENTENCE = (
    "Blocking by seed: every method is trained and tested on the same split of each seed, so "
    "the methods are ranked against each other within each seed (1 = best) and only these "
    "within-seed ranks are compared; how easy a seed's split happens to be moves every "
    "method alike and drops out. The test still takes the seeds as independent blocks, which "
    "they are not (they resample the same films), so its separations are exploratory."
)
# Post-hoc tests offered; Conover's p-values are Holm-adjusted over all pairs.
POSTHOC_TESTS: dict[str, str] = {"nemenyi": "Nemenyi", "conover": "Conover, Holm-adjusted"}
MIN_METHODS = 3  # scipy's Friedman test needs three groups
MIN_BLOCKS = 2


@dataclass(frozen=True, eq=False)
class CriticalDifference(TestResult):
    """Friedman test, post-hoc comparisons and the layout of a critical-difference diagram.

    Attributes:
        table: one row per method, best first: ``method``, ``mean_rank``, ``mean`` (of
            the values over the complete blocks), ``n_blocks``.
        statistic: Friedman's chi-square (NaN when not tested).
        p: its p-value (NaN when not tested).
        cd: Nemenyi critical difference ``q_alpha * sqrt(k (k + 1) / (6 N))`` in mean-rank
            units (NaN when not tested): two methods whose mean ranks differ by more differ
            at ``alpha``.
        p_values: ``(k, k)`` post-hoc p-values, methods in ``table`` order (empty when not
            tested).
        groups: the diagram's bars: one row per maximal set of at least two methods no
            pair of which differs (post-hoc p >= alpha), columns ``group`` (1, 2, ...),
            ``methods`` (tuple, best first), ``low`` and ``high`` (their extreme mean
            ranks); ordered by ``low``.
        n_blocks: complete blocks used.
        posthoc: the :data:`POSTHOC_TESTS` key used.
        alpha: the significance level.
    """

    statistic: float = math.nan
    p: float = math.nan
    cd: float = math.nan
    p_values: pd.DataFrame = field(default_factory=pd.DataFrame)
    groups: pd.DataFrame = field(default_factory=pd.DataFrame)
    n_blocks: int = 0
    posthoc: str = "nemenyi"
    alpha: float = ALPHA


def nemenyi_critical_difference(n_methods: int, n_blocks: int, alpha: float = ALPHA) -> float:
    """Demšar's critical difference ``q_alpha * sqrt(k (k + 1) / (6 N))``.

    ``q_alpha`` is the studentised range quantile for ``k`` groups and infinite degrees
    of freedom divided by ``sqrt(2)`` (2.728 for k = 5 at alpha = 0.05, Demšar's Table 5a).
    """
    q_alpha = stats.studentized_range.ppf(1 - alpha, n_methods, np.inf) / math.sqrt(2)
    return float(q_alpha * math.sqrt(n_methods * (n_methods + 1) / (6 * n_blocks)))


def critical_difference(
    scores: pd.DataFrame,
    *,
    lower_is_better: bool,
    alpha: float = ALPHA,
    posthoc: str = "nemenyi",
) -> CriticalDifference:
    """Rank the methods within each block and test whether the ranks differ.

    Args:
        scores: long frame with columns ``method``, ``seed``, ``value`` and optionally
            ``task``; at most one row per (method, block). Methods keep their order of first
            appearance on ties.
        lower_is_better: rank 1 goes to the lowest value (AMAE, RPS) or, when False, to the
            highest (QWK).
        alpha: significance level of the post-hoc groups and the critical difference.
        posthoc: a :data:`POSTHOC_TESTS` key.

    Returns:
        A :class:`CriticalDifference`. Blocks where any method lacks a value are left out
        (the note counts them). With fewer than 3 methods or 2 complete blocks only the
        mean ranks are given and the note says what is missing. The post-hoc p-values and
        groups are given even when Friedman's test does not reject; Demšar reads them only
        after it does, and so does the reading.

    Raises:
        ValueError: for an unknown post-hoc test or a repeated (method, block).
    """
    if posthoc not in POSTHOC_TESTS:
        raise ValueError(f"{posthoc=} must be one of {sorted(POSTHOC_TESTS)}")
    wide, notes = _block_matrix(scores)
    columns = ["method", "mean_rank", "mean", "n_blocks"]
    if wide.shape[1] < 2 or wide.shape[0] < 1:
        note = " ".join(
            [f"Ranking needs at least 2 methods run on a common seed; got {wide.shape[1]}."] + notes
        )
        return CriticalDifference(table=pd.DataFrame(columns=columns), reading=note, note=note)
    oriented = wide.to_numpy() if lower_is_better else -wide.to_numpy()
    ranks = stats.rankdata(oriented, axis=1, method="average")
    table = pd.DataFrame(
        {
            "method": wide.columns,
            "mean_rank": ranks.mean(axis=0),
            "mean": wide.mean(axis=0).to_numpy(),
            "n_blocks": len(wide),
        }
    )
    table = table.sort_values("mean_rank", kind="stable").reset_index(drop=True)
    k, n = wide.shape[1], wide.shape[0]
    common = {"posthoc": posthoc, "alpha": alpha, "n_blocks": n}
    if k < MIN_METHODS or n < MIN_BLOCKS:
        notes.insert(
            0,
            f"The Friedman test needs at least {MIN_METHODS} methods and {MIN_BLOCKS} seeds "
            f"they all ran; here {k} methods and {n} seeds.",
        )
        note = " ".join(notes)
        return CriticalDifference(table=table, reading=note, note=note, **common)
    if np.ptp(ranks, axis=1).max() == 0:
        notes.insert(0, "Every method has the same value on every seed; nothing to rank.")
        note = " ".join(notes)
        return CriticalDifference(table=table, reading=note, note=note, **common)

    friedman = stats.friedmanchisquare(*oriented.T)
    order = list(table["method"])
    p_values = _posthoc_p_values(oriented, list(wide.columns), posthoc).loc[order, order]
    mean_ranks = table.set_index("method")["mean_rank"]
    groups = undistinguished_groups(p_values, mean_ranks, alpha)
    cd = nemenyi_critical_difference(k, n, alpha)
    result = CriticalDifference(
        table=table,
        reading="",
        note=" ".join(notes) or None,
        statistic=float(friedman.statistic),
        p=float(friedman.pvalue),
        cd=cd,
        p_values=p_values,
        groups=groups,
        **common,
    )
    return _with_reading(result)


def undistinguished_groups(
    p_values: pd.DataFrame, mean_ranks: pd.Series, alpha: float = ALPHA
) -> pd.DataFrame:
    """Maximal sets of at least two methods no pair of which differs (p >= alpha).

    These are the maximal cliques of the "not significantly different" graph (as
    scikit-posthocs draws its crossbars); with Nemenyi's test they are runs of methods
    adjacent in rank whose mean ranks span no more than the critical difference.

    Args:
        p_values: symmetric ``(k, k)`` p-values indexed by method.
        mean_ranks: mean rank per method.
        alpha: significance level.

    Returns:
        Columns ``group``, ``methods`` (tuple, best rank first), ``low``, ``high``.
    """
    methods = list(p_values.index)
    close = {m: {o for o in methods if o != m and p_values.loc[m, o] >= alpha} for m in methods}
    cliques: list[set[str]] = []
    _bron_kerbosch(set(), set(methods), set(), close, cliques)
    rows = []
    for clique in cliques:
        if len(clique) < 2:
            continue
        members = tuple(sorted(clique, key=lambda m: (mean_ranks[m], methods.index(m))))
        rows.append(
            {"methods": members, "low": mean_ranks[members[0]], "high": mean_ranks[members[-1]]}
        )
    frame = pd.DataFrame(rows, columns=["methods", "low", "high"])
    frame = frame.sort_values(["low", "high"], kind="stable").reset_index(drop=True)
    frame.insert(0, "group", np.arange(1, len(frame) + 1))
    return frame


def _bron_kerbosch(
    clique: set[str],
    candidates: set[str],
    excluded: set[str],
    neighbours: dict[str, set[str]],
    found: list[set[str]],
) -> None:
    """Collect every maximal clique (Bron–Kerbosch; a handful of methods, no pivot needed)."""
    if not candidates and not excluded:
        found.append(clique)
        return
    for vertex in sorted(candidates):
        _bron_kerbosch(
            clique | {vertex},
            candidates & neighbours[vertex],
            excluded & neighbours[vertex],
            neighbours,
            found,
        )
        candidates = candidates - {vertex}
        excluded = excluded | {vertex}


def _block_matrix(scores: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Blocks × methods values over complete blocks, and notes on what was left out."""
    extra = ["task"] if "task" in scores.columns else []
    data, dropped = _prepare(scores, extra)
    notes = [f"{dropped} scores without a value were left out."] if dropped else []
    block = ["task", "seed"] if extra and data["task"].nunique() > 1 else ["seed"]
    if data.duplicated(["method", *block]).any():
        raise ValueError(
            f"scores hold more than one value per (method, {', '.join(block)}); "
            "filter to one metric (and one study) first"
        )
    methods = list(pd.unique(data["method"]))
    wide = data.pivot_table(index=block, columns="method", values="value", aggfunc="first")
    wide = wide.reindex(columns=methods)
    complete = wide.dropna()
    if len(complete) < len(wide):
        what = "(task, seed) blocks" if len(block) == 2 else "seeds"
        notes.append(f"{len(wide) - len(complete)} {what} that not every method ran were left out.")
    return complete, notes


def _posthoc_p_values(oriented: np.ndarray, methods: Sequence[str], posthoc: str) -> pd.DataFrame:
    """Pairwise p-values from scikit-posthocs on the blocks × methods matrix."""
    # Imported here: scikit-posthocs pulls in matplotlib and seaborn (~2 s), which only this
    # test needs.
    import scikit_posthocs as sp

    with np.errstate(divide="ignore", invalid="ignore"):
        if posthoc == "nemenyi":
            matrix = sp.posthoc_nemenyi_friedman(oriented)
        else:
            matrix = sp.posthoc_conover_friedman(oriented, p_adjust="holm")
    matrix = pd.DataFrame(matrix.to_numpy(), index=list(methods), columns=list(methods))
    return matrix.clip(upper=1.0)


def _with_reading(result: CriticalDifference) -> CriticalDifference:
    """The same result with its one-line reading."""
    table, groups = result.table, result.groups
    test = f"Friedman χ² = {result.statistic:.3g}, {_p_text(result.p)}"
    best = f"best mean rank: {table['method'].iloc[0]} ({table['mean_rank'].iloc[0]:.2f})"
    name = POSTHOC_TESTS[result.posthoc]
    if result.p >= result.alpha:
        reading = f"The methods' ranks over {result.n_blocks} seeds do not differ ({test}); {best}."
    else:
        together = [_join(members) for members in groups["methods"]]
        apart = (
            "; cannot be told apart (" + name + f", α = {result.alpha:g}): " + "; ".join(together)
            if together
            else f"; every pair differs ({name}, α = {result.alpha:g})"
        )
        reading = f"The methods' ranks differ ({test}); {best}{apart}."
    return replace(result, reading=reading)


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def _join(items: Sequence[str]) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
