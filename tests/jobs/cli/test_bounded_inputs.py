"""Inputs are bounded before they are read (issue 39): a Parquet file's rows from its
metadata before any column is decoded, a mapping file's size and its YAML aliases before it
is composed, quoted values cut short, and MLflow URIs limited to what the docs allow (no
arbitrary folder written to, credentials never printed, an unreachable server given up on
quickly). Every refusal is one line, and nothing is stored."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from engine.analysis import results_file
from engine.analysis.results_file import ResultsFileError, read_results
from jobs.cli.main import main
from store.db import connect, default_store_path, init_schema
from tests.jobs.services.test_results_io import per_seed_rows


def _studies() -> int:
    with connect(default_store_path(), read_only=True) as con:
        return con.execute("SELECT count(*) FROM studies").fetchone()[0]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_parquet_rows_are_counted_from_the_metadata_before_decoding(tmp_path, monkeypatch):
    file = tmp_path / "results.parquet"
    per_seed_rows().to_parquet(file)
    monkeypatch.setattr(results_file, "MAX_ROWS", 10)

    def never(*args, **kwargs):
        raise AssertionError("the file was decoded before its size was checked")

    monkeypatch.setattr(pd, "read_parquet", never)
    with pytest.raises(ResultsFileError, match=r"holds 90 rows .*metadata.*at most 10"):
        read_results(file)


def test_a_parquet_file_decoding_past_the_byte_cap_is_refused(tmp_path, monkeypatch):
    file = tmp_path / "results.parquet"
    per_seed_rows().to_parquet(file)
    monkeypatch.setattr(results_file, "MAX_DECODED_BYTES", 100)
    with pytest.raises(ResultsFileError, match="decodes to"):
        read_results(file)


def test_import_results_of_a_too_large_parquet_is_one_line_and_stores_nothing(
    home, tmp_path, monkeypatch, capsys
):
    init_schema(default_store_path())
    file = tmp_path / "results.parquet"
    per_seed_rows().to_parquet(file)
    monkeypatch.setattr(results_file, "MAX_ROWS", 10)
    assert main(["import-results", str(file)]) == 2
    assert "nothing was stored" in _one_line(capsys)
    assert _studies() == 0


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("bcdefgh", "cdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (BOMB, "YAML alias"),
        ("task: " + "x" * (70 * 1024), "larger than 64 KiB"),
        ("task: [" + ", ".join(["dataset"] * 50) + "]", "not a list"),
    ],
)
def test_a_mapping_file_is_bounded_before_it_is_composed(home, tmp_path, capsys, content, said):
    """The alias bomb expands to 9**9 items; refused at its first alias, at once."""
    init_schema(default_store_path())
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(content)
    started = time.monotonic()
    code = main(
        ["import-results", "--mlflow-uri", (tmp_path / "mlruns").as_uri(), "--experiment", "e",
         "--mapping", str(mapping)]
    )  # fmt: skip
    assert code == 2 and time.monotonic() - started < 10
    err = _one_line(capsys)
    assert said in err and len(err) < 600, err
    assert _studies() == 0


def test_a_long_value_is_quoted_by_its_first_characters_only():
    with pytest.raises(ValueError, match="needs a source") as e:
        from engine.analysis.run_mapping import RunMapping

        RunMapping().with_entries({"y" * 5000: " "}, "--map")
    assert len(str(e.value)) < 200 and "…" in str(e.value)


@pytest.fixture
def mlflow_installed():
    return pytest.importorskip("mlflow", reason="the optional mlflow extra is not installed")


def test_a_file_uri_of_a_folder_that_is_no_mlflow_store_is_refused_untouched(
    home, tmp_path, capsys, mlflow_installed
):
    init_schema(default_store_path())
    folder = tmp_path / "etc"
    folder.mkdir()
    (folder / "passwd").write_text("root:x:0:0")
    for args in (
        ["import-results", "--mlflow-uri", folder.as_uri(), "--experiment", "e"],
        ["import-results", "--mlflow-uri", (folder / "passwd").as_uri(), "--experiment", "e"],
    ):
        assert main(args) == 2
        err = _one_line(capsys)
        assert "MLflow store" in err, err
    assert sorted(p.name for p in folder.iterdir()) == ["passwd"]  # no .trash made
    assert _studies() == 0


def test_another_scheme_is_refused_naming_the_ones_allowed(
    home, tmp_path, capsys, mlflow_installed
):
    init_schema(default_store_path())
    assert main(["import-results", "--mlflow-uri", "ftp://host/x", "--experiment", "e"]) == 2
    err = _one_line(capsys)
    assert "'ftp:' is not a tracking URI" in err and "http(s)://" in err


def test_an_unreachable_server_is_given_up_on_quickly_without_printing_its_password(
    home, tmp_path, capsys, mlflow_installed
):
    init_schema(default_store_path())
    started = time.monotonic()
    uri = "http://ada:s3cret-pw@127.0.0.1:9"  # the discard port: nothing listens
    assert main(["import-results", "--mlflow-uri", uri, "--experiment", "e"]) == 2
    assert time.monotonic() - started < 60
    err = _one_line(capsys)
    assert "s3cret" not in err and "ada:" not in err, err
    assert _studies() == 0
