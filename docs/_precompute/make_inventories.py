"""Write the small Sphinx inventories of ``docs/_inventories/`` (kept script; run it by hand).

The docs link to numpy, scipy, sympy, mpmath, matplotlib, scikit-learn and Python through intersphinx, but
neither developers' machines nor CI reach the web, so the build reads these local inventories
instead of downloading the projects' ``objects.inv``. Each lists only the external objects the
docs refer to, with the address of its page in that project's published documentation (the
page layouts of the versions named in :data:`PROJECTS`). When a docstring or page names a new
external object, the build fails (``nitpicky``) until it is added to :data:`OBJECTS` and this
script is rerun::

    python docs/_precompute/make_inventories.py

Written with ``sphobjinv`` (in the ``docs`` extra).
"""

from __future__ import annotations

from pathlib import Path

import sphobjinv as soi

OUT = Path(__file__).resolve().parents[1] / "_inventories"

#: project key -> (project name, version whose page layout the addresses follow)
PROJECTS = {
    "python": ("Python", "3.13"),
    "numpy": ("NumPy", "2.3"),
    "scipy": ("SciPy", "1.16"),
    "sympy": ("SymPy", "1.14"),
    "mpmath": ("mpmath", "1.3"),
    "matplotlib": ("Matplotlib", "3.10"),
    "sklearn": ("scikit-learn", "1.7"),
    "cupy": ("CuPy", "13"),
}

