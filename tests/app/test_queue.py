"""The Jobs page: live progress, ETA, cancel, failures with their traceback, the log."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from store import jobs as store_jobs

PAGE = Path(__file__).parents[2] / "pages" / "queue.py"


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=30)


def _stats(at: AppTest) -> str:
    """The live numbers of the jobs shown ("Epoch: **3** · ...")."""
    return "\n".join(m.value for m in at.markdown if "Latest run:" in m.value)


def _progress_texts(at: AppTest) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


def _running_job(path: Path, **progress) -> tuple[str, str]:
    job_id = store_jobs.enqueue_job({"name": "knees"}, path=path)
    job = store_jobs.claim_next_job("worker-1", path=path)
    if progress:
        store_jobs.update_progress(job_id, worker_id="worker-1", path=path, **progress)
    return job_id, job.study_id


def test_empty_queue_points_to_the_launch_page(path):
    at = _page().run()
    assert not at.exception
    assert "No jobs yet" in at.info[0].value


def test_running_job_shows_progress_run_epoch_amae_and_eta(path):
    job_id, study_id = _running_job(path)
    store_jobs.update_progress(
        job_id,
        worker_id="worker-1",
        runs_total=10,
        runs_done=4,
        current_run=f"{study_id}-KL-beta-s0-c1",
        current_epoch=3,
        latest_val_amae=0.4213,
        path=path,
    )
    at = _page().run()
    assert not at.exception
    assert _progress_texts(at) == ["4 / 10 runs finished"]
    stats = _stats(at)
    assert "Latest run: **KL · beta · seed 0 · config 1**" in stats
    assert "Epoch: **3**" in stats
    assert "Latest val AMAE: **0.421**" in stats
    assert "Time left: **estimating…**" not in stats and "Time left: **—**" not in stats
    assert any("running" in m.value for m in at.markdown)


def test_eta_says_estimating_before_the_first_run_finishes(path):
    _running_job(path, runs_total=6, runs_done=0, current_epoch=1)
    at = _page().run()
    assert "Time left: **estimating…**" in _stats(at)
    assert _progress_texts(at) == ["0 / 6 runs finished"]


def test_cancel_flips_a_queued_job_to_cancelled(path):
    job_id = store_jobs.enqueue_job({"name": "knees"}, path=path)
    at = _page().run()
    at.button(key=f"queue_cancel_{job_id}").click().run()
    assert not at.exception
    assert store_jobs.get_job(job_id, path=path).status == "cancelled"
    assert any("cancelled before it started" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == f"queue_cancel_{job_id}"]


def test_cancel_asks_a_running_job_to_stop_at_the_next_epoch(path):
    job_id, _ = _running_job(path, runs_total=4, runs_done=1)
    at = _page().run()
    at.button(key=f"queue_cancel_{job_id}").click().run()
    job = store_jobs.get_job(job_id, path=path)
    assert job.status == "running" and job.cancel_requested
    button = at.button(key=f"queue_cancel_{job_id}")
    assert button.label == "Stopping…" and button.disabled


def test_failed_job_shows_its_traceback(path):
    job_id, _ = _running_job(path)
    traceback = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom'
    store_jobs.fail_job(job_id, traceback, path=path)
    at = _page().run()
    assert not at.exception
    assert any("This job failed" in e.value for e in at.error)
    assert [c.value for c in at.code] == [traceback]
    assert not [b for b in at.button if b.key == f"queue_cancel_{job_id}"]


def test_opening_the_log_shows_the_job_log(path):
    job_id = store_jobs.enqueue_job({"name": "knees"}, path=path)
    store_jobs.log_job(job_id, "preparing dataset phantom", path=path)
    at = _page()
    at.session_state[f"queue_log_{job_id}"] = True
    at.run()
    assert not at.exception
    log = at.dataframe[0].value
    assert list(log["message"]) == ["queued study 'knees'", "preparing dataset phantom"]


def test_queued_jobs_without_a_worker_say_how_to_start_one(path):
    store_jobs.enqueue_job({"name": "knees"}, path=path)
    at = _page().run()
    assert any("python -m jobs worker" in e.value for e in at.error)


def test_finished_jobs_can_be_hidden(path):
    done = store_jobs.enqueue_job({"name": "old"}, path=path)
    store_jobs.request_cancel(done, path=path)
    waiting = store_jobs.enqueue_job({"name": "new"}, path=path)
    at = _page().run()
    assert any("Never started" in c.value for c in at.caption)
    at.toggle(key="queue_hide_finished").set_value(True).run()
    shown = " ".join(m.value for m in at.markdown)
    assert waiting in shown and done not in shown


def test_a_finished_job_opens_the_result_pages_on_its_study(finished_study, monkeypatch):
    monkeypatch.setenv("SOFTGRADE_HOME", str(finished_study.home))
    at = AppTest.from_file(str(PAGE), default_timeout=60)
    at.run()
    buttons = {b.label: b for b in at.button if b.key and b.key.startswith("queue_open_")}
    assert list(buttons) == [
        "Compare methods",
        "Search & learning curves",
        "KL × CPPD",
        "Attention",
    ]

    buttons["Attention"].click().run()

    assert at.session_state["requested_study"][0] == finished_study.study_id


def test_a_running_job_with_finished_runs_links_to_its_live_learning_curves(path):
    job_id, study_id = _running_job(path, runs_total=6, runs_done=2)
    _running_job(path, runs_total=6, runs_done=0)  # no run finished: no link yet
    at = _page().run()
    buttons = {b.key: b for b in at.button if b.key and b.key.startswith("queue_open_")}
    assert [b.label for b in buttons.values()] == ["Search & learning curves"]
    assert list(buttons) == [f"queue_open_pages/explorer.py_{job_id}"]

    buttons[f"queue_open_pages/explorer.py_{job_id}"].click().run()

    assert at.session_state["requested_study"][0] == study_id


def test_the_reference_job_card_says_compute_time_explains_its_runs_and_has_no_empty_log(path):
    from store.bundle import REFERENCE_STUDY, import_study

    import_study(REFERENCE_STUDY, path=path)
    at = _page().run()
    assert not at.exception
    captions = "\n".join(c.value for c in at.caption)
    assert "Ran 30 min 49 s of compute in 2 parts" in captions
    assert "spanning 12 h 32 min" in captions
    assert "= 1,868 runs; 1,800 are kept" in captions
    assert not [e for e in at.expander if e.label == "Log"]  # nothing was logged here


def test_a_results_button_asks_for_its_page_and_the_full_run_opens_it(path):
    """The button inside the auto-refreshing list only records the request; the page's
    full run (outside the fragment) switches, so no timed refresh can race the switch."""
    from store.bundle import REFERENCE_STUDY, import_study

    study_id = import_study(REFERENCE_STUDY, path=path).study_id
    at = _page().run()
    at.button(key=f"queue_open_pages/compare.py_import-{study_id}").click().run()
    assert at.session_state["requested_study"][0] == study_id
    assert "queue_open_page" not in at.session_state  # consumed by the full run's switch


def test_with_every_job_finished_the_list_says_nothing_of_refreshing(path):
    done = store_jobs.enqueue_job({"name": "old"}, path=path)
    store_jobs.request_cancel(done, path=path)
    at = _page().run()
    captions = " ".join(c.value for c in at.caption)
    assert "1 cancelled" in captions and "refreshes every" not in captions


def test_while_a_job_waits_the_list_says_how_often_it_refreshes(path):
    done = store_jobs.enqueue_job({"name": "old"}, path=path)
    store_jobs.request_cancel(done, path=path)
    store_jobs.enqueue_job({"name": "new"}, path=path)
    at = _page().run()
    captions = " ".join(c.value for c in at.caption)
    assert "1 queued · 1 cancelled · refreshes every 2 s" in captions
