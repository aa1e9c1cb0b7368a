"""The Python package's size and layering limits, as the Go side has them:
no module over 600 lines, no function over 100, and no import cycle among
the package's modules (an import inside a function counts: a lazy import
that closes a cycle still ties the modules together).

    python scripts/pycheck.py [pyext/neoflow]

Prints each violation and exits 1 if there is one."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name (relative to the package) -> file, for every module under root."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        if "_proto" in p.parts:
            continue  # generated protobuf code
        rel = p.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def sizes(mods: dict[str, Path]) -> list[str]:
    problems = []
    for p in mods.values():
        text = p.read_text()
        n = text.count("\n")
        if n > MAX_MODULE_LINES:
            problems.append(f"{p}: {n} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    limit = f"at most {MAX_FUNCTION_LINES}"
                    problems.append(f"{p}:{node.lineno}: function {node.name} is {length} lines ({limit})")
    return problems


def imported(name: str, p: Path, package: str, mods: dict[str, Path]) -> set[str]:
    """The package's modules that module name imports (its package's __init__ is not counted for a submodule)."""
    here = name.split(".") if name else []
    is_pkg = p.name == "__init__.py"
    targets = set()
    for node in ast.walk(ast.parse(p.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = base + (node.module.split(".") if node.module else [])
            elif node.module and (node.module == package or node.module.startswith(package + ".")):
                mod = node.module.split(".")[1:]
            else:
                continue
            for a in node.names:  # from . import op: the module op; from .op import Op: the module op
                sub = ".".join(mod + [a.name])
                targets.add(sub if sub in mods else ".".join(mod))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(package + "."):
                    targets.add(".".join(a.name.split(".")[1:]))
    return {t for t in targets if t in mods and t != name and t != ""}


def cycles(mods: dict[str, Path], package: str) -> list[list[str]]:
    edges = {m: imported(m, p, package, mods) for m, p in mods.items()}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in mods:
        if v not in index:
            visit(v)
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "pyext/neoflow")
    mods = modules(root)
    problems = sizes(mods)
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(mods, root.name)]
    for p in problems:
        print(p)
    print(f"{len(mods)} modules of {root.name}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
