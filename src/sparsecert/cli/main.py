"""The ``sparsecert`` command line: ``certify``, ``verify``, ``show``.

Exit codes: 0 verified, 1 verification failed (the failed check is named), 2 usage or input
error, including a certificate that cannot be read or parsed (one line on stderr), 3 verified but
the gap is above the tolerance asked for.

``sparsecert certify`` without ``--data`` runs the main job: k = 5, lambda2 = 0.1, with an
intercept, on the bundled diabetes data; it writes ``sparsecert-certificate.json``
(+ ``.proof``) and re-checks it with the standalone verifier.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sparsecert._params import PARAMS
from sparsecert._version import __version__
from sparsecert.solvers.losses import LOSS_NAMES, LOSS_PARAMETERS

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_GAP = 0, 1, 2, 3
#: Ctrl-C before the search could return a model (while compiling; as shells report SIGINT)
EXIT_INTERRUPTED = 130
DEFAULT_OUT = "sparsecert-certificate.json"
DEFAULT_JOB = dict(k=5, lambda2=0.1)


class _InputError(Exception):
    """A usage or input problem: one line on stderr, exit code 2."""


def _arg(convert, check=None):
    """An argparse type: ``convert`` the text (``int`` or ``float``), then apply ``check`` if
    given (the verify command's own checks; the certify command's parameters are checked by the
    parameter table when the job's records are built, :func:`_certify_records`)."""
    what = "an integer" if convert is int else "a number"

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError as exc:  # a converter of its own says what it expected
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}" if convert in (int, float)
                                             else str(exc)) from None
        if check is not None:
            try:
                check(value)
            except (TypeError, ValueError) as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    return parse


def _add_param_options(p: argparse.ArgumentParser) -> None:
    """The options of the parameter table's rows that have a command-line flag, in the
    table's order: a value converted from the text, a choice, or a ``--x / --no-x`` switch."""
    for param in PARAMS.values():
        cli = param.cli
        if cli is None:
            continue
        kw = dict(dest=param.name, help=cli.help, default=cli.default_of(param))
        if cli.metavar is not None:
            kw["metavar"] = cli.metavar
        if cli.convert is not None:
            kw["type"] = _arg(cli.convert)
        elif param.choices is not None:
            kw["choices"] = tuple(param.choices())
        else:  # a bool parameter
            kw["action"] = argparse.BooleanOptionalAction
        p.add_argument(cli.flag, **kw)


def _add_loss_params(p: argparse.ArgumentParser, what: str) -> None:
    """An option ``--<name>`` for every loss parameter of the registry (the loss that declares
    it is named in its help)."""
    for par in LOSS_PARAMETERS.values():
        p.add_argument("--" + par.name.replace("_", "-"), type=_arg(float, par.check),
                       default=None, metavar="X", dest=par.name,
                       help=f"{par.doc} ({what}; default {par.default:g})")


def _loss_params(args) -> dict[str, float]:
    """The loss parameters given on the command line."""
    return {name: getattr(args, name) for name in LOSS_PARAMETERS
            if getattr(args, name, None) is not None}


def _nonneg(value: float) -> None:
    """``value >= 0`` and finite (the verify command's own k and rel_gap)."""
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{value} must be {'' if isinstance(value, int) else 'a finite number '}"
                         f">= 0")


def _jobs(value: int) -> None:
    """``value >= 1`` or ``-1`` (one per core): the verify command's processes."""
    if value < 1 and value != -1:
        raise ValueError(f"{value} must be >= 1 (or -1: one per core)")


def _progress_line(line: str) -> None:
    """A progress line of a long verification, on stderr (stdout keeps the report)."""
    print(line, file=sys.stderr, flush=True)


