"""Every reviewer-statistics table's vocabulary, declared once (issue 40): the paired
comparisons, the primary endpoint, the variance components of a factorial design, Friedman,
the ANOVAs and the Explorer's configurations of one search.

Each is a `TableVocabulary`: its columns (key, header, meaning) and its views, the keys each
surface shows in order. The engine computes a table in its ``computed`` view's order; the
Statistics tab, the KL × CPPD page, the report and `softgrade stats` read their views and
headers here and format only the values (`pages.present`). `tests/test_table_vocabulary.py`
fails when a page, report or command-line module spells one of these column lists or header
mappings itself.
"""

from __future__ import annotations

from engine.analysis import explorer
from engine.analysis.metrics import METRIC_LABELS, PRIMARY_METRIC
from engine.analysis.paired_tests import ALPHA, rho_of_ratio
from engine.analysis.table_vocabulary import Column, TableVocabulary

#: ``r`` (the ratio in the corrected variance) at which every corrected p is also shown.
R_STRIP: tuple[float, ...] = (0.0, 0.1, 0.2)


def r_column(r: float) -> str:
    """The column of the corrected p at ``r`` (``p_r0``, ``p_r0.1``, ...)."""
    return f"p_r{r:g}"


def _rho_strip_header() -> str:
    """ "p at ρ = 0 · 0.09 · 0.17 · assumed": the assumption is read on one scale, ρ (the
    between-seed correlation); r = ρ/(1 − ρ), the ratio in the corrected variance, is named
    only in the pages' tooltip."""
    rhos = (f"{rho_of_ratio(r):.2f}".removesuffix(".00") for r in R_STRIP)
    return "p at ρ = " + " · ".join(rhos) + " · assumed"


#: What a row of a table of pairs compares: the paired comparisons' and the variance
#: components' first columns.
_COMPARED: tuple[Column, ...] = (
    Column("task", "Task", meaning="the task (KL or CPPD)"),
    Column("metric", "Metric", meaning="the metric compared"),
    Column("method_a", "A", meaning="method A of the pair (the difference is A − B)"),
    Column("method_b", "B", meaning="method B of the pair"),
    Column("pair", "A − B", meaning="the pair in one cell, as the pages name the methods"),
)
#: Their keys as the computed frames hold them (the pair is one cell only when shown).
_COMPARED_KEYS: tuple[str, ...] = tuple(c.key for c in _COMPARED if c.key != "pair")

# --------------------------------------------------------------------------------------------
# The paired comparisons (`engine.analysis.paired.paired_table`)
# --------------------------------------------------------------------------------------------

