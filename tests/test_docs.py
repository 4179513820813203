"""The documentation's standards that the test suite checks (the Sphinx build checks the rest).

* The docstrings' Examples run as doctests through ``--doctest-modules`` (``pyproject.toml``):
  this file checks that the mechanism is on and that the modules and functions that must carry
  Examples do — a module whose examples were deleted would otherwise pass silently.
* Parameters/Returns sections are enforced by numpydoc's validation in the docs build
  (``docs/conf.py``: ``numpydoc_validation_checks``), which ``.ci/run`` runs with ``-W``.
"""

from __future__ import annotations

import doctest
import importlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Modules whose docstrings must hold doctested examples (at least one).
MODULES_WITH_EXAMPLES = [
    "activations", "inputs", "domain", "hermite", "verdicts", "kernel", "gram", "features", "philox",
    "projection", "metrics", "backend", "output", "budget", "concentration", "twolayer",
    "plotting", "errors", "collisions", "span_attack", "sample_recovery",
    "claims.kernel_concentration", "claims.theorem1", "claims.sign", "claims.nhat",
    "claims.twolayer_law", "signs", "runtime", "seeding", "deprecation", "fit", "cells",
]

#: The main functions: each has an Examples section with at least one doctest.
MAIN_FUNCTIONS = [
    "activations.get_activation", "activations.parse_activation",
    "hermite.hermite_coefficients", "verdicts.activation_report",
    "kernel.rf_kernel_series", "kernel.kernel_matrix", "kernel.closed_form_kernel",
    "kernel.hermite_lower_bound", "features.RandomFeatures", "features.train_min_norm",
    "gram.solve_gram", "projection.projection_loss", "metrics.match", "metrics.rho",
    "philox.standard_normal", "concentration.measure_concentration",
    "twolayer.train_two_layer", "plotting.paper_figure", "backend.to_host",
    "output.to_jsonable",
]


def _examples(obj) -> int:
    return sum(len(t.examples) for t in doctest.DocTestFinder(recurse=False).find(obj))


def test_doctests_are_collected_from_the_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "rftheory" in config["testpaths"]
    assert "--doctest-modules" in config["addopts"]


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_module_has_doctested_examples(name):
    module = importlib.import_module(f"rftheory.{name}")
    found = sum(len(t.examples) for t in doctest.DocTestFinder().find(module)
                if t.name.startswith(module.__name__))
    assert found > 0, f"rftheory.{name} has no doctested example"


@pytest.mark.parametrize("name", MAIN_FUNCTIONS)
def test_main_function_has_an_example(name):
    module, _, attr = name.rpartition(".")
    obj = getattr(importlib.import_module(f"rftheory.{module}"), attr)
    assert "Examples\n" in (obj.__doc__ or ""), f"rftheory.{name} has no Examples section"
    assert _examples(obj) > 0, f"rftheory.{name}'s Examples hold no doctest"


@pytest.mark.parametrize("claim", sorted(p.stem for p in (ROOT / "docs" / "_gallery").glob("*.json")
                                          if p.stem != "MANIFEST"))
def test_kept_gallery_results_are_read_by_todays_claim_code(claim):
    """The docs draw each claim's figure from its kept JSON result (docs/_gallery); a result read
    back from JSON (non-finite numbers as strings) must still summarise. The figures themselves
    are drawn by the docs build in ``.ci/run``."""
    import json

    from rftheory.claims import CLAIMS

    assert claim in CLAIMS
    result = json.loads((ROOT / "docs" / "_gallery" / f"{claim}.json").read_text())
    assert result["claim"] == claim and result["quick"] is True
    module = importlib.import_module(f"rftheory.claims.{claim}")
    assert module.summary(result).strip()


def test_every_claim_has_a_kept_gallery_result():
    from rftheory.claims import CLAIMS

    kept = {p.stem for p in (ROOT / "docs" / "_gallery").glob("*.json")} - {"MANIFEST"}
    assert kept == set(CLAIMS)
