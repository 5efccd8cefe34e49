"""What training costs: each finished run's measured cost per device, and live images/s.

The worker writes both: a run's cost in the run's own transaction (`store.runs.record_run`),
the live rates with the job's progress. Pages read them for the Launch page's estimate, the
Jobs page's time left and its GPU table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from store.db import connect


@dataclass(frozen=True)
class RunCost:
    """A finished run's measured cost (see the ``run_costs`` table)."""

    device_name: str
    slots_sharing: int
    task: str
    method: str
    image_size: int
    batch_size: int
    max_epochs: int
    n_train: int
    epochs_run: int
    wall_s: float

    @property
    def images_per_s(self) -> float:
        """Training images per second of the run's wall time, validation included."""
        return self.n_train * self.epochs_run / self.wall_s


COST_COLUMNS = (
    "run_id",
    "device_name",
    "slots_sharing",
    "task",
    "method",
    "image_size",
    "batch_size",
    "max_epochs",
    "n_train",
    "epochs_run",
    "wall_s",
    "images_per_s",
    "recorded_at",
)


def insert_run_cost(con: duckdb.DuckDBPyConnection, run_id: str, cost: RunCost) -> None:
    """Write ``cost`` inside the caller's transaction (the run's own, so both or neither)."""
    con.execute(
        f"INSERT INTO run_costs ({', '.join(COST_COLUMNS[:-1])}) "
        f"VALUES ({', '.join('?' * (len(COST_COLUMNS) - 1))})",
        [
            run_id,
            cost.device_name,
            cost.slots_sharing,
            cost.task,
            cost.method,
            cost.image_size,
            cost.batch_size,
            cost.max_epochs,
            cost.n_train,
            cost.epochs_run,
            cost.wall_s,
            cost.images_per_s,
        ],
    )


def run_costs(*, limit_per_device: int = 5000, path: Path | str | None = None) -> pd.DataFrame:
    """Measured run costs, the newest ``limit_per_device`` of each device, newest first."""
    with connect(path, read_only=True) as con:
        return con.execute(
            f"""
            SELECT {", ".join(COST_COLUMNS)} FROM run_costs
            QUALIFY row_number() OVER (PARTITION BY device_name ORDER BY recorded_at DESC)
                <= ?
            ORDER BY recorded_at DESC
            """,
            [limit_per_device],
        ).df()


def study_run_costs(study_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """Every stored run of a study (task, method) with its measured cost where it has one
    (cost columns NULL for runs stored before costs were kept)."""
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT r.run_id, r.task, r.method, c.device_name, c.slots_sharing, c.n_train,
                   c.max_epochs, c.epochs_run, c.wall_s
            FROM runs r LEFT JOIN run_costs c USING (run_id)
            WHERE r.study_id = ?
            """,
            [study_id],
        ).df()


def train_image_counts(study_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """The study's training images per (split seed, task): its dataset's films with that
    task's grade in the seed's train split (what a run of that task and seed trains on).
    Empty until the worker has stored the study's dataset and splits."""
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT s.seed AS split_seed, l.task, count(*) AS n_train
            FROM studies st
            JOIN splits s ON s.dataset_id = st.dataset_id AND s.split = 'train'
            JOIN labels l ON l.dataset_id = s.dataset_id AND l.image_id = s.image_id
            WHERE st.study_id = ?
            GROUP BY ALL ORDER BY ALL
            """,
            [study_id],
        ).df()


def set_device_rates(
    worker_id: str, rates: dict[str, tuple[float, int]], *, path: Path | str | None = None
) -> None:
    """Replace a worker's live rates: device -> (training images/s, runs training on it)."""
    with connect(path) as con:
        con.execute("DELETE FROM device_rates WHERE worker_id = ?", [worker_id])
        for device, (images_per_s, runs) in rates.items():
            con.execute(
                "INSERT INTO device_rates (worker_id, device, images_per_s, runs) "
                "VALUES (?, ?, ?, ?)",
                [worker_id, device, images_per_s, runs],
            )


def live_device_rates(
    *, fresh_within_s: float = 30.0, path: Path | str | None = None
) -> pd.DataFrame:
    """Rates written within ``fresh_within_s`` by workers still beating, with their host:
    worker_id, hostname, device, images_per_s, runs, updated_at."""
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT d.worker_id, w.hostname, d.device, d.images_per_s, d.runs, d.updated_at
            FROM device_rates d JOIN workers w USING (worker_id)
            WHERE w.stopped_at IS NULL
              AND d.updated_at >= current_timestamp - to_microseconds(CAST(? * 1e6 AS BIGINT))
            ORDER BY w.hostname, d.device
            """,
            [fresh_within_s],
        ).df()
