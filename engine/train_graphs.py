"""The fast path's CUDA graphs: a whole training step (forward, soft-target loss, backward,
fused Adam) and the evaluation forward, each captured once and replayed for every batch of
every run (`GraphedSteps`), and the lock that guards process-wide state while a `Trainer`
compiles, captures or draws initial weights.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable

import torch
from torch import nn

# The compiled evaluation graph's batch; a split's remainder gets a graph of its own size,
# so a 651-image split costs 651 forwards (validation runs every epoch).
GRAPH_EVAL_BATCH = 128
# Graphs of odd sizes (a training set's tail batch, a split's evaluation remainder) kept per
# trainer. Their sizes change with every seed's split and each graph holds its own memory
# pool (~0.5-1 GiB at 224 px), so a slot that runs 20 seeds keeps only the latest few: the
# current seed's tail, validation and test remainders, and the previous seed's.
ODD_GRAPHS_KEPT = 6

# Several trainers may share a process, one per thread and CUDA stream (a slot's lanes).
# What touches process-wide state takes this lock: torch.compile and graph capture (not
# thread-safe), and seeding and drawing initial weights (the process-wide RNG, whose CUDA
# generator also belongs to any graph being captured: drawing from it meanwhile is an error).
GLOBAL_STATE_LOCK = threading.RLock()

# A captured CUDA graph and the static tensors it reads and writes.
_Graph = tuple[torch.cuda.CUDAGraph, dict[str, torch.Tensor]]


def soft_target_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy against probability targets (N, J): what ``nn.CrossEntropyLoss``
    computes when dlordinal's ``CustomTargetsLoss`` hands it soft targets."""
    return -(targets * torch.log_softmax(logits.float(), dim=1)).sum(dim=1).mean()


class GraphedSteps:
    """The whole training step (forward, soft-target loss, backward, fused Adam) and the
    evaluation forward, each captured once as a CUDA graph and replayed for every batch of
    every run.

    Everything a run changes lives in tensors the graphs read: the batch buffers, the
    (J, J) target matrix (dlordinal's soft labels mixed by eta), the learning rate and the
    optimiser state, which `reset` rewrites in place. So one capture serves all methods and
    configurations, with no recompilation and no launch overhead per kernel.

    Full batches replay a graph of the compiled model. Other sizes (a training set's tail
    batch, a split's evaluation remainder) get graphs of the uncompiled model, one per size:
    a capture, not a compile. They change with every seed's split, so only the latest
    `ODD_GRAPHS_KEPT` are kept.
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
        # (kind, batch size) -> graph and its static tensors; 'train' or 'eval'
        # Keyed by kind and the batch's whole shape: a trainer kept between studies may see
        # another image size with the same batch size.
        self._full: dict[tuple[str, tuple[int, ...]], _Graph] = {}
        self._odd: OrderedDict[tuple[str, tuple[int, ...]], _Graph] = OrderedDict()

    def reset(self, lr: float, target_matrix: torch.Tensor) -> None:
        """Zero the optimiser state and set this run's learning rate and targets in place."""
        self.lr.fill_(lr)
        self.targets.copy_(target_matrix)
        for state in self.optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.zero_()

    def _graph(
        self, kind: str, xb: torch.Tensor, *, compiled: bool, capture: Callable[..., _Graph]
    ) -> _Graph:
        """The graph of ``kind`` ('train' or 'eval') for ``xb``'s shape, captured on first
        use; odd sizes (``compiled`` False) go through the uncompiled model and an LRU."""
        key = (kind, tuple(xb.shape))
        if compiled:
            if key not in self._full:
                with GLOBAL_STATE_LOCK:
                    self._full[key] = capture(self.model, xb)
            return self._full[key]
        if key in self._odd:
            self._odd.move_to_end(key)
            return self._odd[key]
        with GLOBAL_STATE_LOCK:
            graph = capture(self.eager_model, xb)
        self._odd[key] = graph
        while len(self._odd) > ODD_GRAPHS_KEPT:
            self._odd.popitem(last=False)  # its memory pool goes with the graph
        return graph

    def _capture_train(self, model: nn.Module, x: torch.Tensor) -> _Graph:
        batch = len(x)
        static = {
            "x": x.clone().contiguous(memory_format=torch.channels_last),
            "y": torch.zeros(batch, dtype=torch.long, device=self.device),
        }
        # A tail graph may be captured in the middle of a run: its warm-up steps must leave
        # the weights, batch-norm statistics and Adam's state as they found them.
        weights = copy.deepcopy(self.model.state_dict())
        adam = self._optimizer_snapshot()

        def step() -> torch.Tensor:
            # cache_enabled=False: cached weight casts must not outlive a captured step
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                logits = model(static["x"])
            loss = soft_target_cross_entropy(logits, self.targets[static["y"]])
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=False)
            return loss.detach()

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
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            static["loss"] = step()
        # The warm-up and captured steps trained the model; put everything back in place
        # (the graphs read these very tensors, so they are copied into, never replaced).
        self.model.load_state_dict(weights)
        self._restore_optimizer(adam)
        return graph, static

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
        """Compile and capture the full-batch training graph and the evaluation graph now,
        on blank films, so a run of this task later starts on replayed graphs (the capture
        puts weights and optimiser state back as it found them)."""
        blank = torch.zeros(
            (batch_size, 1, image_size, image_size), dtype=torch.uint8, device=self.device
        )
        self._graph("train", blank, compiled=True, capture=self._capture_train)
        self._graph("eval", blank[:GRAPH_EVAL_BATCH], compiled=True, capture=self._capture_eval)

    def ready_tails(self, *splits: torch.Tensor) -> None:
        """Capture now the graphs of each split's evaluation remainder (its last chunk of
        fewer than `GRAPH_EVAL_BATCH` films), which `predict_logits` needs.

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
        graph, static = self._graph("train", xb, compiled=compiled, capture=self._capture_train)
        static["x"].copy_(xb)
        static["y"].copy_(yb)
        graph.replay()
        return static["loss"]

    @torch.no_grad()
    def predict_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (N, J) of a whole split: full chunks of `GRAPH_EVAL_BATCH` through the
        compiled model's graph, the rest through a graph of its own size (no padding)."""
        out = []
        for start in range(0, len(x), GRAPH_EVAL_BATCH):
            xb = x[start : start + GRAPH_EVAL_BATCH]
            full = len(xb) == GRAPH_EVAL_BATCH
            graph, static = self._graph("eval", xb, compiled=full, capture=self._capture_eval)
            static["x"].copy_(xb)
            graph.replay()
            out.append(static["logits"].clone())
        return torch.cat(out)

    @torch.no_grad()
    def _capture_eval(self, model: nn.Module, xb: torch.Tensor) -> _Graph:
        static = {"x": torch.zeros_like(xb).contiguous(memory_format=torch.channels_last)}
        model.eval()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with (
            torch.cuda.stream(side),
            torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False),
        ):
            for _ in range(2):
                model(static["x"])
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with (
            torch.cuda.graph(graph, capture_error_mode="thread_local"),
            torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False),
        ):
            static["logits"] = model(static["x"]).float()
        return graph, static
