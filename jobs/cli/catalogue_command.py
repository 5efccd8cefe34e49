"""``softgrade methods`` and ``softgrade metrics``: what a study can name, read from the registries.

- ``methods [--json]``: every registered method (`engine.methods`), grouped by family: its
  name (what a study YAML's ``methods:`` lists), label, head, how it predicts a grade (its
  head's rule), for a target-distribution method whether the true grade is the mode of its
  target row in every configuration, hyper-parameters with their search grid, grid size and
  where the search space comes from. Methods added through ``SOFTGRADE_METHOD_PACKAGES`` are
  listed too, as the worker will see them.
- ``metrics [--json]``: every registered metric (`engine.analysis.metrics`): name, label,
  direction, range, what it is computed from and its meaning, with the study's primary
  metric and the metric the search selects runs by marked.

Both print text for a person and, with ``--json``, one JSON document for a script. They read
the registries only: no store is opened (``methods`` builds the target matrices, with torch).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from typing import Any

from engine.analysis import metrics as metric_registry
from engine.methods import (
    FAMILY_DESCRIPTIONS,
    PLUGIN_VARIABLE,
    Method,
    method_names,
    methods_by_family,
    registry,
)
from engine.methods.heads import PREDICTION_RULES, get_head
from engine.vocab import TASK_CLASSES

WIDTH = 100
INDENT = "    "


# --------------------------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------------------------


def method_record(method: Method) -> dict[str, Any]:
    """One method as plain data (the ``--json`` form)."""
    return {
        "name": method.name,
        "label": method.label,
        "family": method.family,
        "description": method.description,
        "head": method.head,
        "prediction_rule": get_head(method.head).rule,
        "target_matrix": method.target_matrix is not None,
        "grade_is_target_mode": grade_is_target_mode(method),
        "in_paper": method.in_paper,
        "hyperparameters": [
            {"name": h.name, "label": h.label, "values": list(h.values), "meaning": h.meaning}
            for h in method.hyperparameters
        ],
        "grid_size": len(method.search_grid()),
        "source": method.source,
    }


def grade_is_target_mode(method: Method) -> bool | None:
    """Whether, in every configuration and for both tasks' numbers of grades, row k of the
    method's target matrix has its maximum at grade k alone; None without a target matrix."""
    build = method.target_matrix
    if build is None:
        return None
    for classes in sorted(set(TASK_CLASSES.values())):
        for params in method.search_grid():
            rows = build(classes, params)
            for grade, row in enumerate(rows):
                others = [p for j, p in enumerate(row) if j != grade]
                if not all(row[grade] > p for p in others):
                    return False
    return True


def methods_text() -> str:
    """The registry as text: one block per family, one per method."""
    lines: list[str] = []
    for family, members in methods_by_family().items():
        lines.append(f"{family.capitalize()} ({len(members)} methods)")
        lines += _wrapped(FAMILY_DESCRIPTIONS[family], indent="  ")
        for method in members:
            lines += ["", *_method_lines(method)]
        lines.append("")
    example = ", ".join(method_names()[:2])
    lines += _wrapped(
        f"A study file lists methods by name (methods: [{example}, ...]). {PLUGIN_VARIABLE} "
        "(comma-separated importable packages) adds methods from outside the checkout; "
        "docs/add-a-method.md says how.",
        indent="",
    )
    return "\n".join(lines)


