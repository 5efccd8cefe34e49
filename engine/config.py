"""Configuration objects: one training run (`TrainConfig`) and one study (`StudySpec`).

Both are frozen dataclasses that validate themselves and serialise with ``asdict`` into the
store, like nanoGPT's ``GPTConfig``. A study file (YAML) is parsed by `StudySpec.from_dict`,
which names the offending field and the allowed values in every error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from engine.methods import (
    Method,
    MethodParams,
    UnknownMethodError,
    get_method,
    grid_size,
    method_names,
)
from engine.protocol import EARLY_STOPPING
from engine.pruning import PrunerError, SearchSpec, with_pruner
from engine.seeds import SEEDS_ALLOWED, SeedDesign, SeedDesignError, split_and_init
from engine.study_settings import BUDGET, MAX_BUDGET, SEED_COUNT, training_problems
from engine.vocab import TASK_CLASSES, TASKS

DATASET_KINDS: tuple[str, ...] = ("phantom", "folder")
#: `TrainConfig.split_seed` / ``init_seed`` left out: the run's ``seed`` draws it too.
SAME_AS_SEED = -1
#: ``methods: all`` in a study file: every method this checkout registers, in registry order
#: (a preset stays a survey of every method as methods are added).
ALL_METHODS = "all"


class SpecError(ValueError):
    """A study or run setting is invalid; the message names the field and allowed values."""


def check_task(task: str) -> None:
    """Raise SpecError naming the allowed tasks if ``task`` is unknown."""
    if task not in TASK_CLASSES:
        raise SpecError(f"tasks: unknown task {task!r}; allowed: {', '.join(TASKS)}")


def check_device(device: str) -> None:
    """Accept 'auto', 'cpu', 'cuda' or 'cuda:N'."""
    ok = device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit())
    if not ok:
        raise SpecError(f"device: {device!r} is not allowed; use auto, cpu, cuda or cuda:N")


@dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs; saved with the run and its checkpoint.

    ``hparams`` holds the method's own hyper-parameters besides the learning rate (``eta``,
    ``alpha2``, ...: whatever its `engine.methods.Method` declares). In JSON they sit beside
    the other fields (``{"lr": 0.001, "eta": 0.8, ...}``), as stores have always held them.

    ``seed`` is the run's pairing key; ``split_seed`` draws its split and ``init_seed`` its
    initial weights and batch order (`engine.seeds`). Left out (`SAME_AS_SEED`) they read
    as ``seed``, so a config stored or checkpointed before they existed means what it meant
    then.
    """

    task: str
    method: str
    lr: float
    hparams: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    split_seed: int = -1  # SAME_AS_SEED
    init_seed: int = -1  # SAME_AS_SEED
    max_epochs: int = EARLY_STOPPING.max_epochs
    patience: int = EARLY_STOPPING.patience
    batch_size: int = 128
    image_size: int = 224
    device: str = "cpu"
    weights_path: str | None = None
    fast: bool | None = None  # None: the fast path on CUDA, the plain path on CPU

    def __post_init__(self) -> None:
        check_task(self.task)
        method = check_method(self.method)
        for name in ("split_seed", "init_seed"):
            if getattr(self, name) == SAME_AS_SEED:
                object.__setattr__(self, name, self.seed)  # frozen: filled once, here
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SpecError(f"{name}: {value!r} must be a whole number >= 0")
        unknown = sorted(set(self.hparams) - set(method.parameter_names[1:]))
        if unknown:
            raise SpecError(
                f"{unknown[0]}: not a hyper-parameter of {self.method}; it has "
                f"{', '.join(method.parameter_names)}"
            )
        for problem in training_problems(vars(self)):  # the numbers a run has
            raise SpecError(problem)
        if not self.lr > 0:
            raise SpecError(f"lr: {self.lr=} must be > 0")
        eta = self.hparams.get("eta")
        if eta is not None and not 0.0 <= eta <= 1.0:
            raise SpecError(f"eta: {eta=} must be in [0, 1]")
        check_device(self.device)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainConfig:
        """Read `to_dict`'s form back, also a store's or checkpoint's from before methods had
        a registry (``eta``, ``alpha2``, ``p`` beside the other fields, None where unused)."""
        known = {f.name for f in fields(cls)} - {"hparams"}
        kwargs = {k: v for k, v in values.items() if k in known and v is not None}
        extra = {k: float(v) for k, v in values.items() if k not in known and v is not None}
        extra.update(values.get("hparams") or {})
        return cls(**kwargs, hparams=extra)

    @property
    def num_classes(self) -> int:
        """Number of grades of the task: 5 for KL, 4 for CPPD."""
        return TASK_CLASSES[self.task]

    @property
    def params(self) -> MethodParams:
        """The method's hyper-parameters, learning rate included."""
        return MethodParams(lr=self.lr, **self.hparams)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form, stored in ``runs.config``: hyper-parameters flat."""
        out = asdict(self)
        out.pop("hparams")
        out.update(dict(self.hparams))
        return out


def check_method(name: str) -> Method:
    """The registered method called ``name``; SpecError listing the methods otherwise."""
    try:
        return get_method(name)
    except UnknownMethodError as exc:
        raise SpecError(f"methods: {exc}; 'methods: all' names every one") from None


@dataclass(frozen=True)
class DatasetSpec:
    """Which images a study uses.

    ``phantom``: the embedded synthetic knee phantom (``n_images``, ``n_joint``, ``seed``,
    ``annotation_noise``, ``difficulty``). ``folder``: an imported folder of DICOM, PNG, JPEG
    or TIFF films with a labels CSV (``path``, ``labels_csv``).
    """

    kind: str = "phantom"
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in DATASET_KINDS:
            raise SpecError(
                f"dataset.kind: unknown kind {self.kind!r}; allowed: {', '.join(DATASET_KINDS)}"
            )
        if self.kind == "folder":
            if "path" not in self.params:
                raise SpecError("dataset.path: a folder dataset needs 'path' (the image folder)")
            if not Path(str(self.params["path"])).expanduser().is_dir():
                raise SpecError(f"dataset.path: {self.params['path']} is not a folder here")

    @classmethod
    def from_value(cls, value: Any) -> DatasetSpec:
        """Parse ``dataset: phantom`` or ``dataset: {kind: phantom, n_images: 200}``."""
        if value is None:
            raise SpecError(
                "dataset: missing; name one, e.g. 'dataset: phantom' or "
                "'dataset: {kind: folder, path: ..., labels_csv: ...}'"
            )
        if isinstance(value, str):
            return cls(kind=value)
        if not isinstance(value, dict):
            raise SpecError(f"dataset: expected a name or a mapping, got {type(value).__name__}")
        params = dict(value)
        kind = params.pop("kind", "phantom")
        return cls(kind=str(kind), params=params)

    @property
    def key(self) -> str:
        """Stable identity: the same spec always maps to the same dataset in the store."""
        items = ",".join(f"{k}={self.params[k]}" for k in sorted(self.params))
        return f"{self.kind}({items})"


@dataclass(frozen=True)
class StudySpec:
    """A study: every (task, method, seed) with a randomised search of ``budget`` configs.

    ``seeds`` are the pairing keys; ``seed_design`` is None for independent seeds (each
    seed draws the split and the initialisation) or the factorial design whose keys they are
    (`engine.seeds.SeedDesign`; ``seeds: {splits: S, inits: I}`` in a study file).
    """

    name: str
    dataset: DatasetSpec
    tasks: tuple[str, ...]
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    budget: int = MAX_BUDGET
    max_epochs: int = EARLY_STOPPING.max_epochs
    patience: int = EARLY_STOPPING.patience
    image_size: int = 224
    batch_size: int = 128
    device: str = "auto"
    weights_path: str | None = None
    # How each (task, method, seed) is searched: fully (the paper) or pruned (engine.pruning).
    search: SearchSpec = field(default_factory=SearchSpec)
    seed_design: SeedDesign | None = None

    def __post_init__(self) -> None:
        _check_nonempty("tasks", self.tasks, TASKS)
        for task in self.tasks:
            check_task(task)
        _check_nonempty("methods", self.methods, method_names())
        for method in self.methods:
            check_method(method)
        if len(set(self.tasks)) != len(self.tasks) or len(set(self.methods)) != len(self.methods):
            raise SpecError("tasks/methods: each may appear only once")
        if not self.seeds:
            raise SpecError("seeds: at least one seed is needed (a count like 20 or a list)")
        if any(s < 0 for s in self.seeds) or len(set(self.seeds)) != len(self.seeds):
            raise SpecError(
                f"seeds: {list(self.seeds)} must be distinct non-negative integers; seeds "
                f"takes {SEEDS_ALLOWED}"
            )
        # A design's keys, or some of them (a bundle of a study's complete seeds).
        if self.seed_design is not None and not set(self.seeds) <= set(
            self.seed_design.pairing_seeds()
        ):
            raise SpecError(
                f"seeds: {list(self.seeds)} are not the pairing keys of "
                f"{self.seed_design.describe()}; write seeds: {self.seed_design.to_dict()}"
            )
        # The budget's limit is also the largest grid among the chosen methods.
        largest = max(grid_size(m) for m in self.methods)
        budget = replace(BUDGET, high=min(MAX_BUDGET, largest))
        if problem := budget.problem(self.budget):
            raise SpecError(
                f"{problem} (the paper samples at most {MAX_BUDGET} configurations; the "
                f"largest grid among {', '.join(self.methods)} has {largest})"
            )
        # Each number against its record (`engine.study_settings`), the first problem named.
        for problem in training_problems(vars(self)):
            raise SpecError(problem)
        check_device(self.device)
        if not self.name.strip():
            raise SpecError("name: must not be empty")
        if self.weights_path and not Path(self.weights_path).expanduser().is_file():
            raise SpecError(
                f"weights_path: no file at {self.weights_path}; give a local torchvision "
                "resnet18 state dict, or leave it out to start from random weights"
            )

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StudySpec:
        """Parse a study file's mapping; unknown keys and wrong types are refused."""
        if not isinstance(raw, dict):
            raise SpecError("study file: expected a mapping of settings at the top level")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise SpecError(f"{unknown[0]}: unknown setting; allowed: {', '.join(sorted(known))}")
        for required in ("tasks", "methods", "seeds"):
            if raw.get(required) in (None, [], ""):
                raise SpecError(f"{required}: missing; it is required")
        values = dict(raw)
        values["dataset"] = DatasetSpec.from_value(raw.get("dataset"))
        values["name"] = str(raw.get("name", "study"))
        values["tasks"] = tuple(str(t) for t in _as_list("tasks", raw["tasks"]))
        values["methods"] = _parse_methods(raw["methods"])
        values["seeds"], values["seed_design"] = _parse_seeds(raw["seeds"], raw.get("seed_design"))
        for key in ("budget", "max_epochs", "patience", "image_size", "batch_size"):
            if key in raw:
                values[key] = _as_int(key, raw[key])
        if "device" in raw:
            values["device"] = str(raw["device"])
        if "search" in raw:
            try:
                values["search"] = SearchSpec.from_value(raw["search"])
            except PrunerError as exc:
                raise SpecError(str(exc)) from None
        return cls(**values)

    @classmethod
    def from_file(cls, path: Path, *, seeds: Any = None, pruner: str | None = None) -> StudySpec:
        """Read and validate a study file (YAML); SpecError names the field at fault.

        The CLI's ``run``/``submit`` and the Launch page's presets both read studies here.

        Args:
            path: the study file.
            seeds: replaces the file's ``seeds:`` when given (the CLI's ``--seeds``), in
                any form ``seeds:`` takes.
            pruner: replaces the pruner of the file's ``search:`` when given (the CLI's
                ``--pruner``, a key of `engine.pruning.PRUNERS`); its other search settings
                are kept.
        """
        if not path.is_file():
            raise SpecError(f"study file {path} does not exist")
        try:
            raw: Any = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise SpecError(f"study file {path} is not valid YAML: {exc}") from exc
        if seeds is not None and isinstance(raw, dict):
            raw = {k: v for k, v in raw.items() if k != "seed_design"} | {"seeds": seeds}
        if pruner is not None and isinstance(raw, dict):
            raw = raw | {"search": with_pruner(raw.get("search"), pruner)}
        return cls.from_dict(raw)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form, stored in ``studies.spec`` and job params."""
        out = asdict(self)
        out["dataset"] = {"kind": self.dataset.kind, **self.dataset.params}
        out["tasks"], out["methods"], out["seeds"] = (
            list(self.tasks),
            list(self.methods),
            list(self.seeds),
        )
        # The full search (the default) is written as before pruning existed, so a study of
        # the paper's protocol has the same spec, and request id, as ever.
        out.pop("search")
        if self.search.pruned:
            out["search"] = self.search.to_dict()
        # Independent seeds write no design key, so their stored specs read as before.
        if self.seed_design is None:
            out.pop("seed_design")
        else:
            out["seed_design"] = self.seed_design.to_dict()
        return out

    def split_and_init(self, seed: int) -> tuple[int, int]:
        """The (split seed, init seed) of pairing key ``seed`` (`engine.seeds`)."""
        return split_and_init(seed, self.seed_design)

    @property
    def split_seeds(self) -> tuple[int, ...]:
        """The distinct split seeds the study's runs train on, ascending."""
        return tuple(sorted({self.split_and_init(seed)[0] for seed in self.seeds}))

    def train_config(
        self, task: str, method: str, seed: int, params: MethodParams, device: str
    ) -> TrainConfig:
        """The run configuration of one search point of this study."""
        split_seed, init_seed = self.split_and_init(seed)
        return TrainConfig(
            task=task,
            method=method,
            seed=seed,
            split_seed=split_seed,
            init_seed=init_seed,
            device=device,
            max_epochs=self.max_epochs,
            patience=self.patience,
            batch_size=self.batch_size,
            image_size=self.image_size,
            weights_path=self.weights_path,
            lr=params.lr,
            hparams={k: v for k, v in params.items() if k != "lr"},
        )


