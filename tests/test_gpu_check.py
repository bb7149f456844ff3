"""gpu-check (bench/gpu_check.py, bench/gpu_preflight.py): the preflight's version logic, the sleep detector's decision
and a row's verdict from simulated inputs, PPO's and SAC's; gpu-check end to end on two variants, each in a process of
its own (on a machine without a GPU every GPU-only check is skipped, never ok); a SAC row's process with every check,
and what the race check compares of it; a host sync failing it, in a PPO script and in a SAC one; every variant (slow)."""

import json
import os
import shutil
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from bench import gpu_check, sleep_detector
from bench.gpu_check import COLUMNS, Row, judge, returns_differ, rows_for
from bench.gpu_preflight import SKIPPED, checks, compiler_check, driver_check, find_compiler
from bench.sleep_detector import sleep_verdict
from bench.variants import discover, scripts
from conftest import ROOT, VARIANTS, in_background, needs

# What the preflight's probe finds on a CPU machine, and on a GPU machine with requirements-gpu.txt installed.
CPU = {"torch": "2.13.0+cpu", "torch_cuda": None, "torch_gpu": False, "jax": "0.10.2", "jax_cuda": None, "jax_platform": "cpu"}
GPU = {"torch": "2.13.0", "torch_cuda": "13.0", "torch_gpu": True, "jax": "0.10.2", "jax_cuda": "13.0", "jax_platform": "gpu"}
CC, PYTHON_H = "/usr/bin/gcc", "/usr/include/python3.11/Python.h"
# The row that shows whether a check sees what Asterix's step costs the host. Compiling its step reads constants to
# the host, which the scripts allow in iteration 0 only.
ASTERIX = "jax_linen@Asterix-MinAtar"


