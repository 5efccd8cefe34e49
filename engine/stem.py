"""ResNet18's stem on the fast path: the same functions as torchvision's modules, cheaper on a GPU.

A compiled training step spent ~30 % of its GPU time in the stem (bench/stem_probe.py
profiles it), on two things:

- conv1 over one grey channel, for which cuDNN has no tensor-core kernel. As one matrix
  product over 7x7 patches it becomes a cuBLAS GEMM, forward and weight gradient alike;
- the 3x3 stride-2 max-pool's backward, which inductor fuses into a slow gather. Here it is a
  Triton kernel over the input in channels-last order: each input element looks at the (at
  most four) windows that cover it and takes the gradient of those whose maximum it was.

`use_fast_stem` swaps these into a built model without touching its parameters, so state dicts,
checkpoints and Grad-CAM see torchvision's ResNet18 unchanged.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

try:  # Triton comes with CUDA builds of torch; without it the max-pool stays ATen's.
    import triton
    import triton.language as tl
    from torch.library import triton_op, wrap_triton
except ImportError:  # pragma: no cover - depends on the torch build
    triton = None

# Patches are padded from 49 to 56 values so the GEMM's rows are 16-byte aligned.
_PATCH_K = 56
_BLOCK = 1024


def conv1_as_gemm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """ResNet's conv1 (7x7, stride 2, padding 3, no bias) over one channel, as a GEMM.

    Args:
        x: Images (N, 1, H, W).
        weight: conv1's weight (C_out, 1, 7, 7).

    Returns:
        (N, C_out, ceil(H/2), ceil(W/2)), laid out channels-last.
    """
    n, _, h, w = x.shape
    ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    padded = F.pad(x[:, 0], (3, 3, 3, 3))
    patches = padded.unfold(1, 7, 2).unfold(2, 7, 2).reshape(n * ho * wo, 49)
    patches = F.pad(patches, (0, _PATCH_K - 49))
    kernel = F.pad(weight.reshape(weight.shape[0], 49), (0, _PATCH_K - 49))
    out = patches @ kernel.t()
    return out.view(n, ho, wo, -1).permute(0, 3, 1, 2)


def max_pool_3x3s2(x: torch.Tensor) -> torch.Tensor:
    """ResNet's max-pool (3x3, stride 2, padding 1): Triton kernels when training on CUDA.

    Without gradients (evaluation) the forward that inductor fuses is as fast, so the op is
    used only where its backward pays; CPU tensors and huge ones (int32 indexing) use ATen's.
    """
    if triton is not None and x.is_cuda and torch.is_grad_enabled() and x.numel() < 2**31:
        return torch.ops.softgrade.max_pool_3x3s2(x)[0]
    return F.max_pool2d(x, 3, 2, 1)


class GemmConv1(nn.Conv2d):
    """ResNet's conv1 computed by `conv1_as_gemm`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return conv1_as_gemm(x, self.weight)


