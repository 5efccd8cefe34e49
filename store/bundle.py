"""A study as one portable file: export it from one store, import it into any other.

A bundle is a zip of Parquet files and a ``card.json``:

- ``runs.parquet``: every run of the exported seeds (configuration, validation AMAE, epochs
  run, which one was selected), for the search explorer and the expected best validation
  AMAE by configurations tried (`engine.analysis.expected_max`), which need no predictions;
- ``predictions.parquet`` and ``epochs.parquet``: the selected runs' per-film probabilities
  (validation and test) and their epoch metrics (learning curves); exported with
  ``all_test_predictions`` it also holds every other run's test predictions (for the
  budget-matched comparison);
- ``images.parquet``, ``labels.parquet``, ``splits.parquet``, ``split_rules.parquet``: the
  dataset the study ran on and its splits for those seeds;
- ``card.json``: the study (name, spec), the dataset row and the study card (GPU, versions,
  date, command), the bundle's format version and each table's SHA-256 (``sha256``; bundles
  written before it have none).

A bundle is read only after its zip passes `STUDY_ZIP_LIMITS` (`store.zip_limits`: no zip
bomb) and its card has the fields import needs; each table must match its hash.

The bundled reference study (``store/examples/reference-study.zip``) is such a file. Importing is
idempotent: a study already in the store is left as it is. Nothing stored is changed: where
the store already holds the same dataset with other labels or other splits for these seeds,
the study comes in on a dataset of its own (``... · imported splits``).
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from store.datasets import dataset_id_for
from store.db import StoreError, connect, one_row, one_value
from store.outputs import atomic_output, check_output
from store.zip_limits import (
    ZipLimitError,
    ZipLimits,
    check_zip_limits,
    file_sha256,
    member_sha256,
)

BUNDLE_VERSION = 1
#: The reference study shipped with SoftGrade (paper protocol on the phantom, 20 seeds).
# Installed with the package (store/examples/); a wheel installs files unzipped, so this is a path.
REFERENCE_STUDY = Path(str(resources.files("store.examples").joinpath("reference-study.zip")))

#: What a study bundle may hold, checked from its directory before anything is unpacked (the
#: reference study's 20 seeds take 3 MiB; a lab study of 10,000 films some hundred MiB).
STUDY_ZIP_LIMITS = ZipLimits(
    max_entries=32, max_entry_bytes=2**30, max_total_bytes=2 * 2**30, max_ratio=100
)

TABLES = (
    "runs",
    "predictions",
    "epochs",
    "images",
    "labels",
    "splits",
    "split_rules",
)


@dataclass(frozen=True)
class ImportedStudy:
    """What `import_study` did: the study's id and name, and whether it was new."""

    study_id: str
    name: str
    created: bool
    runs: int
    seeds: tuple[int, ...]


