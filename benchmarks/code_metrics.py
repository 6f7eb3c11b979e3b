"""Code metrics of the certified-GLM wing: how often each concept is written, how big things are.

For a source tree (default: this repository) it measures, on ``src/``:

* the largest files and the largest function (lines, by the ``ast`` of each file);
* the functions with the most parameters (``self`` / ``cls`` not counted);
* for every loss name, the number of places it is written as a string literal (docstrings do not
  count; the standalone verifier, which keeps its own copy on purpose, is counted apart) and the
  source files it is written in (a loss is a plug-in when that is its registry, its kernels
  and the verifier at most);
* the validation sites: functions that raise ``TypeError`` / ``ValueError`` about one of the
  problem's parameters (``k``, ``lambda2``, ``loss``, ``max_abs_coef``, ``fit_intercept``,
  ``rel_gap``, ...), outside the standalone verifier, and the modules they live in;
* the duplicated blocks of 6+ lines (the ``duplicates`` command, when it is installed);
* the files over 600 lines (the standalone verifier apart);
* the import circles between modules of the package: strongly connected components of the graph
  of imports made when a module is loaded (module level, ``if TYPE_CHECKING`` blocks apart), and
  apart from them those that also follow imports written inside functions;
* the functions of the certified-GLM wing with more than 8 parameters, the public entry points
  apart (the names ``sparsecert`` exports and their methods, the constructor the public
  estimators inherit, the standalone verifier's ``verify_certificate``, the relaxation's
  documented ``solve_node``); the numba kernels
  over 8 parameters are listed apart (arrays and scalars are a kernel's arguments: see
  ``_is_kernel``).

With ``--baseline TREE`` the same numbers are taken on another tree (for example the code before
a clean-up) and the claims compare the two; without it, the claims use fixed targets (a loss name
written once on the solver side, one validation module, no file over 600 lines, at most 8
duplicated blocks, no import circle, no GLM function over 8 parameters).

Usage::

    python benchmarks/code_metrics.py --quick --json out/code_metrics.json
    python benchmarks/code_metrics.py --baseline ../old-checkout --json out/code_metrics.json
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the loss names of the package (written here as data: this script reads other trees too)
LOSS_NAMES = ("squared", "logistic", "squared_hinge", "poisson", "huber")
#: folders of the distributed wing (new layout and the older one), left out of the GLM counts
DISTRIBUTED = re.compile(r"(^|/)(distributed|problems)/|(^|/)solvers/(comm|compress|quantize|"
                         r"safe_ef|qoda|dtzo|dtzo_baselines|trilevel|zeroth_order)\.py$")
#: a message that rejects one of the problem's parameters: by its name, or a declarative
#: checker's, whose name and requirement are both given to it (``f"{name} must {text}, got
#: ..."``, ``f"unknown {name} {value!r}; ..."``; a formatted value reads as a space here)
PARAM_MESSAGE = re.compile(
    r"\b(k|ks|lambda2|max_abs_coef|fit_intercept|rel_gap|abs_gap|time_limit|node_limit|n_jobs|"
    r"eig_shift|loss|labels)\b'?\]?( = \S*)? (must|is not|has|holds)|unknown loss|"
    r"needs? (binary|exactly two|non-negative)|binary labels|^\s+must\s+, got|^unknown\s\s")


def _python_files(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*.py") if "__pycache__" not in p.parts)


def _is_verifier(rel: str) -> bool:
    return rel.endswith("/verify.py") and "certif" in rel


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _message_text(call: ast.Call) -> str:
    parts = []
    for arg in call.args[:1]:
        for node in ast.walk(arg):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                parts.append(node.value)
            elif isinstance(node, ast.FormattedValue):
                parts.append(" ")
    return "".join(parts)


def _functions(tree: ast.AST):
    """(qualified name, node) of every function, methods as ``Class.method``."""
    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield prefix + child.name, child
                yield from walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)
    yield from walk(tree, "")


def _n_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return len([n for n in names if n not in ("self", "cls")])


#: the public entry points, exempt from the parameter limit: the names ``sparsecert`` exports
#: and their methods; the constructor the public estimators inherit
#: (``_KSparseBase.__init__``: scikit-learn requires every hyper-parameter as an explicit
#: keyword of ``__init__``, no record and no ``**kwargs``); and the standalone verifier's
#: ``verify_certificate``, exported by ``sparsecert.certificate`` and documented as the
#: verifier's API (it takes the problem's parameters as keywords: the verifier shares no code
#: with the package, so it cannot take the package's problem record); the relaxation's
#: ``solve_node``, in the API reference (``docs/api.rst``) beside ``perspective_relaxation``:
#: its keywords are the node solver's documented options
ENTRY_POINT = re.compile(r"^sparsecert/(api\.py:(certify|verify)|path\.py:(certify_path|"
                         r"KSparse\w*\.\w+)|estimators\.py:(KSparse\w*\.\w+|"
                         r"_KSparseBase\.__init__)|"
                         r"solvers/perspective/api\.py:(perspective_relaxation|solve_node)|"
                         r"certificate/verify\.py:verify_certificate|"
                         r"gap\.py:certified_gap)$")
MAX_LINES = 600
MAX_PARAMS = 8


def _is_kernel(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A numba kernel (decorated with ``njit`` / ``jit``): counted apart from the parameter
    limit. Its arguments are arrays and scalars by the project's kernel convention (no jitclass
    through cached kernels), and packing them into tuples costs speed: measured on the Newton
    polish kernel (``newton_candidate`` and ``_q_val_grad``, the weights and the smooth piece
    as tuples), 2-6 % slower per call, identical results; a tuple argument is also typed entry
    by entry at every call from Python."""
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit"):
            return True
    return False


