"""A lab's metric package as ``SOFTGRADE_METRIC_PACKAGES`` names it (docs/add-a-metric.md).

Nothing in the checkout names this package; the tests that set the variable to
``tests.helpers.metric_plugin`` see its metric reach every view that reads the registry.
"""
