"""bench/run_costs.py: the estimate a sweep prints before it starts, from the costs of runs measured before."""

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("run_costs", ROOT / "bench" / "run_costs.py")
run_costs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_costs)

TABLE = {
    "cpu": "Test CPU",
    "startup_s": {"jax": 5.0, "torch": 8.0},
    "cells": [
        {"variant": "jax_linen", "env": "CartPole-v1", "size": "s", "setup_s": 1.0, "first_s": 2.0, "later_s": 0.5},
        {"variant": "jax_linen", "env": "Breakout-MinAtar", "size": "s", "setup_s": 1.0, "first_s": 2.0, "later_s": 1.5},
        {"variant": "torch", "env": "CartPole-v1", "size": "s", "setup_s": 1.0, "first_s": 1.0, "later_s": 1.0},
    ],
}


def test_a_run_costs_start_up_setup_iteration_0_and_its_later_iterations():
    estimator = run_costs.Estimator(TABLE)
    assert estimator.seconds("jax_linen", "CartPole-v1", "s", 21) == 5 + 1 + 2 + 20 * 0.5
    assert estimator.seconds("torch", "CartPole-v1", "s", 3) == 8 + 1 + 1 + 2 * 1.0
    # torch never ran Breakout-MinAtar: its typical cell, with later iterations as much dearer as jax_linen's were
    # there than over its environments (1.5 s against the median of 0.5 and 1.5: 1.5x).
    assert estimator.seconds("torch", "Breakout-MinAtar", "s", 3) == pytest.approx(8 + 1 + 1 + 2 * 1.0 * 1.5)
    assert estimator.seconds("torch", "CartPole-v1", "m", 3) is None
    # 4 seeds at once (--num-seeds 4): 4 times the later iterations of one; start-up, setup and iteration 0 once
    assert estimator.seconds("jax_linen", "CartPole-v1", "s", 21, seeds=4) == 5 + 1 + 2 + 20 * 0.5 * 4


def test_an_env_measured_at_another_size_adds_what_it_added_there():
    """An expensive env measured at s only: at m, the variant's typical m cell plus the seconds the env added at s
    (its step costs the same whatever the network); a ratio would multiply the network's time by the env's."""
    m = {"variant": "jax_linen", "env": "CartPole-v1", "size": "m", "setup_s": 1.5, "first_s": 3.0, "later_s": 2.0}
    craftax = {"variant": "jax_linen", "env": "Craftax", "size": "s", "setup_s": 3.0, "first_s": 40.0, "later_s": 12.0}
    estimator = run_costs.Estimator({**TABLE, "cells": [*TABLE["cells"], m, craftax]})
    # at s, jax_linen's typical cell: the medians over CartPole, Breakout and Craftax (1, 2 and 1.5 s)
    added = {"setup_s": 3.0 - 1.0, "first_s": 40.0 - 2.0, "later_s": 12.0 - 1.5}
    expected = 5 + (1.5 + added["setup_s"]) + (3.0 + added["first_s"]) + 15 * (2.0 + added["later_s"])
    assert estimator.seconds("jax_linen", "Craftax", "m", 16) == pytest.approx(expected)


def test_the_estimate_line_counts_days_and_names_what_it_cannot_estimate(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps(TABLE))
    line = run_costs.estimate(["jax_linen CartPole-v1 s 21"] * 200, costs)  # 200 x 18 s = 1:00
    assert line == run_costs.estimate(["jax_linen CartPole-v1 s 21 1"] * 200, costs)  # one seed a run
    assert run_costs.estimate(["jax_linen CartPole-v1 s 21 4"] * 100, costs).startswith("estimated 1:20 (h:mm)")
    assert line == "estimated 1:00 (h:mm) for 200 runs, from runs measured on Test CPU"
    assert run_costs.estimate(["jax_linen CartPole-v1 s 21"] * 200, costs, at_once=2).startswith(
        "estimated 0:30 (h:mm) for 200 runs, 2 at a time"
    )
    line = run_costs.estimate(["jax_linen CartPole-v1 s 14385"] * 12 + ["torch CartPole-v1 l 3"], costs)  # 12 x 7200 s
    assert line.startswith("estimated 1 day 0:00 (h:mm) for 12 runs,") and line.endswith(
        "no measured cost for torch at size l: their runs are not counted"
    )


def test_an_estimate_for_a_gpu_is_derived_from_the_cpu_costs_and_says_so(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps(TABLE))
    # torch never ran at size m, nor its setting torch+graphs anywhere: on the CPU neither is counted; for a GPU every
    # size is priced as size s, and the setting as its script: 150 x (8 + 1 + 1 + 2 x 1.0) s = 0:30.
    lines = ["torch CartPole-v1 m 3"] * 100 + ["torch+graphs CartPole-v1 l 3"] * 50
    assert run_costs.estimate(lines, costs).startswith("estimated 0:00 (h:mm) for 0 runs")
    assert run_costs.estimate(lines, costs, gpu=True) == (
        "estimated 0:30 (h:mm) for 150 runs; estimate from CPU costs; a GPU will differ"
        " (runs measured on Test CPU, every size priced as size s)"
    )
    assert run_costs.estimate(lines, costs, gpu=True, source=False) == "estimated 0:30 (h:mm) for 150 runs"


def test_the_table_is_built_from_one_cpu_models_records_only(tmp_path):
    for i, model in enumerate(["CPU A", "CPU B"]):
        record = {
            "status": "ok",
            "variant": "torch",
            "env_id": "CartPole-v1",
            "hidden": [64, 64],
            "args": {"num_envs": 32},
            "cpu": {"model": model},
            "setup_duration": 1.0,
            "iteration_durations": [2.0, 0.5, 0.7],
        }
        (tmp_path / f"r{i}.json").write_text(json.dumps(record))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run_costs.py"), "build", str(tmp_path), "--out", str(tmp_path / "t.json")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "2 CPU models" in proc.stderr and not (tmp_path / "t.json").exists()
    (tmp_path / "r1.json").unlink()
    (tmp_path / "t.json").write_text(json.dumps({"startup_s": {"torch": 7.0}}))
    table = run_costs.build([tmp_path], tmp_path / "t.json", {"torch": 7.0})
    assert table["cpu"] == "CPU A" and table["cells"] == [
        {"variant": "torch", "env": "CartPole-v1", "size": "s", "runs": 1, "setup_s": 1.0, "first_s": 2.0, "later_s": 0.6}
    ]
