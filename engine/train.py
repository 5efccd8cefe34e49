"""Training: ResNet18 on one task's split, in the shape of torchvision's reference script.

`train_one_epoch` and `evaluate` do one pass each; `Trainer.fit` ties them together with early
stopping on validation loss and restores the best weights. A `Trainer` is long-lived: a slot
process keeps one per (task, image size) and calls `fit` for many runs, resetting weights and
optimiser state in place, so the dataset stays on the device and a compiled model is reused
(a fresh process costs ~10 s to warm up and ~22 s to compile, as long as a whole run).

Two paths: the plain path (fp32, eager) and, on CUDA, the fast path (images kept on the GPU
as uint8, channels-last, bf16 autocast, fused Adam, ``torch.compile``, the stem of
`engine.stem`). ``TrainConfig.fast`` picks; None means fast on CUDA only.

Both paths train on every film every epoch, in the same batches (`epoch_batches`): full
batches, then the rest as one smaller tail batch. On CUDA the full batches replay a graph of the
compiled model and the tail, whose size is fixed per dataset and seed, a graph of its own,
captured from the uncompiled model (a capture costs well under a second; a compile of a
new shape would cost ~20 s). So "100 epochs, patience 40" means the same on every device.

On CUDA every method trains on the captured graphs, whatever its loss or head: a lane of a slot
process then never runs a model or a loss eagerly, which is not safe beside a sibling lane's
compile or capture (issue 37), and every method trains at the same speed. A method whose step
cannot be captured fails its run with `StepNotCapturable`, saying why.

The model and its checkpoint files are `engine.grade_model`'s, the CUDA graphs
`engine.train_graphs`'s; this module trains.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from engine import protocol
from engine.analysis.metrics import SELECTION_METRIC, compute_metrics
from engine.config import TrainConfig
from engine.datasets import TaskSplit
from engine.grade_model import (
    GREY_MEAN,
    GREY_STD,
    GradeNet,
    build_model,
    load_checkpoint,
    load_model,
    resolve_device,
    save_checkpoint,
)
from engine.methods import MethodParams, get_method, make_loss, target_matrix
from engine.methods.heads import get_head, predict_grades
from engine.stem import use_fast_stem
from engine.train_graphs import (
    GLOBAL_STATE_LOCK,
    GraphedSteps,
    StepLoss,
    StepNotCapturable,
    soft_target_cross_entropy,
)

# The model, its checkpoints and device live in `engine.grade_model`, the CUDA graphs in
# `engine.train_graphs`; their names stay importable from here, where callers found them.
__all__ = [
    "EVAL_BATCH",
    "GREY_MEAN",
    "GREY_STD",
    "INDUCTOR_OPTIONS",
    "EpochStats",
    "FastPathOptions",
    "FitResult",
    "GradeNet",
    "GraphedSteps",
    "PruneCheck",
    "RunCancelled",
    "StepNotCapturable",
    "Trainer",
    "build_model",
    "epoch_batches",
    "epoch_order",
    "evaluate",
    "fit",
    "load_checkpoint",
    "load_model",
    "resolve_device",
    "save_checkpoint",
    "soft_target_cross_entropy",
    "train_one_epoch",
]

log = logging.getLogger(__name__)

#: Seeds whose drawn initial weights a trainer keeps (runs go seed by seed, so the current
#: one and the one before; ~45 MB each for ResNet18).
DRAWN_SEEDS_KEPT = 2

EVAL_BATCH = 512
# Inductor settings for the default mode. max_autotune_pointwise benchmarks block sizes for the
# generated pointwise and reduction kernels (batch norm, ReLU): a training step 2.2 % faster on
# an H200 for a few seconds more compile. coordinate_descent_tuning was 3.9 % faster but added
# ~110 s of compile per slot process and slowed evaluation 5 % (bench/RESULTS.md).
INDUCTOR_OPTIONS: MappingProxyType[str, bool] = MappingProxyType({"max_autotune_pointwise": True})
# Compiled variants dynamo keeps per frame. Each trainer's model is a module instance of its
# own, which dynamo guards on, and a slot keeps one trainer per task and head (8 for every
# registered method), each compiled for training and evaluation: at the default of 8, dynamo
# silently ran the rest eagerly (the GPU check's mixed study logged "hit recompile_limit").
RECOMPILE_LIMIT = 64


class RunCancelled(Exception):
    """Training stopped at an epoch boundary because cancellation was requested."""


#: A pruned search's question after every epoch: given the epoch and the selection metric on
#: the validation films at the epoch kept so far, should this run stop (it has lost)?
PruneCheck = Callable[[int, float], bool]


@dataclass(frozen=True)
class FastPathOptions:
    """How a `Trainer` builds the fast path. The defaults are what ships and what the worker
    uses; `bench/train_throughput.py` and `bench/stem_probe.py` pass other values to measure
    what each part is worth (bench/RESULTS.md), which is the only reason these are settings.

    Attributes:
        compile_model: ``torch.compile`` the model; None compiles on CUDA only.
        compile_mode: torch.compile's mode. "default" takes ``inductor_options``; with CUDA
            graphs from `GraphedSteps`, torch.compile must not add its own ("reduce-overhead").
        inductor_options: inductor's settings for the default mode.
        cuda_graphs: replay whole training steps and evaluation forwards as CUDA graphs.
    """

    compile_model: bool | None = None
    compile_mode: str = "default"
    inductor_options: Mapping[str, bool] = field(default_factory=lambda: dict(INDUCTOR_OPTIONS))
    cuda_graphs: bool = True

    def compile_settings(self) -> dict[str, Any]:
        """torch.compile's keyword arguments: the mode, or the default mode's options."""
        if self.compile_mode == "default":
            return {"options": dict(self.inductor_options)}
        return {"mode": self.compile_mode}


@dataclass(frozen=True)
class EpochStats:
    """What `fit` reports after every epoch."""

    epoch: int
    train_loss: float
    val_loss: float
    val_amae: float
    duration_s: float
    best_epoch: int


@dataclass
class FitResult:
    """A finished run: best epoch, per-image probabilities (N, J) and the curves."""

    best_epoch: int
    epochs_run: int
    val_amae: float
    val_probs: np.ndarray
    test_probs: np.ndarray
    history: list[EpochStats]
    duration_s: float
    weights_init: str
    state_dict: dict[str, torch.Tensor] = field(repr=False, default_factory=dict)
    # Adam's own step count at the end of the run: how many optimiser steps were taken.
    optimizer_steps: int = 0
    # A pruned search stopped this run early because it had already lost (engine.pruning);
    # its predictions are those of the best epoch it reached.
    pruned: bool = False
    # The grades its method predicts (its head's rule: CORN's median, else the mode).
    val_pred: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    test_pred: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    # The first epoch whose training or validation loss was not finite (None: it never
    # diverged). Such a run stops there; it is stored as diverged and never selected.
    diverged_epoch: int | None = None


def epoch_batches(n: int, batch_size: int) -> list[tuple[int, int]]:
    """The ``(start, stop)`` slices of one epoch over ``n`` shuffled films, on every path.

    Every film is in exactly one batch: full batches of ``batch_size``, then the rest as one
    smaller tail batch. A tail of a single film joins the batch before it instead (BatchNorm
    cannot train on a batch of one), so the last batch then holds ``batch_size + 1``.
    """
    if n <= 0:
        return []
    bounds = [(start, min(start + batch_size, n)) for start in range(0, n, batch_size)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] == 1:
        bounds[-2:] = [(bounds[-2][0], n)]
    return bounds


def epoch_order(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One epoch's shuffled film order and left/right flips, drawn the same way on every path
    (a left knee mirrors a right one)."""
    order = torch.randperm(n, generator=generator)
    flips = torch.rand(n, generator=generator) < 0.5
    return order, flips


