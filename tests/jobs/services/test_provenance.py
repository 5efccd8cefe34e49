"""Provenance: code and library versions of the worker, kept with each study it trains."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from engine.config import StudySpec
from jobs.services import provenance
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store import studies
from store.db import init_schema
from store.studies import ENVIRONMENT_FIELDS
from tests.helpers.studies import tiny_study

REPO = Path(__file__).resolve().parents[3]


def test_code_version_of_a_git_checkout_is_its_commit_and_dirty_flag():
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    version = provenance.code_version(REPO)
    assert version["git_commit"] == head and isinstance(version["git_dirty"], bool)
    assert version["code_version"] == "0.1.0"


def test_code_version_outside_git_is_the_package_version(tmp_path):
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    assert provenance.code_version(tmp_path) == {
        "code_version": "0.1.0",
        "git_commit": None,
        "git_dirty": None,
    }


def test_dirty_flag_follows_changes_to_tracked_files(tmp_path):
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    (tmp_path / "untracked.txt").write_text("data\n")
    assert provenance.code_version(tmp_path)["git_dirty"] is False
    (tmp_path / "a.py").write_text("x = 2\n")
    assert provenance.code_version(tmp_path)["git_dirty"] is True


def test_worker_environment_has_the_fields_the_store_keeps():
    env = provenance.worker_environment(["cpu"])
    assert set(env) == set(ENVIRONMENT_FIELDS)
    assert env["torch"] == torch.__version__ and env["devices"] == ["cpu"]
    assert env["gpu_names"] is None and env["dlordinal"] and env["python"].startswith("3.")


def test_cudnn_versions_read_as_text():
    assert provenance._cudnn_text(91002) == "9.10.2"
    assert provenance._cudnn_text(8902) == "8.9.2"
    assert provenance._cudnn_text(None) is None


def test_card_renders_as_one_comment_line_per_field():
    card = {"study": "knees\nv2", "launched by": "alice"}
    assert provenance.card_comments(card) == "# study: knees v2\n# launched by: alice\n"
    assert provenance.card_comments(card, prefix="% ").startswith("% study: knees v2\n")
    assert provenance.card_text({"study": "knees", "launched by": "alice"}) == (
        "study        knees\nlaunched by  alice"
    )


@pytest.mark.slow
def test_worker_records_its_environment_with_the_study_it_trains(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(tasks=["CPPD"], methods=["nominal"], max_epochs=1))
    job_id = store_jobs.enqueue_job(spec.to_dict(), launched_by="alice", path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded"
    card = studies.study_card(job.study_id, path=store)
    assert card["launched by"] == "alice" and card["torch"] == torch.__version__
    assert card["devices"] == "cpu" and card["run devices"] == "cpu x1"
    assert card["code"].startswith("git ")
    assert card["executor"] == "inline" and card["threads per slot"].startswith("1 CPU thread ")
    assert card["search"].startswith("full")
