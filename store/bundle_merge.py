"""Two bundles of one protocol merged into one (`merge_bundles`): a study run in parts, such as
the reference study's seeds 0-12 in one session and 13-19 in a later one. Split from
`store.bundle` (export and import), whose tables, reader and writer it uses.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from engine.vocab import run_id, seed_ranges
from store.bundle import TABLES, extract_tables, read_card, write_bundle
from store.db import StoreError, one_value


def merge_bundles(
    base: Path | str, extra: Path | str, out: Path | str, *, name: str | None = None
) -> Path:
    """Write one bundle holding the seeds of two bundles of the same protocol.

    For a study run in parts (the reference study's seeds 0-12 in one session, 13-19 in a
    later one): the two must share the dataset (same films, grades and dataset key) and the
    study spec in everything but its seeds, and hold no seed twice. The merged study keeps
    ``base``'s id; ``extra``'s runs are renamed into it (`engine.vocab.run_id`), its
    predictions and epochs with them. Card fields that differ between the parts become one
    entry per part, keyed by its seeds (`engine.vocab.seed_ranges`: ``{"seeds 0–12": ...,
    "seeds 13–19": ...}``; the shipped reference bundle, merged before that helper was used
    here, spells them with a hyphen).

    Raises:
        StoreError: Either file is not a readable bundle, or the two cannot be merged (every
            reason at once).
    """
    a, b = read_card(base), read_card(extra)
    seeds = sorted({*a["seeds"], *b["seeds"]})
    with tempfile.TemporaryDirectory() as tmp:
        parts_a = extract_tables(base, Path(tmp) / "a")
        parts_b = extract_tables(extra, Path(tmp) / "b")
        con = duckdb.connect()
        try:
            problems = _merge_problems(a, b) + _dataset_differences(con, parts_a, parts_b)
            if problems:
                raise StoreError(
                    f"{Path(base).name} and {Path(extra).name} cannot be merged: "
                    + "; ".join(problems)
                )
            counts = _merge_tables(con, a["study"]["study_id"], parts_a, parts_b, Path(tmp))
        finally:
            con.close()
        spec = {**a["study"]["spec"], "seeds": seeds}
        meta = {
            **a,
            "study": {**a["study"], "name": name or a["study"]["name"], "spec": spec},
            "seeds": seeds,
            "rows": counts,
            "card": merged_card(a, b),
        }
        out = Path(out)
        write_bundle(out, meta, Path(tmp), force=False)
    return out


def _merge_problems(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Why two bundles' cards cannot be merged (empty when they can)."""
    problems = []
    if a["bundle_version"] != b["bundle_version"]:
        problems.append(f"bundle versions differ ({a['bundle_version']} and {b['bundle_version']})")
    if a["dataset"]["spec_key"] != b["dataset"]["spec_key"]:
        problems.append(
            f"they ran on other datasets ({a['dataset']['spec_key']!r} and "
            f"{b['dataset']['spec_key']!r})"
        )
    spec_a, spec_b = a["study"]["spec"], b["study"]["spec"]
    differ = sorted(
        key for key in {*spec_a, *spec_b} - {"seeds", "name"} if spec_a.get(key) != spec_b.get(key)
    )
    if differ:
        problems.append(f"their protocols differ in {', '.join(differ)}")
    both = sorted({*a["seeds"]} & {*b["seeds"]})
    if both:
        problems.append(f"seed(s) {', '.join(map(str, both))} are in both")
    return problems


def _dataset_differences(
    con: duckdb.DuckDBPyConnection, parts_a: dict[str, str], parts_b: dict[str, str]
) -> list[str]:
    """Tables of the dataset (films, grades) that are not the same in both bundles."""
    problems = []
    for table in ("images", "labels"):
        differ = one_value(
            con,
            """
            SELECT count(*) FROM (
                (SELECT * FROM read_parquet($a) EXCEPT SELECT * FROM read_parquet($b))
                UNION ALL
                (SELECT * FROM read_parquet($b) EXCEPT SELECT * FROM read_parquet($a)))
            """,
            {"a": parts_a[table], "b": parts_b[table]},
        )
        if differ:
            problems.append(f"their dataset's {table} differ in {differ} row(s)")
    return problems


def _merge_tables(
    con: duckdb.DuckDBPyConnection,
    study_id: str,
    parts_a: dict[str, str],
    parts_b: dict[str, str],
    folder: Path,
) -> dict[str, int]:
    """Write each merged table to ``folder/<table>.parquet``; returns row counts."""
    keys = con.execute(
        "SELECT run_id, task, method, seed, config_index FROM read_parquet(?)", [parts_b["runs"]]
    ).fetchall()
    renamed = pd.DataFrame(
        [
            (old, run_id(study_id, task, method, seed, config))
            for old, task, method, seed, config in keys
        ],
        columns=["old_id", "new_id"],
    )
    con.register("renamed", renamed)
    ordering = {
        "runs": "task, method, seed, config_index",
        "predictions": "run_id, split, image_id",
        "epochs": "run_id, epoch",
        "splits": "seed, image_id",
        "split_rules": "seed",
    }
    counts = {}
    for table in TABLES:
        files = {"a": parts_a[table], "b": parts_b[table]}
        if table in ("images", "labels"):  # the same in both (checked)
            query = "SELECT * FROM read_parquet($a)"
            del files["b"]
        elif table in ("runs", "predictions", "epochs"):
            query = (
                "SELECT * FROM read_parquet($a) UNION ALL "
                "SELECT t.* REPLACE (r.new_id AS run_id) FROM read_parquet($b) t "
                f"JOIN renamed r ON t.run_id = r.old_id ORDER BY {ordering[table]}"
            )
        else:
            query = (
                "SELECT * FROM read_parquet($a) UNION ALL "
                f"SELECT * FROM read_parquet($b) ORDER BY {ordering[table]}"
            )
        target = folder / f"{table}.parquet"
        con.execute(f"COPY ({query}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)", files)
        counts[table] = int(one_value(con, "SELECT count(*) FROM read_parquet(?)", [str(target)]))
    return counts


def merged_card(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two bundles' study cards as one: a field both share stays; one that differs holds
    each part's value under its seeds; the complete seeds are the union."""
    card_a, card_b = a.get("card") or {}, b.get("card") or {}
    label_a, label_b = seed_ranges(a["seeds"]), seed_ranges(b["seeds"])
    card: dict[str, Any] = {}
    for key in [*card_a, *(k for k in card_b if k not in card_a)]:
        value_a, value_b = card_a.get(key), card_b.get(key)
        card[key] = value_a if value_a == value_b else {label_a: value_a, label_b: value_b}
    seeds = sorted({*a["seeds"], *b["seeds"]})
    card["seeds_complete"] = seeds
    if "seeds_planned" in card:
        planned = [card_a.get("seeds_planned") or 0, card_b.get("seeds_planned") or 0]
        card["seeds_planned"] = max(*planned, len(seeds))
    return card
