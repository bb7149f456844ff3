"""bench/run_costs.py: the estimate a sweep prints before it starts, from the costs of runs measured before."""

import json
import subprocess
import sys

import pytest

from bench import run_costs
from conftest import ROOT

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
    # torch never ran Breakout-MinAtar: its typical cell, plus what Breakout added to jax_linen's run (later
    # iterations of 1.5 s against its median of 0.5 and 1.5 s: 0.5 s more; setup and iteration 0 nothing).
    assert estimator.seconds("torch", "Breakout-MinAtar", "s", 3) == pytest.approx(8 + 1 + 1 + 2 * (1.0 + 0.5))
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


def test_an_env_other_variants_ran_adds_the_median_of_what_it_added_to_theirs():
    """jax_nnx never ran Craftax, jax_linen and torch did at s: its typical cell plus the median over those two of what
    Craftax added to setup, iteration 0 and later iterations (not its later iterations times a ratio of theirs)."""
    nnx = {"variant": "jax_nnx", "env": "CartPole-v1", "size": "s", "setup_s": 1.0, "first_s": 2.0, "later_s": 0.4}
    linen = {"variant": "jax_linen", "env": "Craftax", "size": "s", "setup_s": 11.0, "first_s": 62.0, "later_s": 21.0}
    torch = {"variant": "torch", "env": "Craftax", "size": "s", "setup_s": 21.0, "first_s": 81.0, "later_s": 31.0}
    estimator = run_costs.Estimator({**TABLE, "cells": [*TABLE["cells"], nnx, linen, torch]})
    # typical at s: jax_linen over CartPole, Breakout and Craftax (1, 2, 1.5 s), torch over CartPole and Craftax
    added_linen = {"setup_s": 11.0 - 1.0, "first_s": 62.0 - 2.0, "later_s": 21.0 - 1.5}
    added_torch = {"setup_s": 21.0 - 11.0, "first_s": 81.0 - 41.0, "later_s": 31.0 - 16.0}
    added = {key: (added_linen[key] + added_torch[key]) / 2 for key in added_linen}  # the median of two
    expected = 5 + (1.0 + added["setup_s"]) + (2.0 + added["first_s"]) + 7 * (0.4 + added["later_s"])
    assert estimator.seconds("jax_nnx", "Craftax", "s", 8) == pytest.approx(expected)


def test_the_estimate_line_counts_days_and_names_what_it_cannot_estimate(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps(TABLE))
    line = run_costs.estimate(["jax_linen CartPole-v1 s 21"] * 200, costs, cpu="Test CPU")  # 200 x 18 s = 1:00
    assert line == run_costs.estimate(["jax_linen CartPole-v1 s 21 1"] * 200, costs, cpu="Test CPU")  # one seed a run
    assert run_costs.estimate(["jax_linen CartPole-v1 s 21 4"] * 100, costs).startswith("estimated 1:20 (h:mm)")
    assert line == "estimated 1:00 (h:mm) for 200 runs, from runs measured on Test CPU"
    assert run_costs.estimate(["jax_linen CartPole-v1 s 21"] * 200, costs, at_once=2).startswith(
        "estimated 0:30 (h:mm) for 200 runs, 2 at a time"
    )
    line = run_costs.estimate(["jax_linen CartPole-v1 s 14385"] * 12 + ["torch CartPole-v1 l 3"], costs)  # 12 x 7200 s
    assert line.startswith("estimated 1 day 0:00 (h:mm) for 12 runs,") and line.endswith(
        "no measured cost for torch at size l: their runs are not counted"
    )


def test_an_environment_no_run_ever_measured_is_named_in_the_estimate(tmp_path):
    """An env no table holds (one never timed on any machine) is priced as a typical one, which may be far too low for
    a dear step: the estimate says so, naming it, and says nothing of the envs it has measured."""
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps(TABLE))
    line = run_costs.estimate(["torch Craftax-Symbolic-v1 s 6", "jax_linen CartPole-v1 s 6"], costs, cpu="Test CPU")
    assert line.endswith("; Craftax-Symbolic-v1 never measured: priced as a typical environment, too low if its step is dear")
    assert "never measured" not in run_costs.estimate(["torch Breakout-MinAtar s 6"], costs, cpu="Test CPU")


