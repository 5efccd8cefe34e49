"""A demo bundle: a study's models and a dozen test films in one zip, for a laptop without
the lab's store or GPU.

``python -m jobs export-demo STUDY [--method M] [--seed S | --seeds all] -o demo.zip`` writes
it; ``python -m jobs up --demo demo.zip`` unpacks it into a fresh temporary folder and opens the
kiosk (`jobs.services.kiosk`) on it. The zip holds:

- ``manifest.json``: the bundle's format and version, the SoftGrade and library versions that
  wrote it, the study, method, tasks, image size, the seeds (the best one first), every model
  file with its task, seed and validation AMAE, every film with its recorded (and, on the
  phantom, true) grades and the seeds that never trained on it, the knee detector, and
  every other file's SHA-256 (``sha256``);
- ``card.json``: the study card (`store.studies.study_card`) and its notes;
- ``models/<task>-seed<seed>.pt``: the selected model of each (task, seed), as
  `engine.grade_model.save_checkpoint` wrote it;
- ``films/<n>.png``: each example film's knee crop, exactly as the models saw it;
- ``detector/``: the trained knee detector's folder, when the dataset's films were cropped
  by one (films cropped by the classical detector need no file: it is code).

A file that is not such a bundle, lacks a part, was written by another bundle version, would
unpack past `DEMO_ZIP_LIMITS` (`store.zip_limits`), holds a file that differs from its hash,
says a number out of SoftGrade's limits (an image size, a grade, a crop's size: every one,
`jobs.services.demo_manifest`) or holds a film that does not decode is refused with one message
(`DemoBundleError`) before anything is unpacked; so is, in `fresh_demo_home`, a detector the
safe loader (`engine.detect.safe_load`) refuses.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from engine.analysis import conformal
from engine.config import SpecError, StudySpec
from engine.datasets import cache_dir_for, open_prepared
from engine.demo_models import best_seed, default_method, example_films, seed_checkpoints
from engine.detect.registry import RECORD_FILE
from engine.films import escaped
from engine.seeds import split_seed_of
from engine.vocab import TASKS
from jobs.services import grade_sets
from jobs.services.demo_manifest import (
    crop_problem,
    detector_record_problems,
    joined,
    manifest_problems,
)
from jobs.services.provenance import code_version, library_versions
from store import runs as store_runs
from store import studies as store_studies
from store.datasets import load_splits
from store.db import softgrade_home
from store.outputs import atomic_output, check_output
from store.zip_limits import (
    ZipLimitError,
    ZipLimits,
    check_zip_limits,
    copy_member,
    file_sha256,
    member_sha256,
)

FORMAT = "softgrade-demo"
#: 2: the manifest lists every part's SHA-256 (``sha256``), checked before unpacking.
DEMO_BUNDLE_VERSION = 2
MANIFEST = "manifest.json"
CARD = "card.json"
N_FILMS = 12
# Detectors that are code, not files: the classical one, and the phantom's true boxes.
CODE_DETECTORS = ("classical", "truth")
_FILM_COLUMNS = ("kl", "kl_true", "cppd", "cppd_true")
#: What a demo bundle may hold (checked from its directory, before anything is unpacked): a
#: model is ~45 MB and a bundle of 20 seeds' models for two tasks ~1.8 GB.
DEMO_ZIP_LIMITS = ZipLimits(
    max_entries=1000, max_entry_bytes=256 * 2**20, max_total_bytes=4 * 2**30, max_ratio=100
)


class DemoBundleError(ValueError):
    """A demo bundle cannot be written or opened (the message says why and what to do)."""


@dataclass(frozen=True)
class ExportedDemo:
    """What `export_demo` wrote."""

    path: Path
    size_bytes: int
    method: str
    seeds: tuple[int, ...]
    n_films: int


@dataclass(frozen=True)
class DemoBundle:
    """An unpacked demo bundle, ready for the kiosk.

    Attributes:
        folder: Where it was unpacked.
        manifest: ``manifest.json`` as read.
        checkpoints: task -> seed -> model file, seeds in the manifest's order (best first).
        films: One row per example film: ``image_id``, ``file`` (its crop), ``kl``,
            ``kl_true``, ``cppd``, ``cppd_true`` and ``test_seeds`` (tuple of seeds whose
            models never trained on it).
        card: The study card, label -> text.
        notes: The study's markdown notes ('' if none).
        detector_dir: The trained detector's folder, or None for the classical detector.
    """

    folder: Path
    manifest: dict[str, Any]
    checkpoints: dict[str, dict[int, Path]]
    films: pd.DataFrame
    card: dict[str, str]
    notes: str
    detector_dir: Path | None

    @property
    def method(self) -> str:
        """The method whose models grade."""
        return str(self.manifest["method"])

    @property
    def best_seed(self) -> int:
        """The seed that did best on validation (its models draw the maps)."""
        return int(self.manifest["seeds"][0])

    @property
    def image_size(self) -> int:
        """Side of the crops the models were trained on (px)."""
        return int(self.manifest["image_size"])

    @property
    def set_thresholds(self) -> dict[str, dict[int, np.ndarray]]:
        """task -> seed -> grade-set thresholds at the default score and coverage (null:
        every grade); empty for a bundle made before issue 41 or at other settings."""
        made = self.manifest.get("grade_sets") or {}
        if made != {"score": conformal.DEFAULT_SCORE, "coverage": conformal.DEFAULT_COVERAGE}:
            return {}
        out: dict[str, dict[int, np.ndarray]] = {}
        for model in self.manifest["models"]:
            if (limits := model.get("set_thresholds")) is not None:
                values = [np.inf if v is None else float(v) for v in limits]
                out.setdefault(str(model["task"]), {})[int(model["seed"])] = np.array(values)
        return out


# -- export ------------------------------------------------------------------------------------


def export_demo(
    study_id: str,
    out: Path | str,
    *,
    method: str | None = None,
    seed: int | None = None,
    all_seeds: bool = False,
    n_films: int = N_FILMS,
    home: Path | None = None,
    force: bool = False,
    path: Path | str | None = None,
) -> ExportedDemo:
    """Write a study's demo bundle.

    Args:
        study_id: The study.
        out: The zip file to write, through `store.outputs.atomic_output`: never through a
            link, and over an existing file only with ``force``.
        method: The method whose models go in; None takes the best on validation.
        seed: The one seed to include; None takes the best on validation.
        all_seeds: Include every seed with saved weights of every task (the best first), so
            the demo shows how much the seeds agree.
        n_films: How many test films of the best seed to include.
        home: ``SOFTGRADE_HOME`` (its ``cache/`` holds the study's films); default the
            current one.
        force: Replace an existing file named ``out`` (``export-demo --force``).
        path: The store.

    Raises:
        DemoBundleError: The study has no saved models of the method here, the seed has
            none, or its films are not on this machine.
        OutputRefused: ``out`` is a link or a folder, or exists and ``force`` is False.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    check_output(out, force=force)  # before the work, and again as the file is named
    home = softgrade_home() if home is None else Path(home)
    study = store_studies.get_study(study_id, path=path)
    try:
        spec = StudySpec.from_dict(study.spec)
    except SpecError as exc:
        raise DemoBundleError(f"study {study_id}'s spec cannot be read: {exc}") from exc
    runs = store_runs.list_runs([study_id], selected_only=True, path=path)
    if runs.empty:
        raise DemoBundleError(f"study {study_id} ({study.name}) has no finished runs yet")
    tasks = [t for t in TASKS if t in set(runs["task"])]
    method = _check_method(runs, method, study_id)
    seeds, checkpoints = _chosen_seeds(runs, method, tasks, seed=seed, all_seeds=all_seeds)
    prepared = _prepared_films(spec, home)
    split_seeds = {s: split_seed_of(runs, s) for s in seeds}  # a factorial seed's split
    films = _films_with_test_seeds(prepared.meta, study.dataset_id, split_seeds, path)
    films = example_films(films, n_films, tasks[0], first="every_seed_tested")
    card = store_studies.study_card(study_id, path=path)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "version": DEMO_BUNDLE_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "softgrade": code_version(),
        "libraries": library_versions(),
        "study": {"study_id": study_id, "name": study.name, "dataset_id": study.dataset_id},
        "method": method,
        "tasks": tasks,
        "image_size": spec.image_size,
        "seeds": list(seeds),
        "detector": _detector(prepared.cache_dir, home),
        "models": [
            {
                "task": task,
                "seed": s,
                "file": f"models/{task}-seed{s}.pt",
                "val_amae": float(
                    runs.loc[
                        (runs["task"] == task) & (runs["method"] == method) & (runs["seed"] == s),
                        "val_amae",
                    ].iloc[0]
                ),
            }
            for task in tasks
            for s in seeds
        ],
        "films": [_film_entry(i, row) for i, (_, row) in enumerate(films.iterrows())],
    }
    _add_set_thresholds(manifest, study_id, method, path)
    notes = store_studies.get_study(study_id, path=path).notes or ""
    card_json = json.dumps({"card": card, "notes": notes}, indent=2)
    parts: dict[str, bytes | Path] = {CARD: card_json.encode()}
    for model in manifest["models"]:
        parts[model["file"]] = Path(checkpoints[model["task"]][model["seed"]])
    for entry, row_index in zip(manifest["films"], films["row"], strict=True):
        parts[entry["file"]] = _png(np.asarray(prepared.images[int(row_index)]))
    detector = manifest["detector"]
    if detector["folder"]:
        parts |= _folder_parts(home / "detectors" / detector["name"], detector["folder"])
    # Every part's hash: `unpack_demo` checks each file against it before anything is used.
    manifest["sha256"] = {name: _sha256(data) for name, data in sorted(parts.items())}
    with (
        atomic_output(out, force=force) as partial,
        zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as zf,
    ):
        zf.writestr(MANIFEST, json.dumps(manifest, indent=2), _compression(MANIFEST))
        for name, data in parts.items():
            if isinstance(data, Path):
                zf.write(data, name, _compression(name))
            else:
                zf.writestr(name, data, _compression(name))
    return ExportedDemo(out, out.stat().st_size, method, tuple(seeds), len(films))


