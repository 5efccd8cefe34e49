"""Progress while a labels CSV's rows are read and checked (`check_import`): a CSV of
100,000 rows takes seconds before any film is decoded, and a person waiting should see it move.

The phases, in order: `PARSING_CSV` (the file's bytes parsed into rows; only for a CSV of at
least `PARSE_PROGRESS_FROM` bytes, whose parse takes a noticeable time), `READING_ROWS`,
then, after the films, `CHECKING_ROWS`. The films' own progress is
`engine.films.inspection.Progress`; this is the rows'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

RowsProgress = Callable[[str, int, int], None]
"""Called while the rows are read and checked: (phase, done, in all), counted in the phase's
unit (`PHASE_UNITS`: bytes while the CSV is parsed, rows after)."""

#: The labels CSV's bytes parsed into rows (`engine.films.layouts.read_csv_rows`): counted in
#: bytes, since how many rows there are is known only once the file is read.
PARSING_CSV = "parsing the labels CSV"

#: Each listed film looked up in the folder (`engine.films.layouts`).
READING_ROWS = "reading the labels"
#: Each row's grades, side, patient and knee box parsed (`engine.films.rows`).
CHECKING_ROWS = "checking the rows"

#: Rows between two calls: often enough to move a bar, rare enough to cost nothing.
EVERY_ROWS = 1000

BYTES = "bytes"
ROWS = "rows"
#: What each phase's (done, in all) count.
PHASE_UNITS: Mapping[str, str] = {PARSING_CSV: BYTES, READING_ROWS: ROWS, CHECKING_ROWS: ROWS}
#: CSVs from this size (about 25,000 rows) say their parse: a smaller one parses in a blink,
#: and a line per import for it would be noise.
PARSE_PROGRESS_FROM = 1_000_000


def amount_done(phase: str, done: int, total: int, *, of: str = "/", grouped: bool = False) -> str:
    """How far a phase has come in its unit (`PHASE_UNITS`): "1.2/3.7 MB" while the CSV is
    parsed, "40000/100000 rows" after; ``of`` joins the two ("1.2 of 3.7 MB") and ``grouped``
    writes thousands apart ("40,000 of 100,000 rows"), for a page rather than a log."""
    if PHASE_UNITS.get(phase) == BYTES:
        return f"{done / 1e6:.1f}{of}{total / 1e6:.1f} MB"
    if grouped:
        return f"{done:,}{of}{total:,} rows"
    return f"{done}{of}{total} rows"


class RowTicker:
    """Counts rows through ``passes`` loops over ``total`` rows and calls ``progress`` every
    `EVERY_ROWS` rows, with the rows done so far (all passes averaged), and once with every
    row when `done` is called."""

    def __init__(
        self,
        progress: RowsProgress | None,
        phase: str,
        total: int,
        *,
        passes: int = 1,
        every: int = EVERY_ROWS,
    ) -> None:
        self.progress = progress
        self.phase = phase
        self.total = total
        self.passes = max(passes, 1)
        self.every = max(every, 1) * self.passes
        self.ticks = 0

    def tick(self) -> None:
        """One row of one pass done."""
        if self.progress is None:
            return
        self.ticks += 1
        done = self.ticks // self.passes
        # Every row is said once, by `done`: the loops may end before the phase does.
        if self.ticks % self.every == 0 and done < self.total:
            self.progress(self.phase, done, self.total)

    def done(self) -> None:
        """Every row done (called once, whatever the loops counted)."""
        if self.progress is not None:
            self.progress(self.phase, self.total, self.total)
