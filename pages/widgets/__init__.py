"""Page helpers that draw Streamlit widgets: the shell, sign-in, cached reads, pickers and each
page's sections.

A sub-package, so Streamlit's page discovery (``pages/*.py``) never lists these as pages.
"""