def export_study(
    study_id: str,
    out: Path | str,
    *,
    seeds: list[int] | None = None,
    card: dict[str, Any] | None = None,
    name: str | None = None,
    all_test_predictions: bool = False,
    force: bool = False,
    path: Path | str | None = None,
) -> Path:
    """Write one study (or some of its seeds) as a bundle file, through
    `store.outputs.atomic_output` (never through a link; over a file only with ``force``).

    Args:
        study_id: The study to export.
        out: The zip file to write.
        seeds: Seeds to export (e.g. only the complete ones); None exports every seed with
            a stored run.
        card: Provenance to ship with it (GPU, versions, date, command, ...).
        name: The name the study takes when imported; None keeps its own.
        all_test_predictions: Also ship the test predictions of the runs that were not
            selected (budget-matched comparison needs them: `engine.analysis.budget`); by
            default only the selected runs' predictions travel.
        force: Replace an existing file named ``out`` (``export --force``).
        path: The store.

    Returns:
        The written file.

    Raises:
        StoreError: No such study, or it has no runs for the seeds asked for.
        OutputRefused: ``out`` is a link or a folder, or exists and ``force`` is False.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    check_output(out, force=force)  # before the work, and again as the file is named
    with connect(path, read_only=True) as con:
        study = con.execute(
            "SELECT study_id, name, dataset_id, spec, created_at FROM studies WHERE study_id = ?",
            [study_id],
        ).fetchone()
        if study is None:
            raise StoreError(f"no study {study_id!r} in the store")
        dataset_id = study[2]
        if seeds is None:
            seeds = [
                r[0]
                for r in con.execute(
                    "SELECT DISTINCT seed FROM runs WHERE study_id = ? ORDER BY seed", [study_id]
                ).fetchall()
            ]
        if not seeds:
            raise StoreError(f"study {study_id!r} has no runs to export")
        dataset = con.execute(
            "SELECT dataset_id, kind, spec_key, params, n_images FROM datasets "
            "WHERE dataset_id = ?",
            [dataset_id],
        ).fetchone()
        if dataset is None:
            raise StoreError(f"study {study_id!r} has no dataset recorded; nothing to export")
        with tempfile.TemporaryDirectory() as tmp:
            counts = _copy_tables(
                con, Path(tmp), study_id, dataset_id, list(seeds), all_test_predictions
            )
            if counts["runs"] == 0:
                raise StoreError(f"study {study_id!r} has no runs for seeds {seeds}")
            spec = json.loads(study[3])
            spec["seeds"] = sorted(int(s) for s in seeds)
            meta = {
                "bundle_version": BUNDLE_VERSION,
                "study": {
                    "study_id": study[0],
                    "name": name or study[1],
                    "original_name": study[1],
                    "spec": spec,
                    "created_at": str(study[4]),
                },
                "dataset": {
                    "dataset_id": dataset[0],
                    "kind": dataset[1],
                    "spec_key": dataset[2],
                    "params": json.loads(dataset[3]),
                    "n_images": dataset[4],
                },
                "seeds": spec["seeds"],
                "rows": counts,
                "card": card or {},
            }
            write_bundle(out, meta, Path(tmp), force)
    return out


def write_bundle(out: Path, meta: dict[str, Any], folder: Path, force: bool) -> None:
    """Zip ``card.json`` (``meta``) and each table's Parquet file from ``folder`` to ``out``."""
    # Each table's hash: importing checks them (bundles written before this carry none).
    meta = meta | {"sha256": {f"{t}.parquet": file_sha256(folder / f"{t}.parquet") for t in TABLES}}
    with (
        atomic_output(out, force=force) as partial,
        zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as zf,
    ):
        zf.writestr("card.json", json.dumps(meta, indent=2, default=str))
        for table in TABLES:
            zf.write(folder / f"{table}.parquet", f"{table}.parquet")


# The split seeds the exported seeds trained on (a factorial study's seed is a pairing key;
# runs stored before schema version 5 drew their split with their seed).
_SPLIT_SEEDS = """
    SELECT coalesce(split_seed, seed) FROM runs
    WHERE study_id = $study AND seed IN (SELECT unnest($seeds))"""


def _copy_tables(
    con: duckdb.DuckDBPyConnection,
    folder: Path,
    study_id: str,
    dataset_id: str,
    seeds: list[int],
    all_test: bool = False,
) -> dict[str, int]:
    """COPY each bundle table to ``folder/<table>.parquet``; returns row counts."""
    queries = {
        "runs": """
            SELECT run_id, task, method, seed, config_index, config::VARCHAR AS config, selected,
                   best_epoch, epochs_run, val_amae, device, duration_s, weights_init, created_at,
                   split_seed, init_seed, coalesce(pruned, false) AS pruned
            FROM runs WHERE study_id = $study AND seed IN (SELECT unnest($seeds))
            ORDER BY task, method, seed, config_index""",
        "predictions": """
            SELECT p.* FROM predictions p JOIN runs r USING (run_id)
            WHERE r.study_id = $study AND r.seed IN (SELECT unnest($seeds))
              AND (r.selected OR ($all_test AND p.split = 'test'))
            ORDER BY p.run_id, p.split, p.image_id""",
        "epochs": """
            SELECT e.* FROM epoch_metrics e JOIN runs r USING (run_id)
            WHERE r.study_id = $study AND r.selected AND r.seed IN (SELECT unnest($seeds))
            ORDER BY e.run_id, e.epoch""",
        "images": """
            SELECT image_id, patient_id, side, source FROM images
            WHERE dataset_id = $dataset ORDER BY image_id""",
        "labels": """
            SELECT image_id, task, grade, true_grade FROM labels
            WHERE dataset_id = $dataset ORDER BY image_id, task""",
        "splits": f"""
            SELECT seed, image_id, split FROM splits
            WHERE dataset_id = $dataset AND seed IN ({_SPLIT_SEEDS})
            ORDER BY seed, image_id""",
        "split_rules": f"""
            SELECT seed, rule FROM split_rules
            WHERE dataset_id = $dataset AND seed IN ({_SPLIT_SEEDS}) ORDER BY seed""",
    }
    params = {"study": study_id, "dataset": dataset_id, "seeds": seeds, "all_test": all_test}
    counts = {}
    for table, query in queries.items():
        used = {k: v for k, v in params.items() if f"${k}" in query}
        target = folder / f"{table}.parquet"
        con.execute(f"COPY ({query}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)", used)
        counts[table] = int(one_value(con, "SELECT count(*) FROM read_parquet(?)", [str(target)]))
    return counts


