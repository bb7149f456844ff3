"""Each study in studies/ runs, tiny: they reach into the scripts (their closures, Agent, check_args, compute_gae), so a
rename in a script must fail here rather than the next time someone runs the study. About five minutes on 2 cores,
so opt-in with the other slow tests: python -m pytest -m slow tests/test_studies.py"""

import importlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, VARIANTS, needs

# study -> its arguments for a run of a few iterations, and a key (or a path of keys) of the JSON it writes
STUDIES = {
    "linen_overhead": (["--iterations", "2", "--rounds", "1"], "plain_s", "jax_linen"),
    "equinox_filter_jit": (
        ["--iterations", "2", "--rounds", "2", "--calls", "5", "--pairs", "2"],  # a ratio's interval needs 2 rounds
        "steady_equinox_over_linen",
        "jax_equinox",
    ),
    "same_start": (["--seeds", "1", "--iterations", "2"], "1", "jax_nnx"),
    "torch_compile_check": (["--seed", "1", "--iterations", "2"], "sampler", "torch_compile"),
    "gae_doubling": (["--blocks", "2", "--calls", "2"], "ratio_doubling_over_loop", "torch"),
    "seeds_learn": (["--num-seeds", "3", "--total-timesteps", "8192"], "statistics", "jax_linen"),
    "craftax_scan": (
        ["--num-envs", "2", "--num-steps", "2", "--blocks", "2", "--settings", "keep_memory"],
        "keep_memory",
        "jax_linen",
    ),
    "same_program": (["--other-code", str(ROOT), "--variants", "jax_linen"], ("variants", "jax_linen", "same"), "jax_linen"),
    "same_returns": (["--other-code", str(ROOT), "--variants", "torch"], ("runs", "torch", "same_returns"), "torch"),
    "run_settings": (
        ["--variants", "jax_linen,torch", "--settings", "keep_memory,one_core", "--blocks", "2", "--iterations", "2"]
        + ["--env-id", "CartPole-v1"],
        ("variants", "torch", "multiple_of_linen_over_scripts_own", "keep_memory"),
        "torch",
    ),
}


def test_same_program_tells_a_changed_constant_from_a_renumbered_instruction():
    from studies.same_program import normalized

    line = '%add.12 = f32[8]{0} add(f32[8] %x.3, f32[8] %c.4), metadata={op_name="a" source_file="/old/ppo.py"}'
    assert normalized(line) == normalized(line.replace(".12", ".99").replace("/old/", "/new/"))
    constant = "%c.4 = f32[] constant(0.5)"
    assert normalized(constant) != normalized(constant.replace("0.5", "0.25"))
    # an instruction named after the function it was traced in: the same program under another function's name
    traced = "%rollout__locals__step.7 = u32[3]{0} get-tuple-element(%call.2), index=2\n%b.1 = u32[] slice(%rollout__locals__step.7)"
    assert normalized(traced) == normalized(traced.replace("rollout__locals__step", "rollout__locals__env_step"))
    assert normalized(traced) != normalized(traced.replace("index=2", "index=1"))
    assert normalized(traced) != normalized(traced.replace("slice(%rollout__locals__step.7)", "slice(%call.2)"))


# a study runs as a module of the root's studies package, from any directory
ROOT_ON_PATH = {**os.environ, "PYTHONPATH": str(ROOT)}


def study_command(study: str) -> list:
    return [sys.executable, "-m", f"studies.{study}"]


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(STUDIES))
def test_a_study_runs_and_writes_its_result(study, tmp_path):
    flags, key, variant = STUDIES[study]
    if variant not in VARIANTS:
        pytest.skip(f"variant script missing: {variant}")
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [*study_command(study), *flags, "--out", str(out)],
        cwd=tmp_path,
        env=ROOT_ON_PATH,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    node = json.loads(out.read_text())
    for step in key if isinstance(key, tuple) else (key,):
        assert step in node, (step, node)
        node = node[step]


