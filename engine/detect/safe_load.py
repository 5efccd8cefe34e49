"""The one way a trained knee detector's weights are read: nothing in the file can run code.

A YOLOv8 ``detector.pt`` is a pickle. ultralytics reads it with ``torch.load`` and
``weights_only=False``, which runs whatever the pickle says: a detector handed over in a
demo bundle, a study bundle or a copied store could execute code in the kiosk's process.
Every detector SoftGrade loads goes through :func:`load_yolo_detector` instead:

1. the file is unpickled with ``torch.load(weights_only=True)`` (torch's restricted
   unpickler: tensors, containers and plain values), which may also rebuild only the few
   module classes a YOLOv8 detection checkpoint is made of (:func:`allowed_classes`); any
   other global, ``os.system`` included, is refused before anything is called;
2. of what was read only the tensors (the state dict) and the class names are kept; the
   network that runs is built afresh from the known architecture (``yolov8n.yaml`` shipped
   with ultralytics, never the file's own description of itself) and the tensors are loaded
   into it strictly (every name and shape must match).

A file that fails either step raises :class:`UnsafeCheckpointError` naming the file and why.
ultralytics is imported only inside the functions (slow to import; the caller prepares it
offline first, see `engine.detect.yolo.ultralytics_offline`).
"""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from typing import Any

#: The architecture every SoftGrade detector is trained from: the paper's family, smallest
#: size; built from this yaml, never downloaded.
MODEL_YAML = "yolov8n.yaml"
#: A detector's class names are a handful of words; more is not a knee detector.
MAX_CLASSES = 16
#: The largest detector file read (a YOLOv8n checkpoint is ~6 MB; larger ones are refused
#: before they are read into memory).
MAX_WEIGHTS_BYTES = 64 * 2**20


class UnsafeCheckpointError(ValueError):
    """A detector file that cannot be loaded without trusting it (message says why)."""


def allowed_classes() -> list[type]:
    """The classes a YOLOv8 detection checkpoint pickles, and no others.

    Found with ``torch.serialization.get_unsafe_globals_in_checkpoint`` on a detector
    trained here; each is a torch or ultralytics network layer whose unpickling only sets
    attributes (no ``__reduce__`` of its own).
    """
    import torch
    from ultralytics.nn.modules.block import DFL, SPPF, Bottleneck, C2f
    from ultralytics.nn.modules.conv import Concat, Conv
    from ultralytics.nn.modules.head import Detect
    from ultralytics.nn.tasks import DetectionModel

    return [
        DetectionModel,
        Detect,
        Conv,
        Concat,
        C2f,
        Bottleneck,
        SPPF,
        DFL,
        torch.nn.Conv2d,
        torch.nn.BatchNorm2d,
        torch.nn.SiLU,
        torch.nn.MaxPool2d,
        torch.nn.Upsample,
        torch.nn.Sequential,
        torch.nn.ModuleList,
    ]


_allowed_lock = threading.Lock()


def _allow_detector_classes() -> None:
    """Add :func:`allowed_classes` to torch's weights-only allow-list, once per process.

    Added for good rather than with the ``safe_globals`` context: that context removes its
    entries from the process-wide list on exit, so two threads (two kiosk visitors) loading at
    once would take the list from under each other's load.
    """
    import torch

    with _allowed_lock:
        known = set(torch.serialization.get_safe_globals())
        missing: list[Any] = [cls for cls in allowed_classes() if cls not in known]
        if missing:
            torch.serialization.add_safe_globals(list(missing))


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The checkpoint's contents, read with torch's weights-only unpickler.

    Raises:
        UnsafeCheckpointError: too large, not a torch file, or it names a global outside
            :func:`allowed_classes` (e.g. a function to call); nothing in it has run.
    """
    import torch

    path = Path(path)
    size = path.stat().st_size
    if size > MAX_WEIGHTS_BYTES:
        raise UnsafeCheckpointError(
            f"{path}: {size / 2**20:.0f} MiB is too large for a knee detector "
            f"(at most {MAX_WEIGHTS_BYTES // 2**20} MiB)"
        )
    try:
        _allow_detector_classes()
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsafeCheckpointError(
            f"{path} is not a knee detector SoftGrade can load safely: {first_line}. Only "
            "YOLOv8 detection weights are read; anything else in the file is refused"
        ) from exc
    if not isinstance(checkpoint, dict):
        raise UnsafeCheckpointError(f"{path} is not a YOLOv8 checkpoint (no dictionary inside)")
    return checkpoint


def _weights_and_names(checkpoint: dict[str, Any], path: Path) -> tuple[dict, dict[int, str]]:
    """The checkpoint's tensors and class names, checked; nothing else of it is kept."""
    import torch
    from ultralytics.nn.tasks import DetectionModel

    model = checkpoint.get("ema") or checkpoint.get("model")
    if not isinstance(model, DetectionModel):
        raise UnsafeCheckpointError(f"{path} holds no YOLOv8 detection model")
    names = getattr(model, "names", None)
    if isinstance(names, list | tuple):
        names = dict(enumerate(names))
    valid = (
        isinstance(names, dict)
        and 0 < len(names) <= MAX_CLASSES
        and sorted(names) == list(range(len(names)))
        and all(isinstance(v, str) and len(v) <= 64 for v in names.values())
    )
    if not valid or not isinstance(names, dict):
        raise UnsafeCheckpointError(f"{path}: its class names are not a short list of words")
    state = model.state_dict()
    if not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise UnsafeCheckpointError(f"{path}: its weights are not all tensors")
    return state, {int(k): str(v) for k, v in names.items()}


def load_yolo_detector(path: Path | str, *, model_yaml: str = MODEL_YAML) -> Any:
    """An ``ultralytics.YOLO`` detection model with ``path``'s weights, rebuilt from the known
    architecture; the file's pickled network itself is never run.

    Args:
        path: a ``detector.pt`` written by ultralytics' trainer (`engine.detect.train_detector`).
        model_yaml: the architecture the weights belong to.

    Raises:
        UnsafeCheckpointError: the file is unsafe, not a YOLOv8 detector, or its weights do
            not fit ``model_yaml`` (names or shapes differ).
    """
    import ultralytics
    from ultralytics.nn.tasks import DetectionModel

    path = Path(path)
    state, names = _weights_and_names(read_checkpoint(path), path)
    network = DetectionModel(model_yaml, nc=len(names), verbose=False)
    try:
        network.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    except RuntimeError as exc:
        raise UnsafeCheckpointError(
            f"{path}: its weights do not fit the {model_yaml} architecture "
            f"({str(exc).splitlines()[0]})"
        ) from exc
    network.names = names
    network.eval()
    yolo = ultralytics.YOLO(model_yaml, task="detect")
    # The wrapper's predictor runs this rebuilt network (ultralytics types .model as str).
    yolo.model = network  # type: ignore[assignment]
    return yolo
