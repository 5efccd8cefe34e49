"""How tall the study report is with many methods: build a synthetic study of every
registered method (14), write its report and measure it in Chromium.

    python bench/report_height.py [--seeds 6] [--width 1400] [--pdf] [--keep report.html]
    python bench/report_height.py --reference       # the bundled 20-seed study, 5 methods

The study is `tests.helpers.synthetic_study` (no training: 40 patients, one configuration a
method, every seed finished), the one the many-method report tests use. The report is built
in process (`jobs.services.report_inputs` gathered, `pages.present.report.build_report`
formatted: what `jobs report` writes), opened in
headless Chromium (Playwright) at the given window width, and measured: the whole page's
height (``document.documentElement.scrollHeight``) and each section's, tallest first. With
``--pdf`` it also prints the page to PDF as `jobs report --pdf` does, counts its pages and
checks the widths again in print media at a printed page's width.
Issue 38's goal: under ~15,000 px for 14 methods at the report's normal width.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.methods import method_names  # noqa: E402
from jobs.services.report_inputs import gather_report_inputs  # noqa: E402
from pages.present.report import build_report  # noqa: E402
from store.bundle import REFERENCE_STUDY, import_study  # noqa: E402
from store.db import init_schema  # noqa: E402
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.helpers.pages import finished_synthetic_store  # noqa: E402

# Each section's height and the page's, read in the browser after layout.
MEASURE_JS = """() => ({
  page: document.documentElement.scrollHeight,
  sections: [...document.querySelectorAll('section')].map(
    s => [s.id, Math.round(s.getBoundingClientRect().height)]),
  wide: [...document.querySelectorAll('table, svg')].filter(
    e => e.getBoundingClientRect().width > document.body.clientWidth + 1).length,
})"""


PRINT_WIDTH_PX = 980


def report_of(home: Path, n_seeds: int, reference: bool) -> Path:
    """Write the report of a finished 14-method synthetic study (or of the bundled 20-seed
    reference study, 5 methods); return its path."""
    if reference:
        init_schema(home / "softgrade.duckdb")
        study = import_study(REFERENCE_STUDY, path=home / "softgrade.duckdb").study_id
    else:
        methods = method_names()
        study = finished_synthetic_store(home, n_seeds=n_seeds, n_patients=40, methods=methods)
    out = home / "report.html"
    inputs = gather_report_inputs([study], path=home / "softgrade.duckdb")
    out.write_text(build_report(inputs), encoding="utf-8")
    return out


def measure(report: Path, width: int, pdf: Path | None) -> dict[str, object]:
    """The page's and its sections' heights in Chromium at ``width`` px (and the PDF)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": width, "height": 1000})
        tab.goto(report.as_uri())
        figures = tab.evaluate(MEASURE_JS)
        if pdf is not None:
            tab.pdf(path=str(pdf), landscape=True, prefer_css_page_size=True)
            # The same check in print, at a landscape Letter page's width inside its 10 mm
            # margins (11 in − 20 mm at 96 px an inch): what the PDF's pages hold.
            tab.emulate_media(media="print")
            tab.set_viewport_size({"width": PRINT_WIDTH_PX, "height": 1000})
            figures["wide_in_print"] = tab.evaluate(MEASURE_JS)["wide"]
        browser.close()
    return figures


def pdf_pages(pdf: Path) -> int:
    """Pages in a PDF, by its page objects (no PDF library needed)."""
    import re

    return len(re.findall(rb"/Type\s*/Page[^s]", pdf.read_bytes()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--width", type=int, default=1400, help="browser window width, px")
    parser.add_argument("--pdf", action="store_true", help="also print it and count pages")
    parser.add_argument("--keep", type=Path, help="copy the report's HTML here")
    parser.add_argument(
        "--reference", action="store_true", help="the bundled reference study (5 methods)"
    )
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("error: no Chromium here (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        report = report_of(home, args.seeds, args.reference)
        pdf = home / "report.pdf" if args.pdf else None
        figures = measure(report, args.width, pdf)
        if args.keep is not None:
            args.keep.write_text(report.read_text(encoding="utf-8"), encoding="utf-8")
        what = "reference study" if args.reference else f"{len(method_names())} methods"
        print(f"{what}, {'20' if args.reference else args.seeds} seeds, window {args.width} px")
        print(f"report height: {figures['page']:,} px")
        for section, height in sorted(figures["sections"], key=lambda s: -s[1]):
            print(f"  {section:<22} {height:>7,} px")
        print(f"tables or charts wider than the page: {figures['wide']}")
        if pdf is not None:
            print(f"PDF: {pdf_pages(pdf)} landscape pages")
            print(f"tables or charts wider than a printed page: {figures['wide_in_print']}")


if __name__ == "__main__":
    main()
