"""Each method as its source defines it, checked against an independent formula (issue 37):
CORN's loss and rank rule, the Poisson and SORD targets, stable CDW-CE, the QWK loss and the
CLM and binomial layers written as plain tensor algebra. On a GPU every method's step is
captured as a CUDA graph, so where dlordinal's code needs the host mid-step, ours is checked
equal to it here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import poisson

from engine.methods import (
    MethodParams,
    get_method,
    make_loss,
    predicted_grades,
    prediction_rule,
    registry,
    target_matrix,
)
from engine.methods.heads import (
    HEADS,
    MEDIAN,
    MODE,
    PREDICTION_RULES,
    corn_probabilities,
    get_head,
    predict_grades,
)


def _logits(n: int, width: int, scale: float = 3.0, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, width, generator=torch.Generator().manual_seed(seed)) * scale


def _grades(n: int, classes: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, classes, (n,), generator=torch.Generator().manual_seed(seed))


def test_every_head_declares_a_known_prediction_rule_and_corn_predicts_its_median():
    assert {head.rule for head in HEADS.values()} <= set(PREDICTION_RULES)
    assert get_head("corn").rule == MEDIAN
    assert all(h.rule == MODE for name, h in HEADS.items() if name != "corn")
    assert prediction_rule("corn") == MEDIAN and prediction_rule("nominal") == MODE
    assert prediction_rule("a method from elsewhere") == MODE


@pytest.mark.parametrize("classes", [4, 5])
def test_corn_predicts_by_shi_et_als_rank_rule(classes):
    """Shi et al. 2021: the grade is the number of k with prod_{i<=k} sigmoid(z_i) > 0.5."""
    z = _logits(2000, classes - 1)
    rank_rule = (torch.cumprod(torch.sigmoid(z), dim=1) > 0.5).sum(dim=1).numpy()
    probs = corn_probabilities(z)
    np.testing.assert_array_equal(predict_grades(probs, MEDIAN).numpy(), rank_rule)
    np.testing.assert_array_equal(predicted_grades(probs.numpy(), "corn"), rank_rule)
    # ... which is not the most probable grade on a good share of films
    assert (probs.argmax(dim=1).numpy() != rank_rule).mean() > 0.05


def test_the_median_rule_reads_the_median_of_any_distribution():
    probs = np.array([[0.4, 0.05, 0.05, 0.5], [0.1, 0.1, 0.6, 0.2], [0.6, 0.2, 0.1, 0.1]])
    np.testing.assert_array_equal(predict_grades(probs, MEDIAN), [2, 2, 0])
    np.testing.assert_array_equal(predict_grades(probs, MODE), [3, 2, 0])
    with pytest.raises(ValueError, match="allowed"):
        predict_grades(probs, "mean")


@pytest.mark.parametrize("classes", [4, 5])
def test_corn_loss_equals_dlordinals_without_boolean_indexing(classes):
    from dlordinal.losses import CORNLoss

    z, y = _logits(64, classes - 1), _grades(64, classes)
    ours = make_loss("corn", classes, MethodParams(1e-3))(z, y)
    torch.testing.assert_close(ours, CORNLoss(num_classes=classes)(z, y))


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0, 5.0])
def test_cdw_ce_equals_polat_et_als_formula_and_stays_finite_at_huge_logits(alpha):
    from dlordinal.losses import CDWCELoss

    z, y = _logits(64, 5), _grades(64, 5)
    loss = make_loss("cdw_ce", 5, MethodParams(1e-3, alpha=alpha))
    # Independent: -sum_j log(1 - softmax(z)_j) |j - k|^alpha, mean over films.
    p = torch.softmax(z.double(), dim=1)
    weights = (torch.arange(5).view(1, -1) - y.view(-1, 1)).abs().double() ** alpha
    expected = -(torch.log1p(-p) * weights).sum(dim=1).mean()
    torch.testing.assert_close(loss(z, y).double(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(
        loss(z, y), CDWCELoss(num_classes=5, alpha=alpha)(z, y), rtol=1e-4, atol=1e-5
    )
    huge = z * 1e4  # dlordinal's exp overflows here
    assert not torch.isfinite(CDWCELoss(num_classes=5, alpha=alpha)(huge, y))
    assert torch.isfinite(loss(huge, y))


def test_the_qwk_loss_is_one_minus_quadratic_kappa_as_dlordinals_wkloss():
    from dlordinal.losses import WKLoss

    z, y = _logits(128, 5), _grades(128, 5)
    ours = make_loss("qwk", 5, MethodParams(1e-3))(z, y)
    theirs = WKLoss(num_classes=5, penalization_type="quadratic", use_logits=True)(z, y)
    torch.testing.assert_close(ours, theirs)
    # Independent: observed over chance-expected quadratic disagreement of soft counts.
    p, onehot = torch.softmax(z, dim=1), torch.eye(5)[y]
    w = (torch.arange(5).view(-1, 1) - torch.arange(5).view(1, -1)).float() ** 2 / 16
    observed = (w * (p.T @ onehot)).sum()
    expected = (w * torch.outer(p.sum(0), onehot.sum(0)) / len(y)).sum()
    torch.testing.assert_close(ours, observed / expected, rtol=1e-5, atol=1e-6)
    assert "Vargas" in get_method("qwk").source and "de la Torre" in get_method("qwk").source


@pytest.mark.parametrize("classes", [4, 5])
def test_poisson_targets_are_truncated_poissons_with_the_mode_at_the_grade(classes):
    matrix = target_matrix("poisson", classes, MethodParams(1e-3, eta=1.0))
    grades = np.arange(classes)
    for k in grades:
        pmf = poisson.pmf(grades, k + 0.5)
        np.testing.assert_allclose(matrix[k], pmf / pmf.sum(), rtol=1e-5)
    np.testing.assert_array_equal(matrix.argmax(axis=1), grades)
    # strictly the mode: no tie with the grade above, as dlordinal's lambda = k + 1 had
    top2 = np.sort(matrix, axis=1)[:, -2:]
    assert (top2[:, 1] - top2[:, 0] > 0.01).all()


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_sord_targets_use_diaz_and_marathes_squared_distance(alpha):
    matrix = target_matrix("sord", 5, MethodParams(1e-3, alpha=alpha))
    for k in range(5):
        scores = np.array([-alpha * (j - k) ** 2 for j in range(5)])
        expected = np.exp(scores) / np.exp(scores).sum()
        np.testing.assert_allclose(matrix[k], expected, rtol=1e-5)
    assert "squared" in get_method("sord").source


@pytest.mark.parametrize(
    "method", [m.name for m in registry().values() if m.target_matrix is not None]
)
def test_every_target_has_the_true_grade_as_its_mode_or_says_otherwise(method):
    """What `softgrade methods` shows per target method: whether row k's mode is k."""
    grid = get_method(method).search_grid()
    modes = [target_matrix(method, 5, params).argmax(axis=1) for params in grid]
    assert all((m == np.arange(5)).all() for m in modes), method


