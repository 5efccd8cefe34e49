"""Replay a pruner over a full search's recorded curves: what it would have stopped and saved.

    python bench/pruner_replay.py STORE [--full "paper protocol (full)"] \\
        [--pruned "paper protocol (pruned, asha)" --journals HOME/pruning/STUDY_ID] \\
        [--settings asha,asha:30:2,median:20,...] [--json out.json]

A pruner's decisions depend only on the values each configuration reports after every
epoch (`engine.pruning.PRUNING`), and the full search recorded every epoch of every
configuration (``epoch_metrics``). So a pruned search can be replayed without a GPU:

* each run of the full study reports, after every epoch, what `engine.train.Trainer.fit`
  reports: the validation AMAE of the epoch early stopping keeps so far (best validation loss,
  `engine.protocol.EARLY_STOPPING`), to a trial of its search's shared Optuna study, through
  the lanes' own class (`jobs.worker.pruning.SearchTrial`: same journal storage, study names,
  pruner (`engine.pruning.make_pruner`), report and finish); a run whose stopping rule ends it
  at that epoch has finished whatever the pruner says, as in ``fit``;
* asynchronous pruners judge a run against the runs that reached a rung before it, so the
  order matters. The replay simulates the worker's lanes (``--lanes``, default: the most runs
  the full study trained at once): runs leave one queue in the full study's recorded start
  order, each epoch lasts what it lasted in the full study (a lane's first-epoch compile
  counted as the run's median epoch: a warm machine), and a lane freed by a stopped run takes
  the next one at once. ``--order recorded`` instead keeps every run's recorded start;
* a run not stopped trains exactly its full-study curve (the replay assumes a run does not
  depend on being watched), so its validation AMAE and test predictions are the full study's;
  the selected run of each search is then chosen by the engine's own rule
  (`store.runs.select_best_runs`: never a stopped run, lowest validation AMAE, lower
  configuration number on ties) in a scratch copy of the store, and the Statistics-tab
  decisions come from `bench/pruned_search.py`'s `agreement` and `verdicts` on that copy
  against an untouched copy. A search whose every run was stopped has no selected run: its
  comparisons are counted as unknown (no prediction is made up).

With ``--pruned`` and ``--journals`` it first checks itself: the real pruned study's own
curves replayed in the order its Optuna journals recorded must give exactly its stops; then
the replay of the full study's curves with the real study's setting is compared with what the
real pruned study did (GPU nondeterminism and lane order make that one inexact).

The store given is never changed: it is copied into a scratch folder first.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pruned_search import _markdown, agreement, verdicts  # noqa: E402

from engine import protocol  # noqa: E402
from engine.pruning import NO_PRUNER, SearchSpec  # noqa: E402
from jobs.worker.pruning import PruningTask, SearchTrial, search_name  # noqa: E402
from store import runs as store_runs  # noqa: E402
from store.db import connect  # noqa: E402

FULL_STUDY = "paper protocol (full)"
#: The settings swept by default: the real study's (asha, first rung 10, η 3), later first
#: rungs, a gentler η, the median rule and Hyperband. ``pruner[:min_epochs[:η]]``.
DEFAULT_SETTINGS = (
    "asha",
    "asha:20",
    "asha:30",
    "asha:10:2",
    "asha:20:2",
    "asha:30:2",
    "median:10",
    "median:20",
    "median:30",
    "hyperband",
    "hyperband:20",
    "hyperband:10:2",
)
#: A first epoch this many times the run's median epoch waited for a compile.
COMPILE_FACTOR = 5.0


@dataclass(frozen=True)
class Curve:
    """One run's recorded epochs.

    Attributes:
        run_id: the run.
        search: its (task, method, seed).
        config_index: its configuration number in the search.
        val_loss: validation loss after each epoch (what early stopping watches).
        val_amae: validation AMAE after each epoch.
        seconds: each epoch's recorded wall.
        start_s: when it started, seconds after the study's first run started.
    """

    run_id: str
    search: tuple[str, str, int]
    config_index: int
    val_loss: tuple[float, ...]
    val_amae: tuple[float, ...]
    seconds: tuple[float, ...]
    start_s: float = 0.0

    @property
    @cache  # noqa: B019 (frozen and hashed by value: one entry per curve)
    def warm_seconds(self) -> tuple[float, ...]:
        """``seconds`` with a first epoch that waited for a compile counted as the median."""
        median = statistics.median(self.seconds)
        first = self.seconds[0]
        if len(self.seconds) > 1 and first > COMPILE_FACTOR * median:
            first = median
        return (first, *self.seconds[1:])


@cache
def kept_epochs(curve: Curve) -> tuple[int, ...]:
    """After each epoch, the epoch early stopping keeps so far (1-based), as
    `engine.train.Trainer.fit` decides it: the best finite monitored value, a diverged
    (non-finite) first epoch kept until a finite one beats it."""
    best_epoch, best = 0, math.inf
    kept = []
    for epoch, (loss, amae) in enumerate(zip(curve.val_loss, curve.val_amae, strict=True), 1):
        watched = protocol.EARLY_STOPPING.to_minimise({"val_loss": loss, "val_amae": amae})
        finite = math.isfinite(watched)
        if (finite and watched < best) or best_epoch == 0:
            best_epoch, best = epoch, watched if finite else math.inf
        kept.append(best_epoch)
    return tuple(kept)


#: What a replay may report after each epoch: the lanes' value (``amae``), or, as a what-if,
#: the validation loss of the epoch early stopping keeps (``loss``: the issue's "median rule
#: on validation loss"; the lanes do not offer it).
REPORTS = ("amae", "loss")


@cache
def reported_values(curve: Curve, report: str = "amae") -> tuple[float, ...]:
    """What the run reports to its pruner after each epoch (`engine.pruning.PRUNING`, or with
    ``report="loss"`` the kept epoch's validation loss)."""
    values = curve.val_amae if report == "amae" else curve.val_loss
    return tuple(values[k - 1] for k in kept_epochs(curve))


@cache
def finishing_epoch(curve: Curve, patience: int, max_epochs: int) -> int | None:
    """The epoch its stopping rule ends the run (``fit``'s ``finished``); None when the rule
    does not fire within the curve (a run a real pruner cut)."""
    for epoch, kept in enumerate(kept_epochs(curve), 1):
        if epoch - kept >= patience or epoch == max_epochs:
            return epoch
    return None


@dataclass
class Outcome:
    """What a replay trained: epochs per run and the runs it stopped (with the epoch)."""

    epochs: dict[str, int] = field(default_factory=dict)
    stopped: dict[str, int] = field(default_factory=dict)


class Replay:
    """The searches' shared Optuna studies, fed as the lanes feed them (`SearchTrial`)."""

    def __init__(
        self,
        search: SearchSpec,
        *,
        max_epochs: int,
        patience: int,
        folder: Path,
        report: str = "amae",
    ):
        self.search, self.max_epochs, self.patience = search, max_epochs, patience
        self.report = report
        self.folder = folder
        self.trials: dict[str, SearchTrial] = {}
        self.outcome = Outcome()

    def start(self, curve: Curve) -> None:
        """The run's lane starts it: it joins its search's study (a new trial)."""
        task, method, seed = curve.search
        self.trials[curve.run_id] = SearchTrial(
            PruningTask(
                journal=str(self.folder / f"{search_name(task, method, seed)}.log"),
                study_name=search_name(task, method, seed),
                search=self.search,
                max_epochs=self.max_epochs,
                run_id=curve.run_id,
                lower_is_better=protocol.SEARCH_SELECTION.lower_is_better,
            )
        )

    def epoch(self, curve: Curve, epoch: int) -> bool:
        """Report ``epoch``; True when the run ends there (stopped, or its rule finished)."""
        trial = self.trials[curve.run_id]
        if epoch > len(curve.val_loss):
            raise ValueError(
                f"{curve.run_id}: its curve ends at epoch {len(curve.val_loss)}, "
                "before its stopping rule; replay only a full study's curves"
            )
        finished = epoch == finishing_epoch(curve, self.patience, self.max_epochs)
        value = reported_values(curve, self.report)[epoch - 1]
        stop = trial.should_prune(epoch, value) and not finished
        if not (stop or finished):
            return False
        self.outcome.epochs[curve.run_id] = epoch
        if stop:
            self.outcome.stopped[curve.run_id] = epoch
        kept = kept_epochs(curve)[epoch - 1]
        trial.finish(pruned=stop, value=curve.val_amae[kept - 1])
        return True


def replay(
    curves: list[Curve],
    search: SearchSpec,
    *,
    max_epochs: int,
    patience: int,
    lanes: int | None,
    report: str = "amae",
) -> Outcome:
    """Replay ``search`` over ``curves`` (in queue order). ``lanes``: that many lanes take
    runs from the queue as they free up; None: every run starts at its recorded ``start_s``.
    With ``none`` every run trains its whole curve; ``report``: one of `REPORTS`."""
    if not search.pruned:
        return Outcome(epochs={c.run_id: len(c.val_loss) for c in curves})
    with tempfile.TemporaryDirectory(prefix="pruner-replay-") as folder:
        state = Replay(
            search, max_epochs=max_epochs, patience=patience, folder=Path(folder), report=report
        )
        for _ in _events(curves, state, lanes):
            pass
        return state.outcome


def _events(curves: list[Curve], state: Replay, lanes: int | None) -> Iterator[None]:
    """The discrete-event loop: (time, order, run, epoch) in time order; epoch 0 starts."""
    heap: list[tuple[float, int, int, int]] = []
    order = iter(range(10**9))
    queue = list(range(len(curves)))
    if lanes is None:
        for i in queue:
            heapq.heappush(heap, (curves[i].start_s, next(order), i, 0))
        queue = []
    else:
        for i in queue[:lanes]:
            heapq.heappush(heap, (0.0, next(order), i, 0))
        queue = queue[lanes:]
    while heap:
        now, _, i, epoch = heapq.heappop(heap)
        curve = curves[i]
        if epoch == 0:
            state.start(curve)
            ended = False
        else:
            ended = state.epoch(curve, epoch)
        if not ended:
            heapq.heappush(heap, (now + curve.warm_seconds[epoch], next(order), i, epoch + 1))
        elif queue:
            heapq.heappush(heap, (now, next(order), queue.pop(0), 0))
        yield None


def replay_in_journal_order(
    curves: list[Curve], journals: Path, search: SearchSpec, *, max_epochs: int, patience: int
) -> Outcome:
    """Replay ``curves`` (a pruned study's own) in the order its Optuna journals recorded:
    each search's trials start, report and are judged exactly in the order they were on the
    GPU."""
    by_run = {c.run_id: c for c in curves}
    with tempfile.TemporaryDirectory(prefix="pruner-replay-") as folder:
        state = Replay(search, max_epochs=max_epochs, patience=patience, folder=Path(folder))
        for log in sorted(journals.glob("*.log")):
            done: set[str] = set()
            for kind, run_id, step in journal_events(log):
                if kind == "start":
                    state.start(by_run[run_id])
                elif run_id not in done and state.epoch(by_run[run_id], step):
                    done.add(run_id)
        return state.outcome


def journal_events(log: Path) -> list[tuple[str, str, int]]:
    """A search journal's ("start", run, 0) and ("epoch", run, step) in the order the lanes
    were judged. A report (op 7) is judged where its rung value is written (the trial's next
    op, 9, when it reached a rung): two lanes may report before either is judged."""
    ops = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    run_of: dict[int, str] = {}
    events: list[tuple[int, str, str, int]] = []
    for i, op in enumerate(ops):
        if op["op_code"] == 8 and "run_id" in op["user_attr"]:  # a trial named by its run
            run_of[op["trial_id"]] = op["user_attr"]["run_id"]
            events.append((i, "start", run_of[op["trial_id"]], 0))
        elif op["op_code"] == 7:  # an intermediate value reported
            trial = op["trial_id"]
            later = (j for j in range(i + 1, len(ops)) if ops[j].get("trial_id") == trial)
            j = next(later, None)
            judged = j if j is not None and ops[j]["op_code"] == 9 else i
            events.append((judged, "epoch", run_of[trial], int(op["step"])))
    return [(kind, run, step) for _, kind, run, step in sorted(events)]


# --- the store: curves in, a replayed selection out -----------------------------------------


def study_id_of(store: Path, name: str) -> str:
    with connect(store, read_only=True) as con:
        row = con.execute("SELECT study_id FROM studies WHERE name = ?", [name]).fetchone()
    if row is None:
        raise SystemExit(f"error: no study named {name!r} in the store")
    return row[0]


def study_settings(store: Path, study_id: str) -> tuple[int, int, SearchSpec]:
    """(max_epochs, patience, search) of a stored study."""
    with connect(store, read_only=True) as con:
        spec = json.loads(
            con.execute("SELECT spec FROM studies WHERE study_id = ?", [study_id]).fetchone()[0]
        )
    return int(spec["max_epochs"]), int(spec["patience"]), SearchSpec.from_value(spec.get("search"))


def load_curves(store: Path, study_id: str) -> list[Curve]:
    """Every run's epochs, in the order the runs started (``created_at`` is when a run was
    stored, i.e. finished; minus its wall)."""
    with connect(store, read_only=True) as con:
        frame = con.execute(
            """
            SELECT r.run_id, r.task, r.method, r.seed, r.config_index,
                   epoch(r.created_at) - r.duration_s AS start_s,
                   list(e.val_loss ORDER BY e.epoch) AS val_loss,
                   list(e.val_amae ORDER BY e.epoch) AS val_amae,
                   list(e.duration_s ORDER BY e.epoch) AS seconds
            FROM runs r JOIN epoch_metrics e USING (run_id)
            WHERE r.study_id = ? GROUP BY ALL ORDER BY start_s, r.run_id
            """,
            [study_id],
        ).df()
    first = float(frame["start_s"].min())
    return [
        Curve(
            run_id=row.run_id,
            search=(row.task, row.method, int(row.seed)),
            config_index=int(row.config_index),
            val_loss=tuple(map(float, row.val_loss)),
            val_amae=tuple(map(float, row.val_amae)),
            seconds=tuple(map(float, row.seconds)),
            start_s=float(row.start_s) - first,
        )
        for row in frame.itertuples(index=False)
    ]


def most_at_once(curves: list[Curve]) -> int:
    """The most runs the study trained at the same time (its lanes)."""
    spans = [(c.start_s, c.start_s + sum(c.seconds)) for c in curves]
    return max(sum(s <= t < e for s, e in spans) for t, _ in spans)


def stored_outcome(store: Path, study_id: str) -> Outcome:
    """What a stored (pruned) study did: epochs per run and the runs it stopped."""
    runs = store_runs.list_runs([study_id], path=store)
    return Outcome(
        epochs=dict(zip(runs.run_id, runs.epochs_run.astype(int), strict=True)),
        stopped={r.run_id: int(r.epochs_run) for r in runs.itertuples() if r.pruned},
    )


def mark_replayed(store: Path, study_id: str, outcome: Outcome) -> None:
    """In a scratch copy: mark the runs the replay stopped as pruned and select by the
    engine's rule (`store.runs.select_best_runs`)."""
    with connect(store) as con:
        con.execute("UPDATE runs SET pruned = false WHERE study_id = ?", [study_id])
        if outcome.stopped:
            con.execute(
                "UPDATE runs SET pruned = true WHERE study_id = ? AND list_contains(?, run_id)",
                [study_id, list(outcome.stopped)],
            )
    store_runs.select_best_runs(study_id, path=store)


# --- the report ------------------------------------------------------------------------------


def parse_setting(text: str) -> SearchSpec:
    """``pruner[:min_epochs[:η]]`` -> SearchSpec (``asha:30:2``)."""
    name, *rest = text.strip().split(":")
    if len(rest) > 2 or not all(part.isdigit() for part in rest if part):
        raise ValueError(f"{text!r}: expected pruner[:min_epochs[:η]], e.g. asha:30:2")
    value: dict[str, object] = {"pruner": name}
    if rest and rest[0]:
        value["min_epochs"] = int(rest[0])
    if len(rest) > 1 and rest[1]:
        value["reduction_factor"] = int(rest[1])
    return SearchSpec.from_value(value)


def costs(curves: list[Curve], outcome: Outcome) -> dict[str, float]:
    """Epochs and seconds (recorded, and with first-epoch compile waits as a warm machine's)
    that ``outcome`` trained."""
    trained = [(c, outcome.epochs.get(c.run_id, len(c.seconds))) for c in curves]
    return {
        "epochs": sum(n for _, n in trained),
        "seconds": sum(sum(c.seconds[:n]) for c, n in trained),
        "warm_seconds": sum(sum(c.warm_seconds[:n]) for c, n in trained),
    }


def compare_outcomes(
    curves: list[Curve], replayed: Outcome, real: Outcome, real_curves: list[Curve]
) -> dict[str, float]:
    """Per configuration (task, method, seed, config number): the same stop decision and the
    same stopping epoch in the replay as in the real pruned study."""
    key = {c.run_id: (*c.search, c.config_index) for c in curves}
    real_key = {c.run_id: (*c.search, c.config_index) for c in real_curves}
    stops = {key[r]: e for r, e in replayed.stopped.items()}
    real_stops = {real_key[r]: e for r, e in real.stopped.items()}
    keys = set(key.values())
    same_decision = sum((k in stops) == (k in real_stops) for k in keys)
    same_epoch = sum(stops.get(k) == real_stops.get(k) for k in keys)
    return {
        "configurations": len(keys),
        "stopped_replay": len(stops),
        "stopped_real": len(real_stops),
        "same_decision": same_decision,
        "same_decision_and_epoch": same_epoch,
        "epochs_replay": sum(replayed.epochs.values()),
        "epochs_real": sum(real.epochs.values()),
    }


def selected_configs(store: Path, study_id: str) -> dict[tuple[str, str, int], int]:
    runs = store_runs.list_runs([study_id], selected_only=True, path=store)
    return {(r.task, r.method, int(r.seed)): int(r.config_index) for r in runs.itertuples()}


def evaluate(
    setting: str,
    curves: list[Curve],
    outcome: Outcome,
    full_id: str,
    stores: dict[str, Path],
    full_cost: dict[str, float],
) -> dict[str, object]:
    """One setting's row: cost shares, selection agreement and decisions unchanged."""
    mark_replayed(stores["pruned"], full_id, outcome)
    agree = agreement(full_id, full_id, stores)
    verdict = verdicts(full_id, full_id, stores)
    spent = costs(curves, outcome)
    unknown_groups = int(agree["pruned"].isna().sum())
    # A comparison is unknown when a search of either method lost its selected run (every run
    # stopped): the paired table would drop that seed, not a prediction we could stand by.
    lost = {(r.task, r.method) for r in agree[agree["pruned"].isna()].itertuples()}
    known = [
        (r.task, r.method_a) not in lost and (r.task, r.method_b) not in lost
        for r in verdict.itertuples()
    ]
    decided = verdict[known]
    diffs = agree["test_diff"].dropna()
    return {
        "setting": setting,
        "stopped_runs": len(outcome.stopped),
        "epochs": spent["epochs"],
        "epochs_share": spent["epochs"] / full_cost["epochs"],
        "seconds_share": spent["seconds"] / full_cost["seconds"],
        "warm_seconds_share": spent["warm_seconds"] / full_cost["warm_seconds"],
        "same_config": int(agree["same_config"].sum()),
        "groups": len(agree),
        "groups_unknown": unknown_groups,
        "decisions_unchanged": int(decided["unchanged"].sum()),
        "decisions": len(verdict),
        "decisions_unknown": len(verdict) - len(decided),
        "changed": [
            f"{r.task} {r.metric} {r.method_a}-{r.method_b}"
            for r in decided[~decided["unchanged"]].itertuples()
        ],
        "test_diff_abs_max": float(diffs.abs().max()) if len(diffs) else 0.0,
    }


def table(rows: Iterable[dict[str, object]]) -> str:
    frame = pd.DataFrame(
        [
            {
                "setting": r["setting"],
                "runs stopped": r["stopped_runs"],
                "epochs / full": f"{r['epochs_share']:.3f}",
                "s / full": f"{r['seconds_share']:.3f}",
                "warm s / full": f"{r['warm_seconds_share']:.3f}",
                "same config": f"{r['same_config']}/{r['groups']}",
                "decisions unchanged": f"{r['decisions_unchanged']}/{r['decisions']}"
                + (f" ({r['decisions_unknown']} unknown)" if r["decisions_unknown"] else ""),
                "max abs test AMAE diff": f"{r['test_diff_abs_max']:.3f}",
            }
            for r in rows
        ]
    )
    return _markdown(frame)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("store", type=Path, help="a store holding the full study (never changed)")
    p.add_argument("--full", default=FULL_STUDY, help="the full study's name")
    p.add_argument("--pruned", default=None, help="a real pruned study's name, to validate")
    p.add_argument("--journals", type=Path, default=None, help="its pruning journals folder")
    p.add_argument("--settings", default=",".join(DEFAULT_SETTINGS), help="pruner[:min[:η]],...")
    p.add_argument("--lanes", type=int, default=0, help="0: the most runs the full study ran")
    p.add_argument("--order", choices=["lanes", "recorded"], default="lanes")
    p.add_argument(
        "--report",
        choices=REPORTS,
        default="amae",
        help="what runs report each epoch: the lanes' validation AMAE, or (what-if) the kept "
        "epoch's validation loss",
    )
    p.add_argument("--json", type=Path, default=None, help="write the results here too")
    return p.parse_args(argv)


def validate(
    args: argparse.Namespace,
    stores: dict[str, Path],
    full_id: str,
    curves: list[Curve],
    lanes: int | None,
    run: Callable[[SearchSpec], Outcome],
) -> tuple[dict[str, object], str]:
    """The self-check (a pruned study's own curves in its journals' order) and the replay of
    the full study's curves with the real pruned study's setting, against what it did."""
    store = stores["full"]
    pruned_id = study_id_of(store, args.pruned)
    max_epochs, patience, search = study_settings(store, pruned_id)
    real_curves = load_curves(store, pruned_id)
    real = stored_outcome(store, pruned_id)
    out: dict[str, object] = {"setting": search.describe(max_epochs)}
    if args.journals is not None:
        own = replay_in_journal_order(
            real_curves, args.journals, search, max_epochs=max_epochs, patience=patience
        )
        out["self_check"] = compare_outcomes(real_curves, own, real, real_curves)
    replayed = run(search)
    out["full_curves"] = compare_outcomes(curves, replayed, real, real_curves)
    mark_replayed(stores["pruned"], full_id, replayed)
    picked = {
        "full": selected_configs(store, full_id),
        "real": selected_configs(store, pruned_id),
        "replay": selected_configs(stores["pruned"], full_id),
    }
    out["selected"] = {
        "replay_as_real": sum(picked["replay"].get(k) == v for k, v in picked["real"].items()),
        "real_as_full": sum(picked["full"].get(k) == v for k, v in picked["real"].items()),
        "replay_as_full": sum(picked["full"].get(k) == v for k, v in picked["replay"].items()),
        "groups": len(picked["full"]),
    }
    out["same_val_amae_share"] = {
        e: same_value_share(curves, real_curves, e) for e in (1, 10, search.first_rung(max_epochs))
    }
    where = f"{lanes} lanes" if lanes else "recorded starts"
    lines = [f"Validation against the real pruned study ({out['setting']}):", ""]
    for name, label in (
        ("self_check", "its own curves in its journals' order"),
        ("full_curves", f"the full study's curves, {where}"),
    ):
        if name in out:
            c = out[name]
            lines.append(
                f"- {label}: stopped {c['stopped_replay']} (real {c['stopped_real']}) of "
                f"{c['configurations']}; same stop decision {c['same_decision']}, same decision "
                f"and epoch {c['same_decision_and_epoch']}; epochs {c['epochs_replay']} "
                f"(real {c['epochs_real']})"
            )
    sel = out["selected"]
    lines.append(
        f"- selected configuration: replay = real pruned in {sel['replay_as_real']}/"
        f"{sel['groups']}; real pruned = full in {sel['real_as_full']}; replay = full in "
        f"{sel['replay_as_full']}"
    )
    shares = ", ".join(f"epoch {e}: {v:.2f}" for e, v in out["same_val_amae_share"].items())
    lines.append(f"- configurations with the same val AMAE in both studies (GPU noise): {shares}")
    return out, "\n".join(lines)


def same_value_share(curves: list[Curve], others: list[Curve], epoch: int) -> float:
    """The share of configurations whose validation AMAE at ``epoch`` is the same in two
    studies' curves (bit-for-bit training would give 1)."""
    key = {(*c.search, c.config_index): c for c in others}
    pairs = [
        (c, key[(*c.search, c.config_index)])
        for c in curves
        if (*c.search, c.config_index) in key
        and min(len(c.val_amae), len(key[(*c.search, c.config_index)].val_amae)) >= epoch
    ]
    same = sum(a.val_amae[epoch - 1] == b.val_amae[epoch - 1] for a, b in pairs)
    return same / len(pairs) if pairs else math.nan


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.store.is_file():
        print(f"error: no store at {args.store}", file=sys.stderr)
        return 2
    try:
        settings = [(s, parse_setting(s)) for s in args.settings.split(",") if s.strip()]
    except ValueError as exc:
        print(f"error: --settings: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pruner-replay-store-") as scratch:
        stores = {"full": Path(scratch) / "full.duckdb", "pruned": Path(scratch) / "replay.duckdb"}
        shutil.copyfile(args.store, stores["full"])
        shutil.copyfile(args.store, stores["pruned"])
        full_id = study_id_of(stores["full"], args.full)
        max_epochs, patience, _ = study_settings(stores["full"], full_id)
        curves = load_curves(stores["full"], full_id)
        lanes = None if args.order == "recorded" else (args.lanes or most_at_once(curves))

        def run(search: SearchSpec) -> Outcome:
            return replay(
                curves,
                search,
                max_epochs=max_epochs,
                patience=patience,
                lanes=lanes,
                report=args.report,
            )

        result: dict[str, object] = {"lanes": lanes, "order": args.order, "report": args.report}
        text = [f"Replay over {args.full!r}: {len(curves)} runs, order {args.order}"]
        text[0] += f", {lanes} lanes" if lanes else ""
        if args.pruned:
            result["validation"], lines = validate(args, stores, full_id, curves, lanes, run)
            text += ["", lines]
        full_cost = costs(curves, replay(curves, SearchSpec(), max_epochs=1, patience=1, lanes=1))
        rows = [evaluate(NO_PRUNER, curves, run(SearchSpec()), full_id, stores, full_cost)]
        for name, search in settings:
            rows.append(evaluate(name, curves, run(search), full_id, stores, full_cost))
            print(f"replayed {name}", file=sys.stderr)
        result["full"], result["settings"] = full_cost, rows
        text += ["", table(rows)]
    print("\n".join(text))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
