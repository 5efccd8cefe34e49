"""Where the ResNet18 stem loses time on the GPU, and what fixes it.

The profile of a compiled training step (bench/train_throughput.py --profile) shows the
stem (the grey 7x7 conv1 and the max-pool) taking ~30 % of the step: cuDNN has no tensor-core
kernel for one input channel, and inductor's max-pool backward is a slow gather. This script
times one compiled, CUDA-graphed training step (forward, loss, backward, fused Adam) for:

- ``c1``: the model as built (conv1 over one channel);
- ``cK``: conv1 over the grey channel zero-padded to K channels (weights padded likewise, so
  the result and the gradient of the real weights are unchanged);
- ``gemm``: conv1 as one matrix product over 7x7 patches (im2col, K padded to 56), so the
  forward and the weight gradient are tensor-core GEMMs instead of cuDNN's one-channel kernel;
- ``+pool``: the max-pool as an opaque op whose backward is ATen's kernel, not inductor's;
- ``+slices``: the max-pool as the maximum of its nine strided slices, which inductor fuses
  (forward and backward) into pointwise kernels;
- ``+sep``: the same, separably: a 3-wide maximum along the width, then along the height;
- ``s2dK``: conv1 as a 4x4 stride-1 conv over the input's 2x2 space-to-depth (K channels);
- ``+triton``: engine/stem.py's Triton max-pool (forward and backward kernels).

``--profile`` prints, per variant, the GPU kernels of one compiled step (eager replay; a
CUDA graph runs the same kernels), largest first.

``--inductor "key=value;..."`` sets ``torch._inductor.config`` knobs (dotted keys such as
``triton.persistent_reductions``; True/False, ints, floats) for every run; ``--knobsets``
times each variant once per knob set ("default" is none), compiling afresh each time.

    python bench/stem_probe.py --variants c1,gemm,c1+slices,gemm+slices --profile
    python bench/stem_probe.py --variants gemm+triton \
        --knobsets "default|coordinate_descent_tuning=True|default"
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
import torch._inductor.config as inductor_config
import torch.nn.functional as F  # noqa: N812

from engine.stem import max_pool_3x3s2
from engine.train import GREY_MEAN, GREY_STD, GraphedSteps, build_model


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


def _setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0], output[1])


def _backward(ctx, grad, _grad_idx):
    x, idx = ctx.saved_tensors
    return max_pool_backward(grad.contiguous(memory_format=torch.channels_last), x, idx)


max_pool.register_autograd(_backward, setup_context=_setup)


def conv1_gemm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """ResNet's 7x7 stride-2 conv over one channel as patches (N*Ho*Wo, 56) @ (56, 64)."""
    n, _, h, wd = x.shape
    ho, wo = (h - 1) // 2 + 1, (wd - 1) // 2 + 1
    xp = F.pad(x[:, 0], (3, 3, 3, 3))
    patches = xp.unfold(1, 7, 2).unfold(2, 7, 2).reshape(n * ho * wo, 49)
    patches = F.pad(patches, (0, 7))
    weight = F.pad(w.reshape(w.shape[0], 49), (0, 7))
    out = patches @ weight.t()
    return out.view(n, ho, wo, -1).permute(0, 3, 1, 2)


