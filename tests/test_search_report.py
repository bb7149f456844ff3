"""report.search and plot.py on the search preset's records: seconds a configuration, configurations an hour, ratios
per block; a batch's record read by the search experiment alone."""

import json
import math
import subprocess
import sys

from conftest import ROOT
from report import records, search

CONFIG = {"learning_rate": 1e-3, "gamma": 0.99, "gae_lambda": 0.95, "clip_coef": 0.2}


def record(variant, seed, n, total, experiment="search"):
    """A schema-2 record of a run that trained n configurations at once (n > 1: a batch) in `total` seconds."""
    args = {"exp_name": experiment, "num_envs": 32, "num_steps": 256, "configs": "batch.json" if n > 1 else None}
    return {
        "schema_version": 2,
        "variant": variant,
        "status": "ok",
        "env_id": "CartPole-v1",
        "seed": seed,
        "sync_timing": False,
        "hidden": [64, 64],
        "args": args,
        "device": "cpu",
        "cpu": {"model": "Test CPU (family 1, model 2)", "cores": 2},
        "versions": {"python": "3.11", "jax": "0.10.2"},
        "env_steps": 3 * 32 * 256,
        "param_count": 9155,
        "setup_duration": 0.1 * total,
        "iteration_durations": [0.5 * total, 0.2 * total, 0.2 * total],
        "total_duration": total,
        "compiles_after_first_iteration": 0,
        "peak_host_memory_mb": 500.0 + n,
        "episodic_return": [[10.0, 20.0, 30.0]] * n if n > 1 else [10.0, 20.0, 30.0],
        "final_return": [30.0] * n if n > 1 else 30.0,
        "final_window": 1,
        **({"configs": [CONFIG] * n} if n > 1 else {}),
    }


# a block's seconds: Linen one configuration 10 s, a batch of 8 in 40 s, torch one in 20 s; the machine's speed
# drifts from block to block by the same factor for all, so every ratio within a block is exact
CELLS = [("jax_linen", 1, 10.0), ("jax_linen", 8, 40.0), ("torch", 1, 20.0)]
DRIFT = {1: 1.0, 2: 1.3, 3: 0.8, 4: 1.1}


def write_sweep(directory):
    for seed, drift in DRIFT.items():
        for variant, n, total in CELLS:
            path = directory / "search" / f"{variant}__CartPole-v1__s__k{n:03d}__seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record(variant, seed, n, total * drift)))


def test_seconds_a_configuration_and_the_ratios_come_from_each_block(tmp_path):
    write_sweep(tmp_path)
    runs, _ = records.load_runs(tmp_path)
    found = search.search(runs)
    rows = {(r["variant"], r["configurations"]): r for r in found["rows"]}
    assert found["blocks"] == 4 and set(rows) == {("jax_linen", 1), ("jax_linen", 8), ("torch", 1)}
    batch, torch = rows["jax_linen", 8], rows["torch", 1]
    assert math.isclose(batch["over_own_one"]["ratio"], 0.5) and math.isclose(batch["over_reference_one"]["ratio"], 0.5)
    assert math.isclose(torch["over_reference_one"]["ratio"], 2.0) and torch["over_own_one"] is None
    assert batch["over_own_one"]["n_blocks"] == 4
    assert math.isclose(batch["seconds"], 5.0 * 1.05)  # the median of 5 s times the drifts 0.8, 1.0, 1.1, 1.3
    assert math.isclose(batch["per_hour"], 3600 / batch["seconds"]) and batch["host_mb_median"] == 508
    assert math.isclose(batch["first_iteration_share"], 0.5)


def test_plot_writes_the_search_section_and_figure_for_a_search_set(tmp_path):
    write_sweep(tmp_path / "in")
    done = subprocess.run(
        [sys.executable, "plot.py", str(tmp_path / "in"), "--out", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "## A search's trials" in text and "| jax_linen | 8 |" in text and (tmp_path / "out" / "search.png").exists()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {(r["variant"], r["configurations"]) for r in summary["search"]["rows"]} == {
        ("jax_linen", 1),
        ("jax_linen", 8),
        ("torch", 1),
    }


def test_a_batch_outside_the_search_experiment_is_skipped(tmp_path, capsys):
    path = tmp_path / "overall" / "jax_linen__CartPole-v1__s__seed1.json"
    path.parent.mkdir()
    path.write_text(json.dumps(record("jax_linen", 1, 8, 40.0, experiment="overall")))
    runs, failures = records.load_runs(tmp_path)
    assert runs == [] and "only the search experiment reads" in failures[0]


def test_ways_counts_each_searchs_trials_an_hour_and_when_it_first_reached_the_bar():
    from studies.search_figures import ways

    rows = [
        {"value": 100.0, "best": 100.0, "wall_seconds": 60.0},
        {"value": 480.0, "best": 480.0, "wall_seconds": 90.0, "worker": 0},
        {"value": 490.0, "best": 490.0, "wall_seconds": 120.0, "worker": 1},
    ]
    text = ways([(None, {"study": "ppo-torch-CartPole-v1", "trials": rows})], bar=475)
    assert "| ppo-torch, 2 workers | 3 | 120 | 90 | 90 s | 2 | 490.0 |" in text
