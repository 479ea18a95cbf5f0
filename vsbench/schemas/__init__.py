"""JSON schemas of every file vsbench reads or writes (data only; a package so that
setuptools ships it without warnings)."""
