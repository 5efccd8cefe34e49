"""``python -m jobs report STUDY_ID [STUDY_ID ...] -o report.html [--pdf] [--latex-dir DIR]``:
the study report (``--latex-dir``: its tables as LaTeX files too).

Its inputs are gathered by ``jobs.services.report_inputs`` (every store read, once) and
formatted by ``pages.present.report`` (it reuses the pages' chart and table builders) in this
process: the command line sits above the pages' presentation helpers (docs/architecture.md).
Writing the files is this module's (``store.outputs``: never through a link, over a file only
with ``--force``). Exit status: 0 written, 2 bad input (one line naming what is wrong).

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
from collections.abc import Mapping
from pathlib import Path

from jobs.cli.arg_types import add_force_arg
from jobs.services.report_record import ReportInputError
from store import outputs
from store.db import StoreError
from store.outputs import OutputRefused, atomic_output, write_text

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
    """Write the report (in this process), then the LaTeX tables and the PDF when asked."""
    # Here, not at the top: the report pulls the statistics libraries (1-2 s), which every
    # other command (`up`, `worker` and its slot processes among them) would pay for.
    from jobs.services.report_inputs import gather_report_inputs
    from pages.present.report import build_report, report_latex

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
        check_html_output(output, force=args.force)  # refused before anything is read
        if chromium is not None:
            outputs.check_output(pdf, force=args.force)
        inputs = gather_report_inputs(args.study_ids)
        text = build_report(inputs)
        write_text(output, text, force=args.force)
    except (ReportInputError, StoreError, OutputRefused, OSError) as exc:  # a damaged store
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(f"report written to {output} ({len(text.encode('utf-8')) / 1e6:.1f} MB)")
    if args.latex_dir:
        try:
            written = write_latex(report_latex(inputs), Path(args.latex_dir), force=args.force)
        except ReportInputError as exc:
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


def check_html_output(output: Path, *, force: bool = False) -> None:
    """Raise `ReportInputError` unless ``output`` is an ``.html`` file that can be written:
    not a link or a folder, and new unless ``force`` (`store.outputs.check_output`)."""
    if output.suffix.lower() not in (".html", ".htm"):
        raise ReportInputError(f"{str(output)!r}: -o writes an .html file")
    try:
        outputs.check_output(output, force=force)
    except OutputRefused as exc:
        raise ReportInputError(str(exc)) from exc
    folder = output.parent if str(output.parent) else Path(".")
    if not os.access(output if output.exists() else folder, os.W_OK):
        raise ReportInputError(f"{str(output)!r} cannot be written here")


def write_latex(texts: Mapping[str, str], folder: Path, *, force: bool = False) -> list[Path]:
    """Write the report's LaTeX tables (file name -> text) into ``folder`` (made if
    missing); returns the files. Each goes through `store.outputs.write_text`: none through
    a link, none over an existing file unless ``force`` (every name is checked before the
    first is written).

    Raises:
        ReportInputError: a folder or file that cannot be written.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in texts:
            outputs.check_output(folder / name, force=force)
        written = []
        for name, text in texts.items():
            write_text(folder / name, text, force=force)
            written.append(folder / name)
    except OutputRefused as exc:
        raise ReportInputError(str(exc)) from exc
    except OSError as exc:
        raise ReportInputError(
            f"{str(folder)!r} cannot be written ({exc.strerror or exc})"
        ) from exc
    return written


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
