"""studies/replay_buffers.py: its --quick mode trains both SAC scripts with their own buffers and with the libraries'
(flashbax's, torchrl's) in the real training loop, end to end, and writes the result whole; bad input is refused in one
line, exit 2, nothing written. The --quick run (four short trainings, each a process of its own, about 50 s on 2 cores)
is under the slow marker, as the other studies' smoke runs are."""

import json
import math
import os
import statistics
import subprocess
import sys
import types

import numpy as np
import pytest

from conftest import ROOT

ROOT_ON_PATH = {**os.environ, "PYTHONPATH": str(ROOT)}  # the study runs as a module of the root's studies package


def study(*flags: str, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "studies.replay_buffers", *flags]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=ROOT_ON_PATH, timeout=600)


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple:
    """The --quick study's result and what it printed."""
    tmp = tmp_path_factory.mktemp("replay_buffers")
    out = tmp / "sac-buffer" / "libraries.json"  # a folder still to make
    proc = study("--quick", "--out", str(out), cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [p.name for p in out.parent.iterdir()] == ["libraries.json"]  # no temporary file left beside it
    return json.loads(out.read_text()), proc.stdout


@pytest.mark.slow  # the study's smoke run: four trainings, about 50 s on 2 cores
def test_quick_runs_each_variant_with_its_own_buffer_and_the_librarys_in_one_block(quick):
    result, _ = quick
    ran = sorted((r["variant"], r["buffer"], r["block"]) for r in result["runs"])
    assert ran == [("jax_linen", "library", 1), ("jax_linen", "own", 1), ("torch", "library", 1), ("torch", "own", 1)]
    assert sorted(r["position"] for r in result["runs"]) == [1, 2, 3, 4]
    for run in result["runs"]:
        assert run["steady_s"] > 0 and run["steady_s"] == statistics.median(run["iteration_durations"][1:])
        assert run["compiles_after_first_iteration"] == 0
        assert len(run["losses"]) == len(run["iteration_durations"]) == 3
        assert all(math.isfinite(x) for losses in run["losses"] for x in losses.values())
        assert run["cpu"]["model"] == result["cpu"]  # the study's helper names the CPU as the scripts' records do


@pytest.mark.slow  # the study's smoke run: four trainings, about 50 s on 2 cores
def test_the_library_runs_used_the_librarys_buffer_and_the_own_runs_the_scripts(quick):
    result, _ = quick
    used = {(r["variant"], r["buffer"]): r["library"].get("buffer", "") for r in result["runs"]}
    assert used["jax_linen", "library"].startswith("flashbax.") and used["torch", "library"].startswith("torchrl.")
    assert used["jax_linen", "own"] == used["torch", "own"] == ""
    torchrl = next(r for r in result["runs"] if (r["variant"], r["buffer"]) == ("torch", "library"))
    assert torchrl["library"]["rows_stored"] == torchrl["env_steps"]  # every transition, the buffer not yet full


@pytest.mark.slow  # the study's smoke run: four trainings, about 50 s on 2 cores
def test_torchrls_buffer_draws_the_same_rows_as_sac_torchs(quick):
    """torchrl's sampler draws its rows by torch.randint from torch's generator, as sac_torch.py's buffer does: with
    the same seed the two runs train alike, loss for loss. (flashbax splits its key: the JAX runs need not agree.)"""
    result, _ = quick
    torch_runs = {r["buffer"]: r for r in result["runs"] if r["variant"] == "torch"}
    assert torch_runs["own"]["losses"] == torch_runs["library"]["losses"]
    assert torch_runs["own"]["torch_threads"] == torch_runs["library"]["torch_threads"]


@pytest.mark.slow  # the study's smoke run: four trainings, about 50 s on 2 cores
def test_each_ratio_is_the_library_over_the_own_buffer_and_holds_in_its_interval(quick):
    result, printed = quick
    for variant, library in (("jax_linen", "flashbax"), ("torch", "torchrl")):
        row = result["variants"][variant]
        steady = {r["buffer"]: r["steady_s"] for r in result["runs"] if r["variant"] == variant}
        assert row["library"] == library and row["ratio"] == pytest.approx(steady["library"] / steady["own"])
        low, high = row["ci"]
        assert low is None or low <= row["ratio"] <= high
        assert f"| {variant} | {library} |" in printed and f"{row['ratio']:.3f}" in printed
    for name in ("flashbax", "torchrl", "tensordict"):
        assert result["versions"][name][0].isdigit()
    assert result["settings"]["total_timesteps"] == 64 + 20 * 3


def test_the_ratio_over_blocks_is_a_geometric_mean_with_its_interval_and_verdict():
    from studies.replay_buffers import ratio

    even = ratio([1.1, 0.9, 1.05, 0.95, 1.02, 0.98])
    assert even["ratio"] == pytest.approx(np.exp(np.mean(np.log([1.1, 0.9, 1.05, 0.95, 1.02, 0.98]))))
    assert even["ci"][0] < even["ratio"] < even["ci"][1] and even["verdict"] == "no difference detected"
    slower = ratio([1.5, 1.6, 1.55, 1.45, 1.52, 1.58])
    assert 1 < slower["ci"][0] < slower["ratio"] < slower["ci"][1] and slower["verdict"] == "library slower"
    assert ratio([0.5, 0.52, 0.49])["verdict"] == "library faster"
    assert ratio([1.2, 1.3])["verdict"] == "too few blocks" and ratio([1.2])["ci"] == [None, None]


def test_a_renamed_buffer_in_a_script_fails_the_swap_instead_of_timing_the_scripts_own():
    from studies.replay_buffers import replace

    script = types.SimpleNamespace(__file__="sac_x.py", store=None)
    with pytest.raises(SystemExit, match="has no sample to replace"):
        replace(script, "sample", lambda: None)


@pytest.mark.parametrize(
    "flags, problem",
    [
        (["--one", "jax_nnx", "own"], "--one: jax_nnx is not one of jax_linen, torch"),
        (["--one", "torch", "theirs"], "--one: theirs is not one of own, library"),
        (["--blocks", "0"], "--blocks 0: at least 1"),
        (["--buffer-size", "0"], "--buffer-size 0: at least 1"),
    ],
)
def test_bad_input_is_refused_in_one_line_and_writes_nothing(flags, problem, tmp_path):
    out = tmp_path / "result.json"
    proc = study(*flags, "--out", str(out), "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 2 and problem in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_cannot_be_written_is_refused_before_any_run(tmp_path):
    proc = study("--quick", "--out", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and "cannot be written" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
