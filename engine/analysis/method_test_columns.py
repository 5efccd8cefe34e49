"""The classical method tests' table vocabulary, declared once (issue 40): the Statistics
tab's Shapiro–Wilk, Kruskal–Wallis, pairwise Wilcoxon, ANOVA and Tukey tables
(`engine.analysis.stats`), the KL × CPPD page's tests of the KLD (the paper's Table 7) and
its KLD-against-ε table (`engine.analysis.relationship.kld_sensitivity`).

Each is a `TableVocabulary` (`engine.analysis.table_vocabulary`); the pages read the headers
here and write only the values (`pages.present.stat_tables`).
"""

from __future__ import annotations

from engine.analysis.table_vocabulary import Column, TableVocabulary

#: What the Statistics tab says a pairwise test found (Wilcoxon and Tukey alike).
_DIFFER = "Differ (α = 0.05)"

# The columns of every `engine.analysis.stats.TestResult` table, under one set of headers: a
# table shows the ones it has, in its own order (the test's frame decides which).
METHOD_TESTS: TableVocabulary = TableVocabulary(
    "method tests",
    (
        Column("method", "Method", meaning="the method"),
        Column("n", "n", meaning="seeds the test used"),
        Column("normal", "Looks normal", meaning="Shapiro–Wilk p ≥ α: no evidence against normal"),
        Column("test", "Test", meaning="the test run"),
        Column("methods", "Methods", meaning="methods compared"),
        Column("method_a", "Method A", meaning="method A of the pair"),
        Column("method_b", "Method B", meaning="method B of the pair"),
        Column("n_seeds", "Paired seeds", meaning="seeds both methods ran"),
        Column("median_diff", "Median A − B", meaning="median over seeds of the difference"),
        Column("statistic", "Statistic", meaning="the test's statistic"),
        Column("p", "p", meaning="the test's p"),
        Column("p_adj", "Adjusted p", meaning="the p after the chosen correction"),
        Column("correction", "Correction", meaning="the multiplicity correction applied"),
        Column("significant", _DIFFER, meaning="adjusted p below 0.05"),
        Column("factor", "Factor", meaning="the ANOVA's factor"),
        Column("group1", "Method A", meaning="Tukey's first method"),
        Column("group2", "Method B", meaning="Tukey's second method"),
        Column("meandiff", "Mean B − A", meaning="Tukey's mean difference, B − A"),
        Column("lower", "95% CI low", meaning="low end of Tukey's simultaneous interval"),
        Column("upper", "95% CI high", meaning="high end of Tukey's simultaneous interval"),
        Column("reject", _DIFFER, meaning="Tukey rejects equal means"),
        Column("mean", "Mean", meaning="the method's mean over seeds"),
    ),
    # Written as p-values (the rest as numbers, yes/no or text by their type).
    {"p_values": ("p", "p_adj")},
)

# The paper's Table 7: the tests of the KLD, one row per test and the models it compared.
KLD_TESTS: TableVocabulary = TableVocabulary(
    "tests of the KLD (Table 7)",
    (
        Column("test", "Statistical test", meaning="the test and, pairwise, its correction"),
        Column("models", "Model(s)", meaning="the model, all models, or the pair compared"),
        Column("statistic", "Statistic", meaning="W, H or the signed-rank statistic"),
        Column("p", "p", meaning="its p (pairwise: the adjusted p)"),
    ),
)


def kld_at_eps_header(eps: float) -> str:
    """The KLD-sensitivity table's column of the mean KLD at one ε."""
    return f"KLD at ε = {eps:g}"


# The KLD against the ε given to empty cells (`relationship.kld_sensitivity`), per method;
# one column per ε (:func:`kld_at_eps_header`) follows the method.
KLD_SENSITIVITY: TableVocabulary = TableVocabulary(
    "KLD against ε",
    (
        Column("method", "Method", meaning="the method"),
        Column(
            "missed_mass", "Missed share", meaning="true share in cells the method leaves empty"
        ),
        Column(
            "kld_smoothed",
            "Smoothed KLD (Jeffreys)",
            meaning="the KLD with half a film added to every predicted cell",
        ),
    ),
    {"after_eps": ("missed_mass", "kld_smoothed")},
)

#: Every table declared here.
TABLES: tuple[TableVocabulary, ...] = (METHOD_TESTS, KLD_TESTS, KLD_SENSITIVITY)
