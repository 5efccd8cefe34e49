"""`python -m jobs import-study FILE`: a study bundle loaded into the store from the CLI."""

from __future__ import annotations

import pytest

from jobs.cli.main import main
from store import runs as store_runs
from store.bundle import export_study
from store.db import default_store_path


@pytest.fixture(scope="module")
def bundle(finished_study, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli-bundle") / "reference.zip"
    name = "Reference: paper protocol on the phantom (3 seeds)"
    return export_study(
        finished_study.study_id,
        out,
        card={"date": "2026-11-26"},
        name=name,
        path=finished_study.store,
    )


@pytest.mark.slow
def test_import_study_loads_the_bundle_once(home, bundle, capsys):
    assert main(["import-study", str(bundle)]) == 0
    said = capsys.readouterr().out
    assert "imported “Reference: paper protocol on the phantom (3 seeds)”" in said
    assert "3 seeds" in said
    studies = store_runs.list_studies(path=default_store_path())
    assert studies["name"].tolist() == ["Reference: paper protocol on the phantom (3 seeds)"]
    assert main(["import-study", str(bundle)]) == 0
    assert "already in" in capsys.readouterr().out
    assert len(store_runs.list_studies(path=default_store_path())) == 1


def test_import_study_refuses_a_file_that_is_not_a_bundle(home, tmp_path, capsys):
    junk = tmp_path / "junk.zip"
    junk.write_text("not a zip")
    assert main(["import-study", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a zip file" in err
    assert "Traceback" not in err