def _method_lines(method: Method) -> list[str]:
    paper = ", in the paper" if method.in_paper else ""
    grid = len(method.search_grid())
    lines = [
        f"  {method.name}  {method.label}  ({method.head} head{paper}; "
        f"{grid} configuration{'s' * (grid != 1)})"
    ]
    lines += _wrapped(method.description)
    rule = get_head(method.head).rule
    lines += _wrapped(f"predicts: {PREDICTION_RULES[rule]}")
    mode = grade_is_target_mode(method)
    if mode is not None:
        lines += _wrapped(
            "target: the true grade is the single most likely grade of its target, in every "
            "configuration"
            if mode
            else "target: in some configuration the true grade is NOT the most likely grade "
            "of its target"
        )
    for param in method.hyperparameters:
        values = ", ".join(f"{v:g}" for v in param.values)
        label = f" ({param.label})" if param.label != param.name else ""
        lines += _wrapped(f"{param.name}{label} in {{{values}}}: {param.meaning}")
    lines += _wrapped(f"search space from: {method.source}")
    return lines


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def metric_record(metric: metric_registry.Metric) -> dict[str, Any]:
    """One metric as plain data (the ``--json`` form)."""
    return {
        "name": metric.name,
        "label": metric.label,
        "direction": metric.direction,
        "range": list(metric.range),
        "range_in_grade_steps": metric.scales_with_grades,
        "range_up_to_grades": metric.counts_grades,
        "range_text": metric.range_text,
        "kind": metric.kind,
        "meaning": metric.meaning,
        "primary": metric.name == metric_registry.PRIMARY_METRIC,
        "selection": metric.name == metric_registry.SELECTION_METRIC,
    }


def metrics_text() -> str:
    """The metric registry as text, grouped by what each metric is computed from."""
    lines: list[str] = []
    titles = {
        metric_registry.FROM_CONFUSION: "Metrics of the predicted grade (from the stored "
        "confusion counts)",
        metric_registry.FROM_PROBABILITIES: "Metrics of the predicted distribution (from the "
        "stored probabilities)",
        metric_registry.FROM_CALIBRATION: "Metrics calibrated on each run's validation films "
        "(a conformal set on its test films; `softgrade stats` compares them)",
    }
    for kind in metric_registry.KINDS:
        lines.append(f"{titles[kind]}:")
        for name in metric_registry.metric_names(kind):
            lines += ["", *_metric_lines(metric_registry.get_metric(name))]
        lines.append("")
    grades = ", ".join(f"{n} for {task}" for task, n in TASK_CLASSES.items())
    primary = metric_registry.get_metric(metric_registry.PRIMARY_METRIC)
    selection = metric_registry.get_metric(metric_registry.SELECTION_METRIC)
    lines += _wrapped(
        f"Primary metric: {primary.label} ({primary.name}), the study's confirmatory endpoint. "
        f"Selection metric: {selection.label} ({selection.name}) on the validation films, what "
        f"each search selects its run by. J is the number of grades ({grades}).",
        indent="",
    )
    return "\n".join(lines)


def _metric_lines(metric: metric_registry.Metric) -> list[str]:
    marks = [
        mark
        for mark, applies in (
            ("primary", metric.name == metric_registry.PRIMARY_METRIC),
            ("selection", metric.name == metric_registry.SELECTION_METRIC),
        )
        if applies
    ]
    marked = f"  [{', '.join(marks)}]" if marks else ""
    head = f"  {metric.name}  {metric.label}  ({metric.direction} is better, {metric.range_text})"
    return [head + marked, *_wrapped(metric.meaning)]


def _wrapped(text: str, indent: str = INDENT) -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    )


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


def cmd_methods(args: argparse.Namespace) -> int:
    """Print the method registry."""
    if args.json:
        return _print(_json([method_record(m) for m in registry().values()]))
    return _print(methods_text())


def cmd_metrics(args: argparse.Namespace) -> int:
    """Print the metric registry."""
    if args.json:
        return _print(_json([metric_record(m) for m in metric_registry.REGISTRY.values()]))
    return _print(metrics_text())


def _json(records: list[dict[str, Any]]) -> str:
    return json.dumps(records, indent=2, ensure_ascii=False)


def _print(text: str) -> int:
    """Print ``text``; a reader that stops early (``softgrade methods | head``) is no error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python's advice (docs: "Note on SIGPIPE"): point stdout at devnull so the flush at
        # exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``methods`` and ``metrics`` on the CLI's subcommands."""
    for name, func, help_text in (
        ("methods", cmd_methods, "list the training methods a study can name, by family"),
        ("metrics", cmd_metrics, "list the metrics, with the primary and selection metric"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--json", action="store_true", help="one JSON document for a script")
        p.set_defaults(func=func)
