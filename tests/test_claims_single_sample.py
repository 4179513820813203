"""The single-sample check (rftheory.claims.single_sample), on tiny configurations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rftheory.reconstruct
from rftheory.claims import run_claim, single_sample
from rftheory.claims.single_sample import Attack
from rftheory.errors import RFTheoryError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.sample_recovery import reconstruct_attack
from tests.conftest import sphere_points


def test_attack_specs_are_checked_against_the_signatures():
    a = Attack("lbfgs", "reconstruct", "1", {"max_steps": 100, "restarts": 2})
    assert a.options == (("max_steps", 100), ("restarts", 2))  # sorted pairs: hashable, frozen
    assert Attack("span", "span", "n", (("starts_per_point", 3),)).options == (
        ("starts_per_point", 3),)
    with pytest.raises(RFTheoryError, match="unknown option 'max_step'"):
        Attack("typo", "reconstruct", "1", {"max_step": 100})
    with pytest.raises(RFTheoryError, match="kind"):
        Attack("x", "gauss-newton", "1")
    with pytest.raises(RFTheoryError, match="outputs"):
        Attack("x", "span", "k")
    with pytest.raises(RFTheoryError, match="number, string or boolean"):
        Attack("x", "span", "n", {"starts_per_point": [1, 2]})
    with pytest.raises(RFTheoryError, match="distinct"):
        single_sample.QUICK.replace(attacks=(a, a))


def test_p_grid_spans_n_to_2dn():
    cfg = single_sample.Config(d=5, n=3, offsets=(-10, -3, 0, 2, 40), ratios=(1.0, 2.0, 3.0))
    # n = 3 always; n + d + offset and round(ratio·dn) inside [n, 2dn] = [3, 30].
    assert single_sample.p_values(cfg) == [3, 5, 8, 10, 15, 30]


def test_the_default_k1_attack_passes_no_method(monkeypatch):
    # "The strongest attack" is reconstruct()'s default: the claim never names a method.
    seen = []

    def spy(features, theta, n_hat, **kwargs):
        seen.append(kwargs)
        raise StopIteration

    monkeypatch.setattr(rftheory.reconstruct, "reconstruct", spy)
    f = RandomFeatures("tanh", 4, 20, seed=1)
    X = sphere_points(2, 4, seed=0)
    theta = train_min_norm(f, X, np.array([1.0, -1.0])).theta
    for attack in (reconstruct_attack(), single_sample.DEFAULT_ATTACKS[0].build()):
        with pytest.raises(StopIteration):
            attack(f, theta, 2, 3)
    assert seen == [{"seed": 3000}, {"seed": 3000}]


def test_protocol_tiny(tmp_path):
    # d = 5, n = 3: n + d = 8, dn = 15; p ∈ {3, 5, 8, 10, 15}.
    config = single_sample.Config(
        d=5, n=3, seeds=2, offsets=(-3, 0, 2), ratios=(1.0,),
        attacks=(Attack("k1", "reconstruct", "1", {"max_steps": 300}),
                 Attack("span", "span", "n", {"starts_per_point": 5})))
    result = run_claim("single_sample", config=config, out_dir=tmp_path)
    saved = json.loads((tmp_path / "single_sample.json").read_text())
    assert saved["p_values"] == [3, 5, 8, 10, 15] and len(saved["cells"]) == 10
    agg = single_sample.aggregate(saved)
    span = {r["p"]: r for r in agg["span"]["rows"]}
    # p ≤ n + d − 3 = 5: zero manifolds through each x_i; none of the zeros found is a training
    # point (measured 0 of 30). From p = n + d = 8 on, every point of both seeds, and only
    # training points (r = 0 is isolated at the ±x_i).
    assert span[3]["true_candidates"] == span[5]["true_candidates"] == 0
    assert all(span[p]["mean"] == 1.0 and span[p]["true_candidates"] == span[p]["candidates"]
               for p in (8, 10, 15))
    # k = 1 below dn: the zero set has dimension dn − p; the reconstruction reaches a spurious
    # zero that recovers no training point.
    assert all(max(r["counts"]) == 0 for r in agg["k1"]["rows"] if r["p"] < 15)
    v = saved["verdict"]
    assert v["supported"] and v["kn_nothing_far_below_n_plus_d"] and v["span_recovers_from_p"] == 8
    assert v == result["verdict"]
    assert [Path(p).name for p in result["figures"]] == ["single_sample.png", "single_sample.pdf"]
    line = next(t for t in single_sample.summary(saved).splitlines() if t.lstrip().startswith("8 "))
    assert "1.00 [1.00-1.00] (6/6)" in line


def test_verdicts_can_fail():
    config = single_sample.Config(d=5, n=3, seeds=1, offsets=(-5, 0), ratios=(1.0,),
                                  attacks=(Attack("k1", "reconstruct", "1"),
                                           Attack("span", "span", "n")))

    def cell(p, k1, span, span_cand):
        return {"seed": 0, "p": p, "attacks": {
            "k1": {"fraction": k1 / 3, "count": k1, "true_candidates": k1, "n_candidates": 3},
            "span": {"fraction": span / 3, "count": span, "true_candidates": span,
                     "n_candidates": span_cand}}}

    result = {"d": 5, "n": 3, "config": single_sample.to_jsonable(config.as_dict()),
              "cells": [cell(3, 0, 0, 9), cell(8, 0, 3, 3), cell(15, 0, 3, 3)]}
    assert single_sample.verdict_of(result)["supported"]
    result["cells"][1] = cell(8, 1, 3, 3)  # a k = 1 point recovered below dn
    assert not single_sample.verdict_of(result)["k1_nothing_below_dn"]
    result["cells"][1] = cell(8, 0, 3, 4)  # a spurious zero from n + d on
    v = single_sample.verdict_of(result)
    assert not v["kn_precision_one_from_n_plus_d"] and not v["supported"]
    result["cells"][1] = cell(8, 0, 2, 2)  # two points of three at n + d
    assert not single_sample.verdict_of(result)["kn_recovers_from_n_plus_d"]


@pytest.mark.slow
def test_quick_run_is_supported(tmp_path):
    # `rftheory verify single_sample --quick` (d = 8, n = 4, 2 seeds): k = 1 recovers nothing
    # below dn = 32; the span attack recovers every point from p = n + d = 12 on (30 starts per
    # point: 10 per point missed one point of seed 1 at p = 16, 30 find it), only training
    # points, and none at p ≤ n + d − 3.
    result = run_claim("single_sample", quick=True, out_dir=tmp_path, figures=False)
    v = result["verdict"]
    assert v["supported"] and v["kn_nothing_far_below_n_plus_d"]
    assert v["kn_span_recovers_from_p"] <= 12 < 32 == v["dn"]
