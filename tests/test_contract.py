"""The contract every variant script shares: flags, the schema-2 JSON, TensorBoard, bad input."""

import dataclasses
import datetime
import json
import os
import platform
import stat
import subprocess

import pytest

from bench import load_script
from bench.compiler_caches import warm_compiler_caches
from bench.plan_runs import Run
from bench.run_records import ALLOCATOR, XLA_ONE_THREAD, other_settings
from benchback import gymnax_envs, record
from benchback.checks import UsageError, check_coefficients
from benchback.cli import main
from benchback.machine import cpu_info
from benchback.record import write_json_atomic
from conftest import (
    EAGER_JAX_SLOW,
    JIT_VARIANTS,
    QUIET,
    ROOT,
    SCRIPTS,
    SHORT,
    VARIANTS,
    as_flags,
    framework,
    in_background,
    load,
    read_json,
    run_script,
    tensorboard_events,
)

SCHEMA_KEYS = {
    "schema_version",
    "variant",
    "status",
    "env_id",
    "env_backend",
    "action_space",
    "normalization",
    "rollout",
    "hidden",
    "seed",
    "args",
    "device",
    "devices",
    "gpu",
    "host",
    "cpu",
    "xla_flags",
    "peak_host_memory_mb",
    "versions",
    "git_commit",
    "matmul_precision",
    "param_count",
    "env_steps",
    "grad_steps",
    "sync_timing",
    "setup_duration",
    "iteration_durations",
    "rollout_durations",
    "update_durations",
    "total_duration",
    "compiles_after_first_iteration",
    "caches",
    "episodic_return",
    "episodes",
    "final_return",
    "final_window",
    "timestamp",
}
TENSORBOARD_TAGS = {
    "charts/episodic_return",
    "charts/episodic_length",
    "charts/learning_rate",
    "charts/SPS",
    "losses/value_loss",
    "losses/policy_loss",
    "losses/entropy",
    "losses/old_approx_kl",
    "losses/approx_kl",
    "losses/clipfrac",
    "losses/explained_variance",
}


def cpus_in(part: str) -> int:
    """How many CPUs one item of a Linux CPU list names: "3" or "0-3"."""
    first, _, last = part.strip().partition("-")
    return int(last or first) - int(first) + 1


def mlp_params(sizes):
    return sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:]))


