"""Binomial output layer (Costa & Cardoso 2005; Beckham & Pal 2017) through dlordinal's
``BinomialLayer``: the network predicts one success probability and the grades follow a
binomial distribution, unimodal by construction. Trained by the negative log-likelihood.

Search space: the learning rate only (the paper's grid); the layer has no parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import LEARNING_RATE, OUTPUT_LAYER, Method, MethodParams
from engine.methods.heads import probability_nll
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    check_classes(num_classes)
    return probability_nll()


METHOD = Method(
    name="binomial_layer",
    label="Binomial layer",
    family=OUTPUT_LAYER,
    description="The network predicts one probability; the grades follow a binomial "
    "distribution of it, so the prediction is always unimodal.",
    hyperparameters=(LEARNING_RATE,),
    source="no parameter of its own (dlordinal's BinomialLayer); lr: the paper",
    loss=_loss,
    head="binomial_layer",
)
