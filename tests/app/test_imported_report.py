"""The report's Methods on a study of results imported from another tool: it says SoftGrade
trained nothing (no search, early stopping or selection on validation), what the file holds,
and which intervals missing split sizes leave out."""

from __future__ import annotations

import html
import re

from jobs.services.report_inputs import gather_report_inputs
from jobs.services.study_analysis import UNSIZED_NOTE
from pages.present.report import build_report
from store.db import default_store_path
from tests.helpers.pages import make_store
from tests.jobs.services.test_results_io import imported_study, per_seed_rows

SELECTION = "selected run (the configuration with the lowest validation AMAE"


def methods_text(report: str) -> str:
    """The report's Methods section as a reader sees it."""
    section = report.split('<div class="methods">', 1)[1].split("</div>", 1)[0]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", section)))


def test_imported_results_are_described_as_imported_not_searched(home, tmp_path, capsys):
    csv = tmp_path / "no_sizes.csv"
    per_seed_rows(sizes=False).to_csv(csv, index=False)
    study = imported_study(capsys, str(csv), "--name", "other tool")
    methods = methods_text(build_report(gather_report_inputs([study], path=default_store_path())))
    assert "SoftGrade trained nothing for this study" in methods
    assert "2 tasks (KL, CPPD), 3 methods (Nominal, CORN, ours) and 5 seeds (seeds 0–4)" in (
        methods
    )
    assert "No configurations were sampled, no run was stopped early" in methods
    assert f"No split sizes (n_train, n_test) for CPPD, KL: {UNSIZED_NOTE}" in methods
    assert SELECTION not in methods and "Search space" not in methods
    assert "result as the imported file gives it" in methods


def test_a_report_of_imported_and_trained_studies_says_where_each_ones_metrics_come_from(
    home, tmp_path, capsys
):
    csv = tmp_path / "sized.csv"
    per_seed_rows().to_csv(csv, index=False)
    imported = imported_study(capsys, str(csv), "--name", "other tool")
    trained = make_store(home, name="trained here")
    inputs = gather_report_inputs([trained, imported], path=default_store_path())
    methods = methods_text(build_report(inputs))
    assert SELECTION in methods  # the trained study's runs were selected on validation
    assert "those of the imported results of “other tool” are" in methods
    assert "The file gives each seed's split sizes (n_train, n_test)" in methods
    assert "No split sizes" not in methods
