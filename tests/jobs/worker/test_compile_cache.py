"""The compile cache under SOFTGRADE_HOME: its key, its pruning, and a lane that uses it."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
import torch

from engine.config import StudySpec
from jobs.worker.compile_cache import (
    CACHE_FOLDER,
    SWITCH_ENV,
    CacheKey,
    cache_key,
    code_hash,
    list_compile_caches,
    prune_compile_caches,
)
from jobs.worker.executors import LocalExecutor, SlotPlan
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store.db import init_schema
from tests.helpers.studies import tiny_study
from tests.helpers.workers import run_collecting_done

KEY = CacheKey(
    torch="2.11.0+cu130",
    triton="3.6.0",
    torchvision="0.26.0",
    device="NVIDIA H200 sm90",
    code="0123456789abcdef",
)


@pytest.mark.parametrize(
    "change",
    [
        {"torch": "2.12.0+cu130"},
        {"triton": "3.7.0"},
        {"torchvision": "0.27.0"},
        {"device": "NVIDIA H100 80GB HBM3 sm90"},
        {"device": "NVIDIA H200 sm100"},
        {"code": "fedcba9876543210"},
    ],
)
def test_the_key_folder_changes_with_torch_the_gpu_and_the_code(change):
    assert dataclasses.replace(KEY, **change).folder_name != KEY.folder_name


def test_the_key_folder_is_one_safe_path_component():
    name = KEY.folder_name
    assert "/" not in name and " " not in name and "+" not in name
    assert "NVIDIA_H200_sm90" in name and "0123456789abcdef" in name


def test_the_code_hash_follows_the_compiled_source(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "train.py").write_text("x = 1\n")
    before = code_hash(("engine/train.py",), root=tmp_path)
    (tmp_path / "engine" / "train.py").write_text("x = 2\n")
    assert code_hash(("engine/train.py",), root=tmp_path) != before


def test_this_process_key_names_its_torch_and_the_cpu():
    key = cache_key(torch.device("cpu"))
    assert key.torch == torch.__version__
    assert key.device == "cpu"
    assert key.code == code_hash()


def test_folders_unused_for_long_are_pruned_and_the_current_one_kept(tmp_path):
    for name in ("old", "recent", "current"):
        (tmp_path / name / "inductor").mkdir(parents=True)
        (tmp_path / name / "last-used").touch()
    month_ago = time.time() - 40 * 86400
    for name in ("old", "current"):
        os.utime(tmp_path / name / "last-used", (month_ago, month_ago))

    assert prune_compile_caches(tmp_path, keep="current") == ["old"]
    assert sorted(c.name for c in list_compile_caches(tmp_path)) == ["current", "recent"]


@pytest.mark.slow  # starts a slot process and trains
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_lane_process_compiles_into_the_cache_under_softgrade_home(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal"], tasks=["KL"]))
    store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker = Worker(LocalExecutor([SlotPlan("cpu", None)]), store_path=store, home=tmp_path)
    seen = [msg["compile_cache_dir"] for msg in run_collecting_done(worker)]

    key = cache_key(torch.device("cpu"))
    expected = tmp_path / CACHE_FOLDER / key.folder_name / "inductor"
    assert seen == [str(expected)]
    assert expected.is_dir() and (expected.parent / "triton").is_dir()
    # It holds code inductor imports later: this user's only.
    for private in (tmp_path / CACHE_FOLDER, expected.parent):
        assert private.stat().st_mode & 0o777 == 0o700, private
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ or os.environ[
        "TORCHINDUCTOR_CACHE_DIR"
    ] != str(expected), "the lane's setting belongs to the lane process, not the worker"
    assert Path(seen[0]).parent.name == key.folder_name


@pytest.fixture
def fresh_process(monkeypatch):
    """`use_compile_cache` as a new slot process meets it: nothing chosen yet."""
    from jobs.worker import compile_cache

    monkeypatch.setattr(compile_cache, "_configured", {})
    monkeypatch.delenv(SWITCH_ENV, raising=False)
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    return compile_cache


def test_a_world_writable_cache_is_made_again_empty_and_private(tmp_path, fresh_process):
    root = tmp_path / CACHE_FOLDER
    folder = root / cache_key(torch.device("cpu")).folder_name
    (folder / "inductor").mkdir(parents=True)
    planted = folder / "inductor" / "planted.py"
    planted.write_text("import os; os.system('touch /tmp/pwned')")
    os.chmod(folder, 0o777)
    used = fresh_process.use_compile_cache(root, torch.device("cpu"))
    assert used == folder and not planted.exists()
    for private in (root, folder, folder / "inductor", folder / "triton"):
        assert fresh_process.trust_problem(private) is None, private
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(folder / "inductor")


def test_a_cache_that_is_a_link_is_refused_and_torch_keeps_its_own(tmp_path, fresh_process, caplog):
    elsewhere = tmp_path / "shared"
    elsewhere.mkdir(mode=0o700)
    root = tmp_path / CACHE_FOLDER
    root.symlink_to(elsewhere)
    assert fresh_process.use_compile_cache(root, torch.device("cpu")) is None
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ
    assert any("symbolic link" in r.getMessage() for r in caplog.records)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_cache_owned_by_another_user_is_refused_untouched(tmp_path, fresh_process, caplog):
    root = tmp_path / CACHE_FOLDER
    root.mkdir(mode=0o700)
    (root / "theirs").mkdir()
    os.chown(root, 12345, 12345)
    assert fresh_process.use_compile_cache(root, torch.device("cpu")) is None
    assert any("owned by user id 12345" in r.getMessage() for r in caplog.records)
    assert [p.name for p in root.iterdir()] == ["theirs"]


def test_a_cache_others_could_only_read_is_closed_and_kept(tmp_path, fresh_process):
    root = tmp_path / CACHE_FOLDER
    folder = root / cache_key(torch.device("cpu")).folder_name
    (folder / "inductor").mkdir(parents=True)
    (folder / "inductor" / "compiled.py").write_text("x = 1")
    for made in (root, folder, folder / "inductor"):
        os.chmod(made, 0o755)
    assert fresh_process.use_compile_cache(root, torch.device("cpu")) == folder
    assert (folder / "inductor" / "compiled.py").exists()
    assert (folder / "inductor").stat().st_mode & 0o777 == 0o700


def _unreadable_entry_failure() -> Exception:
    """What inductor raised on an H200 when a cache entry was spoilt (bench/RESULTS.md):
    dynamo's backend failure around the loader's decoding error."""
    from torch._dynamo.exc import BackendCompilerFailed

    inner = UnicodeDecodeError("utf-8", b"\x00corrupt\xff", 8, 9, "invalid start byte")
    return BackendCompilerFailed(lambda: None, inner, None)


def test_a_compile_failure_is_told_from_other_errors():
    from jobs.worker.compile_cache import compile_failure

    assert compile_failure(_unreadable_entry_failure())
    assert not compile_failure(ValueError("the study's own bug"))
    try:
        raise RuntimeError("out of memory") from ValueError("not the compiler")
    except RuntimeError as exc:
        assert not compile_failure(exc)


def test_an_unreadable_cache_is_emptied_once_and_siblings_only_retry(tmp_path, fresh_process):
    root = tmp_path / CACHE_FOLDER
    folder = fresh_process.use_compile_cache(root, torch.device("cpu"))
    spoilt = folder / "inductor" / "cache" / "entry.json"
    spoilt.parent.mkdir(parents=True)
    spoilt.write_bytes(b"\x00corrupt\xff")
    seen = fresh_process.cache_generation()

    why = fresh_process.recover_unreadable_cache(_unreadable_entry_failure(), seen)
    assert "could not be read (UnicodeDecodeError" in why and "compiling afresh" in why
    assert not spoilt.exists()
    for private in (folder, folder / "inductor", folder / "triton"):
        assert fresh_process.trust_problem(private) is None, private
    # A sibling lane that failed on the same spoilt cache retries without emptying again
    # (what the first lane compiled since is kept).
    compiled = folder / "inductor" / "fresh.py"
    compiled.write_text("x = 1")
    again = fresh_process.recover_unreadable_cache(_unreadable_entry_failure(), seen)
    assert "emptied by another lane" in again and compiled.exists()
    # Any other error is the run's own: no retry, nothing removed.
    later = fresh_process.cache_generation()
    assert fresh_process.recover_unreadable_cache(ValueError("bug"), later) is None
    assert compiled.exists()


def test_without_a_compile_cache_nothing_is_retried(fresh_process):
    assert fresh_process.recover_unreadable_cache(_unreadable_entry_failure(), 0) is None


def _tiny_study_inline(home: Path) -> tuple[Path, str, list[dict]]:
    """A one-method study run by a worker in this process (so a patched `Trainer.fit`
    applies): its store, study id and the slots' done messages."""
    from jobs.worker.executors import InlineExecutor
    from store import runs as store_runs

    store = home / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal"], tasks=["KL"]))
    store_jobs.enqueue_job(spec.to_dict(), path=store)
    done = run_collecting_done(Worker(InlineExecutor("cpu"), store_path=store, home=home))
    return store, str(store_runs.list_studies(path=store).study_id.iloc[0]), done


