"""What keeping every run's test predictions costs, for the budget-matched comparison.

    python bench/budget_store_cost.py [--seeds 3] [--patients 60]

Writes a tiny synthetic study (tests/synthetic_study.py: the paper's search sizes, nominal 3,
binomial and beta 6, triangular and exponential 15 configurations; no training) into a fresh
store, then compares: the store as the worker leaves it (every run's val and test
predictions) with the same store once the unselected runs' test predictions are deleted, and
the default bundle (selected runs' predictions only) with one exported with
``all_test_predictions=True``. Store sizes are of a fresh copy (``COPY FROM DATABASE``), so
deleted rows do not linger; bundle sizes are of the zip.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.synthetic_study import write_synthetic_study

from store.bundle import export_study
from store.db import connect, init_schema

PAPER_CONFIGS = {"nominal": 3, "binomial": 6, "beta": 6, "triangular": 15, "exponential": 15}


def compacted_size(store: Path, folder: Path, name: str) -> int:
    """The bytes of a fresh copy of ``store`` (deleted rows gone)."""
    target = folder / f"{name}.duckdb"
    with connect(store) as con:
        con.execute(f"ATTACH '{target}' AS copy")
        source = con.execute("SELECT current_database()").fetchone()[0]
        con.execute(f"COPY FROM DATABASE {source} TO copy")
        con.execute("DETACH copy")
    return target.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--patients", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = folder / "store.duckdb"
        init_schema(store)
        study = write_synthetic_study(
            store, n_seeds=args.seeds, n_patients=args.patients,
            methods=tuple(PAPER_CONFIGS), configs=PAPER_CONFIGS,
        )  # fmt: skip
        with connect(store, read_only=True) as con:
            rows = dict(con.execute(
                "SELECT r.selected OR p.split = 'val', count(*) FROM predictions p "
                "JOIN runs r USING (run_id) GROUP BY ALL").fetchall())  # fmt: skip
        full = compacted_size(store, folder, "full")
        small = export_study(study, folder / "selected.zip", path=store).stat().st_size
        every = (
            export_study(study, folder / "every.zip", all_test_predictions=True, path=store)
            .stat()
            .st_size
        )
        with connect(store) as con:
            con.execute(
                "DELETE FROM predictions WHERE split = 'test' AND run_id IN "
                "(SELECT run_id FROM runs WHERE NOT selected)"
            )
        pruned = compacted_size(store, folder, "pruned")
    print(f"{args.seeds} seeds, {args.patients * 2} films, search sizes {PAPER_CONFIGS}")
    print(f"prediction rows: {rows.get(True, 0):,} kept anyway, {rows.get(False, 0):,} "
          "test rows of unselected runs")  # fmt: skip
    print(f"store: {full / 1024:,.0f} KiB with every run's test predictions, "
          f"{pruned / 1024:,.0f} KiB without (+{(full - pruned) / pruned:.0%})")  # fmt: skip
    print(f"bundle: {small / 1024:,.0f} KiB selected runs only, {every / 1024:,.0f} KiB with "
          f"every run's test predictions (+{(every - small) / small:.0%})")  # fmt: skip


if __name__ == "__main__":
    main()
