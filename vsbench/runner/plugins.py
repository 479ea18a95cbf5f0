"""Find plugins through stevedore entry points, exactly as a third party's package would.

Built-in plugins are registered in setup.cfg under the same namespaces a vendor uses; the
core never imports a plugin module by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from stevedore import ExtensionManager

from vsbench.interfaces.plugin import Plugin

NAMESPACES = {
    "vswitch": "vsbench.vswitch",
    "trafficgen": "vsbench.trafficgen",
    "vnf": "vsbench.vnf",
    "collector": "vsbench.collector",
}


class UnknownPluginError(Exception):
    """The user named a plugin that no installed package provides."""


@dataclass(frozen=True)
class PluginInfo:
    kind: str
    name: str
    description: str
    distribution: str
    load_error: str | None = None


def _manager(kind: str, load_errors: dict[str, str]) -> ExtensionManager:
    def on_failure(_manager, entrypoint, exc) -> None:
        load_errors[entrypoint.name] = f"{type(exc).__name__}: {exc}"

    # stevedore memoises each namespace's entry points for the life of the process; a
    # distribution installed (or put on sys.path) after the first lookup would stay
    # invisible. Lookups are rare and cheap, so always ask the installed metadata afresh.
    ExtensionManager.ENTRY_POINT_CACHE.pop(NAMESPACES[kind], None)
    return ExtensionManager(
        namespace=NAMESPACES[kind],
        invoke_on_load=False,
        on_load_failure_callback=on_failure,
    )


def available(kind: str) -> list[str]:
    """Names of every plugin of ``kind`` registered by any installed distribution."""
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group=NAMESPACES[kind])})


def load(kind: str, name: str) -> type[Plugin]:
    """The plugin class registered as ``name`` in the ``kind`` namespace."""
    if kind not in NAMESPACES:
        raise UnknownPluginError(f"unknown plugin kind {kind!r}")
    names = available(kind)
    if name not in names:
        listed = ", ".join(names) or "none installed"
        raise UnknownPluginError(f"unknown {kind} plugin {name!r}; available: {listed}")
    errors: dict[str, str] = {}
    manager = _manager(kind, errors)
    if name in errors:
        raise UnknownPluginError(f"{kind} plugin {name!r} failed to load: {errors[name]}")
    cls = manager[name].plugin
    if not (isinstance(cls, type) and issubclass(cls, Plugin)):
        raise UnknownPluginError(f"{kind} plugin {name!r} is not a vsbench Plugin class")
    cls.name = name
    return cls


def describe_all() -> list[PluginInfo]:
    """Every registered plugin with its one-line description (or why it failed to load)."""
    from importlib.metadata import entry_points

    infos: list[PluginInfo] = []
    for kind in NAMESPACES:
        errors: dict[str, str] = {}
        manager = _manager(kind, errors)
        dists = {
            ep.name: (ep.dist.name if ep.dist is not None else "?")
            for ep in entry_points(group=NAMESPACES[kind])
        }
        for ext in sorted(manager, key=lambda e: e.name):
            dist_name = dists.get(ext.name, "?")
            doc = getattr(ext.plugin, "description", "") or (ext.plugin.__doc__ or "").strip()
            infos.append(PluginInfo(kind, ext.name, doc.splitlines()[0] if doc else "", dist_name))
        for name, err in sorted(errors.items()):
            infos.append(PluginInfo(kind, name, "", dists.get(name, "?"), load_error=err))
    return infos


def dead_run_cleaners() -> list[tuple[str, Callable[[str, list[Path]], list[str]]]]:
    """``(label, cls.cleanup_dead_run)`` of every installed plugin class that overrides
    :meth:`Plugin.cleanup_dead_run`, for ``vsbench cleanup`` (one entry per implementation:
    subclasses sharing their base's cleaner are asked once). Plugins that fail to load are
    skipped: their leftovers are still removed by the generic cleanup."""
    found: list[tuple[str, Callable[[str, list[Path]], list[str]]]] = []
    seen: set[object] = set()
    for kind in NAMESPACES:
        manager = _manager(kind, {})
        for ext in sorted(manager, key=lambda e: e.name):
            cls = ext.plugin
            if not (isinstance(cls, type) and issubclass(cls, Plugin)):
                continue
            func = getattr(cls.cleanup_dead_run, "__func__", None)
            if func is None or func is Plugin.cleanup_dead_run.__func__ or func in seen:
                continue
            seen.add(func)
            found.append((f"{kind} {ext.name}", cls.cleanup_dead_run))
    return found
