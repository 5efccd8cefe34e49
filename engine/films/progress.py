"""Progress while a labels CSV's rows are read and checked (`check_import`): a CSV of
100,000 rows takes seconds before any film is decoded, and a person waiting should see it move.

The films' own progress is `engine.films.inspection.Progress`; this is the rows'.
"""

from __future__ import annotations

from collections.abc import Callable

RowsProgress = Callable[[str, int, int], None]
"""Called while the rows are read and checked: (phase, rows done, rows in all); the phase is
`READING_ROWS` or `CHECKING_ROWS`."""

#: Each listed film looked up in the folder (`engine.films.layouts`).
READING_ROWS = "reading the labels"
#: Each row's grades, side, patient and knee box parsed (`engine.films.rows`).
CHECKING_ROWS = "checking the rows"

#: Rows between two calls: often enough to move a bar, rare enough to cost nothing.
EVERY_ROWS = 1000


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
