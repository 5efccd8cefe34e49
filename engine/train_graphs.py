"""The fast path's CUDA graphs: a whole training step (forward, the method's loss, backward,
fused Adam) and the evaluation forward with its loss, each captured once and replayed for
every batch of every run (`GraphedSteps`), and the lock that guards process-wide state while a
`Trainer` compiles, captures or draws initial weights.

Every registered method trains this way on a GPU. Its loss is a `StepLoss`: the
target-distribution methods share one (cross-entropy against a (J, J) target matrix that each
run rewrites in place), every other method's criterion is captured as it is, one set of graphs
per configuration of its loss. So a lane never runs a model or a loss eagerly: it only replays
graphs, and only captures (under `GLOBAL_STATE_LOCK`) what it has not captured yet.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import torch
from torch import nn

# The compiled evaluation graph's batch; a split's remainder gets a graph of its own size,
# so a 651-image split costs 651 forwards (validation runs every epoch).
GRAPH_EVAL_BATCH = 128
# Graphs of odd sizes (a training set's tail batch, a split's evaluation remainder) kept per
# trainer. Their sizes change with every seed's split, so a slot that runs 20 seeds keeps only
# the latest few: the current seed's tail, validation and test remainders, and the previous
# seed's, for the losses in use.
ODD_GRAPHS_KEPT = 12
# Full-batch graphs kept per trainer: one training and one evaluation graph per loss in use
# (every target-distribution method shares one loss; CDW-CE has one per alpha).
FULL_GRAPHS_KEPT = 24

# Several trainers may share a process, one per thread and CUDA stream (a slot's lanes).
# What touches process-wide state takes this lock: torch.compile (dynamo and AOTAutograd trace
# through torch.fx, which patches nn.Module.__call__ process-wide, so an eager module call in
# another thread meanwhile fails), graph capture (its warm-up runs the model eagerly), and
# seeding and drawing initial weights (the process-wide RNG, whose CUDA generator also belongs
# to any graph being captured: drawing from it meanwhile is an error).
GLOBAL_STATE_LOCK = threading.RLock()

#: The key of the loss every target-distribution method trains with.
TARGETS_KEY: tuple[str] = ("soft targets",)


def soft_target_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy against probability targets (N, J): what ``nn.CrossEntropyLoss``
    computes when dlordinal's ``CustomTargetsLoss`` hands it soft targets."""
    return -(targets * torch.log_softmax(logits.float(), dim=1)).sum(dim=1).mean()


class StepNotCapturable(RuntimeError):
    """A method's step could not be captured as a CUDA graph (a loss or head that needs the
    host mid-step, such as boolean indexing or ``.item()``): on a GPU every method trains on
    captured graphs, so its run fails with this message instead of training eagerly beside
    lanes that compile and capture."""


@dataclass(frozen=True)
class StepLoss:
    """What a captured step minimises.

    Attributes:
        key: Graphs captured with one key serve every run with that key, so it names
            everything the loss bakes into a graph (a method and its loss's parameters).
        fn: ``(outputs as float32, grades) -> mean loss``: pure tensor work on the device,
            no host synchronisation (a graph cannot capture one).
        keep: What ``fn`` reads (a criterion and its buffers): kept alive with the graphs,
            whose kernels hold its memory's addresses.
    """

    key: Hashable
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    keep: object = None


@dataclass
class _Graph:
    """A captured CUDA graph, the static tensors it reads and writes, and its loss."""

    graph: torch.cuda.CUDAGraph
    static: dict[str, torch.Tensor]
    loss: StepLoss = field(repr=False)


