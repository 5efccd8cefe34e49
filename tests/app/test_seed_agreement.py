"""pages.present.seed_agreement: the spread of P(grade) over seeds, the vote, and its chart."""

from __future__ import annotations

import pandas as pd
import pytest

from pages.present import seed_agreement as agreement

# Three seeds' KL probabilities for one film: two say KL 2, one says KL 3.
PROBS = {
    0: [0.0, 0.1, 0.6, 0.3, 0.0],
    1: [0.0, 0.1, 0.5, 0.4, 0.0],
    4: [0.0, 0.0, 0.35, 0.65, 0.0],
}


def test_seed_spread_has_mean_sd_range_and_votes_per_grade():
    spread = agreement.seed_spread(PROBS)
    assert list(spread["grade"]) == [0, 1, 2, 3, 4]
    two = spread.set_index("grade").loc[2]
    assert two["mean"] == pytest.approx((0.6 + 0.5 + 0.35) / 3)
    assert two["sd"] == pytest.approx(pd.Series([0.6, 0.5, 0.35]).std())
    assert (two["low"], two["high"]) == pytest.approx((0.35, 0.6))
    assert list(spread["votes"]) == [0, 0, 2, 1, 0]
    assert set(spread["seeds"]) == {3}
    assert agreement.consensus_grade(spread) == 2  # mean 0.483 against KL 3's 0.45


def test_consensus_follows_the_mean_not_the_majority():
    # Two seeds lean to KL 1 a little, one is sure of KL 3: the mean says KL 3.
    probs = {0: [0.0, 0.5, 0.0, 0.45, 0.05], 1: [0.0, 0.5, 0.0, 0.45, 0.05], 2: [0, 0, 0, 1, 0]}
    spread = agreement.seed_spread(probs)
    assert agreement.consensus_grade(spread) == 3
    assert agreement.agreement_sentence(spread, "KL") == "2 of 3 models say KL 1; 1 says KL 3."


def test_agreement_sentence_for_unanimous_and_single_seeds():
    assert (
        agreement.agreement_sentence(agreement.seed_spread({0: [0.9, 0.1], 1: [0.8, 0.2]}), "CPPD")
        == "2 of 2 models agree: CPPD 0."
    )
    single = agreement.seed_spread({7: [0.2, 0.8]})
    assert agreement.agreement_sentence(single, "CPPD") == "One model: CPPD 1."
    assert set(single["sd"]) == {0.0}


def test_seed_spread_refuses_no_seed_or_mixed_grade_counts():
    with pytest.raises(ValueError, match="no seed"):
        agreement.seed_spread({})
    with pytest.raises(ValueError, match="different numbers of grades"):
        agreement.seed_spread({0: [0.5, 0.5], 1: [0.2, 0.3, 0.5]})


def test_chart_layers_bars_whiskers_and_one_dot_per_seed_and_grade():
    spread = agreement.seed_spread(PROBS)
    points = agreement.seed_points(PROBS)
    spec = agreement.seed_agreement_chart(spread, points, "KL").to_dict()  # schema-validated
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["bar", "rule", "circle"]
    bars, whiskers, dots = spec["layer"]
    assert bars["encoding"]["y"]["field"] == "mean"
    assert (whiskers["encoding"]["y"]["field"], whiskers["encoding"]["y2"]["field"]) == (
        "low",
        "high",
    )
    dot_data = pd.DataFrame(spec["datasets"][dots["data"]["name"]])
    assert len(dot_data) == 3 * 5
    assert set(dot_data["seed"]) == {0, 1, 4}
    bar_data = pd.DataFrame(spec["datasets"][bars["data"]["name"]])
    assert bar_data.loc[bar_data["chosen"], "grade"].tolist() == [agreement.consensus_grade(spread)]
