"""Compare → Statistics, "What the referee measured": the latest recorded referee result, its
date and size and the interval it recommends; how to make one where none is recorded. And the
markdown ``calibrate-inference`` writes from the same rows."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.analysis import referee
from engine.analysis.referee import Comparison, PairSample
from engine.methods import paper_methods
from jobs.services import referee as referee_files
from pages.present import referee_tables as rt
from pages.widgets.referee_view import NONE_YET, TITLE
from tests.helpers.pages import finished_synthetic_store, run_page, texts

BASE, SOFT = paper_methods()[0], paper_methods()[1]
REAL = Comparison(BASE, SOFT)
NULL = Comparison(BASE, f"{BASE}_twin", null=True)


def _summary(k: int = 12) -> pd.DataFrame:
    """A referee summary of ``k`` synthetic datasets of 6 seeds (seeds correlated 0.3)."""
    rng = np.random.default_rng(0)
    samples = []
    for comparison, mean in ((REAL, 0.02), (NULL, 0.0)):
        for dataset in range(k):
            shift = rng.normal(0, math.sqrt(0.3) * 0.01)
            diffs = mean + shift + rng.normal(0, math.sqrt(0.7) * 0.01, size=6)
            fresh = mean + rng.normal(0, 0.002, size=6)
            samples.append(
                PairSample(
                    dataset, comparison, diffs, fresh, 0.43, boot=(mean - 0.004, mean + 0.004)
                )
            )
    return referee.summary_table(samples)


def _card(summary: pd.DataFrame, k: int = 12) -> dict[str, object]:
    recommended = referee.recommend(summary)
    labels = {rule.key: rule.label for rule in referee.INTERVALS}
    return {
        "created_at": "2026-11-27 19:00 UTC",
        "device": "NVIDIA H100 80GB HBM3",
        "wall_s": 420.0,
        "datasets_asked": 40,
        "datasets_done": k,
        "seeds": 6,
        "methods": [BASE, SOFT],
        "null_method": BASE,
        "task": "KL",
        "metric": "amae",
        "n_images": 970,
        "fresh_films": 4096,
        "split_sizes": {"n_train": 475.0, "n_val": 204.0, "n_test": 291.0},
        "epochs": 30,
        "image_size": 64,
        "batch_size": 128,
        "bootstrap": 1000,
        "selection": "one fixed configuration per method (each hyper-parameter mid-grid)",
        "level": 0.95,
        "alpha": 0.05,
        "baycomp": True,
        "recommended": recommended,
        "recommended_label": labels.get(recommended or ""),
    }


def _record(home: Path) -> dict[str, object]:
    """A referee result written as the command writes it, recorded under ``home``."""
    out = home / "referee-out"
    out.mkdir()
    summary = _summary()
    card = _card(summary)
    summary.to_csv(out / referee_files.SUMMARY_FILE, index=False)
    (out / referee_files.CARD_FILE).write_text(json.dumps(card))
    referee_files.record_referee(out, home)
    return card


def test_markdown_names_the_design_the_tables_and_the_recommendation():
    summary = _summary()
    card = _card(summary)
    text = rt.referee_markdown(summary, card)
    assert text.startswith("## What the referee measured")
    assert "K = 12 phantom datasets (of 40 asked; stopped at the time limit), S = 6" in text
    assert "Nominal − Binomial" in text and "null: Nominal − Nominal (twin)" in text
    assert "| naive paired t |" in text and "| corrected t (Nadeau-Bengio) |" in text
    assert "type-I error, Nominal − Nominal (twin)" in text
    assert "NVIDIA H100 80GB HBM3; wall 7.0 min; 2026-11-27 19:00 UTC" in text
    assert f"Recommended interval: **{card['recommended_label']}**" in text
    # Seeds correlated 0.3 and the corrected variance's r = 0.43: the naive t is short.
    coverage = rt.coverage_frame(summary).set_index("Interval")
    naive = float(coverage.loc["naive paired t", "Nominal − Binomial"].split(" [")[0])
    assert naive < 0.9


def test_intervals_the_design_could_not_give_read_not_run_and_say_why():
    """Independent seeds: the factorial design's rows are there, not run, naming what they
    need; the rows that ran leave the reason blank."""
    summary = _summary()
    coverage = rt.coverage_frame(summary).set_index("Interval")
    factorial = [r for r in referee.INTERVALS if r.needs == referee.NEEDS_FACTORIAL]
    assert len(factorial) == 3
    for rule in factorial:
        row = coverage.loc[rule.label]
        assert row["Nominal − Binomial"] == rt.NOT_RUN
        assert row[rt.NOT_RUN_COLUMN] == referee.NEEDS_FACTORIAL
    assert coverage.loc["naive paired t", rt.NOT_RUN_COLUMN] == ""
    tests = rt.tests_frame(summary).set_index("Test")
    assert tests.loc["factorial t, p < α", rt.NOT_RUN_COLUMN] == referee.NEEDS_FACTORIAL
    assert list(tests.index) == [rule.label for rule in referee.TESTS]


def _shipped(task: str) -> referee_files.RefereeRecord:
    """The result shipped with SoftGrade for ``task``."""
    return next(r for r in referee_files.shipped_referees() if r.card["task"] == task)


def test_a_result_from_before_the_new_intervals_reads_them_as_not_run():
    """A result recorded before the Wilcoxon and factorial intervals existed (its summary has
    no rows of them): its tables keep every number it has and show the new rows as not run,
    because it predates them."""
    shipped = _shipped("KL")
    new_keys = {"wilcoxon_hl", *(r.key for r in referee.INTERVALS if r.needs)}
    older = shipped.summary[~shipped.summary["procedure"].isin(new_keys)]
    coverage = rt.coverage_frame(older).set_index("Interval")
    assert list(coverage.index)[:4] == [r.label for r in referee.INTERVALS[:4]]
    naive = coverage.loc["naive paired t", "Nominal − Binomial"]
    assert (
        naive
        == rt.coverage_frame(shipped.summary)
        .set_index("Interval")
        .loc["naive paired t", "Nominal − Binomial"]
    )
    new = [r.label for r in referee.INTERVALS if r.key in new_keys]
    assert (coverage.loc[new, rt.NOT_RUN_COLUMN] == rt.PREDATES).all()
    assert (coverage.loc[new, "Mean width (real pairs)"] == rt.NOT_RUN).all()
    text = rt.referee_markdown(older, shipped.card)
    assert "S = 4 seeds each" in text and rt.PREDATES in text


def test_a_factorial_card_names_its_splits_and_inits():
    card = {**_card(_summary()), "seeds": 3, "inits": 2}
    assert "S = 3 splits × I = 2 inits each (6 seeds: every split trained" in rt.design_line(card)


def test_correlation_frame_sets_the_realised_rho_beside_the_assumed():
    frame = rt.correlation_frame(_summary())
    assert list(frame["Pair"]) == ["Nominal − Binomial", "null: Nominal − Nominal (twin)"]
    assert set(frame["ρ assumed (n_test/n)"]) == {"0.30"}
    assert frame["ρ realised [95% CI]"].str.match(r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]").all()


def test_too_few_datasets_give_no_recommendation_and_say_why():
    summary = _summary(k=4)
    card = _card(summary, k=4)
    assert card["recommended"] is None
    assert "4 datasets are too few" in rt.recommendation_line(card)


@pytest.mark.parametrize("recorded", [True, False])
def test_statistics_tab_shows_the_latest_referee_or_how_to_make_one(
    tmp_path, monkeypatch, recorded
):
    finished_synthetic_store(tmp_path, 3, n_patients=12)
    card = _record(tmp_path) if recorded else None
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    assert TITLE in [e.label for e in at.expander]
    captions = texts(at, "caption")
    if not recorded:  # the result shipped with SoftGrade, said to be that
        assert "result shipped with SoftGrade" in captions  # one string of every caption
        assert "Device: NVIDIA H200" in captions
        return
    assert "K = 12 phantom datasets" in captions and "2026-11-27 19:00 UTC" in captions
    assert f"Recommended interval: **{card['recommended_label']}**" in texts(at, "markdown")
    coverage = next(d.value for d in at.dataframe if "Interval" in d.value.columns)
    assert "film-sampling bootstrap" in set(coverage["Interval"])
    tests = next(
        d.value for d in at.dataframe if any(str(c).startswith("type-I") for c in d.value.columns)
    )
    assert {rule.label for rule in referee.TESTS} == set(tests["Test"])


def test_an_unreadable_newer_folder_is_passed_over_for_the_last_complete_result(tmp_path):
    _record(tmp_path)
    broken = referee_files.referee_home(tmp_path) / "99999999T999999999999Z"
    broken.mkdir()
    (broken / referee_files.CARD_FILE).write_text("{")
    (broken / referee_files.SUMMARY_FILE).write_text("x\n1\n")
    latest = referee_files.recorded_referees(tmp_path)[0]
    assert latest.folder != broken
    with pytest.raises(ValueError, match="cannot be read|not a referee result"):
        referee_files.read_referee(broken)
    shipped = referee_files.latest_referees(tmp_path / "nothing")  # none recorded there
    assert shipped and all(r.card["shipped"] is True for r in shipped)


@pytest.mark.parametrize("task", ["KL", "CPPD"])
def test_the_shipped_referee_recommends_an_interval_that_covered_at_least_95_percent(task):
    shipped = _shipped(task)
    assert shipped.card["datasets_done"] >= 40
    coverage = rt.coverage_frame(shipped.summary).set_index("Interval")
    label = shipped.card["recommended_label"]
    share = float(coverage.loc[label, "all real pairs"].split(" [")[0])
    assert share >= 0.87, (label, share)  # not detectably below 95 % by the referee's rule


def test_the_shipped_results_cover_both_tasks_and_say_they_disagree(tmp_path, monkeypatch):
    """Nothing recorded: the tab shows the shipped result of each task, each under its task,
    and says their recommendations differ (KL and CPPD picked different intervals)."""
    finished_synthetic_store(tmp_path, 3, n_patients=12)
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    captions = texts(at, "caption")
    assert "task KL" in captions and "task CPPD" in captions
    assert "recommend different intervals" in captions
    assert {"##### KL", "##### CPPD"} <= {m.value for m in at.markdown}


def test_with_no_result_anywhere_the_tab_says_how_to_make_one(tmp_path, monkeypatch):
    monkeypatch.setattr(referee_files, "SHIPPED_REFEREE", "no-such-folder")
    assert referee_files.latest_referees(tmp_path) == []
    assert NONE_YET.startswith("No referee result")


def test_the_shipped_draws_are_independent_and_full_coverage_has_an_interval():
    for shipped in referee_files.shipped_referees():
        assert shipped.card["init_draws"] == "per dataset"
        assert rt.SHARED_INITS_NOTE not in rt.design_line(shipped.card)
        text = rt.referee_markdown(shipped.summary, shipped.card)
        assert not re.search(r"± 0\.00(?!\d)", text)
    older = {**referee_files.shipped_referees()[0].card}
    older.pop("init_draws")  # a card from before the draws were made per dataset
    assert rt.SHARED_INITS_NOTE in rt.design_line(older)
