"""Frame modification: what the device under test does to every frame it forwards.

VSPERF's ``Frame Modification`` testcase knob measures a switch that rewrites frames on its
forwarding path (push a VLAN tag, set a DSCP, rewrite an address...). Here it is one
declarative setting, ``dut.frame_modification``, e.g. ``{kind: vlan_push, vlan_id: 100}``:
a closed set of kinds (:data:`KINDS`), each with its own parameters and nothing else, so a
typo is a one-line error before anything is created, never a silently unmodified path.

The same :class:`FrameModification` is given to both sides, which is what makes the figure
honest:

* the switch (``context.run.frame_modification``) turns it into its forwarding path (OvS:
  OpenFlow actions; the Linux bridge: VLAN filtering), and declares the kinds it can do in
  :attr:`~vsbench.interfaces.vswitch.VSwitch.frame_modifications` (the preflight refuses
  the others, with the reason the switch gives);
* the generator (``TrafficProfile.frame_modification``) expects every frame to arrive
  modified, counts a correctly modified frame as received and an unmodified or wrongly
  modified one as delivered wrong (``rx_wrong_frames``); a generator declares the kinds it
  verifies in :attr:`~vsbench.interfaces.trafficgen.TrafficGenerator.frame_modifications`.

The modification applies to every direction of the traffic (both when bidirectional), as
VSPERF's did. Frame sizes, offered rates and bit rates are those of the frames *sent*; a
kind that adds or removes a header changes the size of the frames received by
:attr:`FrameModification.size_delta_bytes` (a pushed VLAN tag: +4 B).

Pure: parsing and describing only; no switch or socket is touched.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, fields
from typing import Any, Mapping

#: Every kind, with its parameters: (name, type, required). A kind with "one of" parameters
#: lists them in :data:`ONE_OF` (at least one must be given).
KINDS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "vlan_push": (("vlan_id", "vid", True), ("vlan_pcp", "pcp", False)),
    "vlan_pop": (),
    "vlan_rewrite": (("vlan_id", "vid", False), ("vlan_pcp", "pcp", False)),
    "mpls_push": (("mpls_label", "label", True),),
    "mac_rewrite": (("src_mac", "mac", False), ("dst_mac", "mac", False)),
    "dscp": (("dscp", "dscp", True),),
    "ttl_set": (("ttl", "ttl", True),),
    "ttl_decrement": (),
    "ip_rewrite": (("src_ip", "ipv4", False), ("dst_ip", "ipv4", False)),
    "l4_rewrite": (("src_port", "port", False), ("dst_port", "port", False)),
}
#: Kinds whose optional parameters are "at least one of".
ONE_OF = ("vlan_rewrite", "mac_rewrite", "ip_rewrite", "l4_rewrite")
#: Kinds that need the frames sent VLAN-tagged (``traffic.fields.vlan_id``).
NEEDS_TAGGED = ("vlan_pop", "vlan_rewrite")
#: Bytes a kind adds to (or removes from) every frame between sender and receiver.
SIZE_DELTA_BYTES = {"vlan_push": 4, "vlan_pop": -4, "mpls_push": 4}
#: Bytes the kind moves the IPv4 header (and so the UDP payload) back by in the frame a
#: receiving port's packet socket sees. A VLAN tag is not among them: the kernel takes the
#: outer tag off into the packet's metadata before any packet socket sees the frame.
L3_SHIFT_BYTES = {"mpls_push": 4}

_MAC_RE = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
_RANGES = {"vid": (0, 4095), "pcp": (0, 7), "label": (16, (1 << 20) - 1), "dscp": (0, 63),
           "ttl": (0, 255), "port": (0, 65535)}


class ModificationError(ValueError):
    """``dut.frame_modification`` is not a modification this vsbench knows; one line."""


@dataclass(frozen=True)
class FrameModification:
    """One frame modification (module docstring). Unset parameters are None."""

    kind: str
    vlan_id: int | None = None
    vlan_pcp: int | None = None
    mpls_label: int | None = None
    src_mac: str | None = None
    dst_mac: str | None = None
    dscp: int | None = None
    ttl: int | None = None
    src_ip: str | None = None
    dst_ip: str | None = None
    src_port: int | None = None
    dst_port: int | None = None

    @property
    def size_delta_bytes(self) -> int:
        """How much longer (negative: shorter) a frame arrives than it was sent."""
        return SIZE_DELTA_BYTES.get(self.kind, 0)

    @property
    def l3_shift_bytes(self) -> int:
        """How far the IPv4 header moves in the frame a packet socket receives."""
        return L3_SHIFT_BYTES.get(self.kind, 0)

    @property
    def needs_tagged_frames(self) -> bool:
        return self.kind in NEEDS_TAGGED

    def params(self) -> dict[str, Any]:
        """The parameters that are set, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "kind" and getattr(self, f.name) is not None}

    def describe(self) -> str:
        """``vlan_push vlan_id=100``: one line for notes and errors."""
        return " ".join([self.kind, *(f"{k}={v}" for k, v in self.params().items())])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params()}


