"""The parameter table's constraints and the one function that checks a value against them.

What each parameter accepts is data, :data:`CONSTRAINTS` (in the spirit of scikit-learn's
``_parameter_constraints``: a type, conditions with their messages, what None means, the
allowed names), and one function checks a value against it, :func:`check`: the one place that
raises for a parameter of the table (the array-valued parameters, weights, offsets, bounds and
feature indices, keep their own checks in :mod:`sparsecert._checks`). The table holds the
scalar parameters of the entry points (the rows of :mod:`sparsecert._params` check through
it), the list of support sizes, the loss names, the targets of the losses (two labels,
counts), the fields of a certificate's ``problem`` record and the synthetic data's generator
parameters. An entry whose bound depends on the data (``k <= n_features``) or on a registry
above this module (the loss names) is completed where that is known with
:func:`dataclasses.replace` (see :func:`k_fits`); the loss registry
(:mod:`sparsecert.solvers.losses`), the front's checks (:mod:`sparsecert._checks`), the
certificate writer and the data generator import this module, which imports numpy and the
standard library only (the bottom layer).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = ["Rule", "Constraint", "CONSTRAINTS", "BOOL", "POSITIVE_INT", "MAX_LAMBDA2", "check",
           "k_fits", "record_k_fits"]


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def _show(value) -> str:
    """A number as the user gave it, every digit of a long double, at most about 40 characters."""
    text = (np.format_float_positional(value, unique=True) if isinstance(value, np.floating)
            else str(value))
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text)} characters)"


def _exactly(value, rounded: float) -> bool:
    """Whether the real number ``value`` equals the Python float ``rounded`` exactly (Python
    compares an int, a Fraction or a Decimal with a float exactly; numpy integers are made
    Python ints first, numpy would compare them after converting to float64; a long double
    compares in long double)."""
    if type(value) is float:
        return True
    if isinstance(value, numbers.Integral):
        return int(value) == rounded
    return bool(value == rounded)


def _exact_float(value, name: str) -> float:
    """``float(value)`` for a real number that float64 holds exactly; a ValueError naming
    ``name`` otherwise (an integer beyond 2^53, a Fraction such as 1/3, a long double): the
    problem solved, and its certificate, would have another parameter than the user's."""
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(f"{name} = {_show(value)} is too large for float64") from None
    if not (math.isnan(f) or _exactly(value, f)):
        raise ValueError(f"{name} = {_show(value)} is not exactly a float64 (it would become "
                         f"{f!r}); pass a float if that rounding is intended")
    return f


# ----------------------------------------------------------------------------------------------
# the scalar parameters: what each accepts, as data, and the one function that checks it
# ----------------------------------------------------------------------------------------------
_REFUSE: Any = object()


@dataclass(frozen=True)
class Rule:
    """A condition on a value of the right type: ``test(value)``, else a ValueError.

    The message is ``says`` formatted with ``name``, ``must``, ``got`` and ``value``; by
    default ``"<name> must <must>, got <got>"``. ``got`` shows the value: a format string (of
    ``value`` and ``name``) or a function of the value."""

    test: Callable[[Any], bool]
    must: str = ""
    got: str | Callable[[Any], str] = "{value}"
    says: str = "{name} must {must}, got {got}"


