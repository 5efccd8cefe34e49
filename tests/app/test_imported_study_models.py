"""The pages that need trained models (Attention, Grade a film) on a study of results
imported from another tool (`softgrade import-results`): one plain sentence, no spec error."""

from __future__ import annotations

import pytest

from pages.present.imported_text import NO_MODELS_HERE
from tests.helpers.pages import images, run_page, texts
from tests.jobs.services.test_results_io import imported_study, per_seed_rows


@pytest.mark.parametrize("page", ["../../pages/attention.py", "../../pages/demo.py"])
def test_an_imported_study_says_it_has_no_models_to_show(page, home, tmp_path, capsys, monkeypatch):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    imported_study(capsys, str(csv))
    at = run_page(home, monkeypatch, page)
    said = texts(at, "info")  # Attention no longer offers it, and says why (issue 39)
    assert NO_MODELS_HERE in said or "imported results are not offered here" in said
    assert "imported from another tool's results" in NO_MODELS_HERE
    assert not at.error, [e.value for e in at.error]
    assert not at.get("metric") and not images(at)  # nothing graded, no map drawn
