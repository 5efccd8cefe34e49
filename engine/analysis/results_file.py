"""Results trained by another tool, read from one CSV or Parquet file and checked row by row.

Two shapes are accepted (docs/import-results.md describes them for users):

* **per-seed metrics**, the smallest: ``task, method, seed, metric, value``: one metric value
  of one method's selected model on one seed's test set; metric names as the registry
  (`engine.analysis.metrics`, ``softgrade metrics``) spells them, in any case;
* **per-film predictions**: ``task, method, seed, film, grade, p0 .. pK``: each test film's
  recorded grade and the model's probability of every grade (``K`` = the task's top grade;
  a CPPD row of a file that also holds KL leaves ``p4`` blank).

Either may add ``n_train`` and ``n_test``: the films the seed's model was fitted (and
selected) on and tested on. The corrected resampled t-test needs their ratio
(`engine.analysis.paired`); without them its interval, its p and the Bayesian verdicts are
left blank, and the Wilcoxon, the naive t-test and the effect sizes still stand.

`check_results` stops at the first bad row: its message names the row (data rows counted
from 1; a CSV's line is one more, for its header), the column, the value and what is
allowed. Nothing here stores anything (`store.results` does, in one transaction).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.analysis.metrics import METRICS, REGISTRY
from engine.vocab import TASK_CLASSES, TASKS

#: What a study without split sizes (per-seed results imported without ``n_train`` and
#: ``n_test``) cannot give, and what it still gives.
UNSIZED_NOTE = (
    "the corrected resampled t-test needs each seed's n_train and n_test, which the imported "
    "file did not give: its interval (ci_low, ci_high), p_corrected and its Holm adjustment, "
    "p at r = 0.1 and 0.2, the Bayesian probabilities, the verdict's support and TOST are "
    "left blank (the verdict reads inconclusive); the Wilcoxon, the naive t-test, d_z and the "
    "rank-biserial r stand. Import the file again with n_train and n_test columns to get them"
)

METRICS_FORMAT = "per-seed metrics"
PREDICTIONS_FORMAT = "per-film predictions"
KEY_COLUMNS: tuple[str, ...] = ("task", "method", "seed")
METRIC_COLUMNS: tuple[str, ...] = (*KEY_COLUMNS, "metric", "value")
PREDICTION_COLUMNS: tuple[str, ...] = (*KEY_COLUMNS, "film", "grade")
SIZE_COLUMNS: tuple[str, ...] = ("n_train", "n_test")
#: Optional in per-film predictions: which split a film was predicted on. Test films are
#: scored; validation films only calibrate (the conformal grade sets and the set size).
SPLIT_COLUMN = "split"
TEST_SPLIT = "test"
SPLITS: tuple[str, ...] = (TEST_SPLIT, "val")
#: How far a film's probabilities may sum from 1 (float32 rounding of a softmax).
PROBABILITY_TOLERANCE = 1e-3
#: Longest method name the store holds (runs.method's CHECK).
MAX_METHOD_LENGTH = 100
#: Most rows one file may hold (20 seeds x 14 methods x 2 tasks x 3,000 test films is 1.7 M).
MAX_ROWS = 5_000_000
#: Most columns a Parquet file may declare (a per-film file has 6 keys and p0..p4).
MAX_COLUMNS = 64
#: Most bytes a Parquet file's columns may decode to, from its metadata (5 M rows of a
#: per-film file take about 0.6 GB): a 1.8 MB file that decodes to 100 M rows is refused
#: before a byte of it is decoded (issue 39).
MAX_DECODED_BYTES = 2 * 2**30
MAX_SEED = 2**31 - 1
SUFFIXES: tuple[str, ...] = (".csv", ".parquet")
_PROBABILITY = re.compile(r"p(\d+)")


class ResultsFileError(ValueError):
    """A results file that cannot be imported; the message is the one line to show."""


@dataclass(frozen=True)
class ResultsFile:
    """A checked results file.

    Attributes:
        format: `METRICS_FORMAT` or `PREDICTIONS_FORMAT`.
        runs: one row per (task, method, seed): the selected model of that search.
        metrics: ``task, method, seed, metric, value`` (per-seed metrics; empty otherwise),
            metric names lower case as the registry spells them.
        predictions: ``task, method, seed, film, grade, split, y_pred, probs`` (per-film
            predictions; empty otherwise); ``probs`` a list of the grades' probabilities,
            ``y_pred`` the most probable grade.
        sizes: ``task, seed, n_train, n_test`` for the seeds the file gives them (may be
            empty).
        rows: data rows read.
    """

    format: str
    runs: pd.DataFrame
    metrics: pd.DataFrame
    predictions: pd.DataFrame
    sizes: pd.DataFrame
    rows: int

    @property
    def tasks(self) -> list[str]:
        return [t for t in TASKS if t in set(self.runs["task"])]

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(self.runs["method"]))

    @property
    def seeds(self) -> list[int]:
        return sorted({int(s) for s in self.runs["seed"]})


def read_results(path: Path | str) -> ResultsFile:
    """Read and check a results file (``.csv`` or ``.parquet``).

    Raises:
        ResultsFileError: the file is missing, of another kind, unreadable, or a row is bad.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ResultsFileError(
            f"{path.name}: a results file is .csv or .parquet (docs/import-results.md)"
        )
    if not path.is_file():
        raise ResultsFileError(f"no file at {path}")
    try:
        if suffix == ".csv":
            frame = pd.read_csv(
                path, dtype=str, keep_default_na=False, nrows=MAX_ROWS + 1, encoding="utf-8"
            )
        else:
            frame = _read_parquet_bounded(path)
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError, MemoryError) as exc:
        if isinstance(exc, ResultsFileError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ResultsFileError(
            f"{path.name} cannot be read as {suffix[1:]} ({first[:200]})"
        ) from exc
    return check_results(frame, csv=suffix == ".csv")


def _read_parquet_bounded(path: Path) -> pd.DataFrame:
    """A Parquet file's table, once its metadata (read without decoding a column) says its
    rows, columns and decoded size are within `MAX_ROWS`, `MAX_COLUMNS` and
    `MAX_DECODED_BYTES`.

    Raises:
        ResultsFileError: the metadata says the file is larger than those.
    """
    import pyarrow.parquet as pq  # pandas' own Parquet engine

    meta = pq.ParquetFile(path).metadata
    if meta.num_rows > MAX_ROWS:
        raise ResultsFileError(
            f"{path.name} holds {meta.num_rows:,} rows (its metadata says, before reading "
            f"them); at most {MAX_ROWS:,}: import it in parts"
        )
    if meta.num_columns > MAX_COLUMNS:
        raise ResultsFileError(
            f"{path.name} declares {meta.num_columns:,} columns; a results file has at most "
            f"{MAX_COLUMNS} (docs/import-results.md)"
        )
    decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if decoded > MAX_DECODED_BYTES:
        raise ResultsFileError(
            f"{path.name} decodes to {decoded / 2**30:.1f} GiB (its metadata says); at most "
            f"{MAX_DECODED_BYTES / 2**30:.0f} GiB: import it in parts"
        )
    return pd.read_parquet(path)


def check_results(
    frame: pd.DataFrame, *, csv: bool = True, places: Places | None = None
) -> ResultsFile:
    """Check a results table and return it in the store's terms.

    Args:
        frame: the file's rows (any dtypes; a CSV read as text).
        csv: the rows came from a CSV (messages then also give the line).
        places: how messages name a row and a column, for a table built from another
            source (an MLflow experiment's runs: `engine.analysis.run_mapping`); default
            the file's row numbers and column names.

    Raises:
        ResultsFileError: the first problem: unknown or missing columns, or the first bad
            row (its row, column, value and what is allowed).
    """
    if len(frame) > MAX_ROWS:
        raise ResultsFileError(f"the file holds more than {MAX_ROWS:,} rows; import it in parts")
    frame = frame.rename(columns=lambda c: str(c).strip().lower()).reset_index(drop=True)
    kind = _format_of(frame)
    probabilities = _probability_columns(frame) if kind == PREDICTIONS_FORMAT else []
    _check_columns(frame, kind, probabilities)
    if frame.empty:
        raise ResultsFileError("the file holds no rows")
    where = places or Places(csv=csv)
    cells = _Checked(frame, where)
    task = cells.text("task", _task_problem)
    method = cells.text("method", _method_problem)
    seed = cells.whole("seed", low=0, high=MAX_SEED)
    sizes = _sizes(frame, cells, task, seed, where)
    if kind == METRICS_FORMAT:
        metric = cells.text("metric", _metric_problem).str.lower()
        value = cells.number("value")
        long = pd.DataFrame(
            {"task": task, "method": method, "seed": seed, "metric": metric, "value": value}
        )
        _no_repeats(long, [*KEY_COLUMNS, "metric"], where)
        predictions = pd.DataFrame(columns=[*PREDICTION_COLUMNS, "split", "y_pred", "probs"])
        runs = long[list(KEY_COLUMNS)]
    else:
        film = cells.text("film", _film_problem)
        grade = cells.grade("grade", task)
        probs = _probabilities(frame, probabilities, task, cells, where)
        split = (
            cells.text(SPLIT_COLUMN, _split_problem).str.strip().str.lower()
            if SPLIT_COLUMN in frame.columns
            else pd.Series(TEST_SPLIT, index=frame.index)
        )
        predictions = pd.DataFrame(
            {"task": task, "method": method, "seed": seed, "film": film, "grade": grade}
        )
        # A film is in one split of a seed: never both a validation and a test film.
        _no_repeats(predictions, [*KEY_COLUMNS, "film"], where)
        predictions["split"] = split
        _tested(predictions, where)
        predictions["y_pred"] = [int(np.argmax(p)) for p in probs]
        predictions["probs"] = probs
        long = pd.DataFrame(columns=list(METRIC_COLUMNS))
        runs = predictions[list(KEY_COLUMNS)]
    runs = runs.drop_duplicates().reset_index(drop=True)
    return ResultsFile(kind, runs, long, predictions, sizes, len(frame))


def seed_metrics_wide(long: pd.DataFrame) -> pd.DataFrame:
    """Per-seed metric values (``study_id, run_id, task, method, seed, metric, value``) as
    `engine.analysis.compare.per_run_metrics` lays its rows out: one row per run, a column
    per metric (every grade metric present, NaN where the file gave none)."""
    keys = ["study_id", "run_id", "task", "method", "seed"]
    if long.empty:
        return pd.DataFrame(columns=[*keys, *METRICS])
    wide = long.pivot_table(index=keys, columns="metric", values="value", aggfunc="first")
    wide = wide.reset_index()
    wide.columns.name = None
    for metric in METRICS:
        if metric not in wide:
            wide[metric] = math.nan
    return wide


# -- what a row may hold --------------------------------------------------------------------


def _format_of(frame: pd.DataFrame) -> str:
    columns = set(frame.columns)
    if {"metric", "value"} & columns and {"film", "grade"} & columns:
        raise ResultsFileError(
            "the file mixes the two formats (metric/value and film/grade columns); "
            "import per-seed metrics and per-film predictions as separate files"
        )
    return PREDICTIONS_FORMAT if {"film", "grade"} & columns else METRICS_FORMAT


def _probability_columns(frame: pd.DataFrame) -> list[str]:
    found = sorted(
        (int(m.group(1)), c) for c in frame.columns if (m := _PROBABILITY.fullmatch(str(c)))
    )
    return [c for _, c in found]


def _allowed(kind: str) -> str:
    if kind == METRICS_FORMAT:
        return (
            f"per-seed metrics have the columns {', '.join(METRIC_COLUMNS)} "
            f"(optional: {', '.join(SIZE_COLUMNS)})"
        )
    top = max(TASK_CLASSES.values()) - 1
    return (
        f"per-film predictions have the columns {', '.join(PREDICTION_COLUMNS)}, p0..p{top} "
        f"(one per grade of the task) (optional: {', '.join(SIZE_COLUMNS)}, {SPLIT_COLUMN})"
    )


def _check_columns(frame: pd.DataFrame, kind: str, probabilities: list[str]) -> None:
    required = METRIC_COLUMNS if kind == METRICS_FORMAT else PREDICTION_COLUMNS
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ResultsFileError(f"column {missing[0]!r} is missing; {_allowed(kind)}")
    if len(set(frame.columns)) != len(frame.columns):
        twice = next(c for c in frame.columns if list(frame.columns).count(c) > 1)
        raise ResultsFileError(f"column {twice!r} appears twice; {_allowed(kind)}")
    known = {*required, *SIZE_COLUMNS, *probabilities}
    if kind == PREDICTIONS_FORMAT:
        known.add(SPLIT_COLUMN)
    unknown = [c for c in frame.columns if c not in known]
    if unknown:
        raise ResultsFileError(f"column {unknown[0]!r} is not allowed; {_allowed(kind)}")
    if kind == PREDICTIONS_FORMAT:
        expected = [f"p{k}" for k in range(len(probabilities))]
        if probabilities != expected or len(probabilities) < min(TASK_CLASSES.values()):
            raise ResultsFileError(
                "the probability columns must run p0, p1, ... up to the largest task's top "
                f"grade without a gap (found {', '.join(probabilities) or 'none'}); "
                + _allowed(kind)
            )
    given = [c for c in SIZE_COLUMNS if c in frame.columns]
    if len(given) == 1:
        other = next(c for c in SIZE_COLUMNS if c not in given)
        raise ResultsFileError(f"column {given[0]!r} needs {other!r} beside it; {_allowed(kind)}")


def _task_problem(value: str) -> str | None:
    if value in TASK_CLASSES:
        return None
    return f"the task is one of {', '.join(TASKS)}"


#: What a method's name may hold besides ASCII letters and digits. A name is shown on
#: every page, so two names must never look alike: a Cyrillic "о" in "nоminal", or a name
#: of blank Hangul fillers, would pass for another method or for none (issue 39).
METHOD_NAME_PUNCTUATION = " _.+()"
_METHOD_NAME = re.compile(r"[A-Za-z0-9 _.+()]+")


def _method_problem(value: str) -> str | None:
    if not value.strip():
        return "a method needs a name"
    if len(value) > MAX_METHOD_LENGTH:
        return f"a method's name holds at most {MAX_METHOD_LENGTH} characters"
    if "-" in value:
        return (
            "a method's name may not hold '-' (SoftGrade's run ids are read from the right "
            f"at the dashes); write it with '_', e.g. {value.replace('-', '_')!r}"
        )
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        return "a method's name may not hold control or invisible formatting characters"
    if value != value.strip():
        return "a method's name may not start or end with a space"
    if not _METHOD_NAME.fullmatch(value):
        return _foreign_character(value)
    return None


def _foreign_character(value: str) -> str:
    """Why a name with a character outside `_METHOD_NAME` is refused, naming the first one
    (its code point and Unicode name: a look-alike letter is then visible as what it is)."""
    ch = next(c for c in value if not _METHOD_NAME.fullmatch(c))
    what = f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"
    if not any(_visible(c) for c in value):
        return f"a method needs a name that shows; this one holds only blanks ({what})"
    seen = "a blank" if not ch.strip() or not _visible(ch) else repr(ch)
    return (
        f"a method's name is written in ASCII letters and digits, spaces and "
        f"{' '.join(METHOD_NAME_PUNCTUATION.strip())}, so that no two names look alike; "
        f"it holds {seen} ({what})"
    )


def _visible(ch: str) -> bool:
    """Whether a character draws anything (the Hangul fillers and braille blank do not)."""
    return ch not in "\u115f\u1160\u3164\uffa0\u2800" and unicodedata.category(ch)[0] != "Z"


def _metric_problem(value: str) -> str | None:
    if value.lower() in REGISTRY:
        return None
    return f"the metric is one of {', '.join(REGISTRY)} (`softgrade metrics` describes each)"


def _split_problem(value: str) -> str | None:
    if value.strip().lower() in SPLITS:
        return None
    return (
        f"the split is {' or '.join(SPLITS)} (validation films calibrate the grade sets; "
        "only test films are scored)"
    )


def _tested(predictions: pd.DataFrame, where: Places) -> None:
    """Every (task, method, seed) with validation films has test films too."""
    tested = predictions[predictions["split"] == TEST_SPLIT].groupby(list(KEY_COLUMNS)).size()
    for key, part in predictions.groupby(list(KEY_COLUMNS), sort=False):
        if key not in tested.index:
            task, method, seed = key
            raise ResultsFileError(
                f"{where(int(part.index[0]))}: {task}, method {method!r}, seed {seed} has "
                "validation films but no test film; its results are its test films"
            )


def _film_problem(value: str) -> str | None:
    if not value.strip():
        return "a film needs an id"
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        return "a film's id may not hold control or invisible formatting characters"
    return None


class Places:
    """How a message names a row ('row 3 (line 4 of the CSV)') and a column ("column
    'value'"). A table built from another source subclasses it to name that source's rows
    and fields (an MLflow run and its param), so every check speaks the user's terms."""

    def __init__(self, *, csv: bool = False) -> None:
        self.csv = csv

    def __call__(self, index: int) -> str:
        return f"row {index + 1}" + (f" (line {index + 2} of the CSV)" if self.csv else "")

    def column(self, name: str) -> str:
        return f"column {name!r}"


#: How many characters of a value a message quotes: a 50 MB value is never echoed whole.
SHOWN_CHARACTERS = 40


def shown(value: object) -> str:
    """A value as a message quotes it: a name, number or text cut to `SHOWN_CHARACTERS`
    (its repr); anything else (a list, a mapping) by its kind only, never its whole repr."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = ""
    elif isinstance(value, str | int | float):
        text = str(value)
    else:
        return f"a {type(value).__name__}"
    return repr(text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "…")


class _Checked:
    """Cells of one column checked in turn; the first bad one raises `ResultsFileError`."""

    def __init__(self, frame: pd.DataFrame, where: Places) -> None:
        self.frame = frame
        self.where = where

    def fail(self, index: int, column: str, problem: str) -> ResultsFileError:
        value = shown(self.frame[column].iloc[index])
        place = f"{self.where(index)}, {self.where.column(column)}"
        return ResultsFileError(f"{place}: {value}: {problem}")

    def text(self, column: str, problem: Callable[[str], str | None]) -> pd.Series:
        values = self.frame[column].map(lambda v: "" if _blank(v) else str(v))
        for index, value in enumerate(values):
            found = problem(value)
            if found:
                raise self.fail(index, column, found)
        return values

    def number(self, column: str) -> pd.Series:
        values = pd.to_numeric(self.frame[column].map(_numeric_text), errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=np.float64))
        if bad.any():
            raise self.fail(int(np.argmax(bad)), column, "the value must be a finite number")
        return values.astype(np.float64)

    def whole(self, column: str, *, low: int, high: int) -> pd.Series:
        values = pd.to_numeric(self.frame[column].map(_numeric_text), errors="coerce")
        array = values.to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(array) | (np.floor(array) != array) | (array < low) | (array > high)
        if bad.any():
            raise self.fail(
                int(np.argmax(bad)),
                column,
                f"the value must be a whole number from {low} to {high}",
            )
        return values.astype(np.int64)

    def grade(self, column: str, task: pd.Series) -> pd.Series:
        values = self.whole(column, low=0, high=max(TASK_CLASSES.values()) - 1)
        top = task.map(lambda t: TASK_CLASSES[t] - 1)
        bad = (values > top).to_numpy()
        if bad.any():
            index = int(np.argmax(bad))
            name = task.iloc[index]
            raise self.fail(index, column, f"a {name} grade runs from 0 to {top.iloc[index]}")
        return values


def _blank(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _numeric_text(value: object) -> object:
    """A cell as `pd.to_numeric` should see it: text stripped, booleans refused."""
    if isinstance(value, bool | np.bool_):
        return math.nan
    return value.strip() if isinstance(value, str) else value


def _no_repeats(frame: pd.DataFrame, keys: list[str], where: Places) -> None:
    repeated = frame.duplicated(keys).to_numpy()
    if repeated.any():
        index = int(np.argmax(repeated))
        first = int(np.argmax(frame[keys].eq(frame[keys].iloc[index]).all(axis=1).to_numpy()))
        what = ", ".join(f"{k} {frame[k].iloc[index]}" for k in keys)
        raise ResultsFileError(
            f"{where(index)} repeats {where(first)} ({what}): each {', '.join(keys)} appears once"
        )


def _sizes(
    frame: pd.DataFrame, cells: _Checked, task: pd.Series, seed: pd.Series, where: Places
) -> pd.DataFrame:
    """``task, seed, n_train, n_test`` per seed; a (task, seed)'s rows must agree (every
    method of a seed trains and tests on the same split)."""
    columns = ["task", "seed", *SIZE_COLUMNS]
    if "n_train" not in frame.columns:
        return pd.DataFrame(columns=columns)
    sizes = pd.DataFrame(
        {
            "task": task,
            "seed": seed,
            "n_train": cells.whole("n_train", low=1, high=MAX_SEED),
            "n_test": cells.whole("n_test", low=1, high=MAX_SEED),
        }
    )
    first = sizes.groupby(["task", "seed"], sort=False).transform("first")
    differ = (sizes[list(SIZE_COLUMNS)] != first[list(SIZE_COLUMNS)]).any(axis=1).to_numpy()
    if differ.any():
        index = int(np.argmax(differ))
        column = (
            "n_train" if sizes["n_train"].iloc[index] != first["n_train"].iloc[index] else "n_test"
        )
        raise cells.fail(
            index,
            column,
            f"every row of {task.iloc[index]} seed {seed.iloc[index]} must give the same "
            f"{column} ({first[column].iloc[index]} on its first row): the methods of one seed "
            "share its split",
        )
    return sizes.drop_duplicates(["task", "seed"]).reset_index(drop=True)


def _probabilities(
    frame: pd.DataFrame,
    columns: list[str],
    task: pd.Series,
    cells: _Checked,
    where: Places,
) -> list[list[float]]:
    """Each row's probabilities over its task's grades, checked: numbers in [0, 1] for
    p0..p(top), blank beyond, summing to 1 within `PROBABILITY_TOLERANCE`."""
    numbers = np.column_stack(
        [
            pd.to_numeric(frame[c].map(_numeric_text), errors="coerce").to_numpy(np.float64)
            for c in columns
        ]
    )
    blank = np.column_stack([frame[c].map(_blank).to_numpy(bool) for c in columns])
    n_grades = task.map(TASK_CLASSES).to_numpy()
    inside = np.arange(len(columns))[None, :] < n_grades[:, None]
    with np.errstate(invalid="ignore"):
        bad_value = inside & (~np.isfinite(numbers) | (numbers < 0) | (numbers > 1))
    extra = ~inside & ~blank
    bad = bad_value | extra
    sums = np.where(inside, np.nan_to_num(numbers), 0.0).sum(axis=1)
    bad_sum = ~bad.any(axis=1) & (np.abs(sums - 1.0) > PROBABILITY_TOLERANCE)
    first_cell = int(np.argmax(bad.any(axis=1))) if bad.any() else len(frame)
    first_sum = int(np.argmax(bad_sum)) if bad_sum.any() else len(frame)
    if first_cell < len(frame) and first_cell <= first_sum:
        column = int(np.argmax(bad[first_cell]))
        name = task.iloc[first_cell]
        if extra[first_cell, column]:
            problem = (
                f"a {name} film has {TASK_CLASSES[name]} grades, p0..p{TASK_CLASSES[name] - 1}; "
                f"leave {columns[column]} blank"
            )
        else:
            problem = "a probability must be a number from 0 to 1"
        raise cells.fail(first_cell, columns[column], problem)
    if first_sum < len(frame):
        top = TASK_CLASSES[task.iloc[first_sum]] - 1
        raise ResultsFileError(
            f"{where(first_sum)}, columns p0..p{top}: the probabilities sum to "
            f"{sums[first_sum]:.4g}; a film's probabilities must sum to 1 "
            f"(within {PROBABILITY_TOLERANCE:g})"
        )
    return [row[:k].tolist() for row, k in zip(numbers, n_grades, strict=True)]
