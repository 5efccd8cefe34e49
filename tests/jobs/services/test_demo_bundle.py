"""Demo bundles and the kiosk: export a tiny real study, open it in a fresh folder, grade."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.demo_models import knee_to_grade
from jobs.cli.main import main
from jobs.services import demo_bundle
from jobs.services.demo_bundle import DemoBundleError, export_demo, fresh_demo_home, unpack_demo
from jobs.services.kiosk import KioskSettings, kiosk_settings
from pages.present.graded_film import NO_KNEE
from store import runs as store_runs
from store import users as store_users
from tests.helpers.films import phantom_film, png_bytes, write_film_folder
from tests.helpers.studies import tiny_study

APP = Path(__file__).parents[3] / "app.py"


@pytest.fixture(scope="module")
def bundles(finished_study, tmp_path_factory) -> dict[str, Path]:
    """The tiny study exported twice: its best seed only, and every seed."""
    out = tmp_path_factory.mktemp("bundles")
    one = export_demo(
        finished_study.study_id,
        out / "demo.zip",
        home=finished_study.home,
        path=finished_study.store,
    )
    every = export_demo(
        finished_study.study_id,
        out / "demo-all.zip",
        all_seeds=True,
        home=finished_study.home,
        path=finished_study.store,
    )
    return {"one": one.path, "all": every.path}


def _kiosk_app(monkeypatch, home: Path, settings: KioskSettings) -> AppTest:
    """The whole app started as ``up --kiosk``/``--demo`` would start it."""
    monkeypatch.setenv("SOFTGRADE_HOME", str(home))
    for name, value in settings.env().items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_the_demo_bundle_holds_the_best_seeds_models_films_and_card(finished_study, bundles):
    runs = store_runs.list_runs(
        [finished_study.study_id], selected_only=True, path=finished_study.store
    )
    with zipfile.ZipFile(bundles["one"]) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        card = json.loads(zf.read("card.json"))
        names = set(zf.namelist())
        packed = {info.filename: info.compress_type for info in zf.infolist()}
    # Weights and PNGs are stored as they are (deflate saves little and costs seconds a
    # model); the text parts are deflated.
    assert {packed[m["file"]] for m in manifest["models"]} == {zipfile.ZIP_STORED}
    assert packed["manifest.json"] == packed["card.json"] == zipfile.ZIP_DEFLATED
    assert manifest["format"] == "softgrade-demo" and manifest["version"] == 2
    assert manifest["method"] == runs.groupby("method")["val_amae"].mean().idxmin()
    assert len(manifest["seeds"]) == 1
    assert {(m["task"], m["seed"]) for m in manifest["models"]} == {
        ("KL", manifest["seeds"][0]),
        ("CPPD", manifest["seeds"][0]),
    }
    assert len(manifest["films"]) == 12
    assert all(manifest["seeds"][0] in f["test_seeds"] for f in manifest["films"])
    assert len({f["kl"] for f in manifest["films"]}) >= 3  # spread over the grades
    assert manifest["detector"] == {"name": "classical", "folder": None}
    assert manifest["libraries"]["torch"] and "code_version" in manifest["softgrade"]
    assert card["card"]["study id"] == finished_study.study_id
    assert {m["file"] for m in manifest["models"]} | {f["file"] for f in manifest["films"]} <= names


@pytest.mark.slow
def test_the_demo_bundle_opened_in_a_fresh_folder_shows_a_grade(bundles, monkeypatch):
    home, bundle = fresh_demo_home(bundles["one"])
    try:
        at = _kiosk_app(monkeypatch, home, KioskSettings(demo_dir=bundle.folder))
        assert at.title[0].value == "Grade a film"
        assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]
        assert all(m.value.split()[0] in ("KL", "CPPD") for m in at.metric)
        assert "Annotated:" in _markdown(at)
        # the bundle carries each model's grade-set thresholds: the kiosk gives the range
        # (a tiny CPU model may not narrow a grade: then the line says so instead)
        shown = _markdown(at)
        assert bundle.set_thresholds and "at 90 %" in shown
        assert "likely" in shown or "the models cannot narrow it" in shown
        assert not at.selectbox  # no study or method picker: the bundle fixes them
        assert not at.sidebar.children or not any(at.sidebar.children.values())
        assert not (home / "softgrade.duckdb").exists()  # no lab store needed
        at.segmented_control(key="demo_source").set_value("Upload a film").run()
        assert "Upload a film to grade it." in [i.value for i in at.info]
    finally:
        shutil.rmtree(home)
    assert not home.exists()


@pytest.mark.slow
def test_a_bundle_of_every_seed_shows_how_much_the_seeds_agree(bundles, monkeypatch):
    home, bundle = fresh_demo_home(bundles["all"])
    try:
        assert len(bundle.manifest["seeds"]) == 3
        counts = [len(t) for t in bundle.films["test_seeds"]]
        assert counts[0] == max(counts)  # films more seeds tested on come first
        at = _kiosk_app(monkeypatch, home, KioskSettings(demo_dir=bundle.folder))
        shared = next(i for i, n in enumerate(counts) if n >= 2)
        at.number_input(key="demo_film").set_value(shared + 1).run()
        assert not at.exception
        n = counts[shared]
        votes = [m.value for m in at.markdown if f" of {n} models " in m.value]
        assert len(votes) == 2  # one sentence per task
        assert all(f"of {n} models say" in v or f"{n} of {n} models agree" in v for v in votes)
        assert len(at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")) == 2
        if n < 3:
            assert "so their models are left out" in "\n".join(c.value for c in at.caption)
    finally:
        shutil.rmtree(home)


def test_a_kiosk_on_the_store_fixes_study_and_method_and_needs_no_sign_in(
    finished_study, monkeypatch
):
    store_users.add_user("pi", "admin", "a long enough password", path=finished_study.store)
    try:
        settings = KioskSettings(study_id=finished_study.study_id, method="nominal")
        at = _kiosk_app(monkeypatch, finished_study.home, settings)
        assert at.title[0].value == "Grade a film"  # no sign-in form, though accounts exist
        assert not at.selectbox
        assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]
        assert "Models: Nominal" not in _markdown(at)  # the method is a presenter's detail
        at.toggle(key="demo_presenter").set_value(True).run()
        assert "Models: Nominal" in _markdown(at)
        assert "seed" in _markdown(at)
        # Grade a film is the only page file the kiosk's navigation knows; the other pages'
        # URLs are redirects back to it (tests/e2e/test_kiosk_browser.py opens them).
        with pytest.raises(ValueError, match="Known pages") as refused:
            at.switch_page("pages/launch.py")
        known = re.search(r"Known pages: \[(.*)\]", str(refused.value)).group(1).split(", ")
        files = [name for name in known if name.endswith(".py'")]
        assert len(files) == 1 and files[0].endswith("pages/demo.py'"), known
        assert {"'launch'", "'queue'", "'accounts'"} <= set(known)
    finally:
        store_users.remove_user("pi", by="test", path=finished_study.store)


def test_kiosk_settings_travel_through_the_environment(tmp_path):
    settings = KioskSettings(study_id="s1", method="beta")
    assert kiosk_settings(settings.env()) == settings
    assert kiosk_settings({}) is None
    demo = KioskSettings(demo_dir=tmp_path)
    assert kiosk_settings(demo.env()) == demo


def _rewrite(source: Path, out: Path, *, drop: str = "", manifest: dict | None = None) -> Path:
    """A copy of a bundle without ``drop`` and/or with another manifest."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(out, "w") as zout:
        for item in zin.infolist():
            if item.filename == drop:
                continue
            data = zin.read(item)
            if item.filename == "manifest.json" and manifest is not None:
                data = json.dumps(manifest).encode()
            zout.writestr(item, data)
    return out


