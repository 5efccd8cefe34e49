"""The referee's design: how many phantom datasets, seeds and methods, and how each is drawn.

Dataset ``k`` is the phantom of data seed ``data_seed + k`` (new patients, new films); the
fresh test set is the phantom of data seed ``data_seed + FRESH_SEED_OFFSET``, drawn once and
shared by every model. Within a dataset, seed ``s`` draws the split as a study's seed does,
and the training streams (initial weights, batch order, the search's sample of
configurations) are drawn afresh per dataset from ``(data seed of k, s)``
(:meth:`RefereeDesign.train_seed`): with the same streams on every dataset, as the referee
drew them before (:data:`INIT_DRAWS`), a seed effect common to all datasets made them
dependent replicates. The null pair's twin trains on the same split with its own streams, so
the pair's true difference is 0 in expectation (the referee estimates it all the same).

With ``inits`` ≥ 2 the seeds are a factorial design, as a study's ``seeds: {splits: S,
inits: I}`` (`engine.seeds.SeedDesign`): ``seeds`` split seeds ``0..S-1`` crossed with init
seeds ``0..I-1``, pairing key ``split · I + init``; every split is trained from every
initialisation, so the referee can score the intervals built on the variance components
(`engine.analysis.variance_components`). The twin then takes init ``i + TWIN_SEED_OFFSET``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.analysis.metrics import METRICS, PRIMARY_METRIC
from engine.config import TrainConfig, check_device, check_method, check_task
from engine.methods import MethodParams, get_method, sample_configs
from engine.phantom import PhantomSpec
from engine.protocol import EARLY_STOPPING
from engine.seeds import SeedDesign
from engine.study_settings import IMAGE_SIZES
from engine.vocab import KL

if TYPE_CHECKING:  # imported where used: it pulls scipy.stats, which the CLI's parser need not
    from engine.analysis.referee_rules import Comparison

#: The fresh test set's data seed is ``data_seed`` plus this; datasets use ``data_seed + k``
#: for ``k`` below it, so no dataset shares the fresh set's films.
FRESH_SEED_OFFSET = 100_000
#: The null pair's twin trains with the random streams of its method's plus this.
TWIN_SEED_OFFSET = 1_000_003
#: How the training streams are drawn, recorded on each result's card: a result without it
#: (the one shipped with SoftGrade included) reused seed ``s``'s streams on every dataset.
INIT_DRAWS = "per dataset"
#: Streams are kept below this so ``+ TWIN_SEED_OFFSET`` stays a valid 32-bit seed.
_STREAM_RANGE = 2**31 - TWIN_SEED_OFFSET
#: The twin of method ``m`` is reported as ``m`` followed by this.
TWIN_SUFFIX = "_twin"
#: The default phantom's share of jointly graded films (970 of 2,170): a CPPD dataset keeps
#: it; a KL dataset is all joint films, since only those carry a KL grade.
JOINT_SHARE = PhantomSpec().n_joint / PhantomSpec().n_images
#: ``budget`` 0: one fixed configuration per method (:func:`fixed_config`), no search.
FIXED = 0
#: Fewest films a dataset may have: a split must leave every grade's patients somewhere.
MIN_FILMS = 40


def fixed_config(method: str) -> MethodParams:
    """A method's fixed configuration: each hyper-parameter at the middle of its search grid
    (the lower middle for a grid of even length: learning rate 1e-3, η 0.8)."""
    spec = get_method(method)
    return MethodParams(
        **{h.name: h.values[(len(h.values) - 1) // 2] for h in spec.hyperparameters}
    )


@dataclass(frozen=True)
class RefereeDesign:
    """What the referee draws and trains.

    Attributes:
        methods: the methods compared (every pair of them).
        null_method: the method trained twice, under its name and its twin's.
        task: the task trained.
        datasets: ``K``, independent phantom datasets (at most this many: see ``max_minutes``).
        first_dataset: the first dataset this process trains (0: all of them); datasets
            ``first_dataset .. K-1`` are trained, so several processes or machines can each
            train a part of one design (same data seed, same fresh test set) and
            ``calibrate-inference --combine`` joins the parts as one result.
        seeds: ``S`` seeds per dataset; with ``inits`` ≥ 2, ``S`` split seeds.
        inits: ``I``, init seeds each split is trained from; 1 (the default): independent
            seeds, each drawing its split and its training streams, as before; ≥ 2: a
            factorial design of ``S × I`` seeds per dataset (:meth:`cells`).
        n_images: films per dataset that carry the task's grade.
        fresh_test: films of the fresh test set that carry the task's grade.
        epochs: most epochs per run (early stopping on validation loss, patience
            ``min(40, epochs)``).
        image_size: side of the knee crops in pixels.
        batch_size: training batch.
        budget: configurations searched per method and seed, selected on validation by the
            study's rule; :data:`FIXED` (0): one fixed configuration per method.
        device: 'cpu', 'cuda' or 'cuda:N'.
        data_seed: data seed of the first dataset.
        bootstrap: replicates of the film-sampling bootstrap per dataset (0: none).
        metric: the metric compared (`engine.analysis.metrics.METRICS`).
        max_minutes: start no new dataset once the next would end past this many minutes
            (None: no limit); the results say how many datasets were done.
    """

    methods: tuple[str, ...]
    null_method: str
    task: str
    datasets: int = 3
    first_dataset: int = 0
    seeds: int = 3
    inits: int = 1
    n_images: int = 80
    fresh_test: int = 120
    epochs: int = 2
    image_size: int = 32
    batch_size: int = 32
    budget: int = FIXED
    device: str = "cpu"
    data_seed: int = 1000
    bootstrap: int = 200
    metric: str = PRIMARY_METRIC
    max_minutes: float | None = None

    def __post_init__(self) -> None:
        if len(self.methods) < 1 or len(set(self.methods)) != len(self.methods):
            raise ValueError("methods: name one or more methods, each once")
        for method in (*self.methods, self.null_method):
            check_method(method)
        if self.null_method not in self.methods:
            raise ValueError(
                f"null method: {self.null_method!r} must be one of the methods compared "
                f"({', '.join(self.methods)})"
            )
        check_task(self.task)
        _at_least("datasets", self.datasets, 2)
        _at_least("first_dataset", self.first_dataset, 0)
        if self.first_dataset >= self.datasets:
            raise ValueError(
                f"first_dataset: {self.first_dataset} must be below datasets ({self.datasets})"
            )
        _at_least("seeds", self.seeds, 2)
        _at_least("inits", self.inits, 1)
        _at_least("n_images", self.n_images, MIN_FILMS)
        _at_least("fresh_test", self.fresh_test, MIN_FILMS)
        _at_least("epochs", self.epochs, 1)
        _at_least("batch_size", self.batch_size, 2)
        _at_least("budget", self.budget, FIXED)
        _at_least("bootstrap", self.bootstrap, 0)
        _at_least("data_seed", self.data_seed, 0)
        if self.datasets >= FRESH_SEED_OFFSET:
            raise ValueError(f"datasets: {self.datasets} must be below {FRESH_SEED_OFFSET}")
        low, high = IMAGE_SIZES
        if not low <= self.image_size <= high:
            raise ValueError(f"image_size: {self.image_size} must be from {low} to {high} px")
        if self.metric not in METRICS:
            raise ValueError(f"metric: {self.metric!r} is not one of {', '.join(METRICS)}")
        check_device(self.device)
        if self.max_minutes is not None and not self.max_minutes > 0:
            raise ValueError(f"max_minutes: {self.max_minutes} must be > 0")

    @property
    def dataset_range(self) -> range:
        """The datasets this process trains: ``first_dataset .. datasets - 1``."""
        return range(self.first_dataset, self.datasets)

    @property
    def twin(self) -> str:
        """The null method's second name."""
        return f"{self.null_method}{TWIN_SUFFIX}"

    @property
    def trained(self) -> tuple[str, ...]:
        """Every name trained on each seed: the methods, then the twin."""
        return (*self.methods, self.twin)

    @property
    def comparisons(self) -> tuple[Comparison, ...]:
        """Every pair of the methods (``a − b`` in the order given), then the null pair."""
        from engine.analysis.referee_rules import Comparison

        real = [Comparison(a, b) for a, b in itertools.combinations(self.methods, 2)]
        return (*real, Comparison(self.null_method, self.twin, null=True))

    @property
    def patience(self) -> int:
        """Early stopping's patience: the protocol's, at most the epochs."""
        return min(EARLY_STOPPING.patience, self.epochs)

    def dataset_spec(self, k: int) -> PhantomSpec:
        """Dataset ``k``'s phantom."""
        return self._spec(self.n_images, self.data_seed + k)

    def fresh_spec(self) -> PhantomSpec:
        """The fresh test set's phantom."""
        return self._spec(self.fresh_test, self.data_seed + FRESH_SEED_OFFSET)

    def _spec(self, graded: int, seed: int) -> PhantomSpec:
        """A phantom with ``graded`` films carrying the task's grade: all joint for a task only
        joint films carry (KL), else the default phantom's joint share."""
        if self.task == KL.name:  # the phantom grades KL on its jointly graded films only
            return PhantomSpec(n_images=graded, n_joint=graded, seed=seed)
        return PhantomSpec(n_images=graded, n_joint=int(round(graded * JOINT_SHARE)), seed=seed)

    @property
    def factorial(self) -> bool:
        """Whether the seeds cross split seeds with init seeds (``inits`` ≥ 2)."""
        return self.inits > 1

    @property
    def seed_design(self) -> SeedDesign | None:
        """The factorial design, as a study's seeds hold it; None for independent seeds."""
        return SeedDesign(splits=self.seeds, inits=self.inits) if self.factorial else None

    @property
    def n_cells(self) -> int:
        """Seeds (pairing keys) per dataset and method: ``S``, or ``S × I``."""
        return self.seeds * self.inits

    def cells(self) -> list[tuple[int, list[tuple[int, int]]]]:
        """Per split: ``(split seed, [(pairing seed, init seed), ...])``, splits in order.

        Independent seeds: seed ``s`` is its own split and init (``[(s, [(s, s)])...]``).
        Factorial: split ``s`` trained from inits ``0..I-1``, pairing seed ``s · I + i``
        (`engine.seeds.SeedDesign`).
        """
        design = self.seed_design
        if design is None:
            return [(s, [(s, s)]) for s in range(self.seeds)]
        return [
            (s, [(design.seed_of(s, i), i) for i in range(self.inits)]) for s in range(self.seeds)
        ]

    def describe_seeds(self) -> str:
        """The seeds in words: "6 seeds" or "3 splits × 2 inits (6 seeds)"."""
        if not self.factorial:
            return f"{self.seeds} seeds"
        return f"{self.seeds} splits × {self.inits} inits ({self.n_cells} seeds)"

    def configs(self, method: str, init_seed: int, dataset: int = 0) -> list[MethodParams]:
        """The configurations a method's search tries on one dataset, drawn from the run's
        streams (:meth:`train_seed`) as a study draws them from its seed
        (`engine.study.plan_runs`), or its fixed configuration. The twin draws its own, so
        the null pair carries the search's selection variance too."""
        base = self.null_method if method == self.twin else method
        if self.budget == FIXED:
            return [fixed_config(base)]
        return sample_configs(base, self.budget, self.train_seed(method, init_seed, dataset))

    def train_config(
        self,
        method: str,
        seed: int,
        params: MethodParams,
        *,
        split_seed: int | None = None,
        dataset: int = 0,
    ) -> TrainConfig:
        """One run's configuration; the twin takes its method's with other random streams.

        Args:
            method: the name trained (the twin's own).
            seed: the init seed: with ``dataset`` it draws the initial weights and batch
                order (:meth:`train_seed`).
            params: the configuration.
            split_seed: the split's seed, recorded in the config (default ``seed``:
                independent seeds). The split itself is drawn by the referee's loop.
            dataset: ``k``, the dataset trained on.
        """
        base = self.null_method if method == self.twin else method
        hparams = {k: float(v) for k, v in params.as_dict().items() if k != "lr"}
        streams = self.train_seed(method, seed, dataset)
        return TrainConfig(
            task=self.task,
            method=base,
            lr=float(params.lr),
            hparams=hparams,
            seed=streams,
            split_seed=seed if split_seed is None else split_seed,
            init_seed=streams,
            max_epochs=self.epochs,
            patience=self.patience,
            batch_size=self.batch_size,
            image_size=self.image_size,
            device=self.device,
        )

    def train_seed(self, method: str, init_seed: int, dataset: int = 0) -> int:
        """The seed of a run's random streams (initial weights, batch order, the search's
        sample): drawn from ``(data seed of the dataset, init seed)`` by NumPy's
        ``SeedSequence``, so each dataset's initialisations are new draws and the datasets
        independent replicates; the twin's is the same plus :data:`TWIN_SEED_OFFSET`."""
        state = np.random.SeedSequence([self.dataset_spec(dataset).seed, init_seed])
        streams = int(state.generate_state(1, dtype=np.uint32)[0]) % _STREAM_RANGE
        return streams + TWIN_SEED_OFFSET if method == self.twin else streams

    def selection(self) -> str:
        """How each method's model was chosen, in one phrase for the tables."""
        if self.budget == FIXED:
            return "one fixed configuration per method (each hyper-parameter mid-grid)"
        return (
            f"the study's rule: {self.budget} sampled configurations per method and seed, "
            "the best on validation selected"
        )

    def runs(self) -> int:
        """Training runs the whole design takes."""
        per_seed = sum(len(self.configs(m, 0)) for m in self.trained)
        return len(self.dataset_range) * self.n_cells * per_seed


def _at_least(name: str, value: object, least: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValueError(f"{name}: {value!r} must be a whole number >= {least}")