def _fit_failing_once(monkeypatch, error: Exception) -> list[int]:
    """Make the first `Trainer.fit` of this process raise ``error`` (after spoiling the
    compile cache, as a disk fault would); the calls are counted."""
    from engine.train import Trainer

    calls: list[int] = []
    real_fit = Trainer.fit

    def fit(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            folder = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
            (folder / "spoilt.json").write_bytes(b"\x00corrupt\xff")
            raise error
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "fit", fit)
    return calls


@pytest.mark.slow  # trains a tiny study inline
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_run_whose_compile_meets_an_unreadable_cache_is_trained_again(
    tmp_path, fresh_process, monkeypatch, caplog
):
    from store import runs as store_runs

    calls = _fit_failing_once(monkeypatch, _unreadable_entry_failure())
    store, study_id, done = _tiny_study_inline(tmp_path)
    runs = store_runs.list_runs([study_id], path=store)
    assert len(runs) == len(done) > 0  # every run stored
    assert store_runs.failed_runs([study_id], path=store).empty
    assert len(calls) == len(runs) + 1  # the failed compile, then every run once
    folder = Path(done[0]["compile_cache_dir"])
    assert not (folder / "spoilt.json").exists()
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("could not be read (UnicodeDecodeError" in w for w in warned), warned


@pytest.mark.slow  # trains a tiny study inline
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_run_failing_for_its_own_reason_is_not_trained_again(
    tmp_path, fresh_process, monkeypatch
):
    from store import runs as store_runs

    calls = _fit_failing_once(monkeypatch, ValueError("the run's own bug"))
    store, study_id, done = _tiny_study_inline(tmp_path)
    failed = store_runs.failed_runs([study_id], path=store)
    assert len(failed) == 1 and "the run's own bug" in failed["error_line"].iloc[0]
    assert len(calls) == len(done) + 1  # the failed run was not tried again
