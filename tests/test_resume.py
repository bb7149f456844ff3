"""What a resumed sweep counts done: a record whose whole `args` is what the plan's command gives its run (the script's
Args defaults, with the plan's flags), and nothing else; the report reads every record the sweep counts done, as the
run it was planned as. The records here are made as the scripts make theirs: their Args parsed from the command line
by the script's own dataclass and tyro (tests/fixtures/script_args.py), without running anything."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import run_records
from bench.plan import load as load_plan
from bench.run_records import other_settings, read_status
from conftest import ROOT
from fixtures.script_args import parsed_args
from report.records import load_runs

BENCHMARK = ROOT / "benchmark.sh"


def command(run, out="/tmp/x.json") -> list:
    """The flags benchmark.sh gives the plan's run (its run_one), after the interpreter and the script."""
    fixed = ["--env-id", run.env, "--hidden", run.hidden, "--seed", run.seed, "--exp-name", run.experiment]
    return [*map(str, fixed), "--json-out", out, "--no-tensorboard", "--quiet", *run.flags.split()]


def record_of(run, *more) -> dict:
    """The ok record the run's script writes when given the plan's command and then `more` flags, complete enough for
    plot.py to read it."""
    args = parsed_args(ROOT / run.script, [*command(run), *more])
    n = args["total_timesteps"] // (args["num_envs"] * args["num_steps"])
    return {
        "schema_version": 1,
        "status": "ok",
        "variant": Path(run.script).stem.removeprefix("ppo_"),
        "env_id": args["env_id"],
        "hidden": [int(h) for h in args["hidden"].split(",")],
        "seed": args["seed"],
        "args": args,
        "device": "cpu",
        "versions": {"python": "3.11"},
        "sync_timing": args["sync_timing"],
        "env_steps": n * args["num_envs"] * args["num_steps"],
        "setup_duration": 1.0,
        "iteration_durations": [5.0] + [1.0] * (n - 1),
        "total_duration": 5.0 + n,
        "compiles_after_first_iteration": 0,
        "episodic_return": [None] * n,
        "final_return": None,
    }


def plan(*flags):
    return load_plan([*flags, "--out", "/nonexistent/out"]).runs


