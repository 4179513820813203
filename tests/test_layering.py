"""The import structure: the library never imports the CLI or the top-level scripts.

Dependencies point one way: ``rftheory/cli.py`` and ``rftheory/commands/`` use the library; no other
module under ``rftheory/`` may import them (statically, relatively, or through
``importlib.import_module``/``__import__`` with a constant name), and nothing in the package imports
the ``verification/`` scripts, which are not installed.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rftheory"
CLI_MODULES = ("rftheory.cli", "rftheory.commands")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: Path, root: Path = ROOT) -> list[tuple[str, int]]:
    """Every module name ``path`` imports, relative imports resolved, with its line number.

    ``from X import y`` yields both ``X`` and ``X.y`` (y may be a submodule); a call
    ``importlib.import_module("X")`` or ``__import__("X")`` with a constant yields ``X``.
    """
    package = module_name(path, root)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out.append((base, node.lineno))
            out += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__"):
                out.append((node.args[0].value, node.lineno))
    return out


def _is_under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def library_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p != PACKAGE / "cli.py" and (PACKAGE / "commands") not in p.parents]


def test_library_never_imports_the_cli():
    files = library_files()
    assert len(files) > 20  # the scan really covers the package
    offenders = [f"{p.relative_to(ROOT)}:{line}: imports {name}"
                 for p in files for name, line in imported_names(p)
                 if _is_under(name, CLI_MODULES)]
    assert not offenders, "\n".join(offenders)


def test_package_never_imports_the_verification_scripts():
    offenders = [f"{p.relative_to(ROOT)}:{line}: imports {name}"
                 for p in sorted(PACKAGE.rglob("*.py")) for name, line in imported_names(p)
                 if _is_under(name, ("verification",))]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("source, expected", [
    ("from .. import cli\n", "rftheory.cli"),
    ("from ..commands._common import x\n", "rftheory.commands._common"),
    ("import rftheory.commands.kernel\n", "rftheory.commands.kernel"),
    ("import importlib\nimportlib.import_module('rftheory.cli')\n", "rftheory.cli"),
])
def test_the_scan_sees_every_form_of_import(tmp_path, source, expected):
    # A module two levels down, as rftheory/claims/<claim>.py is.
    path = tmp_path / "rftheory" / "claims" / "fake.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    names = [name for name, _ in imported_names(path, tmp_path)]
    assert expected in names and _is_under(expected, CLI_MODULES)


def test_only_the_library_is_installed_and_it_is_typed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["packages"]["find"]["include"] == ["rftheory*"]
    assert "py.typed" in config["package-data"]["rftheory"] and (PACKAGE / "py.typed").is_file()


def test_verification_scripts_are_thin_and_run_their_claim():
    from rftheory.claims import CLAIMS

    scripts = {p.stem: p for p in (ROOT / "verification").glob("*.py") if p.stem != "__init__"}
    assert sorted(scripts) == sorted(CLAIMS)
    for claim, path in scripts.items():
        text = path.read_text()
        assert len(text.splitlines()) <= 10 and f'main_for("{claim}"' in text
        assert {name for name, _ in imported_names(path)} <= {"sys", "rftheory.claims",
                                                                 "rftheory.claims.main_for"}


def test_python_m_verification_runs_from_a_checkout():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "verification.law", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m verification.law")


# --- The library underneath the claims ------------------------------------------------------

#: Modules above the library that may use the claims, and what of them: report.py and
#: baseline.py the claims' public protocol (the package ``rftheory.claims`` itself:
#: ``claim_module``, ``CLAIMS``), never a claim module.
PROTOCOL_USERS = ("rftheory.report", "rftheory.baseline")
#: Imports from a claim module that #25 moves into the library (threshold statistics of
#: claims/law.py); the lead deletes these entries when that lands. Nothing else may be added.
PENDING_MOVES: set[tuple[str, str]] = set()   # #25 moved p_values and label_threshold


def _library_proper() -> list[Path]:
    """The library: everything but the CLI and the claims themselves."""
    return [p for p in library_files() if (PACKAGE / "claims") not in p.parents]


def test_library_never_imports_the_claims():
    files = _library_proper()
    assert len(files) > 20
    offenders = []
    for p in files:
        me = module_name(p)
        for name, line in imported_names(p):
            if not _is_under(name, ("rftheory.claims",)) or (me, name) in PENDING_MOVES:
                continue
            if me in PROTOCOL_USERS and name.rpartition(".")[0] in ("rftheory", "rftheory.claims"):
                # `from .claims import claim_module` names rftheory.claims and
                # rftheory.claims.claim_module: the protocol, not a claim module
                if name == "rftheory.claims" or not name.rpartition(".")[2].startswith("_") \
                        and name.rpartition(".")[2] not in _claim_modules():
                    continue
            offenders.append(f"{p.relative_to(ROOT)}:{line}: imports {name}")
    assert not offenders, "\n".join(offenders)


def _claim_modules() -> set[str]:
    return {p.stem for p in (PACKAGE / "claims").glob("*.py")}


def private_imports(path: Path, root: Path = ROOT) -> list[tuple[str, int]]:
    """Private names of another module of the package that ``path`` uses, as ``X._name`` with
    the line number: ``from X import _name`` (X relative or absolute), and ``m._name`` where
    ``m`` is a name bound to a package module (``import rftheory.varpro as m``, ``from rftheory
    import varpro as m``, ``from . import varpro``). Dunder names are not private."""
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    out, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _is_under(a.name, ("rftheory",)):    # binds the top name unless aliased
                    modules[a.asname or "rftheory"] = a.name if a.asname else "rftheory"
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([base] if base else []))
        if not _is_under(base, ("rftheory",)) or base == me:
            continue
        out += [(f"{base}.{a.name}", node.lineno) for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")]
        modules.update({a.asname or a.name: f"{base}.{a.name}" for a in node.names
                        if f"{base}.{a.name}" != me})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in modules:
                name = ".".join([modules[value.id], *chain])
                if name != me:
                    out.append((f"{name}.{node.attr}", node.lineno))
    return out


def test_no_private_name_crosses_modules():
    offenders = [f"{p.relative_to(ROOT)}:{line}: uses private {name}"
                 for p in sorted(PACKAGE.rglob("*.py")) for name, line in private_imports(p)]
    assert not offenders, "\n".join(offenders)


def test_scripts_use_only_public_names():
    # The benchmarks and verification scripts stand where a user's script stands.
    scripts = sorted((ROOT / "benchmarks").rglob("*.py")) + sorted((ROOT / "verification").rglob("*.py"))
    offenders = [f"{p.relative_to(ROOT)}:{line}: uses private {name}"
                 for p in scripts for name, line in private_imports(p)]
    assert not offenders, "\n".join(offenders)


def private_members(files: list[Path]) -> list[str]:
    """``obj._name`` (obj not ``self``, ``cls`` or ``super()``) in one file where ``_name`` is
    a private function, class, method or ``self._name`` attribute defined only in other files
    of ``files``: a private member of another module's object, used from outside it."""
    trees = {p: ast.parse(p.read_text(), str(p)) for p in files}
    defined: dict[str, set[Path]] = {}
    for p, tree in trees.items():
        for node in ast.walk(tree):
            name = None
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                name = node.attr
            if name and name.startswith("_") and not name.startswith("__"):
                defined.setdefault(name, set()).add(p)
    out = []
    for p, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls") or \
                    isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super":
                continue
            where = defined.get(node.attr, set())
            if where and p not in where:
                out.append(f"{p.name}:{node.lineno}: {ast.unparse(node)} "
                           f"(defined in {', '.join(sorted(w.name for w in where))})")
    return out


