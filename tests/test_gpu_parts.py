"""The gpu preset in sittings: `--part next` continues the sweep where records are missing, on this machine or on
another with the same GPU model (a block begun elsewhere is timed again here, whole), and never on another model."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_benchmark import BENCHMARK, FAKE, listing, run_files

H200 = "NVIDIA H200"


def gpu_machine(directory: Path, gpu: str = H200, host: str = "") -> dict:
    """The environment of a machine whose nvidia-smi lists one GPU of this model; its runs (the fake variant's) name
    that GPU and, if given, another host than this one; env_cost.py and the host-cost probe are only logged."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "nvidia-smi").write_text(f'#!/bin/sh\ncase "$*" in *name*) echo "{gpu}";; *) echo 0;; esac\n')
    python = bin_dir / "python"
    python.write_text(
        f'#!/bin/sh\ncase "$1" in */ppo_*.py|*/sac_*.py|*/td3_*.py) exec "{sys.executable}" "{FAKE}" "$@";;\n'
        f'  */env_cost.py|*/host_cost.py|*/handover.py) echo "$*" >>"{directory / "measures"}"; exit 0;; esac\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": ""}
    env |= {"PYTHON": str(python), "FAKE_GPU": gpu, **({"FAKE_HOST": host} if host else {})}
    return env


def gpu_sweep(out: Path, env: dict, *flags) -> subprocess.CompletedProcess:
    command = ["bash", str(BENCHMARK), "--preset", "gpu", "--out", str(out), *flags]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def part_of(stdout: str) -> tuple:
    """(the part a sweep runs, of how many), from its first line."""
    found = re.search(r"part (\d+) of (\d+)", stdout.splitlines()[0])
    return int(found.group(1)), int(found.group(2))


@pytest.mark.slow  # about a minute of fake sweeps on 2 cores; test_part_next_says_when_every_part_is_done runs --part next by default
def test_part_next_continues_on_a_second_machine_of_the_same_gpu_model_and_no_other(tmp_path):
    out = tmp_path / "out"
    elsewhere = gpu_machine(tmp_path / "first", host="first-gpu-host")
    ran = gpu_sweep(out, elsewhere, "--part", "next")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert part_of(ran.stdout)[0] == 1
    first = set(run_files(out))
    assert first and all(r["host"] == "first-gpu-host" and r["device"] == H200 for r in run_files(out).values())
    # the next part is the first whose records are missing; part 1 is done, and says so
    assert part_of(gpu_sweep(out, elsewhere, "--part", "next", "--dry-run").stdout)[0] == 2
    assert "summary: ran 0," in gpu_sweep(out, elsewhere, "--part", "1").stdout
    # part 2 made on that machine, one of its runs then lost: its block is begun there and unfinished
    assert gpu_sweep(out, elsewhere, "--part", "2").returncode == 0
    second = sorted(set(run_files(out)) - first)
    lost = out / second[0]
    block = [name for name in second if name.split("__", 1)[1] == second[0].split("__", 1)[1]]
    assert len(block) > 2  # every variant of one env, size and seed
    lost.unlink()

    # Another machine with the same GPU model (this one) goes on with part 2: that whole block again, here.
    here = gpu_machine(tmp_path / "second")
    planned = gpu_sweep(out, here, "--part", "next", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert part_of(planned.stdout)[0] == 2
    again = re.findall(r"^\[\d+/\d+\] redo +(\S+) .*\(elsewhere: timed on first-gpu-host", planned.stdout, re.M)
    assert sorted(f"{name}.json" for name in again) == sorted(set(block) - {second[0]})
    assert "records are of blocks begun on another machine and not finished" in planned.stdout
    resumed = gpu_sweep(out, here, "--part", "next")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = run_files(out)
    assert all(records[name]["host"] != "first-gpu-host" for name in block)  # the block timed here, whole
    assert all(records[name]["host"] == "first-gpu-host" for name in set(second) - set(block))  # the rest kept
    assert part_of(gpu_sweep(out, here, "--part", "next", "--dry-run").stdout)[0] == 3

    # A machine with another GPU model is refused before anything runs, in one line.
    before = {name: json.dumps(r) for name, r in run_files(out).items()}
    other = gpu_sweep(out, gpu_machine(tmp_path / "third", gpu="NVIDIA H100 80GB HBM3"), "--part", "next")
    assert other.returncode == 2 and other.stdout == "" and other.stderr.count("\n") == 1, other.stderr
    assert f"was timed on an {H200}, and this machine has NVIDIA H100 80GB HBM3" in other.stderr
    assert {name: json.dumps(r) for name, r in run_files(out).items()} == before


@pytest.mark.slow  # a fake sweep part by part: 15 s on 2 cores
def test_part_next_says_when_every_part_is_done(tmp_path):
    out = tmp_path / "out"
    env = gpu_machine(tmp_path / "gpu")
    flags = ["--experiments", "compile", "--sizes", "s"]  # one small part
    assert gpu_sweep(out, env, *flags, "--part", "next").returncode == 0
    done = gpu_sweep(out, env, *flags, "--part", "next")
    assert done.returncode == 0 and "every part of the 1 is done" in done.stdout and "ran 0" in done.stdout
    assert listing(gpu_sweep(out, env, *flags, "--part", "next", "--dry-run").stdout) == []


@pytest.mark.slow  # about a minute of fake sweeps on 2 cores; tests/test_variants.py holds the setting's flags by default
def test_a_setting_made_by_the_environment_runs_under_it_beside_its_script_as_one_machine(tmp_path):
    """XLA's command buffers for loops: in the sync blocks beside each JAX script, never in overall; its runs get the
    setting's XLA_FLAGS after the sweep's own, and its records count as its script's machine, not stale, not another."""
    out, env = tmp_path / "out", gpu_machine(tmp_path / "gpu") | {"XLA_FLAGS": "--xla_dump_to=/dev/null"}
    # one seed: a block of each experiment, every script in it (a JAX one and torch), is all the property needs
    flags = ["--experiments", "overall,sync", "--envs", "CartPole-v1", "--sizes", "s", "--variants", "jax_linen,torch"]
    flags += ["--repeats", "1"]
    planned = listing(gpu_sweep(out, env, *flags, "--dry-run").stdout)
    assert [n for n in planned if "+cmdbuf" in n] == ["sync/jax_linen+cmdbuf__CartPole-v1__s__seed1"]
    assert {n.split("/")[0] for n in planned} == {"overall", "sync"} and any("torch__" in n for n in planned)
    ran = gpu_sweep(out, env, *flags)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    records = run_files(out)
    setting = "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL"
    for name, record in records.items():
        expected = f"--xla_dump_to=/dev/null {setting}" if "+cmdbuf__" in name else "--xla_dump_to=/dev/null"
        assert record["xla_flags"] == expected, name
    again = gpu_sweep(out, env, *flags, "--dry-run")  # every record done, none stale
    assert again.returncode == 0 and ", 0 to run" in again.stdout and "stale" not in again.stdout, again.stdout
    other = gpu_sweep(out, {**env, "XLA_FLAGS": setting}, *flags)  # the setting alone, for every run
    assert other.returncode == 2 and "was timed with XLA_FLAGS=--xla_dump_to=/dev/null" in other.stderr
