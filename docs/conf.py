"""Sphinx configuration for the vsbench documentation.

Built with warnings as errors by the tests (``sphinx-build -W -b html docs OUT``,
tests/unit/test_docs.py). The testcase catalogue and the command-line reference are
generated from the code by the directives in ``_ext/vsbench_docs.py``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "vsbench"
author = "vsbench developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode", "vsbench_docs"]
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
