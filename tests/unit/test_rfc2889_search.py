"""The RFC 2889 searches against a model learning switch (no network)."""

from __future__ import annotations

import pytest

from vsbench.measurement import rfc2889 as r


class ModelSwitch:
    """A learning switch with ``table_size`` entries that learns at most ``learn_fps``
    new addresses per second: learning frames faster than that are forwarded but only
    that share of their sources is learned; a test frame to an unlearned address is
    flooded (to the learning port and the monitor)."""

    def __init__(self, table_size: int, learn_fps: float) -> None:
        self.table_size, self.learn_fps = table_size, learn_fps
        self.iterations = 0

    def iterate(self, addresses: int, rate_fps: float) -> r.AddressIteration:
        self.iterations += 1
        learned = addresses if rate_fps <= self.learn_fps else int(addresses * self.learn_fps / rate_fps)
        learned = min(learned, self.table_size)
        return r.AddressIteration(addresses=addresses, learning_rate_fps=rate_fps, test_tx_frames=addresses,
                                  test_rx_frames=addresses, flooded_frames=addresses - learned)


def test_caching_capacity_found_within_resolution():
    dut = ModelSwitch(table_size=2048, learn_fps=1e9)
    out = r.search_highest_pass(lambda n: dut.iterate(n, 1000.0).passed, low=16, high=8192, resolution=1,
                                integer=True)
    assert out.value == 2048 and out.bounded
    assert dut.iterations <= 16  # a binary search, not a scan


def test_caching_capacity_above_range_is_unbounded_lower_bound():
    dut = ModelSwitch(table_size=10**6, learn_fps=1e9)
    out = r.search_highest_pass(lambda n: dut.iterate(n, 1000.0).passed, low=16, high=4096, resolution=1,
                                integer=True)
    assert out.value == 4096 and not out.bounded and len(out.tried) == 1


def test_caching_capacity_below_range_is_none():
    dut = ModelSwitch(table_size=8, learn_fps=1e9)
    out = r.search_highest_pass(lambda n: dut.iterate(n, 1000.0).passed, low=16, high=4096, resolution=1,
                                integer=True)
    assert out.value is None and [v for v, _ in out.tried] == [4096, 16]


@pytest.mark.parametrize("learn_fps", [5_000.0, 37_500.0, 99_000.0])
def test_learning_rate_found_within_resolution(learn_fps):
    dut = ModelSwitch(table_size=10**6, learn_fps=learn_fps)
    out = r.search_highest_pass(lambda fps: dut.iterate(512, fps).passed, low=100.0, high=200_000.0,
                                resolution=500.0)
    assert out.bounded and learn_fps - 500.0 <= out.value <= learn_fps


def test_invalid_probe_counts_as_not_passing_and_is_counted():
    calls = []

    def probe(v):
        calls.append(v)
        return None if v > 1000 else True

    out = r.search_highest_pass(probe, low=10.0, high=4000.0, resolution=10.0)
    assert out.invalid >= 1 and out.value <= 1000


def test_iteration_pass_rule():
    ok = r.AddressIteration(addresses=10, learning_rate_fps=1.0, test_tx_frames=10, test_rx_frames=10, flooded_frames=0)
    assert ok.passed
    for bad in (dict(flooded_frames=1), dict(test_rx_frames=9), dict(valid=False), dict(test_tx_frames=9, test_rx_frames=9)):
        fields = dict(addresses=10, learning_rate_fps=1.0, test_tx_frames=10, test_rx_frames=10, flooded_frames=0)
        fields.update(bad)
        assert not r.AddressIteration(**fields).passed, bad


def test_forwarding_figures_frmol_and_mfr():
    steps = [r.LoadStep(100.0, 100.0, True), r.LoadStep(200.0, 180.0, True), r.LoadStep(300.0, 150.0, True),
             r.LoadStep(400.0, 390.0, False)]
    f = r.forwarding_figures(steps)
    assert f.forwarding_rate_fps == 150.0 and f.max_offered_load_fps == 300.0  # the invalid step is not the MOL
    assert f.max_forwarding_rate_fps == 180.0 and f.max_forwarding_rate_offered_fps == 200.0
    assert r.forwarding_figures([r.LoadStep(1.0, 1.0, False)]).forwarding_rate_fps is None


def test_offered_loads_and_errors():
    assert r.offered_loads(1000.0, [100, 50, 50]) == [500.0, 1000.0]
    with pytest.raises(r.Rfc2889Error):
        r.offered_loads(1000.0, [0])
    with pytest.raises(r.Rfc2889Error):
        r.search_highest_pass(lambda v: True, low=10, high=5, resolution=1)
    assert r.address_range(3) == ("02:28:89:00:00:00", "02:28:89:00:00:02")
    assert r.mac_plus("02:00:00:00:00:ff", 1) == "02:00:00:00:01:00"
