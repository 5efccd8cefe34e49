"""How the phantom referee's results read: coverage per interval, type-I error and power per
test, the realised between-seed correlation, and one line on the design that produced them.

The numbers are `engine.analysis.referee.summary_table`'s, with the run's card (what
``calibrate-inference`` drew, where, how long; `jobs.services.referee`). The command line
writes :func:`referee_markdown`; the Statistics tab shows the same frames. No streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from engine.analysis import referee
from engine.analysis.referee_columns import (
    REFEREE_CORRELATION,
    REFEREE_COVERAGE,
    REFEREE_TESTS,
)
from engine.methods import method_label
from engine.referee.design import INIT_DRAWS, TWIN_SUFFIX

NOT_COMPUTED = "n/a"
#: A procedure the result has no number for: the design did not allow it (the factorial
#: intervals on independent seeds), or the result predates it.
NOT_RUN = "not run"
#: The column that says why a row was not run (only where one was not).
NOT_RUN_COLUMN = REFEREE_COVERAGE.column("not_run").header
#: Said of a procedure the result predates (no rule says what it needs).
PREDATES = "this result predates it"


def pair_title(pair: str) -> str:
    """``"nominal − nominal_twin"`` -> ``"Nominal − Nominal (twin)"``."""
    if pair == referee.REAL_PAIRS:
        return pair
    return " − ".join(_method_title(side) for side in pair.split(" − "))


def _method_title(method: str) -> str:
    if method.endswith(TWIN_SUFFIX):
        return f"{method_label(method.removesuffix(TWIN_SUFFIX))} (twin)"
    return method_label(method)


def _share(row: Mapping[str, Any]) -> str:
    """``"0.97 [0.87, 0.99]"``: a share with its Wilson 95 % interval (the stored one, or for
    a result recorded before intervals were, from its share and datasets), never "± 0.00"
    at 0 or 1."""
    value = float(row["value"])
    if _missing(value):
        return NOT_COMPUTED
    low, high = row.get("low"), row.get("high")
    if _missing(low) or _missing(high):
        low, high = referee.wilson_interval(value, float(row.get("n_datasets") or 0))
    if low is None or high is None or _missing(low) or _missing(high):
        return f"{value:.2f}"
    return f"{value:.2f} [{float(low):.2f}, {float(high):.2f}]"


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


#: The interval table's last number column: how wide an interval is, on the real pairs.
MEAN_WIDTH = REFEREE_COVERAGE.column("mean_width").header


def coverage_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per interval: its coverage ± Monte-Carlo SE per pair (the null pair's true
    difference is 0), and its mean width over the real pairs.

    Every interval of `referee.INTERVALS` has a row, in its order: one the result holds no
    number for (a factorial interval on independent seeds, or a result from before it
    existed) reads :data:`NOT_RUN`, and a last column says why.
    """
    rows = _section(summary, referee.COVERAGE)
    pairs = _pairs(rows)
    titles = {
        pair: ("null: " if pair in set(rows.loc[rows["null"].astype(bool), "pair"]) else "")
        + pair_title(pair)
        for pair in pairs
    }
    first = REFEREE_COVERAGE.view_headers("first")[0]
    out = _procedure_records(rows, referee.INTERVALS, first, titles, _mean_width)
    return _with_reasons(pd.DataFrame(out), MEAN_WIDTH)


def _mean_width(part: pd.DataFrame) -> dict[str, object]:
    """An interval's mean width over the real pairs pooled (each real pair's when the result
    has no pooled row)."""
    real = part[~part["null"].astype(bool)]
    pooled = real[real["pair"] == referee.REAL_PAIRS]
    width = (pooled if not pooled.empty else real)["mean_width"]
    return {MEAN_WIDTH: _number(float(width.mean()) if len(width) else math.nan)}