def _module_name(rel: str) -> str:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imported_modules(tree: ast.AST, module: str, is_package: bool, known: set[str],
                      load_time: bool) -> set[str]:
    """Package modules a module imports (at load time only, or everywhere)."""
    out: set[str] = set()

    def visit(node, in_function: bool, in_type_checking: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, True, in_type_checking)
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, in_function, True)
                continue
            skip = in_type_checking or (load_time and in_function)
            if not skip and isinstance(child, ast.Import):
                for a in child.names:
                    if a.name in known:
                        out.add(a.name)
            elif not skip and isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = module.split(".")
                    anchor = anchor if is_package else anchor[:-1]
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for a in child.names:
                    full = f"{base}.{a.name}"
                    if full in known:
                        out.add(full)
                    elif base in known:
                        out.add(base)
            visit(child, in_function, in_type_checking)

    visit(tree, False, False)
    out.discard(module)
    return out


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def measure(tree_root: Path, seconds: int = 120, top: int = 5) -> dict:
    """Every metric of one tree (its ``src/`` folder)."""
    src = tree_root / "src"
    files = _python_files(src)
    largest_file = ("", 0)
    largest_function = ("", 0)
    file_sizes: list[tuple[str, int]] = []
    params: list[tuple[str, int]] = []
    kernels: set[str] = set()
    names = {n: {"glm": 0, "verifier": 0, "places": [], "files": []} for n in LOSS_NAMES}
    sites: list[str] = []
    parsed: dict[str, ast.AST] = {}
    for path in files:
        rel = path.relative_to(src).as_posix()
        text = path.read_text(encoding="utf-8")
        n_lines = text.count("\n") + (not text.endswith("\n"))
        if n_lines > largest_file[1]:
            largest_file = (rel, n_lines)
        file_sizes.append((rel, n_lines))
        tree = ast.parse(text, filename=str(path))
        parsed[rel] = tree
        for qual, fn in _functions(tree):
            params.append((f"{rel}:{qual}", _n_params(fn)))
            if _is_kernel(fn):
                kernels.add(f"{rel}:{qual}")
            length = fn.end_lineno - fn.lineno + 1
            if length > largest_function[1]:
                largest_function = (f"{rel}:{qual}", length)
        if DISTRIBUTED.search(rel):
            continue
        docs = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value in names and id(node) not in docs):
                rec = names[node.value]
                rec["verifier" if _is_verifier(rel) else "glm"] += 1
                rec["places"].append(f"{rel}:{node.lineno}")
                if rel not in rec["files"]:
                    rec["files"].append(rel)
        if _is_verifier(rel):
            continue
        for qual, fn in _functions(tree):
            for node in ast.walk(fn):
                if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                        and isinstance(node.exc.func, ast.Name)
                        and node.exc.func.id in ("TypeError", "ValueError")
                        and PARAM_MESSAGE.search(_message_text(node.exc))):
                    sites.append(f"{rel}:{qual}")
                    break
    modules = sorted({s.split(":")[0] for s in sites})
    names_of = {_module_name(rel): rel for rel in parsed}
    known = set(names_of)
    circles = {}
    for load_time in (True, False):
        graph = {m: _imported_modules(parsed[r], m, r.endswith("__init__.py"), known, load_time)
                 for m, r in names_of.items()}
        circles["load_time" if load_time else "with_function_imports"] = _circles(graph)
    long_files = [{"path": f, "lines": n} for f, n in sorted(file_sizes, key=lambda t: -t[1])
                  if n > MAX_LINES and not _is_verifier(f)]
    glm_over = [(f, n) for f, n in sorted(params, key=lambda t: -t[1])
                if n > MAX_PARAMS and not DISTRIBUTED.search(f.split(":")[0])
                and not ENTRY_POINT.match(f)]
    many_params = [{"name": f, "parameters": n} for f, n in glm_over if f not in kernels]
    many_kernel_params = [{"name": f, "parameters": n} for f, n in glm_over if f in kernels]
    return {
        "tree": str(tree_root),
        "n_files": len(files),
        "largest_file": {"path": largest_file[0], "lines": largest_file[1]},
        "largest_function": {"name": largest_function[0], "lines": largest_function[1]},
        "largest_files": [{"path": f, "lines": n}
                          for f, n in sorted(file_sizes, key=lambda t: -t[1])[:top]],
        "most_parameters": [{"name": f, "parameters": n}
                            for f, n in sorted(params, key=lambda t: -t[1])[:top]],
        "loss_name_literals": names,
        "validation_sites": sites,
        "files_over_600_lines": long_files,
        "import_circles": circles,
        "glm_functions_over_8_parameters": many_params,
        "glm_kernels_over_8_parameters": many_kernel_params,
        "validation_modules": modules,
        "duplicated_blocks": _duplicates(src, seconds),
    }


