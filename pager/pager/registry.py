"""Strategies by name: the built-in ones, installed plugins, and ``module:Class``.

Wherever satpage takes a strategy name (``--strategies``, a scenario's
``strategies.compare``, sweeps) it takes one of:

- a built-in name (``STRATEGY_NAMES``: ``proactive``, ``on-demand``, ``hot-k``, ...);
- the name of an entry point in the group ``satpage.strategies`` of an installed
  package (``lazy = "mypkg.strategies:Lazy"`` under
  ``[project.entry-points."satpage.strategies"]`` of its pyproject.toml);
- ``module:Class``: a class in a module importable from the working directory or
  ``PYTHONPATH`` (``mymod:Lazy``, ``lab.strategies:Lazy``).

``make_strategy(spec, settings)`` builds the strategy object. Its settings (a
mapping: a scenario's ``[strategies.params.Lazy]`` table) are checked against the
class: a dataclass takes its scalar fields (int, float, bool, str) as settings,
anything else is an error naming the key; the class validates the values itself
(in ``__post_init__``, raising ValueError). A class with a ``from_settings(mapping)``
classmethod builds itself instead. Every object is checked against the Strategy
Protocol (``check_strategy``), its handover rule against ``SELECT_SIGNATURE``.

A bad strategy (unknown name, a module that does not import, a missing member, a
handover rule of the wrong signature, a bad setting) raises ``StrategyError``, a
ValueError whose message names it: the CLI prints it and exits 2.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import os
import sys
import types
import typing
from collections.abc import Mapping
from importlib import metadata
from typing import Any

import numpy as np

from pager import _kernels as K
from pager.strategies import (
    ContainerMigration,
    Custody,
    GroundStore,
    HotK,
    IdleLink,
    Multipath,
    OnDemand,
    Proactive,
    PushAhead,
    ReplicateNext,
)
from pager.strategy import RULE_PARAMETERS, NetworkUse

__all__ = ["BUILTIN_STRATEGIES", "ENTRY_POINT_GROUP", "STRATEGY_NAMES", "StrategyError",
           "check_handover_rule", "check_strategy", "make_strategy", "plugin_module",
           "strategy_class", "strategy_settings", "strategy_summary"]

#: The built-in strategies by name, in the order reports list them.
BUILTIN_STRATEGIES: dict[str, type] = {cls.name: cls for cls in (
    Proactive, OnDemand, HotK, GroundStore, PushAhead, ContainerMigration, ReplicateNext,
    Multipath, Custody, IdleLink)}

#: Built-in strategy names, in report order.
STRATEGY_NAMES = tuple(BUILTIN_STRATEGIES)

#: Entry-point group under which installed packages register strategies.
ENTRY_POINT_GROUP = "satpage.strategies"

_SETTING_TYPES = (bool, int, float, str)


class StrategyError(ValueError):
    """A strategy that cannot be used: the message names it and says why."""


def _label(spec: str) -> str:
    return f"strategy {spec!r}" if spec in BUILTIN_STRATEGIES else f"strategy plugin {spec!r}"


def strategy_class(spec: str) -> type:
    """The class a strategy name stands for: built-in, entry point, or ``module:Class``."""
    if not isinstance(spec, str) or not spec.strip():
        raise StrategyError(f"a strategy name must be a non-empty string, got {spec!r}")
    if spec in BUILTIN_STRATEGIES:
        return BUILTIN_STRATEGIES[spec]
    if ":" in spec:
        return _import_class(spec)
    ep = _entry_points().get(spec)
    if ep is not None:
        return _load_entry_point(spec, ep)
    known = list(STRATEGY_NAMES) + sorted(_entry_points())
    raise StrategyError(f"unknown strategy {spec!r} (known: {', '.join(known)}; or "
                        "module:Class for a class importable from the working directory "
                        "or PYTHONPATH)")


def _entry_points() -> dict[str, metadata.EntryPoint]:
    """The installed ``satpage.strategies`` entry points by name (read afresh: a package
    installed while the process runs is seen)."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _load_entry_point(spec: str, ep: metadata.EntryPoint) -> type:
    label = f"strategy plugin {spec!r} (entry point {ep.value!r} in {ENTRY_POINT_GROUP})"
    try:
        cls = ep.load()
    except Exception as exc:  # noqa: BLE001 - any failure of a user's module is its error
        raise StrategyError(f"{label}: cannot be loaded: {type(exc).__name__}: {exc}") from exc
    if not isinstance(cls, type):
        raise StrategyError(f"{label}: {ep.value} is not a class, got {cls!r}")
    name = getattr(cls, "name", None)
    if name != spec:
        raise StrategyError(f"{label}: the class's name is {name!r}; an entry point must "
                            f"carry the strategy's name")
    return cls


