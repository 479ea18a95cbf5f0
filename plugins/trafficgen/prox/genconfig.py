"""Render the PROX generator configuration shipped with the plugin (``prox-gen.cfg``).

Placeholders are ``@@name@@`` so they never clash with PROX's own ``$var``/``${var}``
substitution. Rendering fails (one line) when the template names a placeholder we have no
value for, so a user's own template with a typo is caught before PROX starts.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import FlowFields

from vsbench_plugins.trafficgen.prox import packets

_PLACEHOLDER = re.compile(r"@@([a-z0-9_]+)@@")
TEMPLATE_NAME = "prox-gen.cfg"


def shipped_template() -> str:
    return resources.files("vsbench_plugins.trafficgen.prox").joinpath(TEMPLATE_NAME).read_text()


def render(template: str, values: Mapping[str, Any]) -> str:
    missing = sorted({m for m in _PLACEHOLDER.findall(template) if m not in values})
    if missing:
        raise PluginError(f"prox: config template has unknown placeholders: {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def template_values(settings: Mapping[str, Any], fields: FlowFields) -> dict[str, Any]:
    """Every placeholder a template may use: ``gen_core_<port>``/``lat_core_<port>`` (first
    core), ``gen_cores_<port>``/``lat_cores_<port>`` (comma list), ``pkt_<port>`` (hex frame),
    ``port<N>_mac``, ``eal``, ``master_core``, ``signature``, ``bucket_size_exp``."""
    pci = settings.get("pci_devices") or []
    eal = ("eal=" + " ".join(f"--allow {p}" for p in pci)) if pci else (
        ";; no PCI allow-list (set trafficgen.prox.pci_devices to restrict DPDK's probing)")
    values: dict[str, Any] = {
        "eal": eal,
        "master_core": settings.get("master_core", 0),
        "signature": f"0x{packets.SIGNATURE:08x}",
        "bucket_size_exp": settings.get("latency_bucket_exp", 11),
        "pkt_0": packets.hex_bytes(packets.template_packet(fields)),
        "pkt_1": packets.hex_bytes(packets.template_packet(packets.reversed_fields(fields))),
    }
    for port, mac in enumerate(settings.get("port_macs") or ["hardware", "hardware"]):
        values[f"port{port}_mac"] = mac
    for role in ("gen", "lat"):
        for port, cores in enumerate(settings[f"{role}_cores"]):
            values[f"{role}_cores_{port}"] = ",".join(str(c) for c in cores)
            values[f"{role}_core_{port}"] = cores[0]
    return values


def check_shipped_layout(settings: Mapping[str, Any]) -> None:
    gen, lat = settings["gen_cores"], settings["lat_cores"]
    if len(gen) != 2 or len(lat) != 2 or any(len(c) != 1 for c in (*gen, *lat)):
        raise PluginError(
            "prox: the shipped config template has one generator and one latency core per "
            "port; give trafficgen.prox.config_template for other layouts"
        )


def write_config(settings: Mapping[str, Any], fields: FlowFields, path: Path) -> Path:
    """Render the configured (or shipped) template to ``path``."""
    template_path = settings.get("config_template")
    if template_path:
        try:
            template = Path(template_path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PluginError(f"prox: cannot read config template {template_path}: {exc.strerror}") from None
    else:
        check_shipped_layout(settings)
        template = shipped_template()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(template, template_values(settings, fields)), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- testbed

#: What one ``[core]`` task does: ``("gen", port)`` sends on ``port``, ``("lat", port)``
#: receives on ``port`` (and measures the latency of what arrives there).
TaskRole = tuple[str, int]


def testbed_layout(settings: Mapping[str, Any], directions: int) -> dict[int, list[TaskRole]]:
    """Core -> its tasks in task-id order, for a PROX on the embedded testbed.

    Port ``p``'s generator task runs on ``gen_cores[p][0]`` (only for the ``directions``
    sending ports), its latency task on ``lat_cores[p][0]`` (for both ports, always: a
    ``net_af_packet`` port without a receiving task gets PROX's small default mempool,
    whose 1528 B mbufs cannot hold the 2016 B frames of af_packet's default ring, and its
    RX queue setup fails). Several tasks may share a core (a 2-CPU host has one worker
    lcore besides the master), but not two generator tasks: PROX names the generator's
    flow table after the core only (``A%03d_hash_gen_table`` in handle_gen.c), so a
    second one on the same core panics at start-up."""
    master = int(settings.get("master_core", 0))
    layout: dict[int, list[TaskRole]] = {}
    gen_seen: dict[int, int] = {}
    for port in range(directions):
        core = int(settings["gen_cores"][port][0])
        if core in gen_seen:
            raise PluginError(
                f"prox: generator cores of ports {gen_seen[core]} and {port} are both core {core}; PROX "
                f"runs one generator task per core (its flow table is named after the core): give "
                f"trafficgen.prox.gen_cores two cores, or send one way (traffic.bidirectional=false)")
        gen_seen[core] = port
        layout.setdefault(core, []).append(("gen", port))
    for port in range(2):
        layout.setdefault(int(settings["lat_cores"][port][0]), []).append(("lat", port))
    if master in layout:
        raise PluginError(f"prox: core {master} is the master core (trafficgen.prox.master_core); PROX's "
                          f"master runs no other task: move gen_cores/lat_cores off it")
    return dict(sorted(layout.items()))


def task_map(layout: Mapping[int, list[TaskRole]]) -> dict[TaskRole, tuple[int, int]]:
    """``(role, port) -> (core, task id)`` of a :func:`testbed_layout`."""
    return {role: (core, task) for core, roles in layout.items() for task, role in enumerate(roles)}


def _task_section(role: TaskRole, task: int, settings: Mapping[str, Any], fields: FlowFields) -> list[str]:
    kind, port = role
    common = [f"lat pos={packets.LAT_POS}", f"accuracy pos={packets.ACCURACY_POS}",
              f"packet id pos={packets.PACKET_ID_POS}", f"signature=0x{packets.SIGNATURE:08x}",
              f"signature pos={packets.SIGNATURE_POS}"]
    if kind == "gen":
        pkt = packets.template_packet(fields if port == 0 else packets.reversed_fields(fields))
        return [f"name=gen{port}", f"task={task}", "mode=gen", f"tx port=p{port}", "bps=1250000",
                f"pkt inline={packets.hex_bytes(pkt)}", "pkt size=60", *common]
    return [f"name=lat{port}", f"task={task}", "mode=lat", f"rx port=p{port}", *common,
            "accuracy limit nsec=1000000",
            f"latency bucket size={int(settings.get('latency_bucket_exp', 11))}"]


def render_testbed(settings: Mapping[str, Any], fields: FlowFields, layout: Mapping[int, list[TaskRole]],
                   eal_args: list[str]) -> str:
    """The PROX configuration of a PROX on the embedded testbed's generator ports.

    ``eal_args``: the EAL arguments vsbench chose (``--vdev=net_af_packet<i>,iface=...`` for
    the two generator veth ends, the private file prefix and huge dir, memory). PCI probing is
    off (``no-pci=yes``): PROX must never touch a host NIC. Ports take ``lsc=no``: af_packet
    has no link-state interrupt and PROX refuses to start a port that asks for one."""
    lines = [
        ";; rendered by vsbench (plugins/trafficgen/prox/genconfig.py) for the embedded testbed",
        "[eal options]", "-n=4", "no-output=no", "no-pci=yes", "eal=" + " ".join(eal_args), "",
    ]
    for port in range(2):
        lines += [f"[port {port}]", f"name=p{port}", "mac=hardware", "lsc=no",
                  "rx desc=512", "tx desc=512", ""]
    lines += ["[defaults]", "mempool size=4K", "", "[global]", "name=vsbench-gen", "",
              f"[core {int(settings.get('master_core', 0))}]", "mode=master", ""]
    for core, roles in layout.items():
        lines.append(f"[core {core}]")
        for task, role in enumerate(roles):
            lines += _task_section(role, task, settings, fields) + [""]
    return "\n".join(lines)