def _add_data_args(p: argparse.ArgumentParser, default_note: str) -> None:
    p.add_argument("--data", metavar="FILE",
                   help=".npz with arrays X and y; .npy with X (and --y); .csv with a header "
                        f"(and --target). {default_note}")
    p.add_argument("--y", metavar="FILE", dest="y_file",
                   help="the target as a .npy file when --data is a .npy holding X")
    p.add_argument("--target", metavar="COLUMN", help="name of the target column of a .csv")
    for what, desc in (("sample-weight", "per-sample weights w_i >= 0 (the objective sums w_i "
                                         "times each loss)"),
                       ("offset", "per-sample offsets added to the linear predictor (e.g. "
                                  "log(exposure) for counts)")):
        p.add_argument(f"--{what}", metavar="NAME", default=None,
                       help=f"{desc}: a column of the .csv (not a feature then), an array of "
                            "the .npz besides X and y, or a .npy file")


def _state(report) -> str:
    """The verdict of ``--quiet`` (certify and verify say it alike; it matches the exit code)."""
    if not report.ok:
        return "FAILED: " + ", ".join(report.failed_checks)
    return "verified" if report.gap_within_tolerance else "verified, gap above tolerance"


class _Parser(argparse.ArgumentParser):
    """argparse with the command's error contract: a usage error is one line on stderr (the
    one ``sparsecert: error:`` line every other bad input gives) and exit code 2."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"sparsecert: error: {' '.join(message.split())} (see "
                              f"'{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``sparsecert`` command."""
    ap = _Parser(
        prog="sparsecert",
        description="Certified k-sparse GLMs: solve to proven optimality and write a "
                    "certificate that an independent numpy-only verifier re-checks.",
        epilog="exit codes: 0 verified, 1 verification failed, 2 usage/input error, "
               "3 verified but gap above tolerance, 130 interrupted (Ctrl-C) before a model "
               "existed",
    )
    ap.add_argument("--version", action="version", version=f"sparsecert {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="{certify,verify,show}")

    c = sub.add_parser("certify", help="solve and write a certificate",
                       description="Solve min sum_i f(x_i^T b + c, y_i) + lambda2 ||b||^2 s.t. "
                                   "||b||_0 <= k to proven optimality and write a certificate. "
                                   "Without --data: the diabetes job (k=5, lambda2=0.1, "
                                   "intercept).")
    _add_data_args(c, "Default: the bundled diabetes data (442 x 10).")
    _add_param_options(c)
    _add_loss_params(c, "with its loss only")
    c.add_argument("--out", default=DEFAULT_OUT, metavar="CERT.json",
                   help=f"certificate path (default {DEFAULT_OUT}; its .proof file next to it)")
    c.add_argument("--force", action="store_true",
                   help="replace existing files at --out and its .proof file even if they are not "
                        "a certificate of this problem on this data (without it, only the "
                        "same job's certificate is replaced)")
    c.add_argument("--quiet", action="store_true", help="no progress log, one summary line")
    c.add_argument("--verbose", action="store_true",
                   help="after the summary, the verifier's report check by check (the audit "
                        "trail) and the support's indices")

    v = sub.add_parser("verify", help="verify a certificate against the data",
                       description="Re-check a certificate with the standalone numpy-only "
                                   "verifier, on the problem you pose: every parameter given "
                                   "here must equal the certificate's (the others are taken "
                                   "from the certificate and reported as such).")
    v.add_argument("certificate", metavar="CERT.json",
                   help="the certificate; its proof file is the .proof of the same name next to it")
    _add_data_args(v, "Required: the data the certificate is about.")
    v.add_argument("--loss", choices=LOSS_NAMES, default=None, help="the loss you certify")
    _add_loss_params(v, "the value you certify")
    v.add_argument("--k", type=_arg(int, _nonneg), default=None, help="the sparsity budget")
    v.add_argument("--lambda2", type=_arg(float), default=None, help="the ridge penalty")
    v.add_argument("--max-abs-coef", type=_arg(float), default=None, metavar="M",
                   help="the box |b_j| <= M (inf: no box)")
    v.add_argument("--fit-intercept", action=argparse.BooleanOptionalAction, default=None,
                   help="whether the model has an unpenalised intercept")
    for name in ("coef_bounds", "positive", "always_select", "exclude"):
        flag = PARAMS[name].cli
        kw = dict(type=_arg(flag.convert)) if flag.convert is not None else \
            dict(action=argparse.BooleanOptionalAction)
        v.add_argument(flag.flag, dest=name, default=None, help=f"the problem's {flag.help}",
                       **({"metavar": flag.metavar} if flag.metavar else {}), **kw)
    v.add_argument("--rel-gap", type=_arg(float, _nonneg), default=1e-4, metavar="G",
                   help="relative-gap tolerance: exit 3 if the proven gap is above it (default "
                        "1e-4, never the certificate's own)")
    v.add_argument("--jobs", type=_arg(int, _jobs), default=1, metavar="N",
                   help="processes checking subtrees of the tree (-1: one per core; default 1; "
                        "the verdict is the same)")
    v.add_argument("--quiet", action="store_true", help="print one line only (no progress)")

    s = sub.add_parser("show", help="print a human summary of a certificate",
                       description="Print what a certificate states (problem, model, bounds, "
                                   "tree) without checking it: 'sparsecert verify' checks it. "
                                   "Exit code 0, or 2 if it cannot be read.")
    s.add_argument("certificate", metavar="CERT.json",
                   help="the certificate (its JSON file; the proof file is read only with --audit)")
    s.add_argument("--audit", action="store_true",
                   help="also list every node of the tree (parent, branching, status, claimed "
                        "bound, witness, fixings)")
    return ap


def _load(args) -> tuple:
    """``(X, y, description, vectors)``: the data and the per-sample vectors named by
    ``--sample-weight`` and ``--offset`` (a dict of those given)."""
    from sparsecert.cli.io import load_data, load_default_data, load_sample_data

    names = {"sample_weight": args.sample_weight, "offset": args.offset}
    if args.data is None:
        if args.y_file is not None or args.target is not None:
            raise _InputError("--y and --target need --data")
        given = [f"--{k.replace('_', '-')}" for k, v in names.items() if v is not None]
        if given:
            raise _InputError(f"{' and '.join(given)} {'need' if len(given) > 1 else 'needs'} "
                              "--data")
        return (*load_default_data(), {})
    X, y, desc = load_data(args.data, y_path=args.y_file, target=args.target)
    X, vectors = load_sample_data(args.data, X, names, target=args.target)
    return X, y, desc, vectors


def _with_vectors(spec, vectors: dict):
    """``spec`` with the sample weights and offsets read with the data (a bad value is the
    usage error of its option)."""
    from dataclasses import replace

    if not vectors:
        return spec
    try:
        return replace(spec, **vectors)
    except (TypeError, ValueError) as exc:
        name = getattr(exc, "param", None) or next(iter(vectors))
        raise _InputError(f"argument --{name.replace('_', '-')}: {exc}") from None


def _cmd_certify(args) -> int:
    from sparsecert.firstrun import precompile

    records = _certify_records(args)  # a bad option is refused before anything starts
    if not args.quiet:
        # a first run compiles kernels in a second process: start it now, so that its
        # interpreter and imports overlap this one's (it is ended if nothing is to be compiled)
        precompile.prestart()
    try:
        return _certify(args, records)
    finally:
        precompile.discard_prestarted()


def _certify_records(args) -> tuple:
    """The job's problem and search options (:mod:`sparsecert.problem`) from the options,
    checked by the parameter table; a bad value is the usage error of its option."""
    from sparsecert.problem import build_records

    values = {name: getattr(args, name) for name, param in PARAMS.items()
              if param.cli is not None}
    if args.data is None:  # the default job
        for name in ("k", "lambda2"):
            values[name] = DEFAULT_JOB[name] if values[name] is None else values[name]
    elif values["k"] is None or values["lambda2"] is None:
        raise _InputError("--k and --lambda2 are required with --data")
    values["verbose"] = 0 if args.quiet else 1
    values["loss_params"] = _loss_params(args)
    try:
        return build_records(values)
    except (TypeError, ValueError) as exc:
        param = PARAMS.get(getattr(exc, "param", None))
        if param is None or param.cli is None:
            raise
        raise _InputError(f"argument {param.cli.flag}: {exc} (see 'sparsecert certify "
                          "--help')") from None


def _certify(args, records) -> int:
    import numpy as np

    from sparsecert._validation import prepare
    from sparsecert.certificate.paths import check_save_path
    from sparsecert.certificate.problem import problem_key
    from sparsecert.certificate.verify import verify_certificate
    from sparsecert.cli.io import feature_names
    from sparsecert.proof.producer import extensions

    spec, options = records
    k, lambda2, fit_intercept = spec.k, spec.lambda2, spec.fit_intercept
    params = spec.loss_params  # every parameter of the loss, the defaults filled in
    X, y, desc, vectors = _load(args)
    spec = _with_vectors(spec, vectors)
    # the package's one validation path, before anything is printed or computed
    prepared = prepare(X, y, spec)
    # refuse a bad --out (or one that would replace a user's file) now, not after the solve
    try:
        check_save_path(args.out, overwrite=args.force,
                        problem=problem_key(prepared.X, y, dict(
                            loss=args.loss, k=k, lambda2=lambda2,
                            max_abs_coef=args.max_abs_coef, fit_intercept=fit_intercept,
                            **params, **extensions(prepared))))
    except OSError as exc:
        raise _InputError(f"cannot write {args.out}: {exc}") from None
    names = feature_names(args.data, args.target, [v for v in (args.sample_weight, args.offset)
                                                   if v is not None])
    say = (lambda *a: None) if args.quiet else print
    shown = "".join(f" {name}={value:g}" for name, value in params.items())
    shown += "".join(f", {name} from {where}" for name, where in
                     (("sample_weight", args.sample_weight), ("offset", args.offset)) if where)
    say(f"sparsecert {__version__}: certifying k={k}, lambda2={lambda2:g}, loss={args.loss}"
        f"{shown}, "
        f"fit_intercept={fit_intercept}, max_abs_coef={args.max_abs_coef} on {desc} "
        f"(n={X.shape[0]}, p={X.shape[1]})")

    from sparsecert.api import certify_prepared  # lazy: the solver is only needed here
    from sparsecert.bnb.interrupts import deferred_interrupt

    try:
        result = certify_prepared(prepared, options, feature_names=names)
    except NotImplementedError as exc:  # an option combination the solver does not support
        raise _InputError(f"not supported: {exc}") from None
    try:
        with deferred_interrupt():  # the result is complete: a stray Ctrl-C must not lose it
            result.certificate.save(args.out, overwrite=args.force)
    except OSError as exc:
        raise _InputError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    from sparsecert.certificate.paths import sidecar_path

    try:
        report = verify_certificate(args.out, X, y, loss=args.loss, k=k, lambda2=lambda2,
                                    fit_intercept=fit_intercept, rel_gap=options.rel_gap,
                                    max_abs_coef=args.max_abs_coef,
                                    sample_weight=spec.sample_weight, offset=spec.offset,
                                    coef_bounds=spec.coef_bounds, positive=spec.positive,
                                    always_select=spec.always_select, exclude=spec.exclude,
                                    **params)
    except KeyboardInterrupt:  # the files are written: say where, not only "interrupted"
        print(f"sparsecert: interrupted while checking the written certificate {args.out}; "
              f"'sparsecert show {args.out}' prints its model, 'sparsecert verify' checks it",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    result.verification_time = report.seconds
    coef = np.asarray(result.coef)
    support = np.flatnonzero(coef).tolist()
    named = f" ({', '.join(_label(names, j) for j in support)})" if names else ""
    if args.quiet:
        print(f"{result.status}: objective {result.objective:.10g}, lower bound "
              f"{result.lower_bound:.10g}, gap {result.gap:.2e}, support {support}{named}; "
              f"{args.out}: {_state(report)}")
    else:
        from sparsecert.cli.summary import certify_summary

        print("\n".join(certify_summary(result, report, prepared, options, names=names,
                                         out=args.out, sidecar=sidecar_path(args.out))))
        if args.verbose:
            print(f"support     : {support}{named}")
            print(f"gap         : {result.gap:.3e} (relative, (UB - LB) / max(1, |UB|))")
            print(report)
    if not report.ok:
        print(f"sparsecert: the written certificate did not verify: "
              f"{', '.join(report.failed_checks)}", file=sys.stderr)
    return report.exit_code


def _label(names: list[str] | None, j: int) -> str:
    """A coefficient's label: the feature's name when known, else ``b[j]``."""
    return names[j] if names and names[j] else f"b[{j}]"


def _cmd_verify(args) -> int:
    from sparsecert.certificate.verify import verify_certificate

    if args.data is None:
        raise _InputError("verify needs --data FILE, the data the certificate is about (.npz "
                          "with arrays X and y; .npy with --y; .csv with --target)")
    X, y, desc, vectors = _load(args)
    extra = {} if args.max_abs_coef is None else {"max_abs_coef": args.max_abs_coef}
    extra.update(_loss_params(args))
    extra.update(vectors)
    if args.coef_bounds is not None:
        extra["coef_bounds"] = args.coef_bounds
    for name in ("positive", "always_select", "exclude"):
        extra[name] = getattr(args, name)
    try:
        report = verify_certificate(args.certificate, X, y, loss=args.loss, k=args.k,
                                    lambda2=args.lambda2, fit_intercept=args.fit_intercept,
                                    rel_gap=args.rel_gap, n_jobs=args.jobs,
                                    progress=None if args.quiet else _progress_line, **extra)
    except OSError as exc:
        raise _InputError(f"cannot read certificate {args.certificate}: "
                          f"{exc.strerror or exc}") from None
    if report.input_error:  # named once: the verifier's line may start with the name already
        line = report.error_line
        raise _InputError(line if line.startswith(f"{args.certificate} ") else
                          f"{args.certificate}: {line}")
    if args.quiet:
        print(f"{args.certificate}: {_state(report)}")
    else:
        print(f"data: {desc} (n={X.shape[0]}, p={X.shape[1]})")
        print(report)
    return report.exit_code


def _cmd_show(args) -> int:
    from sparsecert.certificate.schema import FORMAT_NAME, FORMAT_VERSION
    from sparsecert.certificate.summary import format_summary
    from sparsecert.certificate.verify import check_document, read_document

    try:  # the verifier's strict parser: no NaN, no repeated key
        data = read_document(args.certificate)
    except OSError as exc:
        raise _InputError(f"cannot read {args.certificate}: {exc.strerror or exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise _InputError(f"{args.certificate} is not a {FORMAT_NAME} file")
    if data.get("format_version") != FORMAT_VERSION:
        raise _InputError(f"{args.certificate}: format version {data.get('format_version')!r} "
                          f"is not supported (this sparsecert reads version {FORMAT_VERSION}): "
                          "re-run sparsecert certify")
    try:  # every field checked as the verifier's check 'format' does
        check_document(data)
    except ValueError as exc:
        raise _InputError(f"{args.certificate} is malformed ({exc}); run "
                          "'sparsecert verify' for the details") from None
    nodes = _audit_nodes(args.certificate, data) if args.audit else None
    print(format_summary(data, audit=args.audit, nodes=nodes))
    return EXIT_OK


def _audit_nodes(path: str, data: dict) -> list[dict]:
    """The tree's nodes in preorder, from the certificate's proof file (its header checked as
    the verifier checks it before anything else is read)."""
    from sparsecert.certificate.proof_file import decode_tree
    from sparsecert.certificate.verify import proof_path, read_proof_header

    proof = proof_path(path)
    try:
        read_proof_header(data, proof)
        with open(proof, "rb") as fh:
            return decode_tree(fh)
    except OSError as exc:
        raise _InputError(f"cannot read the proof file {proof}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise _InputError(f"{proof} is malformed ({exc}); run 'sparsecert verify' for the "
                          "details") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sparsecert`` command. Returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:  # argparse: --help / --version (0) or a usage error (2)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler = {"certify": _cmd_certify, "verify": _cmd_verify, "show": _cmd_show}[args.command]
    try:
        return handler(args)
    except KeyboardInterrupt:  # the search itself returns its best model on Ctrl-C
        print("sparsecert: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `sparsecert show cert.json | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except (_InputError, ValueError, KeyError, OSError) as exc:
        msg = str(exc) if not isinstance(exc, KeyError) else f"missing {exc}"
        if isinstance(exc, OSError) and exc.filename is not None:
            msg = f"{exc.filename}: {exc.strerror or exc}"
        print(f"sparsecert: error: {' '.join(msg.split())}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