_PAIRED_COLUMNS: tuple[Column, ...] = (
    *_COMPARED,
    Column(
        "family",
        "Endpoint",
        meaning="the Holm family of the row: the primary endpoint or exploratory",
    ),
    Column("n_seeds", "Seeds", meaning="seeds both methods ran"),
    # The difference and its corrected interval.
    Column("mean_diff", "Mean A − B", meaning="mean over seeds of the difference A − B"),
    Column("sd_diff", "", meaning="sd over seeds of the difference"),
    Column("ci_low", "", meaning="low end of the corrected 95 % interval", latex="CI low"),
    Column("ci_high", "", meaning="high end of the corrected 95 % interval", latex="CI high"),
    Column("ci", "95 % CI (corrected)", meaning="the corrected 95 % interval in one cell"),
    Column(
        "mean_ci",
        "Mean A − B [95 % CI, corrected]",
        meaning="the mean difference with its corrected interval in one cell",
    ),
    # The corrected resampled t-test and its assumption.
    Column(
        "p_corrected",
        "p (corrected)",
        meaning="two-sided p of the corrected resampled t-test (Nadeau & Bengio 2003)",
        latex="p corrected",
    ),
    Column("p_naive_t", "", meaning="the paired t-test's p taking the seeds as independent"),
    Column(
        "p_corrected_holm", "p corrected (Holm)", meaning="the corrected p, Holm within its family"
    ),
    Column(
        "rho_assumed",
        "ρ assumed",
        meaning="the between-seed correlation the corrected test assumes",
    ),
    Column("test_train_ratio", "", meaning="n_test / n_train of the study's splits, the r assumed"),
    *(Column(r_column(r), "", meaning=f"the corrected p at r = {r:g}") for r in R_STRIP),
    Column(
        "p_strip", _rho_strip_header(), meaning="the corrected p across ρ, and at the assumed ρ"
    ),
    Column(
        "r_break_even",
        "Break-even ρ (p = 0.05)",
        meaning="where the corrected p crosses 0.05 (the CSV holds it on the r scale)",
        latex="Break-even ρ",
    ),
    # Seeds taken as independent, and effect sizes.
    Column("p_wilcoxon", "p Wilcoxon (exact)", meaning="exact signed-rank p over seeds"),
    Column(
        "p_wilcoxon_holm", "p Wilcoxon (Holm)", meaning="the Wilcoxon p, Holm over the task's pairs"
    ),
    Column("d_z", "Effect size dz", meaning="the mean difference over its sd across seeds"),
    Column(
        "rank_biserial", "Rank-biserial r", meaning="the matched-pairs rank-biserial correlation"
    ),
    # The Bayesian correlated t-test, TOST and the verdict.
    Column(
        "p_bayes",
        "P(A better) · P(equivalent) · P(B better)",
        meaning="the Bayesian correlated t-test's three probabilities in one cell",
    ),
    Column(
        "p_bayes_a_better",
        "P(A better)",
        meaning="posterior that A is better by more than the ROPE",
    ),
    Column(
        "p_bayes_equivalent", "P(equivalent)", meaning="posterior that |A − B| is within the ROPE"
    ),
    Column(
        "p_bayes_b_better",
        "P(B better)",
        meaning="posterior that B is better by more than the ROPE",
    ),
    Column("rope", "", meaning="the region of practical equivalence, in the metric's units"),
    Column("p_tost", "TOST p", meaning="the equivalence test's p within the ROPE"),
    Column("verdict", "Verdict", meaning="better, equivalent, inconclusive or not estimable"),
    Column("reading", "Reading", meaning="the row in plain words"),
    # The film-sampling bootstrap, apart from the comparison.
    Column("boot_ci_low", "", meaning="low end of the film-sampling bootstrap interval"),
    Column("boot_ci_high", "", meaning="high end of the film-sampling bootstrap interval"),
    Column(
        "boot_ci",
        "Film-sampling bootstrap 95 % interval",
        meaning="the film-sampling bootstrap interval in one cell",
    ),
    Column(
        "within_seed_sd",
        "Within-seed sd",
        meaning="the bootstrap's sd within one seed's test films",
    ),
)

