"""``--rate``: a fixed rate, or which search, from the command line (NFVbench's spelling).

Why its own module: the option is only a shorthand for configuration keys, so it is turned
into ``--test-params``-style overrides (dotted paths) and nothing else changes -- the plan
shows them in its resolved config.yaml and the run is exactly the one those keys make.

* ``50%`` -- percent of the line rate (aggregate over the sending ports, as every load);
* ``1Mpps``, ``500kpps``, ``2000pps`` -- frames/s, aggregate;
* ``2.5Gbps``, ``100Mbps``, ``800kbps``, ``1e6bps`` -- L1 bit/s (preamble, SFD and gap
  counted), aggregate; each frame size (a mix: its mean) gives its own frames/s;
* ``ndr_pdr`` -- the search for NDR and PDR (the default); ``ndr`` or ``pdr`` alone -- the
  search with that one goal.

A fixed rate makes the plan's traffic type ``continuous``: per frame size one trial of
``traffic.trial_duration_s`` at the rate (after the usual warm-up), reporting the offered
and received rate and the loss. Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: The search goals ``--rate ndr`` / ``--rate pdr`` keep (conf/10_traffic.yaml's defaults).
NDR_GOAL = {"name": "NDR", "loss_ratio": 0.0, "exceed_ratio": 0.5}
PDR_GOAL = {"name": "PDR", "loss_ratio": 0.005, "exceed_ratio": 0.5}

_UNITS = {"pps": ("traffic.rate_fps", 1.0), "kpps": ("traffic.rate_fps", 1e3),
          "mpps": ("traffic.rate_fps", 1e6), "gpps": ("traffic.rate_fps", 1e9),
          "bps": ("traffic.rate_l1_bps", 1.0), "kbps": ("traffic.rate_l1_bps", 1e3),
          "mbps": ("traffic.rate_l1_bps", 1e6), "gbps": ("traffic.rate_l1_bps", 1e9)}
_FIXED = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(%|[kmg]?pps|[kmg]?bps)\s*$", re.IGNORECASE)
#: Every rate key a fixed rate sets, the others cleared so exactly one applies.
RATE_KEYS = ("traffic.rate_fps", "traffic.rate_percent", "traffic.rate_l1_bps")
SPELLINGS = "50%, 1Mpps, 500kpps, 2.5Gbps (L1), ndr_pdr, ndr or pdr"


class RateError(ValueError):
    """``--rate`` cannot be read; one line naming what it takes."""


def overrides(text: str) -> dict[str, Any]:
    """The configuration overrides (dotted path -> value) ``--rate text`` stands for."""
    word = str(text).strip().lower()
    if word == "ndr_pdr":
        return {"traffic.type": "rfc2544_throughput", "search.goals": [dict(NDR_GOAL), dict(PDR_GOAL)]}
    if word in ("ndr", "pdr"):
        return {"traffic.type": "rfc2544_throughput", "search.goals": [dict(NDR_GOAL if word == "ndr" else PDR_GOAL)]}
    found = _FIXED.match(word)
    if not found:
        raise RateError(f"--rate {text!r}: expected a rate such as {SPELLINGS}")
    value, unit = float(found.group(1)), found.group(2).lower()
    if not math.isfinite(value) or value <= 0:
        raise RateError(f"--rate {text!r}: the rate must be above 0")
    if unit == "%":
        if value > 100:
            raise RateError(f"--rate {text!r}: at most 100% of the line rate")
        key, number = "traffic.rate_percent", value
    else:
        key, scale = _UNITS[unit]
        number = value * scale
    out: dict[str, Any] = {"traffic.type": "continuous"}
    out.update({k: None for k in RATE_KEYS})
    out[key] = number
    return out
