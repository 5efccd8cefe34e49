"""Which saved models the Grade-a-film page shows: the method best on validation, and that
method's best seed with weights on this machine. No streamlit, so it is unit-tested."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def default_method(runs: pd.DataFrame) -> str:
    """The method with the lowest mean validation AMAE over its selected runs."""
    return str(runs.groupby("method")["val_amae"].mean().idxmin())


def best_seed(runs: pd.DataFrame, method: str, tasks: list[str]) -> tuple[int, dict[str, str]]:
    """The seed whose selected models of ``method`` did best on validation (mean AMAE over
    the tasks) among seeds with saved weights for every task, and those weights' paths.

    Args:
        runs: Selected runs: ``task``, ``method``, ``seed``, ``val_amae``, ``checkpoint_path``.
        method: The method whose models grade.
        tasks: Every task that must have a model.

    Returns:
        The seed and the checkpoint path by task; ``(-1, {})`` when no seed has weights on
        this machine for every task.
    """
    mine = runs[(runs["method"] == method) & runs["task"].isin(tasks)].copy()
    mine = mine[mine["checkpoint_path"].map(lambda p: isinstance(p, str) and Path(p).is_file())]
    complete = mine.groupby("seed").filter(lambda g: set(g["task"]) == set(tasks))
    if complete.empty:
        return -1, {}
    seed = int(complete.groupby("seed")["val_amae"].mean().idxmin())
    rows = complete[complete["seed"] == seed].set_index("task")["checkpoint_path"]
    return seed, {task: str(rows[task]) for task in tasks}
