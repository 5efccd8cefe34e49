"""A study exported as one bundle file and imported into other stores."""

from __future__ import annotations

import json
import zipfile

import pandas as pd
import pytest

from store import datasets as store_datasets
from store import runs as store_runs
from store.bundle import export_study, import_study, imported_card, read_card
from store.db import StoreError, connect, init_schema
from tests.helpers.studies import FinishedStudy, tiny_study

CARD = {"gpus": ["NVIDIA H100 80GB HBM3"] * 4, "command": "python -m jobs run paper.yaml"}


@pytest.fixture(scope="module")
def bundle(finished_study: FinishedStudy, tmp_path_factory: pytest.TempPathFactory):
    """The tiny trained study's seeds 0 and 1, exported as the reference would be."""
    out = tmp_path_factory.mktemp("bundle") / "study.zip"
    export_study(
        finished_study.study_id,
        out,
        seeds=[0, 1],
        card=CARD,
        name="Reference: tiny (2 seeds)",
        path=finished_study.store,
    )
    return out


def _fresh_store(tmp_path):
    path = tmp_path / "other.duckdb"
    init_schema(path)
    return path


def test_the_bundle_holds_every_run_and_the_selected_runs_predictions(finished_study, bundle):
    meta = read_card(bundle)
    assert meta["seeds"] == [0, 1] and meta["card"] == CARD
    assert meta["study"]["name"] == "Reference: tiny (2 seeds)"
    assert meta["study"]["spec"]["seeds"] == [0, 1]
    every = store_runs.list_runs([finished_study.study_id], path=finished_study.store)
    every = every[every["seed"].isin([0, 1])]
    assert meta["rows"]["runs"] == len(every)
    selected = store_runs.list_runs(
        [finished_study.study_id], selected_only=True, path=finished_study.store
    )
    assert meta["rows"]["runs"] >= selected["seed"].isin([0, 1]).sum() > 0
    with zipfile.ZipFile(bundle) as zf:
        assert "predictions.parquet" in zf.namelist() and "card.json" in zf.namelist()


def test_an_imported_study_gives_the_same_results_as_the_original(finished_study, bundle, tmp_path):
    store = _fresh_store(tmp_path)
    done = import_study(bundle, path=store)
    assert done.created and done.study_id == finished_study.study_id
    assert done.name == "Reference: tiny (2 seeds)" and done.seeds == (0, 1)

    def counts(path):
        frame = store_runs.confusion_counts([finished_study.study_id], path=path)
        frame = frame[frame["seed"].isin([0, 1])]
        return frame.sort_values(list(frame.columns[:-1])).reset_index(drop=True)

    pd.testing.assert_frame_equal(counts(store), counts(finished_study.store))
    joint = store_runs.joint_predictions([done.study_id], path=store)
    original = store_runs.joint_predictions([done.study_id], path=finished_study.store)
    pd.testing.assert_frame_equal(
        joint, original[original["seed"].isin([0, 1])].reset_index(drop=True)
    )
    studies = store_runs.list_studies(path=store)
    assert studies.loc[0, "name"] == "Reference: tiny (2 seeds)"
    assert studies.loc[0, "status"] == "succeeded"
    assert studies.loc[0, "runs_stored"] == read_card(bundle)["rows"]["runs"]
    assert imported_card(done.study_id, path=store) == CARD
    # the dataset, its labels and the seeds' splits and rules came along
    dataset_id = studies.loc[0, "dataset_id"]
    for seed in (0, 1):
        theirs = store_datasets.load_splits(dataset_id, seed, path=finished_study.store)
        ours = store_datasets.load_splits(dataset_id, seed, path=store)
        pd.testing.assert_series_equal(ours.sort_index(), theirs.sort_index())
    assert store_datasets.split_rules(dataset_id, path=store)["seed"].tolist() == [0, 1]
    chosen = store_runs.list_runs([done.study_id], selected_only=True, path=store)["run_id"]
    epochs = store_runs.epoch_metrics(chosen.tolist(), path=store)
    assert set(epochs["run_id"]) == set(chosen)