OVERALL = ["--preset", "quick", "--experiments", "overall", "--variants", "jax_linen"]
LEARN = ["--preset", "learn", "--variants", "jax_linen", "--envs", "CartPole-v1,Pendulum-v1", "--repeats", "1"]
# What a user changed, as seen in a --dry-run of the command that would resume: each run again, never counted done
CASES = {
    "gamma and learning rate": (
        OVERALL,
        ["--gamma", "0.5", "--learning-rate", "0.1"],
        "--learning-rate: 0.1, the plan 0.00025",
    ),
    "seeds at once": (OVERALL, ["--num-seeds", "4"], "--num-seeds: 4, the plan 1"),
    "no bootstrap": (OVERALL, ["--no-bootstrap-truncation"], "--bootstrap-truncation: False, the plan True"),
    "sync timing": (OVERALL, ["--sync-timing"], "--sync-timing: True, the plan False"),
    # the learn experiment passes no --total-timesteps: the script's 819200 is the plan's
    "512 steps": (LEARN, ["--total-timesteps", "512", "--num-envs", "8", "--num-steps", "32"], "--total-timesteps: 512"),
    # Pendulum-v1's preset flags, and a user's own on top of them
    "gae lambda": (LEARN[:-3] + ["Pendulum-v1", "--repeats", "1"], ["--gae-lambda", "0.5"], "--gae-lambda: 0.5, the plan"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_record_made_with_any_other_argument_is_stale(case):
    flags, more, why = CASES[case]
    run = plan(*flags)[0]
    assert other_settings(record_of(run), run) == ""  # made as planned: done (Pendulum's 1e-3 and 0 as numbers)
    assert why in other_settings(record_of(run, *more), run)


def test_a_resumed_sweep_names_each_record_made_otherwise_and_runs_it_again(tmp_path):
    """The issue's cases in one --dry-run each of the commands that would resume: every such record stale, not done."""
    for flags, cases in ((OVERALL, CASES_OVERALL), (LEARN, CASES_LEARN)):
        out = tmp_path / flags[1]
        runs = plan(*flags, "--repeats", str(len(cases))) if flags is OVERALL else plan(*flags)
        assert len(runs) == len(cases)
        for run, more in zip(runs, cases):
            path = out / f"{run.name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record_of(run, *more)))
        proc = subprocess.run(
            ["bash", str(BENCHMARK), *flags, *(["--repeats", str(len(cases))] * (flags is OVERALL)), "--out", str(out)]
            + ["--dry-run"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHON": sys.executable},
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert "(1 already done)" in proc.stdout, proc.stdout  # the last, made as planned
        assert f"{len(cases) - 1} records were made with other settings" in proc.stdout
        for run in runs[:-1]:
            assert re.search(rf"stale  {re.escape(run.name)} .*\(stale: --", proc.stdout), proc.stdout


CASES_OVERALL = [CASES[c][1] for c in ("gamma and learning rate", "seeds at once", "no bootstrap", "sync timing")] + [[]]
CASES_LEARN = [CASES["512 steps"][1], []]  # CartPole-v1 otherwise, Pendulum-v1 as planned


def test_a_record_the_report_would_not_read_is_not_done_and_every_done_one_is_read_as_planned(tmp_path):
    """A hand-made --num-seeds 8 --sync-timing record in overall/: the sweep once skipped it as done, and plot.py then
    dropped it. Now the sweep runs it again; a record made as planned is done, and plot.py reads it as that run."""
    run = plan(*OVERALL)[0]
    path = tmp_path / f"{run.name}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record_of(run, "--num-seeds", "8", "--sync-timing")))
    status, why = read_status(str(path), run)
    assert status == "stale" and why.startswith("--num-seeds: 8"), why
    runs, failures = load_runs(tmp_path)
    assert runs == [] and "trained 8 seeds at once" in failures[0]
    path.write_text(json.dumps(record_of(run)))
    assert read_status(str(path), run) == ("ok", "")
    (read,) = load_runs(tmp_path)[0]
    assert (read.experiment, read.variant, read.env, read.size, read.seed) == (
        run.experiment,
        run.variant,
        run.env,
        run.size,
        run.seed,
    )


def test_a_record_from_before_a_field_existed_or_with_one_the_script_dropped_is_stale():
    """A script's Args change (a field added, a default changed, one removed): its old records are not the plan's."""
    run = plan(*OVERALL)[0]
    old = record_of(run)
    del old["args"]["rollout"]
    assert other_settings(old, run) == "--rollout: not recorded, the plan scan (ppo_jax_linen.py's default)"
    dropped = record_of(run)
    dropped["args"]["lr_schedule"] = "cosine"
    assert other_settings(dropped, run) == "--lr-schedule: cosine, which ppo_jax_linen.py does not take"


def test_what_does_not_change_the_work_is_not_compared(monkeypatch):
    """Where it was written, what it printed, TensorBoard's logs; and --no-cuda where it picked no other device: on a
    machine without a GPU, a run with cuda ran on the CPU too. With a GPU here, --no-cuda's record is not the plan's."""
    run = plan(*OVERALL)[0]
    mine = record_of(run, "--tensorboard", "--no-quiet", "--json-out", "/elsewhere.json")
    assert other_settings(mine, run) == ""
    on_cpu = record_of(run, "--no-cuda")
    for gpu, why in ((False, ""), (True, "--cuda: False, the plan True (ppo_jax_linen.py's default)")):
        monkeypatch.setattr(run_records, "gpu_here", lambda gpu=gpu: gpu, raising=False)
        assert other_settings(on_cpu, run) == why


def test_a_failure_record_counts_for_its_command_on_the_scripts_defaults():
    """A failure record is done (without --retry-failed) only if its command is the plan's: another flag makes it
    stale, as one left out does."""
    run = plan(*OVERALL)[0]
    failed = {"status": "failed", "command": [sys.executable, str(ROOT / run.script), *command(run)]}
    assert other_settings(failed, run) == ""
    failed["command"] += ["--gamma", "0.5"]
    assert other_settings(failed, run) == "--gamma: 0.5, the plan 0.99 (ppo_jax_linen.py's default)"
