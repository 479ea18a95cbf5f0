"""Fixtures starting and stopping the generator fakes (separate processes)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from generator_fakes import FAKE_MOONGEN, FakeProx, fake_prox_argv
from vsbench.system import commands


@pytest.fixture
def fake_prox(tmp_path):
    """``fake_prox(*model_args, unix=False)`` -> FakeProx; stopped by pid at teardown."""
    started: list[commands.ManagedProcess] = []

    def start(*model: str, unix: bool = False) -> FakeProx:
        n = len(started)
        port_file = tmp_path / f"prox{n}.port"
        unix_path = str(tmp_path / f"prox{n}.sock") if unix else None
        log_path = tmp_path / f"fake-prox{n}.log"
        proc = commands.spawn(fake_prox_argv(list(model), unix_path, port_file), log_path=log_path)
        started.append(proc)
        deadline = time.monotonic() + 10
        while True:
            if unix_path and Path(unix_path).exists() or not unix_path and port_file.exists():
                break
            if not proc.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"fake PROX did not start: {log_path.read_text()[-500:]}")
            time.sleep(0.01)
        port = None if unix_path else int(port_file.read_text())
        return FakeProx(proc, port, unix_path, log_path)

    yield start
    for proc in started:
        proc.stop(grace_s=2)


@pytest.fixture
def moongen_model(tmp_path):
    """``moongen_model(**model)`` -> settings running the fake MoonGen with that DUT model."""

    def make(**model) -> dict:
        path = tmp_path / f"moongen-model-{len(list(tmp_path.glob('moongen-model-*')))}.json"
        path.write_text(json.dumps(model))
        return {"binary": str(FAKE_MOONGEN), "moongen_args": [f"--dut-model={path}"],
                "work_dir": str(tmp_path / "moongen-remote")}

    return make