def test_an_estimate_for_a_gpu_is_derived_from_the_cpu_costs_and_says_so(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps(TABLE))
    # torch never ran at size m, nor its setting torch+graphs anywhere: on the CPU neither is counted; for a GPU every
    # size is priced as size s, and the setting as its script: 150 x (8 + 1 + 1 + 2 x 1.0) s = 0:30.
    lines = ["torch CartPole-v1 m 3"] * 100 + ["torch+graphs CartPole-v1 l 3"] * 50
    assert run_costs.estimate(lines, costs).startswith("no estimate: no measured cost for torch at size l, torch at size m (")
    assert run_costs.estimate(lines, costs, gpu=True) == (
        "estimated 0:30 (h:mm) for 150 runs; estimate from CPU costs; a GPU will differ"
        " (runs measured on Test CPU, every size priced as size s)"
    )
    assert run_costs.estimate(lines, costs, gpu=True, source=False) == "estimated 0:30 (h:mm) for 150 runs"


def torch_record(model: str, durations: list) -> dict:
    """An ok record of torch on CartPole-v1 at size s, made on `model`."""
    return {
        "status": "ok",
        "variant": "torch",
        "env_id": "CartPole-v1",
        "hidden": [64, 64],
        "args": {"num_envs": 32},
        "cpu": {"model": model},
        "setup_duration": 1.0,
        "iteration_durations": durations,
    }


def test_the_table_is_built_from_one_cpu_models_records_only(tmp_path):
    for i, model in enumerate(["CPU A", "CPU B"]):
        (tmp_path / f"r{i}.json").write_text(json.dumps(torch_record(model, [2.0, 0.5, 0.7])))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run_costs.py"), "build", str(tmp_path), "--out", str(tmp_path / "t.json")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "2 machine models" in proc.stderr and not (tmp_path / "t.json").exists()
    (tmp_path / "r1.json").unlink()
    (tmp_path / "t.json").write_text(json.dumps({"startup_s": {"torch": 7.0}}))
    table = run_costs.build([tmp_path], tmp_path / "t.json", {"torch": 7.0})
    assert table["cpu"] == "CPU A" and table["cells"] == [
        {"variant": "torch", "env": "CartPole-v1", "size": "s", "runs": 1, "setup_s": 1.0, "first_s": 2.0, "later_s": 0.6}
    ]


FAST = {  # another machine's table: half the reference's seconds where it measured the same cell, and fewer cells
    "cpu": "Fast CPU",
    "startup_s": {"jax": 4.0},
    "cells": [
        {"variant": "jax_linen", "env": "CartPole-v1", "size": "s", "setup_s": 0.5, "first_s": 1.0, "later_s": 0.25},
        {"variant": "jax_linen", "env": "Acrobot-v1", "size": "s", "setup_s": 0.5, "first_s": 1.5, "later_s": 0.3},
    ],
}


def test_a_cell_this_machines_table_lacks_is_the_fuller_tables_scaled_to_this_machine():
    estimator = run_costs.Estimator(FAST, TABLE)
    assert estimator.seconds("jax_linen", "CartPole-v1", "s", 21) == 4 + 0.5 + 1.0 + 20 * 0.25  # its own cell
    assert estimator.seconds("jax_linen", "Acrobot-v1", "s", 21) == 4 + 0.5 + 1.5 + 20 * 0.3  # only it measured
    # torch: the reference's cell, each part times the one ratio of the cells both measured (CartPole-v1: 0.5), with the
    # reference's start-up where this machine measured none
    assert estimator.seconds("torch", "CartPole-v1", "s", 3) == pytest.approx(8 + 0.5 + 0.5 + 2 * 0.5)
    # Breakout-MinAtar at s, which only the reference measured: its 1.5 s later iteration scaled
    assert estimator.seconds("jax_linen", "Breakout-MinAtar", "s", 3) == pytest.approx(4 + 0.5 + 1.0 + 2 * 0.75)


