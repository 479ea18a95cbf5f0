"""Packaging stays honest: every package folder is installed, every entry point resolves."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _declared_packages() -> set[str]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}


def _package_folders() -> set[str]:
    found = set()
    for top, import_name in (("vsbench", "vsbench"), ("plugins", "vsbench_plugins")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([import_name, *rel.parts]))
    return found


def test_every_package_folder_is_declared_in_setup_cfg():
    missing = _package_folders() - _declared_packages()
    assert not missing, f"add to setup.cfg [options] packages: {sorted(missing)}"


def test_every_declared_package_exists():
    stale = {p for p in _declared_packages() if p not in _package_folders()}
    assert not stale, f"setup.cfg lists packages with no folder: {sorted(stale)}"


def _options() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def test_ixnetwork_restpy_is_only_an_extra():
    """~290 MB that most users never need: `pip install 'vsbench[ixia]'`, not a dependency."""
    cfg = _options()
    assert "ixnetwork-restpy" not in cfg["options"]["install_requires"]
    assert "ixnetwork-restpy" in cfg["options.extras_require"]["ixia"]
    assert "ixnetwork-restpy" in cfg["options.extras_require"]["test"]  # its tests still run


def test_the_ixnet_prerequisite_names_the_extra(monkeypatch):
    from importlib import metadata

    from vsbench_plugins.trafficgen.ixnet.plugin import IxNet

    real = metadata.version

    def version(name):
        if name == "ixnetwork-restpy":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    missing = IxNet.check_prerequisites({})
    assert any(m.remedy == "pip install 'vsbench[ixia]'" for m in missing), missing


def test_the_build_ships_every_folder_vsbench_reads():
    """setup.py copies these into the wheel's vsbench/data/; each must exist and hold files,
    and be what the runner reads (conf/, testcases/), a suite run reads (suites/ and the reports'
    printed figures in suites/references/), ``--integration`` reads (testcases/integration/) or doctor
    reads (tools/packages/)."""
    import ast

    tree = ast.parse((ROOT / "setup.py").read_text())
    data = next(node.value for node in ast.walk(tree)
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DATA")
    shipped = {folder for folder, _ in ast.literal_eval(data)}
    assert shipped == {"conf", "testcases", "testcases/integration", "suites", "suites/references", "tools/packages"}
    for folder, pattern in ast.literal_eval(data):
        assert list((ROOT / folder).glob(pattern)), folder
    manifest = (ROOT / "MANIFEST.in").read_text()
    for folder in ("conf", "testcases", "suites", "tools"):
        assert f"graft {folder}" in manifest  # the sdist can build the wheel
