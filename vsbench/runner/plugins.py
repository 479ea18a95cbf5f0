"""Find plugins through stevedore entry points, exactly as a third party's package would.

Built-in plugins are registered in setup.cfg under the same namespaces a vendor uses; the
core never imports a plugin module by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Callable

from stevedore import ExtensionManager, NamedExtensionManager

from vsbench.interfaces.plugin import API_VERSION, Plugin, api_incompatibility

NAMESPACES = {
    "vswitch": "vsbench.vswitch",
    "trafficgen": "vsbench.trafficgen",
    "vnf": "vsbench.vnf",
    "collector": "vsbench.collector",
}
#: The distribution whose plugins are "built-in"; every other one is "third-party".
BUILTIN_DISTRIBUTION = "vsbench"


class UnknownPluginError(Exception):
    """The user named a plugin that no installed package provides (or that cannot be
    used); one line."""


class IncompatiblePluginError(UnknownPluginError):
    """The plugin was written for a plugin API this vsbench does not provide."""


@dataclass(frozen=True)
class PluginInfo:
    """One registered plugin as ``vsbench --list-plugins`` shows it.

    ``distribution``/``version`` are the installed package that registers it, ``origin``
    says ``built-in`` (vsbench itself) or ``third-party``; ``api_version`` is what the
    class declares. ``load_error`` says why it cannot be loaded, ``incompatible`` why it
    must not be (both None for a usable plugin).
    """

    kind: str
    name: str
    description: str
    distribution: str
    version: str = "?"
    origin: str = "third-party"
    module: str = ""
    api_version: str | None = None
    load_error: str | None = None
    incompatible: str | None = None

    @property
    def usable(self) -> bool:
        return self.load_error is None and self.incompatible is None

    @property
    def problem(self) -> str | None:
        if self.load_error:
            return f"cannot load: {self.load_error}"
        if self.incompatible:
            return f"refused: {self.incompatible}"
        return None


def _manager(kind: str, load_errors: dict[str, str], only: str | None = None) -> ExtensionManager:
    """The plugins of ``kind``, imported: every one, or only the one named ``only`` (a run
    imports the plugins it uses, not every generator's client library: ~1 s a process)."""
    def on_failure(_manager, entrypoint, exc) -> None:
        load_errors[entrypoint.name] = f"{type(exc).__name__}: {exc}"

    # stevedore memoises each namespace's entry points for the life of the process; a
    # distribution installed (or put on sys.path) after the first lookup would stay
    # invisible. Lookups are rare and cheap, so always ask the installed metadata afresh.
    ExtensionManager.ENTRY_POINT_CACHE.pop(NAMESPACES[kind], None)
    if only is not None:
        return NamedExtensionManager(
            namespace=NAMESPACES[kind],
            names=[only],
            invoke_on_load=False,
            on_load_failure_callback=on_failure,
        )
    return ExtensionManager(
        namespace=NAMESPACES[kind],
        invoke_on_load=False,
        on_load_failure_callback=on_failure,
    )


def _entry_points(kind: str) -> dict[str, list[EntryPoint]]:
    """name -> the entry points registering it (more than one: a name clash)."""
    found: dict[str, list[EntryPoint]] = {}
    seen: set[tuple[str, str]] = set()
    for ep in entry_points(group=NAMESPACES[kind]):
        key = (ep.name, ep.value)
        if key in seen:  # one distribution seen twice on sys.path (e.g. an editable install)
            continue
        seen.add(key)
        found.setdefault(ep.name, []).append(ep)
    return found


def _dist_of(ep: EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "?", "?"
    return str(dist.name), str(dist.version)


def origin_of(distribution: str) -> str:
    normalized = distribution.lower().replace("_", "-")
    return "built-in" if normalized == BUILTIN_DISTRIBUTION else "third-party"


def _clash(kind: str, name: str, eps: list[EntryPoint]) -> str:
    owners = ", ".join(sorted({_dist_of(ep)[0] for ep in eps}))
    return f"{kind} plugin name {name!r} is registered by more than one package ({owners}); uninstall one"


def available(kind: str) -> list[str]:
    """Names of every plugin of ``kind`` registered by any installed distribution."""
    return sorted(_entry_points(kind))


def load(kind: str, name: str) -> type[Plugin]:
    """The plugin class registered as ``name`` in the ``kind`` namespace, checked to be a
    :class:`Plugin` written for this plugin API. Anything else is a one-line
    :class:`UnknownPluginError` raised before the class is used in any way."""
    if kind not in NAMESPACES:
        raise UnknownPluginError(f"unknown plugin kind {kind!r}")
    registered = _entry_points(kind)
    if name not in registered:
        listed = ", ".join(sorted(registered)) or "none installed"
        raise UnknownPluginError(f"unknown {kind} plugin {name!r}; available: {listed}")
    if len(registered[name]) > 1:
        raise UnknownPluginError(_clash(kind, name, registered[name]))
    errors: dict[str, str] = {}
    manager = _manager(kind, errors, only=name)
    if name in errors:
        raise UnknownPluginError(f"{kind} plugin {name!r} failed to load: {errors[name]}")
    cls = manager[name].plugin
    if not (isinstance(cls, type) and issubclass(cls, Plugin)):
        raise UnknownPluginError(f"{kind} plugin {name!r} is not a vsbench Plugin class")
    if cls.kind != kind:
        raise UnknownPluginError(f"{kind} plugin {name!r} is a {cls.kind} plugin ({cls.__module__}.{cls.__qualname__})")
    reason = api_incompatibility(getattr(cls, "api_version", None))
    if reason is not None:
        dist, version = _dist_of(registered[name][0])
        raise IncompatiblePluginError(f"{kind} plugin {name!r} ({dist} {version}) cannot be used: {reason}")
    cls.name = name
    return cls


def describe_all() -> list[PluginInfo]:
    """Every registered plugin: where it comes from, the API it targets, its one-line
    description, and why it cannot be used (if so)."""
    infos: list[PluginInfo] = []
    for kind in NAMESPACES:
        errors: dict[str, str] = {}
        manager = _manager(kind, errors)
        registered = _entry_points(kind)
        loaded = {ext.name: ext.plugin for ext in manager}
        for name in sorted(registered):
            eps = registered[name]
            dist, version = _dist_of(eps[0])
            base = dict(kind=kind, name=name, distribution=dist, version=version,
                        origin=origin_of(dist), module=eps[0].value)
            if len(eps) > 1:
                infos.append(PluginInfo(description="", load_error=_clash(kind, name, eps), **base))
                continue
            if name in errors or name not in loaded:
                infos.append(PluginInfo(description="", load_error=errors.get(name, "not loaded"), **base))
                continue
            cls = loaded[name]
            if not (isinstance(cls, type) and issubclass(cls, Plugin)):
                infos.append(PluginInfo(description="", load_error="not a vsbench Plugin class", **base))
                continue
            doc = getattr(cls, "description", "") or (cls.__doc__ or "").strip()
            declared = getattr(cls, "api_version", None)
            infos.append(PluginInfo(
                description=doc.splitlines()[0] if doc else "",
                api_version=declared if isinstance(declared, str) else None,
                incompatible=api_incompatibility(declared),
                **base,
            ))
    return infos


def provided_api() -> str:
    """The plugin API this vsbench provides (``vsbench.interfaces.API_VERSION``)."""
    return API_VERSION


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
            if api_incompatibility(getattr(cls, "api_version", None)) is not None:
                continue  # written for another contract: never called
            func = getattr(cls.cleanup_dead_run, "__func__", None)
            if func is None or func is Plugin.cleanup_dead_run.__func__ or func in seen:
                continue
            seen.add(func)
            found.append((f"{kind} {ext.name}", cls.cleanup_dead_run))
    return found
