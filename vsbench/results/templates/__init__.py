"""The Jinja2 templates of every HTML page vsbench writes (see vsbench.results.render).

A package only so that setuptools ships it as one; nothing is imported from here.
"""
