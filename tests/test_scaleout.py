"""benchmark.sh beyond one run at a time: --list, --task, --jobs/--devices, --slurm.

Every run is the fake variant of test_benchmark.py (tests/fixtures/fake_variant.py through a PYTHON
wrapper), so these tests take seconds. The plans time nothing that env_cost.py would measure (scaling,
learn), so no test starts JAX.
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from bench.presets import PRESETS
from test_benchmark import BENCHMARK, FAKE_PLAN, expected_fake_names, fake_python, run_files, summary, sweep

ROOT = BENCHMARK.parent
# Learn runs of two variants: a plan where --jobs may run several at once without GPUs.
LEARN_PLAN = ["--preset", "learn", "--variants", "jax_linen,torch"]


def expected_learn_names(repeats):
    return {
        f"learn/{v}__{env}__s__seed{seed}.json"
        for v in ("jax_linen", "torch")
        for env in PRESETS["learn"]["learn_envs"]
        for seed in range(1, repeats + 1)
    }


def without(*commands: str) -> str:
    """PATH without the directories that hold any of these commands (sbatch, nvidia-smi)."""
    dirs = os.environ["PATH"].split(os.pathsep)
    return os.pathsep.join(d for d in dirs if not any(os.path.exists(os.path.join(d, c)) for c in commands))


# A CPU machine: no GPUs listed anywhere, no SLURM.
CPU = {"PATH": without("nvidia-smi", "sbatch"), "CUDA_VISIBLE_DEVICES": ""}


def ledger_python(tmp_path: Path) -> tuple[str, Path]:
    """The fake interpreter, also logging each variant run's start and end (time, device, --json-out)."""
    fake, ledger = fake_python(tmp_path), tmp_path / "ledger"
    wrapper = tmp_path / "ledger-python"
    wrapper.write_text(f"""#!/bin/sh
case "$1" in */ppo_*.py) ;; *) exec "{fake}" "$@";; esac
out=$(printf '%s\\n' "$@" | sed -n '/^--json-out$/{{n;p}}')
echo "start $(date +%s.%N) ${{CUDA_VISIBLE_DEVICES:-none}} $out" >>"{ledger}"
"{fake}" "$@"; rc=$?
echo "end $(date +%s.%N) ${{CUDA_VISIBLE_DEVICES:-none}} $out" >>"{ledger}"
exit $rc
""")
    wrapper.chmod(0o755)
    return str(wrapper), ledger


def runs_of(ledger: Path) -> list[tuple[float, float, str, str]]:
    """(start, end, device, json path) of every finished run in the ledger."""
    starts, runs = {}, []
    for line in ledger.read_text().splitlines():
        event, t, device, out = line.split(" ", 3)
        if event == "start":
            starts.setdefault(out, []).append(float(t))
        else:
            runs.append((starts[out].pop(0), float(t), device, out))
            starts[out] or starts.pop(out)
    assert not starts, f"runs that never ended: {starts}"
    return runs


def listed(*flags: str, env=None) -> list[tuple[int, str]]:
    proc = sweep(*flags, "--list", env=env)
    assert proc.returncode == 0, proc.stderr
    return [(int(i), name) for i, name in (line.split(" ") for line in proc.stdout.splitlines())]


