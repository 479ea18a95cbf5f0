"""vsbench: a pluggable benchmark framework for virtual switches."""

__version__ = "0.1.0"
