"""benchmark.sh: the plan, the quick preset end to end, resuming after a kill, failure records.

The bookkeeping tests run a fake variant (tests/fixtures/fake_variant.py) through a PYTHON
wrapper, so they take seconds; the quick-preset test runs a real script.
"""

import contextlib
import fcntl
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.plan import load as load_plan
from bench.presets import PRESETS
from bench.run_records import KEPT_APART, OPENMP, XLA_ONE_THREAD
from bench.variants import discover
from benchback.machine import cpu_info
from conftest import DECLARED, ROOT, VARIANTS, in_background

BENCHMARK = ROOT / "benchmark.sh"
FAKE = ROOT / "tests" / "fixtures" / "fake_variant.py"


def sweep(*flags, env=None, timeout=600, unset=()):
    """benchmark.sh FLAGS in this process's environment with env added and the names in unset removed."""
    kept = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        ["bash", str(BENCHMARK), *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**kept, "PYTHON": sys.executable, **(env or {})},
    )


def fake_python(tmp_path: Path) -> str:
    """An interpreter for benchmark.sh that runs the fake variant in place of any ppo_*.py script."""
    wrapper = tmp_path / "fake-python"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$1" in */ppo_*.py) exec "{sys.executable}" "{FAKE}" "$@";; esac\nexec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper)


def run_files(out: Path) -> dict:
    """{name relative to out: record} of every run JSON; fails on a file that does not parse."""
    return {
        str(p.relative_to(out)): json.loads(p.read_text())
        for p in out.rglob("*.json")
        if p.name != "env_cost.json" and not p.name.startswith(".")
    }


def summary(stdout: str) -> tuple[int, int, int]:
    ran, skipped, failed = re.search(r"summary: ran (\d+), skipped (\d+) .*, failed (\d+)", stdout).groups()
    return int(ran), int(skipped), int(failed)


# Scaling runs need no env-cost timing (no jax start-up): the fastest plan for bookkeeping tests.
FAKE_PLAN = ["--preset", "quick", "--experiments", "scaling", "--variants", "jax_linen"]


def machine(directory: Path, gpus=()) -> dict:
    """The environment of a machine whose nvidia-smi lists these GPU indices (none: it says so and fails, as it does
    on a machine without a GPU), without CUDA_VISIBLE_DEVICES, and with an sbatch that only logs its arguments."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    listing = "".join(f"echo {gpu}\n" for gpu in gpus) or "echo 'No devices were found'; exit 6\n"
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{listing}")
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\necho "$*" >>"{directory / "sbatch.log"}"\necho 101\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": ""}


def caches_python(tmp_path: Path) -> tuple[str, Path]:
    """The fake interpreter, also logging what each variant run is given for its compiler caches, one line a run:
    "INDUCTOR_DIR TRITON_DIR FORCE_DISABLE_CACHES yes|no" (yes: the directory holding TRITON_DIR exists)."""
    fake, log = fake_python(tmp_path), tmp_path / "caches"
    wrapper = tmp_path / "caches-python"
    wrapper.write_text(f"""#!/bin/sh