def _compression(name: str) -> int:
    """How a bundle part is packed: text (the manifest, the card, a detector's record)
    deflated; models and films stored as they are. Weights and PNGs hardly compress
    (deflate saves ~7 % of a ~45 MB model) and deflating them cost ~1.4 s of CPU per
    model to write and more to read, for every export and every unpack."""
    return zipfile.ZIP_DEFLATED if name.endswith((".json", ".yaml", ".txt")) else zipfile.ZIP_STORED


def _add_set_thresholds(
    manifest: dict[str, Any], study_id: str, method: str, path: Path | str | None
) -> None:
    """Each model's grade-set thresholds from its validation films (issue 41), so the kiosk
    on a laptop gives a test film its likely range as the lab's Grade a film does; JSON has
    no infinity, so a threshold of every grade is written as null."""
    thresholds = grade_sets.seed_thresholds(study_id, method, path=path)
    manifest["grade_sets"] = {
        "score": conformal.DEFAULT_SCORE,
        "coverage": conformal.DEFAULT_COVERAGE,
    }
    for model in manifest["models"]:
        limits = thresholds.get(model["task"], {}).get(model["seed"])
        if limits is not None:
            model["set_thresholds"] = [float(v) if np.isfinite(v) else None for v in limits]


def _check_method(runs: pd.DataFrame, method: str | None, study_id: str) -> str:
    methods = sorted(set(runs["method"]))
    if method is None:
        return default_method(runs)
    if method not in methods:
        raise DemoBundleError(
            f"study {study_id} has no finished runs of {method!r}; it has {', '.join(methods)}"
        )
    return method


