"""The Launch page: presets, validation, exactly-once submit, and the no-worker warning."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.methods import FAMILIES
from engine.study_settings import PHANTOM_SIZE, SEED_COUNT, TRAINING_NUMBERS
from jobs.services.up_worker import UP_LAUNCHED_ENV
from pages.present.study_form import chosen_methods, family_key, method_widget_values
from store import datasets as store_datasets
from store import jobs as store_jobs
from tests.helpers.films import meta_frame

PAGE = Path(__file__).parents[2] / "pages" / "launch.py"


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=60)


def _jobs(path: Path) -> list[store_jobs.Job]:
    return [store_jobs.get_job(j, path=path) for j in store_jobs.list_jobs(path=path)["job_id"]]


def _submit(at: AppTest) -> AppTest:
    return at.button(key="launch_submit").click().run()


def _texts(elements) -> str:
    """The elements' text as a person reads it: markdown's backslash escapes removed (names
    and error messages are escaped as text, pages/present/user_text.py)."""
    return re.sub(r"\\(.)", r"\1", "\n".join(e.value for e in elements))


def _set_methods(at: AppTest, methods: list[str]) -> AppTest:
    """Pick ``methods`` in the family pickers (one per family), the others cleared."""
    for key, value in method_widget_values(methods).items():
        at.multiselect(key=key).set_value(value)
    return at


def _methods(at: AppTest) -> list[str]:
    keys = [family_key(f) for f in FAMILIES]
    return chosen_methods({k: at.multiselect(key=k).value for k in keys})


def test_first_visit_starts_from_the_quick_preset_and_counts_runs(path):
    at = _page().run()
    assert not at.exception
    assert at.text_input(key="launch_name").value == "quick look"
    assert at.number_input(key="launch_seeds").value == 2
    # one number box per whole-number setting, with its record's name and meaning
    boxes = {box.key: box for box in at.number_input}
    for setting in (*PHANTOM_SIZE, SEED_COUNT, *TRAINING_NUMBERS):
        box = boxes[f"launch_{setting.field}"]
        assert (box.label, box.help) == (setting.label, setting.meaning)
    assert "**20 runs**" in _texts(at.markdown)
    assert "Rough time" in _texts(at.caption)
    # one soft-label heatmap per chosen method
    assert len(at.get("vega_lite_chart")) == len(_methods(at))


def test_submit_creates_one_job_with_the_chosen_settings(path):
    at = _page().run()
    _set_methods(at, ["nominal", "beta"])
    at.multiselect(key="launch_tasks").set_value(["CPPD"])
    at.number_input(key="launch_seeds").set_value(3)
    at.selectbox(key="launch_device").set_value("cpu")
    at.run()
    assert "**6 runs**" in _texts(at.markdown)
    _submit(at)
    assert not at.exception
    (job,) = _jobs(path)
    assert job.status == "queued"
    assert job.spec["methods"] == ["nominal", "beta"]
    assert job.spec["tasks"] == ["CPPD"]
    assert job.spec["seeds"] == [0, 1, 2]
    assert job.spec["dataset"] == {"kind": "phantom", "n_images": 400, "n_joint": 240, "seed": 0}
    shown = _texts(at.success)
    assert job.job_id in shown and "queued" in shown


def test_after_a_submit_the_button_is_disabled_and_reruns_add_nothing(path):
    at = _submit(_page().run())
    assert at.button(key="launch_submit").disabled
    at.run()
    at.run()
    assert len(_jobs(path)) == 1


def test_a_second_click_racing_the_first_gets_the_same_job(path):
    at = _submit(_page().run())
    (job,) = _jobs(path)
    # A fast second click can interrupt the first run after the job was written but before
    # the page remembered it; the next run then sends the same request again.
    del at.session_state["launch_last"]
    at.run()
    _submit(at)
    assert [j.job_id for j in _jobs(path)] == [job.job_id]
    assert "already queued" in _texts(at.info)


def test_refresh_or_duplicated_tab_sending_the_same_study_gets_the_same_job(path):
    first = _submit(_page().run())
    form = first.query_params["launch_form"]
    (job,) = _jobs(path)
    # A refresh (or a duplicated tab) starts a new session that keeps the URL's form id.
    second = _page()
    second.query_params["launch_form"] = form
    _submit(second.run())
    assert not second.exception
    assert [j.job_id for j in _jobs(path)] == [job.job_id]
    assert "already queued" in _texts(second.info) and job.job_id in _texts(second.info)


def test_two_tabs_with_different_studies_make_two_jobs(path):
    one, two = _page().run(), _page().run()
    _set_methods(two, ["nominal"]).run()
    _submit(one)
    _submit(two)
    assert sorted(len(j.spec["methods"]) for j in _jobs(path)) == [1, 5]


def test_changing_the_study_after_a_submit_makes_a_new_job(path):
    at = _submit(_page().run())
    (first,) = _jobs(path)
    at.number_input(key="launch_seeds").set_value(1).run()
    assert not at.button(key="launch_submit").disabled
    assert first.job_id in _texts(at.caption)  # the earlier job stays findable
    _submit(at)
    assert sorted(len(j.spec["seeds"]) for j in _jobs(path)) == [1, 2]


def test_queue_the_same_study_again_is_an_explicit_second_job(path):
    at = _submit(_page().run())
    at.button(key="launch_again").click().run()
    _submit(at)
    jobs = _jobs(path)
    assert len(jobs) == 2 and jobs[0].spec == jobs[1].spec


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("launch_methods", [], "methods: missing"),
        ("launch_tasks", [], "tasks: missing"),
        ("launch_name", "  ", "name: must not be empty"),
        ("launch_seeds", 0, "seeds: 0 must be a whole number >= 1"),
        ("launch_budget", 20, "budget: 20 must be a whole number from 1 to 15"),
        ("launch_max_epochs", 0, "max_epochs: 0 must be a whole number >= 1"),
        ("launch_patience", -1, "patience: -1 must be a whole number >= 1"),
        ("launch_image_size", 8, "image_size: 8 must be a whole number from 16 to 1024"),
        ("launch_batch_size", 0, "batch_size: 0 must be a whole number >= 1"),
        ("launch_n_joint", 500, "n_joint=500 must be <= n_images=400"),
    ],
)
def test_each_refused_value_says_why_and_queues_nothing(path, key, value, message):
    at = _page().run()
    if key == "launch_methods":
        _set_methods(at, value).run()
    else:
        widget = at.multiselect(key=key) if isinstance(value, list) else None
        if widget is None:
            widget = at.text_input(key=key) if isinstance(value, str) else at.number_input(key=key)
        widget.set_value(value).run()
    assert not at.exception
    assert message in _texts(at.error)
    assert at.button(key="launch_submit").disabled  # a browser cannot click it
    assert _jobs(path) == []


def test_budget_is_checked_against_the_chosen_methods_grid(path):
    at = _page().run()
    _set_methods(at, ["nominal"])
    at.number_input(key="launch_budget").set_value(5).run()
    assert "from 1 to 3" in _texts(at.error)


def test_paper_preset_fills_the_form(path):
    at = _page().run()
    at.button(key="launch_preset_paper").click().run()
    assert not at.exception
    assert at.text_input(key="launch_name").value == "paper protocol"
    assert at.number_input(key="launch_seeds").value == 20
    assert at.number_input(key="launch_budget").value == 15
    assert at.number_input(key="launch_max_epochs").value == 100
    assert at.number_input(key="launch_image_size").value == 224
    assert at.number_input(key="launch_n_images").value == 2170
    assert at.selectbox(key="launch_device").value == "auto"
    assert "**1800 runs**" in _texts(at.markdown)
    at.button(key="launch_preset_quick").click().run()
    assert at.number_input(key="launch_image_size").value == 32


def test_methods_are_picked_by_family_each_with_what_it_does(path):
    from engine.methods import FAMILY_DESCRIPTIONS, methods_by_family

    at = _page().run()
    captions = _texts(at.caption)
    for family, members in methods_by_family().items():
        picker = at.multiselect(key=family_key(family))
        assert picker.options == [m.label for m in members]
        assert FAMILY_DESCRIPTIONS[family] in captions


def test_only_methods_with_a_target_matrix_draw_one_the_others_are_described(path):
    from engine.methods import get_method, method_names

    at = _set_methods(_page().run(), list(method_names())).run()
    assert not at.exception
    with_matrix = [m for m in method_names() if get_method(m).target_matrix is not None]
    assert len(at.get("vega_lite_chart")) == len(with_matrix) < len(method_names())
    words = _texts(at.markdown)
    for name in method_names():
        method = get_method(name)
        if method.target_matrix is None:
            assert f"**{method.label}**" in words and method.description in words


def test_the_survey_preset_picks_every_method_and_shows_its_gpu_time(path):
    from engine.methods import method_names

    at = _page().run()
    assert "Estimated GPU time: about" in _texts(at.caption)  # on the preset's card
    at.button(key="launch_preset_ordinal-survey").click().run()
    assert not at.exception
    assert _methods(at) == list(method_names())
    assert at.number_input(key="launch_seeds").value == 20
    assert "on a GPU" in _texts(at.caption)  # the study's rough time, device auto


def test_a_registered_dataset_can_be_chosen(path, tmp_path):
    films = tmp_path / "films"
    films.mkdir()
    dataset_id = store_datasets.register_dataset(
        spec_key=f"folder(path={films})",
        kind="folder",
        params={"path": str(films)},
        meta=meta_frame(),
        path=path,
    )
    at = _page().run()
    at.selectbox(key="launch_dataset").set_value(dataset_id).run()
    assert "launch_n_images" not in [n.key for n in at.number_input]
    _submit(at)
    (job,) = _jobs(path)
    assert job.spec["dataset"] == {"kind": "folder", "path": str(films)}


def test_without_a_worker_the_page_says_how_to_start_one(path):
    at = _submit(_page().run())
    errors = _texts(at.error)
    assert "No worker is running" in errors and "python -m jobs worker" in errors
    assert "wait in the queue until a worker starts" in _texts(at.warning)


def test_right_after_up_the_page_says_the_worker_is_starting_not_missing(path, monkeypatch):
    monkeypatch.setenv(UP_LAUNCHED_ENV, str(time.time()))
    at = _submit(_page().run())
    assert "No worker is running" not in _texts(at.error)
    assert "A worker is starting" in _texts(at.info)
    assert "The worker is still starting" in _texts(at.info)
    assert not _texts(at.warning)


@pytest.mark.parametrize(("device", "warned"), [("auto", "would run on its CPU"), ("cpu", None)])
def test_a_gpu_study_on_a_cpu_only_worker_is_flagged(path, device, warned):
    store_jobs.register_worker(
        hostname="h", pid=1, executor="local", devices=["cpu"], slots=1, path=path
    )
    at = _page().run()
    at.selectbox(key="launch_device").set_value(device).run()
    if warned:
        assert warned in _texts(at.warning)
    else:
        assert not at.warning


def test_with_an_alive_worker_there_is_no_warning(path):
    store_jobs.register_worker(
        hostname="h", pid=1, executor="local", devices=["cpu"], slots=1, path=path
    )
    at = _submit(_page().run())
    assert "No worker" not in _texts(at.error)
    assert not at.warning


def test_the_pruned_search_is_off_by_default_and_queues_the_full_search(path):
    at = _page().run()
    assert at.toggle(key="launch_prune").value is False
    assert "launch_pruner" not in [w.key for w in at.selectbox]
    _submit(at)
    (job,) = _jobs(path)
    assert "search" not in job.spec


def test_switching_on_the_pruned_search_queues_its_pruner_and_says_what_it_does(path):
    at = _page().run()
    at.toggle(key="launch_prune").set_value(True).run()
    assert not at.exception
    assert at.selectbox(key="launch_pruner").value == "asha"
    at.selectbox(key="launch_pruner").set_value("median").run()
    shown = _texts(at.markdown) + _texts(at.caption)
    assert "Search pruned with median" in shown
    assert "never selected" in shown
    _submit(at)
    (job,) = _jobs(path)
    assert job.spec["search"] == {"pruner": "median"}


def test_a_pruned_search_of_one_configuration_per_method_says_it_saves_nothing(path):
    at = _page().run()
    at.toggle(key="launch_prune").set_value(True).run()
    at.number_input(key="launch_budget").set_value(1).run()
    assert not at.exception
    assert any("nothing to prune" in w.value for w in at.warning)
    at.number_input(key="launch_budget").set_value(6).run()
    assert not any("nothing to prune" in w.value for w in at.warning)