case "$1" in */ppo_*.py) ;; *) exec "{fake}" "$@";; esac
[ -d "$(dirname "$TRITON_CACHE_DIR")" ] && made=yes || made=no
echo "$TORCHINDUCTOR_CACHE_DIR $TRITON_CACHE_DIR $TORCH_COMPILE_FORCE_DISABLE_CACHES $made" >>"{log}"
exec "{fake}" "$@"
""")
    wrapper.chmod(0o755)
    return str(wrapper), log


def expected_fake_names(repeats):
    return {f"scaling/jax_linen__CartPole-v1__s__n{n:04d}__seed{seed}.json" for n in (8, 32) for seed in range(1, repeats + 1)}


def test_dry_run_plans_the_issue_sweeps_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    full = sweep("--dry-run", "--out", str(out), env=machine(tmp_path))  # no --preset: the full sweep; no GPU
    assert full.returncode == 0, full.stderr
    n = len(VARIANTS)
    nnx = int("jax_nnx" in VARIANTS)
    # 12 envs x 3 sizes x 3 repeats for overall and sync; compile: every variant, from cold, and nnx without
    # cached_partial beside it (CUDA graphs need the GPU this machine lacks); 8 num_envs x 3 repeats
    assert f"overall: {n * 12 * 3 * 3} runs" in full.stdout and f"sync: {n * 12 * 3 * 3} runs" in full.stdout
    assert f"compile: {(n + nnx) * 12 * 3 * 3} runs" in full.stdout
    assert f"scaling: {n * 8 * 3} runs" in full.stdout
    # seeds: one seed of every variant and 4, 16 and 64 at once of each script that takes --num-seeds, on 2 envs
    seeds = 2 * 3 * (n + 3 * sum(DECLARED[v].num_seeds for v in VARIANTS))
    assert f"seeds: {seeds} runs" in full.stdout
    assert f"plan: {n * (3 * 108 + 24) + nnx * 108 + seeds} runs, 0 already done" in full.stdout
    assert "overall/jax_linen__SpaceInvaders-MinAtar__l__seed3" in full.stdout
    learn = sweep("--preset", "learn", "--dry-run", "--out", str(out))
    planned = re.findall(r"learn/(\w+)__CartPole-v1__s__seed(\d+)", learn.stdout)
    for v in VARIANTS:  # rliable's statistics need many seeds; linen_nojit's take 37 minutes each here
        assert sorted(int(seed) for variant, seed in planned if variant == v) == list(
            range(1, 4 if v == "linen_nojit" else 11)
        )
    acrobot = re.findall(r"learn/(\w+)__Acrobot-v1__s__seed(\d+)", learn.stdout)
    for v in VARIANTS:  # the second environment's threshold, for every variant but the eager one
        assert sorted(int(seed) for variant, seed in acrobot if variant == v) == (
            [] if v == "linen_nojit" else list(range(1, 11))
        )
    assert not out.exists()


def test_a_dry_run_with_jobs_estimates_that_many_at_once_and_refuses_what_the_sweep_would(tmp_path):
    """--dry-run --jobs 2: the plan and its estimate at 2 at a time, or the refusal the sweep's --jobs would meet
    (a timing preset's); nothing written."""
    out = tmp_path / "out"
    one = sweep("--preset", "learn", "--dry-run", "--out", str(out))
    two = sweep("--preset", "learn", "--jobs", "2", "--dry-run", "--out", str(out))
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    assert "2 at a time on the CPU" in two.stdout and "estimated" in two.stdout and ", 2 at a time, from" in two.stdout
    assert ", 2 at a time" not in one.stdout
    timed = sweep("--preset", "cpu", "--jobs", "2", "--dry-run", "--out", str(out))
    assert timed.returncode == 2 and "timing runs side by side" in timed.stderr
    assert not out.exists()


@pytest.mark.parametrize("variants, warned", [("torch", True), ("jax_linen,jax_nnx", False)])
def test_a_sweep_warns_when_the_environment_overrides_the_torch_scripts_openmp_setting(tmp_path, variants, warned):
    """The learn sweeps once ran with GOMP_SPINCOUNT=0 set, which halved torch's speed unnoticed: a sweep with a
    torch script names the setting in its first lines; one of JAX scripts alone (no OpenMP) does not."""
    flags = ["--preset", "quick", "--variants", variants, "--dry-run", "--out", str(tmp_path / "out")]
    openmp = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")
    overridden = sweep(*flags, env={"GOMP_SPINCOUNT": "0"}, unset=openmp)
    unset = sweep(*flags, unset=openmp)
    assert overridden.returncode == unset.returncode == 0, overridden.stderr + unset.stderr
    assert ("warning: GOMP_SPINCOUNT=0 in the environment" in overridden.stdout) == warned
    assert "warning" not in unset.stdout


def test_each_block_runs_every_variant_back_to_back_in_a_rotating_order(tmp_path):
    plan = sweep(
        "--preset",
        "cpu",
        "--experiments",
        "overall,compile",
        "--envs",
        "CartPole-v1",
        "--sizes",
        "s",
        "--dry-run",
        "--out",
        str(tmp_path / "out"),
    ).stdout
    runs = re.findall(r"(overall|compile)/([\w+]+)__CartPole-v1__s__seed(\d+)", plan)
    blocks = [[v for e, v, s in group] for _, group in itertools.groupby(runs, key=lambda r: (r[0], r[2]))]
    fast = [v for v in VARIANTS if v != "linen_nojit"]
    overall, compile = blocks[0::2], blocks[1::2]  # seed by seed: each seed's overall block, then its compile block
    assert [sorted(b) for b in overall] == [sorted(VARIANTS)] + [sorted(fast)] * 2  # linen_nojit: one seed
    assert len({b[0] for b in overall}) == 3  # a different variant opens each block
    # compile: every variant from cold (linen_nojit: one seed), NNX without cached_partial beside it
    assert [sorted(b) for b in compile] == [sorted([*VARIANTS, "jax_nnx+nocache"])] + [sorted([*fast, "jax_nnx+nocache"])] * 2
    assert len({b[0] for b in compile}) == 3
    assert (
        "overall/linen_nojit__CartPole-v1__s__seed1  --num-envs 32 --num-steps 256 --num-minibatches 8 "
        f"--update-epochs 10 --total-timesteps {3 * 32 * 256}" in plan
    )  # its 3 iterations


def test_iterations_replaces_the_presets_counts_and_keeps_a_variants_cap():
    """--iterations N: every timed run N iterations, where the cpu preset gives l 3 and Craftax 16; linen_nojit's
    cap of 3 stays a cap. (The plan in this process: its steps follow its iterations, tested with --dry-run above.)"""
    flags = ["--preset", "cpu", "--experiments", "overall", "--envs", "CartPole-v1,Craftax-Classic-Symbolic-v1"]
    flags += ["--sizes", "s,l"]

    def iterations(*more):
        return {run.name.split("__seed")[0]: int(run.iterations) for run in load_plan([*flags, *more]).runs}

    preset, given = iterations(), iterations("--iterations", "5")
    assert preset.keys() == given.keys()
    assert {n for name, n in preset.items() if "linen_nojit" not in name} == {21, 16, 3}  # s, Craftax, l
    assert all(n == (3 if "linen_nojit" in name else 5) for name, n in given.items())


@pytest.mark.skipif("linen_nojit" not in VARIANTS, reason="the cpu preset's variant restricted for its cost")
def test_a_variants_own_restriction_stays_unless_variants_names_it():
    """--envs and --sizes lift the cpu preset's restrictions of cells (m on 2 envs), not linen_nojit's own (eager:
    its 3 iterations at s on 2 envs are minutes; on Craftax-Classic or at l, hours), unless --variants names it."""
    flags = ["--preset", "cpu", "--experiments", "overall", "--envs", "CartPole-v1,Craftax-Classic-Symbolic-v1"]
    flags += ["--sizes", "s,m"]

    def cells(*more):
        return {tuple(run.name.split("__")[:3]) for run in load_plan([*flags, *more]).runs}

    assert {(v, e, z) for v, e, z in cells() if v.endswith("jax_linen")} == {
        ("overall/jax_linen", env, size) for env in ("CartPole-v1", "Craftax-Classic-Symbolic-v1") for size in "sm"
    }
    assert {cell for cell in cells() if "linen_nojit" in cell[0]} == {("overall/linen_nojit", "CartPole-v1", "s")}
    named = cells("--variants", "jax_linen,linen_nojit")
    assert len({cell for cell in named if "linen_nojit" in cell[0]}) == 4


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--preset", "huge"], "unknown preset"),
        (["--variants", "jax_linen,tensorflow"], "unknown value 'tensorflow'"),
        (["--sizes", "xl"], "unknown value 'xl'"),
        (["--repeats", "0"], "--repeats must be a positive integer"),
        (["--iterations", "1"], "--iterations must be an integer of at least 2"),
        (["--bogus"], "unknown argument"),
        (["--preset", "gpu", "--part", "0"], "--part must be next or one of 1.."),
        (["--part", "2"], "--part must be next or one of 1..1 (the preset's parts)"),
        (["--preset", "gpu-check", "--part", "1"], "a check, not a sweep"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(flags, message, tmp_path):
    proc = sweep(*flags, "--dry-run", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and message in proc.stderr


def test_an_interpreter_without_the_packages_is_refused_before_anything_runs(tmp_path):
    bare = tmp_path / "bare-python"  # the interpreter without site-packages: as if no venv were active
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    out = tmp_path / "out"
    proc = sweep("--preset", "learn", "--variants", "jax_linen,torch", "--out", str(out), env={"PYTHON": str(bare)})
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    (line,) = proc.stderr.splitlines()
    assert "cannot import: flax gymnax jax numpy optax tensorboard torch tyro" in line  # what the two scripts import
    assert not out.exists()


# torch starts fastest (no XLA compilation of a whole iteration), so it keeps this test short.
QUICK_VARIANT = "torch" if "torch" in VARIANTS else "jax_linen"


@pytest.mark.parametrize("variants, measured", [("jax_linen,torch", True), ("jax_linen", False)])
def test_a_sync_experiment_with_a_torch_script_measures_its_handover_floor_first(tmp_path, variants, measured):
    """Before its runs, the sweep has bench/host_cost.py time the torch rollout's floor on the sync experiment's
    environments, at the preset's num_envs and num_steps (plot.py splits it off); without torch, it does not."""
    measures, out = tmp_path / "measures", tmp_path / "out"
    wrapper = tmp_path / "python"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$1" in */ppo_*.py) exec "{sys.executable}" "{FAKE}" "$@";;\n'
        f'*/env_cost.py|*/host_cost.py) echo "$*" >>"{measures}"; exit 0;; esac\nexec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    proc = sweep(
        "--preset", "quick", "--experiments", "sync", "--variants", variants, "--out", str(out), env={"PYTHON": str(wrapper)}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = [line.split() for line in measures.read_text().splitlines()]
    handover = [c for c in calls if c[0].endswith("bench/host_cost.py")]
    iteration = PRESETS["quick"]["iteration"]
    expected = ["--out", str(out / "host_cost.json"), "--num-envs", str(iteration["num_envs"])]
    expected += ["--num-steps", str(iteration["num_steps"]), "CartPole-v1"]
    assert handover == ([[handover[0][0], *expected]] if measured else [])
    assert calls[0][0].endswith("env_cost.py")  # the env's cost first, as before


QUICK_FLAGS = ("--preset", "quick", "--experiments", "overall", "--variants", QUICK_VARIANT)


def quick_sweep_twice_then_plot(directory: Path) -> SimpleNamespace:
    """The quick preset's overall run, the same sweep again (to resume), then plot.py on its records."""
    out = directory / "quick"
    first = sweep(*QUICK_FLAGS, "--out", str(out))
    records = run_files(out)
    costs = json.loads((out / "env_cost.json").read_text()) if first.returncode == 0 else None
    again = sweep(*QUICK_FLAGS, "--out", str(out))
    records_again = run_files(out)
    plot = subprocess.run([sys.executable, str(ROOT / "plot.py"), str(out)], capture_output=True, text=True)
    return SimpleNamespace(
        out=out, first=first, records=records, costs=costs, again=again, records_again=records_again, plot=plot
    )


@in_background(quick_sweep_twice_then_plot)
def test_a_real_sweep_writes_its_record_then_resumes_and_plots(background):
    """The quick preset's overall run, end to end with a real script (the plans of the other experiments: the fake
    scripts' tests above and below)."""
    run, v = background, QUICK_VARIANT
    assert run.first.returncode == 0, run.first.stdout + run.first.stderr
    assert set(run.records) == {f"overall/{v}__CartPole-v1__s__seed1.json"}
    (record,) = run.records.values()
    assert record["status"] == "ok" and record["variant"] == v and record["args"]["exp_name"] == "overall"
    assert record["sync_timing"] is False and len(record["iteration_durations"]) == 3
    assert run.costs["num_envs"] == 8 and run.costs["envs"]["CartPole-v1"]["median_s"] > 0
    assert summary(run.first.stdout) == (1, 0, 0)
    assert re.search(r"\[1/1\] elapsed \d+:\d\d:\d\d, remaining ~\?  overall/", run.first.stdout)

    assert run.again.returncode == 0 and summary(run.again.stdout) == (0, 1, 0)
    assert run.records_again == run.records  # nothing was run again

    assert run.plot.returncode == 0, run.plot.stderr
    # One variant, one experiment: no speedups, no rollout/update, no scaling; everything else is drawn.
    assert {p.name for p in run.out.glob("*.png")} == {"duration.png", "overhead.png", "learning_curves.png"}
    assert (run.out / "summary.md").exists()


def test_a_run_stopped_after_writing_its_record_keeps_it_and_the_sweep_says_so(tmp_path):
    """A signal that comes while a finished run's process exits (a real one takes seconds to tear down): its record is
    whole; the sweep keeps it and does not claim that the run wrote nothing."""
    out = tmp_path / "out"
    flags = ["bash", str(BENCHMARK), *FAKE_PLAN, "--out", str(out)]
    env = {**os.environ, "PYTHON": fake_python(tmp_path), "FAKE_LINGER": "30"}
    proc = subprocess.Popen(flags, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not run_files(out) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=60)
    (name,) = run_files(out)
    assert proc.returncode == 130, stdout
    assert f"interrupted: {name[:-5]} had finished (its record is kept)" in stdout and "wrote nothing" in stdout
    again = subprocess.run(flags, env={**env, "FAKE_LINGER": "0"}, capture_output=True, text=True, timeout=120)
    assert summary(again.stdout)[1] == 1, again.stdout  # skipped as done


def test_killed_sweep_resumes_with_every_run_exactly_once(tmp_path):
    out, repeats = tmp_path / "out", 6
    expected = expected_fake_names(repeats)
    flags = ["bash", str(BENCHMARK), *FAKE_PLAN, "--repeats", str(repeats), "--out", str(out)]
    env = {**os.environ, "PYTHON": fake_python(tmp_path), "FAKE_SLEEP": "0.3"}

    def start_and_kill(after: int, kill):
        """Start the sweep, wait until `after` runs have written their JSON, then kill it."""
        proc = subprocess.Popen(
            flags, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        deadline = time.monotonic() + 120
        while len(run_files(out)) < after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before it could be killed"
        kill(proc)
        stdout, _ = proc.communicate(timeout=60)
        return proc.returncode, stdout

    # Interrupted as by Ctrl-C or `kill`: the run in flight is stopped too and writes nothing later.
    code, stdout = start_and_kill(3, lambda p: p.send_signal(signal.SIGTERM))
    assert code == 130 and "interrupted" in stdout
    done = run_files(out)
    time.sleep(1)  # longer than a fake run: an orphaned run would have written by now
    assert run_files(out) == done and 3 <= len(done) < len(expected)

    # Killed outright with its whole process group, as by a crash or a cancelled CI job.
    code, _ = start_and_kill(len(done) + 2, lambda p: os.killpg(p.pid, signal.SIGKILL))
    assert code == -signal.SIGKILL
    done = run_files(out)
    assert len(done) < len(expected)
    # What a kill at the worst moment could leave: a stray temporary file, a truncated result.
    (out / "scaling" / ".tmp-abc123.json").write_text('{"status": "o')
    truncated = sorted(done)[0]
    (out / truncated).write_text('{"status": "ok", "iteration_')

    final = subprocess.run(flags, env=env, capture_output=True, text=True, timeout=120)
    assert final.returncode == 0, final.stdout + final.stderr
    records = run_files(out)  # every file parses
    assert set(records) == expected
    assert all(r["status"] == "ok" for r in records.values())
    assert not list(out.rglob(".tmp-*"))
    # Finished runs were skipped, not run again; only the truncated one and the missing ones ran.
    assert all(records[name] == done[name] for name in done if name != truncated)
    assert summary(final.stdout) == (len(expected) - len(done) + 1, len(done) - 1, 0)


def test_failing_runs_are_recorded_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "out"
    flags = [*FAKE_PLAN, "--repeats", "4", "--timeout", "2", "--out", str(out)]
    env = {"PYTHON": fake_python(tmp_path), "FAKE_CRASH_SEED": "2", "FAKE_HANG_SEED": "3", "FAKE_KILL_SEED": "4"}
    proc = sweep(*flags, env=env)
    assert proc.returncode == 1
    assert summary(proc.stdout) == (2, 0, 6)  # seed 1 ran for both num_envs, after and between failures
    records = run_files(out)
    assert set(records) == expected_fake_names(4)
    by_seed = {seed: [r for name, r in records.items() if name.endswith(f"seed{seed}.json")] for seed in range(1, 5)}
    assert all(r["status"] == "ok" for r in by_seed[1])
    for seed, reason, code in [(2, "crash", 1), (3, "timeout", 124), (4, "oom", 137)]:
        for record in by_seed[seed]:
            assert record["status"] == "failed" and record["reason"] == reason and record["exit_code"] == code
            assert record["seed"] == seed and record["variant"] == "jax_linen" and record["timeout_s"] == 2
            assert record["command"][1].endswith("ppo_jax_linen.py") and "--json-out" in record["command"]
    assert all("RuntimeError: fake crash of seed 2" in r["stderr_tail"] for r in by_seed[2])
    assert (
        "FAILED (crash, exit code 1)" in proc.stdout
        and "failed: scaling/jax_linen__CartPole-v1__s__n0032__seed4" in proc.stdout
    )

    # A rerun keeps the failure records; --retry-failed runs them again (now without faults).
    again = sweep(*flags, env={"PYTHON": env["PYTHON"]})
    assert again.returncode == 0 and summary(again.stdout) == (0, 8, 0) and "6 of the skipped" in again.stdout
    retried = sweep(*flags, "--retry-failed", env={"PYTHON": env["PYTHON"]})
    assert retried.returncode == 0 and summary(retried.stdout) == (6, 2, 0)
    assert all(r["status"] == "ok" for r in run_files(out).values())


def test_each_run_compiles_into_caches_of_its_own_removed_when_it_ends(tmp_path):
    """Triton keeps the GPU kernels it compiled in a cache of its own, which TORCH_COMPILE_FORCE_DISABLE_CACHES leaves
    on: each run gets empty Inductor and Triton cache directories of its own, removed when it ends, timed out too."""
    python, log = caches_python(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"PYTHON": python, "TMPDIR": str(tmp), "FAKE_HANG_SEED": "2"}
    flags = [*FAKE_PLAN, "--caches", "cold", "--repeats", "2", "--timeout", "1", "--out", str(tmp_path / "out")]
    proc = sweep(*flags, env=env)
    assert proc.returncode == 1 and summary(proc.stdout) == (2, 0, 2), proc.stdout + proc.stderr  # seed 2 timed out
    runs = [line.split(" ") for line in log.read_text().splitlines()]
    assert len(runs) == 4
    for inductor, triton, disabled, made in runs:
        assert Path(inductor).parent == Path(triton).parent and inductor != triton
        assert Path(triton).parent.parent == tmp and made == "yes" and disabled == "1"
    assert len({Path(triton).parent for _, triton, _, _ in runs}) == 4  # one directory a run
    assert list(tmp.iterdir()) == []  # each removed, the timed-out runs' too


@pytest.mark.slow  # the slowest sweep here; the caches a run gets keep a check by default (the test above)
def test_the_runs_that_time_steady_iterations_share_the_sweeps_caches_and_compile_runs_start_cold(tmp_path):
    """By default the scaling runs (steady iterations) share OUT/.caches, caches on; the compile experiment's runs get
    empty caches of their own, caches off: only they measure compiling."""
    python, log = caches_python(tmp_path)
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    tmp.mkdir()
    flags = ["--preset", "quick", "--experiments", "scaling,compile", "--variants", "jax_nnx", "--out", str(out)]
    proc = sweep(*flags, env={"PYTHON": python, "TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = [line.split(" ") for line in log.read_text().splitlines()]
    warm = [r for r in runs if r[0] == str(out / ".caches" / "inductor")]
    cold = [r for r in runs if r not in warm]
    assert len(warm) == 2 and all(r[1:3] == [str(out / ".caches" / "triton"), ""] for r in warm)  # scaling: 2 sizes
    assert len(cold) == 2 and all(Path(r[1]).parent.parent == tmp and r[2] == "1" for r in cold)  # nnx, nnx+nocache
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("mode", [[], ["--task", "1"]], ids=["sweep", "task"])
def test_a_signal_removes_the_caches_of_the_run_in_flight(tmp_path, mode):
    python, log = caches_python(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        ["bash", str(BENCHMARK), *FAKE_PLAN, "--caches", "cold", *mode, "--out", str(tmp_path / "out")],
        env={**os.environ, "PYTHON": python, "TMPDIR": str(tmp), "FAKE_SLEEP": "60"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.05)
    ((_, triton, _, made),) = [line.split(" ") for line in log.read_text().splitlines()]
    assert made == "yes" and Path(triton).parent.is_dir()  # the run is in flight
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in stdout
    assert list(tmp.iterdir()) == []


def test_a_sweep_is_not_resumed_on_another_cpu_model(tmp_path):
    """Runs timed on two CPU models must not share blocks: an OUT holding CPU records of another model is refused
    before anything runs; one holding this machine's model (as the scripts name it) is resumed."""
    out, python = tmp_path / "out", fake_python(tmp_path)
    earlier = out / "overall" / "jax_linen__CartPole-v1__s__seed9.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(json.dumps({"status": "ok", "device": "cpu", "cpu": {"model": "Imaginary CPU (family 0, model 0)"}}))
    refused = sweep(*FAKE_PLAN, "--out", str(out), env={"PYTHON": python})
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "another machine" in refused.stderr and "Imaginary CPU" in refused.stderr
    assert [p.name for p in out.rglob("*.json")] == [earlier.name]
    here = cpu_info()["model"]
    earlier.write_text(json.dumps({"status": "ok", "device": "cpu", "cpu": {"model": here}}))
    resumed = sweep(*FAKE_PLAN, "--out", str(out), env={"PYTHON": python})
    assert resumed.returncode == 0, resumed.stderr
    assert {p for p in run_files(out)} >= expected_fake_names(1)


# XLA_FLAGS by default; the other two take the same path (a sweep, then a resume refused), with -m slow
@pytest.mark.parametrize(
    "variable",
    [
        pytest.param("GLIBC_TUNABLES", marks=pytest.mark.slow),
        "XLA_FLAGS",
        pytest.param("GOMP_SPINCOUNT", marks=pytest.mark.slow),
    ],
)
def test_a_sweep_is_not_resumed_under_another_setting(tmp_path, variable):
    """glibc's tunables change how fast memory is had again after a free, XLA_FLAGS how XLA runs: an OUT timed with
    one setting is refused under another (or none) before anything runs, and resumed under the same."""
    out, python = tmp_path / "out", fake_python(tmp_path)
    earlier = out / "overall" / "jax_linen__CartPole-v1__s__seed9.json"
    earlier.parent.mkdir(parents=True)
    value = {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0", "XLA_FLAGS": XLA_ONE_THREAD, "GOMP_SPINCOUNT": "0"}[variable]
    cpu = {"model": cpu_info()["model"], "allocator": {"GLIBC_TUNABLES": None, "LD_PRELOAD": None}}
    record = {"status": "ok", "device": "cpu", "cpu": cpu, "xla_flags": None}
    if variable == "XLA_FLAGS":
        record["xla_flags"] = value
    elif variable == "GOMP_SPINCOUNT":  # a torch script's record also holds the wait policy it gave itself
        cpu["openmp"] = {"OMP_NUM_THREADS": None, "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": value}
    else:
        cpu["allocator"][variable] = value
    earlier.write_text(json.dumps(record))
    refused = sweep(*FAKE_PLAN, "--out", str(out), env={"PYTHON": python}, unset=(*KEPT_APART, *OPENMP))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"timed with {variable}={value}, and this sweep has none" in refused.stderr
    assert [p.name for p in out.rglob("*.json")] == [earlier.name]
    resumed = sweep(*FAKE_PLAN, "--out", str(out), env={"PYTHON": python, variable: value})
    assert resumed.returncode == 0, resumed.stderr
    assert {p for p in run_files(out)} >= expected_fake_names(1)


@pytest.mark.slow  # the cold caches' tmpdir, which test_each_run_compiles_into_caches_of_its_own... checks by default
def test_a_cold_run_has_a_tmpdir_of_its_own_which_goes_with_it(tmp_path):
    """Inductor keeps a precompiled header in TMPDIR, outside its caches: a cold run that found one would not be cold."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"PYTHON": fake_python(tmp_path), "TMPDIR": str(tmp)}
    cold = sweep(*FAKE_PLAN, "--caches", "cold", "--out", str(tmp_path / "cold"), env=env)
    assert cold.returncode == 0, cold.stderr
    made = {Path(r["tmpdir"]) for r in run_files(tmp_path / "cold").values()}
    assert len(made) == 2 and all(d.parent == tmp and not d.exists() for d in made)
    warm = sweep(*FAKE_PLAN, "--out", str(tmp_path / "warm"), env=env)
    assert warm.returncode == 0 and {r["tmpdir"] for r in run_files(tmp_path / "warm").values()} == {str(tmp)}


def test_a_sweep_is_not_resumed_on_another_number_of_cores(tmp_path):
    """Two cores or one (taskset) time differently: a block timed on each would pair them."""
    out, python = tmp_path / "out", fake_python(tmp_path)
    earlier = out / "overall" / "jax_linen__CartPole-v1__s__seed9.json"
    earlier.parent.mkdir(parents=True)
    here = len(os.sched_getaffinity(0))
    cpu = {"model": cpu_info()["model"], "cores": here + 1}
    earlier.write_text(json.dumps({"status": "ok", "device": "cpu", "cpu": cpu, "xla_flags": None}))
    refused = sweep(*FAKE_PLAN, "--out", str(out), env={"PYTHON": python})
    assert refused.returncode == 2 and f"was timed on {here + 1} cores, and this sweep has {here}" in refused.stderr
    assert [p.name for p in out.rglob("*.json")] == [earlier.name]


@pytest.mark.parametrize(
    "listed, resumed",
    [
        (None, False),  # nvidia-smi finds no GPU
        ("NVIDIA H200", False),
        ("NVIDIA H100 80GB HBM3", True),
    ],
)
def test_a_gpu_sweep_is_resumed_on_the_same_gpu_only(tmp_path, listed, resumed):
    """GPU records (a lent machine's kind is drawn by chance) are resumed only where nvidia-smi lists their GPU."""
    out, python = tmp_path / "out", fake_python(tmp_path)
    earlier = out / "overall" / "jax_linen__CartPole-v1__s__seed9.json"
    earlier.parent.mkdir(parents=True)
    here, gpu = cpu_info()["model"], "NVIDIA H100 80GB HBM3"
    earlier.write_text(json.dumps({"status": "ok", "device": gpu, "cpu": {"model": here}, "gpu": {"name": gpu}}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    answer = f"echo '{listed}'" if listed else "echo 'No devices were found'; exit 6"
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{answer}\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = {"PYTHON": python, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": ""}
    proc = sweep(*FAKE_PLAN, "--out", str(out), env=env)
    if resumed:
        assert proc.returncode == 0 and {p for p in run_files(out)} >= expected_fake_names(1), proc.stderr
    else:
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"was timed on an {gpu}, and this machine has {listed or 'no GPU'}" in proc.stderr


def test_the_cpu_preset_plans_both_axes_and_tells_its_cost_first(tmp_path):
    proc = sweep("--preset", "cpu", "--dry-run", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    first, estimate = proc.stdout.splitlines()[:2]
    total = int(re.search(r"preset cpu, (\d+) runs", first).group(1))
    assert re.fullmatch(rf"  estimated (\d+ days? )?\d+:\d\d \(h:mm\) for {total} runs, from runs measured on .+", estimate)
    seeds = {}  # (experiment, variant, env, size): seeds
    for exp, variant, env, size, seed in re.findall(r"\] to-run (\w+)/([\w+]+)__([\w-]+)__([sml])__seed(\d+)", proc.stdout):
        seeds.setdefault((exp, variant, env, size), set()).add(int(seed))
    overall = {key[1:]: s for key, s in seeds.items() if key[0] == "overall"}
    envs_at = lambda size: {env for (_, env, z) in overall if z == size}
    assert envs_at("s") == {*STUDY_ENVS, CRAFTAX} and len(envs_at("m")) >= 2 and len(envs_at("l")) >= 1
    # Craftax's iterations are long: fewer of them, enough for a steady time and for its return to rise
    craftax = re.findall(rf"\] to-run overall/\S+__{CRAFTAX}__s__seed\d+ .*--total-timesteps (\d+)", proc.stdout)
    assert craftax and {int(t) // (32 * 256) for t in craftax} == {16}
    for (variant, env, size), s in overall.items():
        assert s == ({1} if variant == "linen_nojit" else {1, 2, 3}), (variant, env, size)
    timing = {v for (v, _, _) in overall} - {"linen_nojit"}
    assert all(
        len({v for (v, e, z) in overall if (e, z) == cell} & timing) == len(timing)
        for cell in {(e, z) for (_, e, z) in overall}
    )
    assert {key[0] for key in seeds} == {"overall", "sync", "compile", "stacks"}


def test_the_seeds_experiment_runs_n_seeds_at_once_where_a_script_takes_it_beside_one_seed_of_every_variant(tmp_path):
    proc = sweep("--preset", "cpu", "--experiments", "seeds", "--dry-run", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    runs = re.findall(r"\] to-run seeds/([\w+]+)__([\w-]+)__s__k(\d+)__seed(\d+) (.*)", proc.stdout)
    assert runs and re.search(rf"preset cpu, {len(runs)} runs", proc.stdout)
    timing = [v for v in VARIANTS if v != "linen_nojit"]  # the cpu preset's seeds: every variant but the eager one
    for env in {env for _, env, _, _, _ in runs}:
        for k in {int(k) for _, _, k, _, _ in runs}:
            for seed in ("1", "2", "3"):
                block = [(v, flags) for v, e, n, s, flags in runs if (e, int(n), s) == (env, k, seed)]
                takes = [v for v in timing if DECLARED[v].num_seeds]
                assert sorted(v for v, _ in block) == sorted(timing if k == 1 else takes), (env, k, seed)
                assert all(("--num-seeds" in flags) == (k > 1) for _, flags in block)
                assert all(f"--num-seeds {k} " in flags for _, flags in block if k > 1)
    assert {v for v in VARIANTS if DECLARED[v].num_seeds} >= {"jax_linen", "jax_nnx", "jax_equinox"}


CRAFTAX = "Craftax-Classic-Symbolic-v1"
STUDY_ENVS = [
    "CartPole-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "DiscountingChain-bsuite",
    "MemoryChain-bsuite",
    "UmbrellaChain-bsuite",
    "BernoulliBandit-misc",
    "GaussianBandit-misc",
    "Asterix-MinAtar",
    "Breakout-MinAtar",
    "Freeway-MinAtar",
    "SpaceInvaders-MinAtar",
]


def sweep_beside_a_file(directory, flags, message):
    """The quick sweep with these flags ({file}: a file in the directory, the default --out beside it): its process,
    the file, and what the directory holds afterwards."""
    file = directory / "notes.txt"
    file.write_text("")
    flags = [f.format(file=file) for f in flags] + ([] if "--out" in flags else ["--out", str(directory / "out")])
    proc = sweep("--preset", "quick", "--experiments", "overall", "--variants", "jax_linen", *flags)
    return proc, file, sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--envs", "CartPole-v2"], "--envs: unknown environment 'CartPole-v2'; ids: CartPole-v1"),
        (["--envs", "MNISTBandit-bsuite"], "unknown environment 'MNISTBandit-bsuite'"),
        (["--out", "/proc/benchback/out"], "--out /proc/benchback/out cannot be written: /proc does not accept files"),
        (["--out", "{file}/out"], "cannot be written: {file} is a file"),
        (["--out", "{file}"], "cannot be written: {file} is a file"),
    ],
)
@in_background(sweep_beside_a_file)
def test_bad_environments_and_outputs_are_refused_before_the_plan(flags, message, background):
    proc, file, left = background
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    (line,) = proc.stderr.splitlines()
    assert message.format(file=file) in line
    assert left == ["notes.txt"]


def listing(stdout: str) -> list:
    """The run names of a --dry-run's plan, in order."""
    return re.findall(r"^\[\d+/\d+\] \S+ +(\S+)", stdout, re.M)


def block_of(name: str) -> tuple:
    """A run's block: its experiment, env, size, num_envs and seed (all of its name but the variant)."""
    experiment, rest = name.split("/")
    return experiment, rest.split("__", 1)[1]


def test_the_gpu_preset_plans_its_groups_in_parts_of_at_most_8_minutes(tmp_path):
    out = tmp_path / "out"
    proc = sweep("--preset", "gpu", "--dry-run", "--out", str(out), env=machine(tmp_path))  # a machine without a GPU
    assert proc.returncode == 0, proc.stderr
    first, estimate, here, left_out = proc.stdout.splitlines()[:4]
    total = int(re.search(r"preset gpu, (\d+) runs", first).group(1))
    # priced from the GPU runs committed (bench/costs), not from this machine's CPU
    assert re.fullmatch(rf"  estimated \d+:\d\d \(h:mm\) for {total} runs, from runs measured on NVIDIA .+", estimate)
    hours = re.fullmatch(
        r"  here, without a GPU: estimated (?:(\d+) days? )?(\d+):(\d\d) \(h:mm\) for \d+ runs, from runs .+", here
    )
    assert hours, here
    days, h, m = (int(x or 0) for x in hours.groups())
    gpu_h, gpu_m = (int(x) for x in re.findall(r"(\d+):(\d\d)", estimate)[0])
    assert (days * 24 + h) * 60 + m > gpu_h * 60 + gpu_m
    gpu_only = ", ".join(v.name for v in discover() if v.gpu_only)  # the settings with CUDA graphs
    assert left_out == f"  {gpu_only}: needs a GPU, left out (none is visible here)"
    names = listing(proc.stdout)
    assert len(names) == total and not any("+graphs" in name for name in names)
    cells = {}  # (experiment, variant, env, size): seeds
    for exp, variant, env, size, seed in re.findall(r"^(\w+)/([\w+]+)__([\w-]+)__([sml])__seed(\d+)$", "\n".join(names), re.M):
        cells.setdefault((exp, variant, env, size), set()).add(int(seed))
    timing, both = set(VARIANTS) - {"linen_nojit"}, ["CartPole-v1", "Breakout-MinAtar"]  # linen_nojit: too slow
    assert {key[1:] for key in cells if key[0] == "overall"} == {(v, e, z) for v in timing for e in both for z in "sml"}
    assert all(seeds == set(range(1, 7)) for key, seeds in cells.items() if key[0] in ("overall", "stacks"))
    assert {key[1:] for key in cells if key[0] == "sync"} == {(v, e, "s") for v in timing for e in both}
    assert all(seeds == {1, 2, 3} for key, seeds in cells.items() if key[0] == "sync")
    # compile: every variant and setting (here, without its GPU, graphs aside), cold, one run a size on CartPole-v1
    compiled = {key[1:] for key in cells if key[0] == "compile"}
    assert compiled == {(v, "CartPole-v1", z) for v in timing | {"jax_nnx+nocache"} for z in "sml"}
    assert all(cells["compile", *key] == {1} for key in compiled)
    stacks = {key[1] for key in cells if key[0] == "stacks"}
    assert {"torch+torchenv", "torch_compile+torchenv"} <= stacks and {key[2] for key in cells if key[0] == "stacks"} == {
        "CartPole-v1"
    }

    # The order of what the parts answer: (1) CartPole-v1 at s, m, l with the stacks, three seeds; (2)
    # Breakout-MinAtar likewise; (3) sync; (4) compile; then seeds 4-6 of (1) and (2). Whole cells in each.
    def group(name):
        exp, rest = name.split("/")
        env, seed = rest.split("__")[1], int(rest.rsplit("seed", 1)[1])
        if exp in ("overall", "stacks") and seed <= 3:
            return 1 if env == "CartPole-v1" else 2
        return {"sync": 3, "compile": 4}.get(exp, 5)

    groups = [group(name) for name in names]
    assert groups == sorted(groups) and set(groups) == {1, 2, 3, 4, 5}
    order = [key for key, _ in itertools.groupby(names, key=lambda name: (name.split("/")[0], *name.split("__")[1:3]))]
    assert order[:2] == [("overall", "CartPole-v1", "s"), ("stacks", "CartPole-v1", "s")]

    # Its parts tile the plan in order, each of whole blocks and one group, each at most 8 minutes by its estimate;
    # --part K plans part K alone.
    parts = re.findall(r"^  --part (\d+): runs (\d+)-(\d+), estimated (\d+):(\d\d) \(h:mm\)", proc.stdout, re.M)
    parts = [tuple(map(int, p)) for p in parts]
    assert [k for k, *_ in parts] == list(range(1, len(parts) + 1)) and len(parts) > 4
    assert [start for _, start, *_ in parts] == [1] + [last + 1 for _, _, last, *_ in parts[:-1]] and parts[-1][2] == total
    assert all(block_of(names[last - 1]) != block_of(names[last]) for _, _, last, *_ in parts[:-1])
    assert all(len({groups[i] for i in range(start - 1, last)}) == 1 for _, start, last, *_ in parts)
    assert all(hours * 60 + minutes <= 8 for *_, hours, minutes in parts)
    _, start, end, *_ = parts[1]
    second = sweep("--preset", "gpu", "--part", "2", "--dry-run", "--out", str(out), env=machine(tmp_path / "again"))
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith(f"benchback sweep: preset gpu, part 2 of {len(parts)}, {end - start + 1} runs")
    assert listing(second.stdout) == names[start - 1 : end]
    listed = sweep("--preset", "gpu", "--part", "2", "--list", "--out", str(out))
    assert listed.returncode == 2 and "--part does not combine with --list" in listed.stderr
    assert not out.exists()


def test_the_gpu_presets_compile_experiment_runs_every_variant_and_setting_cold(tmp_path):
    flags = ["--preset", "gpu", "--experiments", "compile", "--dry-run", "--out", str(tmp_path / "out")]
    proc = sweep(*flags, env=machine(tmp_path / "gpu", gpus=["0"]))
    assert proc.returncode == 0, proc.stderr
    variants = {name.split("/")[1].split("__")[0] for name in listing(proc.stdout)}
    assert variants == {v.name for v in discover() if not v.stack and v.name != "linen_nojit"}


@pytest.mark.slow  # two plans of the gpu preset; its parts keep a check by default
def test_a_gpu_only_setting_runs_beside_its_script_on_a_gpu_and_keeps_its_index_everywhere(tmp_path):
    flags = ["--preset", "gpu", "--out", str(tmp_path / "out")]
    gpu = sweep(*flags, "--dry-run", env=machine(tmp_path / "gpu", gpus=["0"]))
    assert gpu.returncode == 0, gpu.stderr
    assert "needs a GPU" not in gpu.stdout
    names = listing(gpu.stdout)
    blocks = [{name.split("/")[1].split("__")[0] for name in group} for _, group in itertools.groupby(names, key=block_of)]
    # CUDA graphs beside every variant in every overall block (the answer's torch at its best), so the compile
    # experiment has no torch_compile block of its own
    experiments = [key[0] for key, _ in itertools.groupby(names, key=block_of)]
    graphs = [exp for exp, b in zip(experiments, blocks) if "torch_compile+graphs" in b]
    assert graphs.count("overall") == experiments.count("overall") and set(graphs) == {"overall", "compile"}
    assert all({"jax_linen", "torch_compile"} < b for exp, b in zip(experiments, blocks) if exp == "overall")
    # Each part, graphs included, at most 8 minutes by the estimate (from the GPU runs committed).
    for hours, minutes in re.findall(r"^  --part \d+: runs \d+-\d+, estimated (\d+):(\d\d) \(h:mm\)", gpu.stdout, re.M):
        assert int(hours) * 60 + int(minutes) <= 8

    # Without a GPU, --list, --task and --slurm number the plan as the GPU node that runs it does, graphs included.
    cpu = machine(tmp_path / "cpu")
    listed = sweep(*flags, "--list", env=cpu)
    assert [line.split(" ")[1] for line in listed.stdout.splitlines()] == names
    index = next(i for i, name in enumerate(names, 1) if "+graphs" in name)
    task = sweep(*flags, "--task", str(index), env=cpu)
    assert task.returncode == 2 and task.stdout == ""
    assert task.stderr == f"benchmark.sh: --task {index}: torch_compile+graphs needs a GPU, and none is visible here\n"
    slurm = sweep(*flags, "--slurm", env=cpu)
    assert slurm.returncode == 0, slurm.stderr
    assert f"#SBATCH --array=1-{len(names)}%8" in (tmp_path / "out" / "slurm" / "benchback.sbatch").read_text()


def stub_python(tmp_path: Path) -> tuple[str, Path]:
    """The fake interpreter, with env_cost.py and bench/host_cost.py logged (one line a call) in place of measuring."""
    fake, measures = fake_python(tmp_path), tmp_path / "measures"
    wrapper = tmp_path / "stub-python"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$1" in */env_cost.py|*/host_cost.py) echo "$*" >>"{measures}"; exit 0;; esac\nexec "{fake}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper), measures


def test_iterations_applies_to_the_stacks_experiment_too():
    loaded = load_plan(["--preset", "cpu", "--experiments", "stacks", "--iterations", "3"])
    assert loaded.runs and {int(run.iterations) for run in loaded.runs} == {3}


@pytest.mark.slow  # 17 s on 2 cores; the sync experiment's floor test above runs the same measuring by default
def test_a_stacks_only_sweep_measures_the_hand_over_floor(tmp_path):
    """The stacks' report splits the torch rollouts at the floor: a sweep of the stacks alone measures it too."""
    python, measures = stub_python(tmp_path)
    flags = ["--preset", "quick", "--experiments", "stacks", "--variants", "torch", "--envs", "CartPole-v1"]
    proc = sweep(*flags, "--sizes", "s", "--out", str(tmp_path / "out"), env={"PYTHON": python})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "host_cost.py" in measures.read_text() and "CartPole-v1" in measures.read_text()


def start(flags, env, ignored=()) -> subprocess.Popen:
    """The sweep in a session of its own, with SIGINT and SIGHUP at their defaults, or ignored where named (as a
    script's background job starts with SIGINT ignored, nohup with SIGHUP), whatever this test run was given (set by
    env(1), not a preexec_fn: this process has JAX's threads, which a fork in Python would warn of)."""
    dispositions = ["--default-signal=INT,HUP", *(f"--ignore-signal={signal.Signals(s).name[3:]}" for s in ignored)]
    return subprocess.Popen(
        ["env", *dispositions, "bash", str(BENCHMARK), *flags],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_until(condition, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def lock_is_free(out: Path) -> bool:
    with open(out / "logs" / "sweep.lock") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def test_two_sweeps_on_one_out_never_time_side_by_side(tmp_path):
    """A second sweep (or --task) on an OUT a sweep holds is refused in one line naming the first; after only the
    first's shell is killed, its run goes on and a resume is refused until that run ends; then it resumes."""
    out, python, release = tmp_path / "out", fake_python(tmp_path), tmp_path / "release"
    flags = [*FAKE_PLAN, "--repeats", "2", "--out", str(out)]
    env = {"PYTHON": python, "FAKE_HOLD": str(release)}  # its first run waits for the checks below
    first = start(flags, env)
    wait_until(lambda: list((out / "logs").rglob("*.stdout")))  # its first run is in flight
    for more in ([], ["--task", "2"]):
        second = sweep(*flags, *more, env=env)
        assert second.returncode == 2 and second.stdout == "", second.stdout
        (line,) = second.stderr.splitlines()
        assert f"--out {out} is in use by the sweep pid {first.pid} (started 20" in line and "another --out" in line
    os.kill(first.pid, signal.SIGKILL)  # the sweep's shell alone: its run goes on, holding the lock it inherited
    first.wait(timeout=30)  # (not its pipes: the run holds them open)
    orphaned = sweep(*flags, env=env)
    assert orphaned.returncode == 2 and "whose shell has ended while its run goes on" in orphaned.stderr, orphaned.stderr
    release.touch()
    wait_until(lambda: lock_is_free(out), timeout=30)  # the orphaned run ends, and with it the lock
    first.stdout.close()
    first.stderr.close()
    done = len(run_files(out))  # the orphaned run finished its record
    resumed = sweep(*flags, env={"PYTHON": python})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert set(run_files(out)) == expected_fake_names(2) and summary(resumed.stdout) == (4 - done, done, 0) and done


def test_a_record_made_with_other_settings_is_run_again_never_counted_done(tmp_path):
    """--iterations 2, then --iterations 5 into the same OUT: the records of 2 iterations are reported, run again and
    replaced, not counted done; a failure record of other settings too. The same settings again: all done."""
    out, (python, _) = tmp_path / "out", stub_python(tmp_path)
    flags = ["--preset", "quick", "--experiments", "overall", "--variants", "jax_linen,torch", "--out", str(out)]
    assert sweep(*flags, "--iterations", "2", env={"PYTHON": python}).returncode == 0
    steps = {name: r["args"]["total_timesteps"] for name, r in run_files(out).items()}
    assert set(steps.values()) == {2 * 8 * 32}
    failed = out / "overall" / "torch__CartPole-v1__s__seed1.json"
    failed.write_text(json.dumps({"status": "failed", "command": ["python", "ppo_torch.py", "--total-timesteps", "512"]}))
    planned = sweep(*flags, "--iterations", "5", "--dry-run", env={"PYTHON": python})
    assert planned.returncode == 0, planned.stderr
    assert "(0 already done)" in planned.stdout and "2 records were made with other settings" in planned.stdout
    assert "stale  overall/jax_linen__CartPole-v1__s__seed1" in planned.stdout
    assert "(stale: --total-timesteps: 512, the plan 1280)" in planned.stdout
    again = sweep(*flags, "--iterations", "5", env={"PYTHON": python})
    assert again.returncode == 0 and summary(again.stdout) == (2, 0, 0), again.stdout
    assert {r["args"]["total_timesteps"] for r in run_files(out).values()} == {5 * 8 * 32}
    same = sweep(*flags, "--iterations", "5", env={"PYTHON": python})
    assert summary(same.stdout) == (0, 2, 0)


@pytest.mark.slow  # two sweeps; the same path as other settings', checked by default
def test_a_record_made_with_other_compiler_caches_is_stale(tmp_path):
    """Records that loaded their programs from warm caches are not what --caches cold asks for: run again, not done."""
    out, (python, _) = tmp_path / "out", stub_python(tmp_path)
    flags = ["--preset", "quick", "--experiments", "overall", "--variants", "jax_linen,torch", "--out", str(out)]
    assert sweep(*flags, "--iterations", "2", env={"PYTHON": python}).returncode == 0
    for path in (out / "overall").glob("*.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "caches": {"persistent": True}}))
    cold = sweep(*flags, "--iterations", "2", "--caches", "cold", "--dry-run", env={"PYTHON": python})
    assert cold.returncode == 0 and "(0 already done)" in cold.stdout, cold.stdout
    assert "(stale: made with warm compiler caches, the plan cold)" in cold.stdout
    warm = sweep(*flags, "--iterations", "2", "--dry-run", env={"PYTHON": python})
    assert warm.returncode == 0 and "(2 already done)" in warm.stdout, warm.stdout


@pytest.mark.slow  # two sweeps; a record made otherwise is checked by default
def test_a_truncated_record_is_named_as_corrupt_and_kept_with_keep_stale(tmp_path):
    out, (python, _) = tmp_path / "out", stub_python(tmp_path)
    flags = ["--preset", "quick", "--experiments", "overall", "--variants", "jax_linen,torch", "--out", str(out)]
    assert sweep(*flags, "--iterations", "2", env={"PYTHON": python}).returncode == 0
    cut = out / "overall" / "torch__CartPole-v1__s__seed1.json"
    cut.write_text(cut.read_text()[:40])
    planned = sweep(*flags, "--iterations", "2", "--dry-run", env={"PYTHON": python})
    assert planned.returncode == 0 and "corrupt overall/torch__CartPole-v1__s__seed1" in planned.stdout, planned.stdout
    assert "(corrupt: not whole JSON" in planned.stdout and "1 records are corrupt: run again and replaced" in planned.stdout
    kept = sweep(*flags, "--iterations", "2", "--keep-stale", env={"PYTHON": python})
    assert kept.returncode == 2 and "torch__CartPole-v1__s__seed1: not whole JSON" in kept.stderr, kept.stderr


def tree(directory: Path) -> dict:
    """{path: (content, mtime)} of every file under directory, and every folder: what a refusal must leave as it was."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else None for p in directory.rglob("*")}


@pytest.mark.slow  # two sweeps; a record made otherwise is checked by default
def test_keep_stale_refuses_to_replace_a_record_made_with_other_settings(tmp_path):
    """--keep-stale: a sweep that would replace records made with other settings is refused in one line naming the
    first, why and how many, before it writes or measures anything; a --task of such a run too; --dry-run lists them;
    a sweep with no such record runs as before; --slurm's tasks are given the option."""
    out, (python, measures) = tmp_path / "out", stub_python(tmp_path)
    flags = ["--preset", "quick", "--experiments", "overall", "--variants", "jax_linen,torch", "--out", str(out)]
    assert sweep(*flags, "--iterations", "2", env={"PYTHON": python}).returncode == 0
    before, measured = tree(out), measures.read_text()
    first = "overall/jax_linen__CartPole-v1__s__seed1"
    for more, n in (([], "2 records"), (["--task", "1"], "1 record")):
        refused = sweep(*flags, "--iterations", "5", "--keep-stale", *more, env={"PYTHON": python})
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        (line,) = refused.stderr.splitlines()
        assert line.startswith(f"benchmark.sh: --keep-stale: {n} made with other settings than this plan gives"), line
        assert f"(the first, {first}: --total-timesteps: 512, the plan 1280)" in line
    assert tree(out) == before and measures.read_text() == measured
    planned = sweep(*flags, "--iterations", "5", "--keep-stale", "--dry-run", env={"PYTHON": python})
    assert planned.returncode == 0 and f"stale  {first}" in planned.stdout
    assert "kept: --keep-stale refuses the sweep while they are here" in planned.stdout
    same = sweep(*flags, "--iterations", "2", "--keep-stale", env={"PYTHON": python})
    assert same.returncode == 0 and summary(same.stdout) == (0, 2, 0)
    assert "--keep-stale" in load_plan([*flags, "--keep-stale", "--slurm"]).args.forward


def test_a_task_measures_an_env_cost_file_it_cannot_read_again(tmp_path):
    """The first --task to find OUT/env_cost.json cut short, or not a JSON object, measures the costs, as a sweep
    does; one that finds it readable goes on."""
    out, (python, measures) = tmp_path / "out", stub_python(tmp_path)
    flags = ["--preset", "quick", "--experiments", "overall", "--variants", "jax_linen", "--out", str(out), "--task", "1"]
    out.mkdir()
    for k, text in enumerate(['{"num_envs": 32, "en', "[1, 2]"], 1):
        (out / "env_cost.json").write_text(text)
        assert sweep(*flags, env={"PYTHON": python}).returncode == 0
        calls = measures.read_text().splitlines()
        assert len(calls) == k and calls[-1].split()[0].endswith("env_cost.py"), calls
    (out / "env_cost.json").write_text(json.dumps({"num_envs": 32, "steps_per_call": 500, "envs": {"CartPole-v1": {}}}))
    assert sweep(*flags, env={"PYTHON": python}).returncode == 0
    assert len(measures.read_text().splitlines()) == 2


def test_a_finished_sweep_rerun_measures_nothing_again(tmp_path):
    """The env costs and the hand-over floor belong to the runs they were measured with: a rerun with nothing left to
    run does not measure (nor overwrite) them."""
    out, (python, measures) = tmp_path / "out", stub_python(tmp_path)
    flags = ["--preset", "quick", "--experiments", "sync", "--variants", "torch", "--out", str(out)]
    assert sweep(*flags, env={"PYTHON": python}).returncode == 0
    calls = measures.read_text().splitlines()
    assert [c.split()[0].rsplit("/", 1)[1] for c in calls] == ["env_cost.py", "host_cost.py"]
    again = sweep(*flags, env={"PYTHON": python})
    assert again.returncode == 0 and summary(again.stdout) == (0, 1, 0)
    assert measures.read_text().splitlines() == calls


@pytest.mark.parametrize(
    "signals, ignored",
    [([signal.SIGHUP], ()), ([signal.SIGINT, signal.SIGINT], ()), ([signal.SIGINT, signal.SIGINT], (signal.SIGINT,))],
    ids=["hangup", "ctrl-c twice", "ctrl-c twice, started with SIGINT ignored"],
)
def test_a_hangup_or_a_second_ctrl_c_ends_the_sweep_with_its_summary_and_leaves_nothing_in_tmpdir(tmp_path, signals, ignored):
    """A closed terminal is a Ctrl-C; a second Ctrl-C while the sweep stops its run changes nothing: the summary, exit
    130, no traceback, and nothing in TMPDIR (the run's caches, the slots' messages) or OUT but records and logs. A
    sweep started with SIGINT ignored (a script's background job) stops on it all the same: its run could not ignore
    it, and would otherwise be recorded as a crash while the sweep went on."""
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = {"PYTHON": fake_python(tmp_path), "TMPDIR": str(tmp), "FAKE_LINGER": "30"}
    proc = start([*FAKE_PLAN, "--out", str(out)], env, ignored)
    wait_until(lambda: run_files(out))  # the first run wrote its record and lingers
    for sent in signals:
        with contextlib.suppress(ProcessLookupError):  # (the sweep may have ended before a second)
            os.killpg(proc.pid, sent)  # the whole group, as a terminal does
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in stdout and "summary: ran" in stdout, stdout
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert list(tmp.iterdir()) == []
    assert not list(out.rglob(".tmp-*")) and not list((out / "logs").glob(".slots.*"))


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--envs", ""], "--envs needs a value; got an empty one"),
        (["--variants", ""], "--variants needs a value; got an empty one"),
        (["--out", ""], "--out needs a value; got an empty one"),
        (["--out", "--list"], "--out needs a value; got the option --list"),
        (["--variants", "--dry-run"], "--variants needs a value; got the option --dry-run"),
        (["--sizes", "x"], "--sizes: unknown value 'x'; valid: s m l c d"),
        (["--experiments", "overall,"], None),  # a trailing comma ends the list, as bash reads it
    ],
)
def test_an_empty_list_or_an_unknown_value_names_its_option(tmp_path, flags, message):
    proc = sweep(*FAKE_PLAN, *flags, "--dry-run", "--out", str(tmp_path / "out"))
    if message is None:
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"benchmark.sh: {message}\n"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--envs", "Breakout-MinAtar"], "the stacks experiment runs on CartPole-v1, Acrobot-v1 and Pendulum-v1 only"),
        (["--variants", "jax_nnx"], "the stacks experiment runs jax_linen, torch, torch_compile only"),
    ],
)
def test_a_plan_with_nothing_to_run_is_refused_saying_why(tmp_path, flags, message):
    proc = sweep("--preset", "quick", "--experiments", "stacks", *flags, "--dry-run", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"benchmark.sh: nothing to run: {message}"), proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--variants", "torch+torchenv", "--envs", "Breakout-MinAtar"],
            "torch+torchenv runs on CartPole-v1, Acrobot-v1 and Pendulum-v1",
        ),
        (["--experiments", "seeds", "--variants", "jax_linen+pyloop"], "jax_linen+pyloop steps its rollout from Python"),
    ],
)
def test_a_combination_that_can_only_fail_is_refused_in_the_plan(tmp_path, flags, message):
    proc = sweep("--preset", "quick", *flags, "--dry-run", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stderr.startswith(f"benchmark.sh: {message}"), proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "experiments, sizes, refused",
    [("learn", "m", "the learn experiment runs"), ("seeds,overall", "m,l", "the seeds experiment runs"), ("learn", "s,m", "")],
)
def test_an_experiment_made_at_size_s_alone_is_refused_sizes_without_s(tmp_path, experiments, sizes, refused):
    """learn (each script's defaults), seeds and scaling plan size s whatever --sizes says: a list without s is refused
    in one line before anything runs, not planned at s in silence; with s among them, they run at s."""
    out, python = tmp_path / "out", fake_python(tmp_path)
    flags = ["--preset", "quick", "--variants", "jax_linen", "--experiments", experiments, "--sizes", sizes]
    proc = sweep(*flags, "--repeats", "1", "--out", str(out), *["--dry-run"] * (not refused), env={"PYTHON": python})
    if not refused:
        assert proc.returncode == 0 and "learn/jax_linen__CartPole-v1__s__seed1" in proc.stdout, proc.stderr
        return
    assert proc.returncode == 2 and proc.stdout == "" and not out.exists(), proc.stdout
    (line,) = proc.stderr.splitlines()
    assert line == (
        f"benchmark.sh: --sizes {sizes}: {refused} at size s only; add s to --sizes, or leave"
        f" {experiments.split(',')[0]} out of --experiments"
    )


def test_an_out_with_a_space_is_refused_where_torch_compile_runs(tmp_path):
    flags = ["--preset", "quick", "--experiments", "overall", "--dry-run", "--out", str(tmp_path / "my out")]
    refused = sweep(*flags, "--variants", "jax_linen,torch_compile")
    assert refused.returncode == 2 and "has a space, which torch.compile's C++ build cannot take" in refused.stderr
    assert not (tmp_path / "my out").exists()
    assert sweep(*flags, "--variants", "jax_linen,torch").returncode == 0


@pytest.mark.slow  # several plans; the options' refusals keep their checks by default
def test_a_repeated_env_variant_or_size_is_planned_once_with_a_note(tmp_path):
    flags = ["--preset", "quick", "--experiments", "overall", "--dry-run", "--out", str(tmp_path / "out")]
    proc = sweep(*flags, "--envs", "CartPole-v1,Acrobot-v1,CartPole-v1", "--variants", "torch,torch", "--sizes", "s,s")
    assert proc.returncode == 0, proc.stderr
    names = listing(proc.stdout)
    assert sorted(names) == ["overall/torch__Acrobot-v1__s__seed1", "overall/torch__CartPole-v1__s__seed1"]
    assert "benchmark.sh: note: --envs names CartPole-v1 more than once; each is planned once" in proc.stderr
    assert "--variants names torch more than once" in proc.stderr and "--sizes names s more than once" in proc.stderr
