"""The report's Methods section: a protocol paragraph per study a PI can paste into a paper,
the statistics paragraph and the software used.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from engine import methods as method_registry
from engine.analysis import paired
from engine.config import MAX_BUDGET
from engine.phantom.spec import PhantomSpec
from engine.vocab import SPLIT_RULE, TEST_FRACTION, VAL_FRACTION
from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import imported_text
from pages.present import protocol_text as protocol_text_of
from pages.present import report_html as rh
from pages.present.report.common import PHANTOM, TRAINING_CARD_FIELDS, annotation_noise


def methods_section(inputs: ReportInputs) -> list[str]:
    """A paragraph per study a PI can paste into a paper, then the statistics and software."""
    out = [rh.paragraph(protocol_text(s)) for s in inputs.studies]
    stats = statistics_text(inputs)
    out += [rh.paragraph(stats), rh.paragraph(software_text(inputs))]
    return ['<div class="methods">', *out, "</div>"]


# -- the methods paragraph -------------------------------------------------------------------


def statistics_text(inputs: ReportInputs | None = None) -> str:
    """The statistics paragraph: what each test the report shows does and assumes, with the
    declared search-selection rule (`engine.protocol`); studies of imported results among
    ``inputs`` say their metrics are the file's (`pages.present.imported_text`)."""
    selected = (
        "Test metrics are computed per seed from each (task, method, seed)'s selected run "
        f"({protocol_text_of.selection_sentence()})."
    )
    studies = inputs.studies if inputs is not None else ()
    imported = [s.name for s in studies if s.imported_results is not None]
    opening = imported_text.metrics_source(selected, imported, len(studies))
    return (
        f"Statistics. {opening} Means carry 95 % corrected "
        "resampled t intervals (Nadeau & Bengio 2003), which widen the ordinary interval by the "
        "test/train size ratio because the seeds resample the same films; they assume the "
        "per-seed values are roughly normal, and an interval is shown clipped to the values its "
        "metric can take. Pairs of methods are compared by the mean paired difference over "
        "seeds with the corrected resampled t-test, which assumes a between-seed correlation "
        "ρ = n_test/n (shown as ρ assumed) that one dataset cannot measure, so its p is also "
        "reported at ρ = 0, 0.09 and 0.17 (r = ρ/(1 − ρ) = 0, 0.1, 0.2 in the variance) with "
        "the break-even ρ where it crosses "
        "0.05; by the Bayesian correlated t-test (Corani & Benavoli 2015) on the same corrected "
        f"variance, whose verdict is “better” when its posterior probability of a "
        f"difference beyond a region of practical equivalence (ROPE ± {paired.DEFAULT_ROPE:g}) "
        f"reaches {paired.BAYES_THRESHOLD:g} (the two-sided level of the corrected test) and "
        "the corrected p is significant after Holm within its family, “equivalent” when TOST "
        f"within the ROPE gives p < {paired.EQUIVALENCE_ALPHA:g} (each posterior tail beyond "
        f"the ROPE below {paired.EQUIVALENCE_ALPHA:g}), else “inconclusive”, and “not "
        f"estimable” from fewer than {paired.MIN_VERDICT_SEEDS} seeds or differences with no "
        "spread; and by the exact Wilcoxon "
        "signed-rank test (ties and zeros included; symmetric differences, seeds treated as "
        "independent, hence read as consistency over seeds), Holm-adjusted within each task; "
        "effect sizes are Cohen's dz (mean difference over its standard deviation) and the "
        "matched-pairs rank-biserial r. Apart from these, a film-sampling bootstrap (seeds, "
        "then patients within each seed's test set, seeds taken as independent) measures how "
        "much the test films alone move a difference; it ignores the training films the seeds "
        "share, so it is not an interval for the comparison. The primary endpoint "
        f"({paired.PRIMARY_FAMILY}) is the one confirmatory family, Holm on the corrected p; "
        "every other comparison is exploratory. Methods are ranked per seed by the Friedman "
        "test with Nemenyi post-hoc comparisons (seeds as independent blocks; exploratory). "
        "The KL × CPPD agreement is the Kullback–Leibler divergence D_KL(true ‖ predicted) of "
        "the joint grade table per seed, decomposed by the chain rule into a KL-marginal and a "
        "CPPD-given-KL part."
    )


