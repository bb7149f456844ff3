"""One list of variants: the ppo_*.py scripts, each declaring what the tooling needs in its TOOLING line. A new
script (here a scratch copy of ppo_jax_linen.py, in a copy of the tooling) is a variant of the sweep, of gpu-check
and of plot.py's reports without any other file changing."""

import ast
import json
import shutil
import subprocess
import sys

import pytest

from bench.run_records import run_setting, settings_of
from bench.variants import ALGORITHMS, VariantError, compile_pairs, discover, scripts, setting_name
from conftest import ROOT, SCRIPTS
from test_plot import record, records, write

NEW = "jax_scratch"  # the scratch variant: ppo_jax_scratch.py, a copy of ppo_jax_linen.py


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The tooling and the scripts in a directory of their own, plus ppo_jax_scratch.py."""
    root = tmp_path_factory.mktemp("repo")
    for name in ["benchmark.sh", "plot.py", *SCRIPTS.values()]:
        shutil.copy(ROOT / name, root / name)
    for directory in ("bench", "benchback", "report"):
        shutil.copytree(ROOT / directory, root / directory, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "ppo_jax_linen.py", root / f"ppo_{NEW}.py")
    return root


def test_the_variants_are_the_scripts_in_their_declared_order():
    variants = discover()
    assert sorted(v.script for v in variants if not v.setting_of) == sorted(p.name for p in ROOT.glob("ppo_*.py"))
    assert [v.order for v in variants] == sorted(v.order for v in variants)
    assert len({v.color for v in variants}) == len(variants)  # one colour per variant, settings included
    for compiled, _ in compile_pairs(variants):  # a compiled variant, and one that is not or a setting of it
        assert next(v for v in variants if v.name == compiled).compiles


def test_a_copied_script_is_a_new_variant_with_a_colour_of_its_own(copy):
    variants = {v.name: v for v in discover(copy)}
    assert variants[NEW].script == f"ppo_{NEW}.py" and variants[NEW].framework == "jax"
    assert variants[NEW].color not in {v.color for name, v in variants.items() if name != NEW}
    assert list(variants).index(NEW) == list(variants).index("jax_linen") + 1  # its original's place, after it


def test_a_script_without_its_tooling_line_is_named(tmp_path):
    (tmp_path / "ppo_bare.py").write_text("print('no TOOLING here')\n")
    with pytest.raises(VariantError, match="ppo_bare.py: no TOOLING"):
        discover(tmp_path)
    (tmp_path / "ppo_bare.py").write_text('TOOLING = {"framework": "mxnet", "order": 1, "color": "k"}\n')
    with pytest.raises(VariantError, match="ppo_bare.py: TOOLING needs a framework"):
        discover(tmp_path)


def test_what_a_script_sets_in_its_environment_where_it_has_nothing_is_read_from_its_source(tmp_path):
    """A sweep tells an OpenMP variable of its own from a script's (the torch scripts set how their threads wait)."""
    tooling = 'TOOLING = {"framework": "torch", "order": 1, "color": "k"}\n'
    sets = 'import os\n\nos.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")\nos.environ["OTHER"] = "1"\n'
    (tmp_path / "ppo_sets.py").write_text(sets + tooling)
    (tmp_path / "ppo_bare.py").write_text(tooling.replace('"order": 1', '"order": 2'))
    assert {v.name: v.defaults for v in discover(tmp_path)} == {"sets": (("OMP_WAIT_POLICY", "PASSIVE"),), "bare": ()}


def test_a_record_of_a_setting_is_reported_under_the_settings_name():
    assert setting_name("jax_nnx", {"cached_partial": False}) == "jax_nnx+nocache"
    assert setting_name("jax_nnx", {"cached_partial": True}) == "jax_nnx"
    assert setting_name("jax_linen", {"cached_partial": False}) == "jax_linen"


