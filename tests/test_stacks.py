"""Each framework on environments of its own stack: the torch scripts on benchback/torch_ports.py (--env-backend torch) and on
Gymnasium (--env-backend gymnasium), Linen's rollout stepped from a Python loop (--rollout python). The same work as
on gymnax, nothing compiled after iteration 0, bad combinations refused before any work; the plan and the report of
the stacks experiment."""

import json
import types

import pytest

from bench import plan, plan_args, plan_runs
from bench.variants import discover, setting_name
from benchback.cli import main
from conftest import (
    ONE_PER_FRAMEWORK_SLOW,
    QUIET,
    ROOT,
    SHORT,
    SHORT_ARGS,
    TORCH_VARIANTS,
    VARIANTS,
    load,
    needs,
    read_json,
    run_script,
)
from report import timing
from report.records import load_runs

STACK_ENVS = ["CartPole-v1", "Acrobot-v1"]


@pytest.mark.parametrize("backend", ["torch", "gymnasium"])
@pytest.mark.parametrize("variant", [p for p, v in zip(ONE_PER_FRAMEWORK_SLOW, VARIANTS) if v in TORCH_VARIANTS])
def test_a_torch_script_on_its_own_envs_does_the_gymnax_runs_work(variant, backend, smoke, tmp_path, monkeypatch):
    """The same env steps, gradient steps and network as the smoke run on gymnax (the same flags), episodes counted,
    nothing compiled after iteration 0, and a record that names where its environments ran."""
    monkeypatch.chdir(tmp_path)
    module = load(variant)
    proc, _, path = smoke(variant)
    assert proc.returncode == 0, proc.stderr
    on_gymnax = read_json(path)
    record = module.train(module.Args(**SHORT_ARGS, **QUIET, hidden="32,16", seed=3, env_backend=backend))
    assert (record["env_backend"], on_gymnax["env_backend"]) == (backend, "gymnax")
    for key in ("env_steps", "grad_steps", "param_count"):
        assert record[key] == on_gymnax[key], key
    assert record["compiles_after_first_iteration"] == 0
    assert len(record["iteration_durations"]) == 3 and record["final_return"] is not None
    assert ("gymnasium" in record["versions"]) == (backend == "gymnasium")


