"""Tables and sentences of the Search & learning curves page (no streamlit, unit-testable).

The numbers come from `engine.analysis.explorer`; this module only chooses columns, orders rows,
marks the selected configuration and words what a reader needs to read each view.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd
from pandas.io.formats.style import Styler

from engine.analysis import explorer
from engine.analysis.compare import planned_runs
from engine.analysis.explorer import SEARCH_PARAMS, in_flight_point
from engine.analysis.table_columns import CONFIGURATIONS
from engine.methods import hyperparameters, is_registered, registry
from pages.present import protocol_text
from pages.present.science_charts import CLIPPED_MARK
from pages.present.tables import method_title, param_label
from pages.present.user_text import plain

SELECTED_MARK = "✓ selected"
SELECTED_BACKGROUND = "background-color: rgba(255, 215, 0, 0.25); font-weight: bold"
WAITING_STATUSES = ("queued", "running")


# What each view shows and how to read it.
def intro_note() -> str:
    """What the page shows, with the declared selection rule."""
    return (
        "For each task, method and seed, a study trains several configurations of the paper's "
        f"Table 3 hyper-parameters and keeps {protocol_text.selection_sentence()}. The other "
        "result pages show only that selected run; this page shows every configuration tried, "
        "how each hyper-parameter affects validation AMAE across seeds, and how the selected runs "
        "trained, epoch by epoch."
    )


def rank_note(spec: Mapping[str, Any] | str | None = None) -> str:
    """How to read the Rank and Epochs columns, from the declared rules and the study's
    settings (``spec``)."""
    note = (
        f"Rank 1 is {protocol_text.selection_sentence()}, scored on the validation films: "
        "that run is the selected model whose test-set results the other pages show. Epochs "
        f"run counts every epoch trained: each run trained for "
        f"{protocol_text.stopping_sentence(spec)}; Best epoch is that kept epoch."
    )
    if protocol_text.search_sentence(spec) is not None:
        note += (
            " This study's search was pruned: a run the pruner stopped had already lost at "
            "that epoch, so it is never selected and ranks after every run that trained on."
        )
    return note


STRIP_NOTE = (
    "Each column is one configuration (best mean first), each dot one seed's run of it. "
    "Dots low in every seed mean a reliably good configuration; rings on different "
    "columns mean the choice depends on the seed."
)
SUMMARY_NOTE = (
    "Per value, over every run and seed. Searches won: how many seeds' searches "
    "selected a configuration with this value."
)
PRUNED_SUMMARY_NOTE = (
    "Per value, over every seed's runs that trained to their end. Stopped: runs with this "
    "value the pruner stopped; their AMAE is their early epochs', so they count in Runs and "
    "in no mean (a dash where every run with the value was stopped). Searches won: how many "
    "seeds' searches selected a configuration with this value."
)


def summary_note(summary: pd.DataFrame) -> str:
    """The caption under the per-value table: it says so where the pruner stopped runs."""
    return PRUNED_SUMMARY_NOTE if _any_stopped(summary) else SUMMARY_NOTE


def _any_stopped(summary: pd.DataFrame) -> bool:
    return "n_pruned" in summary and bool((summary["n_pruned"] > 0).any())


def curves_note(spec: Mapping[str, Any] | str | None = None) -> str:
    """How to read the learning curves, from the declared rules and the study's settings."""
    return (
        "One line per selected run. The dot on each line is its best epoch, "
        f"{protocol_text.kept_epoch_phrase()}; each run trained for "
        f"{protocol_text.stopping_sentence(spec)}. A validation loss that climbs while the "
        "training loss keeps falling is overfitting."
    )


def clipped_sentence(lines: pd.DataFrame) -> str | None:
    """What the panels clipped and why, naming the runs; None when nothing was clipped.

    Args:
        lines: `engine.analysis.explorer.overlay` rows, as the chart draws them.
    """
    clipped = explorer.clipped_runs(explorer.clip_diverged(lines))
    if clipped.empty:
        return None
    parts = []
    for row in clipped.itertuples():
        names = ", ".join(_line_name(line) for line in row.lines)
        parts.append(
            f"{explorer.CURVE_LABELS.get(row.series, row.series)}: {row.epochs} epoch(s) of "
            f"{row.runs} run(s) ({names}) reached up to {row.largest:.3g}; they are drawn at "
            f"the ceiling {row.ceiling:.3g} as {CLIPPED_MARK}"
        )
    return (
        "Diverged epochs do not set the scale. "
        + "; ".join(parts)
        + ". Read overfitting from the other epochs; hover a triangle for its value."
    )


def _line_name(label: str) -> str:
    return label if label.startswith("seed ") else method_title(label)


