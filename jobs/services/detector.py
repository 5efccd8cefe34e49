"""Training the knee detector: ``python -m jobs detector {train,list}`` and the background
training the Review crops page starts.

- ``detector train``: films with known knee boxes from ``--phantom N`` (phantom films of a
  seed, their true boxes) and/or ``--dataset NAME_OR_ID`` (an imported folder's films whose
  every knee has a box set in crop review), trained with `engine.detect.train_detector` into
  ``$SOFTGRADE_HOME/detectors/<key>/`` (keyed by films, boxes and settings: the same input
  reuses the stored detector). Progress is printed per epoch.
- ``detector list``: the trained detectors, newest first.
- The page's button trains in the app's process (`jobs.services.detector_background`) through
  `train_with_status`, as the command does, keeping the status file
  (`jobs.services.detector_status`) the page follows.

Boxes given in a dataset's labels CSV are not read here yet: only crop review's boxes.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jobs.services.detector_status import StatusKeeper, detectors_dir, utc_now
from store.db import default_store_path, init_schema

#: Fewest films a detector is trained on: a fifth (at least one) is held out to score it.
MIN_FILMS = 8
#: What the page trains with unless changed: small enough for a CPU without a GPU.
PAGE_IMAGE_SIZE = 160
PAGE_EPOCHS = 30
DEVICES = ("auto", "cpu", "cuda")
#: The phantom seed detectors train on by default (no study uses it; the app's phantom is 0).
PHANTOM_SEED = 101

Box = tuple[int, int, int, int]


class TooFewFilms(ValueError):
    """Fewer films with reviewed boxes than a detector needs (the message says how many)."""


class TrainingRefused(ValueError):
    """A training is already running (the message says whose and how far)."""


def training_device(device: str) -> str:
    """The device a detector trains on, named for ultralytics: 'auto' → 'cuda' when a GPU is
    visible, else 'cpu' (`engine.grade_model.resolve_device`, the one resolver).

    Raises:
        ValueError: An unknown device, or 'cuda' on a machine without a CUDA GPU.
    """
    if device not in DEVICES and not device.startswith("cuda:"):
        raise ValueError(f"device {device!r} is not known; allowed: {', '.join(DEVICES)}")
    if device == "cpu":
        return device  # no torch import for the common CPU case
    from engine.grade_model import resolve_device  # imports torch

    return str(resolve_device(device))


def check_settings(image_size: int, epochs: int) -> None:
    """One message when the image size or epochs cannot be trained with."""
    from engine.detect.registry import detector_size_problem

    problems = []
    if problem := detector_size_problem(image_size):
        problems.append(problem)
    if epochs < 1:
        problems.append(f"epochs {epochs} must be at least 1")
    if problems:
        raise ValueError("; ".join(problems))


# -- the films to train on ---------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewedFilms:
    """A dataset's films whose every knee has a known box: reviewed, or given in its labels CSV.

    Attributes:
        dataset_id: The dataset.
        paths: Film files, one per film.
        boxes: Per film, its knee boxes from the viewer's left to right.
        n_boxes: Reviewed boxes of the dataset in all.
        n_partial: Films left out because a knee on them has no reviewed box (one knee of
            a bilateral film reviewed, the other not).
        n_from_labels: Films among ``paths`` whose boxes come from the labels CSV's
            ``x0, y0, x1, y1`` columns (films without a reviewed box, not excluded).
    """

    dataset_id: str
    paths: list[Path]
    boxes: list[list[Box]]
    n_boxes: int
    n_partial: int = 0
    n_from_labels: int = 0

    @property
    def n_films(self) -> int:
        """Films to train on."""
        return len(self.paths)

    def described(self) -> str:
        """The films in words, for the button and the detector's record."""
        labels = (
            f", {self.n_from_labels} with boxes from the labels CSV" if self.n_from_labels else ""
        )
        return f"{self.n_films} film(s): {self.n_boxes} reviewed box(es){labels}"

    def too_few(self) -> str | None:
        """Why these films cannot train a detector, or None when they can."""
        if self.n_films >= MIN_FILMS:
            return None
        partial = (
            f" ({self.n_partial} more have a knee without a reviewed box)" if self.n_partial else ""
        )
        return (
            f"{self.dataset_id} has {self.n_films} film(s) with reviewed or given boxes{partial}; "
            f"a detector needs at least {MIN_FILMS} (a fifth are held out to score it). Save "
            "the box of more films on the Review crops page (saving the detector's box as it "
            "is confirms it), or give x0, y0, x1, y1 columns in the labels CSV."
        )


