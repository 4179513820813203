"""Sphinx configuration of rftheory's documentation (build: see the README's "Documentation").

Everything the build needs is on this machine: the external inventories are the small files of
``_inventories/`` (written by ``_precompute/make_inventories.py``), MathJax comes from a PyPI
package and is copied into the built site, and the gallery's figures are drawn at build time by
``rftheory verify all --quick`` (``_ext/rftheory_docs.py``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import rftheory  # noqa: E402

project = "rftheory"
author = "the rftheory developers"
copyright = "2026, the rftheory developers"
release = rftheory.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "rftheory_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_precompute", "_inventories", "_ext", "_generated/gallery.md",
                    "_generated/cli.md", "_generated/gallery", "screenshots*"]
templates_path = ["_templates"]
root_doc = "index"
nitpicky = True  # every cross-reference must resolve: a broken one fails the build (-W)
# Plain lowercase words of numpydoc's type descriptions ("sequence", "callable", "path") are
# prose, not names: they are not references. Dotted or capitalised names must resolve.
nitpick_ignore_regex = [("py:obj", r"[a-z][a-z0-9_\-]*"), ("py:class", r"[a-z][a-z0-9_\-]*")]

# -- API reference -------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False  # a module's __all__ is its public API
autodoc_typehints = "none"  # types are stated in the numpydoc sections
autodoc_default_options = {"member-order": "bysource"}
add_module_names = False
numpydoc_show_class_members = False  # autosummary lists the members
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = True
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray",
    "array_like": ":term:`numpy:array_like`",
    "array": ":term:`numpy:array_like`",
    "Path": "pathlib.Path",
    "path-like": ":term:`python:path-like object`",
    "Figure": "matplotlib.figure.Figure",
    "Axes": "matplotlib.axes.Axes",
    "Expr": "sympy.core.expr.Expr",
    "mpf": "mpmath.mpf",
}
numpydoc_xref_ignore = {"optional", "default", "of", "or", "and", "the", "a", "an", "to", "in",
                        "with", "per", "each", "one", "two", "from", "by", "for", "as", "is"}

# -- cross-links to the libraries rftheory builds on, from local inventories ---------------
_INV = HERE / "_inventories"
intersphinx_mapping = {
    name: (url, str(_INV / f"{name}.inv"))
    for name, url in {
        "python": "https://docs.python.org/3/",
        "numpy": "https://numpy.org/doc/stable/",
        "scipy": "https://docs.scipy.org/doc/scipy/",
        "sympy": "https://docs.sympy.org/latest/",
        "mpmath": "https://mpmath.org/doc/current/",
        "matplotlib": "https://matplotlib.org/stable/",
        "sklearn": "https://scikit-learn.org/stable/",
        "cupy": "https://docs.cupy.dev/en/stable/",
    }.items()
}
intersphinx_timeout = 1

# -- pages -----------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
html_theme = "pydata_sphinx_theme"
html_title = f"rftheory {release}"
html_static_path = ["_static"]
html_css_files = ["rftheory.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "getting_started": [], "theory": [], "gallery": []}
html_last_updated_fmt = None
html_copy_source = False

# MathJax is served from the built site (the django-static-mathjax wheel ships MathJax 3):
# no page loads anything from the web.
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config = {"tex": {"macros": {"R": r"\mathbb{R}", "E": r"\mathbb{E}"}}}

# -- docstring standard ----------------------------------------------------------------------
# numpydoc's validation of every documented object: a docstring (GL08), every parameter
# documented (PR01) and no unknown one (PR02), each with a description (PR07), a Returns section
# where the function returns something (RT01). Classes documented by an Attributes section
# (frozen dataclasses: their fields are their parameters) are exempt from PR01.
numpydoc_validation_checks = {"GL08", "PR01", "PR02", "PR07", "RT01"}
numpydoc_validation_overrides = {"PR01": [r"Attributes\n\s*-{3,}"]}
# Modules being rewritten on other branches: validated once they are merged (delete the line).
VALIDATION_PENDING = [
    # a read-only mapping (mappingproxy has no __doc__): documented by its ``#:`` comment,
    # which numpydoc cannot see
    "sweep.CELL_KINDS", "sweep.cells.CELL_KINDS",
]
numpydoc_validation_exclude = {"^rftheory\\." + re.escape(m) + r"(\.|$)" for m in VALIDATION_PENDING}
# Type aliases carry their documentation in a ``#:`` comment, which numpydoc cannot see.
numpydoc_validation_exclude.add(r"^rftheory\.sample_recovery\.Attack$")
numpydoc_validation_exclude.add(r"^rftheory\.seeding\.RNGLike$")
# Methods and properties of classes (``module.Class.method``) are held to the summary line only.
numpydoc_validation_exclude.add(r"^rftheory\..*\.[A-Z]\w*\.\w+$")