def _chosen_seeds(
    runs: pd.DataFrame, method: str, tasks: list[str], *, seed: int | None, all_seeds: bool
) -> tuple[list[int], dict[str, dict[int, str]]]:
    """The seeds to ship (the best on validation first) and every seed's model files."""
    checkpoints = seed_checkpoints(runs, method, tasks)
    complete = sorted(set.intersection(*(set(checkpoints[t]) for t in tasks)))
    best, _ = best_seed(runs, method, tasks)
    if not complete:
        raise DemoBundleError(
            f"no seed of {method} has saved weights of {' and '.join(tasks)} on this machine "
            "(models trained on a Ray cluster keep their weights there)"
        )
    if seed is not None:
        if seed not in complete:
            raise DemoBundleError(
                f"seed {seed} of {method} has no saved weights of every task here; seeds "
                f"that have: {', '.join(map(str, complete))}"
            )
        return [seed], checkpoints
    if all_seeds:
        return [best, *(s for s in complete if s != best)], checkpoints
    return [best], checkpoints


def _prepared_films(spec: StudySpec, home: Path) -> Any:
    cache_dir = cache_dir_for(spec.dataset, spec.image_size, home / "cache")
    try:
        return open_prepared(cache_dir)
    except (ValueError, OSError) as exc:
        raise DemoBundleError(
            f"the study's prepared films are not on this machine ({cache_dir}); they are "
            "rebuilt when a study on this dataset runs here"
        ) from exc


