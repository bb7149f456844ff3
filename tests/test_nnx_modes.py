"""studies/nnx_modes.py: run tiny, every way of compiling the update compiles, computes Linen's parameters and is
timed at both granularities; bad input is refused in one line, exit 2, before any work and with nothing written."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, needs
from studies.nnx_modes import GRANULARITIES, MODES, main


@pytest.mark.slow
@needs("jax_linen", "jax_nnx", "jax_equinox")
def test_the_study_runs_tiny_and_times_every_way_at_both_granularities(tmp_path):
    out = tmp_path / "nnx-modes.json"
    command = [sys.executable, "-m", "studies.nnx_modes", "--sizes", "s", "--blocks", "2", "--calls", "80", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["blocks"] == 2 and result["calls"] == {"s": 80} and result["modes"] == MODES
    size = result["sizes"]["s"]
    assert size["hidden"] == [64, 64]
    for granularity in GRANULARITIES:
        assert set(size[granularity]) == set(MODES) == set(size["largest_difference_after_one_iteration"][granularity])
        for way, row in size[granularity].items():
            assert len(row["seconds_per_iteration"]) == 2 and row["us_per_call"]["median"] > 0
            if way == "linen":
                assert "over_linen" not in row
            else:  # 2 blocks: a ratio, no interval
                assert row["over_linen"]["n_blocks"] == 2 and row["over_linen"]["verdict"] == "too few runs"
                assert row["over_linen"]["ratio"] > 0 and row["over_linen"]["ci_low"] is None


@pytest.mark.parametrize(
    "flags, problem",
    [
        (["--sizes", "s,xl"], "--sizes s,xl"),
        (["--sizes", "s,s"], "--sizes s,s"),
        (["--blocks", "1"], "--blocks 1"),
        (["--blocks", "two"], "--blocks two"),
        (["--calls", "100"], "--calls 100: positive multiples of 80"),
        (["--calls", "0"], "--calls 0"),
        (["--calls", "80,160,240"], "one per size"),
        (["--out", "."], "cannot be written"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_any_work(flags, problem, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "result.json"
    with pytest.raises(SystemExit) as refused:
        main(["--out", str(out), *flags])
    error = capsys.readouterr().err
    assert refused.value.code == 2 and problem in error and len(error.splitlines()) == 1, error
    assert list(tmp_path.iterdir()) == []