@dataclass(frozen=True)
class Constraint:
    """What a parameter accepts (in the spirit of scikit-learn's ``_parameter_constraints``),
    checked by :func:`check`.

    Attributes
    ----------
    kind : callable
        The type test; a value that fails it is a TypeError ``"<name> must <kind_text>, got
        <kind_got>"``.
    kind_text : str
        The type in words (``"be an integer"``; ``{choices}`` stands for the allowed names).
    kind_got : str or callable
        How a value of another type is shown (``"{type}"``, ``"{type} {value!r}"``), or a
        function of the value.
    rules : tuple of Rule
        The conditions on a value of the right type, in order (the first that fails is the
        error).
    none : object
        What None becomes (``_REFUSE``: None is a value of the wrong type).
    words : tuple of str
        Strings accepted as they are (``"auto"``); another string is a ValueError.
    choices : callable or None
        The allowed strings (loaded on demand); anything else is the ValueError ``unknown``.
    show_choices : callable
        How the allowed strings are shown in the messages (sorted by default).
    unknown : str
        The message for a value that is not one of the choices (formatted with ``name``,
        ``value`` and ``choices``).
    each, each_name, each_text : Constraint, str, str
        The constraint of every item of a collection (after ``convert``), checked under the
        name ``each_name``; an item's TypeError is reported as ``"<name> must <each_text>:
        <the item's message>"``.
    convert, result : callable or None
        ``convert(value, name)`` before the rules (it may raise its own ValueError, naming
        the parameter); ``result(value)`` after them.
    """

    kind: Callable[[Any], bool] = lambda v: True
    kind_text: str = ""
    kind_got: str | Callable[[Any], str] = "{type}"
    rules: tuple[Rule, ...] = ()
    none: Any = _REFUSE
    words: tuple[str, ...] = ()
    choices: Callable[[], Iterable[str]] | None = None
    show_choices: Callable[[Iterable[str]], Any] = sorted
    unknown: str = "unknown {name} {value!r}; choose from {choices}"
    each: Constraint | None = None
    each_name: str = ""
    each_text: str = ""
    convert: Callable[[Any, str], Any] | None = None
    result: Callable[[Any], Any] | None = None


def _shown(how: str | Callable[[Any], str], value, **names) -> str:
    return how(value) if callable(how) else how.format(value=value, **names)


def check(name: str, value, constraint: Constraint):
    """``value`` checked against ``constraint`` and converted: the one place that raises for
    a parameter (TypeError for a bad type, ValueError for a bad value, the message naming the
    parameter and the value)."""
    c = constraint
    if value is None and c.none is not _REFUSE:
        return c.none
    choices = None if c.choices is None else c.show_choices(c.choices())
    if isinstance(value, str) and c.words:
        if value in c.words:
            return value
        raise ValueError(f"{name} must {c.kind_text}, got {value!r}")
    if not c.kind(value):
        raise TypeError(f"{name} must {c.kind_text.format(choices=choices)}, got "
                        + _shown(c.kind_got, value, type=type(value).__name__))
    if choices is not None:
        if not isinstance(value, str) or value not in choices:
            raise ValueError(c.unknown.format(name=name, value=value, choices=choices))
        return value
    if c.convert is not None:
        value = c.convert(value, name)
    if c.each is not None:
        try:
            value = [check(c.each_name, item, c.each) for item in value]
        except TypeError as exc:
            raise TypeError(f"{name} must {c.each_text}: {exc}") from None
    for rule in c.rules:
        if not rule.test(value):
            raise ValueError(rule.says.format(name=name, must=rule.must, value=value,
                                              got=_shown(rule.got, value, name=name)))
    return value if c.result is None else c.result(value)


def _real_not_bool(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, numbers.Real)


#: the largest ridge weight: 2 lambda2 and the relaxation's terms stay finite (lambda2 near the
#: largest float made the node solver's step search loop on inf - inf)
MAX_LAMBDA2 = 1e300

_INTEGER = dict(kind=_is_int, kind_text="be an integer", kind_got="{type} {value!r}")
_AT_LEAST_1 = Rule(lambda v: v >= 1, "be >= 1")

_K = Constraint(**_INTEGER, convert=lambda v, _: int(v),
                rules=(Rule(lambda v: v >= 1, "be >= 1", "{name} = {value}"),))


def _is_int_or_collection(v) -> bool:
    return _is_int(v) or (not isinstance(v, str) and isinstance(v, Iterable))


def _labels(y, _name) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y)
    return y, np.unique(y)


def _classes_shown(labels: tuple[np.ndarray, np.ndarray]) -> str:
    classes = labels[1]
    shown = ", ".join(str(v) for v in classes[:5].tolist())
    return f"{classes.size}: {shown}{' ...' if classes.size > 5 else ''}"


