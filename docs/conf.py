"""Sphinx configuration for the vsbench documentation (``sphinx-build docs docs/_build``)."""

project = "vsbench"
author = "vsbench developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
