"""The testpmd VNF: dpdk-testpmd between vhost-user or veth ports (see :mod:`.plugin`).

:mod:`.argv` builds its command line with pure functions, for reuse by anything that runs
testpmd elsewhere (in a VM); :mod:`.stats` parses its console output; :mod:`.console`
drives it over a pty.
"""

from .plugin import Testpmd

__all__ = ["Testpmd"]
