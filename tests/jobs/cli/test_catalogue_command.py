"""`softgrade methods` and `softgrade metrics` list the registries; a study naming an unknown
method is refused in one line that names the valid ones and points to `softgrade methods`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from engine.analysis import metrics
from engine.methods import FAMILIES, PLUGIN_VARIABLE, method_names, methods_by_family, registry
from jobs.cli.main import main
from tests.helpers.studies import REPO_ROOT


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_methods_lists_every_method_under_its_family_with_its_search_space(capsys):
    out = _run(capsys, "methods")
    headings = [out.index(f"{family.capitalize()} (") for family in methods_by_family()]
    assert headings == sorted(headings)  # families in FAMILIES order
    bounds = [*headings, len(out)]
    for position, (family, members) in enumerate(methods_by_family().items()):
        block = out[bounds[position] : bounds[position + 1]]
        assert f"{family.capitalize()} ({len(members)} methods)" in block
        for method in members:
            assert f"  {method.name}  {method.label}  (" in block
            for param in method.hyperparameters:
                values = ", ".join(f"{v:g}" for v in param.values)
                assert f"{param.name}" in block and f"{{{values}}}" in block
    for method in registry().values():
        # The source is wrapped at 100 columns: compare its words, not its line breaks.
        assert " ".join(f"search space from: {method.source}".split()) in " ".join(out.split())
    assert PLUGIN_VARIABLE in out


def test_methods_json_is_the_registry_in_order(capsys):
    records = json.loads(_run(capsys, "methods", "--json"))
    assert [r["name"] for r in records] == list(method_names())
    for record in records:
        method = registry()[record["name"]]
        assert record["family"] == method.family in FAMILIES
        assert record["source"] == method.source
        assert record["grid_size"] == len(method.search_grid())
        assert [(h["name"], h["values"]) for h in record["hyperparameters"]] == [
            (h.name, list(h.values)) for h in method.hyperparameters
        ]
        assert record["target_matrix"] == (method.target_matrix is not None)


def test_metrics_lists_every_metric_and_marks_the_primary_and_selection(capsys):
    out = _run(capsys, "metrics")
    for metric in metrics.REGISTRY.values():
        line = next(x for x in out.splitlines() if x.startswith(f"  {metric.name}  "))
        assert metric.label in line
        assert f"{metric.direction} is better, {metric.range_text}" in line
        assert ("primary" in line) == (metric.name == metrics.PRIMARY_METRIC)
        assert ("selection" in line) == (metric.name == metrics.SELECTION_METRIC)
    primary = metrics.REGISTRY[metrics.PRIMARY_METRIC].label
    assert f"Primary metric: {primary}" in out


def test_metrics_json_has_one_primary_and_one_selection_metric(capsys):
    records = json.loads(_run(capsys, "metrics", "--json"))
    assert [r["name"] for r in records] == list(metrics.REGISTRY)
    assert [r["name"] for r in records if r["primary"]] == [metrics.PRIMARY_METRIC]
    assert [r["name"] for r in records if r["selection"]] == [metrics.SELECTION_METRIC]
    for record in records:
        metric = metrics.REGISTRY[record["name"]]
        assert record["direction"] == metric.direction
        assert tuple(record["range"]) == metric.range
        assert record["kind"] == metric.kind


@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_study_naming_an_unknown_method_is_refused_naming_the_valid_ones(
    command, home, tmp_path, capsys
):
    study = tmp_path / "study.yaml"
    study.write_text(
        textwrap.dedent(
            f"""\
            name: typo
            dataset: {{kind: phantom, n_images: 60, n_joint: 30, seed: 0}}
            tasks: [KL]
            methods: [{method_names()[0]}, ordinal_magic]
            seeds: 1
            """
        )
    )
    assert main([command, str(study)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "'ordinal_magic'" in err
    for name in method_names():
        assert name in err
    assert "softgrade methods" in err
    assert not (home / "softgrade.duckdb").exists()  # refused before anything is written


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_a_method_from_a_plugin_package_is_listed(tmp_path):
    package = tmp_path / "lab_methods"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "plain_ce.py").write_text(
        textwrap.dedent(
            """\
            from engine.methods.base import LEARNING_RATE, REGULARISED_LOSS, Method

            def _loss(num_classes, params):
                import torch
                return torch.nn.CrossEntropyLoss()

            METHOD = Method(
                name="plain_ce",
                label="Plain CE",
                family=REGULARISED_LOSS,
                description="Cross-entropy, from a lab's own package.",
                hyperparameters=(LEARNING_RATE,),
                source="the lab's own choice",
                loss=_loss,
            )
            """
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(tmp_path)]),
        PLUGIN_VARIABLE: "lab_methods",
        "SOFTGRADE_HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "jobs", "methods", "--json"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed = {r["name"]: r for r in json.loads(done.stdout)}
    assert listed["plain_ce"]["source"] == "the lab's own choice"
    assert set(method_names()) < set(listed)


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    # The reading end closes before the command writes, as `softgrade methods | head -1`.
    child = subprocess.Popen(
        [sys.executable, "-m", "jobs", "methods"],
        cwd=REPO_ROOT,
        env={**os.environ, "SOFTGRADE_HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 0
    assert "Traceback" not in err


def test_methods_says_how_each_predicts_and_whether_its_target_peaks_at_the_grade(capsys):
    records = {r["name"]: r for r in json.loads(_run(capsys, "methods", "--json"))}
    assert records["corn"]["prediction_rule"] == "median"
    assert all(r["prediction_rule"] == "mode" for n, r in records.items() if n != "corn")
    for name, record in records.items():
        has_matrix = registry()[name].target_matrix is not None
        assert record["grade_is_target_mode"] is (True if has_matrix else None), name
    text = _run(capsys, "methods")
    assert "predicts: the median grade" in text
    assert "the true grade is the single most likely grade of its target" in text


def test_a_target_whose_peak_is_not_the_grade_is_said_so():
    import numpy as np

    from engine.methods import TARGET_DISTRIBUTION, Method
    from engine.methods.base import LEARNING_RATE
    from jobs.cli.catalogue_command import grade_is_target_mode

    def shifted(classes, params):  # every row peaks one grade above (the last wraps)
        return np.roll(np.eye(classes) * 0.7 + 0.3 / classes, 1, axis=1)

    method = Method(
        name="shifted",
        label="Shifted",
        family=TARGET_DISTRIBUTION,
        description="x",
        hyperparameters=(LEARNING_RATE,),
        source="a test",
        loss=lambda classes, params: None,  # type: ignore[arg-type,return-value]
        target_matrix=shifted,
    )
    assert grade_is_target_mode(method) is False