def read_card(bundle: Path | str) -> dict[str, Any]:
    """The bundle's ``card.json`` (study, dataset, seeds, row counts and study card).

    Raises:
        StoreError: The file is missing, not a bundle, or of a newer format.
    """
    bundle = Path(bundle)
    if not bundle.is_file():
        raise StoreError(f"no bundle at {bundle}")
    try:
        with zipfile.ZipFile(bundle) as zf:
            check_zip_limits(zf, STUDY_ZIP_LIMITS, str(bundle))
            names = set(zf.namelist())
            missing = sorted({"card.json", *(f"{t}.parquet" for t in TABLES)} - names)
            if missing:
                raise StoreError(
                    f"{bundle} is not a SoftGrade study bundle: it lacks {', '.join(missing)}"
                )
            meta = json.loads(zf.read("card.json"))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise StoreError(f"{bundle} is not a zip file (a study bundle is one)") from exc
    except ZipLimitError as exc:
        raise StoreError(str(exc)) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"{bundle}: its card.json is not readable JSON ({exc})") from exc
    version = meta.get("bundle_version") if isinstance(meta, dict) else None
    if version != BUNDLE_VERSION:
        raise StoreError(
            f"{bundle} is a bundle of format {version}; this SoftGrade reads format "
            f"{BUNDLE_VERSION}"
        )
    _check_card(meta, bundle)
    return meta


#: What card.json must hold, and of what type, for a bundle to be imported.
_CARD_FIELDS = {
    "study": dict,
    "dataset": dict,
    "seeds": list,
    "study.study_id": str,
    "study.name": str,
    "study.spec": dict,
    "dataset.dataset_id": str,
    "dataset.kind": str,
    "dataset.spec_key": str,
    "dataset.params": dict,
    "dataset.n_images": int,
}


def _check_card(meta: dict[str, Any], bundle: Path) -> None:
    """Refuse a card.json that lacks a field import needs, naming every such field."""
    problems = []
    for field, kind in _CARD_FIELDS.items():
        value: Any = meta
        for part in field.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool):
            problems.append(f"{field} ({kind.__name__})")
    seeds = meta.get("seeds")
    if isinstance(seeds, list) and not all(isinstance(s, int) for s in seeds):
        problems.append("seeds (whole numbers)")
    if problems:
        raise StoreError(
            f"{bundle} is not a readable study bundle: its card.json lacks or mistypes "
            + ", ".join(problems)
        )


def import_study(bundle: Path | str, *, path: Path | str | None = None) -> ImportedStudy:
    """Load a bundle into the store, in one transaction; a study already there is kept.

    Args:
        bundle: The zip written by `export_study`.
        path: The store (its schema must exist: `store.db.init_schema`).

    Returns:
        The study's id and name, and whether it was imported now.

    Raises:
        StoreError: The file is not a readable bundle.
    """
    meta = read_card(bundle)
    study = meta["study"]
    seeds = tuple(int(s) for s in meta["seeds"])
    with tempfile.TemporaryDirectory() as tmp, connect(path) as con:
        if con.execute("SELECT 1 FROM studies WHERE study_id = ?", [study["study_id"]]).fetchone():
            runs = one_value(
                con, "SELECT count(*) FROM runs WHERE study_id = ?", [study["study_id"]]
            )
            name = one_value(
                con, "SELECT name FROM studies WHERE study_id = ?", [study["study_id"]]
            )
            return ImportedStudy(study["study_id"], name, False, int(runs), seeds)
        parts = extract_tables(bundle, Path(tmp) / "tables")
        try:
            dataset_id = _dataset_for(con, meta, parts)
            _insert_splits(con, dataset_id, parts)
            runs = insert_study(con, meta["study"], dataset_id, parts)
            con.execute(
                "INSERT INTO imported_studies (study_id, source, card) VALUES (?, ?, ?)",
                [study["study_id"], Path(bundle).name, json.dumps(meta["card"], default=str)],
            )
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise StoreError(f"{bundle}: its tables cannot be imported ({first})") from exc
    return ImportedStudy(study["study_id"], study["name"], True, runs, seeds)