@pytest.mark.parametrize("classes", [4, 5])
def test_the_clm_and_binomial_layers_equal_dlordinals(classes):
    from dlordinal.output_layers import CLM, BinomialLayer

    torch.manual_seed(0)
    ours = get_head("clm").build(8, classes)[1]
    theirs = CLM(classes, link_function="logit")
    with torch.no_grad():
        theirs.thresholds_b_.fill_(-0.4)
        theirs.thresholds_a_.copy_(torch.randn(classes - 2))
    ours.load_state_dict(theirs.state_dict())
    x = _logits(50, 1)
    torch.testing.assert_close(ours(x), theirs(x))

    ours_b = get_head("binomial_layer").build(8, classes)
    theirs_b = BinomialLayer(in_features=8, num_classes=classes)
    ours_b.load_state_dict(theirs_b.state_dict())
    features = _logits(50, 8)
    torch.testing.assert_close(ours_b(features), theirs_b(features), rtol=1e-5, atol=1e-6)
    row_sums = ours_b(features).detach().sum(dim=1)
    assert math.isclose(float(row_sums.mean()), 1.0, rel_tol=1e-5)


def test_every_built_in_method_has_a_fixed_place_and_every_place_a_method():
    from engine.methods import BUILT_IN_ORDER
    from engine.methods.registry import _registry

    built_in = set(_registry("").keys())  # no plug-in packages
    assert set(BUILT_IN_ORDER) == built_in and len(BUILT_IN_ORDER) == len(built_in)
    assert BUILT_IN_ORDER[:5] == tuple(m for m in registry() if get_method(m).in_paper)
