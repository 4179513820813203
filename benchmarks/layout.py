"""The package's layout at a git revision: module → lines → what it holds (its docstring's first
line) and its public names.

Usage::

    python benchmarks/layout.py [REV]          # default HEAD
    python benchmarks/layout.py ad5e2ef > before.txt; python benchmarks/layout.py > after.txt
    diff before.txt after.txt

Reads the files with ``git show REV:path`` (no checkout); modules under ``rftheory/`` only.
"""

from __future__ import annotations

import ast
import subprocess
import sys


def layout(rev: str = "HEAD") -> list[str]:
    """One line per module of ``rftheory/`` at ``rev``."""
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "rftheory"],
                           capture_output=True, text=True, check=True).stdout.split()
    out = []
    for path in sorted(f for f in files if f.endswith((".py", ".cu"))):
        text = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True,
                              check=True).stdout
        lines = len(text.splitlines())
        if path.endswith(".cu"):
            out.append(f"{path:42s} {lines:5d}  CUDA/C source (package data)")
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            out.append(f"{path:42s} {lines:5d}  (does not parse)")
            continue
        doc = (ast.get_docstring(tree) or "").strip().splitlines()
        first = doc[0] if doc else ""
        public = [n.name for n in tree.body
                  if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]
        shown = ", ".join(public[:8]) + (f", … (+{len(public) - 8})" if len(public) > 8 else "")
        out.append(f"{path:42s} {lines:5d}  {first[:90]}")
        if shown:
            out.append(f"{'':48s}  [{shown}]")
    return out


if __name__ == "__main__":
    print("\n".join(layout(sys.argv[1] if len(sys.argv) > 1 else "HEAD")))
