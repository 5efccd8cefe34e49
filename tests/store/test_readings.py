"""Second readings: appended beside the label with their audit line, never over anything."""

from __future__ import annotations

import pytest

from store import audit, readings
from store.db import init_schema


def test_a_reading_is_appended_with_its_audit_line(tmp_path):
    store = tmp_path / "s.duckdb"
    init_schema(store)
    readings.record_reading("d1", "film-7", "KL", 3, reader="ana", recorded=1, path=store)
    readings.record_reading("d1", "film-7", "KL", 2, reader="ben", note="osteophyte?", path=store)
    got = readings.list_readings("d1", path=store)
    assert list(got["reader"]) == ["ben", "ana"]  # newest first, the first kept
    assert list(got["grade"]) == [2, 3]
    log = audit.read_audit(action="second_reading", path=store)
    assert set(log["target"]) == {"d1/film-7"} and "KL 3 (recorded 1)" in set(log["detail"])


@pytest.mark.parametrize(("task", "grade"), [("KL", 5), ("CPPD", 4), ("XX", 1), ("KL", -1)])
def test_an_impossible_grade_is_refused_and_nothing_written(tmp_path, task, grade):
    store = tmp_path / "s.duckdb"
    init_schema(store)
    with pytest.raises(ValueError):
        readings.record_reading("d1", "f", task, grade, reader="ana", path=store)
    assert readings.list_readings("d1", path=store).empty
    assert audit.read_audit(action="second_reading", path=store).empty
