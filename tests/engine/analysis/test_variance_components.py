"""Variance components of a factorial seeds design: a hand computation of the balanced ANOVA,
recovery of known components from simulated data, MixedLM against the ANOVA, and the
intervals' coverage under the model they assume."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.analysis import variance_components as vc


def _cells(table: list[list[float]]) -> pd.DataFrame:
    """Rows of splits, columns of inits."""
    return pd.DataFrame(
        [(s, i, v) for s, row in enumerate(table) for i, v in enumerate(row)],
        columns=["split", "init", "value"],
    )


def _simulate(
    rng: np.random.Generator, splits: int, inits: int, sd: tuple[float, float, float], mu=0.0
) -> pd.DataFrame:
    a = rng.normal(0, sd[0], splits)
    b = rng.normal(0, sd[1], inits)
    e = rng.normal(0, sd[2], (splits, inits))
    return _cells((mu + a[:, None] + b[None, :] + e).tolist())


# 3 splits x 2 inits. By hand: grand mean 26/6; split means 2, 4, 7; init means 3, 17/3.
# SS_split = 2·(49/9 + 1/9 + 64/9) = 76/3, MS_split = 38/3; SS_init = 3·(16/9 + 16/9) = 32/3,
# MS_init = 32/3; SS_total = 112/3, so SS_res = 4/3 on 2 df, MS_res = 2/3.
# σ²_res = 2/3, σ²_split = (38/3 − 2/3)/2 = 6, σ²_init = (32/3 − 2/3)/3 = 10/3.
HAND = [[1, 3], [2, 6], [6, 8]]


def test_balanced_anova_estimators_match_a_hand_computation():
    comp = vc.anova_components(_cells(HAND))
    assert comp.ms == pytest.approx((38 / 3, 32 / 3, 2 / 3))
    assert comp.df == (2, 1, 2)
    assert (comp.var_split, comp.var_init, comp.var_residual) == pytest.approx((6, 10 / 3, 2 / 3))
    assert comp.mean == pytest.approx(26 / 6) and comp.estimator == vc.ANOVA


def test_factorial_variance_and_satterthwaite_df_by_hand():
    comp = vc.anova_components(_cells(HAND))
    variance, df = vc.mean_variance(comp, split_weight=1 / 3)
    # 6/3 + (10/3)/2 + (2/3)/6 = (MS_S + MS_I − MS_E)/(S·I) = 68/18
    assert variance == pytest.approx(68 / 18)
    terms = (38 / 3 / 6) ** 2 / 2 + (32 / 3 / 6) ** 2 / 1 + (2 / 3 / 6) ** 2 / 2
    assert df == pytest.approx((68 / 18) ** 2 / terms)
    interval = vc.factorial_interval(comp)
    half = interval.high - comp.mean
    from scipy import stats

    assert half == pytest.approx(stats.t.ppf(0.975, df) * math.sqrt(68 / 18))


def test_design_interval_puts_the_test_train_ratio_on_the_split_part_only():
    comp = vc.anova_components(_cells(HAND))
    variance, _ = vc.mean_variance(comp, split_weight=1 / 3 + 0.43)
    assert variance == pytest.approx(6 * (1 / 3 + 0.43) + (10 / 3) / 2 + (2 / 3) / 6)
    assert vc.design_interval(comp, 0.43).se == pytest.approx(math.sqrt(variance))


def test_split_means_interval_is_a_t_interval_on_the_split_means():
    comp = vc.anova_components(_cells(HAND))
    interval = vc.split_means_interval(comp)
    means = np.array([2.0, 4.0, 7.0])
    assert interval.se == pytest.approx(means.std(ddof=1) / math.sqrt(3))
    assert interval.df == 2


def test_a_negative_component_estimate_is_set_to_zero_and_leaves_the_interval():
    # Init means equal: MS_init = 0 < MS_res, so σ²_init would be negative.
    comp = vc.anova_components(_cells([[0, 1], [3, 2], [1, 1], [5, 5]]))
    assert comp.var_init == 0.0 and comp.var_residual > 0
    variance, _ = vc.mean_variance(comp, split_weight=1 / 4)
    assert variance == pytest.approx(comp.var_split / 4 + comp.var_residual / 8)


def test_anova_estimators_are_unbiased_for_known_components():
    rng = np.random.default_rng(11)
    truth = (0.02, 0.01, 0.005)  # variances of split, init, residual
    sd = tuple(math.sqrt(v) for v in truth)
    raw = np.array(
        [
            (
                (c := vc.anova_components(_simulate(rng, 10, 4, sd))).ms[0] - c.ms[2],
                c.ms[1] - c.ms[2],
                c.ms[2],
            )
            for _ in range(2000)
        ]
    )
    # Before truncation the moment estimators are unbiased: mean over 2000 designs.
    assert raw[:, 0].mean() / 4 == pytest.approx(truth[0], rel=0.05)
    assert raw[:, 1].mean() / 10 == pytest.approx(truth[1], rel=0.1)
    assert raw[:, 2].mean() == pytest.approx(truth[2], rel=0.03)


def test_one_large_design_recovers_its_components():
    rng = np.random.default_rng(5)
    comp = vc.estimate(_simulate(rng, 200, 60, (2.0, 1.0, 0.5)))
    assert comp.var_split == pytest.approx(4.0, rel=0.25)
    assert comp.var_init == pytest.approx(1.0, rel=0.4)
    assert comp.var_residual == pytest.approx(0.25, rel=0.05)


def test_mixedlm_reml_equals_the_anova_on_a_balanced_design():
    rng = np.random.default_rng(3)
    cells = _simulate(rng, 12, 3, (1.5, 1.0, 0.6), mu=0.2)
    anova, reml = vc.anova_components(cells), vc.reml_components(cells)
    assert anova.var_split > 0 and anova.var_init > 0  # REML = ANOVA only inside the space
    assert reml.estimator == vc.REML
    for name in ("var_split", "var_init", "var_residual", "mean"):
        assert getattr(reml, name) == pytest.approx(getattr(anova, name), rel=1e-3, abs=1e-6)


def test_missing_cells_are_estimated_by_reml():
    rng = np.random.default_rng(8)
    cells = _simulate(rng, 40, 6, (1.0, 0.8, 0.4)).drop(index=[3, 17, 100])
    comp = vc.estimate(cells)
    assert comp.estimator == vc.REML and comp.n_cells == 237
    assert comp.var_split == pytest.approx(1.0, rel=0.5)
    assert comp.var_residual == pytest.approx(0.16, rel=0.25)


@pytest.mark.parametrize("sd", [(1.0, 0.5, 0.5), (0.3, 1.0, 0.5)])
def test_factorial_interval_covers_the_mean_under_the_crossed_model(sd):
    rng = np.random.default_rng(17)
    covered = [
        (i := vc.factorial_interval(vc.anova_components(_simulate(rng, 10, 4, sd, mu=0.3)))).low
        <= 0.3
        <= i.high
        for _ in range(600)
    ]
    assert 0.92 <= np.mean(covered) <= 0.985  # Satterthwaite is approximate: near 95 %


def test_split_means_interval_undercovers_when_inits_are_shared_and_vary():
    """The per-split interval ignores the init part every split shares: with a large init
    variance and few inits it covers far less than 95 % (what its assumption says)."""
    rng = np.random.default_rng(23)
    covered = [
        (
            i := vc.split_means_interval(
                vc.anova_components(_simulate(rng, 10, 2, (0.2, 1.0, 0.2)))
            )
        ).low
        <= 0.0
        <= i.high
        for _ in range(400)
    ]
    assert np.mean(covered) < 0.8


def _cells_of_a_study(rng: np.random.Generator, splits: int, inits: int) -> pd.DataFrame:
    """Per-run AMAE of two methods in a factorial study; method b's runs are a's plus a
    split effect, an init effect and noise."""
    rows = []
    split_effect = rng.normal(0, 0.02, splits)
    init_effect = rng.normal(0, 0.01, inits)
    for s in range(splits):
        for i in range(inits):
            seed = s * inits + i
            base = 0.4 + rng.normal(0, 0.03)
            diff = 0.03 + split_effect[s] + init_effect[i] + rng.normal(0, 0.005)
            for method, value in (("nominal", base), ("beta", base - diff)):
                rows.append(
                    {
                        "study_id": "s",
                        "task": "KL",
                        "method": method,
                        "seed": seed,
                        "split_seed": s,
                        "init_seed": i,
                        "amae": value,
                    }
                )
    return pd.DataFrame(rows)


def test_components_table_has_one_row_per_pair_with_every_interval():
    cells = _cells_of_a_study(np.random.default_rng(2), 8, 3)
    table = vc.components_table(cells, {"KL": 0.43}, metrics=("amae",))
    assert list(table.columns) == list(vc.COMPONENT_COLUMNS)
    assert len(table) == 1
    row = table.iloc[0]
    assert (row.n_splits, row.n_inits, row.n_cells) == (8, 3, 24)
    assert row.share_split + row.share_init + row.share_residual == pytest.approx(1)
    # The design-corrected interval is wider than the factorial one (it adds r·σ²_split).
    assert row.ci_design_high - row.ci_design_low > row.ci_factorial_high - row.ci_factorial_low
    assert 0 < row.rho_design < 1


def test_cell_frame_and_is_factorial_tell_a_factorial_study_from_independent_seeds():
    factors = pd.DataFrame({"seed": range(6), "split_seed": [0, 0, 1, 1, 2, 2]})
    factors["init_seed"] = [0, 1, 0, 1, 0, 1]
    assert vc.is_factorial(factors)
    independent = pd.DataFrame({"seed": range(5), "split_seed": range(5), "init_seed": range(5)})
    assert not vc.is_factorial(independent)
    per_run = pd.DataFrame({"seed": [0, 3], "task": "KL", "method": "beta", "amae": [0.1, 0.2]})
    merged = vc.cell_frame(per_run, factors)
    assert merged[["split_seed", "init_seed"]].values.tolist() == [[0, 0], [1, 1]]