def check_record(
    record,
    variant,
    *,
    env_id,
    hidden,
    seed,
    iterations,
    batch,
    grad_steps_per_iteration,
    sync_timing,
    obs_dim,
    num_actions,
    episodes_finish=True,
):
    assert set(record) == SCHEMA_KEYS
    module = load(variant)
    assert record["schema_version"] == 2
    assert record["variant"] == variant == module.VARIANT
    assert record["status"] == "ok"
    assert record["env_id"] == env_id
    assert record["hidden"] == list(hidden)
    assert record["seed"] == seed
    assert set(record["args"]) == {f.name for f in dataclasses.fields(module.Args)}
    assert record["args"]["env_id"] == env_id and record["args"]["sync_timing"] == sync_timing
    assert record["device"] == "cpu" and record["gpu"] is None  # every test run passes --no-cuda
    assert record["host"] == platform.node()
    # The CPU as lscpu reads it (Linux's own name for the model), and the cores the run may use, as taskset sees them.
    lscpu = dict(
        map(str.strip, line.split(":", 1))
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
    )
    assert record["cpu"]["model"] == f"{lscpu['Model name']} (family {lscpu['CPU family']}, model {lscpu['Model']})"
    allowed = subprocess.run(["taskset", "-cp", str(os.getpid())], capture_output=True, text=True).stdout.split(":")[1]
    assert record["cpu"]["cores"] == sum(cpus_in(part) for part in allowed.split(","))
    # The OpenMP settings the run saw: this process's (the run inherits them), and the torch scripts' own defaults
    # where the environment sets none.
    own = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "3000"} if framework(variant) == "torch" else {}
    expected = {k: os.environ.get(k, own.get(k)) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    assert record["cpu"]["openmp"] == expected
    assert record["cpu"]["allocator"] == {k: os.environ.get(k) for k in ALLOCATOR}
    assert record["xla_flags"] == os.environ.get("XLA_FLAGS")
    # Peak RSS in MiB: a process that imported jax holds more than 100 MiB, and less than this machine has.
    assert 100 < record["peak_host_memory_mb"] < os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
    assert record["devices"] == ({"torch": "cpu", "jax": "cpu:0"} if framework(variant) == "torch" else {"jax": "cpu:0"})
    expected_versions = {"python", "jax", "jaxlib", "flax", "optax", "gymnax", "numpy"}
    assert expected_versions | ({"torch"} if framework(variant) == "torch" else set()) <= set(record["versions"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    assert record["git_commit"] == (head.stdout.strip() if head.returncode == 0 else None)
    assert record["matmul_precision"] == "highest"
    expected_params = mlp_params([obs_dim, *hidden, num_actions]) + mlp_params([obs_dim, *hidden, 1])
    assert record["param_count"] == expected_params
    assert record["env_steps"] == iterations * batch
    assert record["grad_steps"] == iterations * grad_steps_per_iteration
    assert record["sync_timing"] is sync_timing
    durations = record["iteration_durations"]
    assert len(durations) == iterations and all(d > 0 for d in durations)
    assert record["setup_duration"] > 0
    assert record["total_duration"] >= record["setup_duration"] + sum(durations)
    if sync_timing:
        for part in ("rollout_durations", "update_durations"):
            assert len(record[part]) == iterations and all(d > 0 for d in record[part])
        assert all(r + u <= d for r, u, d in zip(record["rollout_durations"], record["update_durations"], durations))
    else:
        assert record["rollout_durations"] is None and record["update_durations"] is None
    assert record["compiles_after_first_iteration"] == 0
    assert record["caches"]["persistent"] is False and record["caches"]["jax"] == {"hits": 0, "misses": 0}  # cold
    returns = record["episodic_return"]
    assert len(returns) == iterations
    if not episodes_finish:
        assert returns == [None] * iterations and record["final_return"] is None
        return datetime.datetime.strptime(record["timestamp"], "%Y-%m-%dT%H:%M:%S%z")
    finished = [r for r in returns if r is not None]
    assert finished and all(r > 0 for r in finished)  # CartPole pays +1 per step
    assert record["final_return"] is not None and min(finished) <= record["final_return"] <= max(finished)
    datetime.datetime.strptime(record["timestamp"], "%Y-%m-%dT%H:%M:%S%z")


def test_cli_smoke_run_writes_schema_2_json_and_tensorboard(variant, smoke):
    proc, cwd, out = smoke(variant)
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stdout.splitlines() if line.startswith("iteration ")]
    assert len(progress) == 3 and "SPS" in progress[0] and "return" in progress[0]
    check_record(
        read_json(out),
        variant,
        env_id="CartPole-v1",
        hidden=(32, 16),
        seed=3,
        iterations=3,
        batch=256,
        grad_steps_per_iteration=8,
        sync_timing=False,
        obs_dim=4,
        num_actions=2,
    )
    assert [p.name for p in out.parent.iterdir()] == ["result.json"]  # no temporary file left behind

    (run_dir,) = (cwd / "runs").iterdir()
    assert run_dir.name.startswith(f"CartPole-v1__{load(variant).Args().exp_name}__3__")
    events = tensorboard_events(run_dir)
    tags = set(events.Tags()["tensors"]) | set(events.Tags()["scalars"])
    assert TENSORBOARD_TAGS | {"hyperparameters"} <= tags


def test_a_scripts_record_is_done_for_the_plan_that_gives_its_command(variant, smoke):
    """A resumed sweep counts a record done when its whole args are the script's defaults, read from its source, with
    the plan's flags: the record of a real run of those flags is, every field as the script's parser made it."""
    proc, _, out = smoke(variant)
    assert proc.returncode == 0, proc.stderr
    script = SCRIPTS[variant]
    exp_name = script.removesuffix(".py")  # the smoke run passes none: the script's name, as the plan would pass it
    run = Run("x", script, "CartPole-v1", "32,16", 3, exp_name, "s", 3, " ".join(SHORT), variant)
    assert other_settings(read_json(out), run) == ""
    assert other_settings(read_json(out), run._replace(flags=" ".join([*SHORT, "--gamma", "0.9"]))).startswith("--gamma")


# Iterations of 4 envs x 16 steps and one small update, for tests that need only a few of them.
TINY = dict(cuda=False, hidden="16", num_envs=4, num_steps=16, num_minibatches=2, update_epochs=1, **QUIET)


def tiny_run(directory, variant, env_id, iterations, *flags):
    """The script's process on TINY iterations of env_id, its record, and what it left in its directory."""
    out = directory / "out" / "result.json"
    steps = ["--total-timesteps", str(4 * 16 * iterations), "--json-out", str(out)]
    proc = run_script(variant, *as_flags(TINY), "--env-id", env_id, *steps, *flags, cwd=directory)
    return proc, read_json(out) if out.exists() else None, sorted(p.name for p in directory.iterdir())


@pytest.mark.slow  # two real runs, most of a minute on 2 cores; test_benchmark checks the sweep gives them the caches
@pytest.mark.parametrize("variant", ["jax_linen", "torch_compile"])
def test_a_run_given_warm_caches_loads_what_the_run_before_compiled(variant, tmp_path):
    """Two runs sharing the sweep's caches (benchmark.sh's warm ones): the first compiles and writes every program,
    the second loads them all and compiles nothing; both record it, and count a hit as a compilation."""
    env = {**warm_compiler_caches(str(tmp_path / "caches")), "TORCH_COMPILE_FORCE_DISABLE_CACHES": "0"}
    found = []
    for run in ("first", "second"):
        (tmp_path / run).mkdir()
        out = tmp_path / run / "result.json"
        flags = [*as_flags(TINY), "--env-id", "CartPole-v1", "--total-timesteps", str(4 * 16 * 2), "--json-out", str(out)]
        proc = run_script(variant, *flags, cwd=tmp_path / run, env=env)
        assert proc.returncode == 0, proc.stderr
        found.append(read_json(out))
    first, second = (record["caches"] for record in found)
    assert first["persistent"] and second["persistent"]
    assert first["jax"]["misses"] > 0 and second["jax"]["misses"] == 0 and second["jax"]["hits"] >= first["jax"]["misses"]
    if variant == "torch_compile":
        assert first["inductor"]["misses"] > 0 and second["inductor"] == {"hits": first["inductor"]["misses"], "misses": 0}
    assert all(record["compiles_after_first_iteration"] == 0 for record in found)


def sync_timed_run(directory, variant):
    return tiny_run(directory, variant, "Acrobot-v1", 3, "--sync-timing")


@pytest.mark.parametrize("variant", EAGER_JAX_SLOW)
@in_background(sync_timed_run)
def test_sync_timing_times_rollout_and_update_separately(variant, background):
    proc, record, left = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    # An untrained Acrobot episode lasts 500 steps: none finishes in 48, so every return is null.
    check_record(
        record,
        variant,
        env_id="Acrobot-v1",
        hidden=(16,),
        seed=1,
        iterations=3,
        batch=64,
        grad_steps_per_iteration=2,
        sync_timing=True,
        obs_dim=6,
        num_actions=3,
        episodes_finish=False,
    )
    assert left == ["out"]  # --no-tensorboard: the record alone


def mountain_car_run(directory, variant):
    return tiny_run(directory, variant, "MountainCar-v0", 2)


@pytest.mark.parametrize("variant", JIT_VARIANTS)
@in_background(mountain_car_run)
def test_weakly_typed_env_state_does_not_recompile_the_iteration(variant, background):
    """MountainCar's reset makes a weakly typed field, its step a strong one: the jitted iteration
    must not see the state's types change between iterations 0 and 1."""
    proc, record, _ = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert record["compiles_after_first_iteration"] == 0


def pendulum_run(directory, variant):
    return tiny_run(directory, variant, "Pendulum-v1", 2)


# One script per framework by default; the others (about a minute together on 2 cores) under the slow marker.
@pytest.mark.parametrize(
    "variant", [v if v in ("jax_linen", "torch") else pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS]
)
@in_background(pendulum_run)
def test_a_continuous_action_run_names_its_action_space_and_compiles_once(variant, background):
    """Pendulum-v1, a torque in [-2, 2]: a Gaussian policy, trained and recorded as a discrete one is, with no
    recompilation; its parameters are the two networks' and one log standard deviation."""
    proc, record, _ = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert record["action_space"] == {"kind": "continuous", "shape": [1], "low": -2.0, "high": 2.0}
    assert record["normalization"] is None
    assert record["compiles_after_first_iteration"] == 0
    assert all(r is None or r < 0 for r in record["episodic_return"])  # Pendulum's rewards are costs
    layers = lambda sizes: sum(a * b + b for a, b in zip(sizes, sizes[1:]))  # TINY's hidden layer: 16
    assert record["param_count"] == 2 * layers([3, 16, 1]) + 1


BAD_INPUTS = [
    (["--env-id", "NoSuchEnv-v0"], "unsupported --env-id 'NoSuchEnv-v0'; discrete-action ids: CartPole-v1"),
    (["--env-id", "MNISTBandit-bsuite"], "unsupported --env-id 'MNISTBandit-bsuite'"),
    (["--num-minibatches", "7"], "not divisible by --num-minibatches 7"),
    (["--hidden", ""], "--hidden"),
    (["--hidden", "64,,64"], "--hidden"),
    (["--hidden", "64,0"], "--hidden"),
    (["--total-timesteps", "100"], "--total-timesteps 100 is smaller than one batch"),
    (["--num-envs", "0"], "--num-envs must be positive"),
    (["--num-steps", "-1"], "--num-steps must be positive"),
    (["--update-epochs", "0"], "--update-epochs must be positive"),
    (["--num-minibatches", "0"], "--num-minibatches must be positive"),
    (["--no-cuda", "--matmul-precision", "high"], "only highest is the same arithmetic"),
    (["--learning-rate", "0"], "--learning-rate must be positive; got 0.0"),
    (["--clip-coef", "-0.2"], "--clip-coef must be positive"),
    (["--max-grad-norm", "inf"], "--max-grad-norm must be positive; got inf"),
    (["--ent-coef", "nan"], "--ent-coef must be 0 or more; got nan"),
    (["--vf-coef", "-1"], "--vf-coef must be 0 or more"),
    (["--gamma", "1.5"], "--gamma must be between 0 and 1; got 1.5"),
    (["--gae-lambda", "-0.1"], "--gae-lambda must be between 0 and 1"),
    # what no run can use: a seed beyond every generator's, networks larger than this machine's memory
    (["--seed", "18446744073709551616"], "--seed must be between 0 and 4294967295"),
    (["--seed", "4294967296"], "--seed must be between 0 and 4294967295"),
    (["--hidden", "99999999999999999999"], "--hidden 99999999999999999999 needs"),
    (["--hidden", "1000000,1000000"], "GiB for its networks' parameters alone; this machine has"),
]


@pytest.mark.parametrize("flags,message", BAD_INPUTS, ids=[" ".join(f) for f, _ in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(variant, flags, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(load(variant).Args, load(variant).train, [*flags, "--json-out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "\n" not in err and err.startswith("error: ") and message in err
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_env_id_is_answered_with_the_ids_the_script_can_train(variant):
    """Every id bench/env_cost.py takes, by the kind of its actions: gymnax's action space says which."""
    import gymnax

    module = load(variant)
    with pytest.raises(UsageError) as refused:
        module.check_args(module.Args(env_id="NoSuchEnv-v0", cuda=False))
    said = str(refused.value).split("; ", 1)[1]
    kinds = dict(part.split("-action ids: ") for part in said.split("; "))
    ids = {kind: listed.split(", ") for kind, listed in kinds.items()}
    taken = load_script.load("bench/env_cost.py", "benchback_contract_env_cost").bad_env(["NoSuchEnv-v0"]).split("; ids: ")[1]
    assert sorted(ids["discrete"] + ids["continuous"]) == sorted(taken.split(", "))
    assert {"CartPole-v1", "Breakout-MinAtar", "Craftax-Classic-Symbolic-v1"} <= set(ids["discrete"])
    assert {"Pendulum-v1", "MountainCarContinuous-v0"} <= set(ids["continuous"])
    for env_id in ids["continuous"]:
        env, params = gymnax.make(env_id)
        assert isinstance(env.action_space(params), gymnax.environments.spaces.Box), env_id


def test_the_record_names_the_allocator_setting_it_ran_under(variant, monkeypatch):
    """glibc's tunables or a preloaded malloc change how fast freed memory is had again: cpu_info says which, under
    the names the tools compare settings by (run_records.ALLOCATOR)."""
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_max=0")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    expected = {k: "glibc.malloc.mmap_max=0" if k == "GLIBC_TUNABLES" else None for k in ALLOCATOR}
    assert cpu_info()["allocator"] == expected


def test_each_coefficient_range_keeps_its_edges(variant):
    """The checks above refuse only what is out of range: gamma 1, lambda 0 and no entropy or value term are PPO."""
    module = load(variant)
    check_coefficients(module.Args(gamma=1.0, gae_lambda=0.0, ent_coef=0.0, vf_coef=0.0, learning_rate=1e-12))
    with pytest.raises(UsageError, match="--gamma must be between 0 and 1"):
        check_coefficients(module.Args(gamma=1.0 + 1e-9))


# One script per framework: the path from the shell (main, its exit code) is harness code, which tests/test_shared.py
# holds identical among the scripts of a framework; every script's own checks run in-process above.
ONE_PER_FRAMEWORK = [v for i, v in enumerate(VARIANTS) if framework(v) not in map(framework, VARIANTS[:i])]


def run_with_a_bad_env(directory, variant):
    """The script's process given an env id no library has, and what it left in its directory."""
    proc = run_script(variant, "--env-id", "NoSuchEnv-v0", "--json-out", "x.json", cwd=directory)
    return proc, list(directory.iterdir())


@pytest.mark.parametrize("variant", ONE_PER_FRAMEWORK)
@in_background(run_with_a_bad_env)
def test_bad_input_from_the_shell_exits_2(variant, background):
    proc, left = background
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "continuous-action ids: Pendulum-v1" in proc.stderr
    assert left == []


def run_with_xla_flags(directory, variant):
    """The script's process on one TINY iteration with XLA told to keep each operation on one thread."""
    out = directory / "result.json"
    flags = [*as_flags(TINY), "--total-timesteps", str(4 * 16), "--json-out", str(out)]
    return run_script(variant, *flags, cwd=directory, env={"XLA_FLAGS": XLA_ONE_THREAD}), out


@pytest.mark.parametrize("variant", ONE_PER_FRAMEWORK)
@in_background(run_with_xla_flags)
def test_the_record_names_the_xla_flags_it_ran_under(variant, background):
    """XLA_FLAGS change how XLA runs every framework's env steps (and all of a JAX iteration, on a CPU its threads, on
    a GPU its command buffers): the record says which, for the tools that never compare runs under two settings."""
    proc, out = background
    assert proc.returncode == 0, proc.stderr
    assert read_json(out)["xla_flags"] == XLA_ONE_THREAD


def test_the_record_is_written_whole_and_readable_as_any_file_the_user_makes(variant, tmp_path):
    """A results directory shared on a cluster needs the umask's mode, not a temporary file's 0600."""
    path = tmp_path / "deeper" / "x.json"
    write_json_atomic(str(path), {"status": "ok"})
    umask = os.umask(0)
    os.umask(umask)
    assert read_json(path) == {"status": "ok"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]  # no temporary file left


@pytest.mark.parametrize(
    "flags, named", [(["--no-such-flag"], "--no-such-flag"), (["--json-out"], "--json-out"), (["--num-envs", "many"], "many")]
)
def test_a_command_line_tyro_cannot_read_is_one_line_and_exit_2(variant, flags, named, capsys):
    with pytest.raises(SystemExit) as exited:
        main(load(variant).Args, load(variant).train, flags)
    assert exited.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and named in line and line.endswith("(--help lists every flag)"), line


def test_help_documents_every_flag(variant, capsys):
    module = load(variant)
    with pytest.raises(SystemExit) as exited:
        main(module.Args, module.train, ["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for field in dataclasses.fields(module.Args):
        flag = "--" + field.name.replace("_", "-")
        assert flag in text, flag


def test_the_usage_page_flag_table_covers_every_flag(variant):
    usage = (ROOT / "docs" / "usage.md").read_text()
    table = [line for line in usage.splitlines() if line.startswith("| `--")]
    for field in dataclasses.fields(load(variant).Args):
        flag = "--" + field.name.replace("_", "-")
        assert any(f"`{flag}`" in row or f"`{flag}/" in row for row in table), flag


@pytest.mark.parametrize(
    "where, message",
    [
        ("results", "is a directory; name a file in it, such as"),
        ("notes.txt/run.json", "notes.txt' is a file"),
        ("/proc/benchback/run.json", "cannot be written: "),
        ("new/", "'new/' names a directory; name a file in it, such as 'new/run.json'"),
        ("notes.txt/", "'notes.txt/' names a directory"),
        ("", "--json-out is empty; name a file"),
        ("results/kept.json", "'results/kept.json' is read-only"),
    ],
)
def test_a_json_out_that_cannot_be_written_is_refused_before_anything_is_built(
    variant, where, message, tmp_path, monkeypatch, capsys
):
    module = load(variant)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "kept.json").write_text("{}")
    (tmp_path / "results" / "kept.json").chmod(0o444)  # made read-only by its owner: never replaced in silence
    (tmp_path / "notes.txt").write_text("")

    def built(*args, **kwargs):
        raise AssertionError("the environment was built before --json-out was checked")

    monkeypatch.setattr(gymnax_envs.gymnax, "make", built)
    code = main(module.Args, module.train, ["--json-out", where])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and err.startswith("error: --json-out ") and message in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["kept.json", "notes.txt", "results"]
    assert (tmp_path / "results" / "kept.json").read_text() == "{}"


def test_a_record_that_cannot_be_written_at_the_end_is_printed_and_leaves_no_file(variant, tmp_path, monkeypatch, capsys):
    """The disk filled during the run: the temporary file goes, the numbers are printed, the exit code is 1."""
    module = load(variant)
    result = {"iteration_durations": [2.0, 0.5], "final_return": 21.0, "compiles_after_first_iteration": 0}
    monkeypatch.setattr(module, "train", lambda args: result)
    real_dump = json.dump

    def disk_full(record, f, **kwargs):
        real_dump({"half": "a record"}, f)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(record.json, "dump", disk_full)
    code = main(module.Args, module.train, ["--json-out", str(tmp_path / "out" / "run.json"), "--quiet"])
    monkeypatch.setattr(record.json, "dump", real_dump)
    out, err = capsys.readouterr()
    assert code == 1 and json.loads(out) == result
    assert err.strip().startswith("error: the record could not be written to") and "No space left on device" in err
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []
