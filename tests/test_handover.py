"""bench/handover.py: the torch rollout's floor (env steps and DLPack hand-overs, no network), measured and kept."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, in_background

TOOL = [sys.executable, str(ROOT / "bench" / "handover.py")]


def measure_then_add_an_env(directory: Path) -> list:
    """handover.py on CartPole-v1, then on CartPole-v1 and Acrobot-v1 into the same file: each run's process and the
    file it left."""
    out = directory / "handover.json"
    small = ["--num-envs", "4", "--num-steps", "8", "--iterations", "3", "--out", str(out)]
    runs = []
    for envs in (["CartPole-v1"], ["CartPole-v1", "Acrobot-v1"]):
        proc = subprocess.run([*TOOL, *small, *envs], capture_output=True, text=True, timeout=300)
        runs.append((proc, json.loads(out.read_text()) if out.exists() else None))
    return runs


@in_background(measure_then_add_an_env)
def test_measures_each_env_once_and_keeps_what_it_has(background):
    (proc, record), (again_proc, again) = background
    assert proc.returncode == 0, proc.stderr
    assert (record["num_envs"], record["num_steps"], record["device"]) == (4, 8, "cpu")
    floor = record["envs"]["CartPole-v1"]
    assert 0 < floor["p10_s"] <= floor["median_s"] <= floor["p90_s"] and floor["iterations"] == 3

    # A second env is added; the first is not measured again (its numbers stay as they were).
    assert again_proc.returncode == 0, again_proc.stderr
    assert "hand-over floor CartPole-v1" not in again_proc.stdout and "hand-over floor Acrobot-v1" in again_proc.stdout
    assert again["envs"]["CartPole-v1"] == floor and set(again["envs"]) == {"CartPole-v1", "Acrobot-v1"}


def test_an_unknown_env_is_refused_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "handover.json"
    proc = subprocess.run([*TOOL, "--out", str(out), "CartPole-v1", "NoSuchEnv-v0"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: unsupported --env-id 'NoSuchEnv-v0'") and "\n" not in proc.stderr.strip()
    assert not out.exists()


def test_a_script_loaded_by_the_tools_makes_a_craftax_env_as_it_does_when_run(tmp_path):
    """bench/handover.py (and the studies) load the scripts by path, from another directory: the Craftax adapter the
    scripts import as their sibling must still be found."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); from load_script import load; "
        "env, params = load('ppo_torch.py', 'loaded').make_env('Craftax-Classic-Symbolic-v1'); "
        "print(env.action_space(params).n)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.split() == ["17"], proc.stderr[-2000:]