def test_no_private_member_crosses_modules():
    offenders = private_members(sorted(PACKAGE.rglob("*.py")))
    assert not offenders, "\n".join(offenders)


def test_the_private_member_scan_sees_a_method_of_another_module(tmp_path):
    (tmp_path / "a.py").write_text("class A:\n    def _hot(self):\n        self._cache = 1\n")
    (tmp_path / "b.py").write_text("def f(a):\n    a._hot()\n    return a._cache, a.hot\n")
    (tmp_path / "c.py").write_text("def _hot(x):\n    return x._hot()\n")  # its own name
    found = private_members(sorted(tmp_path.glob("*.py")))
    assert [line.split(":")[0:2] for line in found] == [["b.py", "2"], ["b.py", "3"]]


@pytest.mark.parametrize("source, expected", [
    ("from ..gram import _solve_gram\n", ["rftheory.gram._solve_gram"]),
    ("from rftheory.projection import keep_budget, _projection_loss as f\n",
     ["rftheory.projection._projection_loss"]),
    ("from . import _common\n", ["rftheory.claims._common"]),
    ("from .fake import _mine\n", []),               # its own module: not crossing
    ("from ..gram import solve_gram_checked as _solve\n", []),  # public name, local alias
    ("from numpy import _pytesttester\n", []),        # not the package's
    ("from .. import varpro as vp\nvp._Run\n", ["rftheory.varpro._Run"]),
    ("import rftheory.varpro\nrftheory.varpro._Stop\n", ["rftheory.varpro._Stop"]),
    ("from . import fake\nfake._mine\n", []),       # itself
    ("import numpy as np\nnp._core\n", []),          # not the package's
])
def test_the_private_scan_sees_relative_and_absolute_imports(tmp_path, source, expected):
    path = tmp_path / "rftheory" / "claims" / "fake.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    assert [name for name, _ in private_imports(path, tmp_path)] == expected


def test_one_success_level():
    """ρ's success level is defined once (rftheory.metrics); every user reads that object."""
    import rftheory.report
    from rftheory import metrics, testing
    from rftheory.claims import deep_law, headline, law, sign, twolayer_law

    level = metrics.RHO_SUCCESS
    assert testing.tolerance("rho", "statistical") == level
    assert rftheory.report.RHO_SUCCESS == level and sign.RHO_SUCCESS == level
    assert headline.RHO_SUCCESS == level and law.RHO_SUCCESS == level
    assert deep_law.RHO_SUCCESS == level
    assert twolayer_law.RHO_SUCCESS == metrics.RHO_SUCCESS_TWOLAYER < level
    # the sweep's and the claims' classifier default to it
    assert metrics.run_kind({"rho_abs": level * 0.999, "final_loss": 1.0}) == "success"
    assert metrics.run_kind({"rho_abs": level, "final_loss": 1.0}) != "success"
    # and nobody writes the number again: an assignment RHO_SUCCESS* = <literal> appears only
    # in metrics.py (law.py's own constant is switched by the lead with #25's split)
    literal = []
    for p in sorted(PACKAGE.rglob("*.py")):
        if p.name == "metrics.py" or p == PACKAGE / "claims" / "law.py":
            continue
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and any(
                    isinstance(t, ast.Name) and t.id.startswith("RHO_SUCCESS")
                    for t in node.targets):
                literal.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not literal, literal
