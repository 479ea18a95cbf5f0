"""A frame modification (``dut.frame_modification``) as OpenFlow match prerequisites and
actions on the forwarding flows.

Every OvS flavour (ovs_dpdk, ovs_kernel, ovs_tc) forwards with flows, so a modification
is a few actions before ``output`` on each forwarding flow (both directions): VSPERF's
``Frame Modification`` did the same with its own flow tables. An action on a header needs
that header in the flow's match (OpenFlow prerequisites: ``mod_nw_tos`` needs ``ip``,
``mod_tp_src`` needs ``udp``, rewriting a tag needs a tagged frame), so each kind also
names what its flows match; a frame that does not match is dropped and shows as loss,
never delivered unmodified under the modification's name.

Pure: strings only, checked against ``ovs-ofctl parse-flow`` in the unit tests.
"""

from __future__ import annotations

from vsbench.interfaces.modification import KINDS, FrameModification

#: Match on frames carrying an 802.1Q tag (any VID).
TAGGED = "vlan_tci=0x1000/0x1000"


def modification_flow(mod: FrameModification | None) -> tuple[str, str]:
    """(match prerequisites, actions before ``output``) of ``mod``, each "" or a
    comma-separated list ending without a comma; ("", "") without a modification."""
    if mod is None:
        return "", ""
    if mod.kind not in KINDS:
        raise ValueError(f"unknown frame modification kind {mod.kind!r}")
    kind = mod.kind
    if kind == "vlan_push":
        actions = ["push_vlan:0x8100", f"mod_vlan_vid:{mod.vlan_id}"]
        actions.append(f"mod_vlan_pcp:{mod.vlan_pcp or 0}")
        return "", ",".join(actions)
    if kind == "vlan_pop":
        return TAGGED, "strip_vlan"
    if kind == "vlan_rewrite":
        return TAGGED, _set_fields(mod_vlan_vid=mod.vlan_id, mod_vlan_pcp=mod.vlan_pcp)
    if kind == "mpls_push":
        return "ip", f"push_mpls:0x8847,set_mpls_label:{mod.mpls_label}"
    if kind == "mac_rewrite":
        return "", _set_fields(mod_dl_src=mod.src_mac, mod_dl_dst=mod.dst_mac)
    if kind == "dscp":
        return "ip", f"mod_nw_tos:{int(mod.dscp or 0) << 2}"
    if kind == "ttl_set":
        return "ip", f"mod_nw_ttl:{mod.ttl}"
    if kind == "ttl_decrement":
        return "ip", "dec_ttl"
    if kind == "ip_rewrite":
        return "ip", _set_fields(mod_nw_src=mod.src_ip, mod_nw_dst=mod.dst_ip)
    # l4_rewrite: the bulk frames are UDP
    return "udp", _set_fields(mod_tp_src=mod.src_port, mod_tp_dst=mod.dst_port)


def _set_fields(**values: object) -> str:
    """``action:value`` for each field the modification sets (None or "" leaves it as is),
    in the order given."""
    return ",".join(f"{action}:{value}" for action, value in values.items() if value not in (None, ""))