def _value(kind: str, name: str, typ: str, value: Any) -> Any:
    where = f"dut.frame_modification {kind}: {name}"
    if typ in _RANGES:
        low, high = _RANGES[typ]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ModificationError(f"{where} must be an integer {low}..{high}, got {value!r}")
        return int(value)
    if typ == "mac":
        if not isinstance(value, str) or not _MAC_RE.match(value):
            raise ModificationError(f"{where} must be a MAC address like 02:00:00:00:00:09, got {value!r}")
        return value.lower()
    try:
        return str(ipaddress.IPv4Address(str(value)))
    except ValueError:
        raise ModificationError(f"{where} must be an IPv4 address, got {value!r}") from None


def from_setting(setting: Mapping[str, Any] | None) -> FrameModification | None:
    """The :class:`FrameModification` of ``dut.frame_modification`` (None when unset).

    The set is closed: an unknown kind, a parameter another kind takes, a missing required
    parameter or a value out of range is a :class:`ModificationError`."""
    if setting is None:
        return None
    if not isinstance(setting, Mapping):
        raise ModificationError(f"dut.frame_modification must be a mapping with a kind, got {setting!r}")
    kind = setting.get("kind")
    if kind not in KINDS:
        raise ModificationError(f"dut.frame_modification.kind must be one of {', '.join(KINDS)}, got {kind!r}")
    allowed = {name: (typ, required) for name, typ, required in KINDS[kind]}
    unknown = sorted(str(k) for k in setting if k != "kind" and k not in allowed)
    if unknown:
        takes = ", ".join(allowed) or "no parameters"
        raise ModificationError(f"dut.frame_modification {kind} takes {takes}; not {', '.join(unknown)}")
    values = dict(setting)
    for name, (typ, required) in allowed.items():
        if values.get(name) is None:
            if required:
                raise ModificationError(f"dut.frame_modification {kind} needs {name}")
            values.pop(name, None)
            continue
        values[name] = _value(kind, name, typ, values[name])
    if kind in ONE_OF and len(values) == 1:
        raise ModificationError(f"dut.frame_modification {kind} needs at least one of {', '.join(allowed)}")
    return FrameModification(**values)


def check_fields(mod: FrameModification | None, vlan_id: int | None) -> str | None:
    """Why ``mod`` cannot apply to frames sent with ``vlan_id`` (``traffic.fields.vlan_id``,
    None: untagged), or None: a kind that pops or rewrites a tag needs tagged frames, and
    one that pushes a tag or works on the IPv4 header (which the generator reads right
    behind the Ethernet header) needs untagged ones."""
    if mod is None:
        return None
    if mod.needs_tagged_frames and vlan_id is None:
        return (f"dut.frame_modification {mod.kind} needs VLAN-tagged frames: set traffic.fields.vlan_id")
    if not mod.needs_tagged_frames and vlan_id is not None:
        return (f"dut.frame_modification {mod.kind} is measured on untagged frames; "
                f"leave traffic.fields.vlan_id unset (it is {vlan_id})")
    return None
