"""Durations and run ids in words."""

from __future__ import annotations

import pytest

from pages.present import formatting as fmt


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (float("nan"), "—"),
        (4.4, "4 s"),
        (185, "3 min 05 s"),
        (2 * 3600 + 7 * 60, "2 h 07 min"),
        (3 * 86400, "3.0 days"),
    ],
)
def test_format_duration(seconds, text):
    assert fmt.format_duration(seconds) == text


@pytest.mark.parametrize(
    ("run_id", "label"),
    [
        ("study-ab12-KL-beta-s3-c1", "KL · beta · seed 3 · config 1"),
        ("study-ab12-CPPD-nominal-s10-c0", "CPPD · nominal · seed 10 · config 0"),
        (None, "—"),
        ("something-else", "something-else"),
    ],
)
def test_run_label_reads_a_run_id_in_words(run_id, label):
    assert fmt.run_label(run_id) == label


@pytest.mark.parametrize(("rows", "height"), [(1, "content"), (30, "content"), (105, 560)])
def test_a_table_shows_every_row_of_a_14_method_study_and_scrolls_past_that(rows, height):
    from pages.present.formatting import table_height

    assert table_height(rows) == height
