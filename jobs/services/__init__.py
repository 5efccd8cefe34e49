"""Lab services the pages and the command line share: access rules and the page registry,
role-checked verbs on a person's behalf, provenance, imports, reviews, the kiosk and demo
bundles, study analysis, CSV safety and export cards."""
