"""bench/host_cost.py: the torch rollout's floor (env steps and DLPack hand-overs, no network), measured and kept; the
cost of each call a rollout step or an update makes, with the verdict and a trace of one torch iteration beside it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.call_costs import CALLS, median_interval
from conftest import ROOT, in_background
from test_plot import plot, record, write  # plot.py loaded as a module; a schema-1 record plot.py reads

TOOL = [sys.executable, str(ROOT / "bench" / "host_cost.py")]
SMALL = ["--num-envs", "4", "--num-steps", "8", "--iterations", "3", "--calls", "20"]


def measure_then_add_an_env(directory: Path) -> list:
    """host_cost.py on CartPole-v1, then on CartPole-v1 and Acrobot-v1 into the same file: each run's process, the
    file it left and the trace's text."""
    out, trace = directory / "host_cost.json", directory / "host_cost.trace.json"
    runs = []
    for envs in (["CartPole-v1"], ["CartPole-v1", "Acrobot-v1"]):
        proc = subprocess.run([*TOOL, *SMALL, "--out", str(out), *envs], capture_output=True, text=True, timeout=300)
        runs.append(
            (proc, json.loads(out.read_text()) if out.exists() else None, trace.read_text() if trace.exists() else None)
        )
    return runs


@in_background(measure_then_add_an_env)
def test_measures_each_env_and_call_once_and_keeps_what_it_has(background):
    """The floor as bench/handover.py measured it; every call's cost on the CPU, the GPU's alone skipped; the verdict
    from them; the trace of one iteration beside the file; and what is there kept when an env is added."""
    (proc, record, trace), (again_proc, again, _) = background
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (record["num_envs"], record["num_steps"], record["device"]) == (4, 8, "cpu")
    floor = record["envs"]["CartPole-v1"]
    assert 0 < floor["p10_s"] <= floor["median_s"] <= floor["p90_s"] and floor["iterations"] == 3

    # A second env is added; the first and the calls are not measured again (their numbers stay as they were).
    assert again_proc.returncode == 0, again_proc.stderr[-2000:]
    assert "hand-over floor CartPole-v1" not in again_proc.stdout and "hand-over floor Acrobot-v1" in again_proc.stdout
    assert again["envs"]["CartPole-v1"] == floor and set(again["envs"]) == {"CartPole-v1", "Acrobot-v1"}
    assert "per-call costs" not in again_proc.stdout and again["calls"] == record["calls"]

    assert record["calls_setup"] == {"env_id": "CartPole-v1", "hidden": "64,64", "calls": 20}
    assert list(record["calls"]) == list(CALLS)
    for name, cost in record["calls"].items():
        if name in ("policy_graphed", "rollout_step_graphed"):  # CUDA graphs replay GPU work: no number on a CPU
            assert cost["skipped"] == "needs a GPU" and cost["calls"] == 0
            assert [v for k, v in cost.items() if k.endswith("_us")] == [None] * 4  # never a number
            assert f"{name} " in proc.stdout and "skipped: needs a GPU" in proc.stdout.split(f"{name} ")[1].splitlines()[0]
            continue
        (low, high), (host_low, host_high) = cost["ci_us"], cost["host_ci_us"]
        assert cost["skipped"] is None and cost["calls"] == 20 and 0 < low <= cost["median_us"] <= high, name
        assert 0 < host_low <= cost["host_us"] <= host_high and f"{cost['median_us']:.1f}" in proc.stdout, name
    assert record["policy_ops"] > 5 and record["launches"]["policy_eager"] is None  # nothing launched on a CPU
    assert record["verdict"].startswith("A policy step costs ") and record["verdict"] in proc.stdout
    assert "\n" not in record["verdict"] and " So " in record["verdict"]
    events = json.loads(trace)["traceEvents"]  # Chrome's trace format, as torch.profiler exports it
    assert any(e.get("name") == "aten::addmm" for e in events)  # the network ran in the traced iteration


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--calls", "0", "CartPole-v1"], "error: --calls must be positive; got 0"),
        (["--num-envs", "-1", "CartPole-v1"], "error: --num-envs must be positive; got -1"),
        # (each below loads ppo_torch.py, torch and jax, before its check: about 15 s on 2 cores)
        pytest.param(["CartPole-v1", "NoSuchEnv-v0"], "error: unsupported --env-id 'NoSuchEnv-v0'", marks=pytest.mark.slow),
        pytest.param(["--hidden", "64,x", "CartPole-v1"], "error: --hidden must be comma-separated", marks=pytest.mark.slow),
        pytest.param(
            ["--num-envs", "3", "--num-steps", "3", "CartPole-v1"], "error: num_envs * num_steps = 9", marks=pytest.mark.slow
        ),
    ],
)
def test_bad_input_is_refused_in_one_line_and_writes_nothing(flags, message, tmp_path):
    out = tmp_path / "host_cost.json"
    proc = subprocess.run([*TOOL, "--out", str(out), *flags], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(message) and "\n" not in proc.stderr.strip()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["under a file", "the trace's name taken by a directory"])
