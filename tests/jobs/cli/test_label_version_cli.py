"""`softgrade submit` of a study naming a label version: the version's labels are queued and
`softgrade study` says which; an unknown version is one line listing the versions."""

from __future__ import annotations

import yaml

from store import jobs as store_jobs
from store import label_versions as store_versions
from tests.helpers.cli import run_cli
from tests.helpers.label_versions import folder_imported_twice
from tests.helpers.studies import tiny_study


def test_submit_queues_the_named_version_and_the_card_says_which(home):
    folder = folder_imported_twice(home)
    store = home / "softgrade.duckdb"
    study = home / "study.yaml"
    dataset = {"kind": "folder", "path": str(folder), "label_version": "original"}
    study.write_text(yaml.safe_dump(tiny_study(dataset=dataset, tasks=["KL"])))
    done = run_cli(home, "submit", str(study))
    assert done.returncode == 0, done.stderr
    job = store_jobs.list_jobs(path=store).iloc[0]
    v1 = store_versions.label_versions(folder, path=store)[0]
    card = run_cli(home, "study", job["study_id"])
    assert card.returncode == 0, card.stderr
    assert f"label version  {v1.describe()}" in card.stdout.splitlines()

    study.write_text(yaml.safe_dump(tiny_study(dataset=dict(dataset, label_version=3))))
    refused = run_cli(home, "submit", str(study))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "no label version 3" in refused.stderr and "Traceback" not in refused.stderr
    assert len(store_jobs.list_jobs(path=store)) == 1  # nothing queued