class GraphedSteps:
    """The whole training step (forward, loss, backward, fused Adam) and the evaluation
    forward with its loss, each captured once as a CUDA graph and replayed for every batch of
    every run.

    Everything a run changes lives in tensors the graphs read: the batch buffers, the (J, J)
    target matrix, the learning rate and the optimiser state, which `reset` rewrites in place.
    So one capture serves all configurations of a loss, with no recompilation and no launch
    overhead per kernel; another loss (`StepLoss.key`) gets graphs of its own.

    Full batches replay a graph of the compiled model. Other sizes (a training set's tail
    batch, a split's evaluation remainder) get graphs of the uncompiled model, one per size:
    a capture, not a compile. They change with every seed's split, so only the latest
    `ODD_GRAPHS_KEPT` are kept.

    All graphs of one instance share one memory pool: they run one after another on one
    stream and every output is read before the next replay, so their intermediates can share
    memory, and a trainer with several losses costs about one graph's memory, not one each.
    """

    def __init__(
        self,
        model: nn.Module,
        num_classes: int,
        device: torch.device,
        *,
        eager_model: nn.Module | None = None,
    ) -> None:
        self.model = model
        self.eager_model = model if eager_model is None else eager_model
        self.device = device
        self.lr = torch.tensor(1e-3, device=device)
        self.targets = torch.eye(num_classes, device=device)
        self.optimizer = torch.optim.Adam(
            model.parameters(), lr=self.lr, fused=True, capturable=True
        )
        self.loss = StepLoss(TARGETS_KEY, self._soft_targets)
        self._pool = torch.cuda.graph_pool_handle()
        # (kind, the batch's whole shape, loss key) -> graph; kind 'train' or 'eval'. The
        # whole shape: a trainer kept between studies may see another image size.
        self._full: OrderedDict[tuple[Hashable, ...], _Graph] = OrderedDict()
        self._odd: OrderedDict[tuple[Hashable, ...], _Graph] = OrderedDict()

    def _soft_targets(self, outputs: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
        return soft_target_cross_entropy(outputs, self.targets[grades])

    def targets_loss(self) -> StepLoss:
        """The loss of every target-distribution method: cross-entropy against the matrix
        `reset` writes."""
        return StepLoss(TARGETS_KEY, self._soft_targets)

    def reset(self, lr: float, loss: StepLoss, target_matrix: torch.Tensor | None = None) -> None:
        """Zero the optimiser state and set this run's learning rate, loss and (for a
        target-distribution method) targets in place."""
        self.lr.fill_(lr)
        self.loss = loss
        if target_matrix is not None:
            self.targets.copy_(target_matrix)
        for state in self.optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.zero_()

    def _graph(
        self, kind: str, xb: torch.Tensor, *, compiled: bool, capture: Callable[..., _Graph]
    ) -> _Graph:
        """The graph of ``kind`` ('train' or 'eval') for ``xb``'s shape and the current loss,
        captured on first use; odd sizes (``compiled`` False) go through the uncompiled
        model. Both kinds are kept least recently used first."""
        key = (kind, tuple(xb.shape), self.loss.key)
        cache, kept = (self._full, FULL_GRAPHS_KEPT) if compiled else (self._odd, ODD_GRAPHS_KEPT)
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        with GLOBAL_STATE_LOCK:
            try:
                graph = capture(self.model if compiled else self.eager_model, xb)
            except RuntimeError as exc:
                if "captur" not in str(exc).lower():
                    raise  # not a capture's refusal (out of memory, a CUDA fault)
                raise StepNotCapturable(
                    f"the {kind} step of loss {self.loss.key!r} cannot be captured as a CUDA "
                    f"graph, which every method's step must be on a GPU: {exc}. Make its "
                    "loss and head pure tensor work on the device (no .item(), no boolean "
                    "indexing, no CPU tensors); docs/add-a-method.md"
                ) from exc
        cache[key] = graph
        while len(cache) > kept:
            cache.popitem(last=False)  # its memory goes back to the shared pool
        return graph

    def _capture_train(self, model: nn.Module, x: torch.Tensor) -> _Graph:
        batch = len(x)
        loss = self.loss
        static = {
            "x": x.clone().contiguous(memory_format=torch.channels_last),
            "y": torch.zeros(batch, dtype=torch.long, device=self.device),
        }
        # A graph may be captured in the middle of a run (a tail batch): its warm-up steps
        # must leave the weights, batch-norm statistics and Adam's state as they found them.
        weights = copy.deepcopy(self.model.state_dict())
        adam = self._optimizer_snapshot()

        def step() -> torch.Tensor:
            # cache_enabled=False: cached weight casts must not outlive a captured step
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                outputs = model(static["x"])
            value = loss.fn(outputs.float(), static["y"])
            value.backward()
            self.optimizer.step()
            # Never set_to_none: the graphs write into these very gradient tensors.
            self.optimizer.zero_grad(set_to_none=False)
            return value.detach()

        model.train()
        # Warm up on a side stream (creates optimiser state, lets cuDNN pick kernels), as
        # torch.cuda.graphs asks, then capture one step.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: other lanes of this process keep launching work during the capture
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            static["loss"] = step()
        # The warm-up and captured steps trained the model; put everything back in place
        # (the graphs read these very tensors, so they are copied into, never replaced).
        self.model.load_state_dict(weights)
        self._restore_optimizer(adam)
        return _Graph(graph, static, loss)

    def _optimizer_snapshot(self) -> dict[int, dict[str, torch.Tensor]]:
        return {
            id(param): {k: v.clone() for k, v in state.items() if torch.is_tensor(v)}
            for param, state in self.optimizer.state.items()
        }

    def _restore_optimizer(self, snapshot: dict[int, dict[str, torch.Tensor]]) -> None:
        """Put Adam's state back; state first created by the warm-up goes back to zero,
        which is what Adam starts from."""
        for param, state in self.optimizer.state.items():
            before = snapshot.get(id(param), {})
            for name, value in state.items():
                if torch.is_tensor(value) and name in before:
                    value.copy_(before[name])
                elif torch.is_tensor(value):
                    value.zero_()

    def warm(self, batch_size: int, image_size: int) -> None:
        """Compile and capture the full-batch training graph and the evaluation graph of the
        current loss now, on blank films, so a run with it later starts on replayed graphs
        (the capture puts weights and optimiser state back as it found them)."""
        blank = torch.zeros(
            (batch_size, 1, image_size, image_size), dtype=torch.uint8, device=self.device
        )
        self._graph("train", blank, compiled=True, capture=self._capture_train)
        self._graph("eval", blank[:GRAPH_EVAL_BATCH], compiled=True, capture=self._capture_eval)

    def ready_tails(self, *splits: torch.Tensor) -> None:
        """Capture now the graphs of each split's evaluation remainder (its last chunk of
        fewer than `GRAPH_EVAL_BATCH` films), which `predict` needs.

        Called as a run starts. Left to first use, the test split's remainder was captured at
        the end of a lane's first run of a seed, under `GLOBAL_STATE_LOCK`: while another
        lane of the process compiled the next task (~30 s), lanes that had finished training
        waited there with the GPU idle (issue 30, 4 x H200).
        """
        for x in splits:
            tail = len(x) % GRAPH_EVAL_BATCH
            if tail:
                self._graph("eval", x[len(x) - tail :], compiled=False, capture=self._capture_eval)

    def train_step(self, xb: torch.Tensor, yb: torch.Tensor, *, compiled: bool) -> torch.Tensor:
        """One optimiser step on a batch; returns the (graph-owned) mean loss tensor.

        Args:
            xb: The batch's images; ``compiled`` picks the compiled model's graph (full
                batches) or a graph of the uncompiled model of this size (the tail batch).
            yb: Their grades.
        """
        captured = self._graph("train", xb, compiled=compiled, capture=self._capture_train)
        captured.static["x"].copy_(xb)
        captured.static["y"].copy_(yb)
        captured.graph.replay()
        return captured.static["loss"]

    @torch.no_grad()
    def predict(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Outputs (N, ...) of a whole split, as float32, and the loss over it (a 0-d tensor:
        the chunks' losses weighted by their films). Full chunks of `GRAPH_EVAL_BATCH` go
        through the compiled model's graph, the rest through a graph of its own size (no
        padding)."""
        out, total = [], torch.zeros((), device=self.device)
        for start in range(0, len(x), GRAPH_EVAL_BATCH):
            xb, yb = x[start : start + GRAPH_EVAL_BATCH], y[start : start + GRAPH_EVAL_BATCH]
            full = len(xb) == GRAPH_EVAL_BATCH
            captured = self._graph("eval", xb, compiled=full, capture=self._capture_eval)
            captured.static["x"].copy_(xb)
            captured.static["y"].copy_(yb)
            captured.graph.replay()
            out.append(captured.static["outputs"].clone())
            total += captured.static["loss"] * len(xb)
        return torch.cat(out), total / max(len(x), 1)

    def predict_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs (N, ...) of a whole split (`predict` without the loss)."""
        dummy = torch.zeros(len(x), dtype=torch.long, device=self.device)
        return self.predict(x, dummy)[0]

    @torch.no_grad()
    def _capture_eval(self, model: nn.Module, xb: torch.Tensor) -> _Graph:
        loss = self.loss
        static = {
            "x": torch.zeros_like(xb).contiguous(memory_format=torch.channels_last),
            "y": torch.zeros(len(xb), dtype=torch.long, device=self.device),
        }
        model.eval()

        def forward() -> tuple[torch.Tensor, torch.Tensor]:
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                outputs = model(static["x"]).float()
            return outputs, loss.fn(outputs, static["y"])

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                forward()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            static["outputs"], static["loss"] = forward()
        return _Graph(graph, static, loss)