#: `paired_table`'s own columns, in order (`softgrade stats`' CSV; the extras follow them).
_PAIRED_COMPUTED: tuple[str, ...] = (
    *_COMPARED_KEYS,
    "n_seeds",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_corrected",
    "rho_assumed",
    "r_break_even",
    "p_wilcoxon",
    "p_wilcoxon_holm",
    "d_z",
    "rank_biserial",
    "p_bayes_a_better",
    "p_bayes_equivalent",
    "p_bayes_b_better",
    "verdict",
)
_PAIRED_EXTRA: tuple[str, ...] = (
    "sd_diff",
    "p_naive_t",
    "p_corrected_holm",
    "family",
    "test_train_ratio",
    *(r_column(r) for r in R_STRIP),
    "rope",
    "p_tost",
)
_BOOTSTRAP_COMPUTED: tuple[str, ...] = ("boot_ci_low", "boot_ci_high", "within_seed_sd")
#: What a reader needs first on every surface: what was compared, the difference with its
#: interval, the verdict and its Holm p; the rest of the columns follow.
_VERDICT_FIRST: tuple[str, ...] = (
    *_PAIRED_COMPUTED[: _PAIRED_COMPUTED.index("ci_high") + 1],
    "verdict",
    "p_corrected_holm",
)
#: The tests over seeds taken as independent and the effect sizes, in the order every paired
#: table shows them.
_SEED_TESTS: tuple[str, ...] = ("p_wilcoxon", "p_wilcoxon_holm", "d_z", "rank_biserial")
#: The Statistics tab's verdict-first table: the pair in one cell, the difference with its
#: interval in one.
_COMPACT: tuple[str, ...] = (
    "task",
    "pair",
    "n_seeds",
    "mean_ci",
    "verdict",
    "p_corrected_holm",
    "family",
)
#: Everything else of a row, one click away from the verdict, keyed by task and pair.
_DETAILS: tuple[str, ...] = (
    "task",
    "pair",
    "p_corrected",
    "p_strip",
    "r_break_even",
    *_SEED_TESTS,
    "p_bayes",
    "p_tost",
    "reading",
)
#: The report's paired rows: the verdict first, so its first `REPORT_COMPACT` columns make
#: one table and the rest, keyed by task and pair, a second (a 20-column table did not fit
#: the page, and print cut it).
_REPORT: tuple[str, ...] = (
    "task",
    "method_a",
    "method_b",
    "n_seeds",
    "mean_diff",
    "ci",
    "verdict",
    "p_corrected_holm",
    "p_corrected",
    "rho_assumed",
    "p_strip",
    "r_break_even",
    *_SEED_TESTS,
    "p_bayes_a_better",
    "p_bayes_equivalent",
    "p_bayes_b_better",
    "p_tost",
)

PAIRED: TableVocabulary = TableVocabulary(
    "paired comparisons",
    _PAIRED_COLUMNS,
    {
        # The engine's frame: `paired_table`'s columns, then its extras.
        "computed": _PAIRED_COMPUTED,
        "extra": _PAIRED_EXTRA,
        "verdict_first": _VERDICT_FIRST,
        # `softgrade stats` prints the verdict first, then the rest of the computed columns.
        "printed": (*_VERDICT_FIRST, *(k for k in _PAIRED_COMPUTED if k not in _VERDICT_FIRST)),
        # The Statistics tab's CSV / LaTeX export, as far as a table has them.
        "export": (*_PAIRED_COMPUTED, *_BOOTSTRAP_COMPUTED, *_PAIRED_EXTRA),
        "compact": _COMPACT,
        "seed_tests": _SEED_TESTS,
        "details": _DETAILS,
        "full": (*_COMPACT, *(k for k in _DETAILS if k not in _COMPACT)),
        "bootstrap": ("task", "pair", "mean_diff", "boot_ci", "within_seed_sd"),
        "latex": (
            "task",
            "method_a",
            "method_b",
            "n_seeds",
            "mean_diff",
            "ci_low",
            "ci_high",
            "p_corrected",
            *_SEED_TESTS,
            "r_break_even",
            "verdict",
        ),
        "report": _REPORT,
        "report_compact": _REPORT[: _REPORT.index("p_corrected_holm") + 1],
        # The keys that name one pair of methods in a task (the report's second table, the
        # seeds-for-power rows).
        "pair_row": ("task", "method_a", "method_b"),
        # What a row compares, as the computed frames hold it (the bootstrap's merge keys).
        "compared": _COMPARED_KEYS,
        # The bootstrap's own columns, merged into the table when films can be resampled.
        "bootstrap_computed": _BOOTSTRAP_COMPUTED,
        # The columns that are p-values, and the Bayesian test's three posteriors.
        "p_values": ("p_corrected", "p_corrected_holm", "p_wilcoxon", "p_wilcoxon_holm", "p_tost"),
        "bayes": ("p_bayes_a_better", "p_bayes_equivalent", "p_bayes_b_better"),
        # The headers that say "corrected": a page names there the ρ the test assumed.
        "rho_named": ("ci", "mean_ci", "p_corrected"),
        # What a row's reading in words compares (`paired.reading`).
        "reading_needs": ("mean_diff", "p_corrected", "p_wilcoxon"),
        # The primary endpoint's tests before its Bayesian ones, in the report.
        "report_bootstrap": (
            "task",
            "method_a",
            "method_b",
            "mean_diff",
            "boot_ci",
            "within_seed_sd",
        ),
        # The KL × CPPD page's and the Probabilities tab's paired table, one reading per row.
        "relationship": (
            "task",
            "metric",
            "method_a",
            "method_b",
            "n_seeds",
            "mean_diff",
            "ci",
            "verdict",
            "p_corrected_holm",
            "p_corrected",
            "p_strip",
            "r_break_even",
            *_SEED_TESTS,
            "reading",
        ),
    },
)