def test_torch_compile_parts_names_the_functions_the_script_compiles():
    """Each part is a function ppo_torch_compile.py hands to its `compiled` (called or as a decorator): a part named
    after no such function would never be compiled, and the study would time eager code under its name."""
    import ast

    from studies.torch_compile_parts import PARTS

    tree = ast.parse((ROOT / "ppo_torch_compile.py").read_text())
    handed = {
        getattr(node.args[0], "id", getattr(node.args[0], "attr", None))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "compiled" and node.args
    }
    handed |= {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and any(getattr(d, "id", None) == "compiled" for d in node.decorator_list)
    }
    assert set(PARTS.values()) <= handed, f"{sorted(set(PARTS.values()) - handed)} not compiled by the script ({handed})"


@pytest.mark.slow
@needs("torch_compile")
def test_torch_compile_parts_runs_a_part_compiled_alone(tmp_path):
    proc = subprocess.run(
        [*study_command("torch_compile_parts"), "--parts", "critic", "--seeds", "1"]
        + ["--iterations", "2", "--out", str(tmp_path)],
        cwd=tmp_path,
        env=ROOT_ON_PATH,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((tmp_path / "critic" / "seed1.json").read_text())
    assert record["compiled_parts"] == ["critic"] and len(record["iteration_durations"]) == 2


@pytest.mark.slow
def test_the_craftax_study_reads_the_sweeps_craftax_runs_and_plays_a_random_policy(tmp_path):
    records = tmp_path / "records"
    (records / "overall").mkdir(parents=True)
    env_id = "Craftax-Classic-Symbolic-v1"
    (records / "env_cost.json").write_text(json.dumps({"num_envs": 32, "envs": {env_id: {"median_s": 0.01}}}))
    for variant, base in (("jax_linen", 2.0), ("torch", 2.2)):
        for seed in (1, 2, 3):
            record = {"status": "ok", "variant": variant, "final_return": base + seed / 10}
            record |= {"args": {"num_envs": 32, "num_steps": 256}, "iteration_durations": [9.0, base * 2, base * 2]}
            (records / "overall" / f"{variant}__{env_id}__s__seed{seed}.json").write_text(json.dumps(record))
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [
            *study_command("expensive_env"),
            str(records),
            "--random-envs",
            "4",
            "--random-steps",
            "300",
        ]
        + ["--out", str(out)],
        env=ROOT_ON_PATH,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["final_return"]["torch"] == pytest.approx([2.3, 2.4, 2.5]) and result["random_policy"]["episodes"] > 0
    assert result["env_share"]["jax_linen"]["median"] == 0.01 * 256 / 4.0
    assert {row["variant"] for row in result["statistics"]} == {"jax_linen", "torch"}


def test_run_settings_gives_each_settings_ratio_and_its_effect_on_the_multiple_of_linens_time():
    """Linen twice as slow under a setting and torch unchanged: torch's multiple of Linen's halves under it."""
    from studies.run_settings import ratios

    seconds = {
        "jax_linen": {"scripts_own": [1.0, 2.0, 1.5], "keep_freed": [2.0, 4.0, 3.0]},
        "torch": {"scripts_own": [3.0, 6.0, 4.5], "keep_freed": [3.0, 6.0, 4.5]},
    }
    result = ratios(seconds)
    assert result["jax_linen"]["over_scripts_own"]["keep_freed"]["ratio"] == pytest.approx(2.0)
    assert "multiple_of_linen_over_scripts_own" not in result["jax_linen"]
    torch = result["torch"]
    assert torch["over_scripts_own"]["keep_freed"]["ratio"] == pytest.approx(1.0)
    assert torch["multiple_of_linen_over_scripts_own"]["keep_freed"]["ratio"] == pytest.approx(0.5)
    assert torch["multiple_of_linen"]["scripts_own"]["ratio"] == pytest.approx(3.0)
    assert torch["multiple_of_linen"]["keep_freed"]["ratio"] == pytest.approx(1.5)
    assert "multiple_of_linen_over_scripts_own" not in ratios({"torch": seconds["torch"]})["torch"]


def slow(case: tuple):
    return pytest.param(*case, marks=pytest.mark.slow)


# Each study's first case runs by default; the rest (each a process importing JAX and torch) under -m slow.
@pytest.mark.parametrize(
    "study, flags, problem",
    [
        ("run_settings", ["--blocks", "1"], "--blocks 1"),
        slow(("run_settings", ["--variants", "torch,jax"], "ppo_jax.py")),
        slow(("run_settings", ["--settings", "keep_memory,fast"], "unknown setting 'fast'")),
        slow(("run_settings", ["--settings", "scripts_own"], "unknown setting 'scripts_own'")),
        slow(("run_settings", ["--settings", "one_arena,one_arena"], "a setting named twice")),
        slow(("run_settings", ["--size", "xl"], "--size xl")),
        slow(("run_settings", ["--env-id", "CartPole-v9"], "CartPole-v9")),
        slow(("run_settings", ["--settings", "other_code"], "other_code needs --other-code DIR")),
        slow(("run_settings", ["--settings", "other_code", "--other-code", "/nonexistent"], "--other-code: no script")),
        ("craftax_scan", ["--settings", "all_cores,fast"], "unknown setting 'fast'"),
        slow(("craftax_scan", ["--env-id", "Craftax-v9"], "unknown environment 'Craftax-v9'")),
        ("same_program", ["--other-code", str(ROOT), "--variants", "jax_linen", "--env-id", "NoSuchEnv-v0"], "NoSuchEnv"),
        ("same_returns", ["--other-code", str(ROOT), "--variants", "torch", "--env-id", "NoSuchEnv-v0"], "NoSuchEnv"),
        slow(("same_returns", ["--other-code", str(ROOT), "--variants", "torch", "--backends", "envpool"], "envpool")),
    ],
)
def test_a_study_refuses_bad_input_before_any_run(study, flags, problem, tmp_path):
    assert_refused(study, flags, problem, tmp_path)


@pytest.mark.parametrize(
    "study, env_id, problem",
    [
        ("seeds_learn", "NoSuchEnv-v0", "unknown environment 'NoSuchEnv-v0'"),
        ("linen_overhead", "NoSuchEnv-v0", "unknown environment 'NoSuchEnv-v0'"),
        ("equinox_filter_jit", "NoSuchEnv-v0", "unknown environment 'NoSuchEnv-v0'"),
        # the two that make gymnax's environment and a categorical policy themselves
        ("equinox_filter_jit", "Pendulum-v1", "Pendulum-v1 has continuous actions"),
        ("linen_overhead", "Craftax-Classic-Symbolic-v1", "gymnax.make, which has no Craftax"),
    ],
)
def test_a_study_refuses_an_environment_it_cannot_run_before_any_work(study, env_id, problem, tmp_path, capsys):
    """Each study with an --env-id checks it as the scripts do (one line, exit code 2, nothing written), in this
    process: a subprocess of each would import jax again for every case."""
    module, out = importlib.import_module(f"studies.{study}"), tmp_path / "result.json"
    with pytest.raises(SystemExit) as exited:
        if hasattr(module, "Options"):  # tyro's: main takes the parsed options
            module.main(module.Options(env_id=env_id, out=str(out)))
        else:
            raise SystemExit(module.main(["--env-id", env_id, "--out", str(out)]))
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and problem in err, err
    assert not out.exists()


@pytest.mark.skipif(not shutil.which("taskset"), reason="needs taskset")
def test_run_settings_refuses_one_core_to_a_process_that_has_one(tmp_path):
    """one_core narrows a run to the first of its process's cores: with only one, there is nothing to compare."""
    flags = ["--settings", "one_core", "--env-id", "CartPole-v1"]
    assert_refused("run_settings", flags, "one_core needs more than 1 core(s)", tmp_path, ["taskset", "-c", "0"])


def assert_refused(study, flags, problem, tmp_path, prefix=()):
    """The study, run with these flags (after the prefix command), is refused in one line, exit 2, nothing written."""
    out = tmp_path / "result.json"
    command = [*prefix, *study_command(study), *flags, "--out", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, env=ROOT_ON_PATH)
    assert proc.returncode == 2 and problem in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert not out.exists()