def _box(values: np.ndarray) -> Box:
    """One stored box row (x0, y0, x1, y1) as whole pixels."""
    x0, y0, x1, y1 = (int(v) for v in values)
    return x0, y0, x1, y1


def reviewed_films(dataset_id: str, *, store_path: Path | None = None) -> ReviewedFilms:
    """The films of ``dataset_id`` a detector can be trained on: those whose every knee has
    a reviewed box, then those whose labels CSV gives every knee's box (a reviewed box
    wins; a film the review excluded never trains)."""
    from store.reviews import excluded_films, reviewed_boxes

    frame = reviewed_boxes(dataset_id, path=store_path)
    paths, boxes, partial = [], [], 0
    reviewed_sources = set(frame["film_path"].astype(str))
    for film_path, rows in frame.groupby("film_path", sort=True):
        if len(rows) != int(rows["knees_on_film"].iloc[0]) or len(rows) > 2:
            partial += 1
            continue
        paths.append(Path(str(film_path)))
        film_boxes = [_box(b) for b in rows[["x0", "y0", "x1", "y1"]].values]
        boxes.append(sorted(film_boxes))
    skip = reviewed_sources | excluded_films(dataset_id, path=store_path)
    from_labels = [
        (path, film_boxes)
        for path, film_boxes in labels_csv_boxes(dataset_id, store_path=store_path)
        if str(path) not in skip and 1 <= len(film_boxes) <= 2
    ]
    paths += [path for path, _ in from_labels]
    boxes += [sorted(film_boxes) for _, film_boxes in from_labels]
    return ReviewedFilms(
        dataset_id,
        paths,
        boxes,
        n_boxes=len(frame),
        n_partial=partial,
        n_from_labels=len(from_labels),
    )


def labels_csv_boxes(
    dataset_id: str, *, store_path: Path | None = None
) -> list[tuple[Path, list[Box]]]:
    """The knee boxes a folder dataset's labels CSV gives (`engine.films.labelled_boxes`);
    empty for a phantom, a CSV without box columns, or a folder no longer readable."""
    from engine.films import labelled_boxes
    from store.datasets import dataset_params

    found = dataset_params(dataset_id, path=store_path)
    if found is None or found[0] != "folder" or not found[1].get("labels_csv"):
        return []
    params = found[1]
    try:
        return labelled_boxes(Path(params["path"]), Path(params["labels_csv"]))
    except (OSError, ValueError):
        return []