def _dataset_for(con: duckdb.DuckDBPyConnection, meta: dict[str, Any], parts: dict) -> str:
    """The dataset the imported study runs on: the store's own when it holds the same films,
    labels and (for these seeds) splits, else one registered for the import."""
    dataset = meta["dataset"]
    seeds = [int(s) for s in meta["seeds"]]
    for spec_key in (dataset["spec_key"], f"{dataset['spec_key']} · imported splits"):
        dataset_id = (
            dataset["dataset_id"] if spec_key == dataset["spec_key"] else dataset_id_for(spec_key)
        )
        if not con.execute("SELECT 1 FROM datasets WHERE dataset_id = ?", [dataset_id]).fetchone():
            _register(con, dataset_id, spec_key, dataset, parts)
            return dataset_id
        if _same_labels(con, dataset_id, parts) and _same_splits(con, dataset_id, seeds, parts):
            return dataset_id
    raise StoreError(
        f"the store already holds dataset {dataset['spec_key']!r} twice with other labels or "
        "splits than the bundle's; import it into another store"
    )


def _register(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    spec_key: str,
    dataset: dict[str, Any],
    parts: dict[str, str],
) -> None:
    con.execute(
        "INSERT INTO datasets (dataset_id, kind, spec_key, params, n_images) "
        "VALUES (?, ?, ?, ?, ?)",
        [dataset_id, dataset["kind"], spec_key, json.dumps(dataset["params"]), dataset["n_images"]],
    )
    con.execute(
        "INSERT INTO images SELECT ?, image_id, patient_id, side, source FROM read_parquet(?)",
        [dataset_id, parts["images"]],
    )
    con.execute(
        "INSERT INTO labels SELECT ?, image_id, task, grade, true_grade FROM read_parquet(?)",
        [dataset_id, parts["labels"]],
    )


def _same_labels(con: duckdb.DuckDBPyConnection, dataset_id: str, parts: dict[str, str]) -> bool:
    """True when the stored dataset grades the same films the same way as the bundle."""
    differ = one_value(
        con,
        """
        SELECT count(*) FROM (
            (SELECT image_id, task, grade FROM labels WHERE dataset_id = ?
             EXCEPT SELECT image_id, task, grade FROM read_parquet(?))
            UNION ALL
            (SELECT image_id, task, grade FROM read_parquet(?)
             EXCEPT SELECT image_id, task, grade FROM labels WHERE dataset_id = ?)
        )
        """,
        [dataset_id, parts["labels"], parts["labels"], dataset_id],
    )
    return differ == 0


def _same_splits(
    con: duckdb.DuckDBPyConnection, dataset_id: str, seeds: list[int], parts: dict[str, str]
) -> bool:
    """True unless the store holds, for one of ``seeds``, a split other than the bundle's."""
    differ = one_value(
        con,
        """
        SELECT count(*) FROM splits s
        JOIN read_parquet(?) b USING (seed, image_id)
        WHERE s.dataset_id = ? AND s.split <> b.split
        """,
        [parts["splits"], dataset_id],
    )
    return differ == 0


def _insert_splits(con: duckdb.DuckDBPyConnection, dataset_id: str, parts: dict[str, str]) -> None:
    """Store the bundle's splits (and rules) for the seeds the store has none of."""
    con.execute(
        """
        INSERT INTO splits
        SELECT ?, b.seed, b.image_id, b.split FROM read_parquet(?) b
        WHERE b.seed NOT IN (SELECT seed FROM splits WHERE dataset_id = ?)
        """,
        [dataset_id, parts["splits"], dataset_id],
    )
    con.execute(
        """
        INSERT INTO split_rules
        SELECT ?, b.seed, b.rule FROM read_parquet(?) b
        WHERE b.seed NOT IN (SELECT seed FROM split_rules WHERE dataset_id = ?)
        """,
        [dataset_id, parts["split_rules"], dataset_id],
    )


