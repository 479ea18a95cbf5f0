"""What the terminal shows while a run goes and when it ends (rich).

A live line per frame size (trial n, role, offered load, loss) above which every finished
trial is printed once, and at the end one table per testcase: frame size, throughput in
fps and Mbps, % of line rate, loss, latency min/avg/max and, beside it, the generator's own
latency floor (min/p50, measured without the DUT). Only presentation lives here; the
numbers come from the result model.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from vsbench.runner import display_efficiency, display_mix, noisy_load
from vsbench.results import line_rate_basis, writers
from vsbench.results.model import FrameSizeResult, GeneratorFloor, ReportedPoint, RunResults, TestResult, TrialRecord

log = logging.getLogger(__name__)

#: The end-of-run summary, as the terminal showed it, in every run directory.
SUMMARY_FILE = "summary.txt"
#: Its width: wide enough that no table of it is squeezed (as piped output, cli.main).
SUMMARY_WIDTH = 200


def fmt_rate(fps: float | None) -> str:
    if fps is None:
        return "-"
    if fps >= 1e6:
        return f"{fps / 1e6:.3f} Mfps"
    if fps >= 1e3:
        return f"{fps / 1e3:.1f} kfps"
    return f"{fps:.0f} fps"


def fmt_num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def fmt_loss(ratio: float | None) -> str:
    if ratio is None:
        return "-"
    if ratio == 0:
        return "0"
    return f"{ratio * 100:.3g}%"


def fmt_ns(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} ms"
    if value >= 1e3:
        return f"{value / 1e3:.1f} us"
    return f"{value:.0f} ns"


def generator_limited_note(fs: FrameSizeResult) -> str:
    """The one line that says a frame size's figures are bounded by the generator."""
    return (f"generator-limited: max_load lowered to {fmt_num(fs.max_load_fps, 0)} fps"
            f" (asked up to {fmt_num(fs.search_max_load_fps, 0)} fps)")


def floor_text(floor: GeneratorFloor) -> str:
    """``generator floor (direct loop, no DUT): min 95 ns, p50 120 ns, p99 0.3 us`` or why not."""
    if not floor.measured:
        return f"generator latency floor not measured: {floor.reason}"
    return (f"generator floor (direct loop, no DUT): min {fmt_ns(floor.min_ns)}, p50 {fmt_ns(floor.p50_ns)}, "
            f"p99 {fmt_ns(floor.p99_ns)} ({floor.samples} probes, trial_index {floor.trial_index})")


