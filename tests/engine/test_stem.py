"""The fast stem computes torchvision's conv1 and max-pool, and keeps the model's parameters."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
import torchvision

from engine.stem import GemmConv1, TritonMaxPool, conv1_as_gemm, use_fast_stem
from engine.train import FastPathOptions, Trainer, build_model

ROOT = Path(__file__).resolve().parents[2]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here")


@pytest.mark.parametrize("size", [(32, 32), (37, 40)])
def test_conv1_as_gemm_gives_the_convolution_and_its_weight_gradient(size):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 1, *size, dtype=torch.float64, generator=g)
    w1 = torch.randn(64, 1, 7, 7, dtype=torch.float64, generator=g, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_()
    ours, ref = conv1_as_gemm(x, w1), F.conv2d(x, w2, stride=2, padding=3)
    assert ours.shape == ref.shape
    torch.testing.assert_close(ours, ref)
    grad = torch.randn(ref.shape, dtype=torch.float64, generator=g)
    ours.backward(grad)
    ref.backward(grad)
    torch.testing.assert_close(w1.grad, w2.grad)


def test_the_fast_stem_keeps_names_values_and_outputs(images):
    plain, _ = build_model(4)
    fast, _ = build_model(4)
    fast.load_state_dict(plain.state_dict())
    use_fast_stem(fast.backbone)
    assert isinstance(fast.backbone.conv1, GemmConv1)
    assert isinstance(fast.backbone.maxpool, TritonMaxPool)
    assert list(fast.state_dict()) == list(plain.state_dict())
    for mode in ("train", "eval"):
        getattr(plain, mode)()
        getattr(fast, mode)()
        torch.testing.assert_close(fast(images), plain(images), rtol=1e-4, atol=1e-4)


def test_the_fast_stem_refuses_a_colour_conv1():
    with pytest.raises(ValueError, match="grey 7x7 stride-2"):
        use_fast_stem(torchvision.models.resnet18(weights=None))


def test_the_fast_stem_leaves_a_seed_s_initial_weights_unchanged():
    cpu = torch.device("cpu")
    fast = Trainer(
        num_classes=4, device=cpu, fast=True, options=FastPathOptions(compile_model=False)
    )
    plain = Trainer(num_classes=4, device=cpu, fast=False)
    # the fast path's channels-last layout changes what a seed draws; the stem must not
    plain.model.to(memory_format=torch.channels_last)
    fast.reset(7)
    plain.reset(7)
    for (name, a), b in zip(
        fast.model.state_dict().items(), plain.model.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(a, b, msg=name)


_POOL_CHECK = """
import torch, torch.nn.functional as F
import engine.stem  # registers softgrade::max_pool_3x3s2
torch.manual_seed(0)
cases = [(2, 5, 9, 9), (1, 3, 8, 11), (2, 16, 14, 13)]
for shape in cases:
    for relu in (False, True):  # after a ReLU, windows tie at zero
        x = torch.randn(shape)
        x = torch.relu(x) if relu else x
        x = x.contiguous(memory_format=torch.channels_last).requires_grad_()
        ref_x = x.detach().clone().requires_grad_()
        out, arg = torch.ops.softgrade.max_pool_3x3s2(x)
        ref = F.max_pool2d(ref_x, 3, 2, 1)
        grad = torch.randn_like(ref)
        out.backward(grad)
        ref.backward(grad)
        assert out.shape == ref.shape and arg.dtype == torch.int8, shape
        assert torch.equal(out, ref), shape
        torch.testing.assert_close(x.grad, ref_x.grad)
print("ok")
"""


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="no triton here")
def test_the_triton_max_pool_kernels_match_aten_in_the_interpreter():
    """Runs the kernels themselves on the CPU through Triton's interpreter."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_POOL_CHECK)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")


@needs_cuda
def test_the_triton_max_pool_matches_aten_on_cuda():
    x = torch.relu(torch.randn(4, 64, 56, 56, device="cuda", dtype=torch.bfloat16))
    x = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    ref_x = x.detach().clone().requires_grad_()
    out = TritonMaxPool(3, 2, 1)(x)
    ref = F.max_pool2d(ref_x, 3, 2, 1)
    grad = torch.randn_like(ref)
    out.backward(grad)
    ref.backward(grad)
    assert torch.equal(out, ref)
    torch.testing.assert_close(x.grad, ref_x.grad)


@needs_cuda
def test_graph_evaluation_of_a_split_with_a_remainder_equals_the_model():
    """Full chunks go through the compiled graph, the rest through a graph of its own size."""
    trainer = Trainer(num_classes=4, device=torch.device("cuda"), fast=True)
    x = torch.randint(0, 256, (150, 1, 32, 32), dtype=torch.uint8, device="cuda")
    logits = trainer.graphs.predict_logits(x)
    trainer.model.eval()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        expected = trainer.model(x.contiguous(memory_format=torch.channels_last)).float()
    assert logits.shape == (150, 4)
    torch.testing.assert_close(logits, expected, rtol=0.05, atol=0.05)
