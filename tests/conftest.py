"""Shared fixtures (tiny synthetic data, a fresh store, a tiny phantom cache) and the tiers.

Tiers: a test that trains a model or starts a process is marked ``slow``; every test under
tests/e2e/ is marked ``e2e`` here (it drives a browser against `jobs up`), and so is slow.
A test that asks for the trained ``finished_study`` is marked ``slow`` here, so the fast
tier (``pytest -m "not slow and not e2e"``) never trains: its stores are written straight
through store/ (tests/helpers/) or imported from the shipped reference bundle. The
definition is enforced, not only stated: a test not marked ``slow`` that starts a process
(a browser included) or trains a model fails (`_fast_tier_guard`, tests/helpers/tier_guard.py),
and a test measured over ~2 s of CPU is listed in tests/slow_by_cost.txt and marked slow.

What nearly every test would pay again is paid once per test process: Streamlit's scan for
installed components (each new AppTest), the empty store `init_schema` sets up (copied per
test), and argon2's default cost (tests hash passwords cheaply unless marked
``real_password_hash``); bench/RESULTS.md has what each saved.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torchvision
from argon2 import PasswordHasher

from engine.config import DatasetSpec
from store import users as store_users
from store.db import init_schema
from tests.helpers.shared_build import built_once
from tests.helpers.stores import fresh_store_at, repoint_checkpoints
from tests.helpers.studies import TINY_PHANTOM, FinishedStudy, train_finished_study
from tests.helpers.tier_guard import guard_fast_test

# Bytecode caches on: where the environment turns them off (PYTHONDONTWRITEBYTECODE=1, as on
# this project's dev machines), every process the tests start (xdist workers, training
# workers and their slot processes, app servers, CLI runs: hundreds of them) compiles each
# module of the checkout it imports from source, ~0.4 s of CPU a process. Let them cache it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Under pytest-xdist (-n N) the workers share the machine's cores: one intra-op thread each,
# rather than N processes each starting a thread per core whose idle OpenMP threads spin
# between operations, costing CPU time and stalling the other worker.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)


def _scan_component_manifests_once() -> None:
    """Keep the answer of Streamlit's scan for installed components for the session.

    Every new `AppTest` scans the metadata of every installed distribution for Streamlit
    components (``scan_component_manifests``): about 0.2 s of CPU each, in a suite of
    hundreds of AppTests. The packages installed do not change while the tests run, so the
    first scan's answer stands for the rest (the components are still registered per AppTest).
    A machine without Streamlit (the lent GPU, which runs only `pytest -m gpu`) has nothing to
    keep.
    """
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:
        return

    manifest_scanner.scan_component_manifests = functools.cache(  # type: ignore[assignment]
        manifest_scanner.scan_component_manifests
    )


_scan_component_manifests_once()


E2E_DIR = Path(__file__).resolve().parent / "e2e"
TRAINING_FIXTURES = frozenset({"finished_study"})
# Tests measured over ~2 s of CPU (bench/fast_tier.py --write-slow-list): slow by cost.
SLOW_BY_COST = Path(__file__).resolve().parent / "slow_by_cost.txt"


def _slow_by_cost() -> frozenset[str]:
    if not SLOW_BY_COST.exists():
        return frozenset()
    lines = SLOW_BY_COST.read_text().splitlines()
    return frozenset(line.rpartition(" ")[0] for line in lines if line and line[0] != "#")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark browser tests ``e2e`` and ``slow`` by folder, tests on a trained study ``slow``
    by the fixture they ask for, and tests measured over the fast tier's CPU limit ``slow``
    by the list the bench writes."""
    slow_by_cost = _slow_by_cost()
    for item in items:
        if item.nodeid in slow_by_cost:
            item.add_marker(pytest.mark.slow)
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)
        elif TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fast_tier_guard(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Fail a fast-tier test (not marked ``slow``) that starts a process or trains a model."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    with guard_fast_test(monkeypatch) as violations:
        yield
    if violations.on_threads:
        pytest.fail("\n".join(violations.on_threads), pytrace=False)


#: Argon2id at the cheapest parameters the library takes: what most tests need of a password
#: hash is that it is argon2id and verifies, and the library's defaults (64 MiB, 3 passes, 4
#: lanes) cost ~0.2 s of CPU a hash or check, which sign-in, account and role tests pay
#: several times each. `store.users` keeps its defaults; a test marked ``real_password_hash``
#: runs with them (tests/store/test_users.py checks the defaults and the upgrade from these).
CHEAP_HASHER = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@pytest.fixture(autouse=True)
def _cheap_password_hashes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hash passwords with :data:`CHEAP_HASHER` unless the test is marked
    ``real_password_hash``."""
    if request.node.get_closest_marker("real_password_hash") is None:
        monkeypatch.setattr(store_users, "_HASHER", CHEAP_HASHER)


@pytest.fixture
def images() -> torch.Tensor:
    """Eight random grey 32x32 uint8 images (N, 1, 32, 32)."""
    return torch.randint(
        0, 256, (8, 1, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )


@pytest.fixture
def labels() -> torch.Tensor:
    """Grades 0-3 for the eight images."""
    return torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])


@pytest.fixture
def resnet() -> torch.nn.Module:
    """An untrained torchvision ResNet18 with four outputs."""
    return torchvision.models.resnet18(weights=None, num_classes=4)


@pytest.fixture(autouse=True)
def _main_module_restored() -> Iterator[None]:
    """Put back ``sys.modules["__main__"]`` after each test.

    An AppTest run leaves the page script it ran last as ``__main__`` (Streamlit does, see
    `engine.spawn`); a later test that starts a ``spawn`` child would have that child re-run
    app.py instead of the test's target, and the child dies before it does anything.
    """
    saved = sys.modules.get("__main__")
    yield
    if saved is not None:
        sys.modules["__main__"] = saved


@pytest.fixture(scope="session")
def empty_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store file just set up by `init_schema` (once per test process), for
    :func:`fresh_store_at` to copy: setting one up costs ~0.1 s of CPU and a thousand tests
    start from one."""
    path = tmp_path_factory.mktemp("template") / "empty.duckdb"
    init_schema(path)
    assert not path.with_name(path.name + ".wal").exists()  # closed, so all in the one file
    return path


@pytest.fixture
def store(tmp_path: Path, empty_store_template: Path) -> Path:
    """A fresh store file with the current schema."""
    return fresh_store_at(tmp_path / "test.duckdb", empty_store_template)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SOFTGRADE_HOME pointed at a temporary folder (store, caches, checkpoints)."""
    monkeypatch.setenv("SOFTGRADE_HOME", str(tmp_path))
    monkeypatch.delenv("SOFTGRADE_DB", raising=False)  # the store in it, not one set outside
    return tmp_path


@pytest.fixture(scope="session")
def tiny_phantom(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 60-film phantom cached at 32 px (built once per test session)."""
    from engine.datasets import prepare_dataset

    root = tmp_path_factory.mktemp("cache")
    return prepare_dataset(DatasetSpec("phantom", dict(TINY_PHANTOM)), 32, root).cache_dir


@pytest.fixture(params=["cpu", "cuda"])
def device(request: pytest.FixtureRequest) -> str:
    """Each device the machine has; CUDA cases skip where there is no GPU."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine")
    return request.param


@pytest.fixture(scope="session")
def finished_study(tmp_path_factory: pytest.TempPathFactory) -> FinishedStudy:
    """Three seeds × two tasks × three methods, two epochs each, at 32 px on the CPU: trained
    once per session, each xdist worker on its own copy (tests/helpers/shared_build.py)."""
    built = built_once(tmp_path_factory, "finished-study", train_finished_study)
    store = built.folder / "softgrade.duckdb"
    repoint_checkpoints(store, built.built_in, built.folder)
    return FinishedStudy(home=built.folder, store=store, **built.description)
