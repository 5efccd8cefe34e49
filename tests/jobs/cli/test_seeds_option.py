"""`softgrade submit/run --seeds`: a count, a list or a factorial design of splits × inits in
place of the study file's seeds; a bad value is one line naming what is allowed."""

from __future__ import annotations

import yaml

from store import jobs as store_jobs
from tests.helpers.cli import run_cli
from tests.helpers.studies import tiny_study


def _study_file(home):
    path = home / "study.yaml"
    path.write_text(yaml.safe_dump(tiny_study(seeds=[0]), sort_keys=False))
    return path


def test_submit_with_seeds_splits_x_inits_queues_a_factorial_study(tmp_path):
    done = run_cli(tmp_path, "submit", str(_study_file(tmp_path)), "--seeds", "4x2")
    assert done.returncode == 0, done.stderr
    (job_id,) = store_jobs.list_jobs(path=tmp_path / "softgrade.duckdb")["job_id"]
    spec = store_jobs.get_job(job_id, path=tmp_path / "softgrade.duckdb").spec
    assert spec["seed_design"] == {"splits": 4, "inits": 2} and spec["seeds"] == list(range(8))


def test_a_bad_seeds_option_is_one_line_naming_what_is_allowed(tmp_path):
    study = str(_study_file(tmp_path))
    for value, says in (
        ("ten", "--seeds 'ten' is not allowed"),
        ("1x2", "seeds.splits: 1 must be a whole number >= 2"),
    ):
        done = run_cli(tmp_path, "submit", study, "--seeds", value)
        assert done.returncode == 2
        assert says in done.stderr and "Traceback" not in done.stderr
        assert "10x2" in done.stderr or "{splits: 10, inits: 2}" in done.stderr
    zero = run_cli(tmp_path, "submit", study, "--seeds", "0")
    assert zero.returncode == 2 and "seeds: 0 must be a whole number >= 1" in zero.stderr
    assert (
        not (tmp_path / "softgrade.duckdb").exists()
        or store_jobs.list_jobs(path=tmp_path / "softgrade.duckdb").empty
    )