def protocol_text(study: StudyReportInputs) -> str:
    """The study's data, protocol, search space, budget, splits and initial weights in prose;
    early stopping and selection as the trainer and the search declare them
    (`engine.protocol`, worded by `pages.present.protocol_text`)."""
    spec, study_id = study.spec, study.study_id
    if study.imported_results is not None:
        return imported_text.protocol_paragraph(study_id, spec, study.unsized_tasks)
    methods = list(spec.get("methods", []))
    budget = int(spec.get("budget", MAX_BUDGET))
    seeds = list(spec.get("seeds", []))
    init = (
        "ImageNet weights read from a local file"
        if spec.get("weights_path")
        else "random initial weights"
    )
    return (
        f"Protocol ({spec.get('name', study_id)}). Data: {dataset_text(study)}. A "
        f"ResNet-18 was trained for each of the tasks {', '.join(spec.get('tasks', []))} with "
        f"{len(methods)} label methods ({', '.join(methods)}), from {init}, on "
        f"{spec.get('image_size', '?')}-pixel crops in batches of "
        f"{spec.get('batch_size', '?')} for {protocol_text_of.stopping_sentence(spec)}, over "
        f"{len(seeds)} seeds ({_seed_text(seeds)}). Search space per method (random search, "
        f"budget {budget} configurations per task, method and seed, a smaller grid searched "
        f"in full; the selected run is {protocol_text_of.selection_sentence()}): "
        f"{search_space_text(methods, budget)}. Splits: {SPLIT_RULE}; "
        f"{TEST_FRACTION:.0%} of patients held out for testing and {VAL_FRACTION:.0%} of the "
        f"rest for validation, drawn anew for every seed; {split_text(study.split_sizes)}."
        + (f" {pruned}" if (pruned := protocol_text_of.search_sentence(spec)) else "")
    )


def dataset_text(study: StudyReportInputs) -> str:
    """The films in a phrase: synthetic phantom films (with their annotation noise) or
    imported films."""
    kind, params = study.dataset_kind, study.dataset_params
    if kind == PHANTOM:
        n = params.get("n_images", PhantomSpec().n_images)
        return (
            f"{n:,} synthetic knee films drawn by SoftGrade's phantom generator (seed "
            f"{params.get('seed', PhantomSpec().seed)}), not radiographs of patients; each "
            f"recorded grade was moved to an adjacent grade with probability "
            f"{annotation_noise(params):g} (annotation noise)"
        )
    if kind is None:
        return "films of a dataset whose kind the store does not record"
    return f"films imported from a {kind} dataset, graded by their annotators"


def search_space_text(methods: Sequence[str], budget: int) -> str:
    """Each method's grid (parameter values) and how many configurations were tried; a
    method this checkout does not register (imported results) is named as such."""
    parts = []
    for method in methods:
        if not method_registry.is_registered(method):
            parts.append(f"{method}: not registered in this SoftGrade, search space unknown")
            continue
        grid = method_registry.search_grid(method)
        axes = {k: sorted({g.as_dict()[k] for g in grid}) for k in grid[0].as_dict()}
        values = "; ".join(f"{k} ∈ {{{', '.join(f'{v:g}' for v in vs)}}}" for k, vs in axes.items())
        parts.append(f"{method}: {values} ({min(budget, len(grid))} of {len(grid)})")
    return "; ".join(parts)


def split_text(sizes: pd.DataFrame) -> str:
    """Films per split and task, over the seeds (mean, range); ``sizes``:
    `store.analysis.split_sizes`."""
    if sizes.empty:
        return "split sizes not recorded"
    parts = []
    for task, rows in sizes.groupby("task", sort=False):
        parts.append(
            f"{task}: {_range(rows['n_test'])} test and {_range(rows['n_fit'])} "
            "training + validation films per seed"
        )
    return "; ".join(parts)


def software_text(inputs: ReportInputs) -> str:
    """Training software from each study's card; analysis software as the inputs recorded
    it (the process that gathered them)."""
    trained = []
    for card in (s.card for s in inputs.studies):
        known = [f"{k} {card[k]}" for k in TRAINING_CARD_FIELDS if k in card]
        trained.append(f"{card.get('study', '?')}: {'; '.join(known) or 'not recorded'}")
    code = inputs.code
    commit = f" (commit {code['git_commit'][:10]})" if code.get("git_commit") else ""
    analysis = ", ".join(f"{p} {version}" for p, version in inputs.analysis_software)
    return (
        f"Software. Training: {' | '.join(trained)}. Analysis and this report: SoftGrade "
        f"{code.get('code_version')}{commit} with {analysis}, Python {inputs.python}."
    )


def _range(values: pd.Series) -> str:
    low, high = int(values.min()), int(values.max())
    return str(low) if low == high else f"{low}–{high}"


def _seed_text(seeds: Sequence[int]) -> str:
    if seeds and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}–{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ", ".join(str(s) for s in seeds)
