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
