"""A lab's own method, added in one new file outside the checkout (docs/add-a-method.md).

`write_method_package` writes an importable package holding method modules into a folder;
`plugin_environment` is what a process needs to find it: ``SOFTGRADE_METHOD_PACKAGES``
naming the package, and the folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.methods import PLUGIN_VARIABLE

#: The method a lab adds: dlordinal's MCE + WK loss (mean squared error per class plus the
#: QWK loss), which the registry does not ship. Exactly the one file docs/add-a-method.md asks
#: for; nothing else in the checkout changes.
LAB_METHOD = "lab_mce_wk"
LAB_METHOD_LABEL = "MCE+WK (lab)"
LAB_METHOD_SOURCE = f'''"""MCE + WK: mean squared error per class plus the QWK loss
(de la Torre et al. 2018), through dlordinal's ``MCEAndWKLoss``. Search space: C, the weight
of the QWK term, around dlordinal's default 0.5; learning rate as the paper."""

from __future__ import annotations

from engine.methods.base import LEARNING_RATE, REGULARISED_LOSS, HyperParameter, Method

WEIGHT = HyperParameter(
    "wk_weight", "C", (0.25, 0.5), "the weight of the QWK term beside the squared error"
)


def _loss(num_classes, params):
    from dlordinal.losses import MCEAndWKLoss

    return MCEAndWKLoss(
        num_classes=num_classes, C=params.value("wk_weight", 0.5), use_logits=True
    )


METHOD = Method(
    name="{LAB_METHOD}",
    label="{LAB_METHOD_LABEL}",
    family=REGULARISED_LOSS,
    description="Squared error per class plus the QWK loss, over softmax probabilities.",
    hyperparameters=(LEARNING_RATE, WEIGHT),
    source="dlordinal's MCEAndWKLoss (C around its default 0.5); lr: the paper",
    loss=_loss,
)
'''


def write_method_package(root: Path, package: str, modules: dict[str, str]) -> Path:
    """Write package ``package`` under ``root`` with one module per ``modules`` entry
    (module name -> source); returns the package's folder."""
    folder = root / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text('"""A lab\'s ordinal methods."""\n')
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(source)
    return folder


def plugin_environment(root: Path, package: str) -> dict[str, str]:
    """This process's environment plus what finds the package: its name in
    ``SOFTGRADE_METHOD_PACKAGES`` and ``root`` first on ``PYTHONPATH``."""
    paths = [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, PLUGIN_VARIABLE: package, "PYTHONPATH": os.pathsep.join(paths)}
