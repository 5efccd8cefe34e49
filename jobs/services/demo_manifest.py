"""What a demo bundle may say, checked before any of it is unpacked or served.

A demo bundle comes from another machine (`jobs.services.demo_bundle`), and the kiosk sizes its work
by the numbers in it: ``image_size`` is the side every uploaded knee is resized to and every
Grad-CAM map is drawn at, each film's crop is decoded whole for each view, and a trained
detector's ``image_size`` is the side every upload is scaled to for inference. A bundle
saying ``image_size: 100000`` made each upload ask for 10 GB, an 8000 x 8000 crop 4 GB a
view. So every number is held to a limit SoftGrade already keeps elsewhere (none is
restated here):

- ``image_size``: a side a study may train at (`engine.study_settings.IMAGE_SIZES`);
- each film's crop: a grey PNG of exactly ``image_size`` x ``image_size`` px, its header
  read before its pixels (so never past the import's `engine.films.MAX_FILM_PIXELS`), and
  then decoded, so a damaged film is named before the kiosk starts;
- grades, recorded and true: whole numbers in the task's range, as an import reads them
  (`engine.films.parse_grade`, `engine.films.GRADE_RANGES`), or empty;
- tasks and method: known ones (`engine.vocab`, `engine.methods`); seeds: distinct whole
  numbers from 0, as a
  study's; one model for each (task, seed), with a validation AMAE from 0 to the task's top
  grade; each film's test seeds among the seeds;
- image ids: text without control or bidirectional-control characters
  (`engine.films.hidden_characters`, the import's rule for ids); the study's id and name:
  text (the terminal shows the name escaped, `engine.films.escaped`);
- grade-set thresholds (issue 41), where given: one per grade of the model's task, each a
  number from 0 to 1 (every score's range) or null (every grade), and the score and coverage
  they were made at (`engine.analysis.conformal`);
- a trained detector's ``image_size``: a size detectors train at
  (`engine.detect.registry.detector_size_problem`) whose square stays within the import's
  `MAX_FILM_PIXELS`; its held-out figures finite numbers from 0.

Each function returns what is wrong in words ('' or an empty list: nothing); the bundle's
reader raises them as one `DemoBundleError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import IO, Any

from PIL import Image

from engine.analysis.conformal import SCORES
from engine.detect.registry import DetectorRecord, detector_size_problem
from engine.films import (
    GRADE_RANGES,
    MAX_FILM_PIXELS,
    UNREADABLE_IMAGE_ERRORS,
    hidden_characters,
    parse_grade,
)
from engine.methods import is_registered, method_names
from engine.study_settings import IMAGE_SIZES
from engine.vocab import TASK_INFO, TASKS

#: The grade cells of a bundled film: (its key, the grade column whose range holds it).
FILM_GRADES = (("kl", "kl"), ("kl_true", "kl"), ("cppd", "cppd"), ("cppd_true", "cppd"))
#: The most a grade-set threshold can be: every score is at most 1, a float32 film's
#: probabilities summing a little above 1 make it 1.00000005.
SCORE_MOST = 1.001
CROP_FORMAT = "PNG"
CROP_MODE = "L"


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def manifest_problems(manifest: dict[str, Any]) -> list[str]:
    """Every number and name of a demo manifest out of its limits (empty: none).

    ``manifest`` has every key `jobs.services.demo_bundle` needs (checked before this).
    """
    problems = _size_problems(manifest.get("image_size"))
    tasks, seeds = manifest.get("tasks"), manifest.get("seeds")
    if not isinstance(tasks, list) or not tasks or any(t not in TASKS for t in tasks):
        problems.append(f"tasks {tasks!r}: give one or more of {', '.join(TASKS)}")
        tasks = []
    elif len(set(tasks)) != len(tasks):
        problems.append(f"tasks {tasks!r}: each task once")
    if not is_registered(str(manifest.get("method"))):
        problems.append(f"method {manifest.get('method')!r}: one of {', '.join(method_names())}")
    if not isinstance(seeds, list) or not seeds or not all(_whole(s) and s >= 0 for s in seeds):
        problems.append(f"seeds {_short(seeds)}: one or more whole numbers from 0")
        seeds = []
    elif len(set(seeds)) != len(seeds):
        problems.append(f"seeds {_short(seeds)}: each seed once")
    problems += _model_problems(manifest.get("models"), tasks, seeds)
    made = manifest.get("grade_sets")
    if made is not None and not (
        isinstance(made, dict)
        and made.get("score") in SCORES
        and _number(made.get("coverage"))
        and 0 < made["coverage"] < 1
    ):
        problems.append(
            f"grade_sets {_short(made)}: a score ({', '.join(SCORES)}) and a coverage in (0, 1)"
        )
    problems += _film_problems(manifest.get("films"), seeds)
    study = manifest.get("study")
    if not isinstance(study, dict) or not all(
        isinstance(study.get(k), str) for k in ("study_id", "name")
    ):
        problems.append("study: its study_id and name, as text")
    detector = manifest.get("detector")
    if (
        not isinstance(detector, dict)
        or not isinstance(detector.get("name"), str)
        or not isinstance(detector.get("folder"), str | None)
    ):
        problems.append("detector: a name, and the folder holding it or none")
    return problems


def _size_problems(size: object) -> list[str]:
    low, high = IMAGE_SIZES
    if _whole(size) and low <= size <= high:  # type: ignore[operator]
        return []
    return [f"image_size {_short(size)}: a whole number of px from {low} to {high}"]


def _model_problems(models: object, tasks: list[str], seeds: list[int]) -> list[str]:
    if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
        return ["models: a list of models (task, seed, file, val_amae)"]
    problems, seen = [], set()
    for i, model in enumerate(models):
        task, seed, amae = model.get("task"), model.get("seed"), model.get("val_amae")
        where = f"models[{i}]"
        if task not in tasks or seed not in seeds:
            problems.append(f"{where}: task {task!r} and seed {_short(seed)} must be the bundle's")
            continue
        if (task, seed) in seen:
            problems.append(f"{where}: a second model of {task}, seed {seed}")
        seen.add((task, seed))
        top = TASK_INFO[task].top_grade
        if not _number(amae) or not 0 <= amae <= top:
            problems.append(f"{where}: val_amae {_short(amae)} must be a number from 0 to {top}")
        limits = model.get("set_thresholds")
        if limits is not None and not (
            isinstance(limits, list)
            and len(limits) == top + 1
            and all(v is None or (_number(v) and 0 <= v <= SCORE_MOST) for v in limits)
        ):
            problems.append(
                f"{where}: set_thresholds {_short(limits)} must be {top + 1} numbers from 0 "
                "to 1 (or null: every grade)"
            )
    missing = [f"{t}, seed {s}" for t in tasks for s in seeds if (t, s) not in seen]
    if missing and not problems:
        problems.append(f"models: none for {'; '.join(missing[:3])}")
    return problems


def _film_problems(films: object, seeds: list[int]) -> list[str]:
    if not isinstance(films, list) or not all(isinstance(f, dict) for f in films):
        return ["films: a list of films (image_id, file, grades, test_seeds)"]
    problems = []
    for i, film in enumerate(films):
        where = f"films[{i}]"
        image_id = film.get("image_id")
        if not isinstance(image_id, str) or not image_id:
            problems.append(f"{where}: image_id {_short(image_id)} must be text")
        elif hidden := hidden_characters(image_id):
            problems.append(
                f"{where}: image_id holds control characters ({', '.join(hidden)}); ids may not"
            )
        for key, column in FILM_GRADES:
            value, top = film.get(key), GRADE_RANGES[column][1]
            if value is not None and (not _whole(value) or parse_grade(value, top)[1]):
                problems.append(
                    f"{where}: {key} {_short(value)} must be a whole number 0 to {top} or empty"
                )
        tested = film.get("test_seeds")
        if not isinstance(tested, list) or any(s not in seeds for s in tested):
            problems.append(f"{where}: test_seeds {_short(tested)} must be among the seeds")
    return problems


#: What reading a damaged crop may raise (a truncated PNG's decoder adds the last three).
CROP_ERRORS: tuple[type[Exception], ...] = (
    *UNREADABLE_IMAGE_ERRORS,
    ValueError,
    SyntaxError,
    EOFError,
)


def crop_problem(source: str | IO[bytes], size: int) -> str:
    """What is wrong with a bundled film's crop ('' when nothing): it must be a grey PNG of
    ``size`` x ``size`` px that decodes. The header is read first; pixels are decoded only
    when it declares that size."""
    try:
        with Image.open(source) as image:
            if image.format != CROP_FORMAT or image.mode != CROP_MODE:
                return f"a {image.format} image in mode {image.mode}, not a grey PNG crop"
            if image.size != (size, size):
                w, h = image.size
                return (
                    f"a {w} x {h} px crop; the bundle's models see {size} x {size} px "
                    f"(image_size), so every crop has that size"
                )
            image.load()
    except Image.DecompressionBombError as exc:
        return f"too many pixels to decode ({exc})"
    except CROP_ERRORS as exc:
        return f"not a PNG image SoftGrade can read ({exc})"
    return ""


def detector_record_problems(record_json: str) -> list[str]:
    """What is wrong with a bundled trained detector's ``record.json`` (empty: nothing)."""
    try:
        record = DetectorRecord.from_json(record_json)
    except (ValueError, TypeError) as exc:
        return [f"its record.json is not a detector record ({exc})"]
    problems = []
    size = record.image_size
    if problem := detector_size_problem(size):
        problems.append(f"its record.json's {problem}")
    elif size * size > MAX_FILM_PIXELS:
        problems.append(
            f"its record.json's image size {size} px would scale every film to {size} x "
            f"{size} px, over the {MAX_FILM_PIXELS / 1e6:.0f} M px a film may have"
        )
    figures = record.held_out if isinstance(record.held_out, dict) else {}
    bad = sorted(k for k, v in figures.items() if not (_number(v) and v >= 0))
    if not isinstance(record.held_out, dict) or bad:
        problems.append(f"its record.json's held-out figures {', '.join(bad)} are not numbers")
    return problems


def _short(value: object, limit: int = 40) -> str:
    """A value as written, cut short (a hostile manifest may hold megabytes in one field)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def joined(problems: Iterable[str], limit: int = 5) -> str:
    """The first ``limit`` problems as one sentence, with how many more there are."""
    problems = list(problems)
    more = len(problems) - limit
    return "; ".join(problems[:limit]) + (f"; and {more} more" if more > 0 else "")