@pytest.mark.slow
def test_bad_bundles_get_one_clear_message_and_leave_nothing(bundles, tmp_path):
    with zipfile.ZipFile(bundles["one"]) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    not_zip = tmp_path / "notes.zip"
    not_zip.write_text("hello")
    model = manifest["models"][0]["file"]
    cases = {
        not_zip: "not a readable zip file",
        _rewrite(bundles["one"], tmp_path / "part.zip", drop=model): f"missing: {model}",
        _rewrite(
            bundles["one"], tmp_path / "v9.zip", manifest=manifest | {"version": 9}
        ): "version 9; this SoftGrade reads version 2",
        _rewrite(
            bundles["one"], tmp_path / "nomanifest.zip", drop="manifest.json"
        ): "it has no manifest.json",
        _rewrite(
            bundles["one"],
            tmp_path / "escape.zip",
            manifest=manifest | {"films": [{**manifest["films"][0], "file": "../x.png"}]},
        ): "outside itself",
        tmp_path / "absent.zip": "no such file",
    }
    for bad, words in cases.items():
        dest = tmp_path / f"out-{bad.stem}"
        with pytest.raises(DemoBundleError, match=words.replace(".", r"\.")):
            unpack_demo(bad, dest)
        assert not (dest / "manifest.json").exists()


