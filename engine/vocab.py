"""The domain's vocabulary: tasks and their grades, split fractions, run ids.

Everything else imports these names; nothing restates them. The module imports nothing
heavy, so pages, the store and the CLI can use it without loading torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

#: A knee's box on a film: (x0, y0, x1, y1) in film pixels, x1 and y1 exclusive. The
#: detectors, the phantom and the labels CSV all write boxes this way.
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Task:
    """One grading task: its name, its label columns and its grades."""

    name: str
    title: str
    column: str  # recorded grade in a dataset's labels ("kl")
    n_grades: int
    signs: tuple[str, ...]  # what each grade looks like on a film, grade 0 first

    @property
    def true_column(self) -> str:
        """The column of the true grade where the data knows it (the phantom does)."""
        return f"{self.column}_true"

    @property
    def top_grade(self) -> int:
        """The highest grade (4 for KL, 3 for CPPD)."""
        return self.n_grades - 1

    @property
    def grades(self) -> range:
        """Grades 0..top, in order."""
        return range(self.n_grades)


KL = Task(
    name="KL",
    title="Kellgren–Lawrence grade",
    column="kl",
    n_grades=5,
    signs=(
        "normal joint space, smooth margins",
        "doubtful narrowing, possible small osteophytic lipping",
        "definite small osteophytes, possible narrowing",
        "moderate osteophytes, definite narrowing, some sclerosis",
        "large osteophytes, marked narrowing, severe sclerosis, deformity",
    ),
)
CPPD = Task(
    name="CPPD",
    title="calcium pyrophosphate deposition",
    column="cppd",
    n_grades=4,
    signs=(
        "no deposits",
        "a few small or sparse calcifications",
        "evident calcifications over a larger area",
        "extensive, clearly visible calcifications",
    ),
)

#: Every task by name, in display order.
TASK_INFO: MappingProxyType[str, Task] = MappingProxyType({t.name: t for t in (KL, CPPD)})
TASKS: tuple[str, ...] = tuple(TASK_INFO)
#: Number of grades per task.
TASK_CLASSES: MappingProxyType[str, int] = MappingProxyType(
    {t.name: t.n_grades for t in TASK_INFO.values()}
)
#: Highest grade per task.
TOP_GRADE: MappingProxyType[str, int] = MappingProxyType(
    {t.name: t.top_grade for t in TASK_INFO.values()}
)
#: Recorded-grade column per task.
LABEL_COLUMNS: MappingProxyType[str, str] = MappingProxyType(
    {t.name: t.column for t in TASK_INFO.values()}
)
#: What each grade looks like on a film (the radiographic signs the scales are defined by).
GRADE_SIGNS: MappingProxyType[str, dict[int, str]] = MappingProxyType(
    {t.name: dict(enumerate(t.signs)) for t in TASK_INFO.values()}
)


def task_info(name: str) -> Task:
    """The task called ``name``; ValueError naming the allowed tasks otherwise."""
    if name not in TASK_INFO:
        raise ValueError(f"unknown task {name!r}; allowed: {', '.join(TASKS)}")
    return TASK_INFO[name]


# A method run in several of the studies shown at once is told apart as "beta · study name".
# (Methods themselves, their names, labels and order, live in `engine.methods`.)
LABEL_SEPARATOR = " · "


# Splits (ARCHITECTURE.md "Splits"): a 70/30 train/test holdout, then 30 % of train as
# validation, so 49 % of a task's films train.
TEST_FRACTION = 0.3
VAL_FRACTION = 0.3
TRAIN_FRACTION = (1 - TEST_FRACTION) * (1 - VAL_FRACTION)

# Which rule made a stored split (store table split_rules). Splits are stored per
# (dataset, seed) and kept, so a store can hold splits of both rules.
SPLIT_RULE = "patient-grouped, stratified on both knees' KL and CPPD grades"
#: Splits stored before rules were recorded: stratified on each patient's first knee.
LEGACY_SPLIT_RULE = "patient-grouped, stratified on the first knee's (KL, CPPD) grade"


@dataclass(frozen=True)
class RunKey:
    """What a run id says: the run's (task, method, seed) search and its configuration."""

    study_id: str
    task: str
    method: str
    seed: int
    config_index: int


def run_id(study_id: str, task: str, method: str, seed: int, config_index: int) -> str:
    """The id of one run: ``{study}-{task}-{method}-s{seed}-c{config}``.

    Derived from the run's place in the plan, so a resumed job recognises finished runs.
    """
    return f"{study_id}-{task}-{method}-s{seed}-c{config_index}"


def seed_ranges(seeds: list[int]) -> str:
    """Seeds as ``"seed 3"``, ``"seeds 0–12"`` or ``"seeds 0, 2, 5–7"`` (runs collapsed)."""
    ordered = sorted(int(s) for s in seeds)
    runs: list[list[int]] = []
    for seed in ordered:
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    parts = [str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs]
    return ("seed " if len(ordered) == 1 else "seeds ") + ", ".join(parts)


def parse_run_id(value: str) -> RunKey | None:
    """The parts of a run id built by `run_id`, or None for an id of another shape.

    Study ids may contain dashes; tasks and methods do not, so the id is read from the right.
    """
    parts = value.rsplit("-", 4)
    if len(parts) != 5:
        return None
    study, task, method, seed, config = parts
    numbered = seed[:1] == "s" and seed[1:].isdigit() and config[:1] == "c" and config[1:].isdigit()
    if not (study and task and method and numbered):
        return None
    return RunKey(study, task, method, int(seed[1:]), int(config[1:]))
