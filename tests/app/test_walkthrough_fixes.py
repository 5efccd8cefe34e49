"""Small things a walkthrough met (issue 39): each study's card expander names its study,
and the Probabilities summary shows no leftover index column."""

from __future__ import annotations

import pytest

from tests.helpers.pages import make_store, run_page


def test_two_picked_studies_give_two_study_cards_each_named(home, monkeypatch):
    first = make_store(home, name="knees 2024")
    second = make_store(home, name="knees 2025")
    at = run_page(home, monkeypatch, query={"compare_studies": [first, second]})
    titles = [e.label for e in at.expander if e.label.startswith("Study card")]
    assert sorted(titles) == ["Study card · knees 2024", "Study card · knees 2025"], titles


def test_the_probabilities_summary_hides_its_sorted_index(home, monkeypatch):
    make_store(home, methods=("nominal", "beta", "triangular"))
    at = run_page(home, monkeypatch, tab="Probabilities")
    table = at.table[-1]
    assert "Method" in table.value.columns
    assert table.proto.hide_index  # its sorted rows' old positions are no column


def test_configurations_are_counted_per_search_not_over_seeds():
    """Budget 1: each seed's search tried one configuration, a different one per seed."""
    import pandas as pd

    from pages.present.budget_curves import configs_per_search

    runs = pd.DataFrame(
        {"method": ["nominal"] * 4 + ["beta"] * 6,
         "task": ["KL"] * 10,
         "seed": [0, 1, 2, 3, 0, 0, 0, 1, 1, 1],
         "config_index": [3, 7, 1, 9, 0, 1, 2, 4, 5, 6]}
    )  # fmt: skip
    assert configs_per_search(runs) == {"nominal": 1, "beta": 3}