def tests_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per test: its type-I error on the null pair and its power on each real pair,
    each ± its Monte-Carlo SE; a test the result has no number for reads :data:`NOT_RUN`,
    with the reason in a last column (as :func:`coverage_frame`)."""
    rows = _section(summary, referee.TEST)
    pairs = _pairs(rows)
    first = rows.drop_duplicates("pair").set_index("pair")
    titles = {pair: f"{first.loc[pair, 'measure']}, {pair_title(pair)}" for pair in pairs}
    out = _procedure_records(rows, referee.TESTS, REFEREE_TESTS.view_headers("first")[0], titles)
    return _with_reasons(pd.DataFrame(out), None)


def _procedure_records(
    rows: pd.DataFrame,
    procedures: Sequence[referee.IntervalRule] | Sequence[referee.TestRule],
    first: str,
    titles: dict[str, str],
    more: Callable[[pd.DataFrame], dict[str, object]] | None = None,
) -> list[dict[str, object]]:
    """One record per procedure, in its order: its label under ``first``, then each pair's
    share (``titles`` name the pairs) and ``more``'s cells; a procedure the result holds no
    number for says so in every cell, with what it needs."""
    out = []
    for key, label, needs in _procedures(rows, procedures):
        part = rows[rows["procedure"] == key]
        record: dict[str, object] = {first: label}
        if _not_run(part):
            out.append(_not_run_record(record, part, titles, needs))
            continue
        record |= _shares(part, titles)
        out.append(record | (more(part) if more else {}))
    return out


def _not_run_record(
    record: dict[str, object], part: pd.DataFrame, titles: dict[str, str], needs: str
) -> dict[str, object]:
    """A procedure's row when the result has no number for it: every pair's cell says so and
    the last column why."""
    return record | dict.fromkeys(titles.values(), NOT_RUN) | _not_run_cells(part, needs)


def _procedures(
    rows: pd.DataFrame, rules: Sequence[referee.IntervalRule] | Sequence[referee.TestRule]
) -> list[tuple[str, str, str]]:
    """``(key, label, why it may not run)`` of every rule in order, then any procedure the
    result holds that no rule names (a result from a later version), labelled as stored."""
    stored = dict(zip(rows["procedure"], rows["label"], strict=True)) if len(rows) else {}
    known = [(r.key, str(stored.get(r.key, r.label)), r.needs) for r in rules]
    names = {r.key for r in rules}
    extra = [(str(k), str(v), PREDATES) for k, v in stored.items() if k not in names]
    return known + extra


def _not_run(part: pd.DataFrame) -> bool:
    """No row, or no dataset behind any of them."""
    return part.empty or not (part["n_datasets"].fillna(0) > 0).any()


def _not_run_cells(part: pd.DataFrame, needs: str) -> dict[str, object]:
    """Why a procedure has no number: what it needs where the result has its row (the run
    could not compute it), else that the result predates it."""
    return {NOT_RUN_COLUMN: needs if not part.empty and needs else PREDATES}


def _with_reasons(frame: pd.DataFrame, last: str | None) -> pd.DataFrame:
    """The frame with :data:`NOT_RUN_COLUMN` last and blank where a row ran; without it when
    every row ran."""
    if NOT_RUN_COLUMN not in frame:
        return frame
    if last is not None and last in frame:
        frame[last] = frame[last].fillna(NOT_RUN)
    reasons = frame.pop(NOT_RUN_COLUMN).fillna("")
    return frame.assign(**{NOT_RUN_COLUMN: reasons})


def _shares(part: pd.DataFrame, titles: Mapping[str, str]) -> dict[str, object]:
    """One procedure's share with its Wilson interval under each pair's title
    (:data:`NOT_RUN` for a pair it has no number for)."""
    by_pair = part.set_index("pair")
    return {
        title: _share(by_pair.loc[pair].to_dict()) if pair in by_pair.index else NOT_RUN
        for pair, title in titles.items()
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
        cells = {
            "pair": ("null: " if bool(realised["null"]) else "") + pair_title(str(pair)),
            referee.RHO_REALISED: (
                f"{rho:.2f} [{float(realised['low']):.2f}, {float(realised['high']):.2f}]"
                if not _missing(rho)
                else NOT_COMPUTED
            ),
            "r_realised": _number(rho / (1 - rho) if rho < 1 else math.inf, 2),
            **{
                key: _number(float(by.loc[key]["value"]), 2)
                for key in (referee.RHO_ASSUMED, referee.RHO_TRAINING)
            },
        }
        out.append(REFEREE_CORRELATION.headed(cells))
    return pd.DataFrame(out)


def truth_line(summary: pd.DataFrame) -> str:
    """The true expected differences, one clause per pair."""
    rows = _section(summary, referee.TRUTH)
    parts = []
    for r in rows.itertuples():
        if bool(r.null) and float(r.value) == 0 and float(r.mc_se) == 0:
            # A result recorded before the null pair's truth was estimated.
            parts.append(f"{pair_title(str(r.pair))}: 0 (assumed, not estimated)")
            continue
        expected = " (0 expected)" if bool(r.null) else ""
        parts.append(f"{pair_title(str(r.pair))}: {r.value:+.4f} ± {r.mc_se:.4f}{expected}")
    return "; ".join(parts)


def design_line(card: Mapping[str, Any]) -> str:
    """What was drawn and where, in one paragraph, from the run's card."""
    done, asked = card.get("datasets_done"), card.get("datasets_asked")
    of = "" if done == asked else f" (of {asked} asked; stopped at the time limit)"
    methods = ", ".join(_method_title(m) for m in card.get("methods", []))
    null = _method_title(str(card.get("null_method", "")))
    sizes = card.get("split_sizes", {})
    return (
        f"K = {done} phantom datasets{of}, {_seeds_text(card)}; task "
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
        + ("" if card.get("init_draws") == INIT_DRAWS else SHARED_INITS_NOTE)
        + (SHIPPED_NOTE if card.get("shipped") else "")
    )


