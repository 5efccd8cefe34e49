"""`softgrade sets`: one row per task, method, seed and score under the study card; one line
for bad input; an existing or linked output left alone."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.analysis import conformal
from jobs.cli.main import main
from store.db import init_schema
from tests.helpers.synthetic_study import write_synthetic_study


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> tuple[str, str]:
    """One synthetic study for the module (writing it takes seconds)."""
    home = tmp_path_factory.mktemp("home")
    store = home / "softgrade.duckdb"
    init_schema(store)
    return str(home), write_synthetic_study(store, n_seeds=2, n_patients=30)


@pytest.fixture
def study(home, monkeypatch) -> str:
    monkeypatch.setenv("SOFTGRADE_HOME", home[0])
    return home[1]


def test_sets_writes_one_row_per_task_method_seed_and_score(study, tmp_path, capsys):
    out = tmp_path / "sets.csv"
    assert main(["sets", study, "--coverage", "0.8", "-o", str(out)]) == 0
    text = out.read_text()
    assert f"# study id: {study}" in text
    table = pd.read_csv(out, comment="#")
    assert len(table) == 2 * 3 * 2 * len(conformal.SCORES)  # tasks × methods × seeds × scores
    assert {"coverage", "mean_size", "singleton_share", "coverage_g0", "coverage_g4"} <= set(
        table.columns
    )
    assert (table["target"] == 0.8).all()
    assert table["coverage"].between(0, 1).all()
    assert table.loc[table["task"] == "CPPD", "coverage_g4"].isna().all()  # CPPD has 4 grades


def test_sets_prints_the_mean_over_seeds_for_one_score(study, capsys):
    assert main(["sets", study, "--score", "ORDINAL", "--per-grade"]) == 0
    printed = capsys.readouterr().out
    assert "ordinal" in printed and "lac" not in printed
    assert "per true grade" in printed


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--coverage", "1.5"], "between 0 and 1"),
        (["--score", "nope"], "unknown score"),
        (["-o", "sets.txt"], ".csv"),
    ],
)
def test_bad_input_is_one_line_without_a_traceback(study, capsys, args, says):
    assert main(["sets", study, *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_unknown_study_is_one_line(study, capsys):
    assert main(["sets", "no-such-study"]) == 2
    assert "no study 'no-such-study'" in capsys.readouterr().err


def test_an_existing_file_is_kept_unless_force_and_a_link_never_written(study, tmp_path, capsys):
    out = tmp_path / "sets.csv"
    out.write_text("mine")
    assert main(["sets", study, "-o", str(out)]) == 2
    assert out.read_text() == "mine"
    assert main(["sets", study, "-o", str(out), "--force"]) == 0
    assert out.read_text() != "mine"
    target = tmp_path / "elsewhere.csv"
    target.write_text("theirs")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert main(["sets", study, "-o", str(link), "--force"]) == 2
    assert target.read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
