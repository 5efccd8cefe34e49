"""Every table vocabulary the engine declares, in one tuple (issue 40), for the test that no
page, report or command-line module restates one (tests/test_table_vocabulary.py).

The declarations live by concept: `table_columns` (the paired comparisons and the other
reviewer statistics), `method_test_columns` (the classical method tests, Table 7),
`inference_columns` (KLD parts, calibration, truth, budget matching, power) and
`referee_columns` (the phantom referee's tables).
"""

from __future__ import annotations

from engine.analysis import inference_columns, method_test_columns, referee_columns
from engine.analysis.table_columns import ALL_TABLES as REVIEWER_TABLES
from engine.analysis.table_vocabulary import TableVocabulary

EVERY_TABLE: tuple[TableVocabulary, ...] = (
    *REVIEWER_TABLES,
    *method_test_columns.TABLES,
    *inference_columns.TABLES,
    *referee_columns.TABLES,
)
