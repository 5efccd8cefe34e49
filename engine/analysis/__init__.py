"""Reviewer-grade statistics of a study (issue 21): inference that counts the films as well as
the seeds, effect sizes, designs blocked by seed, the KLD decomposed, scoring against the
phantom's true grades, calibration with its noise floor, power and budget-matched selection.

Science only: pandas/numpy/scipy/statsmodels in, DataFrames and dataclasses out.
"""
