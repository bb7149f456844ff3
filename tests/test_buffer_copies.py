"""No JAX SAC, TD3 or DQN iteration copies its replay buffer (studies/buffer_copies.py reads XLA's optimized program); the count
finds the copies of a program that makes them; the study refuses bad input before any work."""

import os
import subprocess
import sys

import pytest

from conftest import in_background
from studies import buffer_copies
from studies.buffer_copies import ALGORITHMS, ROOT, VARIANTS

# One env and one gradient step a step: the cell where XLA once inlined the gradient-step loop and copied the buffer
CELL = dict(env_id="Pendulum-v1", hidden="64,64", num_envs=1, updates_per_step=1, steps_per_iteration=50, full_buffer=False)
ROWS = 1_000_000  # the scripts' default: what XLA decides may depend on the size
COPYING = "ca9a9c4"  # the last commit whose Linen and Equinox iterations copied the buffer at CELL


# DQN's: CleanRL's network and buffer, one env, a gradient step every 10 steps (the scripts' own)
DQN_CELL = dict(
    env_id="CartPole-v1", hidden="120,84", num_envs=1, updates_per_step=None, steps_per_iteration=50, full_buffer=False
)
CELLS = {"sac": (CELL, ROWS), "td3": (CELL, ROWS), "dqn": (DQN_CELL, 10_000)}

# SAC's and DQN's Linen by default, the others (about 30 s each on 2 cores) under the slow marker; results/studies/sac-buffer
# holds all
SCRIPTS = [f"{a}_{v}.py" for a in ALGORITHMS for v in VARIANTS]
BY_DEFAULT = ("sac_jax_linen.py", "dqn_jax_linen.py")


@pytest.mark.parametrize("script", [s if s in BY_DEFAULT else pytest.param(s, marks=pytest.mark.slow) for s in SCRIPTS])
@in_background(lambda directory, script: buffer_copies.copies(ROOT / script, *CELLS[script.split("_")[0]]))
def test_no_jax_iteration_copies_its_buffer(script, background):
    assert background == []


@pytest.mark.slow  # compiles the old program: half a minute on 2 cores
def test_the_count_finds_the_copies_of_a_program_that_makes_them(tmp_path):
    """sac_jax_linen.py as it was at COPYING, with the modules it imported then: 6 copies a step."""
    for name in ("sac_jax_linen.py", "harness.py", "torch_envs.py"):
        shown = subprocess.run(["git", "show", f"{COPYING}:{name}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode:
            pytest.skip(f"this checkout lacks commit {COPYING} (a shallow clone?)")
        (tmp_path / name).write_text(shown.stdout)
    found = buffer_copies.copies(tmp_path / "sac_jax_linen.py", CELL, ROWS)
    assert len(found) == 6 and all(shape.startswith(f"f32[{ROWS}") for shape in found)


def test_the_cells_are_every_sac_presets():
    cells = buffer_copies.preset_cells()
    assert {c["env_id"] for c in cells} >= {"Pendulum-v1", "MountainCarContinuous-v0", "Reacher-misc", "Swimmer-misc"}
    assert {c["updates_per_step"] for c in cells} >= {0, 1, 8} and {c["num_envs"] for c in cells} >= {1, 16}
    assert any(c["full_buffer"] for c in cells) and {c["hidden"] for c in cells} == {"64,64", "256,256"}
    dqn = buffer_copies.preset_cells("dqn")
    assert {c["env_id"] for c in dqn} == {"CartPole-v1", "FourRooms-misc"} and {c["num_envs"] for c in dqn} == {1, 16}
    assert {c["hidden"] for c in dqn} == {"120,84"} and {c["updates_per_step"] for c in dqn} == {None}


def test_the_scripts_see_the_packages_on_the_callers_pythonpath(monkeypatch, tmp_path):
    """On the H200 the packages carried as wheels sat on PYTHONPATH, and the script, run without it, lacked gymnax."""
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    environment = buffer_copies.child_environment(ROOT / "sac_jax_linen.py", "dump")
    paths = environment["PYTHONPATH"].split(os.pathsep)
    assert paths[0] == str(ROOT) and str(tmp_path) in paths
    # and the program is the one the script runs: its own XLA options (a GPU's command buffers) beside the dump's
    assert environment["XLA_FLAGS"].split() == [
        "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL",
        "--xla_dump_to=dump",
        "--xla_dump_hlo_as_text",
    ]


def test_the_count_finds_a_copy_of_a_batchs_buffers_too():
    """A search's batch (--configs) stacks its configurations' buffers on a leading axis: [8,10000,4] is 8 buffers."""
    hlo = "  %copy.5 = f32[8,10000,4]{2,1,0} copy(f32[8,10000,4]{2,1,0} %p)\n  %copy.6 = f32[8,128]{1,0} copy(%q)\n"
    assert buffer_copies.buffer_copies(hlo, 10_000) == ["f32[8,10000,4]"]
    batch = [c for c in buffer_copies.preset_cells("dqn") if c.get("configs")]
    assert [(c["env_id"], c["configs"]) for c in batch] == [("FourRooms-misc", 8)]  # the search-dqn preset's


@pytest.mark.slow  # three programs of a batch of 8: about a minute on 2 cores (results/studies/search-batch)
@pytest.mark.parametrize("variant", VARIANTS)
def test_no_jax_dqn_batch_copies_its_buffers(variant):
    cell = next(c for c in buffer_copies.preset_cells("dqn") if c.get("configs"))
    assert buffer_copies.copies(ROOT / f"dqn_{variant}.py", cell, 10_000) == []


def test_the_count_finds_a_copy_of_any_element_type():
    """DQN's buffer holds its actions as int32: a copy of that column counts as a float column's does."""
    hlo = "  %copy.3 = s32[10000]{0} copy(s32[10000]{0} %p)\n  %copy.4 = f32[10000,4]{1,0} copy(f32[10000,4]{1,0} %q)\n"
    assert buffer_copies.buffer_copies(hlo, 10_000) == ["s32[10000]", "f32[10000,4]"]


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--buffer-size", "0"], "--buffer-size must hold"),
        (["--hidden", "0"], "unrecognized arguments: --hidden 0"),  # the sizes are the presets'
        (["--buffer-size", "x"], "invalid int value"),
        (["--variants", "jax_flax"], "--variants: unknown jax_flax"),
        (["--algorithms", "ddpg"], "--algorithms: unknown ddpg"),
        (["--cells", "0"], "--cells must be indices"),
        (["--cells", "x"], "--cells must be indices"),
        (["--out", "/proc/no/such.json"], "--out"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_work(flags, says, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "studies.buffer_copies", *flags], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr
    assert "buffer copies" not in done.stdout  # no cell was checked


def test_on_a_machine_without_a_gpu_the_gpu_check_says_skipped_and_writes_nothing(tmp_path):
    import jax

    if jax.default_backend() == "gpu":
        pytest.skip("a GPU is visible: the check runs there")
    out = tmp_path / "copies.json"
    done = subprocess.run(
        [sys.executable, "-m", "studies.buffer_copies", "--cuda", "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0 and "skipped" in done.stdout and "ok" not in done.stdout.lower().split()
    assert not out.exists()