NO_EPOCHS = (
    "No per-epoch rows are stored for this study's selected runs, so there are no curves to "
    "draw. Runs trained by SoftGrade's worker store one row per epoch; runs imported without "
    "them have only their final numbers (see the Search section)."
)

#: The configurations table's columns and headers (`engine.analysis.table_columns`).
CONFIGURATION_COLUMNS: dict[str, str] = {
    k: CONFIGURATIONS.column(k).header for k in CONFIGURATIONS.view("shown")
}


def waiting_studies(studies: pd.DataFrame) -> list[str]:
    """Names of the queued or running studies that have no finished run stored yet."""
    if studies.empty:
        return []
    waiting = studies["status"].isin(WAITING_STATUSES) & (studies["runs_stored"] == 0)
    return [str(name) for name in studies.loc[waiting, "name"]]


def one_search(search: pd.DataFrame, task: str, method: str, seed: int) -> pd.DataFrame:
    """The runs of one (task, method, seed) search."""
    mask = (search["task"] == task) & (search["method"] == method) & (search["seed"] == seed)
    return search[mask]


def configuration_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Every configuration of one search, best validation AMAE first.

    Args:
        runs: `engine.analysis.explorer.search_table` rows of one search.

    Returns:
        The columns of :data:`CONFIGURATION_COLUMNS` under their display names, without the
        hyper-parameters this method does not have; ``Selected`` reads ``✓ selected`` on
        the selected run and is empty elsewhere.
    """
    table = runs.sort_values(["rank", "config_index"])[list(CONFIGURATION_COLUMNS)]
    unused = [p for p in SEARCH_PARAMS if table[p].isna().all()]
    table = table.drop(columns=unused)
    table["selected"] = table["selected"].map({True: SELECTED_MARK, False: ""})
    if explorer.stopped_runs(runs).any():
        # Said in the row: its few epochs are the pruner's doing, not early stopping's.
        stopped = explorer.stopped_runs(runs).loc[table.index]
        table.loc[stopped, "selected"] = [
            stopped_by_pruner_text(int(n)) for n in runs.loc[stopped[stopped].index, "epochs_run"]
        ]
    return table.rename(columns=CONFIGURATION_COLUMNS).reset_index(drop=True)


def stopped_by_pruner_text(epochs: int) -> str:
    """The Selected cell of a run a pruned search stopped (never selected)."""
    return f"stopped by the pruner after epoch {epochs}"


def style_configurations(table: pd.DataFrame) -> Styler:
    """:func:`configuration_table` with the selected row highlighted and numbers rounded."""
    h = CONFIGURATION_COLUMNS
    formats = {h["val_amae"]: "{:.4f}", h["duration_s"]: "{:.1f}"}
    formats.update({param_label(p): "{:g}" for p in SEARCH_PARAMS if param_label(p) in table})

    def highlight(row: pd.Series) -> list[str]:
        style = SELECTED_BACKGROUND if row[h["selected"]] == SELECTED_MARK else ""
        return [style] * len(row)

    return table.style.apply(highlight, axis=1).format(formats, na_rep="—")


def planned_configs(spec: Any, method: str) -> int | None:
    """Configurations a search of ``method`` plans under the study's budget (None: unknown).

    Args:
        spec: the study's spec, as stored (JSON text) or as a mapping.
        method: the method searched.
    """
    if not isinstance(spec, Mapping):
        try:
            spec = json.loads(spec) if spec else {}
        except (TypeError, json.JSONDecodeError):
            return None
    budget = spec.get("budget")
    return planned_runs(method, int(budget)) if budget and is_registered(method) else None


def search_sentence(
    runs: pd.DataFrame, *, planned: int | None = None, running: bool = False
) -> str:
    """One sentence on a search: how many configurations, which one won and how it trained."""
    chosen = runs[runs["selected"]]
    tried = len(runs)
    of = f" of the {planned} planned" if planned and planned > tried else ""
    text = f"This search tried **{tried}**{of} configuration{'s' * (tried != 1)}."
    if chosen.empty:
        return text + " None is selected yet."
    best = chosen.iloc[0]
    epochs = int(best["epochs_run"])
    # The configuration's text comes from the store (an import's too): escaped as a name.
    text += (
        f" Configuration **{int(best['config_index'])}** ({plain(best['config_key'])}) has the "
        f"lowest validation AMAE, **{best['val_amae']:.4f}**, and is the selected model: it "
        f"trained {epochs} epoch{'s' * (epochs != 1)} and keeps the weights of epoch "
        f"{int(best['best_epoch'])}."
    )
    if running and of:
        text += " The search is still running, so this is the best so far."
    return text


def parameters_of(effects: pd.DataFrame) -> list[str]:
    """The hyper-parameters that have values in ``effects``, in the search's order."""
    present = set(effects["param"])
    return [p for p in SEARCH_PARAMS if p in present]