def _parse_methods(value: Any) -> tuple[str, ...]:
    """A list of method names, or ``all`` for every registered method (registry order)."""
    if isinstance(value, str) and value.strip().lower() == ALL_METHODS:
        return method_names()
    names = tuple(str(m) for m in _as_list("methods", value))
    if ALL_METHODS in (n.lower() for n in names):
        raise SpecError("methods: 'all' stands alone ('methods: all'); otherwise list method names")
    return names


def _as_list(name: str, value: Any) -> list[Any]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        return list(value)
    raise SpecError(f"{name}: expected a list, got {value!r}")


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise SpecError(f"{name}: expected a whole number, got {value!r}")
    return int(value)


def _parse_seeds(
    value: Any, stored_design: Any = None
) -> tuple[tuple[int, ...], SeedDesign | None]:
    """The pairing keys and the factorial design (None for independent seeds).

    ``seeds: 20`` means seeds 0..19; a list names them; ``seeds: {splits: 10, inits: 2}`` is
    a factorial design (`engine.seeds.SeedDesign`). A stored spec (``StudySpec.to_dict``)
    writes a design's keys as a list beside ``seed_design: {splits: .., inits: ..}``.
    """
    design: SeedDesign | None = None
    try:
        if isinstance(value, Mapping):
            design = SeedDesign.from_mapping(value)
            return design.pairing_seeds(), design
        if stored_design is not None:
            if not isinstance(stored_design, Mapping):
                raise SpecError(
                    f"seed_design: expected {{splits: S, inits: I}}, got {stored_design!r}"
                )
            design = SeedDesign.from_mapping(stored_design)
    except SeedDesignError as exc:
        raise SpecError(str(exc)) from None
    if isinstance(value, int) and not isinstance(value, bool):
        if problem := SEED_COUNT.problem(value):
            raise SpecError(f"{problem}; seeds takes {SEEDS_ALLOWED}")
        return tuple(range(value)), design
    if isinstance(value, float | bool) or value is None:
        raise SpecError(f"seeds: {value!r} is not allowed; seeds takes {SEEDS_ALLOWED}")
    try:
        return tuple(_as_int("seeds", v) for v in _as_list("seeds", value)), design
    except SpecError:
        raise SpecError(f"seeds: {value!r} is not allowed; seeds takes {SEEDS_ALLOWED}") from None


def _check_nonempty(name: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    if not values:
        raise SpecError(f"{name}: at least one is needed; allowed: {', '.join(allowed)}")
