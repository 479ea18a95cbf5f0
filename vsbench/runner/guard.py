"""Every call into a plugin goes through a guard: a deadline, and faults contained.

The runner never holds a plugin instance directly: it holds a :class:`GuardedPlugin`,
which forwards attribute access to the plugin and wraps each method call so that

* it has a deadline derived from its job (:class:`DeadlinePolicy`): a trial its duration
  plus a margin, ``start``/``stop``/``configure``/``install_rules`` their own, anything
  else a short one. Past it the call is interrupted (:mod:`vsbench.system.deadline`) and
  :class:`PluginDeadlineError` names the plugin and the call;
* any exception it raises -- a :class:`PluginError` or a bug (``KeyError``,
  ``ZeroDivisionError``...) -- becomes a :class:`PluginFault`: one line naming the plugin
  and the call, the original (with its traceback) chained as ``__cause__`` for the log
  file and ``-v``.

The undo actions a plugin registers on its context's resource stack are guarded the same
way (:class:`GuardedResources`), so a teardown that hangs or raises cannot stop the rest of
the teardown. The deployment and the measurement code see ordinary plugin objects and
need not know any of this.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from vsbench.interfaces.plugin import Plugin, PluginContext, PluginError
from vsbench.system.deadline import DeadlineExceeded, deadline
from vsbench.system.resources import ResourceStack

#: Calls that run one trial: their deadline is the trial's duration plus the margin.
TRIAL_CALLS = ("run_trial", "warm_up", "measure_latency_floor", "run_burst")
#: Calls that set a plugin up (one bridge, one port, one profile): ``configure_s``.
SETUP_CALLS = ("configure", "add_bridge", "add_port", "connect", "connect_many")


class PluginFault(PluginError):
    """A call into a plugin raised; ``str()`` is one line naming the plugin and the call.

    A :class:`PluginError` itself, so code that handles a plugin's refusal (a generator that
    cannot send probes alone) handles a contained fault the same way. ``cause`` is what the
    plugin raised (also ``__cause__``, with its traceback, for the log file)."""

    def __init__(self, label: str, call: str, cause: BaseException) -> None:
        self.label = label
        self.call = call
        self.cause = cause
        text = " ".join(str(cause).split())[:300]
        if isinstance(cause, PluginError):
            detail = text or type(cause).__name__
        else:  # a bug in the plugin: say what kind
            detail = f"{type(cause).__name__}: {text}" if text else type(cause).__name__
        super().__init__(f"{label}: {call}: {detail}")


class PluginDeadlineError(DeadlineExceeded):
    """A call into a plugin did not return within its deadline (``what`` is
    ``"<kind> <name>: <call>"``). Not a :class:`PluginError`: nothing may take it for a
    plugin's ordinary refusal -- the run ends."""


@dataclass(frozen=True)
class DeadlinePolicy:
    """Deadlines of calls into plugins, in seconds (the ``deadlines`` config section).

    ``overrides`` are a plugin class's own longer deadlines (``Plugin.deadlines_s``,
    by call name, or by the names ``start``, ``stop``, ``configure``, ``install_rules``,
    ``call``, ``trial_margin``); the longer of the two applies.
    """

    trial_margin_s: float = 60.0
    start_s: float = 300.0
    configure_s: float = 300.0
    install_rules_s: float = 1800.0
    stop_s: float = 60.0
    call_s: float = 60.0
    overrides: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "DeadlinePolicy":
        section = config.get("deadlines") or {}
        known = {k: float(v) for k, v in section.items() if k in cls.__dataclass_fields__ and k != "overrides"}
        return cls(**known)

    def for_plugin(self, plugin_cls: type) -> "DeadlinePolicy":
        own = getattr(plugin_cls, "deadlines_s", None) or {}
        return DeadlinePolicy(self.trial_margin_s, self.start_s, self.configure_s, self.install_rules_s,
                              self.stop_s, self.call_s, {str(k): float(v) for k, v in dict(own).items()})

    def _longer(self, base: float, *names: str) -> float:
        return max([base] + [self.overrides[n] for n in names if n in self.overrides])

    def margin_s(self) -> float:
        return self._longer(self.trial_margin_s, "trial_margin")

    def stop_deadline_s(self) -> float:
        return self._longer(self.stop_s, "stop")

    def for_call(self, call: str, args: tuple, kwargs: Mapping[str, Any]) -> tuple[float, str]:
        """(seconds, how they were derived) for ``call(*args, **kwargs)``."""
        if call in TRIAL_CALLS:
            margin = self.margin_s()
            if call == "run_burst":
                frames = _arg(args, kwargs, 0, "frames")
                rate = _arg(args, kwargs, 1, "rate_fps")
                sending = float(frames) / float(rate) if frames and rate else 0.0
                return sending + margin, f"burst {sending:g} s + margin {margin:g} s"
            index = 0 if call == "measure_latency_floor" else 1
            duration = _arg(args, kwargs, index, "duration_s")
            try:
                duration = max(0.0, float(duration))
            except (TypeError, ValueError):
                duration = 0.0
            return duration + margin, f"trial {duration:g} s + margin {margin:g} s"
        if call == "run_tcp":  # a TCP workload: its duration, slow start and set-up, plus the margin
            spec = _arg(args, kwargs, 0, "spec")
            length = float(getattr(spec, "duration_s", 0) or 0) + float(getattr(spec, "omit_s", 0) or 0) + 30.0
            margin = self.margin_s()
            return length + margin, f"tcp run {length:g} s + margin {margin:g} s"
        if call == "start":
            return self._longer(self.start_s, "start"), "deadlines.start_s"
        if call == "stop":
            return self.stop_deadline_s(), "deadlines.stop_s"
        if call == "install_rules":
            return self._longer(self.install_rules_s, "install_rules"), "deadlines.install_rules_s"
        if call in SETUP_CALLS:
            return self._longer(self.configure_s, call, "configure"), "deadlines.configure_s"
        return self._longer(self.call_s, call, "call"), "deadlines.call_s"


