"""A port's real link speed as ethtool reports it, or why it has none.

"% of line rate" is only meaningful against the speed of the link a generator port sends
on. A NIC reports the speed it negotiated (``Speed: 25000Mb/s``); a software interface
reports a made-up one (a veth says 10000 Mb/s, a tun 10 Mb/s) or none. So a speed is taken
from a port only when ethtool names a bus for it (``bus-info``: a PCI address, the device
behind the interface): there the line rate is the port's, elsewhere it stays nominal
(``testbed.link_gbps``) and the report says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vsbench.system import commands

_SPEED = re.compile(r"^\s*Speed:\s*(\d+)\s*Mb/s\s*$", re.MULTILINE)


@dataclass(frozen=True)
class LinkSpeed:
    """One port's link speed (L1 bits/s) and where it came from.

    ``speed_bps`` None: the port has no speed of its own (a software interface, a link
    down or a speed the driver does not know); ``source`` then says why, else what
    reported the speed, e.g. ``ethtool (e1000e, 0000:00:03.0)``."""

    speed_bps: float | None
    source: str


def parse_driver_info(text: str) -> dict[str, str]:
    """``ethtool -i IFACE``'s ``key: value`` lines as a dict (empty values kept as '')."""
    info: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip()] = value.strip()
    return info


def parse_speed_mbps(text: str) -> int | None:
    """The ``Speed:`` of ``ethtool IFACE`` in Mb/s; None for ``Unknown!`` or no such line."""
    match = _SPEED.search(text)
    return int(match.group(1)) if match else None


def from_ethtool(iface: str, driver_info: str, settings: str) -> LinkSpeed:
    """The speed ``ethtool -i IFACE`` (``driver_info``) and ``ethtool IFACE`` (``settings``)
    say ``iface`` has, believed only for an interface with a device behind it."""
    info = parse_driver_info(driver_info)
    driver = info.get("driver") or "unknown driver"
    bus = info.get("bus-info", "")
    if not bus or bus == "N/A":
        return LinkSpeed(None, f"{iface} is a {driver} interface with no device behind it: "
                               "no link speed of its own")
    mbps = parse_speed_mbps(settings)
    if not mbps:
        return LinkSpeed(None, f"{iface} ({driver}, {bus}) reports no link speed (link down?)")
    return LinkSpeed(mbps * 1e6, f"ethtool ({driver}, {bus})")


def probe(iface: str, netns: str | None = None) -> LinkSpeed:
    """Ask ethtool for ``iface``'s speed (inside ``netns`` if given). Never raises: a port
    ethtool cannot read has no speed of its own, and the reason says what failed."""
    try:
        info = commands.run(["ethtool", "-i", iface], netns=netns, timeout_s=10.0)
        settings = commands.run(["ethtool", iface], netns=netns, check=False, timeout_s=10.0)
    except commands.CommandError as exc:
        return LinkSpeed(None, f"ethtool could not read {iface}: {exc}")
    return from_ethtool(iface, info.stdout, settings.stdout)