@pytest.mark.slow
def test_importing_twice_changes_nothing(bundle, tmp_path):
    store = _fresh_store(tmp_path)
    first = import_study(bundle, path=store)
    with connect(store, read_only=True) as con:
        before = con.execute("SELECT count(*) FROM predictions").fetchone()[0]
    again = import_study(bundle, path=store)
    assert first.created and not again.created and again.runs == first.runs
    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM predictions").fetchone()[0] == before
        assert con.execute("SELECT count(*) FROM studies").fetchone()[0] == 1


@pytest.mark.slow
def test_a_store_with_other_splits_of_the_dataset_keeps_them(bundle, tmp_path):
    """The store already split the same dataset differently for seed 0: that split stays and
    the imported study comes in on a dataset of its own."""
    store = _fresh_store(tmp_path)
    meta = read_card(bundle)
    dataset = meta["dataset"]
    with zipfile.ZipFile(bundle) as zf:
        zf.extract("images.parquet", tmp_path)
        zf.extract("labels.parquet", tmp_path)
        zf.extract("splits.parquet", tmp_path)
    with connect(store) as con:
        con.execute(
            "INSERT INTO datasets (dataset_id, kind, spec_key, params, n_images) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                dataset["dataset_id"],
                dataset["kind"],
                dataset["spec_key"],
                json.dumps(dataset["params"]),
                dataset["n_images"],
            ],
        )
        con.execute(
            "INSERT INTO images SELECT ?, image_id, patient_id, side, source FROM read_parquet(?)",
            [dataset["dataset_id"], str(tmp_path / "images.parquet")],
        )
        con.execute(
            "INSERT INTO labels SELECT ?, image_id, task, grade, true_grade FROM read_parquet(?)",
            [dataset["dataset_id"], str(tmp_path / "labels.parquet")],
        )
        # seed 0's split, every film in train: not the bundle's
        con.execute(
            "INSERT INTO splits SELECT ?, 0, image_id, 'train' FROM read_parquet(?) WHERE seed = 0",
            [dataset["dataset_id"], str(tmp_path / "splits.parquet")],
        )
    done = import_study(bundle, path=store)
    kept = store_datasets.load_splits(dataset["dataset_id"], 0, path=store)
    assert set(kept) == {"train"}
    study = store_runs.list_studies(path=store).iloc[0]
    assert study["dataset_id"] != dataset["dataset_id"]
    listed = store_datasets.list_datasets(path=store)
    assert listed["spec_key"].str.endswith("imported splits").sum() == 1
    assert done.created


def test_a_file_that_is_not_a_bundle_is_refused_with_a_reason(tmp_path):
    store = _fresh_store(tmp_path)
    with pytest.raises(StoreError, match="no bundle at"):
        import_study(tmp_path / "missing.zip", path=store)
    text = tmp_path / "notes.zip"
    text.write_text("hello")
    with pytest.raises(StoreError, match="not a zip file"):
        import_study(text, path=store)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("readme.txt", "nothing")
    with pytest.raises(StoreError, match="not a SoftGrade study bundle: it lacks card.json"):
        import_study(empty, path=store)


def test_split_rules_name_the_legacy_rule_for_splits_stored_before_rules(store):
    from engine.vocab import LEGACY_SPLIT_RULE, SPLIT_RULE

    splits = pd.Series(["train", "test"], index=["a", "b"])
    store_datasets.save_splits("ds-x", 1, splits, path=store)
    with connect(store) as con:  # a split stored by an older SoftGrade: no rule row
        con.execute("INSERT INTO splits VALUES ('ds-x', 0, 'a', 'test'), ('ds-x', 0, 'b', 'val')")
    rules = store_datasets.split_rules("ds-x", path=store)
    assert rules.to_dict("records") == [
        {"seed": 0, "rule": LEGACY_SPLIT_RULE},
        {"seed": 1, "rule": SPLIT_RULE},
    ]


@pytest.fixture(scope="module")
def later_part(finished_study: FinishedStudy, tmp_path_factory: pytest.TempPathFactory):
    """Seed 3 of the same tiny protocol, run later as a study of its own (another id), in a
    copy of the finished study's store, and exported with its own card."""
    import shutil

    from engine.config import StudySpec
    from jobs.worker.executors import InlineExecutor
    from jobs.worker.runner import Worker
    from store import jobs as store_jobs

    home = tmp_path_factory.mktemp("later-part")
    store = home / "softgrade.duckdb"
    shutil.copyfile(finished_study.store, store)
    spec = StudySpec.from_dict(tiny_study(seeds=[3], methods=["nominal", "beta", "triangular"]))
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=home).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded" and job.study_id != finished_study.study_id
    out = home / "part.zip"
    export_study(job.study_id, out, card=LATER_CARD, path=store)
    return out, store, job.study_id


