"""A factorial study end to end on the phantom, on the CPU (issue 29, item 1): `softgrade run
--seeds 3x2` trains every split from every init through the real worker, the store keeps
distinct split and init seeds, and `softgrade stats --components`, the report and Compare →
Statistics give each pair's variance components."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from engine.analysis import variance_components as vc
from jobs.services.report_inputs import gather_report_inputs
from pages.present import variance_tables
from pages.present.report import comparisons
from store import analysis as store_analysis
from store import runs as store_runs
from store import studies as store_studies
from tests.helpers.pages import run_page, texts
from tests.helpers.studies import run_jobs_cli, tiny_study
from tests.helpers.workers import seed_tiny_phantom

pytestmark = pytest.mark.slow  # trains a study

SPLITS, INITS = 3, 2


@pytest.fixture(scope="module")
def factorial_home(
    tmp_path_factory: pytest.TempPathFactory, tiny_phantom: Path
) -> tuple[Path, str]:
    """A store holding a 3 splits × 2 inits study of nominal and beta on KL, trained by
    `softgrade run` with the file's seeds replaced by ``--seeds 3x2`` (on the tiny phantom
    already rendered)."""
    home = seed_tiny_phantom(tmp_path_factory.mktemp("factorial"), tiny_phantom)
    study = home / "study.yaml"
    study.write_text(yaml.safe_dump(tiny_study(tasks=["KL"], seeds=[0]), sort_keys=False))
    done = run_jobs_cli(
        home, "run", str(study), "--seeds", f"{SPLITS}x{INITS}", "--executor", "inline"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    studies = store_runs.list_studies(path=home / "softgrade.duckdb")
    return home, str(studies["study_id"].iloc[0])


def test_the_store_holds_every_split_crossed_with_every_init(factorial_home):
    home, study_id = factorial_home
    store = home / "softgrade.duckdb"
    runs = store_runs.list_runs([study_id], path=store)
    assert len(runs) == 2 * SPLITS * INITS  # methods × cells, one configuration each
    cells = set(zip(runs["split_seed"], runs["init_seed"], strict=True))
    assert cells == {(s, i) for s in range(SPLITS) for i in range(INITS)}
    # Each method has every cell once, under the same pairing seed.
    for _, method_runs in runs.groupby("method"):
        keyed = method_runs.set_index("seed")[["split_seed", "init_seed"]]
        assert keyed.to_dict("index") == {
            s * INITS + i: {"split_seed": s, "init_seed": i}
            for s in range(SPLITS)
            for i in range(INITS)
        }
    spec = store_studies.get_study(study_id, path=store).spec
    assert spec["seed_design"] == {"splits": SPLITS, "inits": INITS}
    # Both inits of a split are tested on that split's films; another split tests others.
    films = store_analysis.selected_test_films([study_id], path=store)
    tested = {int(seed): set(part["image_id"]) for seed, part in films.groupby("seed")}
    assert tested[0] == tested[1] and tested[2] == tested[3] and tested[4] == tested[5]
    assert tested[0] != tested[2] and tested[2] != tested[4]


def test_stats_components_give_each_pairs_variance_components(factorial_home):
    home, study_id = factorial_home
    out = home / "components.csv"
    done = run_jobs_cli(home, "stats", study_id, "--components", "-o", str(out))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out, comment="#")
    assert list(table.columns) == list(vc.COMPONENT_COLUMNS)
    amae = table[table["metric"] == "amae"].iloc[0]
    assert (amae.n_splits, amae.n_inits, amae.n_cells) == (SPLITS, INITS, SPLITS * INITS)
    assert min(amae.var_split, amae.var_init, amae.var_residual) >= 0
    assert amae.ci_factorial_low <= amae.mean_diff <= amae.ci_factorial_high
    printed = run_jobs_cli(home, "stats", study_id, "--bootstrap", "0")
    assert printed.returncode == 0, printed.stderr
    assert "factorial seeds design" in printed.stdout and "--components" in printed.stdout
    shown = run_jobs_cli(home, "stats", study_id, "--components", "--metric", "AMAE")
    assert "var_split" in shown.stdout and "Design-corrected" in shown.stdout


def test_report_and_statistics_tab_show_the_components(factorial_home, monkeypatch):
    home, study_id = factorial_home
    store = home / "softgrade.duckdb"
    (inputs,) = gather_report_inputs([study_id], path=store, n_boot=0).studies
    html = "".join(comparisons.variance_parts(inputs))  # on the primary metric
    assert variance_tables.SECTION_TITLE in html and "3 splits × 2 inits" in html
    at = run_page(home, monkeypatch, tab="Statistics")
    assert f"**{variance_tables.SECTION_TITLE}**" in texts(at, "markdown")
    # Issue 38: the interval to trust first, the components a click away, in two tables.
    frames = [d.value for d in at.dataframe]
    assert any(variance_tables.COMPONENT_HEADERS["var_split"] in f for f in frames)
    design = variance_tables.COMPONENT_HEADERS["design"]
    assert [list(f[design]) for f in frames if design in f][0] == ["3 × 2"]
    assert re.search(r"3 splits × 2 inits", texts(at, "caption"))
    # The seeds planner plans with the design's own ρ beside the assumed ones.
    planned = [c for d in at.dataframe for c in d.value.columns if "design estimate" in c]
    assert len(planned) == 1


def test_a_bundle_of_some_seeds_carries_their_split_and_init_seeds(factorial_home, tmp_path):
    from store.bundle import export_study, import_study
    from store.db import init_schema

    home, study_id = factorial_home
    bundle = export_study(
        study_id, tmp_path / "f.zip", seeds=[2, 3, 5], path=home / "softgrade.duckdb"
    )
    other = tmp_path / "other.duckdb"
    init_schema(other)
    imported = import_study(bundle, path=other)
    factors = store_runs.seed_factors(imported.study_id, path=other)
    assert factors.values.tolist() == [[2, 1, 0], [3, 1, 1], [5, 2, 1]]
    # Only the splits those seeds trained on travel: split seeds 1 and 2, by their own seed.
    sizes = store_analysis.split_sizes(imported.study_id, path=other)
    original = store_analysis.split_sizes(study_id, path=home / "softgrade.duckdb")
    keep = original["seed"].isin([2, 3, 5])
    assert sizes.reset_index(drop=True).equals(original[keep].reset_index(drop=True))
