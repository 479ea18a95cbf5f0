"""What OvS-DPDK's implementation listings say is in effect, and whether it is what was
asked. Pure functions over :func:`.parse.parse_implementation_listing` results.

The userspace datapath has three switchable implementations (OvS 3.1):

* ``dpcls_lookup`` (``dpif-netdev/subtable-lookup-prio-set NAME 255``): the lookup a dpcls
  subtable uses is chosen when the subtable is created, the highest-priority one whose
  probe accepts the subtable's shape (``avx512_gather`` takes subtables of up to a few
  miniflow units; others fall back to ``generic``). In effect: the asked one has the
  highest priority; how many subtables use it is in each trial's figures.
* ``dpif_impl`` (``dpif-netdev/dpif-impl-set``): the DPIF every PMD thread runs.
* ``mfex_impl`` (``dpif-netdev/miniflow-parser-set``): the miniflow parser every PMD thread
  runs. ``study`` looks at the first packets and then hands the PMD to the parser that
  matched them, so after study any parser on the PMDs is in effect. In OvS 3.1 only the
  AVX-512 DPIF calls it: ``dpif_scalar`` parses every packet with its own scalar
  ``miniflow_extract()`` whatever the setting (so ``study`` never studies there), and the
  ``active`` label says so (``scalar (DPIF)``); the PMD counter
  ``mfex_opt_hits`` counts the packets an optimized parser took.

An AVX-512 implementation exists only in an OvS built with it: Debian 12's
``openvswitch-switch-dpdk`` is compiled for baseline x86-64 (no ``-msse4.2``), and OvS
3.1 leaves every AVX-512 implementation out of such a build (``DPCLS_IMPL_AVX512_CHECK``
needs ``__SSE4_2__``). ``tools/build_ovs_avx512.sh`` builds the same OvS with them.
"""

from __future__ import annotations

from typing import Any, Mapping

#: Implementations that are OvS's own self-checks, not a configuration anyone measures.
SELF_CHECKS = ("autovalidator",)

#: The ``study`` parser, which hands each PMD to the parser it found best.
STUDY = "study"

#: The DPIF that parses packets with its own scalar code, not the miniflow parser set.
SCALAR_DPIF = "dpif_scalar"


def implementation_problem(key: str, name: str, listing: Mapping[str, Mapping[str, Any]], *,
                           require_pmds: bool) -> str | None:
    """Why ``listing`` (the ``-get`` listing of ``key``) does not show ``name`` in effect,
    or None when it does. ``require_pmds``: the PMD threads must exist and all run it (else
    PMD threads created later take the default that the set command also set)."""
    if not listing:
        return "OvS gave no listing to check it against"
    entry = listing.get(name)
    if entry is None:
        return "not in this OvS's listing"
    if key == "dpcls_lookup":
        top = max(int(e.get("priority", -1)) for e in listing.values())
        if int(entry.get("priority", -1)) < top:
            ahead = [n for n, e in listing.items() if int(e.get("priority", -1)) == top]
            return f"priority {entry.get('priority')} is below {', '.join(ahead)}'s {top}"
        return None
    if entry.get("available") is False:
        return "this CPU lacks the instructions it needs"
    if not require_pmds:
        return None
    running = {n: list(e.get("pmds") or []) for n, e in listing.items() if e.get("pmds")}
    if not running:
        return "no PMD thread runs any implementation"
    if key == "mfex_impl" and name == STUDY:
        return None  # study hands each PMD over to the parser it chose
    others = {n: p for n, p in running.items() if n != name}
    if others:
        where = "; ".join(f"{n} on PMD core(s) {', '.join(map(str, p))}" for n, p in others.items())
        return f"the PMD threads run something else: {where}"
    return None


def usable(key: str, listing: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(names usable here, names this build has that this CPU cannot run) of a listing."""
    ok = [n for n, e in listing.items() if e.get("available") is not False]
    not_here = [n for n, e in listing.items() if e.get("available") is False]
    return ok, not_here


def usable_text(key: str, listing: Mapping[str, Mapping[str, Any]]) -> str:
    """``usable here: autovalidator, generic; built but not for this CPU: ...`` for an
    error line (``no listing`` when OvS gave none)."""
    if not listing:
        return "OvS listed no implementations"
    ok, not_here = usable(key, listing)
    text = f"usable here: {', '.join(ok) or 'none'}"
    if not_here:
        text += f"; built but not for this CPU: {', '.join(not_here)}"
    if not any("avx512" in n for n in listing):
        text += "; this OvS build has no AVX-512 ones (tools/build_ovs_avx512.sh)"
    return text


def _running(listing: Mapping[str, Mapping[str, Any]]) -> str | None:
    names = [n for n, e in listing.items() if e.get("pmds")]
    return ",".join(names) if names else None


def summarize_implementations(listings: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The three listings (by setting key) as a trial's record:

    ``{"dpcls_lookup": "generic", "dpcls_subtables": {"generic": 2}, "dpif_impl":
    "dpif_scalar", "mfex_impl": "scalar", "available": {"dpcls_lookup": [...], ...}}``:
    the preferred lookup (highest priority, the first listed of a tie: OvS's own order), the
    subtables each lookup serves, the DPIF and parser the PMD threads run (None while no PMD
    runs one), and what this build offers on this CPU. A listing OvS did not give is
    left out."""
    out: dict[str, Any] = {}
    available: dict[str, list[str]] = {}
    dpcls = listings.get("dpcls_lookup") or {}
    if dpcls:
        top = max(int(e.get("priority", -1)) for e in dpcls.values())
        out["dpcls_lookup"] = next(n for n, e in dpcls.items() if int(e.get("priority", -1)) == top)
        out["dpcls_subtables"] = {n: int(e["use_count"]) for n, e in dpcls.items() if e.get("use_count")}
        available["dpcls_lookup"] = usable("dpcls_lookup", dpcls)[0]
    for key in ("dpif_impl", "mfex_impl"):
        listing = listings.get(key) or {}
        if listing:
            out[key] = _running(listing)
            available[key] = usable(key, listing)[0]
    if available:
        out["available"] = available
    return out


def active_labels(summary: Mapping[str, Any]) -> dict[str, str]:
    """Short ``{"dpcls": "avx512_gather", "dpif": "dpif_avx512", "mfex": "scalar"}`` of a
    :func:`summarize_implementations` result, for a table column (a lookup no subtable
    used in the trial says so: ``generic (0 subtables)``)."""
    out: dict[str, str] = {}
    if "dpcls_lookup" in summary:
        used = summary.get("dpcls_subtables") or {}
        preferred = str(summary["dpcls_lookup"])
        if not used:
            out["dpcls"] = f"{preferred} (0 subtables)"
        elif set(used) == {preferred}:
            out["dpcls"] = preferred
        else:
            out["dpcls"] = "+".join(f"{n}:{c}" for n, c in used.items())
    for key, label in (("dpif_impl", "dpif"), ("mfex_impl", "mfex")):
        if key in summary:
            out[label] = str(summary[key] or "none")
    if summary.get("dpif_impl") == SCALAR_DPIF and "mfex_impl" in summary:
        out["mfex"] = "scalar (DPIF)"  # the scalar DPIF parses with its own code, never the parser set
    return out
