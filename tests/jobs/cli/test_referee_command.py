"""`softgrade calibrate-inference`: a tiny referee on the CPU (a 2 × 2 factorial design, through
the real training code) writes its tables, records them for the Statistics tab, and refuses
bad flags in one line."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from engine.analysis import referee
from engine.methods import paper_methods
from engine.referee.design import TWIN_SEED_OFFSET
from jobs.cli import referee_command
from jobs.cli.main import main
from jobs.services import referee as referee_files

BASE, SOFT = paper_methods()[0], paper_methods()[1]
TINY = (
    "--datasets", "2", "--seeds", "2x2", "--epochs", "2", "--image-size", "16",
    "--n-images", "40", "--fresh-test", "40", "--bootstrap", "50", "--render-workers", "1",
)  # fmt: skip
FACTORIAL = ("factorial", "split_means", "design_corrected")


@pytest.fixture(scope="module")
def tiny_referee(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """One tiny referee run: its output folder, SOFTGRADE_HOME and what it printed."""
    root = tmp_path_factory.mktemp("referee")
    home, out = root / "home", root / "out"
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOFTGRADE_HOME", str(home))
        patch.setattr("sys.argv", ["softgrade", "calibrate-inference"])
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            status = main(["calibrate-inference", "-o", str(out), *TINY])
    torch.set_num_threads(threads)  # the command sets one thread for the CPU
    assert status == 0
    return out, home, printed.getvalue()


@pytest.mark.slow
def test_the_command_writes_the_coverage_and_type_one_tables(tiny_referee):
    out, _, printed = tiny_referee
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted((*referee_files.REFEREE_FILES, referee_files.DESIGN_FILE))
    summary = pd.read_csv(out / referee_files.SUMMARY_FILE)
    coverage = summary[summary["section"] == referee.COVERAGE]
    assert set(coverage["procedure"]) == {rule.key for rule in referee.INTERVALS}
    # 2 splits × 2 inits: every interval of the factorial design is scored on both datasets;
    # the Wilcoxon's has no finite 95 % interval on 4 seeds and is kept as not run.
    ran = coverage[coverage["n_datasets"] > 0]
    assert set(FACTORIAL) <= set(ran["procedure"])
    assert (ran["n_datasets"] == 2).all() and ran["value"].between(0, 1).all()
    assert set(coverage.loc[coverage["n_datasets"] == 0, "procedure"]) == {"wilcoxon_hl"}
    tests = summary[summary["section"] == referee.TEST]
    assert set(tests["procedure"]) == {rule.key for rule in referee.TESTS}
    factorial_tests = tests[tests["procedure"].isin(FACTORIAL)]
    assert (factorial_tests["n_datasets"] == 2).all()
    null = tests[tests["null"]]
    assert set(null["pair"]) == {f"{BASE} − {BASE}_twin"}
    assert set(null["measure"]) == {referee.TYPE_I}
    assert set(tests.loc[~tests["null"], "pair"]) == {f"{BASE} − {SOFT}"}

    card = json.loads((out / referee_files.CARD_FILE).read_text())
    assert card["datasets_done"] == card["datasets_asked"] == 2
    assert card["seeds"] == 2 and card["inits"] == 2 and card["methods"] == [BASE, SOFT]
    assert card["device"].startswith("CPU") and card["wall_s"] > 0
    assert card["fresh_films"] == 40 and card["created_at"].endswith("UTC")
    assert card["recommended"] is None  # 2 datasets are too few to recommend

    draws = pd.read_csv(out / referee_files.DRAWS_FILE)
    assert len(draws) == 2 * 4 * 3
    assert set(draws["method"]) == {BASE, SOFT, f"{BASE}_twin"}
    assert (draws["n_test"] + draws["n_fit"] == 40).all()
    # Pairing seed = split · 2 + init; every split trained from the same two inits, and a
    # split's test films are the same whatever the init.
    assert (draws["seed"] == draws["split_seed"] * 2 + draws["init_seed"]).all()
    assert set(zip(draws["split_seed"], draws["init_seed"], strict=True)) == {
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    }
    assert (draws.groupby(["dataset", "split_seed"])["n_test"].nunique() == 1).all()
    twin = draws[draws["method"] == f"{BASE}_twin"].set_index(["dataset", "seed"])
    base = draws[draws["method"] == BASE].set_index(["dataset", "seed"])
    assert (twin["train_seed"] == base["train_seed"] + TWIN_SEED_OFFSET).all()
    # Each dataset draws its own initialisations: no stream is shared across datasets.
    assert base.groupby("init_seed")["train_seed"].nunique().eq(2).all()
    assert card["init_draws"] == "per dataset"
    boot = pd.read_csv(out / referee_files.BOOTSTRAP_FILE)
    assert set(boot["dataset"]) == {0, 1}

    markdown = (out / referee_files.MARKDOWN_FILE).read_text()
    assert markdown.startswith("## What the referee measured")
    assert "K = 2 phantom datasets, S = 2 splits × I = 2 inits each (4 seeds" in markdown
    assert "### Coverage of the true difference" in markdown
    assert "| factorial (split + init components) | " in markdown
    assert "needs 6 or more seeds" in markdown  # the Wilcoxon's row, said not run
    assert markdown.strip() in printed


@pytest.mark.slow
def test_the_result_is_recorded_for_the_statistics_tab(tiny_referee, monkeypatch):
    out, home, printed = tiny_referee
    monkeypatch.setenv("SOFTGRADE_HOME", str(home))
    latest = referee_files.recorded_referees(home)[0]
    assert latest.folder.parent == home / referee_files.REFEREE_DIR
    assert str(latest.folder) in printed
    pd.testing.assert_frame_equal(latest.summary, pd.read_csv(out / referee_files.SUMMARY_FILE))
    # --record copies a result made elsewhere into a folder of its own; nothing is replaced.
    assert main(["calibrate-inference", "--record", str(out)]) == 0
    assert len(list((home / referee_files.REFEREE_DIR).iterdir())) == 2


def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["calibrate-inference", *args]) == referee_command.BAD_INPUT
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOFTGRADE_HOME", str(tmp_path / "home"))
    return tmp_path


def test_an_unknown_method_is_refused_naming_the_allowed_ones(home, capsys):
    err = _refused(capsys, "-o", str(home / "o"), "--methods", f"{BASE},no_such_method")
    assert err.count("\n") == 1 and "no_such_method" in err and SOFT in err
    assert not (home / "o").exists()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--metric", "XYZ"), "--metric: unknown metric 'XYZ'"),
        (("--task", "hip"), "--task: unknown task 'hip'"),
        (("--null-method", SOFT, "--methods", BASE), "null method"),
        (("--n-images", "5"), "n_images"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(home, capsys, flags, words):
    err = _refused(capsys, "-o", str(home / "o"), *flags)
    assert words in err and err.startswith("error: ")


def test_the_output_folder_is_required_and_never_overwritten(home, capsys):
    assert "-o DIR" in _refused(capsys)
    (home / "used").mkdir()
    (home / "used" / "referee.json").write_text("{}")
    assert "new or empty folder" in _refused(capsys, "-o", str(home / "used"))
    assert (home / "used" / "referee.json").read_text() == "{}"


def test_recording_a_folder_without_a_result_says_what_is_missing(home, capsys):
    (home / "empty").mkdir()
    err = _refused(capsys, "--record", str(home / "empty"))
    assert "holds no referee result" in err and referee_files.CARD_FILE in err


def test_a_gpu_asked_for_on_a_machine_without_one_is_refused(home, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    err = _refused(capsys, "-o", str(home / "o"), "--device", "cuda")
    assert "no CUDA GPU" in err


@pytest.mark.parametrize("seeds", ["1", "3x1", "0,3,7", "three"])
def test_seeds_other_than_a_count_or_splits_x_inits_are_refused_by_the_parser(home, capsys, seeds):
    with pytest.raises(SystemExit) as stop:
        main(["calibrate-inference", "-o", str(home / "o"), "--seeds", seeds])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"--seeds: {seeds!r} is not allowed" in err and "--seeds 3x2" in err


def test_seeds_read_as_independent_or_splits_by_inits():
    assert referee_command.referee_seeds("6") == (6, 1)
    assert referee_command.referee_seeds("3x2") == (3, 2)
    assert referee_command.referee_seeds(" 10 × 2 ") == (10, 2)


def test_a_count_below_its_least_is_refused_by_the_parser(home, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["calibrate-inference", "-o", str(home / "o"), "--datasets", "1"])
    assert stop.value.code == 2
    assert "--datasets: 1 must be >= 2" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_referee_of_the_studys_search_draws_configurations_per_dataset(tmp_path):
    """`--budget 2`: each method's model selected on validation from 2 sampled
    configurations, drawn afresh per dataset (and for the twin), through the real trainer."""
    out = tmp_path / "out"
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOFTGRADE_HOME", str(tmp_path / "home"))
        patch.setattr("sys.argv", ["softgrade", "calibrate-inference"])
        with contextlib.redirect_stdout(io.StringIO()):
            status = main(
                ["calibrate-inference", "-o", str(out), "--budget", "2", "--seeds", "3",
                 "--datasets", "2", "--epochs", "1", "--image-size", "16", "--n-images", "40",
                 "--fresh-test", "40", "--bootstrap", "0", "--render-workers", "1"]
            )  # fmt: skip
    torch.set_num_threads(threads)
    assert status == 0
    card = json.loads((out / referee_files.CARD_FILE).read_text())
    assert card["budget"] == 2 and "2 sampled configurations" in card["selection"]
    assert card["init_draws"] == "per dataset"
    draws = pd.read_csv(out / referee_files.DRAWS_FILE)
    assert len(draws) == 2 * 3 * 3 and set(draws["config_index"]) <= {0, 1}
    # The same seed's streams differ between the datasets: independent replicates.
    base = draws[draws["method"] == BASE]
    assert base.groupby("seed")["train_seed"].nunique().eq(2).all()
    summary = pd.read_csv(out / referee_files.SUMMARY_FILE)
    truth = summary[(summary["section"] == referee.TRUTH) & summary["null"]]
    assert truth["mc_se"].notna().all() and (truth["mc_se"] > 0).all()  # estimated, not 0
    tests = summary[summary["section"] == referee.TEST]
    assert "verdict_equivalent" in set(tests["procedure"])
    covered = summary[(summary["section"] == referee.COVERAGE) & (summary["n_datasets"] > 0)]
    assert (covered["low"] <= covered["value"]).all() and (
        covered["value"] <= covered["high"]
    ).all()


def _referee(out: Path, home: Path, *flags: str) -> int:
    """Run calibrate-inference in this process, quietly, keeping torch's threads."""
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOFTGRADE_HOME", str(home))
        patch.setattr("sys.argv", ["softgrade", "calibrate-inference"])
        with contextlib.redirect_stdout(io.StringIO()):
            status = main(["calibrate-inference", "-o", str(out), *flags])
    torch.set_num_threads(threads)
    return status