# --------------------------------------------------------------------------------------------
# The primary endpoint (`engine.analysis.paired.primary_endpoint`): every method against
# Nominal on the primary metric; its shared columns read as the paired table's
# --------------------------------------------------------------------------------------------

_PRIMARY_LABEL = METRIC_LABELS[PRIMARY_METRIC]
_ENDPOINT_OWN: tuple[Column, ...] = (
    # Every method against Nominal, a soft-label method or not (issue 39: "Soft method"
    # headed CORN, CLM, EMD and QWK loss too).
    Column("method", "Method − Nominal", meaning="the method compared with Nominal"),
    Column(
        "mean_diff",
        f"{_PRIMARY_LABEL} difference",
        meaning=f"mean over seeds of the method's {_PRIMARY_LABEL} − Nominal's",
    ),
    Column(
        "p_corrected_holm",
        "p (Holm over the family)",
        meaning="the corrected p, Holm over the primary family",
    ),
    Column(
        "test",
        f"Corrected test (α = {ALPHA:g}, Holm)",
        meaning="the corrected test's finding after Holm, in words",
    ),
    Column("significant", "Significant after Holm", meaning="Holm p below α: yes or no"),
    Column(
        "p_bayes",
        "P(method better) · P(equivalent) · P(Nominal better)",
        meaning="the Bayesian correlated t-test's three probabilities in one cell",
    ),
    Column(
        "p_bayes_soft_better",
        "P(method better)",
        meaning="posterior that the method is better by more than the ROPE",
    ),
    Column(
        "p_bayes_baseline_better",
        "P(Nominal better)",
        meaning="posterior that Nominal is better by more than the ROPE",
    ),
)
#: The primary endpoint's tests in the report, before its Bayesian posteriors.
_ENDPOINT_TESTS: tuple[str, ...] = _REPORT[
    _REPORT.index("p_corrected") : _REPORT.index("rank_biserial") + 1
]
#: The page's table: its first `page_compact` columns shown, the rest one click away.
_ENDPOINT_PAGE: tuple[str, ...] = (
    "task",
    "method",
    "n_seeds",
    "mean_diff",
    "ci",
    "verdict",
    "p_corrected_holm",
    "test",
    "p_corrected",
    "p_strip",
    "r_break_even",
    "p_wilcoxon",
    "p_bayes",
)
_ENDPOINT_REPORT: tuple[str, ...] = (
    *_ENDPOINT_PAGE[: _ENDPOINT_PAGE.index("p_corrected_holm") + 1],
    "significant",
    *_ENDPOINT_TESTS,
    "p_bayes_soft_better",
    "p_bayes_equivalent",
    "p_bayes_baseline_better",
    "p_tost",
)
_OWN_KEYS = {c.key for c in _ENDPOINT_OWN}

ENDPOINT: TableVocabulary = TableVocabulary(
    "primary endpoint",
    (*_ENDPOINT_OWN, *(c for c in _PAIRED_COLUMNS if c.key not in _OWN_KEYS)),
    {
        "page": _ENDPOINT_PAGE,
        "page_compact": _ENDPOINT_PAGE[: _ENDPOINT_PAGE.index("p_corrected_holm") + 1],
        "report": _ENDPOINT_REPORT,
        "report_compact": _ENDPOINT_REPORT[: _ENDPOINT_REPORT.index("significant") + 1],
        "tests": _ENDPOINT_TESTS,
        "rho_named": ("ci", "p_corrected"),
        "bayes": ("p_bayes_soft_better", "p_bayes_equivalent", "p_bayes_baseline_better"),
    },
)

