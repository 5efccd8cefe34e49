"""Study presets (YAML) for the Launch page and `softgrade run`, installed with the
package and read through importlib.resources."""