class TrainingFilms(Sequence[np.ndarray]):
    """Films given as arrays or as files read when asked for (a dataset's films are not all
    held in memory at once)."""

    def __init__(self, items: Sequence[np.ndarray | Path]) -> None:
        self._items = list(items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> np.ndarray:  # type: ignore[override]
        item = self._items[index]
        if isinstance(item, np.ndarray):
            return item
        from engine.films import read_film_file

        try:
            return read_film_file(item)
        except (OSError, ValueError) as exc:
            raise ValueError(f"film {item} cannot be read: {exc}") from exc


@dataclass(frozen=True)
class TrainingSet:
    """Films, their knee boxes, and what they are in words (for the detector's record)."""

    films: TrainingFilms
    boxes: list[list[Box]]
    trained_on: str


def find_dataset(name_or_id: str, *, store_path: Path) -> str:
    """The id of the imported folder dataset named ``name_or_id`` (its id or import name).

    Raises:
        ValueError: No such dataset, a phantom, or a name two datasets share (the message
            lists what there is).
    """
    from store.datasets import list_datasets
    from store.imports import list_imports

    datasets = list_datasets(path=store_path).set_index("dataset_id")
    imports = list_imports(path=store_path).drop_duplicates("dataset_id")
    if name_or_id in datasets.index:
        if datasets.at[name_or_id, "kind"] != "folder":
            raise ValueError(f"{name_or_id} is a phantom dataset; give --phantom N instead")
        return name_or_id
    named = imports[imports["name"] == name_or_id]["dataset_id"].tolist()
    if len(named) == 1:
        return str(named[0])
    if len(named) > 1:
        raise ValueError(
            f"{len(named)} datasets are named {name_or_id!r}: give its id ({', '.join(named)})"
        )
    known = ", ".join(f"{r.name} ({r.dataset_id})" for r in imports.itertuples()) or "none yet"
    raise ValueError(f"no imported dataset {name_or_id!r}; imported datasets: {known}")


def training_set(
    *,
    phantom: int = 0,
    phantom_seed: int = PHANTOM_SEED,
    film_size: tuple[int, int] = (384, 320),
    bilateral: bool = False,
    dataset_id: str | None = None,
    store_path: Path | None = None,
) -> TrainingSet:
    """The films to train on: ``phantom`` phantom films and/or a dataset's reviewed films.

    Raises:
        ValueError: No source given, a negative count, or a film file that is gone.
        TooFewFilms: The dataset alone has fewer than `MIN_FILMS` films with reviewed boxes.
    """
    if phantom < 0:
        raise ValueError(f"--phantom {phantom}: give a number of films, 0 or more")
    if not phantom and dataset_id is None:
        raise ValueError("nothing to train on: give --phantom N and/or --dataset NAME_OR_ID")
    items: list[np.ndarray | Path] = []
    boxes: list[list[Box]] = []
    said: list[str] = []
    # The dataset first: its refusals are quick, drawing phantom films is not.
    if dataset_id is not None:
        reviewed = reviewed_films(dataset_id, store_path=store_path)
        if not phantom and reviewed.too_few():
            raise TooFewFilms(reviewed.too_few())
        missing = [str(p) for p in reviewed.paths if not p.is_file()]
        if missing:
            raise ValueError(
                f"{len(missing)} film file(s) of {dataset_id} are gone: {', '.join(missing[:5])}"
            )
        items += reviewed.paths
        boxes += reviewed.boxes
        said.append(f"dataset {dataset_id}, {reviewed.described()}")
    if phantom:
        from engine.detect import phantom_films, phantom_trained_on

        films, film_boxes = phantom_films(
            phantom, seed=phantom_seed, film_size=film_size, bilateral=bilateral
        )
        items += films
        boxes += [list(b) for b in film_boxes]
        said.append(phantom_trained_on(films, seed=phantom_seed, bilateral=bilateral))
    if len(items) < MIN_FILMS:
        raise TooFewFilms(f"{len(items)} film(s) to train on; a detector needs {MIN_FILMS}")
    return TrainingSet(TrainingFilms(items), boxes, " + ".join(said))


# -- training and the stored detectors -------------------------------------------------------


def train(
    data: TrainingSet,
    *,
    image_size: int,
    epochs: int,
    device: str,
    home: Path | None = None,
    progress: Callable[[int, int, dict[str, float]], None] | None = None,
) -> Any:
    """Train (or reuse) a detector on ``data``; its `engine.detect.DetectorRecord`."""
    from engine.detect import train_detector

    check_settings(image_size, epochs)
    return train_detector(
        data.films,
        data.boxes,
        image_size=image_size,
        epochs=epochs,
        device=training_device(device),
        out_dir=detectors_dir(home),
        progress=progress,
        trained_on=data.trained_on,
    )


def list_detectors(home: Path | None = None) -> list[Any]:
    """Every complete detector under ``detectors/``, newest first (`DetectorRecord`s)."""
    from engine.detect import list_detectors as stored_detectors

    return stored_detectors(detectors_dir(home))


# -- the command line ---------------------------------------------------------------------------


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``detector train`` and ``detector list`` on the CLI's subcommands."""
    verbs = sub.add_parser("detector", help="train and list knee detectors").add_subparsers(
        dest="detector_command", required=True
    )
    p = verbs.add_parser("train", help="train a YOLOv8n knee detector from scratch")
    p.add_argument(
        "--phantom", type=int, default=0, metavar="N", help="N phantom films, true boxes"
    )
    p.add_argument("--phantom-seed", type=int, default=PHANTOM_SEED)
    p.add_argument(
        "--film-size",
        type=int,
        nargs=2,
        default=(384, 320),
        metavar=("H", "W"),
        help="phantom film size (a bilateral film is twice as wide)",
    )
    p.add_argument("--bilateral", action="store_true", help="bilateral phantom films")
    p.add_argument(
        "--dataset",
        default=None,
        metavar="NAME_OR_ID",
        help="an imported folder's films whose knees have boxes from crop review",
    )
    p.add_argument("--image-size", type=int, default=PAGE_IMAGE_SIZE, help="px, a multiple of 32")
    p.add_argument("--epochs", type=int, default=PAGE_EPOCHS)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.set_defaults(func=cmd_train)
    verbs.add_parser("list", help="list the trained detectors").set_defaults(func=cmd_list)


def cmd_train(args: argparse.Namespace) -> int:
    """Train a detector, printing each epoch and the result (exit 2 on bad input)."""
    keeper = StatusKeeper(None, time.perf_counter())  # the command keeps no status file
    try:
        check_settings(args.image_size, args.epochs)
        device = training_device(args.device)
        data = _training_set_from_args(args)
        train_with_status(
            data,
            keeper,
            lambda line: print(line, flush=True),
            image_size=args.image_size,
            epochs=args.epochs,
            device=device,
        )
    except Exception as exc:
        keeper.update(state="failed", message=str(exc))
        raise
    return 0


def _training_set_from_args(args: argparse.Namespace) -> TrainingSet:
    store = None
    dataset_id = None
    if args.dataset is not None:
        store = default_store_path()
        if not store.exists():
            raise ValueError(f"no store at {store}: import a folder of films first")
        init_schema(store)
        dataset_id = find_dataset(args.dataset, store_path=store)
    if args.phantom > 0:
        print(f"drawing {args.phantom} phantom film(s) of seed {args.phantom_seed}", flush=True)
    return training_set(
        phantom=args.phantom,
        phantom_seed=args.phantom_seed,
        film_size=tuple(args.film_size),
        bilateral=args.bilateral,
        dataset_id=dataset_id,
        store_path=store,
    )


def train_with_status(
    data: TrainingSet,
    keeper: StatusKeeper,
    say: Callable[[str], None],
    *,
    image_size: int,
    epochs: int,
    device: str,
    home: Path | None = None,
) -> Any:
    """Train on ``data``, saying each epoch and the result (a line each) and keeping the
    status file up to date; the `engine.detect.DetectorRecord`. The command line and the
    Review page's background training both train through here.

    Raises:
        Exception: whatever the training raised, after the status says it failed.
    """
    started_at = utc_now()
    start = keeper.start
    say(
        f"training a knee detector on {len(data.films)} films ({data.trained_on}) at "
        f"{image_size} px for {epochs} epochs on {device}"
    )
    keeper.update(n_films=len(data.films))

    def progress(epoch: int, epochs: int, losses: dict[str, float]) -> None:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in losses.items())
        say(f"epoch {epoch}/{epochs}: {shown} ({time.perf_counter() - start:.0f} s)")
        keeper.update(epoch=epoch, losses=losses)

    try:
        record = train(
            data, image_size=image_size, epochs=epochs, device=device, home=home, progress=progress
        )
    except Exception as exc:
        keeper.update(state="failed", message=str(exc))
        raise
    held = record.held_out
    reused = record.created_at < started_at  # both ISO 8601 UTC: text order is time order
    verb = "already trained on this input; reused" if reused else "trained"
    folder = Path(record.path).parent
    say(
        f"detector {record.key} {verb}: held-out mean IoU {held['mean_iou']:.3f}, "
        f"mAP50 {held['map50']:.3f} on {record.n_held_out} held-out film(s) of "
        f"{record.n_films}; stored in {folder}"
    )
    keeper.update(
        state="finished",
        epoch=keeper.status.epochs if keeper.status else record.epochs,
        key=record.key,
        held_out=dict(held),
        n_films=record.n_films,
        message=f"detector {record.key} {verb}, stored in {folder}",
    )
    return record


def cmd_list(args: argparse.Namespace) -> int:
    """Print the trained detectors, newest first."""
    records = list_detectors()
    if not records:
        print(
            f"no trained detector in {detectors_dir()} yet; train one with "
            "`python -m jobs detector train --phantom 200` or from the Review crops page"
        )
        return 0
    print(f"{'key':<16}  {'trained':<25}  {'IoU':>5}  {'mAP50':>5}  {'px':>4}  {'epochs':>6}  on")
    for r in records:
        print(
            f"{r.key:<16}  {r.created_at:<25}  {r.held_out.get('mean_iou', float('nan')):>5.3f}  "
            f"{r.held_out.get('map50', float('nan')):>5.3f}  {r.image_size:>4}  {r.epochs:>6}  "
            f"{r.trained_on}"
        )
    return 0