def test_list_numbers_every_run_of_the_plan_once_and_the_same_each_time(tmp_path):
    flags = ["--preset", "cpu", "--out", str(tmp_path / "out")]
    plan = listed(*flags)
    assert [i for i, _ in plan] == list(range(1, len(plan) + 1))
    names = [name for _, name in plan]
    assert len(set(names)) == len(names)
    # The same runs in the same order as --dry-run's [i/N] lines, which is the order a serial sweep runs them.
    dry = sweep(*flags, "--dry-run").stdout
    assert re.findall(r"^\[(\d+)/\d+\] \S+ +(\S+)", dry, re.M) == [(str(i), name) for i, name in plan]
    assert listed(*flags) == plan
    # Filters make another plan, numbered from 1 again.
    assert listed(*flags, "--variants", "torch", "--experiments", "scaling") == [
        (i + 1, f"scaling/torch__CartPole-v1__s__n{n:04d}__seed{seed}")
        for i, (seed, n) in enumerate((seed, n) for seed in (1, 2, 3) for n in (32, 256, 2048))
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # two processes' whole sweep, 26 s on 2 cores; the tasks' own checks below stay by default
def test_every_task_run_by_two_processes_at_once_gives_the_serial_sweeps_records_each_run_once(tmp_path):
    flags = [*FAKE_PLAN, "--repeats", "3"]
    python, ledger = ledger_python(tmp_path)
    env = {**os.environ, "PYTHON": python, "FAKE_SLEEP": "0.2"}
    serial = sweep(*flags, "--out", str(tmp_path / "serial"), env=env)
    assert serial.returncode == 0, serial.stdout + serial.stderr
    expected = run_files(tmp_path / "serial")
    assert set(expected) == expected_fake_names(3)
    ledger.unlink()

    # Both processes go through all tasks in the same order, so they ask for the same run at the same time.
    out = tmp_path / "parallel"
    n = len(expected)
    loop = f'for i in $(seq {n}); do bash "{BENCHMARK}" {" ".join(flags)} --out "{out}" --task $i || exit 1; done'
    procs = [
        subprocess.Popen(["bash", "-c", loop], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    records = run_files(out)
    assert set(records) == set(expected)
    for name, record in records.items():
        made = lambda r: (r["seed"], {k: v for k, v in r["args"].items() if k != "json_out"})  # (where it was written)
        assert record["status"] == "ok" and made(record) == made(expected[name])
    ran = sorted(os.path.relpath(path, out) for *_, path in runs_of(ledger))
    assert ran == sorted(expected)  # each run ran once, by one of the two
    stdout = outputs[0][0] + outputs[1][0]
    assert stdout.count("benchback task") == 2 * n
    assert stdout.count("ok in") == n and stdout.count("skipped: ") == n
    # The same files as the serial sweep beside the records: each run's logs.
    logs = {p.relative_to(out / "logs") for p in (out / "logs").rglob("*.std*")}
    assert logs == {p.relative_to(tmp_path / "serial" / "logs") for p in (tmp_path / "serial" / "logs").rglob("*.std*")}


def start_task(flags, env):
    return subprocess.Popen(
        ["bash", str(BENCHMARK), *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(condition, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_two_tasks_of_one_out_on_a_cpu_take_turns(tmp_path):
    """Side by side, two runs on one CPU would slow each other's timing: the second task waits for the first's run."""
    out, release = tmp_path / "out", tmp_path / "release"
    env = {**CPU, "PYTHON": fake_python(tmp_path), "FAKE_HOLD": str(release)}  # the first run waits for it
    logs = lambda: list((out / "logs").rglob("*.stdout"))
    first = start_task([*FAKE_PLAN, "--out", str(out), "--task", "1"], env)
    wait_for(lambda: len(logs()) == 1)  # its run is in flight
    said = tmp_path / "second.out"
    with open(said, "w") as stdout:
        second = subprocess.Popen(
            ["bash", str(BENCHMARK), *FAKE_PLAN, "--out", str(out), "--task", "2"], env=env, stdout=stdout
        )
    wait_for(lambda: "waiting: another --task of this OUT is running on this machine's CPU" in said.read_text())
    assert len(logs()) == 1 and second.poll() is None  # its run has not begun
    release.touch()
    assert first.wait(timeout=60) == 0 and second.wait(timeout=60) == 0
    first.stdout.close()
    first.stderr.close()
    assert len(run_files(out)) == 2 and all(r["status"] == "ok" for r in run_files(out).values())


def test_a_task_killed_mid_run_then_rerun_leaves_one_valid_record(tmp_path):
    out = tmp_path / "out"
    flags = [*FAKE_PLAN, "--out", str(out), "--task", "2"]
    name = "scaling/jax_linen__CartPole-v1__s__n0032__seed1"
    env = {**os.environ, "PYTHON": fake_python(tmp_path), "FAKE_SLEEP": "30"}
    stdout_log = out / "logs" / f"{name}.stdout"

    # Killed with everything it started, as when SLURM cancels a job or a node goes down.
    proc = start_task(flags, env)
    wait_for(stdout_log.exists)
    time.sleep(0.5)  # the variant is running
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert run_files(out) == {}
    (out / "scaling" / ".tmp-killed.json").write_text('{"status": "o')  # as if killed mid-write
    rerun = sweep(*flags, env={"PYTHON": env["PYTHON"]})
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "ok in" in rerun.stdout
    records = run_files(out)
    assert list(records) == [f"{name}.json"] and records[f"{name}.json"]["status"] == "ok"

    # Only the shell killed: its run goes on and keeps the claim; a rerun meanwhile leaves the run to it.
    out2 = tmp_path / "out2"
    flags2 = [*FAKE_PLAN, "--out", str(out2), "--task", "2"]
    release = tmp_path / "release"  # the run waits for it: the rerun below finds it in flight however slow this is
    proc = start_task(flags2, {**env, "FAKE_SLEEP": "0", "FAKE_HOLD": str(release)})
    wait_for((out2 / "logs" / f"{name}.stdout").exists)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    rerun = sweep(*flags2, env={"PYTHON": env["PYTHON"]})
    assert rerun.returncode == 0 and "skipped: another process is running it" in rerun.stdout, rerun.stdout
    release.touch()
    wait_for(lambda: run_files(out2), timeout=30)
    time.sleep(0.5)
    records = run_files(out2)
    assert list(records) == [f"{name}.json"] and records[f"{name}.json"]["status"] == "ok"
    again = sweep(*flags2, env={"PYTHON": env["PYTHON"]})
    assert again.returncode == 0 and "skipped: already done (ok)" in again.stdout
    assert run_files(out2) == records


@pytest.mark.slow  # 7 s on 2 cores; the array's tasks are test_every_task_run_by_two_processes_at_once's
def test_the_sbatch_script_run_by_bash_for_each_array_index_completes_the_plan(tmp_path):
    out = tmp_path / "out"
    flags = [*FAKE_PLAN, "--repeats", "3", "--timeout", "100", "--out", str(out)]
    python = fake_python(tmp_path)
    proc = sweep(*flags, "--slurm", "--jobs", "2", env={**CPU, "PYTHON": python})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    script = out / "slurm" / "benchback.sbatch"
    assert "sbatch is not on the PATH" in proc.stdout and f"  sbatch {script}" in proc.stdout
    text = script.read_text()
    directives = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)", text, re.M))
    n = len(expected_fake_names(3))
    assert directives["array"] == f"1-{n}%2" and directives["gres"] == "gpu:1"
    assert directives["time"] == "0:07:10"  # the per-run limit, timeout's 30 s grace and 5 minutes more
    assert directives["output"] == f"{out}/slurm/logs/%A_%a.out" and (out / "slurm" / "logs").is_dir()
    assert not run_files(out)  # written, not run

    for task in range(1, n + 1):  # what the array's tasks do, one after another
        run = subprocess.run(
            ["bash", str(script)],
            env={**os.environ, "SLURM_ARRAY_TASK_ID": str(task)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"benchback task {task}/{n}" in run.stdout
    records = run_files(out)
    assert set(records) == expected_fake_names(3) and all(r["status"] == "ok" for r in records.values())
    # Resubmitted, the array resumes: every task finds its record.
    again = subprocess.run(
        ["bash", str(script)], env={**os.environ, "SLURM_ARRAY_TASK_ID": "1"}, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0 and "skipped: already done (ok)" in again.stdout


def fake_sbatch(tmp_path: Path) -> tuple[str, Path]:
    """A PATH with an sbatch that logs its arguments and answers with job ids 101, 102, ..."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "sbatch-calls"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\necho "$*" >>"{calls}"\necho $((100 + $(wc -l <"{calls}")))\n')
    (bin_dir / "sbatch").chmod(0o755)
    return f"{bin_dir}{os.pathsep}{CPU['PATH']}", calls


def test_slurm_submits_with_sbatch_in_arrays_of_at_most_1000(tmp_path):
    path, calls = fake_sbatch(tmp_path)
    small = sweep(*FAKE_PLAN, "--out", str(tmp_path / "small"), "--slurm", env={"PATH": path})
    assert small.returncode == 0, small.stdout + small.stderr
    assert calls.read_text() == f"{tmp_path / 'small' / 'slurm' / 'benchback.sbatch'}\n"
    assert "#SBATCH --array=1-2%8" in (tmp_path / "small" / "slurm" / "benchback.sbatch").read_text()  # default %8

    calls.unlink()
    n = len(listed("--preset", "full", "--out", str(tmp_path / "full")))
    assert n > 1000
    full = sweep("--preset", "full", "--out", str(tmp_path / "full"), "--slurm", "--jobs", "16", env={"PATH": path})
    assert full.returncode == 0, full.stdout + full.stderr
    script = tmp_path / "full" / "slurm" / "benchback.sbatch"
    arrays = [(offset, min(1000, n - offset)) for offset in range(0, n, 1000)]  # each after the one before
    assert calls.read_text().splitlines() == [
        f"--parsable{f' --dependency=afterany:{100 + i}' if i else ''} --array=1-{size}%16"
        f" --export=ALL,BENCHBACK_TASK_OFFSET={offset} {script}"
        for i, (offset, size) in enumerate(arrays)
    ]
    assert "--preset full --out" in script.read_text() and "--jobs" not in script.read_text()


@pytest.mark.slow  # 9 s on 2 cores
def test_jobs_2_is_refused_for_timing_on_a_cpu_and_runs_learn_two_at_a_time(tmp_path):
    python, ledger = ledger_python(tmp_path)
    out = tmp_path / "out"
    refused = sweep(*FAKE_PLAN, "--jobs", "2", "--out", str(out), env={**CPU, "PYTHON": python})
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert "--jobs 2 refused: no GPUs" in line and "learn" in line
    assert not out.exists() and not ledger.exists()
    assert sweep(*FAKE_PLAN, "--jobs", "1", "--out", str(out), env={**CPU, "PYTHON": python}).returncode == 0

    out = tmp_path / "learn-out"  # a sweep of another preset goes to a folder of its own
    proc = sweep(
        *LEARN_PLAN, "--repeats", "2", "--jobs", "2", "--out", str(out), env={**CPU, "PYTHON": python, "FAKE_SLEEP": "0.5"}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {k for k in run_files(out) if k.startswith("learn/")} == expected_learn_names(2)
    runs = sorted(r for r in runs_of(ledger) if "/learn/" in r[3])
    n = len(expected_learn_names(2))
    assert len(runs) == n and any(b[0] < a[1] for a, b in zip(runs, runs[1:]))  # two at once
    assert re.search(
        rf"^\[{n}/{n} done, 0 failed\] elapsed \d+:\d\d:\d\d, remaining ~\d+:\d\d:\d\d  learn/", proc.stdout, re.M
    )
    assert summary(proc.stdout) == (n, 0, 0)


def test_jobs_on_devices_pin_each_run_to_one_device_and_never_share_one(tmp_path):
    python, ledger = ledger_python(tmp_path)
    out = tmp_path / "out"
    env = {**CPU, "PYTHON": python, "FAKE_SLEEP": "0.3", "FAKE_CRASH_SEED": "2"}
    proc = sweep(*FAKE_PLAN, "--repeats", "4", "--devices", "0,1", "--out", str(out), env=env)  # --jobs 2
    assert proc.returncode == 1 and summary(proc.stdout) == (6, 0, 2)
    assert "8/8 done, 2 failed" in proc.stdout and "(device 0)" in proc.stdout and "(device 1)" in proc.stdout
    records = run_files(out)
    assert set(records) == expected_fake_names(4)
    assert sorted(r["status"] for r in records.values()) == ["failed"] * 2 + ["ok"] * 6
    runs = runs_of(ledger)
    assert {device for _, _, device, _ in runs} == {"0", "1"}
    for device in ("0", "1"):
        spans = sorted((start, end) for start, end, d, _ in runs if d == device)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), f"runs overlap on device {device}"
    # A rerun finds every run done, and runs nothing.
    again = sweep(*FAKE_PLAN, "--repeats", "4", "--devices", "0,1", "--out", str(out), env=env)
    assert again.returncode == 0 and summary(again.stdout) == (0, 8, 0) and len(runs_of(ledger)) == 8


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--task", "0"], "--task must be one of the plan's indices, 1..2"),
        (["--task", "3"], "--task must be one of the plan's indices, 1..2"),
        (["--task", "x"], "--task must be one of the plan's indices"),
        (["--task"], "--task needs a value"),
        (["--jobs"], "--jobs needs a value"),
        (["--jobs", "--devices", "0"], "--jobs needs a value"),
        (["--jobs", "0"], "--jobs must be a positive integer"),
        (["--devices", "0,0"], "names a device twice"),
        (["--devices", "0,gpu1"], "'gpu1' is not a GPU index"),
        (["--devices", ""], "--devices needs a value"),
        (["--jobs", "3", "--devices", "0,1"], "--jobs 3 refused: only 2 devices (0,1)"),
        (["--devices", "0", "--slurm"], "--devices does not combine with --slurm"),
        (["--list", "--task", "1"], "do not combine"),
        (["--task", "1", "--jobs", "2"], "do not combine"),
        (["--slots", "2"], "unknown argument '--slots'"),
    ],
)
def test_bad_scaleout_arguments_exit_2_with_one_line_and_leave_nothing(flags, message, tmp_path):
    out = tmp_path / "out"
    proc = sweep(*FAKE_PLAN, "--out", str(out), *flags, env={**CPU, "PYTHON": fake_python(tmp_path)})
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("benchmark.sh: ") and message in line
    assert not out.exists()


def test_help_describes_the_new_options():
    text = sweep("--help").stdout
    for option in ("--list", "--task I", "--jobs N", "--devices LIST", "--slurm"):
        assert f"  {option} " in text
