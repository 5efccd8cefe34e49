"""The bundled 20-seed reference study (``reference-study.zip``, a store bundle) and the
phantom referee's shipped results (``referee/<task>/``): data, not code, shipped inside the store
package rather than as a top-level package of their own, and read through
importlib.resources."""