PARTS = (
    "--seeds", "2", "--epochs", "1", "--image-size", "16", "--n-images", "40",
    "--fresh-test", "40", "--bootstrap", "20", "--render-workers", "1", "--no-record",
)  # fmt: skip


@pytest.mark.slow
def test_a_design_trained_in_parts_and_combined_equals_the_whole_run(tmp_path):
    """Datasets 0-1 in one part and 2 in another, joined by --combine: the same draws, the
    same bootstrap intervals and the same summary as one run of all three datasets."""
    home = tmp_path / "home"
    assert _referee(tmp_path / "whole", home, "--datasets", "3", *PARTS) == 0
    assert _referee(tmp_path / "a", home, "--datasets", "2", *PARTS) == 0
    # A part of one dataset cannot be summarised alone (the referee needs 2), but it joins.
    _referee(tmp_path / "b", home, "--first-dataset", "2", "--datasets", "3", *PARTS)
    assert sorted(pd.read_csv(tmp_path / "b" / referee_files.DRAWS_FILE)["dataset"].unique()) == [2]
    assert _referee(tmp_path / "joined", home, "--combine", str(tmp_path / "a"),
                    str(tmp_path / "b"), "--no-record") == 0  # fmt: skip
    for name in (referee_files.DRAWS_FILE, referee_files.BOOTSTRAP_FILE):
        whole = pd.read_csv(tmp_path / "whole" / name)
        joined = pd.read_csv(tmp_path / "joined" / name)
        keys = ["dataset", "seed", "method"] if "seed" in whole else list(whole.columns[:3])
        pd.testing.assert_frame_equal(
            joined.sort_values(keys, ignore_index=True), whole.sort_values(keys, ignore_index=True)
        )
    card = json.loads((tmp_path / "joined" / referee_files.CARD_FILE).read_text())
    assert card["datasets_done"] == 3 and card["datasets_asked"] == 3
    assert [p["datasets_done"] for p in card["parts"]] == [2, 1]
    whole_summary = pd.read_csv(tmp_path / "whole" / referee_files.SUMMARY_FILE)
    joined_summary = pd.read_csv(tmp_path / "joined" / referee_files.SUMMARY_FILE)
    pd.testing.assert_frame_equal(joined_summary, whole_summary)


