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