def _arg(args: tuple, kwargs: Mapping[str, Any], index: int, name: str) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else None


def guarded_call(label: str, call: str, func: Callable[..., Any], seconds: float, detail: str,
                 *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)`` with a deadline and its faults contained."""
    try:
        with deadline(seconds, f"{label}: {call}", detail):
            return func(*args, **kwargs)
    except PluginDeadlineError:
        raise
    except DeadlineExceeded as exc:
        raise PluginDeadlineError(exc.what, exc.seconds, exc.detail) from None
    except PluginFault:
        raise  # already contained (a plugin calling through another guard)
    except Exception as exc:  # noqa: BLE001 - containing every fault is the point
        raise PluginFault(label, call, exc) from exc


class GuardedResources(ResourceStack):
    """A plugin's view of the run's teardown stack: ``register`` puts the undo on the
    run's stack, in order with everything else, wrapped so that it has the plugin's stop
    deadline and a failure is logged naming the plugin. Closing it is the run's job."""

    def __init__(self, stack: ResourceStack, label: str, stop_s: float) -> None:
        super().__init__()
        self._target = stack
        self._label = label
        self._stop_s = stop_s

    def register(self, what: str, undo: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        label, seconds = self._label, self._stop_s

        def bounded(*a: Any, **kw: Any) -> None:
            guarded_call(label, f"teardown of {what}", undo, seconds, "deadlines.stop_s", *a, **kw)

        self._target.register(f"{label}: {what}", bounded, *args, **kwargs)

    def enter_context(self, cm: Any) -> Any:
        return self._target.enter_context(cm)

    def close(self) -> None:
        """The run closes its stack; a plugin closing the run's stack would tear down
        everything else too, so this does nothing."""


class GuardedPlugin:
    """A plugin instance seen through the guard. Attribute reads and writes go to the
    plugin; method calls are deadline-bound and their faults contained."""

    __slots__ = ("_plugin", "_label", "_policy")

    def __init__(self, plugin: Plugin, label: str, policy: DeadlinePolicy) -> None:
        object.__setattr__(self, "_plugin", plugin)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_policy", policy)

    @property
    def wrapped(self) -> Plugin:
        return self._plugin

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._plugin, name)
        if name.startswith("__") or not callable(value) or inspect.isclass(value):
            return value
        label, policy = self._label, self._policy

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            seconds, detail = policy.for_call(name, args, kwargs)
            return guarded_call(label, name, value, seconds, detail, *args, **kwargs)

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._plugin, name, value)

    def __repr__(self) -> str:
        return f"<guarded {self._label}>"


def unwrap(obj: Any) -> Any:
    """The plugin behind a guard (or ``obj`` itself)."""
    return obj.wrapped if isinstance(obj, GuardedPlugin) else obj


def plugin_label(cls: type, kind: str | None = None) -> str:
    return f"{kind or getattr(cls, 'kind', 'plugin')} {getattr(cls, 'name', '') or cls.__name__}"


def construct(cls: type[Plugin], context: PluginContext, policy: DeadlinePolicy,
              kind: str | None = None, label: str | None = None) -> GuardedPlugin:
    """Instantiate ``cls`` with ``context`` (its resources guarded) under the guard;
    ``label`` names it in errors (default: kind and entry-point name)."""
    own = policy.for_plugin(cls)
    label = label or plugin_label(cls, kind)
    guarded_context = PluginContext(
        run_id=context.run_id,
        settings=context.settings,
        log_dir=context.log_dir,
        resources=GuardedResources(context.resources, label, own.stop_deadline_s()),
        run=context.run,
        dut_netns=context.dut_netns,
        work_dir=context.work_dir,
    )
    seconds, detail = own.for_call("__init__", (), {})
    plugin = guarded_call(label, "constructor", cls, seconds, detail, guarded_context)
    return GuardedPlugin(plugin, label, own)


def call_class(cls: type, kind: str, method: str, policy: DeadlinePolicy, *args: Any) -> Any:
    """A class-level call (``check_prerequisites``) under the guard."""
    own = policy.for_plugin(cls)
    seconds, detail = own.for_call(method, args, {})
    return guarded_call(plugin_label(cls, kind), method, getattr(cls, method), seconds, detail, *args)