def test_the_estimate_comes_from_this_machines_table_and_names_the_machine_it_comes_from(tmp_path):
    for table in (TABLE, FAST):
        (tmp_path / f"{table['cpu']}.json").write_text(json.dumps(table))
    lines = ["jax_linen CartPole-v1 s 21"] * 200 + ["torch CartPole-v1 s 3"] * 100
    # on Fast CPU: 200 x 10.5 s + 100 x 10 s = 52 min; the torch cells from Test CPU's, scaled
    assert run_costs.estimate(lines, tmp_path, cpu="Fast CPU") == (
        "estimated 0:52 (h:mm) for 300 runs, from runs measured on Fast CPU (what it lacks, from Test CPU, scaled)"
    )
    # on a machine with no table of its own: the fullest table, said to be another machine's (here it lacks nothing)
    assert run_costs.estimate(lines, tmp_path, cpu="Slow CPU") == (
        "estimated 1:20 (h:mm) for 300 runs, from runs measured on Test CPU, not on this CPU"
        " (what it lacks, from Fast CPU, scaled)"
    )
    assert run_costs.estimate(lines, tmp_path, cpu="Test CPU").startswith("estimated 1:20 (h:mm) for 300 runs, from runs")


def test_a_cell_neither_table_measured_is_derived_from_both():
    """The reference machine ran jax_nnx, this one an expensive env that jax_nnx never ran: jax_nnx's cells from the
    reference, scaled to this machine, plus what the env added to jax_linen's run here."""
    craftax = {"variant": "jax_linen", "env": "Craftax", "size": "s", "setup_s": 10.5, "first_s": 61.0, "later_s": 20.25}
    nnx = {"variant": "jax_nnx", "env": "CartPole-v1", "size": "s", "setup_s": 1.0, "first_s": 2.0, "later_s": 0.4}
    estimator = run_costs.Estimator({**FAST, "cells": [*FAST["cells"], craftax]}, {**TABLE, "cells": [*TABLE["cells"], nnx]})
    # this machine's jax_linen at half the reference's time (the CartPole cell both measured), for every variant;
    # jax_linen's typical cell here: the medians over CartPole, Acrobot, Craftax and the reference's Breakout scaled
    typical_linen = {"setup_s": 0.5, "first_s": 1.25, "later_s": 0.525}
    added = {key: craftax[key] - typical_linen[key] for key in typical_linen}
    expected = 4 + (0.5 + added["setup_s"]) + (1.0 + added["first_s"]) + 7 * (0.2 + added["later_s"])
    assert estimator.seconds("jax_nnx", "Craftax", "s", 8) == pytest.approx(expected)


def test_each_committed_table_is_kept_under_its_own_cpu_models_name():
    tables = sorted(run_costs.COSTS.glob("*.json"))
    assert tables
    for path in tables:
        table = json.loads(path.read_text())
        assert run_costs.table_path(table["cpu"]) == path
        assert len({(c["variant"], c["env"], c["size"]) for c in table["cells"]}) == len(table["cells"])


def test_a_table_built_without_out_goes_to_its_cpu_models_file(tmp_path, monkeypatch):
    monkeypatch.setattr(run_costs, "COSTS", tmp_path / "costs")
    (tmp_path / "r.json").write_text(json.dumps(torch_record("AMD EPYC (family 25, model 17)", [2.0, 0.5])))
    run_costs.build([tmp_path])
    written = json.loads((tmp_path / "costs" / "amd-epyc-family-25-model-17.json").read_text())
    assert written["cpu"] == "AMD EPYC (family 25, model 17)" and written["cells"][0]["later_s"] == 0.5


def test_each_variant_is_scaled_by_its_own_ratio_where_both_machines_ran_it():
    """torch ran at the same speed on both machines and jax_linen at half: torch's missing cells are not halved."""
    torch_too = {"variant": "torch", "env": "CartPole-v1", "size": "s", "setup_s": 1.0, "first_s": 1.0, "later_s": 1.0}
    breakout = {"variant": "torch", "env": "Breakout-MinAtar", "size": "s", "setup_s": 1.0, "first_s": 1.0, "later_s": 3.0}
    estimator = run_costs.Estimator(
        {**FAST, "startup_s": {"jax": 4.0, "torch": 8.0}, "cells": [*FAST["cells"], torch_too]},
        {**TABLE, "cells": [*TABLE["cells"], breakout]},
    )
    assert estimator.seconds("torch", "Breakout-MinAtar", "s", 3) == pytest.approx(8 + 1.0 + 1.0 + 2 * 3.0)
    assert estimator.seconds("jax_linen", "Breakout-MinAtar", "s", 3) == pytest.approx(4 + 0.5 + 1.0 + 2 * 0.75)


