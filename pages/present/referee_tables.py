"""How the phantom referee's results read: coverage per interval, type-I error and power per
test, the realised between-seed correlation, and one line on the design that produced them.

The numbers are `engine.analysis.referee.summary_table`'s, with the run's card (what
``calibrate-inference`` drew, where, how long; `jobs.services.referee`). The command line
writes :func:`referee_markdown`; the Statistics tab shows the same frames. No streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from engine.analysis import referee
from engine.methods import method_label
from engine.referee.design import TWIN_SUFFIX

NOT_COMPUTED = "n/a"


def pair_title(pair: str) -> str:
    """``"nominal − nominal_twin"`` -> ``"Nominal − Nominal (twin)"``."""
    if pair == referee.REAL_PAIRS:
        return pair
    return " − ".join(_method_title(side) for side in pair.split(" − "))


def _method_title(method: str) -> str:
    if method.endswith(TWIN_SUFFIX):
        return f"{method_label(method.removesuffix(TWIN_SUFFIX))} (twin)"
    return method_label(method)


def _share(value: float, se: float) -> str:
    if _missing(value):
        return NOT_COMPUTED
    return f"{value:.2f} ± {se:.2f}" if not _missing(se) else f"{value:.2f}"


def _number(value: float, digits: int = 3) -> str:
    return NOT_COMPUTED if _missing(value) else f"{value:.{digits}f}"


def _missing(value: object) -> bool:
    try:
        return math.isnan(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def _section(summary: pd.DataFrame, section: str) -> pd.DataFrame:
    return summary[summary["section"] == section]


def _pairs(rows: pd.DataFrame) -> list[str]:
    """Real pairs in order, the pooled row after them, the null pair last."""
    real = [p for p in pd.unique(rows.loc[~rows["null"].astype(bool), "pair"])]
    pooled = [p for p in real if p == referee.REAL_PAIRS]
    null = [p for p in pd.unique(rows.loc[rows["null"].astype(bool), "pair"])]
    return [p for p in real if p != referee.REAL_PAIRS] + pooled + null


def coverage_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per interval: its coverage ± Monte-Carlo SE per pair (the null pair's true
    difference is 0), and its mean width over the real pairs."""
    rows = _section(summary, referee.COVERAGE)
    pairs = _pairs(rows)
    out = []
    for _, part in rows.groupby("procedure", sort=False):
        record: dict[str, object] = {"Interval": str(part["label"].iloc[0])}
        record |= _shares(
            part, pairs, lambda cell, pair: ("null: " if cell["null"] else "") + pair_title(pair)
        )
        real = part[~part["null"].astype(bool)]
        pooled = real[real["pair"] == referee.REAL_PAIRS]
        width = (pooled if not pooled.empty else real)["mean_width"]
        record["Mean width (real pairs)"] = _number(float(width.mean()) if len(width) else math.nan)
        out.append(record)
    return pd.DataFrame(out)


def tests_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per test: its type-I error on the null pair and its power on each real pair,
    each ± its Monte-Carlo SE."""
    rows = _section(summary, referee.TEST)
    pairs = _pairs(rows)
    out = []
    for _, part in rows.groupby("procedure", sort=False):
        record: dict[str, object] = {"Test": str(part["label"].iloc[0])}
        record |= _shares(part, pairs, lambda cell, pair: f"{cell['measure']}, {pair_title(pair)}")
        out.append(record)
    return pd.DataFrame(out)


def _shares(
    part: pd.DataFrame, pairs: list[str], title: Callable[[pd.Series, str], str]
) -> dict[str, object]:
    """One procedure's share ± Monte-Carlo SE per pair it has, under ``title(cell, pair)``."""
    by_pair = part.set_index("pair")
    return {
        title(by_pair.loc[pair], pair): _share(
            float(by_pair.loc[pair, "value"]), float(by_pair.loc[pair, "mc_se"])
        )
        for pair in pairs
        if pair in by_pair.index
    }


def correlation_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per pair: the between-seed correlation realised over the datasets with its
    interval, the ``r`` the corrected variance would need, the ρ the corrected test assumes,
    and the part of ρ that shared training films alone give."""
    rows = _section(summary, referee.CORRELATION)
    out = []
    for pair, part in rows.groupby("pair", sort=False):
        by = part.set_index("procedure")
        realised = by.loc[referee.RHO_REALISED]
        rho = float(realised["value"])
        out.append(
            {
                "Pair": ("null: " if bool(realised["null"]) else "") + pair_title(str(pair)),
                "ρ realised [95% CI]": (
                    f"{rho:.2f} [{float(realised['low']):.2f}, {float(realised['high']):.2f}]"
                    if not _missing(rho)
                    else NOT_COMPUTED
                ),
                "r = ρ/(1 − ρ) realised": _number(rho / (1 - rho) if rho < 1 else math.inf, 2),
                "ρ assumed (n_test/n)": _number(float(by.loc[referee.RHO_ASSUMED]["value"]), 2),
                "ρ from shared training films": _number(
                    float(by.loc[referee.RHO_TRAINING]["value"]), 2
                ),
            }
        )
    return pd.DataFrame(out)


def truth_line(summary: pd.DataFrame) -> str:
    """The true expected differences, one clause per pair."""
    rows = _section(summary, referee.TRUTH)
    parts = []
    for r in rows.itertuples():
        if bool(r.null):
            parts.append(f"{pair_title(str(r.pair))}: 0 by construction")
        else:
            parts.append(f"{pair_title(str(r.pair))}: {r.value:+.4f} ± {r.mc_se:.4f}")
    return "; ".join(parts)


def design_line(card: Mapping[str, Any]) -> str:
    """What was drawn and where, in one paragraph, from the run's card."""
    done, asked = card.get("datasets_done"), card.get("datasets_asked")
    of = "" if done == asked else f" (of {asked} asked; stopped at the time limit)"
    methods = ", ".join(_method_title(m) for m in card.get("methods", []))
    null = _method_title(str(card.get("null_method", "")))
    sizes = card.get("split_sizes", {})
    return (
        f"K = {done} phantom datasets{of}, S = {card.get('seeds')} seeds each; task "
        f"{card.get('task')}, metric {str(card.get('metric', '')).upper()}; methods {methods}, "
        f"and {null} trained twice under two names with other random streams (the null pair). "
        f"Selection: {card.get('selection')}. Each dataset {card.get('n_images')} films "
        f"(train {sizes.get('n_train', NOT_COMPUTED)}, validation "
        f"{sizes.get('n_val', NOT_COMPUTED)}, test {sizes.get('n_test', NOT_COMPUTED)} on "
        f"average); fresh test set {card.get('fresh_films')} films; at most "
        f"{_count(card.get('epochs'), 'epoch')}, {card.get('image_size')} px, batch "
        f"{card.get('batch_size')}; "
        f"{card.get('bootstrap')} bootstrap replicates. Device: {card.get('device')}; wall "
        f"{float(card.get('wall_s', math.nan)) / 60:.1f} min; {card.get('created_at')}."
        + (SHIPPED_NOTE if card.get("shipped") else "")
    )


#: Said of the result shipped with SoftGrade, shown until a lab records its own.
SHIPPED_NOTE = (
    " This is the result shipped with SoftGrade (bench/RESULTS.md); "
    "`softgrade calibrate-inference -o DIR` and `--record DIR` put this lab's own here."
)


def _count(n: object, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def recommendation_line(card: Mapping[str, Any]) -> str:
    """Which interval the table supports, and why."""
    label = card.get("recommended_label")
    level = float(card.get("level", referee.LEVEL))
    if not label:
        done = card.get("datasets_done") or 0
        if int(done) < referee.MIN_DATASETS_TO_RECOMMEND:
            return (
                f"No recommendation: {done} datasets are too few to tell a coverage 0.05 "
                f"short of {level:.0%} from {level:.0%} (the referee recommends from "
                f"{referee.MIN_DATASETS_TO_RECOMMEND} on)."
            )
        return "No recommendation: the referee had no real pair of methods to score."
    return (
        f"Recommended interval: **{label}**, the narrowest whose coverage of the real pairs is "
        f"not detectably below {level:.0%} (not more than two standard errors of a {level:.0%} "
        "share short of it)."
    )


def markdown_table(frame: pd.DataFrame) -> str:
    """A DataFrame as a GitHub markdown table (every cell as text)."""
    if frame.empty:
        return "(none)"
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = [
        "| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body])


def referee_markdown(summary: pd.DataFrame, card: Mapping[str, Any]) -> str:
    """The referee's whole report as markdown: design, truth, coverage, tests, correlation,
    recommendation."""
    level = float(card.get("level", referee.LEVEL))
    alpha = float(card.get("alpha", referee.ALPHA))
    baycomp = (
        ""
        if card.get("baycomp", True)
        else "\n\nThe Bayesian test's row is n/a: baycomp was not installed where it ran."
    )
    return (
        "\n\n".join(
            [
                "## What the referee measured",
                design_line(card),
                f"True expected difference on the fresh films (± SE over datasets): "
                f"{truth_line(summary)}.",
                f"### Coverage of the true difference (nominal {level:.0%}; ± Monte-Carlo SE)",
                markdown_table(coverage_frame(summary)),
                "### Tests: type-I error on the null pair, power on the real pairs "
                f"(α = {alpha:g})",
                markdown_table(tests_frame(summary)) + baycomp,
                "### Between-seed correlation: realised over the datasets, and assumed",
                markdown_table(correlation_frame(summary)),
                recommendation_line(card),
            ]
        )
        + "\n"
    )