#: project key -> [(name, domain:role, page#anchor — ``$`` stands for the name, display name)]
OBJECTS: dict[str, list[tuple[str, str, str, str]]] = {
    "python": [
        *[(t, "py:class", "library/functions.html#$", "-") for t in ("int", "float", "bool")],
        *[(t, "py:class", "library/stdtypes.html#$", "-")
          for t in ("str", "dict", "list", "tuple", "bytes", "set", "frozenset")],
        ("None", "py:data", "library/constants.html#$", "-"),
        ("object", "py:class", "library/functions.html#$", "-"),
        ("pathlib.Path", "py:class", "library/pathlib.html#$", "-"),
        ("collections.abc.Callable", "py:class", "library/collections.abc.html#$", "-"),
        ("collections.abc.Sequence", "py:class", "library/collections.abc.html#$", "-"),
        ("collections.abc.Mapping", "py:class", "library/collections.abc.html#$", "-"),
        ("collections.abc.Iterable", "py:class", "library/collections.abc.html#$", "-"),
        ("typing.Any", "py:data", "library/typing.html#$", "-"),
        ("ValueError", "py:exception", "library/exceptions.html#$", "-"),
        ("TypeError", "py:exception", "library/exceptions.html#$", "-"),
        ("OSError", "py:exception", "library/exceptions.html#$", "-"),
        ("MemoryError", "py:exception", "library/exceptions.html#$", "-"),
        ("json", "py:module", "library/json.html#module-$", "-"),
        ("ast", "py:module", "library/ast.html#module-$", "-"),
        ("doctest", "py:module", "library/doctest.html#module-$", "-"),
        ("sqlite3", "py:module", "library/sqlite3.html#module-$", "-"),
        ("concurrent.futures.ProcessPoolExecutor", "py:class",
         "library/concurrent.futures.html#$", "-"),
        ("True", "py:data", "library/constants.html#$", "-"),
        ("False", "py:data", "library/constants.html#$", "-"),
        ("callable", "py:function", "library/functions.html#$", "-"),
        ("contextlib.contextmanager", "py:function", "library/contextlib.html#$", "-"),
        ("collections.namedtuple", "py:function", "library/collections.html#$", "-"),
        ("tomllib", "py:module", "library/tomllib.html#module-$", "-"),
        ("concurrent.futures.Executor", "py:class", "library/concurrent.futures.html#$", "-"),
        ("bltin-boolean-values", "std:label", "library/stdtypes.html#$", "Boolean Values"),
        ("iterable", "std:term", "glossary.html#term-iterable", "-"),
        ("sequence", "std:term", "glossary.html#term-sequence", "-"),
        ("generator", "std:term", "glossary.html#term-generator", "-"),
        ("path-like object", "std:term", "glossary.html#term-path-like-object", "-"),
        ("callable", "std:term", "glossary.html#term-callable", "-"),
    ],
    "numpy": [
        ("numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$", "-"),
        ("numpy.dtype", "py:class", "reference/generated/numpy.dtype.html#$", "-"),
        ("numpy.float64", "py:attribute", "reference/arrays.scalars.html#$", "-"),
        ("numpy.float32", "py:attribute", "reference/arrays.scalars.html#$", "-"),
        ("numpy.random.Generator", "py:class", "reference/random/generator.html#$", "-"),
        ("numpy.random.Philox", "py:class", "reference/random/bit_generators/philox.html#$",
         "-"),
        ("numpy.linalg.eigvalsh", "py:function",
         "reference/generated/numpy.linalg.eigvalsh.html#$", "-"),
        ("numpy.polynomial", "py:module", "reference/routines.polynomials-package.html#module-$",
         "-"),
        ("numpy", "py:module", "reference/index.html#module-$", "-"),
        ("numpy.inf", "py:data", "reference/constants.html#$", "-"),
        ("numpy.nan", "py:data", "reference/constants.html#$", "-"),
        ("numpy.random.RandomState", "py:class",
         "reference/random/legacy.html#$", "-"),
        ("arrays.scalars", "std:label", "reference/arrays.scalars.html#$", "Scalars"),
        ("array_like", "std:term", "glossary.html#term-array_like", "-"),
    ],
    "scipy": [
        ("scipy.optimize.linear_sum_assignment", "py:function",
         "reference/generated/scipy.optimize.linear_sum_assignment.html#$", "-"),
        ("scipy.optimize.minimize", "py:function",
         "reference/generated/scipy.optimize.minimize.html#$", "-"),
        ("scipy.linalg.lstsq", "py:function", "reference/generated/scipy.linalg.lstsq.html#$",
         "-"),
        ("scipy.linalg.eigh", "py:function", "reference/generated/scipy.linalg.eigh.html#$", "-"),
        ("scipy.special", "py:module", "reference/special.html#module-$", "-"),
    ],
    "sympy": [
        ("sympy.core.expr.Expr", "py:class", "modules/core.html#$", "-"),
        ("sympy.Expr", "py:class", "modules/core.html#sympy.core.expr.Expr", "-"),
        ("sympy.core.basic.Basic", "py:class", "modules/core.html#$", "-"),
        ("sympy.core.symbol.Symbol", "py:class", "modules/core.html#$", "-"),
        ("sympy.simplify.cse_main.cse", "py:function", "modules/simplify/simplify.html#$", "-"),
        ("sympy.utilities.lambdify.lambdify", "py:function", "modules/utilities/lambdify.html#$",
         "-"),
    ],
    "mpmath": [
        ("mpmath.mpf", "py:class", "basics.html#$", "-"),
        ("mpmath.quad", "py:function", "calculus/integration.html#$", "-"),
    ],
    "matplotlib": [
        ("matplotlib.figure.Figure", "py:class", "api/_as_gen/matplotlib.figure.Figure.html#$",
         "-"),
        ("matplotlib.axes.Axes", "py:class", "api/_as_gen/matplotlib.axes.Axes.html#$", "-"),
        ("matplotlib.pyplot.subplots", "py:function",
         "api/_as_gen/matplotlib.pyplot.subplots.html#$", "-"),
        ("matplotlib.pyplot.savefig", "py:function",
         "api/_as_gen/matplotlib.pyplot.savefig.html#$", "-"),
        ("matplotlib.style.context", "py:function", "api/style_api.html#$", "-"),
    ],
}


OBJECTS["sklearn"] = [
    ("sklearn.datasets.load_digits", "py:function",
     "modules/generated/sklearn.datasets.load_digits.html#$", "-"),
]


OBJECTS["cupy"] = [
    ("cupy.ndarray", "py:class", "reference/generated/cupy.ndarray.html#$", "-"),
]


def write(key: str) -> Path:
    """Write ``_inventories/<key>.inv`` from :data:`OBJECTS`; return its path."""
    project, version = PROJECTS[key]
    inv = soi.Inventory()
    inv.project, inv.version = project, version
    for name, role, uri, dispname in OBJECTS[key]:
        domain, role = role.split(":")
        inv.objects.append(soi.DataObjStr(name=name, domain=domain, role=role, priority="1",
                                          uri=uri, dispname=dispname))
    path = OUT / f"{key}.inv"
    soi.writebytes(path, soi.compress(inv.data_file(contract=True)))
    return path


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for key in PROJECTS:
        print(f"{write(key)}: {len(OBJECTS[key])} objects")
