"""Where the ResNet18 stem loses time on the GPU, and what fixes it.

The profile of a compiled training step (bench/train_throughput.py --profile) shows the
stem (the grey 7x7 conv1 and the max-pool) taking ~30 % of the step: cuDNN has no tensor-core
kernel for one input channel, and inductor's max-pool backward is a slow gather. This script
times one compiled, CUDA-graphed training step (forward, loss, backward, fused Adam) for:

- ``c1``: the model as built (conv1 over one channel);
- ``cK``: conv1 over the grey channel zero-padded to K channels (weights padded likewise, so
  the result and the gradient of the real weights are unchanged);
- ``+pool``: the max-pool as an opaque op whose backward is ATen's kernel, not inductor's.

    python bench/stem_probe.py --variants c1,c4,c8,c4+pool
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.train import GREY_MEAN, GREY_STD, GraphedSteps, build_model  # noqa: E402


@torch.library.custom_op("softgrade_probe::max_pool", mutates_args=())
def max_pool(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ResNet's 3x3 stride-2 max-pool through ATen."""
    out, idx = torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    return out, idx


@max_pool.register_fake
def _(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out, idx = torch.ops.aten.max_pool2d_with_indices(x.to("meta"), [3, 3], [2, 2], [1, 1])
    return torch.empty_like(out, device=x.device), torch.empty_like(idx, device=x.device)


@torch.library.custom_op("softgrade_probe::max_pool_backward", mutates_args=())
def max_pool_backward(grad: torch.Tensor, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.max_pool2d_with_indices_backward(
        grad, x, [3, 3], [2, 2], [1, 1], [1, 1], False, idx
    )


@max_pool_backward.register_fake
def _(grad: torch.Tensor, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _setup(ctx, inputs, output) -> None:  # noqa: ANN001
    ctx.save_for_backward(inputs[0], output[1])


def _backward(ctx, grad, _grad_idx):  # noqa: ANN001
    x, idx = ctx.saved_tensors
    return max_pool_backward(grad.contiguous(memory_format=torch.channels_last), x, idx)


max_pool.register_autograd(_backward, setup_context=_setup)


def patched_forward(model: torch.nn.Module, channels: int, aten_pool: bool):  # noqa: ANN201
    b = model.backbone

    def forward(x: torch.Tensor) -> torch.Tensor:
        x = (x.float() / 255.0 - GREY_MEAN) / GREY_STD
        w = b.conv1.weight
        if channels > 1:
            x = F.pad(x, (0, 0, 0, 0, 0, channels - 1))
            w = F.pad(w, (0, 0, 0, 0, 0, channels - 1))
        x = x.contiguous(memory_format=torch.channels_last)
        x = F.conv2d(x, w, stride=2, padding=3)
        x = b.relu(b.bn1(x))
        x = max_pool(x)[0] if aten_pool else b.maxpool(x)
        x = b.layer4(b.layer3(b.layer2(b.layer1(x))))
        return b.fc(torch.flatten(b.avgpool(x), 1))

    return forward


def time_variant(variant: str, batch: int, size: int, steps: int) -> dict:
    channels = int(variant.split("+")[0][1:])
    model, _ = build_model(4)
    model = model.cuda().to(memory_format=torch.channels_last)
    model.forward = patched_forward(model, channels, "+pool" in variant)
    t0 = time.perf_counter()
    graphs = GraphedSteps(torch.compile(model), 4, torch.device("cuda"))
    x = torch.randint(0, 256, (batch, 1, size, size), dtype=torch.uint8, device="cuda")
    y = torch.randint(0, 4, (batch,), device="cuda")
    graphs.train_step(x, y)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    for _ in range(5):
        graphs.train_step(x, y)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    for _ in range(steps):
        graphs.train_step(x, y)
    torch.cuda.synchronize()
    step_ms = (time.perf_counter() - t1) / steps * 1000
    return {
        "variant": variant,
        "step_ms": step_ms,
        "images_per_s": batch / step_ms * 1000,
        "compile_s": compile_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", default="c1,c4,c8,c1+pool,c4+pool")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(0), torch.__version__)
    for variant in args.variants.split(","):
        print(time_variant(variant, args.batch, args.size, args.steps), flush=True)


if __name__ == "__main__":
    main()