class RunDisplay:
    """Progress while trials run; the summary table at the end."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._label = ""
        self._trials_in_frame_size = 0

    # -- progress -------------------------------------------------------------------------

    def run_started(self, run_id: str, run_dir: Path, plans: int) -> None:
        self.console.print(f"[bold]vsbench run {run_id}[/] - {plans} test(s) - results in {run_dir}",
                           highlight=False)

    def plan_started(self, index: int, total: int, label: str, description: str) -> None:
        self.console.rule(f"[{index + 1}/{total}] {escape(label)}")
        if description:
            self.console.print(description.strip(), style="dim", highlight=False)

    def note(self, message: str, style: str = "yellow") -> None:
        self.console.print(message, style=style, markup=False, highlight=False)

    def frame_size_started(self, label: str, frame_size_bytes: int, traffic_type: str,
                           max_load_fps: float | None) -> None:
        self.close_progress()
        self._label = f"{escape(label)} {frame_size_bytes} B"
        self._trials_in_frame_size = 0
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._progress.start()
        limit = f" (max {fmt_rate(max_load_fps)})" if max_load_fps else ""
        self._task = self._progress.add_task(f"{self._label} {traffic_type}{limit}", detail="starting")

    def trial(self, record: TrialRecord) -> None:
        """Listener of the trial sink: one line per finished trial, and the live status."""
        self._trials_in_frame_size += 1
        r = record.result
        validity = "" if r.valid else f"  [red]invalid: {'; '.join(record.invalid_reasons)}[/]"
        if record.role == "floor":
            lat = r.probes.latency_ns if r.probes is not None else ()
            seen = (f"latency min {fmt_ns(float(min(lat)))}, {len(lat)} probes" if len(lat)
                    else "no latency sample")
            line = f"  trial {self._trials_in_frame_size:>3} {record.role:<10} generator alone (no DUT): {seen}{validity}"
        elif record.role == "tcp":
            tcp = r.generator_stats.get("tcp") or {}
            gbps = tcp.get("gbps")
            line = (f"  run   {self._trials_in_frame_size:>3} tcp        {'-' if gbps is None else f'{gbps:.3f}'} Gbit/s, "
                    f"{tcp.get('retransmits', '-')} retransmits{validity}")
        else:
            line = (
                f"  trial {self._trials_in_frame_size:>3} {record.role:<10} offered {fmt_rate(r.intended_load_fps):>13}"
                f"  rx {fmt_rate(r.rx_fps):>13}  loss {fmt_loss(r.loss_ratio if r.tx_frames else None):>10}{validity}"
            )
        if self._progress is not None and self._task is not None:
            self._progress.console.print(line, highlight=False)
            self._progress.update(
                self._task,
                detail=f"trial {self._trials_in_frame_size}: {fmt_rate(r.intended_load_fps)}, "
                       f"loss {fmt_loss(r.loss_ratio if r.tx_frames else None)}",
            )
        else:
            self.console.print(line, highlight=False)

    def frame_size_finished(self, fs: FrameSizeResult) -> None:
        self.close_progress()
        point = fs.primary
        if fs.status == "complete" and fs.back2back is not None:
            self.console.print(f"  {fs.frame_size_bytes} B {back2back_text(fs)} in {fs.trial_count} trials",
                               style="green", highlight=False)
            return
        if fs.status == "complete" and fs.rfc2889 is not None:
            from vsbench.runner.traffic_rfc2889 import line as rfc2889_line

            self.console.print(f"  {fs.frame_size_bytes} B {rfc2889_line(fs)} in {fs.trial_count} trials",
                               style="green", highlight=False, markup=False)
            return
        if fs.status == "complete" and fs.tcp is not None:
            from vsbench.runner.traffic_tcp import tcp_line

            self.console.print(f"  {fs.frame_size_bytes} B tcp: {tcp_line(fs)} in {fs.trial_count} run(s)",
                               style="green", highlight=False, markup=False)
            return
        if fs.status != "complete" or point is None:
            self.console.print(f"  {fs.frame_size_bytes} B: {fs.status}"
                               + (f" - {fs.error}" if fs.error else ""), style="red", markup=False)
            return
        goals = ", ".join(f"{p.name}: {fmt_rate(p.throughput_fps)} ({fmt_num(p.line_rate_percent, 2)}% of line rate)"
                          for p in fs.points)
        self.console.print(
            f"  {fs.frame_size_bytes} B {goals} in {fs.trial_count} trials",
            style="green", highlight=False,
        )
        efficiency = display_efficiency.point_line(fs)
        if efficiency:
            self.console.print(f"  {fs.frame_size_bytes} B {display_efficiency.owner(fs)}: {efficiency}", style="dim",
                               markup=False, highlight=False)
        for line in vnf_lines(point):
            self.console.print(f"  {fs.frame_size_bytes} B {line}", style="dim", markup=False, highlight=False)
        if fs.generator_limited:
            self.note(f"  {fs.frame_size_bytes} B: {generator_limited_note(fs)}")
        if fs.generator_floor is not None:
            self.console.print(f"  {fs.frame_size_bytes} B latency: {floor_text(fs.generator_floor)}",
                               style="dim" if fs.generator_floor.measured else "yellow",
                               markup=False, highlight=False)

    def close_progress(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._task = None

    # -- summary --------------------------------------------------------------------------

    def summary(self, results: RunResults, run_dir: Path) -> None:
        """The end-of-run tables and notes, and their copy in ``run_dir``/summary.txt
        (:func:`save_summary`)."""
        self.close_progress()
        self.print_summary(results)
        save_summary(results, run_dir)  # before the last line: a warning of its own must not follow it
        self.console.print(final_line(results, run_dir), highlight=False, markup=False, soft_wrap=True)

    def print_summary(self, results: RunResults) -> None:
        """One table per test with its notes, then the scaling tables: what a run ends
        with, and what ``vsbench show`` prints again from results.json."""
        for test in results.tests:
            if test.traffic_type == "integration":  # steps, not frame sizes: one line each test
                self.console.print(integration_line(test), markup=False, highlight=False)
                continue
            self.console.print(self.table(test))
            for line in display_efficiency.frame_size_lines(test):
                self.console.print(line, markup=False, highlight=False)
            for line in display_mix.fixed_rate_lines(test) + display_mix.mix_lines(test):
                self.console.print(line, markup=False, highlight=False)
            for fs in test.frame_sizes:
                if fs.generator_limited:
                    self.note(f"note: {fs.frame_size_bytes} B: {generator_limited_note(fs)}")
                if fs.generator_floor is not None:
                    self.note(f"note: {fs.frame_size_bytes} B latency: {floor_text(fs.generator_floor)}",
                              style="default" if fs.generator_floor.measured else "yellow")
                for lp in fs.latency_points:
                    if not lp.valid:
                        self.note(f"note: {fs.frame_size_bytes} B {lp.caveat()}")
            for fs in test.frame_sizes:
                if fs.back2back is not None:
                    self.console.print(f"{fs.frame_size_bytes} B {back2back_text(fs)}", highlight=False)
                if fs.load is not None:  # a noisy neighbour's measured load, beside the throughput
                    self.console.print(f"{fs.frame_size_bytes} B {noisy_load.summary_text(fs.load)}", highlight=False)
            if any(fs.nominal_line_rate_fps for fs in test.frame_sizes) and test.traffic_type != "tcp":
                self.note(f"note: line rate: {line_rate_basis.describe(_frame_size_docs(test), test.link_gbps)}",
                          style="default")
            for note in test.notes:
                self.note(f"note: {note}")
        for table in display_efficiency.scaling_tables(results):
            self.console.print(table)

    @staticmethod
    def tcp_table(test: TestResult) -> Table:
        """A TCP workload's plan: report 5's columns."""
        flag = " [CPU oversubscribed]" if test.cpu_oversubscribed else ""
        table = Table(title=f"{escape(test.label)} (tcp, {test.vswitch}, {test.trafficgen}){flag}", title_justify="left")
        for header in ("Frame B", "Gbit/s", "Retransmits", "Sender CPU %", "Receiver CPU %", "Switch cores",
                       "Cores/(Gbit/s)", "RTT mean us", "Runs", "Status"):
            table.add_column(header, justify="left" if header == "Status" else "right")
        for fs in test.frame_sizes:
            t = fs.tcp
            if t is None:
                table.add_row(str(fs.frame_size_bytes), *["-"] * 7, str(fs.trial_count), fs.status)
                continue
            table.add_row(str(fs.frame_size_bytes), f"{t.gbps:.3f}", "-" if t.retransmits is None else str(t.retransmits),
                          fmt_num(t.sender_cpu_percent, 0), fmt_num(t.receiver_cpu_percent, 0),
                          fmt_num(t.switch_cores, 2), fmt_num(t.cores_per_gbps, 3), fmt_num(t.rtt_mean_us, 0),
                          str(len(t.gbps_runs)), fs.status + (" *" if t.cpu_oversubscribed else ""))
        return table

    @staticmethod
    def table(test: TestResult) -> Table:
        if any(fs.tcp is not None for fs in test.frame_sizes) or test.traffic_type == "tcp":
            return RunDisplay.tcp_table(test)
        goal = next((fs.primary.name for fs in test.frame_sizes if fs.primary), "")
        # the other goals of a multi-goal search (PDR ...) get a column each, after the primary's
        others: list[str] = []
        for fs in test.frame_sizes:
            for p in fs.points[1:]:
                if p.name not in others:
                    others.append(p.name)
        # the generator's own floor beside the latency, when some frame size measured it
        floors = any(fs.generator_floor is not None and fs.generator_floor.measured for fs in test.frame_sizes)
        # with VNFs: the generator's frame counts beside the VNFs' own, and where the loss was
        vnf_cols = any(p.vnf for fs in test.frame_sizes for p in fs.points)
        topology = (test.topology or {}).get("topology")
        shape = f", {topology} x{test.switching_operations} switching ops" if topology and test.vnf not in ("", "none") else ""
        vnf = f", {test.vnf}" if test.vnf not in ("", "none") else ""
        flag = " [CPU oversubscribed]" if test.cpu_oversubscribed else ""
        table = Table(title=f"{escape(test.label)} ({test.traffic_type}, {test.vswitch}{vnf}, {test.trafficgen}{shape}) {goal}{flag}".strip(),
                      title_justify="left")
        line_rate = "% line rate" if line_rate_basis.from_ports(_frame_size_docs(test)) else "% line rate (nominal)"
        for header in ("Frame B", "Throughput fps", *(f"{name} fps" for name in others), "L1 Mbps", "L2 Mbps",
                       line_rate, "Loss", "Lat min", "Lat avg", "Lat max",
                       *(("Gen floor min", "Gen floor p50") if floors else ()),
                       *(("Gen tx/rx", "VNF rx/tx", "Lost sw/VNF") if vnf_cols else ()),
                       "Trials", "Status"):
            table.add_column(header, justify="left" if header == "Status" else "right")
        for fs in test.frame_sizes:
            p = fs.primary
            lat = p.latency if p else None
            by_name = {q.name: q for q in fs.points}
            # generator-limited as results.csv says it: max_load lowered, or a goal at the
            # generator's ceiling; latency-invalid: its trial was not sent as asked
            limited = fs.generator_limited or any(q.at_generator_ceiling for q in fs.points)
            lat_invalid = p is not None and any(lp.trial_index == p.latency_trial_index and not lp.valid
                                                for lp in fs.latency_points)
            status = (fs.status + (" generator-limited" if limited else "")
                      + (" provisional" if any(q.lower_bound_provisional for q in fs.points) else "")
                      + (" latency-invalid" if lat_invalid else "")
                      + ("" if not fs.notes else " *"))
            floor = fs.generator_floor if fs.generator_floor is not None and fs.generator_floor.measured else None
            table.add_row(
                display_mix.frame_label(fs),
                fmt_num(p.throughput_fps if p else None, 0),
                *(fmt_num(by_name[name].throughput_fps if name in by_name else None, 0) for name in others),
                fmt_num(p.throughput_l1_mbps if p else None),
                fmt_num(p.throughput_l2_mbps if p else None),
                fmt_num(p.line_rate_percent if p else None, 2),
                fmt_loss(p.loss_ratio if p else None),
                fmt_ns(lat.min_ns if lat else None),
                fmt_ns(lat.avg_ns if lat else None),
                fmt_ns(lat.max_ns if lat else None),
                *((fmt_ns(floor.min_ns if floor else None), fmt_ns(floor.p50_ns if floor else None)) if floors else ()),
                *(vnf_cells(p) if vnf_cols else ()),
                str(fs.trial_count),
                status,
            )
        return table


def _frame_size_docs(test: TestResult) -> list[dict[str, Any]]:
    """The line-rate fields of each frame size, as results.json has them."""
    return [{"nominal_line_rate_fps": fs.nominal_line_rate_fps, "link_speed_source": fs.link_speed_source,
             "link_speeds_bps": fs.link_speeds_bps, "link_speed_reason": fs.link_speed_reason}
            for fs in test.frame_sizes]


#: How much of the reason the final line carries (the whole of it is in results.json).
REASON_CHARS = 240


def final_line(results: RunResults, run_dir: Path) -> str:
    """The run's last line: its status and, when it did not complete, why -- what died, the
    signal, the full disk -- so the one line a CI log or a closed terminal keeps says it."""
    reason = end_reason(results)
    status = f"{results.status}: {reason}" if reason and results.status != "complete" else results.status
    return f"run {results.run_id}: {status}; results in {run_dir}"


def end_reason(results: RunResults) -> str | None:
    """The first error of a plan (or of a frame size) that did not complete, on one line."""
    for test in results.tests:
        errors = [test.error] + [fs.error for fs in test.frame_sizes]
        if test.status != "complete" or any(fs.status in ("failed", "interrupted") for fs in test.frame_sizes):
            for error in errors:
                if error:
                    text = " ".join(str(error).split())
                    if len(text) > REASON_CHARS:
                        text = text[:REASON_CHARS - 3] + "..."
                    return f"{test.label}: {text}"
    return None


def integration_line(test: Any) -> str:
    """``name (integration, switch): 12/12 steps passed``, or the step that failed or skipped."""
    steps = test.steps or []
    passed = sum(1 for s in steps if s.status == "passed")
    head = f"{test.label} (integration, {test.vswitch}): {passed}/{len(steps)} steps passed"
    if test.status == "complete":
        return head
    return f"{head}; {test.status}: {test.error or 'no step ran'}"


def summary_text(results: RunResults, run_dir: Path) -> str:
    """The end-of-run summary as plain text, :data:`SUMMARY_WIDTH` columns wide (a CI log's
    or a file's lines are not a terminal's)."""
    buffer = io.StringIO()
    display = RunDisplay(Console(file=buffer, width=SUMMARY_WIDTH, color_system=None, force_terminal=False))
    display.print_summary(results)
    display.console.print(final_line(results, run_dir), highlight=False, markup=False, soft_wrap=True)
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def save_summary(results: RunResults, run_dir: Path) -> None:
    """Write :data:`SUMMARY_FILE`: the table the terminal showed at the end of the run was
    lost with the terminal (a CI log scrolled away, a closed ssh session), and it is the
    first thing a reader of the run directory wants. A failure to write it is a warning,
    never the run's failure: results.json has every figure."""
    try:
        writers.write_atomic(Path(run_dir) / SUMMARY_FILE, summary_text(results, run_dir))
    except OSError as exc:
        log.warning("%s not written: %s", Path(run_dir) / SUMMARY_FILE, exc)