class TritonMaxPool(nn.MaxPool2d):
    """ResNet's max-pool computed by `max_pool_3x3s2`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return max_pool_3x3s2(x)


def use_fast_stem(backbone: nn.Module) -> None:
    """Swap a torchvision ResNet's conv1 and max-pool for the fast versions, in place.

    conv1's weight moves over as it is, so the state dict keeps torchvision's names and
    values; the new modules are subclasses, so code that looks for ``nn.Conv2d`` (weight
    initialisation, Grad-CAM target layers) still finds conv1.
    """
    old = backbone.conv1
    if not isinstance(old, nn.Conv2d):
        raise ValueError("use_fast_stem: the backbone's conv1 must be a convolution")
    if (old.in_channels, old.kernel_size, old.stride, old.padding) != (1, (7, 7), (2, 2), (3, 3)):
        raise ValueError("use_fast_stem: conv1 must be a grey 7x7 stride-2 convolution")
    conv = GemmConv1(1, old.out_channels, kernel_size=7, stride=2, padding=3, bias=False)
    conv.weight = old.weight
    backbone.conv1 = conv
    backbone.maxpool = TritonMaxPool(kernel_size=3, stride=2, padding=1)


if triton is not None:

    @triton.jit
    def _nhwc_position(offs, C, H, W):
        """(n, h, w, c) of flat offsets into a channels-last (N, C, H, W) tensor."""
        c = offs % C
        t = offs // C
        w = t % W
        t = t // W
        return t // H, t % H, w, c

    @triton.jit
    def _pool_forward_kernel(x_ptr, out_ptr, arg_ptr, total, C, H, W, Ho, Wo, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < total
        n, oh, ow, c = _nhwc_position(offs, C, Ho, Wo)
        best = tl.full([BLOCK], float("-inf"), tl.float32)
        arg = tl.zeros([BLOCK], tl.int32)
        for kh in tl.static_range(3):
            h = 2 * oh - 1 + kh
            for kw in tl.static_range(3):
                w = 2 * ow - 1 + kw
                ok = mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)
                v = tl.load(x_ptr + ((n * H + h) * W + w) * C + c, mask=ok, other=float("-inf"))
                v = v.to(tl.float32)
                # the first maximum wins, and NaN propagates, as in ATen's kernel
                better = (v > best) | (v != v)
                best = tl.where(better, v, best)
                arg = tl.where(better, kh * 3 + kw, arg)
        tl.store(out_ptr + offs, best.to(out_ptr.dtype.element_ty), mask=mask)
        tl.store(arg_ptr + offs, arg.to(tl.int8), mask=mask)

    @triton.jit
    def _pool_backward_kernel(
        grad_ptr, arg_ptr, out_ptr, total, C, H, W, Ho, Wo, BLOCK: tl.constexpr
    ):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < total
        n, h, w, c = _nhwc_position(offs, C, H, W)
        acc = tl.zeros([BLOCK], tl.float32)
        # Windows oh with 2*oh - 1 <= h <= 2*oh + 1: (h + 1) // 2 and the one before it.
        for dh in tl.static_range(2):
            oh = (h + 1) // 2 - dh
            kh = h + 1 - 2 * oh
            for dw in tl.static_range(2):
                ow = (w + 1) // 2 - dw
                kw = w + 1 - 2 * ow
                ok = mask & (oh >= 0) & (oh < Ho) & (ow >= 0) & (ow < Wo) & (kh <= 2) & (kw <= 2)
                o = ((n * Ho + oh) * Wo + ow) * C + c
                a = tl.load(arg_ptr + o, mask=ok, other=-1).to(tl.int32)
                g = tl.load(grad_ptr + o, mask=ok, other=0.0).to(tl.float32)
                acc += tl.where(a == kh * 3 + kw, g, 0.0)
        tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)

    def _grid(total: int) -> tuple[int]:
        return (triton.cdiv(total, _BLOCK),)

    def _launcher(kernel: Any) -> Any:
        """``wrap_triton`` lets torch.compile trace a launch. Under Triton's interpreter (the
        CPU test of the kernels) older torch refuses to wrap the interpreted function, and an
        eager call needs no wrapping."""
        return kernel if os.environ.get("TRITON_INTERPRET") == "1" else wrap_triton(kernel)

    @triton_op("softgrade::max_pool_3x3s2", mutates_args={})
    def _max_pool(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n, c, h, w = x.shape
        ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
        x = x.contiguous(memory_format=torch.channels_last)
        out = torch.empty(
            (n, c, ho, wo), dtype=x.dtype, device=x.device, memory_format=torch.channels_last
        )
        arg = torch.empty(
            (n, c, ho, wo), dtype=torch.int8, device=x.device, memory_format=torch.channels_last
        )
        total = out.numel()
        _launcher(_pool_forward_kernel)[_grid(total)](
            x, out, arg, total, c, h, w, ho, wo, BLOCK=_BLOCK
        )
        return out, arg

    @triton_op("softgrade::max_pool_3x3s2_backward", mutates_args={})
    def _max_pool_backward(
        grad: torch.Tensor, arg: torch.Tensor, height: int, width: int
    ) -> torch.Tensor:
        n, c, ho, wo = arg.shape
        h, w = height, width
        grad = grad.contiguous(memory_format=torch.channels_last)
        out = torch.empty(
            (n, c, h, w), dtype=grad.dtype, device=grad.device, memory_format=torch.channels_last
        )
        total = out.numel()
        _launcher(_pool_backward_kernel)[_grid(total)](
            grad, arg, out, total, c, h, w, ho, wo, BLOCK=_BLOCK
        )
        return out

    def _setup_context(ctx, inputs, output) -> None:
        (x,) = inputs
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(output[1])
        ctx.size = (x.shape[-2], x.shape[-1])

    def _backward(ctx, grad, _grad_arg):
        (arg,) = ctx.saved_tensors
        return _max_pool_backward(grad, arg, *ctx.size)

    _max_pool.register_autograd(_backward, setup_context=_setup_context)