# --------------------------------------------------------------------------------------------
# The variance components of a factorial design (`variance_components.components_table`)
# --------------------------------------------------------------------------------------------

_COMPONENT_COLUMNS: tuple[Column, ...] = (
    *_COMPARED,
    Column("n_splits", "", meaning="split seeds with both methods finished"),
    Column("n_inits", "", meaning="init seeds with both methods finished"),
    Column("n_cells", "", meaning="split × init cells with both methods finished"),
    Column("design", "Splits × inits", meaning="the design's splits × inits in one cell"),
    Column("mean_diff", "Mean A − B", meaning="mean of the difference over every cell"),
    Column("var_split", "σ² split", meaning="the variance the split seed makes"),
    Column("var_init", "σ² init", meaning="the variance the initialisation seed makes"),
    Column("var_residual", "σ² residual", meaning="the split × init interaction and noise"),
    Column("share_split", "", meaning="σ² split's share of one run's variance"),
    Column("share_init", "", meaning="σ² init's share of one run's variance"),
    Column("share_residual", "", meaning="σ² residual's share of one run's variance"),
    Column("shares", "Share split / init / residual", meaning="the three shares in one cell"),
    Column("estimator", "Estimator", meaning="balanced ANOVA, or REML when cells are missing"),
    Column("ci_factorial_low", "", meaning="low end of the factorial interval"),
    Column("ci_factorial_high", "", meaning="high end of the factorial interval"),
    Column("ci_factorial", "95 % CI factorial", meaning="new splits and inits of these films"),
    Column(
        "p_factorial", "p factorial", meaning="the factorial interval's test of a zero difference"
    ),
    Column(
        "df_factorial", "", meaning="Satterthwaite degrees of freedom of the factorial interval"
    ),
    Column("ci_split_means_low", "", meaning="low end of the per-split interval"),
    Column("ci_split_means_high", "", meaning="high end of the per-split interval"),
    Column("ci_split_means", "95 % CI per split", meaning="t on the split means, inits averaged"),
    Column("p_split_means", "", meaning="the per-split interval's test of a zero difference"),
    Column("ci_design_low", "", meaning="low end of the design-corrected interval"),
    Column("ci_design_high", "", meaning="high end of the design-corrected interval"),
    Column(
        "ci_design",
        "95 % CI design-corrected (new patients)",
        meaning="Nadeau–Bengio's n_test/n_train on the split part only: for new patients",
    ),
    Column(
        "p_design", "p design-corrected", meaning="the design-corrected test of a zero difference"
    ),
    Column("df_design", "", meaning="degrees of freedom of the design-corrected interval"),
    Column("test_train_ratio", "", meaning="n_test / n_train of the study's splits"),
    Column("rho_design", "ρ (design)", meaning="the ρ the independent-seeds test would need"),
)
_COMPONENTS_COMPUTED: tuple[str, ...] = (
    *_COMPARED_KEYS,
    "n_splits",
    "n_inits",
    "n_cells",
    "mean_diff",
    "var_split",
    "var_init",
    "var_residual",
    "share_split",
    "share_init",
    "share_residual",
    "estimator",
    "ci_factorial_low",
    "ci_factorial_high",
    "p_factorial",
    "df_factorial",
    "ci_split_means_low",
    "ci_split_means_high",
    "p_split_means",
    "ci_design_low",
    "ci_design_high",
    "p_design",
    "df_design",
    "test_train_ratio",
    "rho_design",
)
#: The computed columns `stats --components` leaves to its CSV (it prints the others).
_COMPONENTS_CSV_ONLY: frozenset[str] = frozenset(
    {
        "n_cells",
        "share_init",
        "share_residual",
        "estimator",
        "p_factorial",
        "df_factorial",
        "ci_split_means_low",
        "ci_split_means_high",
        "p_split_means",
        "df_design",
        "test_train_ratio",
    }
)
#: The page's and the report's table: the interval to trust for new patients (the
#: design-corrected one) right after the difference; the components and the other intervals
#: after it.
_COMPONENTS_SHOWN: tuple[str, ...] = (
    "task",
    "pair",
    "design",
    "mean_diff",
    "ci_design",
    "p_design",
    "var_split",
    "var_init",
    "var_residual",
    "shares",
    "ci_factorial",
    "p_factorial",
    "ci_split_means",
    "rho_design",
    "estimator",
)