def _films_with_test_seeds(
    meta: pd.DataFrame,
    dataset_id: str | None,
    split_seeds: dict[int, int],
    path: Path | str | None,
) -> pd.DataFrame:
    """The best seed's test films, each with the shipped seeds that tested on it.

    ``split_seeds`` maps each shipped seed (the best first) to the split seed it trained on
    (itself unless the study is factorial). ``every_seed_tested`` marks the films every
    shipped seed kept for testing: they are taken first, so the seeds' agreement is shown on
    films none of them trained on.
    """
    seeds = list(split_seeds)
    test_seeds: dict[str, list[int]] = {}
    for s in seeds:
        splits = load_splits(dataset_id, split_seeds[s], path=path) if dataset_id else None
        if splits is None:
            raise DemoBundleError(f"seed {s} has no stored split of the study's dataset")
        for image_id in splits.index[splits == "test"]:
            test_seeds.setdefault(str(image_id), []).append(s)
    films = meta.assign(row=np.arange(len(meta)))
    films["test_seeds"] = films["image_id"].map(lambda i: tuple(test_seeds.get(i, ())))
    films = films[films["test_seeds"].map(lambda t: seeds[0] in t)].copy()
    films["every_seed_tested"] = films["test_seeds"].map(len) == len(seeds)
    return films


def _film_entry(i: int, row: pd.Series) -> dict[str, Any]:
    entry: dict[str, Any] = {"image_id": str(row["image_id"]), "file": f"films/{i:02d}.png"}
    for col in _FILM_COLUMNS:
        value = row.get(col)
        entry[col] = None if value is None or pd.isna(value) else int(value)
    entry["test_seeds"] = [int(s) for s in row["test_seeds"]]
    return entry


def _detector(cache_dir: Path, home: Path) -> dict[str, Any]:
    """The detector the study's films were cropped with, and the bundle folder holding it."""
    try:
        name = json.loads((cache_dir / "manifest.json").read_text()).get("detector")
    except (OSError, ValueError):
        name = None
    name = str(name or "classical")
    if name in CODE_DETECTORS:
        return {"name": name, "folder": None}
    if not (home / "detectors" / name).is_dir():
        raise DemoBundleError(
            f"the films were cropped by the trained detector {name!r}, whose folder is not in "
            f"{home / 'detectors'}"
        )
    return {"name": name, "folder": "detector"}


