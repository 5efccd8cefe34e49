"""The Launch page's "How many seeds?" before a study is queued (issue 21)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from jobs.services import study_analysis
from tests.helpers.synthetic_study import write_synthetic_study

PAGE = Path(__file__).parents[2] / "pages" / "launch.py"


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=60)


def test_seeds_for_a_typed_effect_with_gpu_hours_per_seed(path):
    at = _page().run()
    at.radio(key="launch_power_source").set_value("typed").run()
    assert not at.exception
    at.number_input(key="launch_effect").set_value(0.05).run()
    at.number_input(key="launch_sd").set_value(0.02).run()
    markdown = "\n".join(m.value for m in at.markdown)
    for rho in (0, 0.1, 0.3):  # planned over a range of between-seed correlations
        assert f"seeds** give 80 % power with the corrected test at ρ = {rho}." in markdown
    for device, unit in (("cuda", "GPU hours per seed"), ("cpu", "CPU-slot hours per seed")):
        at.selectbox(key="launch_device").set_value(device).run()
        assert unit in "\n".join(c.value for c in at.caption), device  # priced on its device


def test_an_unreachable_target_says_the_ceiling_follows_from_the_assumed_rho(path):
    at = _page().run()
    at.radio(key="launch_power_source").set_value("typed").run()
    at.number_input(key="launch_sd").set_value(0.1).run()  # 0.05 vs sd 0.1
    markdown = "\n".join(m.value for m in at.markdown)
    assert "At ρ = 0.3, no number of seeds reaches 80 % power" in markdown
    assert "follows from the assumed ρ" in markdown
    assert "seeds** give 80 % power with the corrected test at ρ = 0." in markdown


def test_seeds_from_an_existing_study_match_the_engine(path):
    study_id = write_synthetic_study(path, n_seeds=3, n_patients=20)
    at = _page().run()
    assert not at.exception
    assert at.selectbox(key="launch_power_study").value == study_id
    shown = at.dataframe[0].value
    plan = study_analysis.seeds_needed(study_id, metric="amae", effect=0.05, path=path)
    # Each soft method against Nominal, which is listed first and so is B (A − B).
    soft = plan[(plan["method_b"] == "nominal") & (plan["rho"] == 0.0)]
    assert len(shown) == len(soft) == 4
    assert list(shown["Seeds run"]) == [str(n) for n in soft["n_seeds"]]
    assert {"Seeds at ρ = 0", "Seeds at ρ = 0.1"} <= set(shown.columns)
    at.number_input(key="launch_power_study_effect").set_value(0.2).run()
    assert not at.exception