LATER_CARD = {"gpus": ["NVIDIA H200"] * 4, "command": "python -m jobs run seeds-3.yaml"}


def test_merged_parts_import_as_one_study_with_every_seed_and_both_cards(
    finished_study, bundle, later_part, tmp_path
):
    from store.bundle_merge import merge_bundles

    part, part_store, part_study = later_part
    merged = merge_bundles(bundle, part, tmp_path / "merged.zip", name="tiny (3 seeds)")
    meta = read_card(merged)
    assert meta["seeds"] == [0, 1, 3] and meta["study"]["spec"]["seeds"] == [0, 1, 3]
    assert meta["study"]["study_id"] == finished_study.study_id
    assert (
        meta["rows"]["runs"] == read_card(bundle)["rows"]["runs"] + read_card(part)["rows"]["runs"]
    )
    # a field the parts share stays; one that differs is kept per part, under its seeds
    assert meta["card"]["gpus"] == {"seeds 0–1": CARD["gpus"], "seed 3": LATER_CARD["gpus"]}
    assert meta["card"]["seeds_complete"] == [0, 1, 3]

    store = _fresh_store(tmp_path)
    done = import_study(merged, path=store)
    assert done.seeds == (0, 1, 3) and done.name == "tiny (3 seeds)"
    runs = store_runs.list_runs([done.study_id], path=store)
    assert runs["run_id"].str.startswith(f"{finished_study.study_id}-").all()
    assert sorted(runs["seed"].unique()) == [0, 1, 3]

    def counts(path, study_id, seeds):
        frame = store_runs.confusion_counts([study_id], path=path)
        frame = frame[frame["seed"].isin(seeds)].drop(columns=["study_id", "run_id"])
        return frame.sort_values(list(frame.columns[:-1])).reset_index(drop=True)

    # the later part's predictions arrive whole, under the merged study's run ids
    pd.testing.assert_frame_equal(
        counts(store, done.study_id, [3]), counts(part_store, part_study, [3])
    )
    pd.testing.assert_frame_equal(
        counts(store, done.study_id, [0, 1]),
        counts(finished_study.store, finished_study.study_id, [0, 1]),
    )
    with connect(store, read_only=True) as con:
        orphans = con.execute(
            "SELECT count(*) FROM predictions p ANTI JOIN runs r USING (run_id)"
        ).fetchone()[0]
        epochs = con.execute(
            "SELECT count(*) FROM epoch_metrics e JOIN runs r USING (run_id) WHERE r.seed = 3"
        ).fetchone()[0]
    assert orphans == 0 and epochs == read_card(part)["rows"]["epochs"]


def _doctored(bundle, out, **changes):
    """A copy of ``bundle`` whose card.json has ``changes`` applied (study spec, dataset)."""
    with zipfile.ZipFile(bundle) as zf:
        meta = json.loads(zf.read("card.json"))
        members = {name: zf.read(name) for name in zf.namelist() if name != "card.json"}
    meta["study"]["spec"].update(changes.get("spec", {}))
    meta["dataset"].update(changes.get("dataset", {}))
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("card.json", json.dumps(meta))
        for name, data in members.items():
            zf.writestr(name, data)
    return out


@pytest.mark.slow
def test_parts_that_cannot_be_merged_get_every_reason_and_no_file(bundle, tmp_path):
    from store.bundle_merge import merge_bundles

    other = _doctored(
        bundle,
        tmp_path / "other.zip",
        spec={"max_epochs": 99, "image_size": 64},
        dataset={"spec_key": "phantom(n_images=9,n_joint=9,seed=9)"},
    )
    out = tmp_path / "merged.zip"
    with pytest.raises(StoreError) as refused:
        merge_bundles(bundle, other, out)
    message = str(refused.value)
    assert "other datasets" in message and "phantom(n_images=9" in message
    assert "protocols differ in image_size, max_epochs" in message
    assert "seed(s) 0, 1 are in both" in message
    assert not out.exists()
    with pytest.raises(StoreError, match="missing.zip"):
        merge_bundles(bundle, tmp_path / "missing.zip", out)
    assert not out.exists()
