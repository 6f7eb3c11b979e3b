"""The parameter table of the certified-GLM wing: one row per parameter of the entry points.

Each row of :data:`PARAMS` (a :class:`Param`) says, once, everything about one parameter: its
type as the documentation writes it, its check (which converts the value, raises
:class:`TypeError` for a bad type and :class:`ValueError` for a bad value, naming the
parameter), its default (and the default of an entry point that differs, such as the
estimators' ``k=5``), the record it belongs to (:class:`sparsecert.problem.ProblemSpec` or
:class:`sparsecert.problem.SearchOptions`), its documentation line, and its command-line flag.
From the table come:

* the checks of :func:`sparsecert.certify`, :func:`sparsecert.certify_path`, the estimators and
  the ``sparsecert certify`` command (the records check every field when they are built);
* the defaults written in their signatures (:func:`defaults`);
* the ``Parameters`` lines of their docstrings (:func:`fill_parameters`, :func:`document`);
* the options of ``sparsecert certify`` (:mod:`sparsecert.cli.main` reads :attr:`Param.cli`).

Adding a parameter is one row here and the code that uses it (a field of its record, and the
keyword of the public functions that take it; ``tests/glm/front/test_params.py`` checks that
the signatures, the records, the docstrings and the command line agree with the table).

The module imports numpy and the loss registry only (the command line's parser reads it).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsecert._checks import (
    check_abs_gap,
    check_always_select,
    check_batch_overlap,
    check_bool,
    check_choice,
    check_coef_bounds,
    check_exclude,
    check_executor,
    check_fit_intercept,
    check_k,
    check_lambda2,
    check_log,
    check_max_abs_coef,
    check_n_jobs,
    check_node_limit,
    check_offset,
    check_positive,
    check_positive_int,
    check_rel_gap,
    check_sample_weight,
    check_shift_value,
    check_time_limit,
    check_verbose,
)
from sparsecert.solvers.losses import (
    DEFAULT_LOSS,
    LOSS_NAMES,
    check_loss,
    check_loss_param_values,
)

__all__ = ["Param", "CliFlag", "PARAMS", "REQUIRED", "SAME", "BACKENDS", "defaults", "check_param",
           "param_entry", "fill_parameters", "document"]


class _Required:
    """The default of a parameter that has none (shown as such in ``help()``)."""

    def __repr__(self) -> str:
        return "<required>"


#: The default of a parameter the caller must give (``k`` and ``lambda2`` of ``certify``).
REQUIRED: Any = _Required()
#: A command-line option whose default is its parameter's.
SAME: Any = object()


# ----------------------------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------------------------
def _node_selections() -> Iterable[str]:
    from sparsecert.bnb.queues import QUEUE_STRATEGIES  # the engine: imported when needed

    return QUEUE_STRATEGIES


def _branching_rules() -> Iterable[str]:
    from sparsecert.bnb.branching import BRANCHING_RULES

    return BRANCHING_RULES


#: The engine's executors (``backend=``) when it makes its own.
BACKENDS = ("threads", "processes", "mpi")


@dataclass(frozen=True)
class CliFlag:
    """A parameter's option of ``sparsecert certify``.

    ``convert`` turns the text into the value (``int`` or ``float``; None for ``choices`` and
    for a switch, which is a ``--flag / --no-flag`` pair when the parameter is a bool);
    ``default`` is the option's own default when it is not the parameter's (:data:`SAME`;
    ``--k`` and ``--lambda2`` have None: the job without ``--data`` has its own values).
    ``help`` may use argparse's ``%(default)s``.
    """

    flag: str
    help: str
    metavar: str | None = None
    convert: type | None = None
    default: Any = SAME

    def default_of(self, param: Param):
        """The option's default (``param``'s unless the option has its own)."""
        return param.default if self.default is SAME else self.default


@dataclass(frozen=True)
class Param:
    """One parameter: its documentation, its check, its default and where it goes.

    Attributes
    ----------
    name : str
    type_doc : str
        The type as the ``Parameters`` section writes it (``"float or None"``).
    doc : str
        The description (a sentence or a few), the same for every entry point that takes it;
        an entry point may add a sentence of its own (:func:`fill_parameters`).
    check : callable
        ``check(value) -> value``: the converted value, or TypeError / ValueError naming the
        parameter.
    default : object
        The default of :func:`sparsecert.certify` (:data:`REQUIRED`: none).
    record : {"problem", "search"} or None
        The record the value goes to (None: the entry point uses it itself).
    none_is_default : bool
        ``None`` is accepted and means the default (the engine's settings).
    defaults : mapping
        The default of an entry point that differs (``"estimator"``, ``"certify_path"``).
    choices : callable or None
        The allowed values, for the documentation and the command line (loaded on demand).
    cli : CliFlag or None
        The option of ``sparsecert certify``.
    """

    name: str
    type_doc: str
    doc: str
    check: Callable[[Any], Any]
    default: Any = REQUIRED
    record: str | None = None
    none_is_default: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)
    choices: Callable[[], Iterable[str]] | None = None
    cli: CliFlag | None = None

    def validate(self, value):
        """The checked (converted) value; an error carries the parameter's name as
        ``exc.param`` (the command line names the option from it)."""
        if value is None and self.none_is_default:
            value = self.default
        if self.choices is not None and type(value) is str and value == self.default:
            return value  # valid (a test checks it) without loading the registry of choices
        try:
            return self.check(value)
        except (TypeError, ValueError) as exc:
            exc.param = self.name
            raise

    def default_for(self, entry: str = "certify"):
        """The default of ``entry`` (``"certify"``, ``"certify_path"``, ``"estimator"``)."""
        return self.defaults.get(entry, self.default)


def _names(names: Iterable[str]) -> str:
    return "{" + ", ".join(f'"{n}"' for n in names) + "}"


def _cli_indices(text: str) -> tuple[int, ...]:
    """``--always-select 0,3,7``: comma-separated integers."""
    parts = [t.strip() for t in text.split(",") if t.strip()]
    try:
        return tuple(int(t) for t in parts)
    except ValueError:
        raise ValueError(f"expected comma-separated column indices, got {text!r}") from None


def _cli_coef_bounds(text: str):
    """``--coef-bounds L,U`` (``inf``, ``-inf`` or ``none`` for no bound) or an ``.npz`` file
    with the arrays ``lower`` and ``upper``."""
    if text.endswith(".npz"):
        try:
            with np.load(text, allow_pickle=False) as f:
                if set(f.files) != {"lower", "upper"}:
                    raise ValueError(f"{text} must hold exactly the arrays lower and upper, "
                                     f"has {sorted(f.files)}")
                return f["lower"], f["upper"]
        except OSError as exc:
            raise ValueError(f"cannot read {text}: {exc}") from None
    parts = [t.strip() for t in text.split(",")]
    if len(parts) != 2:
        raise ValueError(f"expected LOWER,UPPER (or an .npz file), got {text!r}")

    def side(t: str):
        return None if t.lower() in ("none", "") else float(t)

    try:
        return side(parts[0]), side(parts[1])
    except ValueError:
        raise ValueError(f"expected two numbers LOWER,UPPER, got {text!r}") from None


_TABLE = [
    # -- the problem ---------------------------------------------------------------------------
    Param("k", "int",
          "Maximum number of non-zero coefficients (the intercept is not counted).",
          check_k, record="problem", defaults={"estimator": 5},
          cli=CliFlag("--k", "maximum number of nonzero coefficients", convert=int,
                      default=None)),
    Param("lambda2", "float",
          "Ridge weight, > 0: the objective is the *sum* of the losses plus "
          "``lambda2 * ||b||^2``.",
          check_lambda2, record="problem", defaults={"estimator": 1.0},
          cli=CliFlag("--lambda2", "ridge penalty (> 0)", convert=float, default=None)),
    Param("loss", _names(LOSS_NAMES),
          "A name of the loss registry :mod:`sparsecert.solvers.losses`.",
          check_loss, default=DEFAULT_LOSS, record="problem", choices=lambda: LOSS_NAMES,
          cli=CliFlag("--loss", "the loss f (default: %(default)s; logistic and squared_hinge "
                                "take two label values)")),
    Param("loss_params", "dict or None",
          "The loss's parameters by name, for a loss that declares some "
          "(:attr:`sparsecert.solvers.losses.Loss.parameters`; None: the registry's defaults). "
          "They are part of the certified problem, written into the certificate.",
          check_loss_param_values, default=None, record="problem"),
    Param("fit_intercept", "bool",
          "Fit an unpenalised intercept, not counted in ``k`` (least squares: exact by "
          "centring).",
          check_fit_intercept, default=True, record="problem",
          cli=CliFlag("--fit-intercept", "unpenalised intercept, not counted in k (default: on; "
                                         "--no-fit-intercept to turn it off)")),
    Param("max_abs_coef", "float or None",
          "Box ``|b_j| <= max_abs_coef`` on every coefficient (None or ``inf``: no box).",
          check_max_abs_coef, default=None, record="problem",
          cli=CliFlag("--max-abs-coef", "box constraint |b_j| <= M (default: none)", "M",
                      float)),
    Param("eig_shift", 'float, "auto" or None',
          "Least squares only: the eigenvalue shift of the stronger relaxation (``\"auto\"``: a "
          "safe value below the smallest eigenvalue of ``X^T X``, proven by a Cholesky "
          "factorisation; None: no shift). The other losses have none (``\"auto\"`` means "
          "none; a number is refused).",
          check_shift_value, default="auto", record="problem"),
    Param("sample_weight", "array-like of shape (n_samples,) or None",
          "Per-sample weights ``w_i >= 0`` (finite, not all zero): the objective is ``sum_i w_i "
          "loss_i + lambda2 ||b||^2``. A zero weight drops its sample, an integer weight counts "
          "it that many times. Part of the certified problem (the certificate holds their "
          "hash; the verifier takes them with the data).",
          check_sample_weight, default=None, record="problem"),
    Param("offset", "array-like of shape (n_samples,) or None",
          "A fixed per-sample offset in the linear predictor ``x_i^T b + c + offset_i`` (a "
          "Poisson exposure as ``log(exposure)``). Part of the certified problem, like the "
          "weights.",
          check_offset, default=None, record="problem"),
    Param("coef_bounds", "(lower, upper) or None",
          "Per-coefficient bounds ``lower_j <= b_j <= upper_j``: each side None (no bound), a "
          "number (every coefficient) or one number per feature (``-inf`` / ``inf``: none), "
          "with ``lower <= 0 <= upper`` (a coefficient outside the support is zero). Together "
          "with ``max_abs_coef`` and ``positive`` (all hold).",
          check_coef_bounds, default=None, record="problem",
          cli=CliFlag("--coef-bounds", "bounds LOWER,UPPER on every coefficient (inf / -inf "
                                       "for none), or an .npz file with arrays lower and "
                                       "upper (one bound per feature)", "L,U|FILE",
                      _cli_coef_bounds)),
    Param("positive", "bool",
          "Constrain every coefficient to ``b_j >= 0``.",
          check_positive, default=False, record="problem",
          cli=CliFlag("--positive", "coefficients >= 0 (default: off)")),
    Param("always_select", "sequence of int",
          "Features (column indices) forced into the model: they count in ``k`` and stay in "
          "the support (a coefficient may still be zero).",
          check_always_select, default=(), record="problem",
          cli=CliFlag("--always-select", "column indices forced into the model, counted in k "
                                         "(comma-separated)", "J,...", _cli_indices)),
    Param("exclude", "sequence of int",
          "Features (column indices) kept out of the model.",
          check_exclude, default=(), record="problem",
          cli=CliFlag("--exclude", "column indices kept out of the model (comma-separated)",
                      "J,...", _cli_indices)),
    # -- the search ----------------------------------------------------------------------------
    Param("rel_gap", "float",
          "Stop when the relative gap ``(UB - LB) / max(1, |UB|)`` is at most ``rel_gap`` "
          "(status ``\"optimal\"``).",
          check_rel_gap, default=1e-4, record="search",
          cli=CliFlag("--rel-gap", "relative gap (UB - LB) / max(1, |UB|) to stop at (default "
                                   "%(default)g)", "G", float)),
    Param("abs_gap", "float",
          "... or when the absolute gap ``UB - LB`` is at most ``abs_gap``.",
          check_abs_gap, default=1e-9, record="search"),
    Param("time_limit", "float or None",
          "Seconds of search (None: no limit). On expiry the best model found is kept, with the "
          "status ``\"time_limit\"`` and a certificate of the bound reached.",
          check_time_limit, default=None, record="search",
          cli=CliFlag("--time-limit", "stop after S seconds with the best model and the bound "
                                      "reached so far (status time_limit; the certificate is "
                                      "still written and verified; default: no limit)", "S",
                      float)),
    Param("node_limit", "int or None",
          "Maximum number of evaluated nodes (None: no limit); likewise, with the status "
          "``\"node_limit\"``.",
          check_node_limit, default=None, record="search",
          cli=CliFlag("--node-limit", "stop after N evaluated nodes, likewise (status "
                                      "node_limit; default: no limit)", "N", int)),
    Param("n_jobs", "int",
          "Parallel node evaluations (-1: all cores); the certificate does not depend on it.",
          check_n_jobs, default=1, record="search",
          cli=CliFlag("--jobs", "parallel node evaluations (threads; -1: all cores); more than "
                                "two want a larger --batch-size too", "N", int)),
    Param("batch_size", "int",
          "Nodes evaluated per batch. The tree, and so the certificate, depends on it (not on "
          "``n_jobs`` or the executor); the default keeps two workers busy.",
          lambda v: check_positive_int(v, "batch_size"), default=16, record="search",
          none_is_default=True,
          cli=CliFlag("--batch-size", "nodes evaluated per batch (default %(default)s, enough "
                                      "for two jobs; with more, 8 per job or more); the "
                                      "tree and the certificate depend on it, not on --jobs",
                      "B", int)),
    Param("batch_overlap", "int or None",
          "The next batch is handed to the workers once at most this many outcomes of the "
          "batches before it are still to be applied (0: after the previous batch is applied "
          "in full); None: a quarter of ``batch_size``. The tree, and so the certificate, "
          "depends on it (not on ``n_jobs`` or the executor).",
          check_batch_overlap, default=None, record="search",
          cli=CliFlag("--batch-overlap", "hand out the next batch once at most N outcomes are "
                                         "still to be applied (default: a quarter of the "
                                         "batch size; 0: none); the tree and the certificate "
                                         "depend on it", "N", int)),
    Param("backend", _names(BACKENDS),
          "The engine's own executor when ``n_jobs > 1`` (``\"mpi\"``: an "
          "``mpi4py.futures.MPIPoolExecutor`` with ``n_jobs`` workers).",
          lambda v: check_choice(v, "backend", BACKENDS), default="threads", record="search",
          choices=lambda: BACKENDS),
    Param("executor", "concurrent.futures.Executor or None",
          "Evaluate the nodes on this executor instead (processes, MPI, Dask); the certificate "
          "is the same.",
          check_executor, default=None, record="search"),
    Param("node_selection", "str",
          "The order in which nodes are evaluated: a name of "
          ":data:`sparsecert.bnb.QUEUE_STRATEGIES`.",
          lambda v: check_choice(v, "node_selection", _node_selections()),
          default="best_bound_dive", record="search", none_is_default=True,
          choices=_node_selections),
    Param("branching", "str",
          "The branching rule: a name of :data:`sparsecert.bnb.BRANCHING_RULES`.",
          lambda v: check_choice(v, "branching", _branching_rules()),
          default="largest_coef", record="search", none_is_default=True,
          choices=_branching_rules),
    Param("verbose", "int",
          "0 silent; 1 a progress line every 5 seconds.",
          check_verbose, default=1, record="search",
          defaults={"estimator": 0, "certify_path": 0}),
    Param("log", "callable or None",
          "Receives the progress lines (None: standard output).",
          check_log, default=None, record="search"),
    # -- of one entry point ----------------------------------------------------------------------
    Param("warm_start", "bool",
          "Offer the previous point's model as an incumbent and start the root relaxation from "
          "the previous root solution (the certificates are valid either way; this only changes "
          "how fast the gap closes, and possibly the shape of the tree).",
          lambda v: check_bool(v, "warm_start"), default=True),
]

#: Every parameter, by name, in the order of the documentation and the command line.
PARAMS: dict[str, Param] = {p.name: p for p in _TABLE}


def check_param(name: str, value):
    """``value`` checked (and converted) by the row ``name``."""
    return PARAMS[name].validate(value)


class _Defaults:
    """The defaults of one entry point, as attributes (``defaults().rel_gap``)."""

    def __init__(self, entry: str) -> None:
        self._entry = entry

    def __getattr__(self, name: str):
        try:
            return PARAMS[name].default_for(self._entry)
        except KeyError:
            raise AttributeError(f"no parameter {name!r} in the table") from None


def defaults(entry: str = "certify") -> Any:
    """The defaults of ``entry`` as attributes: ``defaults("estimator").k == 5``."""
    return _Defaults(entry)


# ----------------------------------------------------------------------------------------------
# the documentation
# ----------------------------------------------------------------------------------------------
def _default_text(value) -> str:
    """A default as the documentation writes it: ``1e-4`` rather than ``0.0001``, strings in
    double quotes."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e4):
        mantissa, exponent = f"{value:e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return repr(value)


_NBSP = "\x00"


def _wrap(text: str, indent: str) -> list[str]:
    """``text`` wrapped at 96 columns without breaking an inline literal (````...````)."""
    parts = text.split("``")
    for i in range(1, len(parts), 2):
        parts[i] = parts[i].replace(" ", _NBSP)
    lines = textwrap.wrap("``".join(parts), width=96, initial_indent=indent,
                          subsequent_indent=indent, break_on_hyphens=False,
                          break_long_words=False)
    return [line.replace(_NBSP, " ") for line in lines]


def param_entry(name: str, entry: str = "certify", indent: str = "    ",
                extra: Iterable[str] = ()) -> list[str]:
    """The numpydoc lines of parameter ``name`` for ``entry`` (``extra``: lines of its own,
    already indented, appended to the description)."""
    p = PARAMS[name]
    default = p.default_for(entry)
    head = f"{indent}{name} : {p.type_doc}"
    if default is not REQUIRED:
        head += f", default={_default_text(default)}"
    return [head, *_wrap(p.doc, indent + "    "), *extra]


_BARE = re.compile(r"^(\s*)([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*$")


def fill_parameters(doc: str, entry: str = "certify") -> str:
    """``doc`` with every bare parameter line of its ``Parameters`` section replaced by the
    table's entries for ``entry``.

    A bare line holds only the name of a table parameter, or several names separated by commas
    (one entry each, in that order). Indented lines right below a single bare name are kept
    after the table's description (the entry point's own remarks).
    """
    lines = doc.split("\n")
    out: list[str] = []
    in_params = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped == "Parameters":
            in_params = True
        elif in_params and stripped and i + 1 < len(lines) \
                and set(lines[i + 1].strip()) == {"-"}:
            in_params = False  # the next section
        m = _BARE.match(line) if in_params else None
        names = [n.strip() for n in m.group(2).split(",")] if m else []
        if names and all(n in PARAMS for n in names):
            indent = m.group(1)
            extra = []
            while i + 1 < len(lines) and lines[i + 1].startswith(indent + " ") \
                    and lines[i + 1].strip():
                i += 1
                extra.append(lines[i])
            if extra and len(names) > 1:
                raise ValueError(f"remarks below {stripped!r}: give them below one name")
            for name in names:
                out.extend(param_entry(name, entry, indent, extra))
        else:
            out.append(line)
        i += 1
    return "\n".join(out)


def document(entry: str = "certify") -> Callable:
    """Decorator: fill the function's bare parameter lines from the table
    (:func:`fill_parameters`)."""

    def deco(func):
        if func.__doc__:
            func.__doc__ = fill_parameters(func.__doc__, entry)
        return func

    return deco