def _duplicates(src: Path, seconds: int) -> dict | None:
    """Pairs of places sharing 6+ lines, by ``duplicates --repo src --most 200``: all of them,
    and those with a side in the certified-GLM wing (None when the command is not installed)."""
    exe = shutil.which("duplicates")
    if exe is None:
        return None
    out = subprocess.run([exe, "--repo", str(src), "--most", "200", "--seconds", str(seconds)],
                         capture_output=True, text=True, check=False).stdout
    lines = out.strip().splitlines()
    first = lines[0] if lines else ""
    if first.startswith("no duplicates"):
        return {"all": 0, "glm": 0}
    m = re.match(r"(\d+) pairs? of places", first)
    if not m:
        return None
    glm = 0
    for row in lines[1:]:
        sides = re.match(r"D\d+ (\S+?):\d+-\d+ ~ (\S+?):\d+-\d+", row)
        if sides and not all(DISTRIBUTED.search(f) for f in sides.groups()):
            glm += 1
    return {"all": int(m.group(1)), "glm": glm}


# ----------------------------------------------------------------------------------------------
def _max_glm(m: dict) -> int:
    return max(rec["glm"] for rec in m["loss_name_literals"].values())


def claims(after: dict, before: dict | None) -> list[dict]:
    """One entry per target: fixed targets, or the baseline's values when there is one."""
    def target(key_fn, fixed):
        return key_fn(before) if before is not None else fixed

    out = [
        {"name": "places a loss name is written as a literal on the solver side (max over names, "
                 "verifier apart)",
         "measured": _max_glm(after), "target": target(_max_glm, 1), "unit": "places",
         "better": "lower"},
        *({"name": f"source files the loss name {name!r} is written in (as a literal)",
           "measured": len(after["loss_name_literals"][name]["files"]), "target": 3,
           "unit": "files", "better": "lower"}
          for name in ("squared_hinge", "huber") if name in after["loss_name_literals"]),
        {"name": "modules with parameter-validation sites (verifier apart)",
         "measured": len(after["validation_modules"]),
         "target": target(lambda m: len(m["validation_modules"]), 1), "unit": "modules",
         "better": "lower"},
        {"name": "functions with parameter-validation sites (verifier apart)",
         "measured": len(after["validation_sites"]),
         "target": target(lambda m: len(m["validation_sites"]), 1), "unit": "functions",
         "better": "lower"},
        {"name": f"files over {MAX_LINES} lines in src/ (the standalone verifier apart)",
         "measured": len(after["files_over_600_lines"]),
         "target": target(lambda m: len(m.get("files_over_600_lines", [])), 0),
         "unit": "files", "better": "lower"},
        {"name": "import circles between package modules (at load time)",
         "measured": len(after["import_circles"]["load_time"]),
         "target": target(lambda m: len(m.get("import_circles", {}).get("load_time", [])), 0),
         "unit": "circles", "better": "lower"},
        {"name": "import circles between package modules (function-level imports included)",
         "measured": len(after["import_circles"]["with_function_imports"]),
         "target": target(lambda m: len(m.get("import_circles", {})
                                        .get("with_function_imports", [])), 0),
         "unit": "circles", "better": "lower"},
        {"name": f"functions of the GLM wing with more than {MAX_PARAMS} parameters "
                 "(public entry points and numba kernels apart)",
         "measured": len(after["glm_functions_over_8_parameters"]),
         "target": target(lambda m: len(m.get("glm_functions_over_8_parameters", [])), 0),
         "unit": "functions", "better": "lower"},
    ]
    if after["duplicated_blocks"] is not None and before is None:
        out.append({"name": "duplicated blocks of 6+ lines in src/ (pairs of places)",
                    "measured": after["duplicated_blocks"]["all"], "target": 8,
                    "unit": "pairs", "better": "lower"})
    if before is not None:
        out += [
            {"name": "most parameters of a function in src/",
             "measured": after["most_parameters"][0]["parameters"],
             "target": before["most_parameters"][0]["parameters"], "unit": "parameters",
             "better": "lower"},
            {"name": "largest file in src/", "measured": after["largest_file"]["lines"],
             "target": before["largest_file"]["lines"], "unit": "lines", "better": "lower"},
            {"name": "largest function in src/", "measured": after["largest_function"]["lines"],
             "target": before["largest_function"]["lines"], "unit": "lines", "better": "lower"},
        ]
        if after["duplicated_blocks"] is not None and before["duplicated_blocks"] is not None:
            for key, what in (("all", "in src/"), ("glm", "with a side in the GLM wing")):
                out.append({"name": f"duplicated blocks of 6+ lines {what} (pairs of places)",
                            "measured": after["duplicated_blocks"][key],
                            "target": before["duplicated_blocks"][key], "unit": "pairs",
                            "better": "lower"})
    return out