@pytest.mark.slow  # a run of 20 s on 2 cores; torch_compile's on the same environments stays by default (below)
@needs("torch")
def test_eager_torch_on_its_own_environments_compiles_nothing_after_iteration_0(tmp_path):
    """In a process of its own, where gymnax's Acrobot-v1 is first built for the record after the last iteration: what
    building it compiles is not counted as a compilation of the timed iterations."""
    proc = run_script(
        "torch", *SHORT, "--env-id", "Acrobot-v1", "--env-backend", "torch", "--json-out", "r.json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_json(tmp_path / "r.json")["compiles_after_first_iteration"] == 0


@needs("torch_compile")
def test_torch_compile_compiles_the_whole_step_on_the_torch_backend(tmp_path, monkeypatch):
    """Policy, env step and episode counts are one compiled frame, once: no graph break inside it, no other frame."""
    monkeypatch.chdir(tmp_path)
    module = load("torch_compile")
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list as cache_entries

    record = module.train(module.Args(**SHORT_ARGS, **QUIET, env_backend="torch"))
    assert record["compiles_after_first_iteration"] == 0
    # train's env_step (acting with the policy itself, not its compiled form) is compiled, once
    (step,) = [c for c in module.train.__code__.co_consts if isinstance(c, types.CodeType) and c.co_name == "env_step"]
    assert len(cache_entries(step)) == 1
    # At a graph break inside a function it inlines, dynamo runs that function as a frame of its own, which then
    # holds cache entries: the step's parts hold none.
    from benchback import torch_envs, torch_ports

    parts = (module.act, torch_envs.PortEnvs.step, torch_ports.TorchEnv.step, torch_ports.CartPole.step_env)
    assert {f.__qualname__: len(cache_entries(f.__code__)) for f in parts} == {f.__qualname__: 0 for f in parts}


@pytest.mark.slow  # two runs: 10 s on 2 cores; test_rollout.py steps Linen from Python too
@needs("jax_linen")
def test_linen_stepped_from_python_runs_the_scans_run(tmp_path, monkeypatch):
    """--rollout python: one compiled call a step, the same keys and arithmetic, so the same returns; compiled once."""
    monkeypatch.chdir(tmp_path)
    module = load("jax_linen")
    scan = module.train(module.Args(**SHORT_ARGS, **QUIET))
    python = module.train(module.Args(**SHORT_ARGS, **QUIET, rollout="python"))
    assert (scan["rollout"], python["rollout"]) == ("scan", "python")
    assert python["episodic_return"] == pytest.approx(scan["episodic_return"], rel=1e-5)
    assert python["compiles_after_first_iteration"] == 0


REFUSED = [
    ("torch", ["--env-backend", "torch", "--env-id", "Breakout-MinAtar"], "has CartPole-v1, Acrobot-v1, Pendulum-v1"),
    ("torch", ["--env-backend", "gymnasium", "--env-id", "MountainCar-v0"], "has CartPole-v1, Acrobot-v1, Pendulum-v1"),
    ("torch_compile", ["--env-backend", "torch", "--env-id", "NoSuchEnv-v0"], "has CartPole-v1, Acrobot-v1, Pendulum-v1, not"),
    ("torch", ["--env-backend", "gymnasium", "--sync-debug"], "--sync-debug cannot run with --env-backend gymnasium"),
    ("torch_compile", ["--env-backend", "gymnasium", "--cuda-graphs"], "--cuda-graphs cannot capture"),
    ("jax_linen", ["--rollout", "python", "--num-seeds", "2"], "does not combine with --num-seeds"),
]


@pytest.mark.parametrize("variant, flags, message", REFUSED)
def test_a_combination_a_stack_cannot_run_is_one_line_exit_2_and_writes_nothing(
    variant, flags, message, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    module = load(variant)
    out = tmp_path / "run.json"
    assert main(module.Args, module.train, [*flags, "--no-cuda", "--json-out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_the_stacks_experiment_runs_each_script_beside_its_stacks_in_every_block():
    loaded = plan.load(["--preset", "cpu", "--experiments", "stacks"])
    stacks = {v.name for v in discover() if v.stack and not v.gpu_only}
    with_stacks = {v.split("+")[0] for v in stacks}
    blocks = {}
    for run in loaded.runs:
        blocks.setdefault((run.env, run.size, run.seed), []).append(run.variant)
        assert "--sync-timing" in run.flags.split()
    assert {(env, size) for env, size, _ in blocks} == {(e, z) for e in STACK_ENVS for z in ("s", "m")}
    assert {seed for _, _, seed in blocks} == {1, 2, 3}
    for names in blocks.values():
        assert sorted(names) == sorted(stacks | with_stacks)


def test_the_stacks_run_where_torch_envs_has_the_environment():
    from bench.presets import STACK_ENVS
    from benchback import torch_ports

    assert list(torch_ports.IDS) == STACK_ENVS
    from bench.presets import GYMNASIUM_ENVS
    from benchback import gymnasium_envs

    assert list(gymnasium_envs.IDS) == GYMNASIUM_ENVS
    loaded = plan.load(["--preset", "gpu", "--experiments", "stacks", "--dry-run"])
    assert {(run.env, run.size) for run in loaded.runs} == {("CartPole-v1", size) for size in "sml"}


def test_a_stack_may_be_named_as_a_variant_and_an_unknown_one_is_refused():
    loaded = plan.load(["--preset", "learn", "--envs", "CartPole-v1", "--variants", "jax_linen,torch+torchenv"])
    assert {plan_runs.variant_of(run) for run in loaded.runs} == {"jax_linen", "torch+torchenv"}
    assert all("--env-backend torch" in run[8] for run in loaded.runs if plan_runs.variant_of(run) == "torch+torchenv")
    with pytest.raises(plan_args.Refused, match="unknown value 'torch\\+nothing'"):
        plan.load(["--preset", "learn", "--variants", "torch+nothing"])


@pytest.mark.parametrize(
    "args, name",
    [
        ({"env_backend": "gymnax", "cuda_graphs": False}, "torch_compile"),
        ({"env_backend": "torch", "cuda_graphs": False}, "torch_compile+torchenv"),
        ({"env_backend": "gymnax", "cuda_graphs": True}, "torch_compile+graphs"),
        ({"env_backend": "torch", "cuda_graphs": True}, "torch_compile+torchenv+graphs"),
        ({"env_backend": "gymnasium", "cuda_graphs": False}, "torch_compile+gymnasium"),
        ({"cuda_graphs": False}, "torch_compile"),  # a record made before the stacks existed
    ],
)
def test_a_record_is_reported_under_the_setting_that_shows_most_of_its_flags(args, name):
    assert setting_name("torch_compile", args) == name


def write_stacks(directory, truth: dict) -> None:
    """Stacks records over 3 blocks whose rollout and update take the multiples in `truth` of 0.1 s: {variant: (x, x)}."""
    drift = {1: 1.0, 2: 1.3, 3: 0.8}  # a machine's slow spell falls on a whole block
    wobble = {1: 1.02, 2: 0.98, 3: 1.0}
    for seed in drift:
        for variant, (rollout_x, update_x) in truth.items():
            noise = 1.0 if variant == "jax_linen" else wobble[seed]  # blocks that differ, around the truth
            rollout = [0.1 * rollout_x * drift[seed] * noise] * 6
            update = [0.1 * update_x * drift[seed]] * 6
            script = variant.split("+")[0]
            args = {"exp_name": "stacks", "num_envs": 32, "num_steps": 256}
            args["env_backend" if script == "torch" else "rollout"] = {"torch": "gymnax", "torch+torchenv": "torch"}.get(
                variant, "python" if variant.endswith("pyloop") else "scan"
            )
            record = {
                "schema_version": 2,
                "variant": script,
                "status": "ok",
                "env_id": "CartPole-v1",
                "hidden": [64, 64],
                "seed": seed,
                "args": args,
                "device": "cpu",
                "cpu": {"model": "test CPU", "cores": 2},
                "peak_host_memory_mb": 100.0,
                "versions": {},
                "sync_timing": True,
                "env_steps": 6 * 32 * 256,
                "setup_duration": 1.0,
                "iteration_durations": [r + u for r, u in zip(rollout, update)],
                "rollout_durations": rollout,
                "update_durations": update,
                "total_duration": 10.0,
                "compiles_after_first_iteration": 0,
                "episodic_return": [None] * 6,
                "final_return": None,
            }
            path = directory / "stacks" / f"{variant}__CartPole-v1__s__seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record))


def test_the_report_gives_each_stack_its_multiple_of_linens_iteration_and_parts(tmp_path):
    """Synthetic stacks records with known multiples (rollout and update apart) come back with their intervals."""
    truth = {"jax_linen": (1.0, 1.0), "torch": (8.0, 2.0), "torch+torchenv": (3.0, 2.0), "jax_linen+pyloop": (4.0, 1.0)}
    write_stacks(tmp_path, truth)
    runs, failures = load_runs(tmp_path)
    assert not failures and {r.variant for r in runs} == set(truth)
    section = timing.stacks(runs)
    for variant, (rollout_x, update_x) in truth.items():
        if variant == "jax_linen":
            continue
        pooled = {
            m: next(r for r in section[m] if (r["variant"], r["env"]) == (variant, None))
            for m in ("steady", "rollout", "update")
        }
        assert pooled["update"]["ratio"] == pytest.approx(update_x)
        assert pooled["rollout"]["ratio"] == pytest.approx(rollout_x, rel=0.03)
        assert pooled["steady"]["ratio"] == pytest.approx((rollout_x + update_x) / 2, rel=0.03)
        assert pooled["rollout"]["ci_low"] <= rollout_x <= pooled["rollout"]["ci_high"]


def test_a_report_says_why_it_shows_no_multiple_or_one_that_answers_nothing(tmp_path):
    from report.markdown import markdown_header
    from report.summary import summary_header

    write_stacks(tmp_path, {"torch": (8.0, 2.0), "torch+torchenv": (3.0, 2.0)})
    runs, failures = load_runs(tmp_path)
    header = lambda: markdown_header(summary_header(runs, failures, tmp_path))
    assert any(line.startswith("- no jax_linen run among these records") for line in header())
    assert not any("smoke test" in line for line in header())
    for run in runs:  # the quick preset's rollouts
        run.record["args"]["num_steps"] = 32
    assert any("(the quick preset's smoke test)" in line for line in header())


def test_the_readme_and_the_findings_quote_the_stacks_report():
    """Every pooled multiple of the findings' stacks table, and the README's headline pair, as the committed report
    gives them: a number edited by hand, or a report made again from other records, fails here."""
    summary = json.loads((ROOT / "results/speed/stacks-cpu/report/summary.json").read_text())["stacks"]
    findings = (ROOT / "docs/findings.md").read_text().split("## Environments in each framework's own stack")[1]
    findings = findings.split("\n## ")[0]
    readme = (ROOT / "README.md").read_text()

    def quoted(row):
        return f"{row['ratio']:#.3g} [{row['ci_low']:#.3g}, {row['ci_high']:#.3g}]"

    pooled = {(m, r["variant"], r["size"]): r for m in ("steady", "rollout") for r in summary[m] if r["env"] is None}
    assert len(pooled) == 2 * 7 * 2
    for key, row in pooled.items():
        assert quoted(row) in findings, key
    readme_quotes = [pooled["steady", v, size] for v, size in [("torch_compile+torchenv", "s"), ("torch_compile", "s")]]
    readme_quotes += [pooled["steady", "torch_compile+torchenv", "m"], pooled["steady", "torch+torchenv", "s"]]
    cells = {(r["variant"], r["env"], r["size"]): r for r in summary["steady"] if r["env"]}
    readme_quotes += [cells["torch_compile+gymnasium", env, "s"] for env in ("CartPole-v1", "Acrobot-v1")]
    for row in readme_quotes:
        assert quoted(row).replace(" [", "x [") in readme, (row["variant"], row["env"], row["size"])
