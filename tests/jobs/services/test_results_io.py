"""Results in and out: `softgrade import-results` (a per-seed file from another tool becomes
a study with statistics and a report), its refusals (one line naming row and column, nothing
stored), `stats -o` by extension, `report --latex-dir`, and `softgrade export` round-tripping
through `import-study`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from engine.analysis.results_file import ResultsFileError, check_results
from jobs.cli.main import main
from jobs.services import study_analysis
from store import runs as store_runs
from store.db import connect, default_store_path, init_schema
from tests.helpers.synthetic_study import write_synthetic_study

METHODS = {"nominal": 0.60, "corn": 0.50, "ours": 0.45}


def per_seed_rows(*, sizes: bool = True, seeds: int = 5) -> pd.DataFrame:
    """What another tool writes: one metric value per task, method, seed and metric."""
    rng = np.random.default_rng(1)
    rows = []
    for task in ("KL", "CPPD"):
        for seed in range(seeds):
            for method, error in METHODS.items():
                for metric, value in (("amae", error), ("QWK", 1 - error), ("mae", error)):
                    row = {"task": task, "method": method, "seed": seed, "metric": metric}
                    row["value"] = round(value + rng.normal(0, 0.02), 4)
                    if sizes:
                        row |= {"n_train": 700, "n_test": 300}
                    rows.append(row)
    return pd.DataFrame(rows)


def stored_counts() -> tuple[int, int, int]:
    with connect(default_store_path(), read_only=True) as con:
        return tuple(
            con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("studies", "runs", "seed_metrics")
        )


def imported_study(capsys: pytest.CaptureFixture, file: str, *extra: str) -> str:
    assert main(["import-results", file, *extra]) == 0
    said = capsys.readouterr().out
    return said.split("(", 1)[1].split(")", 1)[0]


def test_per_seed_csv_from_another_tool_becomes_a_study_with_stats_and_report(
    home, tmp_path, capsys
):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    study = imported_study(capsys, str(csv), "--name", "other tool")
    assert study.startswith("study-")
    scores = study_analysis.per_run(study, path=default_store_path())
    assert set(scores["method"]) == set(METHODS) and len(scores) == 2 * 3 * 5
    assert main(["stats", study, "--metric", "AMAE", "--bootstrap", "0"]) == 0
    printed = capsys.readouterr().out
    for method in METHODS:
        assert method in printed
    out = tmp_path / "paired.csv"
    assert main(["stats", study, "-o", str(out), "--bootstrap", "50"]) == 0
    table = pd.read_csv(out, comment="#")
    amae = table[(table["metric"] == "amae") & (table["task"] == "KL")]
    assert len(amae) == 3 and amae["ci_low"].notna().all()  # sizes given: corrected CI
    assert "# provenance: imported: no training provenance" in out.read_text()
    report = tmp_path / "report.html"
    assert main(["report", study, "-o", str(report)]) == 0
    html = report.read_text()
    assert "imported: no training provenance" in html
    assert "ours" in html.lower() and "corn" in html.lower()
    assert "Paired comparisons" in html


def test_per_seed_file_without_sizes_says_which_intervals_it_cannot_give(home, tmp_path, capsys):
    parquet = tmp_path / "no_sizes.parquet"
    per_seed_rows(sizes=False).to_parquet(parquet)
    study = imported_study(capsys, str(parquet))
    assert main(["stats", study, "--metric", "amae", "--bootstrap", "0"]) == 0
    printed = capsys.readouterr().out
    assert "no split sizes for CPPD, KL" in printed and "n_train and n_test" in printed
    table = study_analysis.paired_table(study, n_boot=0, path=default_store_path())
    assert table["ci_low"].isna().all() and table["p_corrected"].isna().all()
    assert table["p_wilcoxon"].notna().all() and table["d_z"].notna().all()
    report = tmp_path / "report.html"
    assert main(["report", study, "-o", str(report)]) == 0
    html = report.read_text()
    assert "No split sizes for CPPD, KL" in html
    assert "primary comparisons cannot be tested" in html and "Holm-adjusted p = )" not in html


def test_per_film_predictions_give_confusion_and_probability_views(home, tmp_path, capsys):
    rng = np.random.default_rng(2)
    rows = []
    for seed in range(3):
        for method in ("nominal", "ours"):
            for film in range(30):
                grade = film % 4
                probs = rng.dirichlet(np.ones(4) + 3 * (np.arange(4) == grade))
                row = {"task": "CPPD", "method": method, "seed": seed, "film": f"f{film}"}
                row |= {"grade": grade, **{f"p{k}": probs[k] for k in range(4)}}
                rows.append(row | {"n_train": 70, "n_test": 30})
    csv = tmp_path / "films.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    study = imported_study(capsys, str(csv))
    store = default_store_path()
    assert len(study_analysis.per_run(study, path=store)) == 2 * 3
    assert len(study_analysis.probability_paired_table(study, path=store))
    table = study_analysis.paired_table(study, n_boot=20, path=store)
    assert table["boot_ci_low"].notna().all() and table["ci_low"].notna().all()


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda f: f.rename(columns={"metric": "measure"}), "column 'metric' is missing"),
        (lambda f: f.assign(value=f["value"].astype(object)).pipe(_set, 4, "value", "n/a"),
         "row 5 (line 6 of the CSV), column 'value'"),
        (lambda f: _set(f, 7, "metric", "f1"), "row 8 (line 9 of the CSV), column 'metric'"),
        (lambda f: _set(f, 2, "method", "ours-v2"), "row 3 (line 4 of the CSV), column 'method'"),
        (lambda f: _set(f, 10, "n_test", 299), "row 11 (line 12 of the CSV), column 'n_test'"),
    ],
)  # fmt: skip
def test_a_bad_metrics_file_is_refused_naming_row_and_column_and_nothing_is_stored(
    home, tmp_path, capsys, change, where
):
    init_schema(default_store_path())
    before = stored_counts()
    csv = tmp_path / "bad.csv"
    change(per_seed_rows()).to_csv(csv, index=False)
    assert main(["import-results", str(csv)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and where in said and "nothing was stored" in said
    assert "Traceback" not in said
    assert stored_counts() == before


def _set(frame: pd.DataFrame, row: int, column: str, value: object) -> pd.DataFrame:
    frame = frame.copy()
    frame[column] = frame[column].astype(object)
    frame.loc[row, column] = value
    return frame


def _films(**overrides: object) -> pd.DataFrame:
    rows = [
        {"task": "KL", "method": "ours", "seed": 0, "film": f"f{i}", "grade": i % 5,
         "p0": 0.2, "p1": 0.2, "p2": 0.2, "p3": 0.2, "p4": 0.2}
        for i in range(6)
    ]  # fmt: skip
    frame = pd.DataFrame(rows).astype(str)
    for key, value in overrides.items():
        column, row = key.rsplit("_", 1)
        frame.loc[int(row), column] = value
    return frame


def test_a_grade_out_of_range_is_refused_naming_row_and_column():
    with pytest.raises(
        ResultsFileError, match=r"row 4 \(line 5 of the CSV\), column 'grade'.*0 to 4"
    ):
        check_results(_films(grade_3="5"))


def test_probabilities_not_summing_to_one_are_refused_naming_the_row():
    with pytest.raises(
        ResultsFileError, match=r"row 2 \(line 3 of the CSV\), columns p0\.\.p4.*sum"
    ):
        check_results(_films(p4_1="0.5"))


def test_a_cppd_row_with_a_fifth_probability_is_refused_naming_the_column():
    frame = _films(task_0="CPPD", grade_0="1", p3_0="0.4", p4_0="0.2")
    with pytest.raises(ResultsFileError, match=r"row 1 .*column 'p4'.*leave p4 blank"):
        check_results(frame)


def test_a_method_name_with_a_dash_is_refused_with_the_name_to_use():
    with pytest.raises(ResultsFileError, match="'ours_v2'"):
        check_results(_films(method_0="ours-v2"))


def test_stats_writes_parquet_and_latex_by_extension_and_refuses_others(home, tmp_path, capsys):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    study = imported_study(capsys, str(csv))
    parquet, tex = tmp_path / "paired.parquet", tmp_path / "paired.tex"
    assert main(["stats", study, "-o", str(parquet), "--bootstrap", "0"]) == 0
    written = pq.read_table(parquet)
    assert written.num_rows == 2 * 3 * 3  # tasks × pairs × the file's three metrics
    cards = json.loads(written.schema.metadata[b"softgrade.study_cards"])
    assert cards[0]["study id"] == study
    assert main(["stats", study, "-o", str(tex), "--bootstrap", "0"]) == 0
    latex = tex.read_text()
    assert latex.startswith("% study: other_tool")
    assert latex.count(r"\begin{table}") == 3 and r"\label{tab:paired-amae}" in latex
    capsys.readouterr()
    assert main(["stats", study, "-o", str(tmp_path / "paired.xlsx")]) == 2
    said = capsys.readouterr().err
    assert ".csv, .parquet, .tex" in said and said.count("\n") == 1


def test_report_writes_its_tables_as_latex_files(home, tmp_path, capsys):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    study = imported_study(capsys, str(csv))
    folder = tmp_path / "tables"
    out = tmp_path / "report.html"
    assert main(["report", study, "-o", str(out), "--latex-dir", str(folder)]) == 0
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        f"{study}-{key}.tex" for key in ("table4", "primary-endpoint", "paired")
    )  # no bootstrap table: per-seed metrics have no films to resample
    table4 = (folder / f"{study}-table4.tex").read_text()
    assert r"\begin{tabular}" in table4 and "ours" in table4


def test_export_round_trips_a_study_through_import_study(home, tmp_path, monkeypatch, capsys):
    store = default_store_path()
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=2, n_patients=20)
    with connect(store) as con:  # the worker's spec names tasks and budget; the helper's not
        spec = json.loads(con.execute("SELECT spec FROM studies").fetchone()[0])
        spec |= {"tasks": ["KL", "CPPD"], "budget": 1}
        con.execute("UPDATE studies SET spec = ?", [json.dumps(spec)])
    bundle = tmp_path / "study.zip"
    assert main(["export", study, "-o", str(bundle)]) == 0
    assert "2 seeds" in capsys.readouterr().out
    before = study_analysis.per_run(study, path=store).sort_values("run_id")
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.setenv("SOFTGRADE_HOME", str(other))
    assert main(["import-study", str(bundle)]) == 0
    after = study_analysis.per_run(study, path=default_store_path()).sort_values("run_id")
    assert default_store_path() != store
    columns = ["run_id", "task", "method", "seed", "amae", "qwk"]
    pd.testing.assert_frame_equal(
        before[columns].reset_index(drop=True), after[columns].reset_index(drop=True)
    )
    assert len(store_runs.list_runs([study], path=default_store_path())) == len(
        store_runs.list_runs([study], path=store)
    )


def test_export_refuses_another_extension_and_an_unknown_study(home, tmp_path, capsys):
    init_schema(default_store_path())
    assert main(["export", "study-x", "-o", str(tmp_path / "s.tar")]) == 2
    assert ".zip" in capsys.readouterr().err
    assert main(["export", "study-x", "-o", str(tmp_path / "s.zip")]) == 2
    assert "no study 'study-x'" in capsys.readouterr().err


def test_deleting_an_imported_study_deletes_its_metric_values_and_sizes(home, tmp_path, capsys):
    from store.studies import delete_study

    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    study = imported_study(capsys, str(csv))
    assert stored_counts() == (1, 30, 90)
    deleted = delete_study(study, confirm_name="other_tool", home=home, path=default_store_path())
    assert deleted.rows["seed_metrics"] == 90 and deleted.rows["seed_split_sizes"] == 10
    assert stored_counts() == (0, 0, 0)


def test_the_export_the_robustness_tab_names_ships_every_runs_test_predictions(
    home, tmp_path, monkeypatch, capsys
):
    # The Robustness tab tells a study imported without them how to get every run's test
    # predictions: run that command as written, import the bundle, and nothing is lacking.
    import re
    import shlex

    from pages.present.inference_tables import budget_unavailable_sentence
    from store import analysis as store_analysis

    store = default_store_path()
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=1, n_patients=20,
                                  configs={"nominal": 1, "binomial": 2, "beta": 3})  # fmt: skip
    with connect(store) as con:  # the worker's spec names tasks and budget; the helper's not
        spec = json.loads(con.execute("SELECT spec FROM studies").fetchone()[0])
        spec |= {"tasks": ["KL", "CPPD"], "budget": 1}
        con.execute("UPDATE studies SET spec = ?", [json.dumps(spec)])
    told = budget_unavailable_sentence(6, 12)
    assert "export_study(" not in told
    (command,) = re.findall(r"`(softgrade export [^`]+)`", told)
    args = shlex.split(command)[1:]
    args = [study if a == "STUDY_ID" else str(tmp_path / a) if a.endswith(".zip") else a
            for a in args]  # fmt: skip
    plain = tmp_path / "plain.zip"
    assert main(["export", study, "-o", str(plain)]) == 0
    assert main(args) == 0
    capsys.readouterr()
    for bundle, lacking in ((plain, 6), (tmp_path / "study.zip", 0)):
        other = tmp_path / f"elsewhere-{bundle.stem}"
        other.mkdir()
        monkeypatch.setenv("SOFTGRADE_HOME", str(other))
        assert main(["import-study", str(bundle)]) == 0
        found = store_analysis.runs_lacking_test_predictions(study, path=default_store_path())
        assert found == lacking, bundle


def test_a_split_other_than_test_or_val_is_refused_naming_row_and_column():
    frame = _films().assign(split="test")
    with pytest.raises(ResultsFileError, match=r"row 3 \(line 4 of the CSV\), column 'split'"):
        check_results(_set(frame, 2, "split", "train"))


def test_a_search_with_validation_films_only_is_refused():
    frame = _films().assign(split="val")
    with pytest.raises(ResultsFileError, match="validation films but no test film"):
        check_results(frame)
    read = check_results(_set(frame, 0, "split", "TEST"))
    assert list(read.predictions["split"]) == ["test"] + ["val"] * 5


def test_set_size_values_a_per_seed_file_gives_are_compared_as_given(home, tmp_path, capsys):
    rows = per_seed_rows()
    given = rows[rows["metric"] == "mae"].assign(metric="set_size")
    given["value"] = given["value"] + 1  # a set holds at least one grade
    csv = tmp_path / "other_tool.csv"
    pd.concat([rows, given]).to_csv(csv, index=False)
    study = imported_study(capsys, str(csv))
    out = tmp_path / "set_size.csv"
    assert main(["stats", study, "--metric", "set_size", "-o", str(out)]) == 0
    table = pd.read_csv(out, comment="#")
    first = table.iloc[0]
    values = given[given["task"] == first["task"]].pivot_table(
        index="seed", columns="method", values="value"
    )
    expected = (values[first["method_a"]] - values[first["method_b"]]).mean()
    assert first["mean_diff"] == pytest.approx(expected)
