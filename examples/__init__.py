"""The bundled 20-seed reference study (``reference-study.zip``), installed with the
package and read through importlib.resources."""
