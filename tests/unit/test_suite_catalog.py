"""Finding, loading and checking suites; the host's reasons; planning a suite."""

import json
from pathlib import Path

import pytest
import yaml

from vsbench.cli.main import main
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.suite import catalog, planning
from vsbench.suite.host import HostFacts, collect, unmet

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "tests" / "fixtures" / "suites" / "smoke.yaml"
#: A host that has everything a report could ask for but one thing at a time taken away.
RICH_HOST = HostFacts(cpus=64, threads_per_core=2, sockets=2, kvm=True, kernel="6.1.0",
                      kernel_modules=frozenset({"openvswitch", "cls_flower"}), sriov=True,
                      pci_drivers=frozenset({"ice"}), pci_vendors=frozenset({"0x19ee"}),
                      cpu_flags=frozenset({"avx512f"}), cpufreq_driver="intel_pstate", sst_bf=True)
TWO_CORES = HostFacts(cpus=2, threads_per_core=1, sockets=1, kvm=False, kernel="6.1.0")


def write_suite(tmp_path, doc, name="s.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def smoke_doc():
    return yaml.safe_load(SMOKE.read_text())


def test_fixture_suite_loads_with_its_reference_file():
    suite = catalog.find(str(SMOKE))
    assert suite.ids == ["999/T1", "999/T2"]
    assert suite.tables[0].reference.source == "Table 1 of nothing"
    assert suite.tables[1].reference.printed is False


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["tables"][0]["series"].__setitem__(0, {"run": "bridge_1flw", "label": "x"}),
     "unknown run 'bridge_1flw' (did you mean 'bridge_1flow'?)"),
    (lambda d: d["tables"][1].__setitem__("id", "999/T1"), "the id '999/T1' is used twice"),
    (lambda d: d["tables"][0]["columns"].append("ndr_fsp"), "unknown metric 'ndr_fsp'"),
    (lambda d: d["profiles"].pop("full"), "profiles"),
    (lambda d: d["runs"][0].__setitem__("repeats", 3), "unknown key 'repeats' (did you mean 'repeat'?)"),
    (lambda d: d["tables"][0]["gain"].__setitem__("over", "one flow"), "gain.over"),
])
def test_a_malformed_suite_is_one_line_naming_the_field(tmp_path, edit, message):
    doc = smoke_doc()
    edit(doc)
    doc["references"] = str(SMOKE.parent / "smoke.references.yaml")
    path = write_suite(tmp_path, doc)
    with pytest.raises(catalog.SuiteError) as err:
        catalog.find(str(path))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(path) in str(err.value)


def test_a_vendor_package_registers_its_suites_like_a_plugin(vendor_distribution):
    suites, problems = catalog.load_all()
    vendor = next(s for s in suites if s.name == "vendor_smoke")
    assert vendor.origin == "vsbench-vendor-example"
    assert any("broken_suites" in p and "cannot load" in p for p in problems)
    assert catalog.find("vendor_smoke").ids == ["900/T1"]


def test_unmet_requirements_name_the_host_fact():
    assert unmet({"cpus": 4}, TWO_CORES) == "this host has 2 CPUs, the row needs 4"
    assert "hyper-threading" in unmet({"hyperthreading": True}, TWO_CORES)
    assert "KVM" in unmet({"kvm": True}, TWO_CORES)
    assert "no openvswitch module" in unmet({"kernel_modules": ["openvswitch"]}, TWO_CORES)
    assert "SmartNIC" in unmet({"pci_vendors": ["0x19ee"]}, TWO_CORES)
    assert "SST-BF" in unmet({"sst_bf": True}, TWO_CORES)
    assert unmet({"files": ["/no/such/ovs-vswitchd"], "reason": "build it"}, RICH_HOST) == \
        "no /no/such/ovs-vswitchd on this host (build it)"
    assert "compare" in unmet({"hosts": 2}, RICH_HOST)  # one run is one host, wherever it runs
    for requirement in ({"cpus": 4}, {"hyperthreading": True}, {"kvm": True}, {"kernel_modules": ["openvswitch"]},
                        {"sriov": True}, {"pci_drivers": ["ice"]}, {"pci_vendors": ["0x19ee"]},
                        {"cpu_flags": ["avx512f"]}, {"sst_bf": True}, {"sockets": 2}):
        assert unmet(requirement, RICH_HOST) is None


def test_this_host_is_read():
    facts = collect()
    assert facts.cpus >= 1 and facts.threads_per_core >= 1 and facts.sockets >= 1
    assert facts.kernel


