"""Presentation without Streamlit: charts, tables, formats, exports and estimates as values,
unit-tested without a server. Nothing here imports streamlit.
"""
