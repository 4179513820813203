"""The claims' protocol and the helpers they share (rftheory.claims._common)."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from functools import partial
from pathlib import Path

import pytest

from rftheory.claims import CLAIMS, ClaimConfig, claim_module
from rftheory.claims._common import (TaskProgress, default_workers, run_tasks,
                                     source_digests)
from rftheory.errors import RFTheoryError


@pytest.mark.parametrize("name", CLAIMS)
def test_every_claim_follows_the_protocol(name):
    module = claim_module(name)
    assert module.CLAIM == name
    assert issubclass(module.Config, ClaimConfig) and dataclasses.is_dataclass(module.Config)
    assert isinstance(module.FULL, module.Config) and isinstance(module.QUICK, module.Config)
    assert module.FULL == module.Config() and module.QUICK != module.FULL
    # a larger run (`--large`) is optional; where it exists it is a distinct configuration
    large = getattr(module, "LARGE", None)
    assert large is None or (isinstance(large, module.Config)
                             and large not in (module.FULL, module.QUICK))
    with pytest.raises(dataclasses.FrozenInstanceError):
        module.QUICK.seed = 1
    assert module.QUICK.replace(seed=7).seed == 7 and module.QUICK.seed == 0
    params = inspect.signature(module.run).parameters
    assert list(params)[:2] == ["config", "progress"] and params["config"].default is module.FULL
    assert callable(module.plot) and callable(module.summary)


def test_aliases_and_unknown_claims():
    assert claim_module("twolayer").CLAIM == "twolayer_law"
    assert claim_module("kernel").CLAIM == "kernel_concentration"
    with pytest.raises(RFTheoryError, match="unknown claim"):
        claim_module("theorem3")


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_run_tasks_returns_results_in_call_order_whatever_the_start_order(workers):
    seen = []
    out = run_tasks([partial(_square, k) for k in range(6)], workers=workers,
                    order=[5, 4, 3, 2, 1, 0], on_result=lambda i, r: seen.append((i, r)))
    assert out == [0, 1, 4, 9, 16, 25]
    assert sorted(seen) == [(k, k * k) for k in range(6)]
    if workers == 1:  # in this process, in the start order
        assert [i for i, _ in seen] == [5, 4, 3, 2, 1, 0]


def test_task_progress_counts_and_describes_only_when_listened_to():
    lines = []
    tick = TaskProgress(lines.append, 2)
    tick(lambda: "first")
    tick(lambda: "second")
    assert lines == ["[1/2] first", "[2/2] second"]
    silent = TaskProgress(None, 1)
    silent(lambda: 1 / 0)  # not called: nobody listens
    assert silent.done == 1


def test_default_workers():
    assert default_workers(3) == 3 and default_workers(0) == 1
    assert 1 <= default_workers() <= 2


def test_source_digests_hash_the_module_files():
    digests = source_digests(("pipeline", "data"))
    import rftheory.pipeline

    text = Path(rftheory.pipeline.__file__).read_bytes()
    assert digests["pipeline"] == hashlib.sha256(text).hexdigest()[:12]
    assert list(digests) == ["pipeline", "data"]


def test_configs_refuse_a_negative_seed():
    with pytest.raises(RFTheoryError, match="seed"):
        claim_module("sign").Config(seed=-1)


def test_a_claims_module_entry_point_refuses_bad_input_in_one_line(tmp_path, capsys):
    # python -m rftheory.claims.<claim> --seed -1: the claim's config refuses it; the entry point
    # says so in one line with the CLI's usage status, and runs nothing
    from rftheory.claims._common import main_for

    assert main_for("sign", ["--seed", "-1", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["python -m rftheory.claims.sign: error: seed must be a non-negative integer, "
                   "got -1"]
    assert not (tmp_path / "r").exists()