def _curves(methods: dict[str, float]):
    import pandas as pd

    rows = []
    for method, scale in methods.items():
        for series in ("train_loss", "val_loss", "val_amae"):
            for epoch in (1, 2, 3):
                value = scale / epoch if series != "val_amae" else 0.5 / epoch
                rows.append(
                    {"line": f"{method}-0", "colour": method, "epoch": epoch, "series": series,
                     "value": value, "best": epoch == 3, "method": method, "seed": 0,
                     "config_index": 0}
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_several_methods_losses_are_drawn_relative_to_their_first_epoch():
    """Issue 39: 14 kinds of loss on one axis; a loss of 0.1 and one of 50 now share one."""
    from engine.analysis import explorer
    from pages.present.science_charts import RELATIVE_SUFFIX, learning_curves_chart, relative_losses

    shown = relative_losses(explorer.clip_diverged(_curves({"nominal": 0.1, "emd": 50.0})))
    losses = shown[shown["series"] != "val_amae"]
    assert losses["relative"].all()
    assert sorted(set(losses.loc[losses["epoch"] == 3, "shown"].round(6))) == [round(1 / 3, 6)]
    amae = shown[shown["series"] == "val_amae"]
    assert not amae["relative"].any() and (amae["shown"] == amae["value"]).all()
    spec = learning_curves_chart(_curves({"nominal": 0.1, "emd": 50.0})).to_dict()
    assert RELATIVE_SUFFIX in str(spec)
    one = learning_curves_chart(_curves({"nominal": 0.1})).to_dict()
    assert RELATIVE_SUFFIX not in str(one)  # one method: its loss as it is


def test_the_kiosk_names_a_test_film_by_its_place_and_the_presenter_by_its_id(monkeypatch):
    """Issue 39: the kiosk said "film ph00018 (knee crop)"; the id stays for presenters,
    as text (a demo bundle's id is data)."""
    import pandas as pd

    from pages.widgets import grade_view

    row = pd.Series({"image_id": "[x](http://evil.example)"})
    monkeypatch.setattr(grade_view, "presenter_on", lambda: False)
    assert grade_view.film_caption(row, 3, 12) == "Test film 3 of 12: the knee SoftGrade found"
    monkeypatch.setattr(grade_view, "presenter_on", lambda: True)
    shown = grade_view.film_caption(row, 3, 12)
    assert shown.startswith("film ") and "\\[x\\]" in shown and "http\u2060" in shown


def test_the_pruned_search_sentence_agrees_with_the_estimate_below_it():
    """Issue 39: "less than the rough time below" over a measured "Expected time", and over
    a budget of 1, where nothing is pruned."""
    from engine.config import StudySpec
    from pages.present.study_form import pruning_text
    from tests.helpers.studies import tiny_study

    one = StudySpec.from_dict(tiny_study(budget=1, search={"pruner": "median"}))
    many = StudySpec.from_dict(tiny_study(budget=4, search={"pruner": "median"}))
    assert "nothing to prune" in pruning_text(one) and "less" not in pruning_text(one)
    assert "usually takes less than the time below" in pruning_text(many)
    assert "rough" not in pruning_text(many)


def _reliability(n_methods: int):
    import pandas as pd

    from engine.methods import method_names

    methods = list(method_names())[:n_methods]
    return pd.DataFrame(
        [
            {"method": m, "event": "top label", "threshold": -1, "bin_low": lo / 5,
             "bin_high": (lo + 1) / 5, "bin": lo, "confidence": lo / 5 + 0.1,
             "accuracy": lo / 5 + 0.05, "count": 10}
            for m in methods
            for lo in range(5)
        ]
    )  # fmt: skip


def test_a_reliability_diagram_of_many_methods_lets_the_legend_pick_them():
    """Issue 39: with 14 methods the diagram was a tangle; the legend now picks methods to
    follow and fades the others (a few methods draw as before)."""
    from pages.present.science_charts import reliability_diagram

    many = reliability_diagram(_reliability(12)).to_dict()
    assert '"bind": "legend"' in str(many).replace("'", '"') and "legend" in str(many)
    assert "click methods in the legend" in str(many)
    few = reliability_diagram(_reliability(3)).to_dict()
    assert "bind" not in str(few) and "click methods" not in str(few)
    import json

    import pandas as pd
    import vl_convert

    two_events = pd.concat([_reliability(12), _reliability(12).assign(event="KL ≥ 2", threshold=2)])
    spec = reliability_diagram(two_events).to_dict()
    assert "<svg" in vl_convert.vegalite_to_svg(json.dumps(spec))  # one pick, every panel


def test_the_kiosk_probability_charts_read_at_13_px_in_percent():
    """Issue 39: Vega's default 10 px ticks on the charts a clinician reads."""
    from pages.present import seed_agreement
    from pages.present.charts import KIOSK_AXIS_FONT_PX, grade_probabilities

    spread = seed_agreement.seed_spread({0: [0.1, 0.6, 0.3], 1: [0.2, 0.5, 0.3]})
    points = seed_agreement.seed_points({0: [0.1, 0.6, 0.3], 1: [0.2, 0.5, 0.3]})
    charts = (
        grade_probabilities([0.1, 0.6, 0.3], "KL").to_dict(),
        seed_agreement.seed_agreement_chart(spread, points, "KL").to_dict(),
    )
    for spec in charts:
        text = str(spec)
        assert f"'labelFontSize': {KIOSK_AXIS_FONT_PX}" in text and "'format': '.0%'" in text


@pytest.mark.slow  # a whole Statistics tab: over 2 s of CPU
def test_a_long_method_name_down_a_table_gets_a_column_wide_enough(tmp_path, monkeypatch):
    """Issue 39: "Binomial layer − Nominal", below the rows st.dataframe sized its column
    from, was cut ("Binomial laye…"). Every text column is now as wide as its longest cell."""
    import json

    from pages.present.formatting import CELL_CHAR_PX
    from store import jobs as store_jobs
    from store.db import init_schema
    from tests.helpers.synthetic_study import write_synthetic_study

    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    methods = ("nominal", "beta", "triangular", "binomial_layer")
    write_synthetic_study(store, n_seeds=3, n_patients=20, methods=methods)
    job = store_jobs.claim_next_job("test-worker", path=store)
    store_jobs.finish_job(job.job_id, store_jobs.JobStatus.SUCCEEDED, path=store)
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    compact = next(d for d in at.dataframe if "A − B" in d.value.columns)
    pairs = list(compact.value["A − B"])
    longest = max(pairs, key=len)
    assert longest == "Binomial layer − Triangular" and pairs.index(longest) > 0
    widths = {name: c.get("width") for name, c in json.loads(compact.proto.columns).items()}
    assert widths["A − B"] >= len(longest) * CELL_CHAR_PX