def _negatives_shown(y: np.ndarray) -> str:
    return f"y has {int(np.sum(y < 0))} negative value(s) (min {y.min():g})"


def _is_floatable(v) -> bool:
    """A value ``float()`` takes (a bool refused): a field of a certificate's record."""
    if isinstance(v, bool):
        return False
    try:
        float(v)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _not_floatable(v) -> str:
    return "a bool" if isinstance(v, bool) else type(v).__name__


#: a finite number, as a field of a certificate's ``problem`` record
_RECORD_FINITE = dict(kind=_is_floatable, kind_text="be a number", kind_got=_not_floatable,
                      convert=lambda v, _: float(v))
_RECORD_POSITIVE = (Rule(math.isfinite, "be finite"),
                    Rule(lambda v: v > 0, "be > 0", says="{name} = {value} must {must}"))

#: What each parameter accepts (the parameter table's checks come from here).
CONSTRAINTS: dict[str, Constraint] = {
    "k": _K,
    "lambda2": Constraint(
        kind=_real_not_bool, kind_text="be a real number", convert=lambda v, n: _exact_float(v, n),
        rules=(Rule(math.isfinite, "be finite"),
               Rule(lambda v: v > 0.0, "be > 0 (the perspective bound needs a ridge term)"),
               Rule(lambda v: v <= MAX_LAMBDA2,
                    f"be at most {MAX_LAMBDA2:g} (larger values overflow float64 arithmetic in "
                    "the relaxation)", "{value:g}"))),
    "max_abs_coef": Constraint(
        kind=_real_not_bool, kind_text="be a positive number or None", none=math.inf,
        convert=lambda v, n: _exact_float(v, n),
        rules=(Rule(lambda v: v > 0.0, "be > 0 (or None / inf for no box)"),)),
    "eig_shift": Constraint(
        kind=_is_real, kind_text="be None, a number or 'auto'", none=None, words=("auto",),
        convert=lambda v, _: float(v),
        rules=(Rule(lambda v: math.isfinite(v) and v >= 0.0, "be a finite number >= 0"),)),
    "rel_gap": Constraint(kind=_is_real, kind_text="be a number",
                          rules=(Rule(lambda v: 0.0 <= v < 1.0, "be in [0, 1)"),), result=float),
    "abs_gap": Constraint(kind=_is_real, kind_text="be a number",
                          rules=(Rule(lambda v: math.isfinite(v) and v >= 0.0,
                                      "be a finite number >= 0"),), result=float),
    "time_limit": Constraint(kind=_is_real, kind_text="be a number or None", none=None,
                             rules=(Rule(lambda v: v > 0, "be > 0 (or None for no limit)"),),
                             result=float),
    "node_limit": Constraint(**_INTEGER, none=None, rules=(_AT_LEAST_1,), result=int),
    "batch_overlap": Constraint(**_INTEGER, none=None, rules=(Rule(lambda v: v >= 0, "be >= 0"),),
                                result=int),
    "n_jobs": Constraint(**_INTEGER, rules=(Rule(lambda v: not (v == 0 or v < -1),
                                                 "be a positive integer or -1"),), result=int),
    "verbose": Constraint(kind=lambda v: isinstance(v, numbers.Integral),
                          kind_text="be an integer", kind_got="{type} {value!r}",
                          rules=(Rule(lambda v: v >= 0, "be >= 0"),), result=int),
    "executor": Constraint(kind=lambda v: callable(getattr(v, "submit", None)),
                           kind_text="be a concurrent.futures.Executor or None", none=None),
    "log": Constraint(kind=callable, none=None,
                      kind_text="be callable (it receives each progress line) or None"),
}
#: The other entries of the table: what is checked for one entry point or one record.
CONSTRAINTS.update({
    # the loss name (the registry, :mod:`sparsecert.solvers.losses`, gives the choices)
    "loss": Constraint(kind=lambda v: isinstance(v, str), kind_text="be a string, one of {choices}",
                       show_choices=tuple, unknown="unknown {name} {value!r}; expected one of "
                                                   "{choices}"),
    # the support sizes of a path: an integer or a collection of them (each a ``k``), sorted
    "ks": Constraint(
        kind=_is_int_or_collection, kind_text="be an iterable of integers",
        convert=lambda v, _: [v] if _is_int(v) else list(v),
        each=_K, each_name="k", each_text="hold integers",
        rules=(Rule(lambda v: len(v) > 0, says="{name} is empty: give at least one support size"),
               Rule(lambda v: len(set(v)) == len(v), got=lambda v: str(sorted(v)),
                    says="{name} holds repeated values: {got}")),
        result=lambda v: np.asarray(sorted(v), dtype=np.intp)),
    # the targets of the losses: two labels (coded -1 / +1, the larger +1), non-negative counts
    "labels": Constraint(
        convert=_labels,
        rules=(Rule(lambda t: t[1].size == 2, "hold binary labels (exactly two distinct values)",
                    _classes_shown),),
        result=lambda t: (np.where(t[0] == t[1][1], 1.0, -1.0), t[1])),
    "counts": Constraint(
        convert=lambda y, _: np.array(y, dtype=np.float64, copy=True),
        rules=(Rule(lambda y: not np.any(y < 0), "needs non-negative counts", _negatives_shown,
                    says="{name} {must}; {got}"),)),
    # the fields of a certificate's ``problem`` record (the loss names and ``k <= p`` given
    # by the writer); k = 0 is the empty model
    "problem['loss']": Constraint(show_choices=tuple,
                                  unknown="{name} must be one of {choices}, got {value!r}"),
    "problem['k']": Constraint(kind=lambda v: not isinstance(v, bool)
                               and isinstance(v, int | np.integer), kind_text="be an integer",
                               kind_got="{value!r}", convert=lambda v, _: int(v)),
    "problem['lambda2']": Constraint(**_RECORD_FINITE, rules=_RECORD_POSITIVE),
    "problem['max_abs_coef']": Constraint(**_RECORD_FINITE, none=None, rules=_RECORD_POSITIVE),
    # the synthetic data's generator (:func:`sparsecert.datasets.make_synthetic`); its loss is
    # checked as the loss object, whose target must be one the generator draws
    "rho": Constraint(rules=(Rule(lambda v: abs(v) < 1, "satisfy |rho| < 1"),)),
    "snr": Constraint(rules=(Rule(lambda v: v > 0, "be positive"),)),
    "synthetic loss": Constraint(rules=(Rule(
        lambda ls: ls.target in ("real", "binary"),
        "be a loss whose target is a real response or two labels",
        lambda ls: f"(not {ls.target}), got {ls.name!r}", says="{name} must {must} {got}"),)),
})
#: the constraint of a switch and of a count (parameters of their own name)
BOOL = Constraint(kind=lambda v: isinstance(v, bool | np.bool_), kind_text="be a bool",
                  result=bool)
POSITIVE_INT = Constraint(**_INTEGER, rules=(_AT_LEAST_1,), result=int)


def k_fits(n_features: int) -> Constraint:
    """The constraint of ``k`` on data with ``n_features`` features: ``1 <= k <= n_features``."""
    return replace(CONSTRAINTS["k"], rules=(Rule(
        lambda v: 1 <= v <= n_features, f"satisfy 1 <= k <= n_features = {n_features}",
        "{name} = {value}"),))


def record_k_fits(n_features: int) -> Constraint:
    """The constraint of a certificate record's ``k`` on ``n_features`` features:
    ``0 <= k <= n_features`` (0 is the empty model)."""
    return replace(CONSTRAINTS["problem['k']"], rules=(Rule(
        lambda v: 0 <= v <= n_features, f"be in [0, p = {n_features}]",
        says="{name} = {value} must {must}"),))
