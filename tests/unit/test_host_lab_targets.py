"""Which NICs and busy-polling cores a resolved configuration puts on this host
(:mod:`vsbench.runner.lab_targets`), read by key from the selected plugins' settings."""

from pathlib import Path

import yaml

from vsbench.runner import config as cfg
from vsbench.runner import lab_targets


def config_with(tmp_path: Path, layer: dict) -> dict:
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(layer))
    return cfg.load_layers(cfg.default_conf_dir(), [path])


def targets(config: dict, **flags):
    return lab_targets.of_config(config, lab_targets.selected_plugins(config, flags, every=False))


def test_the_defaults_pin_the_ovs_dpdk_pmd_and_name_no_nic(tmp_path):
    found = targets(config_with(tmp_path, {}))
    assert found.nics == () and found.problems == () and found.link_gbps == 10.0
    assert [(c.owner, c.cpus, c.source) for c in found.cores] == [("ovs_dpdk PMD", (1,), "vswitch.ovs_dpdk.pmd_cpu_mask")]


def test_a_lab_configuration_names_its_nics_and_cores(tmp_path):
    config = config_with(tmp_path, {
        "vswitch": {"ovs_dpdk": {"ports": [{"pci": "0000:3b:00.0"}, {"pci": "0000:3b:00.1"}], "pmd_cpu_mask": "0x3c"}},
        "trafficgen": {"name": "prox", "prox": {"pci_devices": ["0000:af:00.0"], "gen_cores": [[5], [6]],
                                                "lat_cores": [[7], [8]]}},
        "vnf": {"name": "l3fwd"},
        "testbed": {"dut_ports": [{"pci": "0000:3b:00.0"}, "ens2f0"]},
    })
    found = targets(config)
    assert [(n.owner, n.pci, n.source) for n in found.nics] == [
        ("ovs_dpdk port 0", "0000:3b:00.0", "vswitch.ovs_dpdk.ports[0].pci"),
        ("ovs_dpdk port 1", "0000:3b:00.1", "vswitch.ovs_dpdk.ports[1].pci"),
        ("prox port 0", "0000:af:00.0", "trafficgen.prox.pci_devices[0]")]  # the DUT port is the switch's own
    assert {c.owner: c.cpus for c in found.cores} == {"ovs_dpdk PMD": (2, 3, 4, 5), "prox generator cores": (5, 6),
                                                      "prox latency cores": (7, 8), "l3fwd lcore": (1,)}


def test_a_remote_generator_is_listed_not_checked(tmp_path):
    config = config_with(tmp_path, {"trafficgen": {"name": "prox", "prox": {
        "launch": "ssh", "ssh": {"host": "gen1.lab"}, "pci_devices": ["0000:af:00.0"]}}})
    found = targets(config)
    assert found.remote == (("trafficgen prox", "gen1.lab"),) and all(n.owner != "prox port 0" for n in found.nics)
    assert targets(config_with(tmp_path, {}), trafficgen="trex").remote == ()  # TRex on 127.0.0.1


def test_a_vnf_in_a_vm_is_pinned_by_its_vcpus(tmp_path):
    config = config_with(tmp_path, {"vnf": {"name": "l3fwd", "l3fwd": {"mode": "vm", "vm": {"vcpu_cpus": [0, 1]}}}})
    assert [(c.owner, c.cpus) for c in targets(config).cores][-1] == ("l3fwd VM vCPUs", (0, 1))


def test_values_that_are_not_cpus_are_problems_not_exceptions(tmp_path):
    config = config_with(tmp_path, {"vswitch": {"ovs_dpdk": {"pmd_cpu_mask": "0xzz"}},
                                    "vnf": {"name": "testpmd", "testpmd": {"forward_cpus": [1, "x"]}}})
    found = targets(config)
    assert found.problems == ("vswitch.ovs_dpdk.pmd_cpu_mask: not a CPU mask ('0xzz')",
                              "vnf.testpmd.forward_cpus: not a CPU list ('x')")


def test_a_runs_plans_are_merged_without_repeats(tmp_path):
    one = config_with(tmp_path, {})
    two = config_with(tmp_path, {"vswitch": {"ovs_dpdk": {"pmd_cpu_mask": "0x4"}}})
    merged = lab_targets.of_configs([one, one, two])
    assert [c.cpus for c in merged.cores] == [(1,), (2,)]