def test_up_demo_with_a_bad_bundle_exits_with_one_line(tmp_path, capsys):
    bad = tmp_path / "demo.zip"
    bad.write_bytes(b"PK\x03\x04 broken")
    assert main(["up", "--demo", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a readable zip file" in err
    assert "Traceback" not in err


def test_cli_refuses_a_kiosk_without_study_or_with_an_unknown_method(
    finished_study, monkeypatch, capsys
):
    monkeypatch.setenv("SOFTGRADE_HOME", str(finished_study.home))
    assert main(["up", "--kiosk"]) == 2
    assert "--kiosk needs --study ID" in capsys.readouterr().err
    assert main(["up", "--kiosk", "--study", finished_study.study_id, "--method", "x"]) == 2
    assert "has no finished runs of 'x'" in capsys.readouterr().err


def test_export_demo_cli_writes_a_bundle_and_refuses_a_seed_without_weights(
    finished_study, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("SOFTGRADE_HOME", str(finished_study.home))
    out = tmp_path / "d.zip"
    assert main(["export-demo", finished_study.study_id, "--seed", "1", "-o", str(out)]) == 0
    assert "seed 1, 12 test films" in capsys.readouterr().out
    assert json.loads(zipfile.ZipFile(out).read("manifest.json"))["seeds"] == [1]
    other = tmp_path / "d9.zip"  # a new file: the refusal is the seed's, not the output's
    assert main(["export-demo", finished_study.study_id, "--seed", "9", "-o", str(other)]) == 2
    err = capsys.readouterr().err
    assert "seed 9 of" in err and "seeds that have: 0, 1, 2" in err
    assert demo_bundle.DEMO_BUNDLE_VERSION == 2


@pytest.mark.slow
def test_up_demo_serves_on_every_interface_without_accounts_and_cleans_up(bundles, tmp_path):
    """A real ``up --demo`` process: 0.0.0.0 is allowed (the kiosk can only grade), the app
    answers, and SIGTERM removes the temporary folder the bundle was unpacked into."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SOFTGRADE_HOME": str(tmp_path / "no-store-here")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs", "up", "--demo", str(bundles["one"])]
        + ["--host", "0.0.0.0", "--port", str(port)],
        cwd=APP.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert "SoftGrade kiosk (Grade a film only) on http://0.0.0.0:" in first, first
        unpacked = Path(re.search(r"unpacked in (\S+)\)", first).group(1))
        assert (unpacked / "demo" / "manifest.json").is_file()
        deadline = time.time() + 240
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health") as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, proc.stdout.read()
                time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert not unpacked.exists()
    assert not (tmp_path / "no-store-here").exists()  # the lab's home was never touched


# -- a study whose films were cropped by a trained detector ------------------------------------


@pytest.fixture(scope="module")
def detector_study(tmp_path_factory) -> tuple[Path, Path, str, str]:
    """A tiny study on an imported folder whose dataset names a trained YOLO detector (2
    epochs, 64 px: it trains in seconds; films it misses are cropped by the classical
    detector, as imports do). Returns (home, store, study id, detector key)."""
    from engine.config import StudySpec
    from engine.detect import phantom_detection_set, train_detector
    from engine.phantom import PhantomSpec
    from jobs.worker.executors import InlineExecutor
    from jobs.worker.runner import Worker
    from store import jobs as store_jobs
    from store.db import init_schema

    home = tmp_path_factory.mktemp("detector-study")
    films, boxes = phantom_detection_set(
        PhantomSpec(n_images=16, n_joint=8, seed=4, film_size=(160, 160))
    )
    detectors = home / "detectors"
    record = train_detector(films, boxes, image_size=64, epochs=2, device="cpu", out_dir=detectors)
    folder, csv, _ = write_film_folder(home, n=40, n_joint=40, seed=6)
    dataset = {"kind": "folder", "path": str(folder), "labels_csv": str(csv)}
    dataset |= {"detector": record.key, "detectors_dir": str(detectors)}
    store = home / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(dataset=dataset, methods=["beta"]))
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=home).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded", job
    return home, store, job.study_id, record.key


@pytest.mark.slow
def test_a_bundle_carries_the_trained_detector_its_films_were_cropped_with_and_uploads_use_it(
    detector_study, tmp_path, monkeypatch
):
    import engine.detect.choice

    home, store, study_id, key = detector_study
    out = export_demo(study_id, tmp_path / "demo.zip", home=home, path=store).path
    with zipfile.ZipFile(out) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        bundled_weights = zf.read("detector/detector.pt")
    assert manifest["detector"] == {"name": key, "folder": "detector"}
    assert bundled_weights == (home / "detectors" / key / "detector.pt").read_bytes()

    demo_home, bundle = fresh_demo_home(out)
    loaded: list[Path] = []
    real_load = engine.detect.choice.load_detector

    def spy(path: Path, **kwargs: object) -> object:
        loaded.append(Path(path))
        return real_load(path, **kwargs)

    monkeypatch.setattr(engine.detect.choice, "load_detector", spy)
    engine.detect.choice.loaded_detector.cache_clear()  # loaded once per process
    try:
        at = _kiosk_app(monkeypatch, demo_home, KioskSettings(demo_dir=bundle.folder))
        at.segmented_control(key="demo_source").set_value("Upload a film").run()
        film = phantom_film(index=0)
        at.file_uploader(key="demo_upload").upload("knee.png", png_bytes(film), "image/png").run()
        assert not at.exception, [e.value for e in at.exception]
        assert loaded == [bundle.detector_dir]  # the bundle's own copy, not the lab's
        assert bundle.detector_dir.is_relative_to(demo_home)
        # A 2-epoch detector may find no knee: then the page must say so and grade nothing,
        # as the import check would; otherwise it grades the knee the detector found.
        knee = knee_to_grade(film, bundle.detector_dir)
        if knee.finding == "none":
            assert NO_KNEE in [e.value for e in at.error] and not at.metric
        else:
            assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]
    finally:
        shutil.rmtree(demo_home)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["corn", "clm"])  # conditional logits; probabilities
def test_a_bundle_of_a_method_with_its_own_output_layer_grades_in_the_kiosk(
    method, tmp_path, monkeypatch
):
    """The kiosk grades with models whose outputs are not J logits: each checkpoint names
    its head, and the probabilities and maps are the head's."""
    from engine.config import StudySpec
    from engine.gradcam import predict
    from engine.train import load_model
    from jobs.worker.executors import InlineExecutor
    from jobs.worker.runner import Worker
    from store import jobs as store_jobs
    from store.db import init_schema

    home = tmp_path / "lab"
    store = home / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=[method], max_epochs=1, patience=1))
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=home).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded", job
    out = export_demo(job.study_id, tmp_path / "demo.zip", home=home, path=store).path

    demo_home, bundle = fresh_demo_home(out)
    try:
        assert bundle.method == method
        at = _kiosk_app(monkeypatch, demo_home, KioskSettings(demo_dir=bundle.folder))
        assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]
        # The grade shown is the most probable by the model's own head.
        crop = demo_bundle.read_crop(bundle.films["file"].iloc[0], bundle.image_size)
        for metric, task in zip(at.metric, ("KL", "CPPD"), strict=True):
            model = load_model(bundle.checkpoints[task][bundle.best_seed])
            assert metric.value == f"{task} {int(predict(model, crop[None]).argmax())}"
    finally:
        shutil.rmtree(demo_home)