COMPONENTS: TableVocabulary = TableVocabulary(
    "variance components",
    _COMPONENT_COLUMNS,
    {
        "computed": _COMPONENTS_COMPUTED,
        "printed": tuple(k for k in _COMPONENTS_COMPUTED if k not in _COMPONENTS_CSV_ONLY),
        "shown": _COMPONENTS_SHOWN,
        # What the page and the report show first; the rest, keyed by task and pair, follows.
        "shown_first": _COMPONENTS_SHOWN[: _COMPONENTS_SHOWN.index("p_design") + 1],
        # One run's variance shared out, split / init / residual.
        "shares": ("share_split", "share_init", "share_residual"),
    },
)

# --------------------------------------------------------------------------------------------
# Friedman and the ANOVAs (`engine.analysis.designs`)
# --------------------------------------------------------------------------------------------

FRIEDMAN: TableVocabulary = TableVocabulary(
    "Friedman test",
    (
        Column("task", "Task", meaning="the task (KL or CPPD)"),
        Column("n_methods", "Methods", meaning="methods ranked"),
        Column("n_blocks", "Seeds (blocks)", meaning="seeds every method ran"),
        Column("chi2", "χ²", meaning="Friedman's statistic"),
        Column("p", "p", meaning="its p"),
        Column("kendall_w", "Kendall's W", meaning="χ² / (n (k − 1)): agreement of the ranks"),
    ),
)

ANOVA: TableVocabulary = TableVocabulary(
    "ANOVA",
    (
        Column("task", "Task", meaning="the task (KL or CPPD)"),
        Column("factor", "Factor", meaning="the factor tested"),
        Column("n_seeds", "Seeds", meaning="seeds (blocks) in the repeated-measures design"),
        Column("F", "F", meaning="the F statistic"),
        Column("num_df", "df", meaning="the effect's degrees of freedom"),
        Column("den_df", "df (error)", meaning="the error's degrees of freedom"),
        Column("df", "df", meaning="degrees of freedom (the OLS table)"),
        Column("SS", "Sum of squares", meaning="the sum of squares (the OLS table)"),
        Column("p", "p", meaning="the F test's p"),
        Column("partial_eta2", "partial η²", meaning="SS_effect / (SS_effect + SS_residual)"),
        Column("gg_epsilon", "Greenhouse–Geisser ε", meaning="the non-sphericity correction"),
        Column("p_gg", "p (Greenhouse–Geisser)", meaning="the p with the correction"),
    ),
    {
        # Columns written as p-values, and as the text they hold; the rest are numbers.
        "p_values": ("p", "p_gg"),
        "as_text": ("factor", "task", "n_seeds"),
    },
)

# --------------------------------------------------------------------------------------------
# The Explorer's configurations of one search (`engine.analysis.explorer.search_table`)
# --------------------------------------------------------------------------------------------