def test_the_sweep_plans_a_new_script_without_being_told(copy):
    proc = subprocess.run(
        ["bash", "benchmark.sh", "--preset", "quick", "--list"],
        cwd=copy,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"overall/{NEW}__CartPole-v1__s__seed1" in proc.stdout.split()


def test_gpu_check_checks_a_new_script_without_being_told(copy):
    proc = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--help"], cwd=copy, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert NEW in proc.stdout  # --variants: comma-separated, from jax_linen,jax_scratch,...


def test_plot_reports_a_new_script_without_being_told(copy, tmp_path):
    records = tmp_path / "records"
    for seed in (1, 2, 3):
        for variant, total in (("jax_linen", 10.0), (NEW, 20.0)):
            run = record("overall", variant, "CartPole-v1", "s", seed, total=total, iteration=total / 100)
            write(records, f"overall/{variant}__CartPole-v1__s__seed{seed}.json", run)
    proc = subprocess.run(
        [sys.executable, "plot.py", str(records), "--out", str(tmp_path / "out")],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads((tmp_path / "out" / "summary.json").read_text())["answer"]
    cell = next(row for row in answer if row["variant"] == NEW and row["env"] == "CartPole-v1")  # steady time
    assert cell["ratio"] == pytest.approx(2.0)
    assert NEW in (tmp_path / "out" / "summary.md").read_text()


def test_a_cuda_graphs_record_is_reported_as_the_gpu_setting_in_a_colour_of_its_own(tmp_path):
    assert setting_name("torch_compile", {"cuda_graphs": True}) == "torch_compile+graphs"
    assert setting_name("torch_compile", {"cuda_graphs": False}) == "torch_compile"
    assert setting_name("torch", {"cuda_graphs": True}) == "torch"  # the setting of another script
    for graphs in (False, True):
        run = record("compile", "torch_compile", "CartPole-v1", "s", 1, total=10.0, iteration=0.1)
        run["args"]["cuda_graphs"] = graphs
        write(tmp_path, f"compile/torch_compile{'+graphs' * graphs}__CartPole-v1__s__seed1.json", run)
    runs, failures = records.load_runs(tmp_path)  # as plot.py reads a sweep's records
    assert sorted(r.variant for r in runs) == ["torch_compile", "torch_compile+graphs"] and failures == []
    colors = {v.name: v.color for v in records.DECLARED}
    assert list(colors.values()).count(colors["torch_compile+graphs"]) == 1


def test_a_setting_made_by_the_environment_is_named_from_the_records_xla_flags_and_is_not_another_machine():
    cmdbuf = {v.name: v for v in discover()}["jax_linen+cmdbuf"]
    assert cmdbuf.gpu_only and cmdbuf.setting_of == "jax_linen" and cmdbuf.environment[0] == "XLA_FLAGS"
    assert "jax_linen+cmdbuf" not in {v.name for v in scripts()}
    flags = cmdbuf.environment[1]
    made = lambda xla_flags: {"variant": "jax_linen", "args": {}, "xla_flags": xla_flags}  # noqa: E731
    for xla_flags, name in [(None, "jax_linen"), ("--xla_dump_to=x", "jax_linen"), (f"--xla_dump_to=x {flags}", cmdbuf.name)]:
        assert setting_name("jax_linen", {}, None, settings_of(made(xla_flags))) == name
    assert setting_name("jax_nnx", {}, None, {"XLA_FLAGS": flags}) == "jax_nnx+cmdbuf"
    assert setting_name("torch", {}, None, {"XLA_FLAGS": flags}) == "torch"  # no such setting
    # the setting's runs and its script's compare as one machine; other XLA_FLAGS stay another
    assert run_setting(settings_of(made(f"--xla_dump_to=x {flags}"))) == run_setting(settings_of(made("--xla_dump_to=x")))
    assert run_setting(settings_of(made(flags))) == ""
    assert run_setting(settings_of(made("--xla_dump_to=x"))) == "XLA_FLAGS=--xla_dump_to=x"


def test_a_jax_script_whose_program_branches_runs_its_conds_on_the_gpu_and_is_not_another_machine_for_it():
    """On a GPU, XLA runs a cond outside its command buffers by reading the predicate back to the host: a host sync
    at every gradient step (seen on an H200, the JAX SAC rows of gpu-check). A script whose program holds one
    (jax.lax.cond, nnx.cond) must give itself XLA's conditional command buffers; its records, which show that
    option, are timed on the same machine as the others'."""
    branching = []
    for algorithm in ALGORITHMS:
        for v in discover(algorithm=algorithm):
            tree = ast.parse((ROOT / v.script).read_text())
            calls = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
            if v.script.split("_")[1] == "jax" and any(f.attr == "cond" for f in calls):
                branching.append(v.script)
                flags = dict(v.defaults).get("XLA_FLAGS", "")
                kinds = [w.split("=")[1] for w in flags.split() if w.startswith("--xla_gpu_enable_command_buffer=")]
                assert kinds and "+CONDITIONAL" in kinds[-1].split(","), f"{v.script}: no conditional command buffers"
                record = {"xla_flags": flags, "cpu": {"allocator": {}}}
                assert run_setting(settings_of(record)) == "", v.script
    assert len(branching) == 6  # SAC's and TD3's (their delayed actor step)