def _import_class(spec: str) -> type:
    label = f"strategy plugin {spec!r}"
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr or ":" in attr:
        raise StrategyError(f"{label}: give module:Class (e.g. mymod:Lazy)")
    # the working directory first, as `python -m` has it: the satpage script's own
    # folder is sys.path[0] otherwise
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure of a user's module is its error
        raise StrategyError(f"{label}: cannot import {module_name}: "
                            f"{type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise StrategyError(f"{label}: module {module_name} "
                                f"({getattr(module, '__file__', '?')}) has no member {attr!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise StrategyError(f"{label}: {attr} is not a class, got {obj!r}")
    return obj


def plugin_module(spec: str) -> str | None:
    """The module a ``module:Class`` name imports (None for the other kinds)."""
    return spec.partition(":")[0] if ":" in spec else None


def strategy_settings(cls: type) -> dict[str, type]:
    """The settings a strategy class takes, name -> type: the scalar fields (int, float,
    bool, str) of a dataclass, ClassVars and other types excluded."""
    if not dataclasses.is_dataclass(cls):
        return {}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable annotations: read the raw ones
        hints = {}
    out = {}
    for f in dataclasses.fields(cls):
        t = hints.get(f.name, f.type)
        if f.init and t in _SETTING_TYPES:
            out[f.name] = t
    return out


def _coerce(label: str, key: str, value: Any, want: type) -> Any:
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if want is int and isinstance(value, bool) or not isinstance(value, want):
        raise StrategyError(f"{label}: setting {key} = {value!r} must be "
                            f"{want.__name__}")
    return value


def make_strategy(spec: str, settings: Mapping[str, Any] | None = None):
    """The Strategy object for a strategy name, built from its settings (see the module
    docstring) and checked against the Protocol."""
    cls = strategy_class(spec)
    label = _label(spec)
    table = dict(settings or {})
    try:
        if hasattr(cls, "from_settings"):
            obj = cls.from_settings(table)
        else:
            known = strategy_settings(cls)
            unknown = [k for k in table if k not in known]
            if unknown:
                raise StrategyError(
                    f"{label}: unknown setting {unknown[0]!r} "
                    f"(known: {', '.join(known) or 'none, it takes no settings'})")
            obj = cls(**{k: _coerce(label, k, v, known[k]) for k, v in table.items()})
    except StrategyError:
        raise
    except (ValueError, TypeError) as exc:
        raise StrategyError(f"{label}: {exc}") from exc
    check_strategy(obj, spec)
    return obj


def check_strategy(obj: Any, spec: str | None = None) -> None:
    """Raise StrategyError unless ``obj`` has every member of the Strategy Protocol with a
    usable value and a handover rule compiled for ``SELECT_SIGNATURE``."""
    label = _label(spec) if spec is not None else f"strategy {getattr(obj, 'name', obj)!r}"
    for member in ("name", "move_on_fault", "create_on_ground", "handover_kind", "lead_ns",
                   "select", "params"):
        if not hasattr(obj, member):
            raise StrategyError(f"{label}: missing member {member!r} of the Strategy "
                                "Protocol (docs/strategies.md)")
    if not isinstance(obj.name, str) or not obj.name or ":" in obj.name:
        raise StrategyError(f"{label}: name must be a non-empty string without ':', "
                            f"got {obj.name!r}")
    for member in ("move_on_fault", "create_on_ground"):
        if not isinstance(getattr(obj, member), bool | np.bool_):
            raise StrategyError(f"{label}: {member} must be True or False, "
                                f"got {getattr(obj, member)!r}")
    if obj.handover_kind not in (K.KIND_HANDOVER, K.KIND_PUSH):
        raise StrategyError(f"{label}: handover_kind must be EventKind.HANDOVER or "
                            f"EventKind.PUSH, got {obj.handover_kind!r}")
    if not isinstance(obj.lead_ns, int | np.integer) or obj.lead_ns < 0:
        raise StrategyError(f"{label}: lead_ns must be an integer >= 0, got {obj.lead_ns!r}")
    check_handover_rule(obj.select, label)
    try:
        params = np.asarray(obj.params())
    except Exception as exc:  # noqa: BLE001 - a user's method failing is its error
        raise StrategyError(f"{label}: params() failed: {type(exc).__name__}: {exc}") from exc
    if params.ndim != 1 or (params.size and not np.issubdtype(params.dtype, np.integer)):
        raise StrategyError(f"{label}: params() must return a 1-D integer array, got "
                            f"{params.dtype} of shape {params.shape}")
    use = getattr(obj, "network", None)
    if use is not None and not isinstance(use, NetworkUse):
        raise StrategyError(f"{label}: network must be a pager.NetworkUse, got {use!r}")
    if use is not None and use.blocking_migration and not callable(
            getattr(obj, "handover_downtime_ms", None)):
        raise StrategyError(f"{label}: network.blocking_migration needs a method "
                            "handover_downtime_ms(state_bytes) -> downtime (ms) per handover")
    if hasattr(obj, "network_log") and not callable(obj.network_log):
        raise StrategyError(f"{label}: network_log must be a method (trace, events) -> "
                            f"events, got {obj.network_log!r}")


def check_handover_rule(select: Any, label: str) -> None:
    """Raise StrategyError unless ``select`` is a Numba function compiled for
    ``SELECT_SIGNATURE`` (what ``@pager.handover_rule`` makes)."""
    if isinstance(select, types.MethodType):
        select = select.__func__
    sigs = getattr(select, "signatures", None)
    if sigs is None:
        what = "a plain Python function" if callable(select) else repr(select)
        raise StrategyError(f"{label}: its handover rule select is {what}; decorate it with "
                            f"@pager.handover_rule ({', '.join(RULE_PARAMETERS)}) -> n")
    if K.SELECT_SIGNATURE.args not in sigs:
        got = "; ".join(", ".join(str(a) for a in s) for s in sigs) or "none"
        raise StrategyError(f"{label}: its handover rule select is compiled for ({got}), not "
                            f"pager.SELECT_SIGNATURE: decorate it with @pager.handover_rule")


@functools.cache
def strategy_summary(name: str) -> str:
    """One line on a built-in strategy: the first line of its class docstring."""
    doc = inspect.getdoc(BUILTIN_STRATEGIES[name]) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()