def param_meaning(param: str, methods: list[str]) -> str:
    """What ``param`` does, from the method registry, for the methods that search it.

    Methods may share a parameter's name but not its meaning (α is a geometric target's
    spread for one method and a distance weight's power for another): then each method's
    own meaning is given, by method. A method this checkout does not know takes the first
    registered meaning of that name.
    """
    known = registry()
    fallback = hyperparameters().get(param)
    meanings: dict[str, list[str]] = {}
    for method in methods:
        record = (
            next((h for h in known[method].hyperparameters if h.name == param), fallback)
            if method in known
            else fallback
        )
        text = record.meaning.rstrip(".") if record else "a searched setting"
        meanings.setdefault(text, []).append(method_title(method))
    if len(meanings) == 1:
        return next(iter(meanings))
    return "; ".join(f"for {', '.join(names)}, {text}" for text, names in meanings.items())


def parameter_reading(param: str, effects: pd.DataFrame) -> str:
    """How to read one hyper-parameter's strip, naming the methods that search it."""
    searched = [str(m) for m in dict.fromkeys(effects["method"])]
    methods = ", ".join(plain(method_title(m)) for m in searched)  # markdown: names as text
    stopped = bool(explorer.stopped_runs(effects).any())
    mean = (
        "the mean over the runs with that value that trained to their end (a cross is a run "
        "the pruner stopped: its early epochs' AMAE, in no mean)"
        if stopped
        else "the mean over every run with that value"
    )
    return (
        f"**{param_label(param)}**: {param_meaning(param, searched)}. "
        f"Searched by {methods}. Each dot is one run (one configuration in one seed) at the "
        f"value it used; its height is the validation AMAE (lower is better). The black tick is "
        f"{mean}, and ringed dots are the runs their search selected. Ticks that fall or rise "
        "steadily say the value matters; flat ticks with rings spread over every value say it "
        "matters little next to the seed and the other hyper-parameters."
    )


def summary_table(summary: pd.DataFrame, param: str) -> pd.DataFrame:
    """`engine.analysis.explorer.parameter_summary` rows of one parameter, for display."""
    rows = summary[summary["param"] == param]
    stopped = (
        {"Stopped": rows["n_pruned"].to_numpy()} if _any_stopped(summary) else {}
    )  # only where the pruner stopped runs: a full search's table stays as it was
    return pd.DataFrame(
        {
            "Method": [method_title(m) for m in rows["method"]],
            param_label(param): [f"{v:g}" for v in rows["value"]],
            "Runs": rows["n_runs"].to_numpy(),
            **stopped,
            "Seeds": rows["n_seeds"].to_numpy(),
            "Mean val AMAE": [_four(v) for v in rows["val_amae_mean"]],
            "Median val AMAE": [_four(v) for v in rows["val_amae_median"]],
            "SD": [_four(v) for v in rows["val_amae_std"]],
            "Searches won": [
                f"{n} ({share:.0%})"
                for n, share in zip(rows["n_selected"], rows["selected_share"], strict=True)
            ],
        }
    )


def live_point(
    job: Any, stored_run_ids: set[str], *, task: str, method: str | None, seed: int | None
) -> tuple[pd.DataFrame, str | None]:
    """The run a running job is training, as a chart point and a sentence.

    Args:
        job: the study's `store.jobs.list_jobs` row (``current_run``, ``current_epoch``,
            ``latest_val_amae``), or None.
        stored_run_ids: runs already in the store: a finished run is not "training now".
        task, method, seed: the curves shown; the point is drawn only when the run
            belongs to them (``method`` or ``seed`` None: any).

    Returns:
        `engine.analysis.explorer.in_flight_point`'s row (empty when not drawn) and a sentence
        naming
        the run, or None when the job reports no run in training.
    """
    empty = in_flight_point(None, None, None)
    if job is None:
        return empty, None
    values = [_present(job.get(k)) for k in ("current_run", "current_epoch", "latest_val_amae")]
    point = in_flight_point(*values)
    if point.empty or values[0] in stored_run_ids:
        return empty, None
    row = point.iloc[0]
    sentence = (
        f"Training now: {row['task']} · {method_title(row['method'])} · seed {row['seed']} · "
        f"configuration {row['config_index']}, epoch {row['epoch']}, validation AMAE "
        f"{row['value']:.4f} (the last epoch any worker slot reported; its curve is stored when "
        "the run ends)."
    )
    shown = row["task"] == task and method in (None, row["method"]) and seed in (None, row["seed"])
    return (point if shown else empty), sentence


def _four(value: float) -> str:
    """Four decimals; an em dash where there is no value (an SD of one run)."""
    return "—" if pd.isna(value) else f"{value:.4f}"


def _present(value: Any) -> Any:
    """None for pandas' missing markers."""
    return None if value is None or pd.isna(value) else value
