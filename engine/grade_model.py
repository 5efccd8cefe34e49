"""The grade model: ResNet18 over grey films (`GradeNet`, `build_model`), its checkpoint files
(`save_checkpoint`, `load_model`, `load_checkpoint`) and the device it runs on
(`resolve_device`). `engine.train` trains it; the pages, Grad-CAM and the demo bundle load it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torchvision
from torch import nn

from engine.config import TrainConfig
from engine.methods import PLUGIN_VARIABLE, UnknownMethodError, get_method
from engine.methods.heads import get_head
from engine.vocab import TASK_CLASSES, TASKS

# Grey-level normalisation: the mean/std of ImageNet's channel means, applied to a single
# channel, so summing conv1's weights over RGB keeps pretrained features (see `build_model`).
GREY_MEAN = 0.449
GREY_STD = 0.226


class GradeNet(nn.Module):
    """ResNet18 over grey uint8 images (N, 1, S, S) → its head's outputs.

    The head (``backbone.fc``) is the method's output layer (`engine.methods.heads`): J logits
    for the paper's methods, J - 1 conditional logits for CORN, probabilities for CLM.
    `probabilities` turns outputs into P(grade). Normalisation lives inside the model so
    training, evaluation and Grad-CAM see the same input.
    """

    def __init__(self, backbone: nn.Module, head: str = "softmax") -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x.float() / 255.0 - GREY_MEAN) / GREY_STD
        return self.backbone(x)

    def probabilities(self, outputs: torch.Tensor) -> torch.Tensor:
        """(N, J) grade probabilities of this model's outputs (rows sum to one)."""
        return get_head(self.head).probabilities(outputs)


def build_model(
    num_classes: int, weights_path: str | None = None, head: str = "softmax"
) -> tuple[GradeNet, str]:
    """ResNet18 with a grey first convolution and an output layer for ``num_classes`` grades.

    Args:
        num_classes: Number of grades J.
        weights_path: A local torchvision ImageNet state dict; nothing is downloaded.
        head: The method's output layer (`engine.methods.heads.HEADS`).

    Returns:
        The model and how it was initialised: 'imagenet' or 'random'.
    """
    backbone = torchvision.models.resnet18(weights=None)
    weights_init = "random"
    if weights_path:
        path = Path(weights_path)
        if not path.is_file():
            raise ValueError(f"weights_path: no file at {path}; give a local resnet18 state dict")
        backbone.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        weights_init = "imagenet"
    # A grey image copied into three channels gives the same first-layer output as one channel
    # convolved with the RGB kernels summed, at a third of the cost.
    rgb = backbone.conv1.weight.detach()
    backbone.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    backbone.conv1.weight.data.copy_(rgb.sum(dim=1, keepdim=True))
    backbone.fc = get_head(head).build(backbone.fc.in_features, num_classes)
    return GradeNet(backbone, head), weights_init


def save_checkpoint(path: Path, state_dict: dict[str, torch.Tensor], config: TrainConfig) -> None:
    """Write weights and their config together (as nanoGPT keeps ``config`` in ``ckpt.pt``).

    The file also names the model's head, so `load_model` rebuilds it where the method is not
    registered (a demo bundle of a lab's own method opened on a laptop without its package).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    head = get_method(config.method).head
    torch.save({"state_dict": state_dict, "config": config.to_dict(), "head": head}, tmp)
    tmp.replace(path)


def load_model(path: Path, device: str = "cpu") -> GradeNet:
    """Rebuild the model of `save_checkpoint`'s file, in eval mode, with the head it was
    trained with; its method need not be registered here.

    Files written before checkpoints named their head take their method's head from the
    registry (every method then had the softmax head).
    """
    return _model_of(torch.load(path, map_location=device, weights_only=True), path, device)


def load_checkpoint(path: Path, device: str = "cpu") -> tuple[GradeNet, TrainConfig]:
    """Rebuild a model and its run's config from `save_checkpoint`'s file, in eval mode (the
    config needs the method registered; `load_model` does not)."""
    blob = torch.load(path, map_location=device, weights_only=True)
    return _model_of(blob, path, device), TrainConfig.from_dict(blob["config"])


def _model_of(blob: dict[str, Any], path: Path, device: str) -> GradeNet:
    config = blob["config"]
    head = blob.get("head") or _registered_head(config.get("method"), path)
    task = config.get("task")
    if task not in TASK_CLASSES:
        raise ValueError(f"{path}: its config names task {task!r}; allowed: {', '.join(TASKS)}")
    model, _ = build_model(TASK_CLASSES[task], head=head)
    model.load_state_dict(blob["state_dict"])
    return model.to(device).eval()


def _registered_head(method: object, path: Path) -> str:
    try:
        return get_method(str(method)).head
    except UnknownMethodError:
        raise ValueError(
            f"{path} was trained with method {method!r}, which this checkout does not know, "
            "and the file does not name its head; add the method's package to "
            f"{PLUGIN_VARIABLE}"
        ) from None


def resolve_device(device: str) -> torch.device:
    """'auto' → cuda if available else cpu; 'cuda' without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"device: {device!r} asked for, but this machine has no CUDA GPU; use cpu or auto"
        )
    return torch.device(device)
