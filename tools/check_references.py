#!/usr/bin/env python3
"""Check the transcribed published figures in suites/references/NNN.yaml.

For the five seed reports (000..004) this checks that
  * every result id listed in seed-tables.md is present exactly once, in the file of its report,
    and no other id is;
  * each id has printed/source/conditions/rows, printed ids have rows and chart-only ids none;
  * every row uses only the allowed row keys and metric names, with numbers as numbers;
  * no two rows of an id have the same key fields (so each row is identified);
and prints per report: ids, printed ids, rows.  It also warns (does not fail) where a row's
L1 Mbps and packets/s disagree by more than 0.5 %, which flags OCR digit errors and the
report's own slips.

Usage: python3 tools/check_references.py [--refs DIR] [--seed-tables FILE] [--seeds DIR]
Exit status 0 when every check passes, 1 otherwise.
"""
import argparse
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REFS = os.path.join(os.path.dirname(HERE), "suites", "references")
DEFAULT_SEED_TABLES = "/work/shared/reference/seed-tables.md"
DEFAULT_SEEDS = "/work/shared/reference/seeds"

REPORTS = ["000", "001", "002", "003", "004"]

# Row key fields and their types.
KEYS = {
    "frame_size": int, "series": str, "cores": int, "flows": int, "rules": int,
    "routes": int, "nexthops": int, "load_percent": (int, float), "clients": int,
    "tso": bool, "queues": int, "instances": int, "profile": (int, str),
}
# Metric names from the brief.
METRICS = {
    "ndr_fps", "ndr_mpps", "ndr_l1_mbps", "ndr_l1_gbps", "ndr_line_rate_percent",
    "pdr_fps", "pdr_l1_mbps", "pdr_mpps",
    "latency_min_ns", "latency_avg_ns", "latency_max_ns",
    "gain_percent", "ratio", "output_percent", "drop_percent", "tcp_gbps",
    "cores_per_gbps", "cores_used", "mpps_per_core", "switching_ops_fps",
}
# Metric names added for figures the reports print that the brief's names do not cover.
ADDED_METRICS = {
    "switching_operations": "number of switching operations of a topology (000/T5-1)",
    "pdr_mbps": "Mbps at a stated non-zero loss, layer (L1/L2) not stated by the report (001)",
    "delta_percent": "printed 'performance delta', (burst - scatter) / burst (001/T10)",
    "overhead_percent": "VXLAN throughput overhead vs plain PHY-VM-PHY (000/F7-22)",
    "latency_avg_reduction_percent": "stated reduction of average latency (000/T7-11, 003/G5.2)",
    "latency_avg_range_low_ns": "lower end of a stated average-latency range (002/F8)",
    "latency_avg_range_high_ns": "upper end of a stated average-latency range (002/F8)",
    "frame_rate_mpps": "frame rate in Mpps, loss criterion not stated by the report (003)",
    "throughput_gbps": "throughput in Gb/s, loss criterion and layer not stated (003)",
}
ALL_METRICS = METRICS | set(ADDED_METRICS)
ID_FIELDS = {"printed", "source", "conditions", "rows", "note", "unreadable"}


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice (PyYAML would keep the last)."""


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, "duplicate key %r" % (key,), key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def type_ok(value, want):
    if want is int or want == (int, float):
        if isinstance(value, bool):
            return False
    return isinstance(value, want)


def seed_ids(path):
    """Result ids of seed-tables.md: first cell of each table row, e.g. '000/T7-5'."""
    ids = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\|\s*(\d{3}/[^|\s]+)\s*\|", line)
            if m:
                ids.append(m.group(1))
    return ids


def check(refs, seed_tables, seeds):
    errors, warnings = [], []
    expected = seed_ids(seed_tables)
    dup_expected = sorted({i for i in expected if expected.count(i) > 1})
    if dup_expected:
        errors.append("seed-tables.md lists an id twice: %s" % dup_expected)
    found = {}  # id -> report file it was found in (all files)
    summary = []
    for rep in REPORTS:
        path = os.path.join(refs, rep + ".yaml")
        if not os.path.exists(path):
            errors.append("%s: missing" % path)
            continue
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.load(f, Loader=UniqueKeyLoader)
        except yaml.YAMLError as exc:
            errors.append("%s: %s" % (path, exc))
            continue
        where = rep + ".yaml"
        if not isinstance(doc, dict) or set(doc) != {"report", "title", "ids"}:
            errors.append("%s: top level must have exactly report, title, ids" % where)
            continue
        if not str(doc["report"]).startswith(rep + "-"):
            errors.append("%s: report %r is not report %s" % (where, doc["report"], rep))
        if seeds and not os.path.exists(os.path.join(seeds, str(doc["report"]))):
            errors.append("%s: report file %r not in %s" % (where, doc["report"], seeds))
        if not isinstance(doc["title"], str) or not doc["title"].strip():
            errors.append("%s: empty title" % where)
        n_printed = n_rows = 0
        for rid, entry in (doc["ids"] or {}).items():
            tag = "%s %s" % (where, rid)
            if rid in found:
                errors.append("%s: id also in %s" % (tag, found[rid]))
            found[rid] = where
            if not str(rid).startswith(rep + "/"):
                errors.append("%s: id belongs to another report" % tag)
            if not isinstance(entry, dict):
                errors.append("%s: not a mapping" % tag)
                continue
            extra = set(entry) - ID_FIELDS
            if extra:
                errors.append("%s: unknown fields %s" % (tag, sorted(extra)))
            for field in ("printed", "source", "conditions", "rows"):
                if field not in entry:
                    errors.append("%s: missing %s" % (tag, field))
            printed = entry.get("printed")
            if not isinstance(printed, bool):
                errors.append("%s: printed must be true or false" % tag)
            for field in ("source", "conditions", "note"):
                if field in entry and not (isinstance(entry[field], str) and entry[field].strip()):
                    errors.append("%s: %s must be non-empty text" % (tag, field))
            if "unreadable" in entry and not (
                    isinstance(entry["unreadable"], list)
                    and all(isinstance(u, str) for u in entry["unreadable"])):
                errors.append("%s: unreadable must be a list of strings" % tag)
            rows = entry.get("rows") or []
            if not isinstance(rows, list):
                errors.append("%s: rows must be a list" % tag)
                continue
            if printed is True and not rows:
                errors.append("%s: printed but no rows" % tag)
            if printed is False:
                if rows:
                    errors.append("%s: printed: false but has rows" % tag)
                if not entry.get("note"):
                    errors.append("%s: chart-only id needs a note" % tag)
            if printed is True:
                n_printed += 1
            n_rows += len(rows)
            seen_keys = {}
            for i, row in enumerate(rows):
                rtag = "%s row %d" % (tag, i + 1)
                if not isinstance(row, dict):
                    errors.append("%s: not a mapping" % rtag)
                    continue
                keys = {k: v for k, v in row.items() if k in KEYS}
                mets = {k: v for k, v in row.items() if k in ALL_METRICS}
                unknown = set(row) - set(KEYS) - ALL_METRICS
                if unknown:
                    errors.append("%s: unknown names %s" % (rtag, sorted(unknown)))
                if not keys:
                    errors.append("%s: no key field" % rtag)
                if not mets:
                    errors.append("%s: no metric" % rtag)
                for k, v in keys.items():
                    if not type_ok(v, KEYS[k]):
                        errors.append("%s: key %s=%r has the wrong type" % (rtag, k, v))
                for k, v in mets.items():
                    if not is_number(v):
                        errors.append("%s: metric %s=%r is not a number" % (rtag, k, v))
                ident = tuple(sorted((k, str(v)) for k, v in keys.items()))
                if ident in seen_keys:
                    errors.append("%s: same key fields as row %d" % (rtag, seen_keys[ident]))
                seen_keys[ident] = i + 1
                # L1 consistency: fps x (frame + 20 B) x 8 = Mbps
                fs, fps, mbps = row.get("frame_size"), row.get("ndr_fps"), row.get("ndr_l1_mbps")
                if is_number(fs) and is_number(fps) and is_number(mbps) and mbps:
                    calc = fps * (fs + 20) * 8 / 1e6
                    if abs(calc - mbps) / mbps > 0.005:
                        warnings.append("%s: ndr_fps %s at %s B is %.0f L1 Mbps, printed %s"
                                        % (rtag, fps, fs, calc, mbps))
        summary.append((rep, len(doc["ids"] or {}), n_printed, n_rows))
    for rid in expected:
        if rid not in found:
            errors.append("id %s of seed-tables.md is missing" % rid)
    for rid in found:
        if rid not in expected:
            errors.append("id %s (%s) is not in seed-tables.md" % (rid, found[rid]))

    print("%-6s %4s %8s %5s" % ("report", "ids", "printed", "rows"))
    for rep, n_ids, n_printed, n_rows in summary:
        print("%-6s %4d %8d %5d" % (rep, n_ids, n_printed, n_rows))
    print("total  %4d %8d %5d   (seed-tables.md lists %d ids)" % (
        sum(s[1] for s in summary), sum(s[2] for s in summary),
        sum(s[3] for s in summary), len(expected)))
    for w in warnings:
        print("WARNING " + w)
    for e in errors:
        print("ERROR " + e)
    print("OK" if not errors else "%d error(s)" % len(errors))
    return not errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--refs", default=DEFAULT_REFS)
    ap.add_argument("--seed-tables", default=DEFAULT_SEED_TABLES)
    ap.add_argument("--seeds", default=DEFAULT_SEEDS,
                    help="directory of the seed report texts ('' to skip the file check)")
    args = ap.parse_args()
    return 0 if check(args.refs, args.seed_tables, args.seeds) else 1


if __name__ == "__main__":
    sys.exit(main())
