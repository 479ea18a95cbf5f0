"""The host's lab settings in report.html's bill of materials (sysinfo.json ``host_settings``).

The same lines ``vsbench doctor --host`` printed -- NUMA placement of the NICs and pollers,
isolation, frequency, hugepages per node, IOMMU, NIC driver, firmware and link speed --
so a reader sees beside the figures whether the host was set up as a lab sets it up, and
what a ``warn`` would have taken to fix.
"""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.results.page_model import Heading, Paragraph
from vsbench.results.report_page import badge, table

STATUS_BADGE = {"ok": "ok", "warn": "warning", "fail": "error"}


def section(info: Mapping[str, Any]) -> list[Any]:
    """Heading and table of the checks; a note for a run recorded before they existed."""
    settings = info.get("host_settings")
    heading = Heading(3, "Lab settings (vsbench doctor --host)")
    if not isinstance(settings, Mapping):
        return [heading, Paragraph.of("not recorded (a run from before vsbench recorded them)", "muted")]
    checks = [c for c in settings.get("checks") or [] if isinstance(c, Mapping)]
    rows = [[badge(str(c.get("status")), STATUS_BADGE.get(str(c.get("status")), "info")), c.get("setting", ""),
             c.get("value", ""), c.get("fix") or ""] for c in checks]
    counts = {s: sum(1 for c in checks if c.get("status") == s) for s in STATUS_BADGE}
    return [heading, table([("Status", ""), ("Setting", ""), ("On this host", ""), ("Fix", "")], rows,
                           numeric_from=99),
            Paragraph.of(f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail; judged for this run's "
                         "configured NICs and busy-polling cores (docs: running in a lab).", "muted")]
