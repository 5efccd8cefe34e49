"""The Second reader page: the ranked list, one film, a second reading recorded beside the
label (audit-logged) and exported; members only."""

from __future__ import annotations

import io

import pandas as pd

from store import readings as store_readings
from store.audit import read_audit
from store.db import connect, init_schema
from store.studies import get_study
from tests.helpers.pages import download_reader, run_page, signed_in
from tests.helpers.synthetic_study import write_synthetic_study

PAGE = "../../pages/second_reader.py"


def test_a_member_reads_a_film_again_and_exports_the_readings(tmp_path, monkeypatch):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    study_id = write_synthetic_study(store, n_seeds=3, n_patients=30, methods=("nominal", "beta"))
    read = download_reader(monkeypatch)
    at = run_page(tmp_path, monkeypatch, PAGE)
    shown = at.dataframe[0].value
    assert {"Film", "Recorded", "Each seed", "Likely range", "≥ 2 grades from label"} <= set(
        shown.columns
    )
    assert list(shown["Rank"])[:3] == [1, 2, 3]
    first = str(shown["Film"].iloc[0])
    assert at.selectbox(key="second_film").value == first

    at.radio(key="second_grade").set_value(2)
    at.text_input(key="second_note").input("=HYPERLINK(x)")
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Recorded: KL 2" in at.success[0].value

    dataset_id = get_study(study_id, path=store).dataset_id
    got = store_readings.list_readings(dataset_id, path=store)
    assert list(got["image_id"]) == [first] and list(got["grade"]) == [2]
    assert not read_audit(action="second_reading", path=store).empty
    kind, text = read(at)["second_download"]
    table = pd.read_csv(io.StringIO(text))
    assert list(table["grade"]) == [2]
    assert table["note"].iloc[0].startswith("'=")  # a typed formula is not run by a sheet


def test_a_viewer_gets_the_guard_and_no_list(path):
    at = signed_in("second_reader", "vi", "viewer", path).run()
    assert not at.exception
    assert "not open to vi (viewer)" in at.error[0].value
    assert not at.dataframe


def test_a_film_id_from_the_data_is_shown_as_text(tmp_path, monkeypatch):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    write_synthetic_study(store, n_seeds=2, n_patients=20, methods=("nominal",))
    hostile = "[click](http://example.invalid) **x**"
    with connect(store) as con:
        first = con.execute(
            "SELECT min(image_id) FROM predictions WHERE split = 'test'"
        ).fetchone()[0]
        con.execute("UPDATE predictions SET image_id = ? WHERE image_id = ?", [hostile, first])
    at = run_page(tmp_path, monkeypatch, PAGE)
    at.selectbox(key="second_film").set_value(hostile).run()
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    said = at.success[0].value
    assert "\\[click\\]" in said and "\\*\\*x\\*\\*" in said  # escaped: no link, no bold
