"""``python -m vsbench ...``: the ``vsbench`` command without its console script (a checkout
on PYTHONPATH, or a venv whose bin/ is not on PATH)."""

import sys

from vsbench.cli.main import main

sys.exit(main())
