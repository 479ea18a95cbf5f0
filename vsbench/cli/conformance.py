"""``vsbench conformance``: check an installed plugin against its contract, with a report
a vendor can act on (PASS/FAIL/SKIP per check, in words, and why).

It runs the kit's pytest suite for the plugin's kind in this process (pytest is a core
dependency), with the plugin's settings from vsbench's configuration, as a run would.
Exit 0: conformant (skips allowed); 1: a check failed; 2: bad usage.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Sequence


def build_parser(parser_cls: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = parser_cls(
        prog="vsbench conformance",
        description="Check an installed plugin against the plugin contract: its class (plugin API, "
                    "settings schema, prerequisites) and its behaviour (a vSwitch or VNF on the kit's own "
                    "embedded testbed, needs root; a traffic generator against a DUT of known capacity).")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--vswitch", metavar="NAME", help="the vSwitch plugin to check")
    which.add_argument("--vnf", metavar="NAME", help="the VNF plugin to check")
    which.add_argument("--trafficgen", metavar="NAME", help="the traffic generator plugin to check")
    parser.add_argument("--conf-file", action="append", metavar="F", default=[], type=Path,
                        help="YAML configuration with the plugin's settings (repeatable)")
    parser.add_argument("--dut-capacity-fps", type=float, metavar="FPS",
                        help="trafficgen with its own ports: aggregate capacity of the DUT it is cabled to")
    parser.add_argument("-k", metavar="EXPR", help="only the checks matching EXPR (pytest -k)")
    parser.add_argument("-v", "--verbose", "--debug", dest="debug", action="store_true",
                        help="show pytest's output and the failing checks' tracebacks")
    return parser


def pytest_args(args: argparse.Namespace, workdir: Path) -> list[str]:
    from vsbench.conformance import SUITE_MODULES

    kind = next(k for k in ("vswitch", "vnf", "trafficgen") if getattr(args, k))
    argv = ["-c", os.devnull, "--rootdir", str(workdir), "-p", "no:cacheprovider", "--no-header",
            "-p", "vsbench.conformance.plugin", "--pyargs", SUITE_MODULES[kind],
            f"--vsbench-{kind}", getattr(args, kind)]
    for path in args.conf_file:
        argv += ["--vsbench-conf", str(path.resolve())]
    if args.dut_capacity_fps:
        argv += ["--vsbench-dut-capacity-fps", str(args.dut_capacity_fps)]
    if args.k:
        argv += ["-k", args.k]
    argv += ["-v", "--tb=short"] if args.debug else ["-q", "--tb=no"]
    return argv


def run(argv: Sequence[str], parser_cls: type[argparse.ArgumentParser]) -> int:
    parser = build_parser(parser_cls)
    args = parser.parse_args(argv)
    for path in args.conf_file:
        if not path.is_file():
            parser.error(f"no such configuration file: {path}")
    kind = next(k for k in ("vswitch", "vnf", "trafficgen") if getattr(args, k))
    from vsbench.runner import plugins

    plugins.load(kind, getattr(args, kind))  # an unknown or refused plugin: one line, exit 2
    import pytest

    with tempfile.TemporaryDirectory(prefix="vsbench-conformance-") as workdir:
        code = pytest.main(pytest_args(args, Path(workdir)))
    return {0: 0, 1: 1}.get(int(code), 2)