def test_cli_refuses_a_kiosk_on_a_study_whose_models_are_not_here(tmp_path, monkeypatch, capsys):
    # The bundled reference ships its results, not its models: a kiosk on it would only tell
    # every visitor that the images or the models are missing.
    from store.bundle import REFERENCE_STUDY, import_study
    from store.db import init_schema

    def refuse_to_serve(*args: object, **kwargs: object) -> None:
        raise AssertionError("the kiosk started serving a study it cannot grade with")

    init_schema(tmp_path / "softgrade.duckdb")
    study_id = import_study(REFERENCE_STUDY, path=tmp_path / "softgrade.duckdb").study_id
    monkeypatch.setenv("SOFTGRADE_HOME", str(tmp_path))
    monkeypatch.setattr(subprocess, "Popen", refuse_to_serve)
    assert main(["up", "--kiosk", "--study", study_id]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no trained" in err and "models on this machine" in err
    assert "up --demo" in err and "Traceback" not in err


def test_a_damaged_crop_is_named_once_ultralytics_wrapped_image_open(monkeypatch):
    """The kiosk's bundled crops: a damaged one is named, not a ModuleNotFoundError from
    ultralytics' wrapped Image.open (tests/engine/test_import_hardening.py)."""
    import io

    from jobs.services.demo_manifest import crop_problem
    from tests.engine.test_import_hardening import wrap_image_open_as_ultralytics_does

    wrap_image_open_as_ultralytics_does(monkeypatch)
    assert crop_problem(io.BytesIO(b"GIF89a" + bytes(40)), 32).startswith("not a PNG image")