def conv1_s2d(x: torch.Tensor, w: torch.Tensor, channels: int = 4) -> torch.Tensor:
    """The 7x7 stride-2 conv as a 4x4 stride-1 conv over the 2x2 space-to-depth of the input
    (kernel zero-padded to 8x8), optionally with the 4 channels zero-padded to ``channels``."""
    n = x.shape[0]
    xp = F.pad(x, (3, 3 + x.shape[-1] % 2, 3, 3 + x.shape[-2] % 2))
    hp, wp = xp.shape[-2:]
    xs = (
        xp.view(n, 1, hp // 2, 2, wp // 2, 2)
        .permute(0, 1, 3, 5, 2, 4)
        .reshape(n, 4, hp // 2, wp // 2)
    )
    ws = (
        F.pad(w, (0, 1, 0, 1))
        .view(-1, 1, 4, 2, 4, 2)
        .permute(0, 1, 3, 5, 2, 4)
        .reshape(-1, 4, 4, 4)
    )
    if channels > 4:
        xs = F.pad(xs, (0, 0, 0, 0, 0, channels - 4))
        ws = F.pad(ws, (0, 0, 0, 0, 0, channels - 4))
    return F.conv2d(xs.contiguous(memory_format=torch.channels_last), ws)


def max_pool_slices(x: torch.Tensor) -> torch.Tensor:
    """3x3 stride-2 max-pool (padding 1) as the maximum of nine strided slices."""
    h, w = x.shape[-2:]
    ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    xp = F.pad(x, (1, 1, 1, 1), value=float("-inf"))
    out = None
    for i in range(3):
        for j in range(3):
            s = xp[:, :, i : i + 2 * ho - 1 : 2, j : j + 2 * wo - 1 : 2]
            out = s if out is None else torch.maximum(out, s)
    return out


def max_pool_separable(x: torch.Tensor) -> torch.Tensor:
    """The same max-pool as a 3-wide max along the width, then along the height."""
    h, w = x.shape[-2:]
    ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    xp = F.pad(x, (1, 1, 1, 1), value=float("-inf"))
    rows = None
    for j in range(3):
        s = xp[:, :, :, j : j + 2 * wo - 1 : 2]
        rows = s if rows is None else torch.maximum(rows, s)
    out = None
    for i in range(3):
        s = rows[:, :, i : i + 2 * ho - 1 : 2, :]
        out = s if out is None else torch.maximum(out, s)
    return out


def patched_forward(model: torch.nn.Module, conv: str, pool: str):
    b = model.backbone
    channels = int(conv[1:]) if conv.startswith("c") else 1
    pools = {"pool": lambda t: max_pool(t)[0], "slices": max_pool_slices}
    pools |= {"sep": max_pool_separable, "triton": max_pool_3x3s2}

    def forward(x: torch.Tensor) -> torch.Tensor:
        x = (x.float() / 255.0 - GREY_MEAN) / GREY_STD
        w = b.conv1.weight
        if conv == "gemm":
            x = conv1_gemm(x, w)
        elif conv.startswith("s2d"):
            x = conv1_s2d(x, w, int(conv[3:] or 4))
        else:
            if channels > 1:
                x = F.pad(x, (0, 0, 0, 0, 0, channels - 1))
                w = F.pad(w, (0, 0, 0, 0, 0, channels - 1))
            x = x.contiguous(memory_format=torch.channels_last)
            x = F.conv2d(x, w, stride=2, padding=3)
        x = b.relu(b.bn1(x))
        x = pools[pool](x) if pool else b.maxpool(x)
        x = b.layer4(b.layer3(b.layer2(b.layer1(x))))
        return b.fc(torch.flatten(b.avgpool(x), 1))

    return forward


def check_stem(conv: str, pool: str) -> float:
    """Relative error of the patched stem against the plain one, float64 on the CPU."""
    torch.manual_seed(0)
    x = torch.randn(2, 1, 40, 40, dtype=torch.float64)
    w = torch.randn(64, 1, 7, 7, dtype=torch.float64)
    ref = F.max_pool2d(torch.relu(F.conv2d(x, w, stride=2, padding=3)), 3, 2, 1)
    if conv == "gemm":
        y = conv1_gemm(x, w)
    elif conv.startswith("s2d"):
        y = conv1_s2d(x, w, int(conv[3:] or 4))
    else:
        y = F.conv2d(x, w, stride=2, padding=3)
    y = torch.relu(y)
    pools = {"slices": max_pool_slices, "sep": max_pool_separable}
    y = pools.get(pool, lambda t: F.max_pool2d(t, 3, 2, 1))(y)
    return float((y - ref).norm() / ref.norm())


def check_triton_pool() -> dict:
    """The Triton max-pool against ATen's on fresh random CUDA data: output and gradient."""
    torch.manual_seed(1)
    x = torch.relu(torch.randn(8, 64, 112, 112, device="cuda"))
    x = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    ref_x = x.detach().clone().requires_grad_()
    out, ref = max_pool_3x3s2(x), F.max_pool2d(ref_x, 3, 2, 1)
    grad = torch.randn_like(ref)
    out.backward(grad)
    ref.backward(grad)
    return {
        "out_rel_err": float((out - ref).norm() / ref.norm()),
        "grad_rel_err": float((x.grad - ref_x.grad).norm() / ref_x.grad.norm()),
    }


def kernel_table(graphs: GraphedSteps, x: torch.Tensor, y: torch.Tensor, steps: int = 5) -> str:
    """GPU kernels of ``steps`` compiled steps run eagerly (no graph), ms per step."""
    from torch.profiler import ProfilerActivity, profile

    model = graphs.model
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    for _ in range(2):
        _eager_step(model, opt, x, y)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            _eager_step(model, opt, x, y)
        torch.cuda.synchronize()
    rows = [
        (e.device_time_total / steps / 1000, e.count // steps, e.key)
        for e in prof.key_averages()
        if e.device_time_total > 0
    ]
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    lines = [f"kernel time per step: {total:.2f} ms"]
    lines += [f"{ms:7.3f} ms {n:4d}x  {name[:110]}" for ms, n, name in rows[:30]]
    return "\n".join(lines)


def _eager_step(model, opt, x, y) -> None:
    # cache_enabled=False as in GraphedSteps, so the compiled forward is reused, not rebuilt
    with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
        loss = F.cross_entropy(model(x).float(), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


Knob = bool | int | float | str


def parse_knobs(spec: str) -> dict[str, Knob]:
    """``"a=True;triton.b=3"`` -> ``{"a": True, "triton.b": 3}``; "" or "default" -> {}."""
    knobs: dict[str, Knob] = {}
    for item in spec.split(";"):
        item = item.strip()
        if not item or item == "default":
            continue
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"inductor knob {item!r} is not key=value")
        value: Knob = raw.strip()
        if value in ("True", "False"):
            value = value == "True"
        else:
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    pass
        knobs[key.strip()] = value
    return knobs


def unknown_knobs(knobs: dict[str, Knob]) -> list[str]:
    """Knobs this torch's inductor config lacks, or whose value has the wrong type."""
    known = inductor_config.get_config_copy()
    bad = []
    for key, value in knobs.items():
        if key not in known:
            bad.append(f"{key}: no such torch._inductor.config key in torch {torch.__version__}")
        elif isinstance(known[key], bool) != isinstance(value, bool):
            bad.append(f"{key}={value!r}: default is {known[key]!r}")
    return bad


def time_variant(
    variant: str, batch: int, size: int, steps: int, profile: bool, repeats: int = 1
) -> dict:
    conv, _, pool = variant.partition("+")
    torch._dynamo.reset()  # each variant compiles afresh (the probe's forward is one function)
    model, _ = build_model(4)
    model = model.cuda().to(memory_format=torch.channels_last)
    model.forward = patched_forward(model, conv, pool)
    t0 = time.perf_counter()
    graphs = GraphedSteps(torch.compile(model), 4, torch.device("cuda"))
    x = torch.randint(0, 256, (batch, 1, size, size), dtype=torch.uint8, device="cuda")
    y = torch.randint(0, 4, (batch,), device="cuda")
    graphs.train_step(x, y, compiled=True)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    for _ in range(5):
        graphs.train_step(x, y, compiled=True)
    torch.cuda.synchronize()
    runs = []
    for _ in range(repeats):
        t1 = time.perf_counter()
        for _ in range(steps):
            graphs.train_step(x, y, compiled=True)
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t1) / steps * 1000)
    step_ms = statistics.median(runs)
    t1 = time.perf_counter()
    graphs.predict_logits(x)
    torch.cuda.synchronize()
    eval_compile_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    for _ in range(steps):
        graphs.predict_logits(x)
    torch.cuda.synchronize()
    eval_ms = (time.perf_counter() - t2) / steps * 1000
    out = {
        "variant": variant,
        "step_ms": round(step_ms, 3),
        "step_ms_runs": [round(r, 3) for r in runs],
        "images_per_s": round(batch / step_ms * 1000),
        "eval_ms": round(eval_ms, 3),
        "compile_s": round(compile_s, 1),
        "eval_compile_s": round(eval_compile_s, 1),
        "stem_rel_err": check_stem(conv, pool),
    }
    if profile:
        out["kernels"] = kernel_table(graphs, x, y)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", default="c1,gemm,c1+slices,gemm+slices")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of --steps; median")
    parser.add_argument("--inductor", default="", help='knobs for every run: "k=v;k=v"')
    parser.add_argument("--knobsets", default="default", help='knob sets: "default|k=v;k=v|..."')
    args = parser.parse_args()
    base = parse_knobs(args.inductor)
    knobsets = [base | parse_knobs(spec) for spec in args.knobsets.split("|")]
    for knobs in knobsets:
        if bad := unknown_knobs(knobs):
            sys.exit("unknown inductor knobs: " + "; ".join(bad))
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(0), torch.__version__)
    print("triton max-pool vs ATen:", check_triton_pool(), flush=True)
    rows = []
    for variant in args.variants.split(","):
        for knobs in knobsets:
            # the patch covers the lazy compiles too (first train step, first eval)
            with inductor_config.patch(knobs):
                res = time_variant(
                    variant, args.batch, args.size, args.steps, args.profile, args.repeats
                )
            res["inductor"] = knobs
            print(res.pop("kernels", ""), flush=True)
            print(res, flush=True)
            rows.append(res)
    print("step_ms  img/s  eval_ms  compile_s  variant  inductor")
    for r in rows:
        print(
            f"{r['step_ms']:7.3f} {r['images_per_s']:6d} {r['eval_ms']:8.3f} "
            f"{r['compile_s']:9.1f}  {r['variant']}  {r['inductor'] or 'default'}"
        )


if __name__ == "__main__":
    main()
