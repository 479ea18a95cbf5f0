"""Render a page model (:mod:`vsbench.results.page_model`) through its Jinja2 template.

Autoescape is on for every template, undefined names are errors (a typo in a template
fails the tests instead of printing nothing), and the templates ship inside the package
(``vsbench/results/templates``), so an installed vsbench renders without a checkout.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("vsbench.results", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
        keep_trailing_newline=True,
    )


def render(template: str, **context: Any) -> str:
    """The text of ``template`` (a file name in templates/) over ``context``."""
    return environment().get_template(template).render(**context)
