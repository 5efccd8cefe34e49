"""`softgrade submit/run --pruner NAME`: the study file's pruner replaced from the command
line (its other search settings kept), recorded on the stored study; a bad name is one
message listing the pruners `engine.pruning` defines."""

from __future__ import annotations

import yaml

from engine.pruning import PRUNERS
from jobs.cli.main import build_parser
from store import jobs as store_jobs
from store import studies as store_studies
from tests.helpers.cli import run_cli
from tests.helpers.studies import tiny_study


def _study_file(home, **overrides):
    path = home / "study.yaml"
    path.write_text(yaml.safe_dump(tiny_study(**overrides), sort_keys=False))
    return path


def _submitted(home):
    """The one queued job's stored spec and its study's card."""
    store = home / "softgrade.duckdb"
    (job_id,) = store_jobs.list_jobs(path=store)["job_id"]
    job = store_jobs.get_job(job_id, path=store)
    return job.spec, store_studies.study_card(job.study_id, path=store)


def test_submit_with_pruner_records_a_pruned_search_on_the_study(tmp_path):
    done = run_cli(tmp_path, "submit", str(_study_file(tmp_path)), "--pruner", "asha")
    assert done.returncode == 0, done.stderr
    spec, card = _submitted(tmp_path)
    assert spec["search"] == {"pruner": "asha"}
    assert card["search"].startswith("pruned with asha")


def test_the_pruner_flag_overrides_the_files_pruner_and_keeps_its_other_settings(tmp_path):
    study = _study_file(tmp_path, search={"pruner": "median", "min_epochs": 2})
    done = run_cli(tmp_path, "submit", str(study), "--pruner", "hyperband")
    assert done.returncode == 0, done.stderr
    spec, card = _submitted(tmp_path)
    assert spec["search"] == {"pruner": "hyperband", "min_epochs": 2}
    assert card["search"].startswith("pruned with hyperband")


def test_pruner_none_submits_the_full_search_of_a_pruned_file(tmp_path):
    study = _study_file(tmp_path, search={"pruner": "asha"})
    done = run_cli(tmp_path, "submit", str(study), "--pruner", "none")
    assert done.returncode == 0, done.stderr
    spec, card = _submitted(tmp_path)
    # The full search is stored as before pruning existed: no search key, no card line.
    assert "search" not in spec and "search" not in card


def test_run_takes_the_same_pruner_option():
    args = build_parser().parse_args(["run", "study.yaml", "--pruner", "median"])
    assert args.pruner == "median"
    assert build_parser().parse_args(["run", "study.yaml"]).pruner is None


def test_a_bad_pruner_is_one_message_listing_the_allowed_pruners(tmp_path):
    study = str(_study_file(tmp_path))
    for command in ("submit", "run"):
        done = run_cli(tmp_path, command, study, "--pruner", "optuna")
        assert done.returncode == 2
        assert "--pruner: invalid choice: 'optuna'" in done.stderr
        assert all(name in done.stderr for name in PRUNERS)
        assert "Traceback" not in done.stderr
    assert (
        not (tmp_path / "softgrade.duckdb").exists()
        or store_jobs.list_jobs(path=tmp_path / "softgrade.duckdb").empty
    )
