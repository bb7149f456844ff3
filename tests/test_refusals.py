"""What the tools refuse, each in one line with exit 2 and nothing written: TF32 asked of a CPU (one line, not the
no-GPU notice first); a sweep into a folder that holds another preset's sweep; a study whose mode would override a
flag given to it. And no study writes over a committed result unless told to."""

import json
import os
import subprocess
import sys

import pytest

from benchback.cli import main
from conftest import ROOT, SCRIPTS, load

ALL = {**SCRIPTS, **{f"sac_{v}": f"sac_{v}.py" for v in ("jax_linen", "jax_nnx", "jax_equinox", "torch", "torch_compile")}}


@pytest.mark.parametrize("name", sorted(ALL))
def test_tf32_on_a_cpu_is_refused_in_one_line(name, tmp_path, capsys, monkeypatch):
    module = load(name, ALL[name])
    if module.jax.default_backend() == "gpu":
        pytest.skip("a GPU is visible: TF32 is allowed there")
    monkeypatch.chdir(tmp_path)
    argv = ["--matmul-precision", "high", "--no-tensorboard", "--json-out", str(tmp_path / "run.json")]
    assert main(module.Args, module.train, argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--matmul-precision high" in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_the_replay_buffer_study_refuses_a_buffer_size_its_quick_mode_would_override(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "studies.replay_buffers", "--quick", "--buffer-size", "50", "--out", str(tmp_path / "r.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "--buffer-size" in lines[0] and "--quick" in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_replay_buffer_studys_default_output_is_not_its_committed_result():
    from studies import replay_buffers

    committed = ROOT / "results" / "studies" / "sac-buffer" / "libraries.json"
    assert (ROOT / replay_buffers.DEFAULT_OUT).resolve() != committed.resolve()


def test_a_sweep_into_a_folder_of_another_presets_sweep_is_refused(tmp_path):
    out = tmp_path / "sweep"
    (out / "logs").mkdir(parents=True)
    (out / "logs" / "preset").write_text("sac\n")  # what a sac sweep leaves there
    (out / "env_cost.json").write_text(json.dumps({"Pendulum-v1": 6.1}))
    env = {**os.environ, "PYTHON": sys.executable}  # the interpreter of these tests, as tests/test_benchmark.py runs it
    done = subprocess.run(
        ["bash", "benchmark.sh", "--preset", "quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "sac" in lines[0] and "quick" in lines[0], done.stderr
    assert json.loads((out / "env_cost.json").read_text()) == {"Pendulum-v1": 6.1}
    assert sorted(p.name for p in out.rglob("*")) == ["env_cost.json", "logs", "preset"]


def test_no_studys_default_output_is_a_committed_result():
    """A study run without --out (a quick try, a --quick mode) writes where nothing committed lies: each committed
    result's command names its --out."""
    import re

    for path in sorted((ROOT / "studies").glob("*.py")):
        for default in re.findall(r'add_argument\(\s*"--out",[^)]*?default=([^,)]+)', path.read_text()):
            assert "results" not in default, f"{path.name}: --out defaults to {default}"
    from studies import replay_buffers

    assert "results" not in replay_buffers.DEFAULT_OUT
