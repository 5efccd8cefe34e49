"""The Jobs page offers only the result pages that can show a study (issue 39: a KL x CPPD
link on KL-only studies, an Attention link on imported results), and a queued job behind a
busy worker says so instead of "waiting for a worker"."""

from __future__ import annotations

import json

from pages.present.job_view import QUEUED_BEHIND, progress, result_pages_for
from tests.app.test_job_view import _job

PAGES = (
    ("pages/compare.py", "Compare methods", ""),
    ("pages/relationship.py", "KL × CPPD", ""),
    ("pages/attention.py", "Attention", ""),
)


def _labels(spec: object) -> list[str]:
    return [label for _, label, _ in result_pages_for(PAGES, spec)]


def test_a_kl_only_study_gets_no_kl_x_cppd_link():
    assert _labels(json.dumps({"tasks": ["KL"]})) == ["Compare methods", "Attention"]
    assert _labels({"tasks": ["KL", "CPPD"]}) == ["Compare methods", "KL × CPPD", "Attention"]


def test_imported_results_get_no_attention_link():
    spec = {"tasks": ["KL", "CPPD"], "imported_results": {"file": "x.csv"}}
    assert _labels(spec) == ["Compare methods", "KL × CPPD"]


def test_a_spec_that_cannot_be_read_keeps_every_link():
    assert _labels("not json") == [label for _, label, _ in PAGES]


def test_a_queued_job_behind_a_busy_worker_says_it_waits_for_that_worker():
    queued = _job(status="queued")
    assert progress(queued, workers_busy=True) == (0.0, QUEUED_BEHIND)
    assert progress(queued) == (0.0, "waiting for a worker to pick it up")