def _part(folder: Path, first: int, datasets: int, *, seeds: int = 2) -> Path:
    """A part's folder as calibrate-inference leaves it: its design and one draw a dataset."""
    from dataclasses import asdict

    from engine.referee.design import RefereeDesign

    folder.mkdir(parents=True)
    design = RefereeDesign(
        methods=(BASE, SOFT), null_method=BASE, task="KL", datasets=datasets,
        first_dataset=first, seeds=seeds,
    )  # fmt: skip
    (folder / referee_files.DESIGN_FILE).write_text(json.dumps(asdict(design)))
    draws = pd.DataFrame({"dataset": range(first, datasets), "seed": 0, "method": BASE})
    draws.to_csv(folder / referee_files.DRAWS_FILE, index=False)
    return folder


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ([(0, 2, 2), (1, 3, 2)], "dataset 1 was trained in both"),
        ([(0, 2, 2), (2, 4, 3)], "different designs: seeds is 2 against 3"),
    ],
)
def test_parts_that_are_not_one_design_are_refused_naming_why(tmp_path, capsys, parts, words):
    folders = [_part(tmp_path / f"p{i}", *spec[:2], seeds=spec[2]) for i, spec in enumerate(parts)]
    out = tmp_path / "joined"
    status = main(["calibrate-inference", "-o", str(out), "--combine", *map(str, folders)])
    assert status == referee_command.BAD_INPUT
    assert words in capsys.readouterr().err
    assert not out.exists()  # nothing written


def test_a_folder_that_is_not_a_part_is_refused_naming_the_missing_file(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    status = main(
        ["calibrate-inference", "-o", str(tmp_path / "j"), "--combine", str(tmp_path / "empty")]
    )
    assert status == referee_command.BAD_INPUT
    assert referee_files.DESIGN_FILE in capsys.readouterr().err


def test_a_first_dataset_past_the_last_is_refused(home, capsys):
    flags = ["-o", str(home / "o"), "--first-dataset", "3", "--datasets", "3"]
    assert main(["calibrate-inference", *flags]) == referee_command.BAD_INPUT
    assert "first_dataset: 3 must be below datasets (3)" in capsys.readouterr().err