def test_planning_resolves_every_run_and_keeps_the_unrunnable_ones_validated():
    suite = catalog.find(str(SMOKE))
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    plan = planning.build(suite, "quick", base, testcases.default_testcase_dir(), TWO_CORES,
                          check_prerequisites=False)
    statuses = {p.run: p.status for p in plan.plans}
    assert statuses == {"bridge_1flow": "runnable", "bridge_8flows": "runnable", "bridge_two_hosts": "not_runnable"}
    one = plan.plans[0].plan.config
    assert one["suite"] == {"name": "smoke", "profile": "quick", "run": "bridge_1flow"}
    assert one["traffic"]["frame_sizes"] == [64] and one["vswitch"]["name"] == "linux_bridge"
    assert plan.plans[1].keys["flows"] == 8
    full = planning.build(suite, "full", base, testcases.default_testcase_dir(), RICH_HOST, check_prerequisites=False)
    assert all(p.status == "runnable" for p in full.plans if p.run != "bridge_two_hosts")
    assert full.plans[0].plan.config["traffic"]["frame_sizes"] == [64, 1518]


def test_a_bad_parameter_in_a_run_the_host_cannot_run_is_still_an_error(tmp_path):
    doc = smoke_doc()
    doc["references"] = str(SMOKE.parent / "smoke.references.yaml")
    doc["runs"][2]["params"] = {"frame_sizes": "big"}
    suite = catalog.find(str(write_suite(tmp_path, doc)))
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    with pytest.raises(catalog.SuiteError) as err:
        planning.build(suite, "quick", base, testcases.default_testcase_dir(), TWO_CORES, check_prerequisites=False)
    assert "bridge_two_hosts" in str(err.value) and "frame_sizes" in str(err.value)


@pytest.mark.parametrize("argv, message", [
    (["--suite", "no_such_suite"], "unknown suite 'no_such_suite'"),
    (["--suite", str(SMOKE), "--test", "phy2phy_tput"], "not both"),
    (["--suite", str(SMOKE), "--vswitch", "ovs_dpdk"], "--vswitch does not go with --suite"),
    (["--profile", "quick", "--test", "phy2phy_tput"], "--profile goes with --suite"),
    (["--suite", str(SMOKE), "--profile", "huge"], "invalid choice"),
])
def test_cli_suite_misuse_is_one_line_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_cli_dry_run_plans_without_creating_anything(tmp_path, capsys):
    assert main(["--suite", str(SMOKE), "--dry-run", "--results-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "bridge_two_hosts" in out and "not runnable here" in out
    assert not (tmp_path / "r").exists()


def test_cli_lists_the_builtin_suites(capsys):
    assert main(["--list-suites"]) == 0
    out = capsys.readouterr().out
    for suite in catalog.load_all()[0]:
        assert suite.name in out


def test_every_builtin_suite_loads_and_plans_in_both_profiles():
    """Every shipped suite is valid, and so is every plan of its full profile (a lab's)."""
    suites, problems = catalog.load_all()
    assert not problems
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    for suite in suites:
        if suite.origin != "built-in":
            continue
        for profile in ("quick", "full"):
            plan = planning.build(suite, profile, base, testcases.default_testcase_dir(), RICH_HOST,
                                  check_prerequisites=False)
            assert plan.plans, f"{suite.name} {profile}: no plans"


def test_suite_json_schema_is_shipped():
    assert json.loads((ROOT / "vsbench" / "schemas" / "suite_result.schema.json").read_text())["$id"]


def test_only_runs_what_the_named_ids_need():
    suite = catalog.find(str(SMOKE))
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    plan = planning.build(suite, "quick", base, testcases.default_testcase_dir(), TWO_CORES,
                          check_prerequisites=False, only_ids=["999/T1"])
    statuses = {p.run: (p.status, p.reason) for p in plan.plans}
    assert statuses["bridge_1flow"][0] == "runnable" and statuses["bridge_8flows"][0] == "runnable"
    assert statuses["bridge_two_hosts"] == ("skipped", "not asked for (--only 999/T1)")
    with pytest.raises(catalog.SuiteError, match="no id '999/T9'"):
        planning.build(suite, "quick", base, testcases.default_testcase_dir(), TWO_CORES, only_ids=["999/T9"])


SEED_TABLES = Path("/work/shared/reference/seed-tables.md")


@pytest.mark.skipif(not SEED_TABLES.is_file(), reason="the seed reports' id list is not on this machine")
def test_the_builtin_suites_have_every_id_of_their_reports_and_nothing_else():
    listed: dict[str, list[str]] = {}
    for line in SEED_TABLES.read_text().splitlines():
        if line.startswith("| 0"):
            id_ = line.split("|")[1].strip()
            listed.setdefault(id_.split("/")[0], []).append(id_)
    suites = [s for s in catalog.load_all()[0] if s.origin == "built-in"]
    covered = {}
    for suite in suites:
        report = suite.ids[0].split("/")[0]
        assert sorted(suite.ids) == sorted(listed[report]), suite.name
        covered[report] = suite.name
    assert sorted(covered) == sorted(listed), "a report without a suite"