def _png(crop: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    Image.fromarray(crop).save(buffer, format="PNG")
    return buffer.getvalue()


def _folder_parts(folder: Path, arcname: str) -> dict[str, Path]:
    """Every file under ``folder``, by its name in the bundle (``arcname/...``)."""
    return {
        f"{arcname}/{file.relative_to(folder).as_posix()}": file
        for file in sorted(folder.rglob("*"))
        if file.is_file()
    }


def _sha256(data: bytes | Path) -> str:
    """SHA-256 (hex) of bytes or of a file's contents."""
    return file_sha256(data) if isinstance(data, Path) else hashlib.sha256(data).hexdigest()


# -- open --------------------------------------------------------------------------------------


def unpack_demo(bundle: Path | str, dest: Path | str) -> DemoBundle:
    """Check a demo bundle and unpack it into ``dest`` (created; should be empty).

    Raises:
        DemoBundleError: Not a zip, not a demo bundle, another version, or a part missing;
            the message names the file and what is wrong. Nothing is written then.
    """
    bundle, dest = Path(bundle), Path(dest)
    if not bundle.is_file():
        raise DemoBundleError(f"{bundle}: no such file (give the demo bundle's .zip)")
    created = not dest.exists()
    try:
        with zipfile.ZipFile(bundle) as zf:
            check_zip_limits(zf, DEMO_ZIP_LIMITS, str(bundle))
            names = set(zf.namelist())
            manifest = _read_manifest(zf, names, bundle)
            wanted = _parts(manifest, names, bundle)
            _check_values(manifest, bundle)
            _check_hashes(zf, manifest, wanted, bundle)
            _check_crops(zf, manifest, bundle)
            _check_detector_record(zf, manifest, bundle)
            dest.mkdir(parents=True, exist_ok=True)
            for name in sorted(wanted):
                target = dest / PurePosixPath(name)
                target.parent.mkdir(parents=True, exist_ok=True)
                copy_member(zf, name, target)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        _remove_partial(dest, created)
        raise DemoBundleError(
            f"{bundle} is not a demo bundle: not a readable zip file ({exc}). Export one with "
            "`python -m jobs export-demo STUDY -o demo.zip`"
        ) from exc
    except ZipLimitError as exc:
        raise DemoBundleError(str(exc)) from exc
    except BaseException:
        _remove_partial(dest, created)
        raise
    return open_demo(dest)


def _check_values(manifest: dict[str, Any], where: Path) -> None:
    """Refuse a manifest whose numbers or names are out of SoftGrade's limits
    (`jobs.services.demo_manifest`): the kiosk would size its work by them."""
    problems = manifest_problems(manifest)
    if problems:
        raise DemoBundleError(
            f"{where}: its {MANIFEST} is refused: {joined(problems)}. Export the bundle again "
            "with `python -m jobs export-demo`"
        )


def _check_crops(zf: zipfile.ZipFile, manifest: dict[str, Any], bundle: Path) -> None:
    """Refuse the bundle unless every film's crop is a grey PNG of ``image_size`` px a side
    that decodes (read from the zip: each header first, then its pixels)."""
    size = int(manifest["image_size"])
    for film in manifest["films"]:
        with zf.open(film["file"]) as member:
            problem = crop_problem(member, size)
        if problem:
            raise DemoBundleError(_film_refused(bundle, film, problem))


def _film_refused(where: Path | str, film: dict[str, Any], problem: str) -> str:
    return (
        f"{where}: its film {film['file']} (image {escaped(str(film.get('image_id')))}) is "
        f"refused: {problem}. Export the bundle again with `python -m jobs export-demo`"
    )


def _check_detector_record(zf: zipfile.ZipFile, manifest: dict[str, Any], bundle: Path) -> None:
    """Refuse a bundled trained detector whose record sizes its inference past the limits."""
    folder = manifest["detector"].get("folder")
    if not folder:
        return
    name = f"{folder}/{RECORD_FILE}"
    if name not in zf.namelist():
        raise DemoBundleError(f"{bundle}: its knee detector has no {RECORD_FILE}")
    problems = detector_record_problems(zf.read(name).decode("utf-8", "replace"))
    if problems:
        raise DemoBundleError(f"{bundle}: its knee detector is refused: {joined(problems)}")


def _remove_partial(dest: Path, created: bool) -> None:
    """Remove what a failed unpack wrote (the folder, when this unpack created it)."""
    if created:
        shutil.rmtree(dest, ignore_errors=True)


def _check_hashes(
    zf: zipfile.ZipFile, manifest: dict[str, Any], wanted: set[str], bundle: Path
) -> None:
    """Refuse the bundle unless every part has the SHA-256 its manifest names (read in
    chunks, before anything is unpacked)."""
    hashes = manifest.get("sha256")
    if not isinstance(hashes, dict):
        raise DemoBundleError(f"{bundle}: its {MANIFEST} lists no file hashes (sha256)")
    unlisted = sorted(wanted - {MANIFEST} - set(hashes))
    if unlisted:
        raise DemoBundleError(f"{bundle}: its {MANIFEST} has no hash for {', '.join(unlisted)}")
    changed = sorted(n for n in wanted - {MANIFEST} if member_sha256(zf, n) != hashes[n])
    if changed:
        raise DemoBundleError(
            f"{bundle} was changed after it was written: {', '.join(changed)} "
            f"{'does' if len(changed) == 1 else 'do'} not match the hash in its {MANIFEST}. "
            "Export it again, or ask whoever sent it for an unchanged copy"
        )


def _read_manifest(zf: zipfile.ZipFile, names: set[str], bundle: Path) -> dict[str, Any]:
    if MANIFEST not in names:
        raise DemoBundleError(
            f"{bundle} is not a demo bundle: it has no {MANIFEST} (a study bundle for "
            "`import-study` is another kind of file)"
        )
    try:
        manifest = json.loads(zf.read(MANIFEST))
    except ValueError as exc:
        raise DemoBundleError(f"{bundle}: its {MANIFEST} cannot be read ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DemoBundleError(f"{bundle} is not a demo bundle (its {MANIFEST} says otherwise)")
    version = manifest.get("version")
    if version != DEMO_BUNDLE_VERSION:
        raise DemoBundleError(
            f"{bundle} is a demo bundle of version {version}; this SoftGrade reads version "
            f"{DEMO_BUNDLE_VERSION}. Export it again with this SoftGrade"
        )
    return manifest


def _parts(manifest: dict[str, Any], names: set[str], bundle: Path) -> set[str]:
    """Every file the manifest names, checked present and inside the bundle."""
    try:
        wanted = {MANIFEST, CARD}
        wanted |= {m["file"] for m in manifest["models"]}
        wanted |= {f["file"] for f in manifest["films"]}
        folder = manifest["detector"]["folder"]
        for key in ("study", "method", "tasks", "image_size", "seeds"):
            manifest[key]  # a KeyError names the missing field
    except (KeyError, TypeError) as exc:
        raise DemoBundleError(f"{bundle}: its {MANIFEST} lacks {exc}") from exc
    if folder:
        found = {n for n in names if n.startswith(f"{folder}/") and not n.endswith("/")}
        if not found:
            raise DemoBundleError(f"{bundle} lacks its knee detector ({folder}/)")
        wanted |= found
    unsafe = sorted(n for n in wanted if _unsafe(n))
    if unsafe:
        raise DemoBundleError(f"{bundle} names files outside itself: {', '.join(unsafe)}")
    missing = sorted(wanted - names)
    if missing:
        raise DemoBundleError(f"{bundle} is incomplete; missing: {', '.join(missing)}")
    if not manifest["models"] or not manifest["films"]:
        raise DemoBundleError(f"{bundle} holds no models or no films")
    return wanted


def _unsafe(name: str) -> bool:
    path = PurePosixPath(name)
    return path.is_absolute() or ".." in path.parts or "\\" in name


def open_demo(folder: Path | str) -> DemoBundle:
    """Read an unpacked demo bundle (`unpack_demo` checked it)."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        card = json.loads((folder / CARD).read_text())
    except (OSError, ValueError) as exc:
        raise DemoBundleError(f"{folder} is not an unpacked demo bundle ({exc})") from exc
    if not isinstance(manifest, dict) or not isinstance(card, dict):
        raise DemoBundleError(f"{folder} is not an unpacked demo bundle")
    _check_values(manifest, folder)
    checkpoints: dict[str, dict[int, Path]] = {task: {} for task in manifest["tasks"]}
    order = {s: i for i, s in enumerate(manifest["seeds"])}
    for model in sorted(manifest["models"], key=lambda m: order.get(m["seed"], len(order))):
        checkpoints[model["task"]][int(model["seed"])] = folder / model["file"]
    films = pd.DataFrame(manifest["films"])
    films["file"] = [str(folder / f) for f in films["file"]]
    films["test_seeds"] = films["test_seeds"].map(lambda seeds: tuple(int(s) for s in seeds))
    for col in _FILM_COLUMNS:
        films[col] = films[col].astype("Int64") if col in films else pd.NA
    detector = manifest["detector"]
    return DemoBundle(
        folder=folder,
        manifest=manifest,
        checkpoints=checkpoints,
        films=films,
        card={str(k): str(v) for k, v in card.get("card", {}).items()},
        notes=str(card.get("notes") or ""),
        detector_dir=folder / detector["folder"] if detector.get("folder") else None,
    )


def read_crop(file: Path | str, size: int) -> np.ndarray:
    """A bundled film's knee crop, (S, S) uint8 with S = ``size`` (the bundle's image size).

    Raises:
        DemoBundleError: The file is not a grey PNG of that size or does not decode (its
            header is read before any pixel); the message names the file.
    """
    try:
        with open(file, "rb") as source:
            problem = crop_problem(source, size)
            if not problem:
                source.seek(0)
                with Image.open(source) as image:
                    return np.array(image)  # a writable copy: torch warns on read-only
    except OSError as exc:
        problem = f"cannot be read ({exc.strerror or exc})"
    raise DemoBundleError(f"the demo bundle's film {Path(file).name} is refused: {problem}")


def fresh_demo_home(bundle: Path | str) -> tuple[Path, DemoBundle]:
    """A new temporary SoftGrade home with the bundle unpacked in it (``<home>/demo``), its
    knee detector (if any) loaded once through the safe loader, so a bundle whose detector
    cannot be loaded safely is refused before the kiosk starts.

    The caller removes the folder when done (``shutil.rmtree``); on a bad bundle it is
    removed here before the error is raised.
    """
    home = Path(tempfile.mkdtemp(prefix="softgrade-demo-"))
    try:
        demo = unpack_demo(bundle, home / "demo")
        _check_detector(demo, bundle)
        return home, demo
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise


def _check_detector(demo: DemoBundle, bundle: Path | str) -> None:
    """Refuse the bundle unless its trained detector loads (`engine.detect.safe_load`: nothing in
    the file runs)."""
    if demo.detector_dir is None:
        return
    from engine.detect import load_detector  # ultralytics is slow to import; only when needed
    from engine.detect.safe_load import UnsafeCheckpointError

    try:
        load_detector(demo.detector_dir)
    except (UnsafeCheckpointError, OSError, ValueError, TypeError) as exc:
        raise DemoBundleError(f"{bundle}: its knee detector is refused: {exc}") from exc