def insert_study(
    con: duckdb.DuckDBPyConnection,
    study: dict[str, Any],
    dataset_id: str | None,
    parts: dict[str, str],
) -> int:
    """The study (``study_id``, ``name``, ``spec``, ``created_at``), a finished job for it,
    and its runs, predictions and epochs from the bundle-shaped Parquet ``parts``; returns
    the runs stored. Also how `store.results` stores results imported from another tool."""
    study_id = study["study_id"]
    runs = one_value(con, "SELECT count(*) FROM read_parquet(?)", [parts["runs"]])
    span = one_row(
        con, "SELECT min(created_at), max(created_at) FROM read_parquet(?)", [parts["runs"]]
    )
    con.execute(
        "INSERT INTO studies (study_id, name, dataset_id, spec, created_at) VALUES (?, ?, ?, ?, ?)",
        [study_id, study["name"], dataset_id, json.dumps(study["spec"]), study["created_at"]],
    )
    con.execute(
        """
        INSERT INTO jobs (job_id, study_id, status, runs_total, runs_done, created_at,
                          started_at, heartbeat_at, finished_at)
        VALUES (?, ?, 'succeeded', ?, ?, ?, ?, ?, ?)
        """,
        [f"import-{study_id}", study_id, runs, runs, study["created_at"], *span, span[1]],
    )
    # Bundles written before schema version 5 carry no split or init seed (NULL: the seed's)
    # and no pruned flag (false: a full search stopped no run).
    described = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [parts["runs"]])
    given = {row[0] for row in described.fetchall()}
    seeds = ", ".join(c if c in given else f"NULL AS {c}" for c in ("split_seed", "init_seed"))
    pruned = "coalesce(pruned, false)" if "pruned" in given else "false"
    con.execute(
        f"""
        INSERT INTO runs (run_id, study_id, job_id, task, method, seed, config_index, config,
                          selected, status, best_epoch, epochs_run, val_amae, device,
                          duration_s, weights_init, checkpoint_path, created_at, split_seed,
                          init_seed, pruned)
        SELECT run_id, ?, NULL, task, method, seed, config_index, config, selected,
               'succeeded', best_epoch, epochs_run, val_amae, device, duration_s,
               weights_init, NULL, created_at, {seeds}, {pruned}
        FROM read_parquet(?)
        """,
        [study_id, parts["runs"]],
    )
    con.execute(
        "INSERT INTO predictions SELECT run_id, image_id, split, y_true, y_pred, probs "
        "FROM read_parquet(?)",
        [parts["predictions"]],
    )
    con.execute(
        "INSERT INTO epoch_metrics SELECT run_id, epoch, train_loss, val_loss, val_amae, "
        "duration_s FROM read_parquet(?)",
        [parts["epochs"]],
    )
    return int(runs)


def imported_card(study_id: str, *, path: Path | str | None = None) -> dict[str, Any] | None:
    """The study card an imported study came with, or None for a study run here."""
    with connect(path, read_only=True) as con:
        row = con.execute(
            "SELECT card FROM imported_studies WHERE study_id = ?", [study_id]
        ).fetchone()
    return json.loads(row[0]) if row else None


def extract_tables(bundle: Path | str, folder: Path) -> dict[str, str]:
    """A bundle's tables unpacked into ``folder``: table -> Parquet file.

    The zip's limits are checked first and each table against the hash its card lists (a
    bundle written before hashes were listed has none to check).

    Raises:
        StoreError: Past a limit, or a table differs from its hash.
    """
    folder.mkdir(parents=True)
    members = [f"{t}.parquet" for t in TABLES]
    with zipfile.ZipFile(bundle) as zf:
        try:
            check_zip_limits(zf, STUDY_ZIP_LIMITS, str(bundle))
        except ZipLimitError as exc:
            raise StoreError(str(exc)) from exc
        hashes = json.loads(zf.read("card.json")).get("sha256") or {}
        changed = [m for m in members if m in hashes and member_sha256(zf, m) != hashes[m]]
        if changed:
            raise StoreError(
                f"{bundle} was changed after it was written: {', '.join(changed)} "
                "does not match the hash in its card.json"
            )
        zf.extractall(folder, members=members)
    return {t: str(folder / f"{t}.parquet") for t in TABLES}
