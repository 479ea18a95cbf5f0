"""``--list-plugins`` and ``--list`` never cut what a user acts on (issue 26 item 5).

At 80 columns ``--list-plugins`` showed ``linux_bri…`` and squeezed the column that says
why a plugin is refused out of sight; ``--list`` cut descriptions with an ellipsis even
when piped. Cells now wrap (long words fold) instead.
"""

import io
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from vsbench.cli import listing
from vsbench.runner import plugins, testcases

ROOT = Path(__file__).resolve().parents[2]
REASON = ("plugin API 2.0 is not provided by this vsbench (it provides 1.0): upgrade vsbench or install "
          "a release of the plugin written for API 1.0")


def _columns(text: str) -> list[list[str]]:
    """The cell texts of a rich box table, column by column, wrapped lines joined."""
    rows = [line.split("│")[1:-1] for line in text.splitlines() if line.startswith("│")]
    return [[row[i].strip() for row in rows] for i in range(len(rows[0]))]


def _joined(cells: list[str], sep: str = " ") -> str:
    return sep.join(c for c in cells if c)


def _printed(width: int, print_fn, *args) -> str:
    buffer = io.StringIO()
    print_fn(Console(file=buffer, width=width, force_terminal=False, color_system=None), *args)
    return buffer.getvalue()


def test_list_plugins_at_80_columns_shows_every_name_and_refusal_whole(monkeypatch):
    real = plugins.describe_all()
    refused = plugins.PluginInfo(kind="vswitch", name="vendor_smartnic_offload_switch", description="x",
                                 distribution="vendor-vsbench-smartnic", version="3.2.1", api_version="2.0",
                                 incompatible=REASON)
    monkeypatch.setattr(plugins, "describe_all", lambda: [*real, refused])
    text = _printed(80, listing.print_plugins)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    _, names, _, details = _columns(text)
    for info in real:
        assert info.name in names  # each built-in name whole, on one line
    assert "vendor_smartnic_offload_switch" in _joined(names, "")
    assert REASON in _joined(details)


def test_list_at_80_columns_keeps_each_description_whole():
    cases = list(testcases.load_all(testcases.default_testcase_dir()))
    text = _printed(80, listing.print_testcases, cases)
    assert "…" not in text
    names, _, descriptions = _columns(text)
    words = _joined(descriptions)
    for case in cases:
        assert listing._summary(case.description) in words or \
            listing._summary(case.description).replace(" ", "") in words.replace(" ", "")


def test_piped_list_is_not_cut():
    proc = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "--list"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"PATH": "/usr/bin:/bin", "COLUMNS": "80",
                                                     "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