def train_one_epoch(
    model: nn.Module,
    criterion: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    batch_size: int,
    generator: torch.Generator,
    fast: bool,
) -> float:
    """One pass over every film of the shuffled training set; returns the mean training loss.

    Images are flipped left/right at random. Batches follow `epoch_batches`, as on the CUDA
    graph path, so both take the same optimiser steps over the same films.
    """
    model.train()
    order, flips = (t.to(x.device) for t in epoch_order(len(y), generator))
    total = torch.zeros((), device=x.device)
    for start, stop in epoch_batches(len(y), batch_size):
        idx = order[start:stop]
        xb = x[idx]
        xb = torch.where(flips[idx].view(-1, 1, 1, 1), xb.flip(-1), xb)
        if fast:
            xb = xb.contiguous(memory_format=torch.channels_last)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=fast):
            outputs = model(xb)
        # The loss in float32, as `evaluate` and the graphs compute theirs: a loss that mixes
        # its input with float tensors (dlordinal's WKLoss) fails on bf16 outputs. On the
        # plain path the outputs are float32 already and nothing changes.
        loss = criterion(outputs.float(), y[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach() * len(idx)
    return float(total) / max(len(y), 1)


@torch.no_grad()
def evaluate(
    model: nn.Module,
    criterion: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    fast: bool,
    probabilities: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[float, torch.Tensor]:
    """Mean loss and probabilities (N, J) over a whole split.

    ``probabilities`` turns the model's outputs into P(grade) (its head's rule; softmax of
    logits when None, the paper's methods).

    The fast path pads the last batch to ``EVAL_BATCH`` so a compiled model sees one shape
    (in eval mode batch norm uses running statistics, so padding changes no output).
    """
    model.eval()
    probs, total = [], torch.zeros((), device=x.device)
    for start in range(0, len(y), EVAL_BATCH):
        xb = x[start : start + EVAL_BATCH]
        n = len(xb)
        if fast:
            if n < EVAL_BATCH:
                xb = torch.cat([xb, xb.new_zeros((EVAL_BATCH - n, *xb.shape[1:]))])
            xb = xb.contiguous(memory_format=torch.channels_last)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=fast):
            logits = model(xb)[:n].float()
        total += criterion(logits, y[start : start + n]) * n
        probs.append(
            torch.softmax(logits, dim=1) if probabilities is None else probabilities(logits)
        )
    return float(total) / max(len(y), 1), torch.cat(probs)


class Trainer:
    """A model and its compiled step, reused across runs of one task and image size."""

    def __init__(
        self,
        *,
        num_classes: int,
        device: torch.device,
        fast: bool,
        weights_path: str | None = None,
        options: FastPathOptions | None = None,
        head: str = "softmax",
    ) -> None:
        options = options or FastPathOptions()
        self.device = device
        self.fast = fast
        self.head = head
        # Building draws initial weights from the process-wide RNG too: not while another
        # lane seeds and draws its run's weights.
        with GLOBAL_STATE_LOCK:
            self.model, self.weights_init = build_model(num_classes, weights_path, head)
        # A head's parameters without reset_parameters (CLM's thresholds) start each run
        # from their values at construction.
        head_layer = cast(nn.Module, self.model.backbone.fc)
        self._head_initial = copy.deepcopy(head_layer.state_dict())
        if fast:
            # conv1 as a GEMM and a Triton max-pool: ~19 % more images/s on an H200
            # (bench/stem_probe.py); same parameters and state dict as the plain model.
            use_fast_stem(self.model.backbone)
        self.model.to(device)
        if fast:
            self.model.to(memory_format=torch.channels_last)
        self.rule = get_head(head).rule  # how its runs read a grade off the probabilities
        self._criterion: nn.Module | None = None  # the last run's, for `score`
        # Pretrained weights are restored before each run; random init is re-drawn per seed.
        self._initial = copy.deepcopy(self.model.state_dict()) if weights_path else None
        # seed -> the weights drawn for it, on the device: a later run of that seed copies
        # them without the lock (see `reset`).
        self._drawn: OrderedDict[int, dict[str, torch.Tensor]] = OrderedDict()
        # Compiling fuses batch norm and activations (+45 % images/s on an H200, see
        # bench/RESULTS.md) for ~30 s once per trainer; worth it for a slot that runs many.
        compile_model = options.compile_model
        if compile_model is None:
            compile_model = fast and device.type == "cuda"
        if fast and device.type == "cuda":
            torch.backends.cudnn.benchmark = True
        if compile_model:
            _allow_recompiles(RECOMPILE_LIMIT)
        # dynamic=False: each batch shape (training, evaluation; per task) gets a graph of its
        # own. Left to guess, dynamo turns a second batch size into symbolic shapes, whose
        # backward then fails a stride check on 1x1 feature maps (32 px films) and is slower.
        # torch.compile of a module returns a module (OptimizedModule); its stubs say callable.
        self.step_model: nn.Module = (
            cast(nn.Module, torch.compile(self.model, dynamic=False, **options.compile_settings()))
            if compile_model
            else self.model
        )
        # On CUDA the fast path replays CUDA graphs of whole steps; elsewhere it only
        # switches precision, layout and stem (so CPU tests can compare it with the plain path).
        self.graphs = (
            GraphedSteps(self.step_model, num_classes, device, eager_model=self.model)
            if fast and options.cuda_graphs and device.type == "cuda"
            else None
        )

    def warm_up(self, config: TrainConfig) -> bool:
        """Compile and capture the graphs ``config``'s runs replay, before any run needs them.

        A slot calls it for every task and head of its job after its first run
        (`jobs.worker.slots`): a first compile holds `GLOBAL_STATE_LOCK` for ~30-60 s, and
        left to the study's first switch of task it stalls every lane at once (issue 30: a
        20-30 s idle GPU there). Returns False, doing nothing, where ``config``'s runs replay
        no graphs (CPU, the plain path).
        """
        if self.graphs is None:
            return False
        if get_method(config.method).head != self.head:
            raise ValueError(f"{config.method} does not train on this trainer's {self.head!r} head")
        self._set_step_loss(config)
        self.graphs.warm(config.batch_size, config.image_size)
        return True

    def reset(self, seed: int) -> None:
        """Re-initialise weights in place for a new run (no new model, no recompile).

        Seeding and drawing must not interleave with another lane's (same seed, same init),
        so a draw holds `GLOBAL_STATE_LOCK`, which a compile holds for up to a minute (dynamo
        saves and restores the global RNG). The weights drawn for the last
        `DRAWN_SEEDS_KEPT` seeds are kept, and a run of one of those seeds copies them
        instead: the same values, without waiting for another lane's compile (issue 30: the
        lanes of a process stalled ~20 s at their second run while one compiled the next
        task).
        """
        drawn = self._drawn.get(seed)
        if drawn is not None:
            self._drawn.move_to_end(seed)
            self.model.load_state_dict(drawn)
            return
        with GLOBAL_STATE_LOCK:
            self._draw_initial_weights(seed)
        self._drawn[seed] = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        while len(self._drawn) > DRAWN_SEEDS_KEPT:
            self._drawn.popitem(last=False)

    def _draw_initial_weights(self, seed: int) -> None:
        torch.manual_seed(seed)
        head = cast(nn.Module, self.model.backbone.fc)
        if self._initial is not None:
            self.model.load_state_dict(self._initial)
            _reset_modules(head)  # build_model's head: drawn per seed
            return
        head.load_state_dict(self._head_initial)
        for module in self.model.modules():
            reset = getattr(module, "reset_parameters", None)
            if callable(reset):
                reset()
            if isinstance(module, nn.BatchNorm2d):
                module.reset_running_stats()
        # torchvision's resnet init (kaiming for convs), as at construction
        for module in self.model.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def fit(
        self,
        config: TrainConfig,
        data: TaskSplit,
        *,
        on_epoch_end: Callable[[EpochStats], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        should_prune: PruneCheck | None = None,
    ) -> FitResult:
        """Train one configuration with early stopping; return the best epoch's predictions.

        Args:
            should_prune: A pruned search's check after every epoch (`PruneCheck`); when it
                says stop, the run ends there like an early stop, marked ``pruned``. None
                (the paper's protocol): never asked.

        Raises:
            RunCancelled: ``should_stop`` returned True at an epoch boundary.
        """
        started = time.perf_counter()
        criterion, optimizer = self._begin_run(config)
        self._criterion = criterion
        data = data.to(self.device)
        if self.graphs is not None:
            self.graphs.ready_tails(data.x_val, data.x_test)
        generator = torch.Generator().manual_seed(config.init_seed)  # batch order
        best = _Best()
        history: list[EpochStats] = []
        pruned = False
        diverged_epoch: int | None = None
        for epoch in range(1, config.max_epochs + 1):
            if should_stop is not None and should_stop():
                raise RunCancelled(f"cancelled before epoch {epoch}")
            t0 = time.perf_counter()
            train_loss = self._train_epoch(criterion, optimizer, data, config, generator)
            val_loss, val_probs = self._evaluate(criterion, data.x_val, data.y_val)
            val_amae = _amae(data.y_val, val_probs, config.num_classes, self.rule)
            rule = protocol.EARLY_STOPPING  # the declared rule, read where it is used
            watched = rule.to_minimise({"val_loss": val_loss, "val_amae": val_amae})
            # A diverged configuration (a NaN or infinite loss or probability, e.g. a high
            # learning rate) stops here: its weights are lost for good (Adam carries the
            # NaN on). The run keeps its best finite epoch, is stored as diverged and is never
            # selected over a run that stayed finite (the search goes on without it).
            finite = math.isfinite(watched) and math.isfinite(train_loss)
            finite = finite and bool(torch.isfinite(val_probs).all())
            if finite and (watched < best.loss or best.epoch == 0):
                best.update(epoch, watched, self.model)
            stats = EpochStats(
                epoch, train_loss, val_loss, val_amae, time.perf_counter() - t0, best.epoch
            )
            history.append(stats)
            if on_epoch_end is not None:
                on_epoch_end(stats)
            if not finite:
                diverged_epoch = epoch
                log.warning("run diverged at epoch %d (%s, lr %g)", epoch, config.method, config.lr)
                break
            finished = epoch - best.epoch >= config.patience or epoch == config.max_epochs
            # Asked every epoch (the pruner keeps each answer's value); a run that ends here by
            # its stopping rule has finished, whatever the pruner says.
            if should_prune is not None:
                kept_value = history[best.epoch - 1].val_amae
                if should_prune(epoch, kept_value) and not finished:
                    pruned = True
                    break
            if epoch - best.epoch >= config.patience:
                break
        if best.epoch:
            self.model.load_state_dict(best.state)
        _, val_probs = self._evaluate(criterion, data.x_val, data.y_val)
        _, test_probs = self._evaluate(criterion, data.x_test, data.y_test)
        val_probs, test_probs = _no_information(val_probs), _no_information(test_probs)
        return FitResult(
            best_epoch=best.epoch,
            epochs_run=len(history),
            val_amae=_amae(data.y_val, val_probs, config.num_classes, self.rule),
            val_probs=val_probs.float().cpu().numpy(),
            test_probs=test_probs.float().cpu().numpy(),
            history=history,
            duration_s=time.perf_counter() - started,
            weights_init=self.weights_init,
            state_dict={k: v.detach().cpu().clone() for k, v in best.state.items()},
            optimizer_steps=_adam_steps(optimizer),
            pruned=pruned,
            val_pred=predict_grades(val_probs, self.rule).cpu().numpy(),
            test_pred=predict_grades(test_probs, self.rule).cpu().numpy(),
            diverged_epoch=diverged_epoch,
        )

    def score(self, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
        """Probabilities (N, J) of the weights the last `fit` kept on other films (uint8
        (N, 1, S, S) and grades (N,) on this trainer's device), by the path `fit` scored its
        test films on: how the phantom referee (`engine.referee`) scores a selected model on
        a fresh test set.

        Raises:
            RuntimeError: No run was fitted yet.
        """
        if self._criterion is None:
            raise RuntimeError("score needs a fitted run: call fit first")
        _, probs = self._evaluate(self._criterion, x, y)
        return _no_information(probs).float().cpu().numpy()

    def _begin_run(self, config: TrainConfig) -> tuple[nn.Module, torch.optim.Optimizer]:
        """Fresh weights for ``config``'s run, its criterion and its optimiser
        (`bench/methods_throughput.py` times what follows per method)."""
        method = get_method(config.method)
        if method.head != self.head:
            raise ValueError(
                f"{config.method} needs the {method.head!r} head; this trainer has {self.head!r}"
            )
        self.reset(config.init_seed)
        if self.graphs is not None:
            return self._set_step_loss(config), self.graphs.optimizer
        criterion = make_loss(config.method, config.num_classes, config.params).to(self.device)
        optimizer = torch.optim.Adam(
            self.model.parameters(), lr=config.lr, fused=self.device.type == "cuda"
        )
        return criterion, optimizer

    def _set_step_loss(self, config: TrainConfig) -> nn.Module:
        """Point the graphs at ``config``'s loss, learning rate and targets (zeroing Adam's
        state); returns its criterion."""
        assert self.graphs is not None
        criterion = make_loss(config.method, config.num_classes, config.params).to(self.device)
        matrix = target_matrix(config.method, config.num_classes, config.params)
        if matrix is not None:
            # One loss for every target-distribution method: only the matrix differs.
            self.graphs.reset(
                config.lr, self.graphs.targets_loss(), torch.as_tensor(matrix, device=self.device)
            )
        else:
            self.graphs.reset(config.lr, _criterion_step(config.method, config.params, criterion))
        return criterion

    def _train_epoch(
        self,
        criterion: nn.Module,
        optimizer: torch.optim.Optimizer,
        data: TaskSplit,
        config: TrainConfig,
        generator: torch.Generator,
    ) -> float:
        if self.graphs is None:
            return train_one_epoch(
                self.step_model,
                criterion,
                optimizer,
                data.x_train,
                data.y_train,
                batch_size=config.batch_size,
                generator=generator,
                fast=self.fast,
            )
        x, y = data.x_train, data.y_train
        order, flips = (t.to(self.device) for t in epoch_order(len(y), generator))
        total = torch.zeros((), device=self.device)
        for start, stop in epoch_batches(len(y), config.batch_size):
            idx = order[start:stop]
            xb = torch.where(flips[idx].view(-1, 1, 1, 1), x[idx].flip(-1), x[idx])
            full = stop - start == config.batch_size
            total += self.graphs.train_step(xb, y[idx], compiled=full) * (stop - start)
        return float(total) / max(len(y), 1)

    def _evaluate(
        self, criterion: nn.Module, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[float, torch.Tensor]:
        probabilities = None if self.head == "softmax" else get_head(self.head).probabilities
        if self.graphs is None:
            return evaluate(
                self.step_model, criterion, x, y, fast=self.fast, probabilities=probabilities
            )
        outputs, loss = self.graphs.predict(x, y)
        probs = torch.softmax(outputs, dim=1) if probabilities is None else probabilities(outputs)
        return float(loss), probs


def _criterion_step(method: str, params: MethodParams, criterion: nn.Module) -> StepLoss:
    """A method's own criterion as a captured step's loss: one set of graphs per method and
    configuration of its loss (the learning rate aside: the graphs read it from a tensor)."""
    baked = tuple(sorted((k, v) for k, v in params.items() if k != "lr"))
    return StepLoss(key=(method, baked), fn=criterion, keep=criterion)


@dataclass
class _Best:
    """The best epoch so far by `engine.protocol.EARLY_STOPPING` (``loss``: its value to
    minimise), with a device copy of its weights."""

    epoch: int = 0
    loss: float = float("inf")
    state: dict[str, Any] = field(default_factory=dict)

    def update(self, epoch: int, loss: float, model: nn.Module) -> None:
        self.epoch, self.loss = epoch, loss
        self.state = {k: v.detach().clone() for k, v in model.state_dict().items()}


def _allow_recompiles(limit: int) -> None:
    """Raise dynamo's per-frame limit of compiled variants to at least ``limit``
    (process-wide, so never lowered)."""
    import torch._dynamo

    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):  # its name in newer, older torch
        if hasattr(config, name):
            setattr(config, name, max(int(getattr(config, name)), limit))


def _reset_modules(module: nn.Module) -> None:
    """Draw fresh parameters for every sub-module that can (a head's linear layers)."""
    for sub in module.modules():
        reset = getattr(sub, "reset_parameters", None)
        if callable(reset):
            reset()


def _adam_steps(optimizer: torch.optim.Optimizer) -> int:
    """Optimiser steps taken since Adam's state was last zeroed: its own step counter."""
    for state in optimizer.state.values():
        if "step" in state:
            return int(state["step"])
    return 0


def _no_information(probs: torch.Tensor) -> torch.Tensor:
    """Probabilities with every row a diverged model left non-finite set to uniform: such a
    model tells nothing about the film, and NaN must not reach the store or the metrics."""
    bad = ~torch.isfinite(probs).all(dim=1)
    if bool(bad.any()):
        n_bad, n = int(bad.sum()), len(probs)
        log.warning("%d of %d films got non-finite probabilities: set to uniform", n_bad, n)
        probs = probs.clone()
        probs[bad] = 1.0 / probs.shape[1]
    return probs


def _amae(y: torch.Tensor, probs: torch.Tensor, num_classes: int, rule: str) -> float:
    """The selection metric on these films, the grades read off by the head's ``rule``: what
    `EpochStats.val_amae` and the store keep."""
    predicted = predict_grades(probs, rule).cpu().numpy()
    return float(compute_metrics(y.cpu().numpy(), predicted, num_classes)[SELECTION_METRIC])


def fit(
    config: TrainConfig,
    data: TaskSplit,
    *,
    on_epoch_end: Callable[[EpochStats], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    should_prune: PruneCheck | None = None,
) -> FitResult:
    """Train one run in a fresh `Trainer` (tests and one-off use; slots reuse trainers)."""
    device = resolve_device(config.device)
    fast = device.type == "cuda" if config.fast is None else config.fast
    trainer = Trainer(
        num_classes=config.num_classes,
        device=device,
        fast=fast,
        weights_path=config.weights_path,
        head=get_method(config.method).head,
    )
    return trainer.fit(
        config, data, on_epoch_end=on_epoch_end, should_stop=should_stop, should_prune=should_prune
    )
