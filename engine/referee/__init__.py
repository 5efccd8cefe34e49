"""The phantom as referee of the statistics: draw independent phantom datasets, train the same
design on each and score the selected models on fresh films (`python -m jobs
calibrate-inference`).

==============  =============================================================================
``design``      :class:`RefereeDesign`: datasets, seeds, methods, the null pair, sizes
``render``      the datasets' and the fresh set's caches, rendered ahead in worker processes
``runs``        :func:`run_referee`: the training loop (in process, no store), per-run results
==============  =============================================================================

The arithmetic over the results (coverage, type-I error, the realised correlation) is
`engine.analysis.referee`. This package's ``__init__`` imports nothing, so a rendering
process does not load torch.
"""
