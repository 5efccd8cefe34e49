"""Every command that writes a file a person names (`export`, `stats -o`, `report -o`,
`export-demo`, `backup`) refuses an existing file without ``--force`` and a link always, in
one line, leaving the file (and what a link points at) as it was."""

from __future__ import annotations

import json

import pytest

from jobs.cli.main import main
from jobs.services.demo_bundle import export_demo
from store.db import connect, default_store_path, init_schema
from store.outputs import OutputRefused
from tests.helpers.synthetic_study import write_synthetic_study
from tests.jobs.services.test_results_io import imported_study, per_seed_rows


@pytest.fixture
def synthetic(home):
    store = default_store_path()
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=2, n_patients=20)
    with connect(store) as con:
        spec = json.loads(con.execute("SELECT spec FROM studies").fetchone()[0])
        spec |= {"tasks": ["KL", "CPPD"], "budget": 1}
        con.execute("UPDATE studies SET spec = ?", [json.dumps(spec)])
    return store, study


def _one_line_error(capsys, *words: str) -> None:
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith("error: "), said
    assert all(w in said for w in words), said


def test_export_to_a_link_at_the_store_leaves_the_store_whole(synthetic, tmp_path, capsys):
    store, study = synthetic
    before = store.read_bytes()
    link = tmp_path / "store.zip"
    link.symlink_to(store)
    for extra in ([], ["--force"]):
        assert main(["export", study, "-o", str(link), *extra]) == 2
        _one_line_error(capsys, "symbolic link")
    assert store.read_bytes() == before and link.is_symlink()


def test_export_replaces_a_bundle_only_with_force(synthetic, tmp_path, capsys):
    _, study = synthetic
    bundle = tmp_path / "study.zip"
    bundle.write_bytes(b"an older bundle")
    assert main(["export", study, "-o", str(bundle)]) == 2
    _one_line_error(capsys, "exists already", "--force")
    assert bundle.read_bytes() == b"an older bundle"
    assert main(["export", study, "-o", str(bundle), "--force"]) == 0
    assert bundle.read_bytes()[:2] == b"PK"
    assert not list(tmp_path.glob("*partial*"))  # no partial left


def test_stats_and_report_refuse_an_existing_file_and_a_link(home, tmp_path, capsys):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    study = imported_study(capsys, str(csv))
    table, report = tmp_path / "paired.csv", tmp_path / "report.html"
    table.write_text("mine")
    report.write_text("mine")
    assert main(["stats", study, "-o", str(table), "--bootstrap", "0"]) == 2
    _one_line_error(capsys, "exists already", "--force")
    assert main(["report", study, "-o", str(report)]) == 2
    _one_line_error(capsys, "exists already", "--force")
    assert table.read_text() == report.read_text() == "mine"
    assert main(["stats", study, "-o", str(table), "--bootstrap", "0", "--force"]) == 0
    assert table.read_text().startswith("# ")  # the study card heads the new table
    link = tmp_path / "linked.html"
    link.symlink_to(csv)
    assert main(["report", study, "-o", str(link), "--force"]) == 2
    _one_line_error(capsys, "symbolic link")
    assert csv.read_text().startswith("task,")


def test_backup_refuses_a_link_and_replaces_a_file_only_with_force(home, tmp_path, capsys):
    init_schema(default_store_path())
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "copy.duckdb"
    link.symlink_to(victim)
    assert main(["backup", "-o", str(link), "--force"]) == 2
    _one_line_error(capsys, "symbolic link")
    assert victim.read_text() == "keep"
    old = tmp_path / "old.duckdb"
    old.write_text("an old backup")
    assert main(["backup", "-o", str(old), "--force"]) == 0
    with connect(old, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM meta").fetchone()[0] >= 1


def test_export_demo_refuses_an_existing_file_before_any_work(store, tmp_path):
    out = tmp_path / "demo.zip"
    out.write_bytes(b"the demo we show on Monday")
    with pytest.raises(OutputRefused, match="exists already"):
        export_demo("study-not-even-read", out, home=tmp_path, path=store)
    assert out.read_bytes() == b"the demo we show on Monday"
