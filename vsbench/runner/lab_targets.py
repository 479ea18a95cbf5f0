"""The NICs and busy-polling cores a resolved configuration puts on this host.

Read from the selected plugins' settings by key, never by importing a plugin (the core
loads plugins only through entry points): a plugin -- built-in or a vendor's -- that names
its keys like these gets its NICs and cores checked by ``vsbench doctor --host``:

- PCI NICs: ``ports: [{pci: ...}]`` (OvS-DPDK), ``pci_devices: [...]`` (DPDK generators),
  and ``testbed.dut_ports: [{pci: ...}]``;
- busy-polling CPUs: ``pmd_cpu_mask`` (a hex mask), ``forward_cpus``, ``lcore_cpus`` or
  ``lcore_cpu`` (VNF lcores), ``gen_cores`` / ``lat_cores`` (PROX), and ``vm.vcpu_cpus``
  for a VNF in a VM (``mode: vm``).

A plugin that runs elsewhere (``ssh`` set, or a ``host`` that is not this one) is listed as
remote: its NICs and cores are another host's, checked by ``doctor --host`` there.
A value that cannot be read as a PCI address or CPUs becomes one ``problems`` line.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from vsbench.runner.doctor import selected_plugins
from vsbench.system import cpu
from vsbench.system.host_targets import ConfiguredCores, ConfiguredNic, HostTargets

LOCAL_HOSTS = ("127.0.0.1", "::1", "localhost", "")
#: Keys holding a flat or nested list of CPU numbers, with the owner's word for them.
CPU_LIST_KEYS = {"forward_cpus": "forwarding lcores", "lcore_cpus": "lcores", "gen_cores": "generator cores",
                 "lat_cores": "latency cores"}


class _Problem(ValueError):
    """A configuration value that is not what its key promises (one line)."""


def _flat_cpus(value: Any, source: str) -> tuple[int, ...]:
    if isinstance(value, bool) or value is None:
        raise _Problem(f"{source}: not a CPU list ({value!r})")
    if isinstance(value, int):
        if value < 0:
            raise _Problem(f"{source}: negative CPU {value}")
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(sorted({c for item in value for c in _flat_cpus(item, source)}))
    raise _Problem(f"{source}: not a CPU list ({value!r})")


def _remote_host(settings: Mapping[str, Any]) -> str | None:
    ssh = settings.get("ssh")
    if isinstance(ssh, Mapping) and ssh.get("host"):
        return str(ssh["host"])
    host = settings.get("host")
    if isinstance(host, str) and host not in LOCAL_HOSTS:
        return host
    return None


def _cores(name: str, settings: Mapping[str, Any], prefix: str) -> list[ConfiguredCores]:
    found = []
    mask = settings.get("pmd_cpu_mask")
    if mask is not None:
        try:
            cpus = tuple(sorted(cpu.mask_to_cpus(mask)))
        except (ValueError, TypeError):
            raise _Problem(f"{prefix}.pmd_cpu_mask: not a CPU mask ({mask!r})") from None
        found.append(ConfiguredCores(f"{name} PMD", cpus, f"{prefix}.pmd_cpu_mask"))
    if settings.get("mode") == "vm":
        pins = (settings.get("vm") or {}).get("vcpu_cpus")
        if pins is not None:
            found.append(ConfiguredCores(f"{name} VM vCPUs", _flat_cpus(pins, f"{prefix}.vm.vcpu_cpus"),
                                         f"{prefix}.vm.vcpu_cpus"))
        return found
    for key, word in CPU_LIST_KEYS.items():
        if settings.get(key) is not None:
            found.append(ConfiguredCores(f"{name} {word}", _flat_cpus(settings[key], f"{prefix}.{key}"),
                                         f"{prefix}.{key}"))
    if settings.get("lcore_cpus") is None and settings.get("lcore_cpu") is not None:
        found.append(ConfiguredCores(f"{name} lcore", _flat_cpus(settings["lcore_cpu"], f"{prefix}.lcore_cpu"),
                                     f"{prefix}.lcore_cpu"))
    return found


def _pci_entries(entries: Any, source: str, strings: bool = False) -> list[tuple[str, str]]:
    """``(pci, source)`` of a list of ``{pci: ...}`` mappings (and of address strings with
    ``strings``; a string of ``testbed.dut_ports`` is an interface name)."""
    found = []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        pci = entry.get("pci") if isinstance(entry, Mapping) else entry if strings and isinstance(entry, str) else None
        if pci is not None:
            found.append((str(pci), f"{source}[{index}]"))
    return found


def _nics(name: str, settings: Mapping[str, Any], prefix: str) -> list[ConfiguredNic]:
    found = [ConfiguredNic(f"{name} port {i}", pci, f"{src}.pci")
             for i, (pci, src) in enumerate(_pci_entries(settings.get("ports"), f"{prefix}.ports"))]
    found += [ConfiguredNic(f"{name} port {i}", pci, src)
              for i, (pci, src) in enumerate(_pci_entries(settings.get("pci_devices"), f"{prefix}.pci_devices", strings=True))]
    return found


def of_config(config: Mapping[str, Any], selected: Iterable[tuple[str, str]]) -> HostTargets:
    """The targets of ``config`` for the ``(kind, name)`` plugins a run would load."""
    nics: list[ConfiguredNic] = []
    cores: list[ConfiguredCores] = []
    remote: list[tuple[str, str]] = []
    problems: list[str] = []
    for kind, name in selected:
        settings = (config.get(kind) or {}).get(name)
        if not isinstance(settings, Mapping):
            continue
        prefix = f"{kind}.{name}"
        host = _remote_host(settings)
        if host is not None:
            remote.append((f"{kind} {name}", host))
            continue
        try:
            nics += _nics(name, settings, prefix)
            cores += _cores(name, settings, prefix)
        except _Problem as exc:
            problems.append(str(exc))
    testbed = config.get("testbed") or {}
    known = {n.pci for n in nics}
    userspace_switch = any(c.owner.endswith(" PMD") for c in cores)  # its ports are DPDK's
    nics += [ConfiguredNic(f"testbed DUT port {i}", pci, f"{src}.pci", dpdk=userspace_switch)
             for i, (pci, src) in enumerate(_pci_entries(testbed.get("dut_ports"), "testbed.dut_ports"))
             if pci not in known]
    link = testbed.get("link_gbps")
    return HostTargets(tuple(nics), tuple(cores), tuple(remote), tuple(problems),
                       float(link) if isinstance(link, (int, float)) and not isinstance(link, bool) else None)


def of_configs(configs: Iterable[Mapping[str, Any]]) -> HostTargets:
    """The union over a run's plans (each plan's resolved config names its plugins)."""
    merged = HostTargets()
    for config in configs:
        merged = merged.merged(of_config(config, selected_plugins(config, {}, every=False)))
    return merged
