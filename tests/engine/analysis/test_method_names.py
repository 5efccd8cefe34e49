"""An imported method's name (`softgrade import-results`, MLflow runs) is shown on every page,
so a name that looks like another (a Cyrillic "о" in "nominal") or like none (blank Hangul
fillers) is refused, naming the character and what names may hold (issue 39)."""

from __future__ import annotations

import re

import pytest

from engine.analysis.results_file import ResultsFileError, check_results
from tests.jobs.services.test_results_io import _films


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("n\u043eminal", r"'о' \(U\+043E CYRILLIC SMALL LETTER O\)"),
        ("\u3164", r"only blanks \(U\+3164 HANGUL FILLER\)"),
        ("ours\u3164", r"holds a blank \(U\+3164 HANGUL FILLER\)"),
        ("![x](http://e/x.png)", r"'!' \(U\+0021 EXCLAMATION MARK\)"),
        ("www.e.org@x", r"'@'"),
    ],
)
def test_a_look_alike_blank_or_markup_method_name_is_refused_with_the_reason(name, said):
    where = r"row 2 \(line 3 of the CSV\), column 'method'"
    with pytest.raises(ResultsFileError, match=where) as e:
        check_results(_films(method_1=name))
    assert "ASCII letters and digits" in str(e.value) or "only blanks" in str(e.value)
    assert re.search(said, str(e.value)), str(e.value)


@pytest.mark.parametrize("name", ["ours", "ours_v2", "CORN (ResNet50)", "soft+ordinal 1.5"])
def test_ordinary_method_names_are_kept(name):
    checked = check_results(_films(method_0=name, method_1=name, method_2=name,
                                   method_3=name, method_4=name, method_5=name))  # fmt: skip
    assert checked is not None
