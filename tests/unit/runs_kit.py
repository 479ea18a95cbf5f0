"""Make real run directories for the compare / gates / store tests: the CLI in-process, on
the runner test kit's modelled generator and DUT (tests/fixtures/runner_dist), whose
capacity each run chooses (``capacity_fps``, and ``capacity_noise`` to make repeats differ)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from vsbench.cli.main import main

PARAMS = "frame_sizes=[64,512];trial_duration=1"


def layer(tmp_path: Path, testkit: dict, *, capacity_fps: float = 1e6, noise: float = 0.0,
          vswitch: str = "marker_switch", name: str = "layer.yaml") -> Path:
    doc = {
        "collectors": [],
        "trafficgen": {"name": "model_gen", "model_gen": {"capacity_fps": capacity_fps, "capacity_noise": noise,
                                                          "marker_dir": str(testkit["markers"])}},
        "vswitch": {"name": vswitch, vswitch: {"marker_dir": str(testkit["markers"])}},
        "traffic": {"warmup_s": 0},
        "latency": {"load_fractions": [0.0], "at_goals": ["NDR"], "generator_floor": False},
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def vsbench(*argv: str, capsys=None) -> tuple[int, str, str]:
    """Run the CLI in-process; (exit code, stdout, stderr) when ``capsys`` is given."""
    code = main(list(argv))
    if capsys is None:
        return code, "", ""
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def make_run(tmp_path: Path, testkit: dict, results: Path, *extra: str, capacity_fps: float = 1e6,
             noise: float = 0.0, params: str = PARAMS, vswitch: str = "marker_switch",
             test: str = "phy2phy_tput") -> Path:
    """One run of ``test`` (phy2phy_tput) into ``results``; returns its directory."""
    conf = layer(tmp_path, testkit, capacity_fps=capacity_fps, noise=noise, vswitch=vswitch,
                 name=f"layer-{len(list(tmp_path.glob('layer-*')))}.yaml")
    before = set(results.iterdir()) if results.is_dir() else set()
    code = main(["--test", test, "--conf-file", str(conf), "--test-params", params,
                 "--results-dir", str(results), *extra])
    assert code == 0, code
    [run_dir] = [p for p in results.iterdir() if p not in before and p.is_dir()]
    return run_dir


def results_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())