def test_an_off_policy_run_is_priced_whole_by_its_name_but_the_seed_not_as_a_ppo_script_of_its_variants_name(tmp_path):
    """A TD3 learn run of torch: its earlier runs' median whole duration and torch's start-up, though PPO's torch (a
    different script under the same variant name) costs far less; a run no earlier one shares a name with is named."""
    records = tmp_path / "records" / "learn"
    records.mkdir(parents=True)
    for seed, seconds in ((1, 700.0), (2, 900.0), (3, 800.0)):
        record = {**torch_record("Test CPU", [3.0, 1.0]), "algorithm": "td3", "total_duration": seconds}
        (records / f"torch__Swimmer-misc__s__seed{seed}.json").write_text(json.dumps(record))
    table = run_costs.build([tmp_path / "records"], tmp_path / "t.json", {"torch": 8.0})
    assert table["runs"] == {"td3 learn/torch__Swimmer-misc__s": {"runs": 3, "total_s": 800.0}} and table["cells"] == []
    costs = tmp_path / "costs"
    costs.mkdir()
    (costs / "t.json").write_text(json.dumps({**TABLE, "runs": table["runs"]}))
    lines = ["run torch td3 learn/torch__Swimmer-misc__s__seed4", "run torch td3 learn/torch__Swimmer-misc__s__seed5"]
    assert run_costs.estimate(lines, costs, source=False, cpu="Test CPU").startswith("estimated 0:27 (h:mm) for 2 runs")
    line = run_costs.estimate([*lines, "run jax dqn overall/jax_linen__CartPole-v1__d__n0001__seed1"], costs, cpu="Test CPU")
    assert "for 2 runs" in line and "no measured cost for dqn overall/jax_linen__CartPole-v1__d__n0001" in line
    # none of the runs priced: no "estimated 0:00 for 0 runs", which reads as a sweep that costs nothing
    line = run_costs.estimate(["run jax dqn learn/jax_linen__CartPole-v1__d__seed3"], costs, cpu="Test CPU")
    assert line.startswith("no estimate: no measured cost for dqn learn/jax_linen__CartPole-v1__d (") and "0:00" not in line


def test_a_preset_of_td3_runs_is_estimated_from_td3s_records_not_ppos():
    """The committed tables hold the td3-learn runs: its estimate is theirs (each about 10-90 s), not PPO's."""
    from bench.plan import load

    loaded = load(["--preset", "td3-learn", "--out", "/nonexistent/out", "--dry-run"])
    prices = run_costs.Prices(run_costs.COSTS, cpu="AMD EPYC (family 25, model 1)")
    seconds = [prices.run_seconds(run_costs.run_key("td3", r.name), "torch") for r in loaded.runs]
    assert all(s is not None for s in seconds) and max(seconds) > 60


def test_a_setting_measured_at_another_size_only_is_priced_as_its_script_at_the_runs_size(tmp_path):
    """An env stack measured at s (torch+gymnasium) has a price at m: its script's, not "not counted"."""
    m = {"variant": "torch", "env": "CartPole-v1", "size": "m", "setup_s": 1.0, "first_s": 2.0, "later_s": 3.0}
    stack = {"variant": "torch+gymnasium", "env": "CartPole-v1", "size": "s", "setup_s": 1.0, "first_s": 1.0, "later_s": 9.0}
    (tmp_path / "t.json").write_text(json.dumps({**TABLE, "cells": [*TABLE["cells"], m, stack]}))
    prices = run_costs.Prices(tmp_path / "t.json", cpu="Test CPU")
    assert prices.seconds("torch+gymnasium", "CartPole-v1", "m", 3) == pytest.approx(8 + 1 + 2 + 2 * 3.0)
    assert prices.seconds("torch+gymnasium", "CartPole-v1", "s", 3) == pytest.approx(8 + 1 + 1 + 2 * 9.0)
