"""``python -m jobs report STUDY_ID [STUDY_ID ...] -o report.html [--pdf] [--latex-dir DIR]``:
the study report (``--latex-dir``: its tables as LaTeX files too).

The report is built by ``pages.present.report`` (it reuses the pages' chart and table
builders) in this process: the command line sits above the pages' presentation helpers
(docs/architecture.md). Exit status: 0 written, 2 bad input (one line naming what is wrong).

``--pdf`` then prints the HTML to PDF with headless Chromium (Debian's ``chromium``), the
same offline browser the end-to-end tests drive; where none is installed it says so and
that the HTML prints to PDF from any browser.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from jobs.cli.arg_types import add_force_arg
from store.db import StoreError
from store.outputs import OutputRefused, atomic_output, check_output

BAD_INPUT = 2
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
# Chromium's background services try the network at start; nothing is fetched for the report
# (the browser tests start Chromium with these too, tests/helpers/browser.py).
CHROMIUM_OFFLINE_ARGS = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
PDF_TIMEOUT_S = 120


def find_chromium() -> str | None:
    """The first Chromium on ``PATH``, or None."""
    return next(filter(None, (shutil.which(name) for name in CHROMIUM_NAMES)), None)


def print_pdf(html: Path, pdf: Path, chromium: str, *, force: bool = False) -> bool:
    """Print ``html`` to ``pdf`` with headless Chromium, through
    `store.outputs.atomic_output` (Chromium prints to a new file that then takes ``pdf``'s
    name: never through a link, over a file only with ``force``); True when it was written.

    Raises:
        OutputRefused: ``pdf`` is a link or a folder, or exists and ``force`` is False.
    """
    args = [chromium, "--headless", *CHROMIUM_OFFLINE_ARGS, "--no-pdf-header-footer"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox
    with atomic_output(pdf, force=force) as partial:
        printed = [*args, f"--print-to-pdf={partial}", html.resolve().as_uri()]
        done = subprocess.run(printed, capture_output=True, timeout=PDF_TIMEOUT_S, check=False)
        if done.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            return False
    return True


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report (in this process), then the PDF when asked."""
    # Here, not at the top: the report pulls the statistics libraries (1-2 s), which every
    # other command (`up`, `worker` and its slot processes among them) would pay for.
    from pages.present.report import ReportInputError, write_latex, write_report

    chromium = find_chromium() if args.pdf else None
    if args.pdf and chromium is None:
        print(
            "error: --pdf needs Chromium (`apt-get install chromium`); without it, open the "
            "HTML report in a browser and print it to PDF",
            file=sys.stderr,
        )
        return BAD_INPUT
    output = Path(args.output)
    pdf = output.with_suffix(".pdf")
    try:
        if chromium is not None:  # refused before anything is written
            check_output(pdf, force=args.force)
        size = write_report(args.study_ids, output, force=args.force)
    except (ReportInputError, StoreError, OutputRefused, OSError) as exc:  # a damaged store
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(f"report written to {output} ({size / 1e6:.1f} MB)")
    if args.latex_dir:
        try:
            written = write_latex(args.study_ids, Path(args.latex_dir), force=args.force)
        except (ReportInputError, StoreError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return BAD_INPUT
        print(f"{len(written)} LaTeX tables written to {args.latex_dir}")
    if chromium is None:
        return 0
    if not print_pdf(output, pdf, chromium, force=args.force):
        print(f"error: Chromium could not print {args.output} to PDF", file=sys.stderr)
        return 1
    print(f"PDF written to {pdf}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``report`` on the CLI's subcommands."""
    p = sub.add_parser(
        "report", help="one self-contained HTML report of one or more studies (opens offline)"
    )
    p.add_argument("study_ids", nargs="*", metavar="STUDY_ID", help="`stats --list` shows them")
    p.add_argument("-o", "--output", default="report.html", help="the HTML file to write")
    add_force_arg(p)
    p.add_argument(
        "--pdf", action="store_true", help="also print it to PDF beside it (headless Chromium)"
    )
    p.add_argument(
        "--latex-dir",
        default=None,
        metavar="DIR",
        help="also write the report's tables as LaTeX (booktabs), one .tex file each, here",
    )
    p.set_defaults(func=cmd_report)