def vnf_cells(point: ReportedPoint | None) -> tuple[str, str, str]:
    """Generator TX/RX frames of the point's trial beside the VNFs' RX/TX (all VNFs, all
    ports) and the frames lost in the switch passes / in the VNFs."""
    vnf = (point.vnf if point else None) or {}
    if not vnf:
        return ("-",) * 3
    directions = vnf.get("stages") or []
    gen_tx = sum(int(d.get("tx_frames", 0)) for d in directions)
    gen_rx = sum(int(d.get("rx_frames", 0)) for d in directions)
    rx = sum(int(v.get("rx_frames", 0)) for v in vnf.get("vnfs") or ())
    tx = sum(int(v.get("tx_frames", 0)) for v in vnf.get("vnfs") or ())
    lost = vnf.get("lost_frames")
    lost_text = "-" if not lost else f"{lost['switch']:,}/{lost['vnf']:,}"
    return (f"{gen_tx:,}/{gen_rx:,}", f"{rx:,}/{tx:,}", lost_text)


def vnf_lines(point: ReportedPoint | None) -> list[str]:
    """``vnf testpmd#0: rx 885,476, tx 885,252, missed 0, 0.40 cores; ...`` and where loss was."""
    vnf = (point.vnf if point else None) or {}
    lines = []
    for v in vnf.get("vnfs") or ():
        cores = "" if v.get("cores") is None else f", {v['cores']:.2f} cores"
        starved = " (starved: a forwarding lcore did not get its CPU)" if v.get("starved") else ""
        lines.append(f"vnf {v.get('name')}#{v.get('index')}: rx {v.get('rx_frames', 0):,}, tx {v.get('tx_frames', 0):,}, "
                     f"missed {v.get('rx_missed', 0):,}{cores}{starved}")
    lost = vnf.get("lost_frames")
    if lost:
        where = f" (most at {', '.join(vnf['lost_at'])})" if vnf.get("lost_at") else ""
        lines.append(f"frames lost: switch passes {lost['switch']:,}, VNFs {lost['vnf']:,}{where}")
    return lines


def back2back_text(fs: FrameSizeResult) -> str:
    """One line of a frame size's back-to-back figures (RFC 9004)."""
    b = fs.back2back
    if b is None:
        return ""
    implied = "-" if b.implied_buffer_time_s is None else f"{b.implied_buffer_time_s * 1e6:,.1f} us"
    corrected = "-" if b.corrected_buffer_time_s is None else f"{b.corrected_buffer_time_s * 1e6:,.1f} us"
    frames = "-" if b.frames_avg is None else f"{b.frames_avg:,.1f}"
    return (f"back2back: {frames} frames avg over {len(b.repetitions)} search(es)"
            f"{'' if b.bounded else ' (unbounded: no loss at the longest burst)'}, burst rate "
            f"{fmt_rate(b.burst_rate_fps)}, buffer time implied {implied}, corrected {corrected}")
