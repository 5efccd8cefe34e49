"""Study presets (YAML) for the Launch page and `softgrade run`: data, not code, shipped
inside the engine package (beside the StudySpec they validate against) rather than as a
top-level package of their own, and read through importlib.resources."""
