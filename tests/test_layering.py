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