def run_gpu_check(*flags, cwd=ROOT, timeout=900):
    return subprocess.run(
        [sys.executable, "bench/gpu_check.py", *flags], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def tables(stdout: str) -> list:
    """Each markdown table gpu-check prints, as rows of cells, its header first."""
    found, current = [], None
    for line in stdout.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        if current is None:
            current = []
            found.append(current)
        if not line.startswith("|---"):
            current.append([cell.strip() for cell in line.split("|")[1:-1]])
    return found


# ---------------------------------------------------------------- the preflight, from simulated inputs
@pytest.mark.parametrize(
    "driver, cuda, expected",
    [
        ("580.65.06", {"torch": "13.0", "jax": "13.0"}, "ok: driver 580.65.06"),
        ("535.104.05", {"torch": "12.4", "jax": "12.4"}, "ok: driver 535.104.05"),
        ("535.104.05", {"torch": "13.0", "jax": "12.4"}, "FAIL: driver 535.104.05: torch's CUDA 13.0 needs a driver >= 580"),
        ("520.61.05", {"torch": None, "jax": "12.4"}, "FAIL: driver 520.61.05: jax's CUDA 12.4 needs a driver >= 525"),
        ("580.65.06", {"torch": "14.0", "jax": None}, "FAIL: driver 580.65.06: no minimum driver known for torch's CUDA 14.0"),
        ("580.65.06", {"torch": None, "jax": None}, "FAIL: driver 580.65.06, but neither torch nor jax is a CUDA build"),
        (None, {"torch": "13.0", "jax": "13.0"}, "FAIL: nvidia-smi reported no driver version"),
        ("N/A", {"torch": "13.0", "jax": None}, "FAIL: cannot read the driver version"),
    ],
)
def test_the_driver_is_checked_against_each_frameworks_cuda(driver, cuda, expected):
    result = driver_check(driver, cuda, gpu=True)
    assert result.startswith(expected), result


def test_only_the_build_that_the_driver_is_too_old_for_is_named():
    result = driver_check("535.104.05", {"torch": "13.0", "jax": "12.4"}, gpu=True)
    assert "torch's CUDA 13.0" in result and "jax" not in result


def test_without_a_gpu_every_preflight_item_is_skipped_never_ok():
    rows, gpu = checks(None, CPU, CC, PYTHON_H)  # a compiler and Python.h present: still not ok without a GPU
    assert not gpu
    assert [result for _, result in rows] == [SKIPPED] * len(rows)


def test_with_a_gpu_and_the_gpu_install_every_preflight_item_is_ok():
    rows, gpu = checks("580.65.06", GPU, CC, PYTHON_H)
    assert gpu and all(result.startswith("ok") for _, result in rows), rows


def test_a_gpu_that_the_frameworks_do_not_see_fails_the_preflight():
    fallback = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
    rows, gpu = checks("580.65.06", {**CPU, "warning": fallback}, CC, PYTHON_H)  # nvidia-smi lists a GPU
    results = dict(rows)
    assert gpu
    jax = results["JAX's platform is gpu"]
    assert jax.startswith("FAIL: JAX's platform is cpu") and "Falling back to cpu" in jax  # the plugin's own words
    assert results["torch sees the GPU"].startswith("FAIL: torch (a CPU build) sees no GPU")
    assert results["C compiler and Python.h (Triton)"] == SKIPPED  # Triton is torch's: needed only where torch sees the GPU
    rows, _ = checks(None, {**GPU, "jax_cuda": None, "jax_platform": "cpu"}, CC, PYTHON_H)  # torch alone sees it
    assert dict(rows)["JAX's platform is gpu"].startswith("FAIL")


@pytest.mark.parametrize(
    "compiler, python_h, expected",
    [
        (None, PYTHON_H, "FAIL: no C compiler ($CC, gcc or clang): Triton"),
        (CC, None, "FAIL: no Python.h: Triton"),
        (None, None, "FAIL: no C compiler ($CC, gcc or clang) and no Python.h"),
        (CC, PYTHON_H, "ok"),
    ],
)
def test_triton_needs_a_c_compiler_and_python_h_where_torch_sees_a_gpu(compiler, python_h, expected):
    assert compiler_check(True, compiler, python_h).startswith(expected)
    assert compiler_check(False, compiler, python_h) == SKIPPED


def test_the_c_compiler_is_found_as_triton_finds_it(tmp_path, monkeypatch):
    for name in ("cc", "clang"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    assert find_compiler() == str(tmp_path / "clang")  # gcc, else clang; Triton never tries cc
    (tmp_path / "clang").unlink()
    assert find_compiler() is None
    monkeypatch.setenv("CC", "cc -O2")  # $CC first, as Triton takes it
    assert find_compiler() == str(tmp_path / "cc")


# ---------------------------------------------------------------- the sleep detector's decision and a row's verdict
@pytest.mark.parametrize(
    "reached, returned, expected",
    [
        (0.02, 1.01, "ok (0.020 s of a 1.000 s sleep)"),  # at the sync early; the sync waited out the sleep
        (1.01, 1.05, "FAIL: the host reached the final sync 1.010 s into a 1.000 s sleep"),  # something waited on the way
        (0.60, 1.01, "FAIL: the host reached the final sync 0.600 s"),  # too late to tell apart: not ok
        (0.02, 0.05, "FAIL: the iteration ended 0.050 s into a 1.000 s sleep"),  # the sleep held nothing back
    ],
)
def test_the_sleep_detector_decides_by_when_the_host_reached_the_final_sync(reached, returned, expected):
    assert sleep_verdict(1.0, reached, returned, margin_s=0.5).startswith(expected)


FILTER_JIT = sleep_detector.RESULT_WAITS["eqx.filter_jit"]


@pytest.mark.parametrize(
    "waits, allowed, expected",
    [
        ((0.01,), FILTER_JIT, "ok (0.010 s of a 1.000 s sleep; first wait: eqx.filter_jit's own"),  # the call's end
        ((1.01,), FILTER_JIT, "FAIL: the host reached its first wait (eqx.filter_jit's own wait for its result) 1.010 s"),
        ((0.01,), None, "FAIL: the host waited for an array 1 time(s) before the final sync, first 0.010 s"),
        ((0.01, 1.01), FILTER_JIT, "FAIL: the host waited for an array 2 time(s)"),  # a second call after a wait
    ],
)
def test_a_wait_before_the_final_sync_fails_unless_it_is_the_one_its_jit_makes_and_comes_early(waits, allowed, expected):
    """The final sync reached late, after the wait that ended the iteration: only the first wait's time counts."""
    assert sleep_verdict(1.0, 1.02, 1.03, 0.5, waits, allowed).startswith(expected)


def test_returns_agree_to_float_rounding_only():
    run = {"episodic_return": [21.5, None, 30.0], "final_return": 25.0}
    assert returns_differ(run, {"episodic_return": [21.5 * (1 + 1e-6), None, 30.0], "final_return": 25.0}) is None
    assert returns_differ(run, {"episodic_return": [21.5, 12.0, 30.0], "final_return": 25.0})  # an episode more
    assert returns_differ(run, {"episodic_return": [21.5, None, 30.1], "final_return": 25.0})
    assert returns_differ(run, {"episodic_return": [21.5, None], "final_return": 25.0})


RUN = {  # a row's process's result on the CPU
    "error": None,
    "trapped": [],
    "detector": SKIPPED,
    "devices": {"torch": "cpu", "jax": "TFRT_CPU_0"},
    "compiles_after_first_iteration": 0,
    "episodic_return": [20.0, 25.0, 30.0],
    "final_return": 25.0,
}
ON_GPU = {**RUN, "devices": {"torch": "cuda:0", "jax": "cuda:0"}, "detector": "ok (0.010 s of a 1.000 s sleep)"}
TORCH = Row("torch", "torch", {})


def test_a_row_on_the_cpu_passes_with_every_gpu_check_skipped():
    cells = judge(TORCH, False, RUN)
    assert cells["result"] == "ok" and cells["sleep detector"] == cells["race"] == SKIPPED


def test_a_row_on_a_gpu_passes_when_every_check_does():
    cells = judge(TORCH, True, ON_GPU, ON_GPU)
    assert cells["result"] == "ok" and cells["race"] == "ok"


@pytest.mark.parametrize(
    "run, blocking, failed",
    [
        (RUN, RUN, "on the CPU though a GPU is present"),
        ({**ON_GPU, "compiles_after_first_iteration": 2}, ON_GPU, "compiled after iteration 0"),
        ({**ON_GPU, "detector": "FAIL: the host reached the final sync"}, ON_GPU, "sleep detector"),
        (ON_GPU, {**ON_GPU, "final_return": 26.0}, "race"),
        (ON_GPU, {**ON_GPU, "error": "FAIL: RuntimeError: an illegal memory access"}, "race"),
        ({**ON_GPU, "error": "FAIL: Tensor.item inside a timed iteration", "trapped": ["Tensor.item"]}, ON_GPU, "Tensor.item"),
    ],
)
def test_a_row_on_a_gpu_fails_on_any_check(run, blocking, failed):
    result = judge(TORCH, True, run, blocking)["result"]
    assert result.startswith("FAIL") and failed in result, result


def test_asterix_reports_whether_the_detector_saw_the_while_loop_and_fails_on_everything_else():
    asterix = next(row for row in rows_for(["jax_linen"]) if row.name == ASTERIX)
    late = {**ON_GPU, "detector": "FAIL: the host reached the final sync 0.492 s into a 0.488 s sleep"}
    cells = judge(asterix, True, late, ON_GPU)
    assert cells["result"] == "ok" and cells["sleep detector"].startswith("seen: the host reached the final sync 0.492")
    assert judge(asterix, True, ON_GPU, ON_GPU)["sleep detector"].startswith("not seen: ok (0.010 s")
    assert "race" in judge(asterix, True, late, {**ON_GPU, "final_return": 26.0})["result"]
    assert judge(Row("jax_linen", "jax_linen", {}), True, late, ON_GPU)["result"] == "FAIL: sleep detector"


class CountingDetector(sleep_detector.SleepDetector):
    """The sleep detector without its sleep (which needs CUDA): arms where it would, and reports the waits it counted."""

    def prepare(self):
        pass

    def arm(self, duration):
        self.armed = time.perf_counter()

    def verdict(self):
        return {"waits": len(self.waits), "final sync reached": self.reached is not None}


# Each case runs a script, 15-35 s on 2 cores: all under the slow marker (the detector's hooks keep their checks on
# made-up calls by default; on a GPU, gpu_check.py runs the scripts themselves)
@pytest.mark.parametrize(
    "variant, waits",
    [
        pytest.param("jax_linen", 0, marks=pytest.mark.slow),
        pytest.param("jax_nnx", 0, marks=pytest.mark.slow),
        pytest.param("jax_equinox", 1, marks=pytest.mark.slow),
    ],
)
def test_the_detector_counts_each_wait_for_an_array_in_the_last_iteration_of_a_real_script(monkeypatch, variant, waits):
    """On the CPU, what the detector's hooks see of the scripts' last timed iteration: eqx.filter_jit waits for its
    result once (the call that is the whole iteration), jax.jit and nnx's jit do not wait."""
    if variant not in VARIANTS:
        pytest.skip(f"variant script missing: {variant}")
    spec = gpu_check.VARIANTS[variant]
    assert sleep_detector.RESULT_WAITS.get(spec.compiles) == (FILTER_JIT if waits else None)
    monkeypatch.setattr(sleep_detector, "SleepDetector", CountingDetector)
    monkeypatch.setattr(sleep_detector, "detector_skipped", lambda spec, gpu: None)
    module = gpu_check.load(spec.script, f"counting_{variant}")
    with sleep_detector.sleep_detector(module, spec, gpu=True) as outcome:
        module.train(module.Args(**gpu_check.SHORT))
    assert outcome["verdict"] == {"waits": waits, "final sync reached": True}


def test_each_row_runs_in_a_new_process_with_compile_caches_of_its_own_removed_afterwards(monkeypatch):
    calls = []

    def run(command, env, **_):  # stands in for the row's process: writes the result it was asked for
        calls.append((command, env))
        with open(command[command.index("--json-result") + 1], "w") as f:
            json.dump(RUN, f)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(gpu_check.subprocess, "run", run)
    assert gpu_check.run_child(TORCH, gpu=False) == gpu_check.run_child(TORCH, gpu=False) == RUN
    (command, env), (_, again) = calls
    assert command[:4] == [sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--one", "torch"]
    assert env["TORCH_COMPILE_FORCE_DISABLE_CACHES"] == "1"  # as benchmark.sh runs every script
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        assert env[name] != again[name] and not os.path.exists(os.path.dirname(env[name]))


@needs("torch_compile")
def test_cuda_graphs_are_a_gpu_only_row_that_must_repeat_the_returns_without_them():
    graphs = next(row for row in rows_for(["torch_compile"]) if row.gpu_only)  # the setting its TOOLING declares
    assert graphs.fields == {"cuda_graphs": True} and graphs.same_returns_as == "torch_compile"
    assert judge(graphs, True, ON_GPU, base=ON_GPU)["result"] == "ok"
    other = {**ON_GPU, "episodic_return": [20.0, 26.0, 30.0]}
    assert "returns differ from torch_compile's" in judge(graphs, True, ON_GPU, base=other)["result"]
    assert "no run to compare with" in judge(graphs, True, ON_GPU, base={"error": "FAIL: a crash", "trapped": []})["result"]


# ---------------------------------------------------------------- SAC's rows
# SAC's scripts (bench/variants.py's), as --variants names them: each must be a row
SAC_NAMES = [f"sac:{v.name}" for v in scripts(discover(algorithm="sac"))]
TD3_NAMES = [f"td3:{v.name}" for v in scripts(discover(algorithm="td3"))]


def needs_sac(*variants: str):
    """Skip a test when one of these SAC scripts (sac_VARIANT.py) is absent."""
    missing = [v for v in variants if not (ROOT / f"sac_{v}.py").exists()]
    return pytest.mark.skipif(bool(missing), reason=f"SAC script missing: {', '.join(missing)}")


# a SAC row's process's result on the CPU: the one episode that ends, in the last iteration; what its script logged
SAC_LOGGED = [
    {"qf1_loss": 62.2, "qf2_loss": 58.3, "actor_loss": -0.155, "alpha": 0.999, "alpha_loss": 1.51, "episodes": 0.0},
    {"qf1_loss": 45.4, "qf2_loss": 42.1, "actor_loss": -0.351, "alpha": 0.997, "alpha_loss": 1.52, "episodes": 0.0},
    {"qf1_loss": 51.0, "qf2_loss": 47.8, "actor_loss": 0.068, "alpha": 0.995, "alpha_loss": 1.93, "episodes": 4.0},
]
SAC_RUN = {**RUN, "episodic_return": [None, None, -1432.07], "final_return": -1432.07, "metrics": SAC_LOGGED}
SAC_ON_GPU = {**SAC_RUN, "devices": ON_GPU["devices"], "detector": ON_GPU["detector"]}


def nudged(logged: list, iteration: int, name: str, by: float) -> list:
    """The metrics with one of one iteration's changed by a relative `by`."""
    return [{**m, name: m[name] * (1 + by)} if i == iteration else m for i, m in enumerate(logged)]


@pytest.mark.parametrize("algorithm", ["sac", "td3", "dqn"])
def test_every_off_policy_script_and_its_gpu_only_setting_has_a_row_named_apart_from_ppos(algorithm):
    """bench/variants.py's SAC (TD3) scripts, each with the settings only a GPU runs, as rows named sac:VARIANT
    (td3:VARIANT), run with the off-policy iterations (SHORT_SAC); PPO's rows keep their names (the variants')."""
    found = [f"{algorithm}:{v.name}" for v in discover(algorithm=algorithm) if not v.setting_of or v.gpu_only]
    names = [f"{algorithm}:{v.name}" for v in scripts(discover(algorithm=algorithm))]
    assert found and [row.name for row in rows_for(names)] == found
    assert set(found) <= set(gpu_check.ROWS) and all(gpu_check.is_offpolicy(gpu_check.ROWS[n]) for n in found)
    assert gpu_check.VARIANTS[f"{algorithm}:torch"].script.endswith(f"{algorithm}_torch.py")
    ppo = rows_for(VARIANTS)
    assert [row.name for row in ppo if not row.gpu_only and "@" not in row.name] == VARIANTS
    assert not {row.name for row in ppo} & set(found) and not any(gpu_check.is_offpolicy(row) for row in ppo)


@needs_sac("torch_compile")
def test_sac_cuda_graphs_are_a_gpu_only_row_that_must_repeat_the_returns_and_metrics_without_them(monkeypatch):
    graphs = next(row for row in rows_for(["sac:torch_compile"]) if row.gpu_only)
    assert graphs.fields == {"cuda_graphs": True} and graphs.same_returns_as == "sac:torch_compile"
    assert judge(graphs, True, SAC_ON_GPU, base=SAC_ON_GPU)["result"] == "ok"
    result = judge(graphs, True, SAC_ON_GPU, base={**SAC_ON_GPU, "metrics": nudged(SAC_LOGGED, 1, "alpha", 1e-3)})["result"]
    assert "returns differ from sac:torch_compile's: iteration 1's alpha" in result, result
    monkeypatch.setattr(gpu_check, "run_child", lambda *a, **k: pytest.fail("a GPU-only row ran on the CPU"))
    cells = gpu_check.check(graphs, False, {})
    assert [cells[c] for c in COLUMNS[4:]] == [SKIPPED] * 3, cells


def test_sac_runs_agree_only_if_their_metrics_do_too():
    """Runs of SAC with the same returns, the random steps' mostly: their metrics must agree to float rounding as well."""
    assert returns_differ(SAC_RUN, {**SAC_RUN, "metrics": nudged(SAC_LOGGED, 2, "qf1_loss", 1e-6)}) is None
    assert "iteration 2's qf1_loss: 51.0" in returns_differ(
        SAC_RUN, {**SAC_RUN, "metrics": nudged(SAC_LOGGED, 2, "qf1_loss", 1e-3)}
    )
    assert "iteration 0's alpha_loss: 1.51 vs None" in returns_differ(
        SAC_RUN, {**SAC_RUN, "metrics": [{k: v for k, v in SAC_LOGGED[0].items() if k != "alpha_loss"}, *SAC_LOGGED[1:]]}
    )
    assert returns_differ(SAC_RUN, {**SAC_RUN, "metrics": SAC_LOGGED[:2]}) == "metrics of 3 iterations vs 2"
    assert "one run only" in returns_differ({k: v for k, v in SAC_RUN.items() if k != "metrics"}, SAC_RUN)
    assert returns_differ(RUN, RUN) is None  # PPO's rows log none: their returns alone
    assert returns_differ(SAC_RUN, {**SAC_RUN, "final_return": -1400.0})  # the returns, as PPO's


@needs_sac("torch")
def test_a_sac_row_on_the_cpu_passes_with_every_gpu_check_skipped():
    cells = judge(gpu_check.ROWS["sac:torch"], False, SAC_RUN)
    assert cells["result"] == "ok" and cells["sleep detector"] == cells["race"] == SKIPPED


@needs_sac("torch")
@pytest.mark.parametrize(
    "run, blocking, failed",
    [
        (SAC_RUN, SAC_RUN, "on the CPU though a GPU is present"),
        ({**SAC_ON_GPU, "compiles_after_first_iteration": 1}, SAC_ON_GPU, "compiled after iteration 0"),
        ({**SAC_ON_GPU, "detector": "FAIL: the host reached the final sync"}, SAC_ON_GPU, "sleep detector"),
        (SAC_ON_GPU, {**SAC_ON_GPU, "metrics": nudged(SAC_LOGGED, 1, "qf2_loss", 1e-3)}, "race"),  # the same returns
        ({**SAC_ON_GPU, "episodic_return": [None] * 3, "final_return": None}, SAC_ON_GPU, "no episode ended"),
    ],
)
def test_a_sac_row_on_a_gpu_fails_on_any_check(run, blocking, failed):
    cells = judge(gpu_check.ROWS["sac:torch"], True, run, blocking)
    assert cells["result"].startswith("FAIL") and failed in cells["result"], cells["result"]
    if failed == "race":  # what differed, named
        assert "under CUDA_LAUNCH_BLOCKING=1, iteration 1's qf2_loss: 42.1 vs 42.14" in cells["race"], cells["race"]


def dqn_torch_checked(directory):
    return gpu_check.run_child(gpu_check.ROWS["dqn:torch"], gpu=False)


@pytest.mark.slow  # a DQN script's whole run in a process, as SAC's row test runs SAC's
@in_background(dqn_torch_checked)
def test_a_dqn_rows_process_passes_every_check_and_ends_episodes_in_its_iterations(background):
    """dqn_torch.py in its row's process with every check on: SHORT_DQN is a run its script takes (whole groups of
    train_frequency steps), nothing trapped or compiled after iteration 0, a gradient step's metrics each iteration,
    and CartPole's episodes ending in the iterations: returns for the race check."""
    run = background
    assert run["error"] is None and run["trapped"] == [], run
    assert judge(gpu_check.ROWS["dqn:torch"], False, run)["result"] == "ok"
    assert len(run["metrics"]) == 3 and all({"td_loss", "q_values"} <= set(m) for m in run["metrics"]), run["metrics"]
    assert sum(m["episodes"] for m in run["metrics"]) > 0 and run["final_return"] > 0


def sac_torch_checked(directory):
    return gpu_check.run_child(gpu_check.ROWS["sac:torch"], gpu=False)


@needs_sac("torch")
@in_background(sac_torch_checked)
def test_a_sac_rows_process_passes_every_check_logs_its_metrics_and_ends_one_episode_last(background):
    """sac_torch.py (eager torch, its env steps in JAX handed over by DLPack) in its row's process with every check on,
    the traps' scalar reads included: nothing trapped, nothing compiled after iteration 0; each iteration's metrics come
    back for the race check, and with SHORT_SAC the envs' first episodes end in the last iteration: returns to compare."""
    run = background
    assert run["error"] is None and run["trapped"] == [], run
    assert judge(gpu_check.ROWS["sac:torch"], False, run)["result"] == "ok"
    assert set(run["devices"]) == {"torch", "jax"}
    num_envs = gpu_check.SHORT_SAC["num_envs"]
    assert [m["episodes"] for m in run["metrics"]] == [0, 0, num_envs], run["metrics"]
    assert run["episodic_return"][:2] == [None, None] and run["final_return"] == run["episodic_return"][2] < 0
    names = set(run["metrics"][0])
    assert {"qf1_loss", "actor_loss", "alpha"} <= names and all(set(m) == names for m in run["metrics"])
    assert returns_differ(run, run) is None
    assert "iteration 2's qf1_loss" in returns_differ(run, {**run, "metrics": nudged(run["metrics"], 2, "qf1_loss", 1e-3)})


class FakeLog:
    """Log as far as a script's loop uses it here: log.iteration(metrics) after each iteration."""

    def iteration(self, metrics):
        pass


def fake_sac_script(monkeypatch):
    """A stand-in for a SAC script, as run_one loads it: its train() logs three iterations' metrics through Log.
    Returns the module and the list of the Args its train() was given."""
    given = []

    def train(args):
        given.append(args)
        log = FakeLog()
        for i in range(3):
            log.iteration({"qf1_loss": np.float32(10 - i), "episodes": np.int32(4 * (i == 2))})
        returns = {"episodic_return": [None, None, -1.0], "final_return": -1.0}
        return {"devices": {"jax": "cpu:0"}, "compiles_after_first_iteration": 0, **returns}

    module = types.SimpleNamespace(Args=lambda **fields: fields, record=types.SimpleNamespace(Log=FakeLog), train=train)
    monkeypatch.setattr(gpu_check, "load", lambda script, name: module)
    return module, given


@needs_sac("torch")
@pytest.mark.parametrize("plain", [False, True])
def test_a_sac_row_logs_its_metrics_in_both_runs_the_race_check_compares(monkeypatch, plain):
    """run_one with every check on, and plain (CUDA_LAUNCH_BLOCKING=1's run): SAC's config given to train(), and the
    metrics logged each time, read as floats; Log.iteration put back after."""
    module, given = fake_sac_script(monkeypatch)
    run = gpu_check.run_one(gpu_check.ROWS["sac:torch"], gpu=False, plain=plain)
    assert run["error"] is None, run
    assert given == [{**gpu_check.SHORT_SAC, "cuda": True, **({} if plain else {"sync_debug": True})}]
    logged = [{"qf1_loss": 10.0, "episodes": 0.0}, {"qf1_loss": 9.0, "episodes": 0.0}, {"qf1_loss": 8.0, "episodes": 4.0}]
    assert run["metrics"] == logged and all(type(x) is float for m in run["metrics"] for x in m.values())
    assert module.record.Log.iteration is FakeLog.__dict__["iteration"]


# ---------------------------------------------------------------- end to end
def gpu_check_on_jax_linen(directory):
    return run_gpu_check("--variants", "jax_linen")


@needs("jax_linen")
@in_background(gpu_check_on_jax_linen)
def test_gpu_check_runs_each_variant_in_its_own_process_with_every_check(background):
    """gpu-check on jax_linen, and so on jax_linen on Asterix-MinAtar (the torch rows: the host-sync test below, and
    every variant behind the slow marker)."""
    proc = background
    gpu = "a GPU is present" in proc.stdout
    preflight, (header, *rows) = tables(proc.stdout)
    assert header == COLUMNS
    # with XLA's command buffers for loops, a setting only a GPU runs: skipped on a CPU, as every GPU-only check
    assert [row[0] for row in rows] == ["jax_linen", "jax_linen+cmdbuf", ASTERIX, f"jax_linen+cmdbuf@{ASTERIX.split('@')[1]}"]
    for name, devices, compiles, syncs, detector, race, result in rows:
        if "+cmdbuf" in name and not gpu:
            assert result == SKIPPED, name
            continue
        assert compiles == "0" and syncs == "0" and result == "ok", (name, proc.stdout + proc.stderr[-3000:])
        # each row's verdict printed as it was known, before the table: a check cut short keeps what it ran
        verdict = f"gpu-check: {name}: devices: {devices}; compiles after 0: 0; host syncs: 0; sleep detector: {detector}"
        assert proc.stdout.index(verdict) < proc.stdout.index("| variant |"), name
        assert (detector == race == SKIPPED) != gpu, name  # skipped exactly where there is no GPU
        assert ("cpu" in devices.lower()) != gpu, name
    if not gpu:
        assert [result for _, result in preflight[1:]] == [SKIPPED] * (len(preflight) - 1)
    ran = 4 if gpu else 2
    assert f"gpu-check: {ran} of {ran} variants pass" in proc.stdout and proc.returncode == 0


def test_an_unknown_variant_is_refused_in_one_line_before_anything_runs():
    proc = run_gpu_check("--variants", "jax_linen,nope", timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "unknown variant(s) nope" in proc.stderr


SCRIPT = (ROOT / "ppo_torch.py").read_text() if "torch" in VARIANTS else ""


def scratch_copy(directory, script: str, text: str):
    """bench/, benchback/ (what the scripts import) and the script as `text`, in `directory`: a scratch project."""
    for package in ("bench", "benchback"):
        shutil.copytree(ROOT / package, directory / package, ignore=shutil.ignore_patterns("__pycache__"))
    (directory / script).write_text(text)


def gpu_check_on_torch_reading_back(directory):
    """gpu-check on a scratch copy of ppo_torch.py whose GAE reads a tensor back, which its process for torch loads."""
    patch = "\n_gae = compute_gae\ncompute_gae = lambda r, *a: (r.sum().item(), _gae(r, *a))[1]  # a host read\n"
    scratch_copy(directory, "ppo_torch.py", SCRIPT + patch)
    return run_gpu_check("--variants", "torch", cwd=directory)


@needs("torch")
@in_background(gpu_check_on_torch_reading_back)
def test_gpu_check_fails_on_a_host_sync(background):
    """A variant that reads a tensor back inside its timed iteration fails the check: torch's GAE, patched."""
    proc = background
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    patched_line = len(SCRIPT.splitlines()) + 3  # the lambda's line, named as where the read came from
    assert f"FAIL: Tensor.item at ppo_torch.py:{patched_line} inside a timed iteration" in proc.stdout
    assert "gpu-check: 0 of 1 variants pass; failed: torch" in proc.stdout


SAC_SCRIPT = (ROOT / "sac_torch.py").read_text() if (ROOT / "sac_torch.py").exists() else ""


def gpu_check_on_sac_torch_reading_back(directory):
    """gpu-check on a scratch copy of sac_torch.py whose replay buffer reads a tensor back as it samples (in the timed
    iterations only)."""
    patch = (
        "\n_sample = ReplayBuffer.sample\nReplayBuffer.sample = lambda b, n: (b.data.reward.sum().item(), _sample(b, n))[1]\n"
    )
    scratch_copy(directory, "sac_torch.py", SAC_SCRIPT + patch)
    return run_gpu_check("--variants", "sac:torch", cwd=directory)


@needs_sac("torch")
@in_background(gpu_check_on_sac_torch_reading_back)
def test_gpu_check_fails_a_sac_row_on_a_host_sync(background):
    proc = background
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    patched_line = len(SAC_SCRIPT.splitlines()) + 3
    assert f"FAIL: Tensor.item at sac_torch.py:{patched_line} inside a timed iteration" in proc.stdout
    assert "gpu-check: 0 of 1 variants pass; failed: sac:torch" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("names", [SAC_NAMES, TD3_NAMES], ids=["sac", "td3"])
def test_gpu_check_runs_every_off_policy_variant_with_every_check(names):
    proc = run_gpu_check("--variants", ",".join(names), timeout=3600)
    gpu = "a GPU is present" in proc.stdout
    _, (_, *rows) = tables(proc.stdout)
    expected = rows_for(names)
    assert [row[0] for row in rows] == [row.name for row in expected], proc.stdout + proc.stderr[-3000:]
    ran = [row for row in rows if row[-1] != SKIPPED]
    assert [row[0] for row in ran] == [row.name for row in expected if gpu or not row.gpu_only]
    for name, _devices, compiles, syncs, _detector, _race, result in ran:
        assert compiles == "0" and syncs == "0" and result == "ok", (name, proc.stdout + proc.stderr[-3000:])
    assert f"gpu-check: {len(ran)} of {len(ran)} variants pass" in proc.stdout and proc.returncode == 0


@pytest.mark.slow
def test_gpu_check_runs_every_variant_with_every_check_and_prints_one_table():
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmark.sh"), "--preset", "gpu-check"],
        capture_output=True,
        text=True,
        timeout=3600,
        env={**os.environ, "PYTHON": sys.executable},
    )
    gpu = "a GPU is present" in proc.stdout
    _, (_, *rows) = tables(proc.stdout)
    # benchmark.sh gives gpu-check its plan's variants, PPO's; SAC's and TD3's rows follow them where it gives theirs too
    ppo, offpolicy = rows_for(list(VARIANTS)), rows_for(SAC_NAMES + TD3_NAMES)
    expected = ppo + offpolicy if len(rows) > len(ppo) else ppo
    assert [row[0] for row in rows] == [row.name for row in expected], proc.stdout + proc.stderr[-3000:]
    ran = [row for row in rows if row[-1] != SKIPPED]
    assert [row[0] for row in ran] == [row.name for row in expected if gpu or not row.gpu_only]
    for name, _devices, compiles, syncs, _detector, _race, result in ran:
        assert compiles == "0" and syncs == "0" and result == "ok", name
    passed = sum(row[-1] == "ok" for row in ran)
    assert f"gpu-check: {passed} of {len(ran)} variants pass" in proc.stdout
    assert proc.returncode == (0 if passed == len(ran) else 1)