def _print_table(results: dict[str, dict], cl: list[dict]) -> None:
    cols = list(results)
    rows = [("files in src/", lambda m: m["n_files"]),
            ("largest file (lines)",
             lambda m: f"{m['largest_file']['lines']} {m['largest_file']['path']}"),
            ("largest function (lines)",
             lambda m: f"{m['largest_function']['lines']} {m['largest_function']['name']}"),
            ("most parameters",
             lambda m: f"{m['most_parameters'][0]['parameters']} "
                       f"{m['most_parameters'][0]['name']}")]
    for name in LOSS_NAMES:
        rows.append((f"literal {name!r}: solver side / verifier / files",
                     lambda m, n=name: f"{m['loss_name_literals'][n]['glm']} / "
                                       f"{m['loss_name_literals'][n]['verifier']} / "
                                       f"{len(m['loss_name_literals'][n].get('files', []))}"))
    rows += [("validation modules", lambda m: len(m["validation_modules"])),
             ("validation functions", lambda m: len(m["validation_sites"])),
             ("duplicated blocks (6+ lines): all / GLM wing",
              lambda m: "-" if m["duplicated_blocks"] is None else
              f"{m['duplicated_blocks']['all']} / {m['duplicated_blocks']['glm']}")]
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  " + "  ".join(f"{c:<48}" for c in cols))
    for label, fn in rows:
        print(f"{label:{width}}  " + "  ".join(f"{str(fn(results[c])):<48}" for c in cols))
    for c in cols:
        print(f"\nvalidation modules ({c}): {', '.join(results[c]['validation_modules'])}")
        print(f"largest files ({c}): " + ", ".join(
            f"{f['path']} {f['lines']}" for f in results[c]["largest_files"]))
        print(f"most parameters ({c}): " + ", ".join(
            f"{f['name']} {f['parameters']}" for f in results[c]["most_parameters"]))
        print(f"files over {MAX_LINES} lines ({c}): " + (", ".join(
            f"{f['path']} {f['lines']}" for f in results[c]["files_over_600_lines"]) or "none"))
        print(f"GLM functions over {MAX_PARAMS} parameters ({c}): " + (", ".join(
            f"{f['name']} {f['parameters']}"
            for f in results[c]["glm_functions_over_8_parameters"]) or "none"))
        print(f"GLM numba kernels over {MAX_PARAMS} parameters, counted apart ({c}): " + (", ".join(
            f"{f['name']} {f['parameters']}"
            for f in results[c].get("glm_kernels_over_8_parameters", [])) or "none"))
        for kind, found in results[c]["import_circles"].items():
            print(f"import circles, {kind.replace('_', ' ')} ({c}): "
                  + ("; ".join(" <-> ".join(cc) for cc in found) or "none"))
    print("\nclaims:")
    for c in cl:
        ok = (c["measured"] is not None and
              (c["measured"] <= c["target"] if c["better"] == "lower"
               else c["measured"] >= c["target"]))
        print(f"  [{'met' if ok else 'MISSED'}] {c['name']}: {c['measured']} {c['unit']} "
              f"(target {c['target']}, {c['better']} is better)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, default=ROOT, help="the tree to measure (default: here)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another tree to compare with (its src/ is measured the same way)")
    ap.add_argument("--quick", action="store_true", help="accepted for the benchmark convention; "
                                                         "the metrics take seconds anyway")
    ap.add_argument("--json", type=Path, default=None, help="write the metrics and claims here")
    ap.add_argument("--seconds", type=int, default=120, help="time for `duplicates` per tree")
    args = ap.parse_args(argv)
    for t in [args.tree] + ([args.baseline] if args.baseline else []):
        if not (t / "src").is_dir():
            print(f"code_metrics: error: {t} has no src/ folder", file=sys.stderr)
            return 2
    results = {"after": measure(args.tree, args.seconds)}
    if args.baseline is not None:
        results = {"before": measure(args.baseline, args.seconds), **results}
    cl = claims(results["after"], results.get("before"))
    _print_table(results, cl)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"results": results, "claims": cl}, indent=1))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
