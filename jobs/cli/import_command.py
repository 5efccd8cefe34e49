"""``python -m jobs import PATH``: check a folder of films (every row, every film) and
register it as a dataset, the report one table and a summary; ``import-study FILE``: load an
exported study bundle into the store (``reference``: the bundled 20-seed reference study).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from jobs.cli.cli_logging import log_file, native_stderr_to
from jobs.cli.cli_store import open_store
from jobs.cli.lab_commands import os_user
from store.db import softgrade_home


def cmd_import(args: argparse.Namespace) -> int:
    """Check a folder of films and register it; the report is one table and a summary.

    Exit status: 0 clean (or registered); 1 problems found (``--check``) or bad films and no
    ``--skip-bad`` (nothing registered); 2 the folder, CSV or layout cannot be read at all.
    """
    from engine.films import check_import
    from jobs.services.importer import ImportRefused, import_detector, register_import

    # The report's notes name the detector; an unknown key is one message (exit 2).
    detector = import_detector(args.detector)
    # Decoders (libjpeg in GDCM) and the decoding processes write to descriptor 2 themselves:
    # that goes to the log file, the report and progress to the terminal.
    try:
        with native_stderr_to(log_file(softgrade_home()), f"import {args.path}"):
            # Made inside: only here is sys.stderr the terminal apart from descriptor 2.
            line = ProgressLine(sys.stderr)
            try:
                report = check_import(
                    Path(args.path),
                    labels_csv=Path(args.labels) if args.labels else None,
                    layout=args.layout,
                    layout_split=args.layout_split,
                    workers=args.workers,
                    progress=line,
                    detector=detector,
                    rows_progress=line.rows,  # a large labels CSV takes seconds before any film
                )
            finally:
                line.end()  # an error (a CSV over the row cap) starts on a line of its own
    except OSError as exc:  # e.g. a folder this user may not read
        raise ValueError(f"{args.path} cannot be read ({exc.strerror or exc})") from exc
    print(format_report(report))
    if args.check:
        return 0 if report.clean else 1
    if report.n_errors and not args.skip_bad:
        print(
            "nothing registered: fix the errors above and import again, or pass --skip-bad "
            f"to register the {len(report.films)} good film(s) and keep this report"
        )
        return 1
    open_store()
    try:
        done = register_import(report, name=args.name, skip_bad=args.skip_bad, by=os_user())
    except ImportRefused as exc:
        print(f"nothing registered: {exc}")
        return 1
    print(
        f"registered {done.dataset_id} ({args.name or report.root.name}): {done.n_films} "
        f"film(s), {done.n_left_out} left out; import {done.import_id} keeps the report"
    )
    params = ", ".join(f"{k}: {v}" for k, v in done.spec.params.items())
    print(f"use it in a study file as  dataset: {{kind: folder, {params}}}")
    return 0


class ProgressLine:
    """Films checked so far and the rate, on one line of a terminal (or every few seconds
    as plain lines when the stream is a file)."""

    def __init__(self, stream: Any, every_s: float = 2.0) -> None:
        self.stream = stream
        self.every_s = every_s
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.last = 0.0
        self.open = False  # a terminal line written without its newline yet

    def __call__(self, done: int, total: int, rate: float) -> None:
        """Show (done, total, films per second), throttled; always the last one."""
        if self._due(done, total):
            self._show(f"checked {done}/{total} films ({rate:.0f} films/s)", done == total)

    def rows(self, phase: str, done: int, total: int) -> None:
        """Show (phase, done, in all) as a labels CSV is parsed (in MB), read and checked
        (in rows; `engine.films.RowsProgress`), throttled the same way; always the last one."""
        from engine.films import amount_done

        if self._due(done, total):
            self._show(f"{phase}: {amount_done(phase, done, total)}", done == total)

    def _due(self, done: int, total: int) -> bool:
        """Whether to show this step: the last always, others once per interval (a terminal
        line is rewritten in place, so it may move more often than a log gets lines)."""
        now = time.monotonic()
        if done != total and now - self.last < (0.2 if self.tty else self.every_s):
            return False
        self.last = now
        return True

    def end(self) -> None:
        """End a terminal line left open by a step that was not the last (an error came)."""
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False

    def _show(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write("\r" + text + ("\n" if final else ""))
            self.open = not final
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def format_report(report: Any, width: int = 100) -> str:
    """The import report as one table (file, row, problem, what to do) and a summary; names
    and cells with control characters are shown escaped (`engine.films.escaped`)."""
    import textwrap

    from engine.films import escaped

    lines = []
    if not report.problems.empty:
        # Escaped: a file name, cell or tag may hold a terminal's escape codes or a U+202E.
        rows = [
            (
                escaped(p.file) or "-",
                "" if pd.isna(p.row) else str(int(p.row)),
                ("warning: " if p.severity == "warning" else "") + escaped(p.problem),
                escaped(p.action),
            )
            for p in report.problems.itertuples()
        ]
        file_w = min(40, max(4, *(len(r[0]) for r in rows)))
        row_w = max(3, *(len(r[1]) for r in rows))
        text_w = max(30, (width - file_w - row_w - 6) * 3 // 5)
        todo_w = max(20, width - file_w - row_w - text_w - 6)
        head = ("file", "row", "problem", "what to do")
        lines.append(_table_line(head, (file_w, row_w, text_w, todo_w)))
        lines.append(
            _table_line(
                tuple("-" * w for w in (file_w, row_w, text_w, todo_w)),
                (file_w, row_w, text_w, todo_w),
            )
        )
        for file, row, problem, action in rows:
            parts = [
                textwrap.wrap(file, file_w) or [""],
                [row],
                textwrap.wrap(problem, text_w) or [""],
                textwrap.wrap(action, todo_w) or [""],
            ]
            for i in range(max(len(p) for p in parts)):
                cells = tuple(p[i] if i < len(p) else "" for p in parts)
                lines.append(_table_line(cells, (file_w, row_w, text_w, todo_w)))
    split = f", layout split {report.layout_split}" if report.layout_split else ""
    lines.append(
        f"{escaped(str(report.root))} ({report.layout} layout{split}): {report.n_rows} row(s), "
        f"{report.n_files} file(s) decoded in {report.checked_s:.1f} s; "
        f"{len(report.films)} good film(s), {len(report.left_out)} left out; "
        f"{report.n_errors} error(s), {report.n_warnings} warning(s)"
    )
    lines += [f"note: {escaped(n)}" for n in report.notes]
    return "\n".join(lines)


def _table_line(cells: tuple[str, ...], widths: tuple[int, ...]) -> str:
    file, row, problem, action = cells
    w = widths
    return f"{file:<{w[0]}}  {row:>{w[1]}}  {problem:<{w[2]}}  {action:<{w[3]}}".rstrip()


# `import-study reference` loads the reference study installed with the package.
REFERENCE_WORD = "reference"


def cmd_import_study(args: argparse.Namespace) -> int:
    """Load a study bundle into the store (idempotent)."""
    from store.bundle import REFERENCE_STUDY, import_study

    path = open_store()
    bundle = REFERENCE_STUDY if args.file == REFERENCE_WORD else Path(args.file)
    done = import_study(bundle, path=path)
    seeds = f"{len(done.seeds)} seed{'s' * (len(done.seeds) != 1)}"
    if done.created:
        print(f"imported “{done.name}” ({done.study_id}): {done.runs} runs, {seeds}, into {path}")
    else:
        print(f"“{done.name}” ({done.study_id}) is already in {path}; nothing changed")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The ``import`` and ``import-study`` commands."""
    p = sub.add_parser("import", help="check a folder of films and register it as a dataset")
    p.add_argument("path", help="the folder of films")
    p.add_argument("--labels", default=None, help="labels CSV (default PATH/labels.csv)")
    p.add_argument("--name", default=None, help="the dataset's name (default: the folder's)")
    p.add_argument("--check", action="store_true", help="only report; register nothing")
    p.add_argument(
        "--skip-bad", action="store_true", help="register the good films, leave the bad out"
    )
    p.add_argument("--layout", default="auto", choices=("auto", "csv", "grade_folders", "dicom"))
    p.add_argument(
        "--layout-split",
        default="ignore",
        choices=("ignore", "test"),
        help="grade folders with train/val/test: ignore their split, or make test the test set",
    )
    p.add_argument("--workers", type=int, default=None, help="decoding processes")
    p.add_argument(
        "--detector",
        default="latest",
        help="knee detector: latest (the newest trained one in SOFTGRADE_HOME/detectors; "
        "classical when none is trained), classical, or a trained detector's key",
    )
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("import-study", help="load an exported study bundle into the store")
    p.add_argument(
        "file",
        help=f"a study bundle (.zip), or '{REFERENCE_WORD}' for the bundled 20-seed reference",
    )
    p.set_defaults(func=cmd_import_study)
