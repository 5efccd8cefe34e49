"""The same results file imported twice is refused naming the study it already is, under
any file name, unless ``--again`` asks for a second copy (issue 39: a second study was made
silently)."""

from __future__ import annotations

import shutil

from jobs.cli.main import main
from store.db import connect, default_store_path
from tests.jobs.services.test_results_io import imported_study, per_seed_rows


def _studies() -> int:
    with connect(default_store_path(), read_only=True) as con:
        return con.execute("SELECT count(*) FROM studies").fetchone()[0]


def test_the_same_file_twice_is_refused_naming_its_study_and_again_makes_a_copy(
    home, tmp_path, capsys
):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    study = imported_study(capsys, str(csv))
    renamed = tmp_path / "renamed.csv"
    shutil.copyfile(csv, renamed)
    for file in (csv, renamed):
        assert main(["import-results", str(file)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and study in err and "nothing was stored" in err, err
        assert "--again" in err
    assert _studies() == 1
    second = imported_study(capsys, str(csv), "--again")
    assert second != study and _studies() == 2


def test_another_file_is_imported_as_before(home, tmp_path, capsys):
    first, other = tmp_path / "a.csv", tmp_path / "b.csv"
    per_seed_rows().to_csv(first, index=False)
    per_seed_rows(seeds=4).to_csv(other, index=False)
    assert imported_study(capsys, str(first)) != imported_study(capsys, str(other))