def _seeds_text(card: Mapping[str, Any]) -> str:
    """``S = 6 seeds each`` or, for a factorial design, ``S = 3 splits × I = 2 inits each
    (6 seeds: every split trained from every init)``; a card from before inits were
    recorded had independent seeds."""
    seeds, inits = card.get("seeds"), int(card.get("inits") or 1)
    if inits <= 1:
        return f"S = {seeds} seeds each"
    return (
        f"S = {seeds} splits × I = {inits} inits each ({int(seeds or 0) * inits} seeds: "
        "every split trained from every init)"
    )


#: Said of a result recorded before each dataset drew its own initialisations.
SHARED_INITS_NOTE = (
    " These draws reuse each seed's initial weights and batch order on every dataset (the "
    "referee drew them so before it drew them per dataset): the datasets are not independent "
    "replicates, the truth is conditional on those few initialisations, and the Monte-Carlo "
    "errors are too small. Rerun `softgrade calibrate-inference` for independent replicates."
)
#: Said of the result shipped with SoftGrade, shown until a lab records its own.
SHIPPED_NOTE = (
    " This is the result shipped with SoftGrade (bench/RESULTS.md); "
    "`softgrade calibrate-inference -o DIR` and `--record DIR` put this lab's own here."
)


def _count(n: object, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def disagreement_line(cards: list[Mapping[str, Any]]) -> str | None:
    """When the tasks' results recommend different intervals, say so (a reader of one task's
    block would otherwise take its pick as general); None when they agree."""
    picks = {str(c.get("task")): c.get("recommended_label") for c in cards}
    if len(set(picks.values())) < 2:
        return None
    named = "; ".join(f"{task}: {label or 'none'}" for task, label in picks.items())
    return (
        f"The tasks' results recommend different intervals ({named}), so no one pick holds "
        "for every task. The verdicts on this tab use the corrected t; docs/statistics.md "
        '("The phantom referee") says why.'
    )


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
        else "\n\nThe Bayesian test's row is not run: baycomp was not installed where it ran."
    )
    return (
        "\n\n".join(
            [
                "## What the referee measured",
                design_line(card),
                f"True expected difference on the fresh films (± SE over datasets; the null "
                f"pair's estimated too): "
                f"{truth_line(summary)}.",
                f"### Coverage of the true difference (nominal {level:.0%}; "
                "[Wilson 95 % interval])",
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