def test_an_out_or_a_trace_that_cannot_be_written_is_refused_before_the_work(where, tmp_path):
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "host_cost.trace.json").mkdir()
    out, flag = (
        (tmp_path / "notes.txt" / "host_cost.json", "--out")
        if where == "under a file"
        else (tmp_path / "host_cost.json", "--out's trace")
    )
    proc = subprocess.run([*TOOL, "--out", str(out), "CartPole-v1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {flag} ") and "cannot be written" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host_cost.trace.json", "notes.txt"]


def test_the_median_interval_is_the_order_statistics_around_it():
    assert median_interval(range(1, 21)) == (10.5, (6.0, 15.0))  # Binomial(20, 1/2): 6 and 15 hold 95% or more
    assert median_interval([3.0, 1.0, 2.0]) == (2.0, (1.0, 3.0))  # too few for more: the range


@pytest.mark.parametrize("files", [["handover.json"], ["host_cost.json"], ["handover.json", "host_cost.json"]])
def test_plot_splits_the_rollout_with_the_floor_file_there_and_names_the_tool_that_made_it(files, tmp_path):
    """host_cost.json, or the handover.json of sweeps made before the tool had its name (bench/handover.py): the
    report names the tool that measured the floor it split with; where both are there, host_cost.json's is used; the
    trace beside it is not read as a run."""
    d, cpu = tmp_path / "sweep", {"model": "AMD EPYC", "cores": 2}
    for seed in (1, 2, 3):
        for variant, iteration in (("jax_linen", 0.02), ("torch", 0.2)):
            rec = record("sync", variant, "CartPole-v1", "s", seed, total=1, iteration=iteration, sync=True)
            rec.update(schema_version=2, cpu=cpu, peak_host_memory_mb=800.0)
            write(d, f"sync/{variant}__CartPole-v1__s__seed{seed}.json", rec)
    floor = {"num_envs": 32, "num_steps": 256, "device": "cpu", "cpu": cpu}
    for name in files:
        write(d, name, {**floor, "envs": {"CartPole-v1": {"median_s": 0.03 if name == "host_cost.json" else 0.05}}})
    write(d, "host_cost.trace.json", {"traceEvents": []})
    assert plot.main([str(d)]) == 0
    (split,) = json.loads((d / "summary.json").read_text())["handover"]
    assert split["floor_s"] == (0.03 if "host_cost.json" in files else 0.05)
    text = (d / "summary.md").read_text()
    tool = "bench/host_cost.py" if "host_cost.json" in files else "bench/handover.py, since become bench/host_cost.py"
    assert f"({tool}, the median of its timed rollouts" in text and "; 0 files skipped" in text  # the trace is no run


@pytest.mark.slow  # 10-15 s on 2 cores: keeps the default run under 15 minutes
def test_a_script_loaded_by_the_tools_makes_a_craftax_env_as_it_does_when_run(tmp_path):
    """bench/host_cost.py (and the studies) load the scripts by path, from another directory: the shared modules the
    scripts import (benchback/, the Craftax adapter among them) must still be found."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from bench.load_script import load; "
        "env, params = load('ppo_jax_linen.py', 'loaded').gymnax_envs.make('Craftax-Classic-Symbolic-v1'); "
        "print(env.action_space(params).n)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.split() == ["17"], proc.stderr[-2000:]