CONFIGURATIONS: TableVocabulary = TableVocabulary(
    "configurations of a search",
    (
        Column("config_index", "Configuration", meaning="the configuration's index in the grid"),
        # One column per hyper-parameter any registered method searches, under its label.
        *(
            Column(name, explorer.PARAM_LABELS[name], meaning="a searched hyper-parameter")
            for name in explorer.SEARCH_PARAMS
        ),
        Column(
            "val_amae",
            explorer.CURVE_LABELS["val_amae"],
            meaning="validation AMAE at the best epoch: the selection rule's score",
        ),
        Column("rank", "Rank", meaning="1 = lowest validation AMAE in the search"),
        Column("epochs_run", "Epochs run", meaning="epochs trained before stopping"),
        Column("best_epoch", "Best epoch", meaning="the epoch whose weights were kept"),
        Column("duration_s", "Training time (s)", meaning="wall-clock seconds of the run"),
        Column("selected", "Selected", meaning="whether the run is the search's selected model"),
    ),
)

# --------------------------------------------------------------------------------------------
# The KL × CPPD summary (`engine.analysis.relationship.summarise_relationship`) and the
# conformal grade sets per method (`engine.analysis.conformal`)
# --------------------------------------------------------------------------------------------

_SEEDS = Column("n_seeds", "Seeds", meaning="seeds the row's numbers are over")

# Its LaTeX export is the paper's Table 7, under the paper's own headers.
RELATIONSHIP: TableVocabulary = TableVocabulary(
    "KL × CPPD summary",
    (
        Column("method", "Method", meaning="the method", latex="Model"),
        _SEEDS,
        Column(
            "kld_mean",
            "KLD mean (nats)",
            meaning="D_KL(true ‖ predicted) of the table",
            latex="KLD mean",
        ),
        Column("kld_std", "KLD sd", meaning="its sd over seeds", latex="KLD std"),
        Column(
            "mae_mean",
            "Cell-count MAE mean",
            meaning="mean |predicted − true| per cell",
            latex="MAE mean",
        ),
        Column("mae_std", "Cell-count MAE sd", meaning="its sd over seeds", latex="MAE std"),
    ),
)

GRADE_SETS: TableVocabulary = TableVocabulary(
    "conformal grade sets",
    (
        Column("task", "Task", meaning="the task (KL or CPPD)"),
        Column("method", "Method", meaning="the method"),
        Column("score", "Score", meaning="the conformal score the sets come from"),
        _SEEDS,
        Column("coverage", "Coverage", meaning="share of test films whose grade is in its set"),
        Column("mean_size", "Mean set size", meaning="grades in a set, on average"),
        Column("singleton_share", "Single grade", meaning="share of sets of one grade"),
        Column("range_share", "Ranges", meaning="share of sets that are one unbroken range"),
    ),
    # The Grade sets tab's per-method table (per-grade coverage columns follow them).
    {
        # What `softgrade sets` prints (its CSV has every column).
        "printed": (
            "task",
            "method",
            "score",
            "n_seeds",
            "coverage",
            "mean_size",
            "singleton_share",
        ),
    },
)

# --------------------------------------------------------------------------------------------
# The paper's Table 4 layout (its LaTeX, and the probability metrics' table in that layout):
# the row's dataset and method, then one column per metric (the metric registry's labels)
# --------------------------------------------------------------------------------------------

TABLE4: TableVocabulary = TableVocabulary(
    "Table 4 (the paper's layout)",
    (
        Column("task", "Dataset", meaning="the task, as the paper names its datasets"),
        Column("method", "Soft-labelling", meaning="the method, as the paper heads it"),
        Column("n_seeds", "Seeds", meaning="seeds the means are over"),
    ),
    {
        # Before the metrics' columns: Table 4's LaTeX, and the probability table's.
        "rows": ("task", "method"),
        "rows_with_seeds": ("task", "method", "n_seeds"),
    },
)

#: Every table declared here, for the test that no page, report or command line restates one.
ALL_TABLES: tuple[TableVocabulary, ...] = (
    PAIRED,
    ENDPOINT,
    COMPONENTS,
    FRIEDMAN,
    ANOVA,
    CONFIGURATIONS,
    RELATIONSHIP,
    GRADE_SETS,
    TABLE4,
)
