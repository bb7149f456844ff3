"""plot.py on synthetic run records whose ratios are known: the tables must give those ratios back; and its
statistics (report/) alone."""

import importlib.util
import itertools
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, in_background
from report import learning, learning_markdown, records, timing


@pytest.fixture(autouse=True)
def _few_resamples(few_resamples):
    """Every test here reads made-up records (or committed ones it compares with themselves): the reports' bootstraps at
    a tenth of their resamples (conftest's few_resamples)."""


spec = importlib.util.spec_from_file_location("benchback_plot", ROOT / "plot.py")
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)

ENVS = {"CartPole-v1": 100e-6, "Acrobot-v1": 200e-6, "Breakout-MinAtar": 400e-6}  # env step cost (s)
HIDDEN = {"s": [64, 64], "m": [256, 256, 256]}
BASE = {"s": 10.0, "m": 40.0}  # total duration of jax_linen, seconds
# Each variant's time relative to jax_linen, per env (in ENVS order).
FACTOR = {
    "jax_linen": [1, 1, 1],
    "jax_nnx": [1.25] * 3,
    "jax_equinox": [1.5] * 3,
    "linen_nojit": [4] * 3,
    "torch": [1, 2, 8],
    "torch_compile": [2, 2, 2],
    "jax_nnx+nocache": [3.75] * 3,
}
ITERATIONS = 12
# Slow spells of the machine in the learn runs: the medians over seeds stay torch 0.1 s, torch_compile
# 0.2 s (2x), but seed by seed torch_compile is 1x, 2x, 4x torch.
LEARN_SLOW = {("torch", 1): 2, ("torch_compile", 3): 2}
PNGS = {
    "answer_env_cost.png",
    "answer_size.png",
    "duration.png",
    "speedup.png",
    "overhead.png",
    "rollout_update.png",
    "compilation.png",
    "scaling.png",
    "learning_curves.png",
    "learn_CartPole-v1.png",
}
PARAMS = {"s": 9155, "m": 133_891}  # CartPole-v1's actor and critic


def record(experiment, variant, env, size, seed, *, total, iteration, num_envs=32, sync=False, returns=None, final=None):
    """A schema-1 record: iteration 0 takes 30x `iteration`, iterations 1-7 take it, 8-end half of it."""
    durations = [30 * iteration] + [iteration] * 7 + [iteration / 2] * (ITERATIONS - 8)
    args = {"exp_name": experiment, "num_envs": num_envs, "num_steps": 256}
    if variant.startswith("jax_nnx"):
        args["cached_partial"] = variant == "jax_nnx"
    return {
        "schema_version": 1,
        "variant": variant.split("+")[0],
        "status": "ok",
        "env_id": env,
        "hidden": HIDDEN[size],
        "seed": seed,
        "args": args,
        "device": "cpu",
        "versions": {"python": "3.11", "jax": "0.10.2"},
        "sync_timing": sync,
        "env_steps": ITERATIONS * num_envs * 256,
        "param_count": PARAMS[size],
        "setup_duration": 10 * iteration,
        "iteration_durations": durations,
        "rollout_durations": [d * 0.75 for d in durations] if sync else None,
        "update_durations": [d * 0.25 for d in durations] if sync else None,
        "total_duration": total,
        "compiles_after_first_iteration": 0,
        "episodic_return": returns or [None, *[10.0 * (i + 1) for i in range(ITERATIONS - 1)]],
        "final_return": final,
        "final_window": 1,  # the window `final` was taken over: as recorded (report/records.py's final_return)
    }


def write(directory, name, content):
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))


@pytest.fixture
def sweep_dir(tmp_path):
    return make_sweep(tmp_path)


def make_sweep(directory):
    """A sweep's records whose ratios are known (FACTOR, BASE, LEARN_SLOW), with some that plot.py must skip."""
    d = directory / "sweep"
    write(
        d,
        "env_cost.json",
        {
            "num_envs": 32,
            "host": {"cpu_count": 2, "machine": "x86_64"},
            "envs": {env: {"median_s": cost} for env, cost in ENVS.items()},
        },
    )
    for (variant, factors), (i, env), size, seed in [
        (vf, ie, z, s) for vf in FACTOR.items() for ie in enumerate(ENVS) for z in HIDDEN for s in (1, 2)
    ]:
        # seeds 0.9x and 1.1x: their median is exactly BASE * factor
        total = BASE[size] * factors[i] * (0.9 if seed == 1 else 1.1)
        # the compile experiment runs nnx with and without cached_partial, block by block
        for experiment in {"jax_nnx+nocache": ["compile"], "jax_nnx": ["overall", "compile"]}.get(variant, ["overall"]):
            write(
                d,
                f"{experiment}/{variant}__{env}__{size}__seed{seed}.json",
                record(experiment, variant, env, size, seed, total=total, iteration=0.1 * factors[i]),
            )
    for variant in ("jax_linen", "torch"):
        write(
            d,
            f"sync/{variant}__CartPole-v1__s__seed1.json",
            record("sync", variant, "CartPole-v1", "s", 1, total=1, iteration=0.2, sync=True),
        )
        for num_envs in (32, 128):  # steady iteration 0.1 s at 32 envs, 0.2 s at 128
            write(
                d,
                f"scaling/{variant}__CartPole-v1__s__n{num_envs:04d}__seed1.json",
                record("scaling", variant, "CartPole-v1", "s", 1, total=1, iteration=num_envs / 320, num_envs=num_envs),
            )
    for variant in records.SPEEDUP_VARIANTS:
        for seed in (1, 2, 3):
            final = 400.0 if (variant, seed) == ("torch", 2) else 480.0 + seed
            write(
                d,
                f"learn/{variant}__CartPole-v1__s__seed{seed}.json",
                record(
                    "learn",
                    variant,
                    "CartPole-v1",
                    "s",
                    seed,
                    total=1,
                    iteration=0.1 * FACTOR[variant][0] * LEARN_SLOW.get((variant, seed), 1),
                    final=final,
                    returns=[20.0 * (i + 1) + seed for i in range(ITERATIONS)],
                ),
            )
    # What plot.py must skip with a warning: a failure record, a file cut short, a temporary file.
    write(
        d,
        "overall/torch__Freeway-MinAtar__l__seed1.json",
        {"schema_version": 1, "status": "failed", "reason": "oom", "exit_code": 137},
    )
    write(d, "overall/torch__Freeway-MinAtar__m__seed1.json", '{"schema_version": 1, "stat')
    write(d, "overall/.tmp-xyz.json", "{")
    return d


def tables(summary: str) -> dict:
    """{section heading: [row cells]} for every markdown table (header and separator left out); a
    section's second table is under "heading #2", and so on."""
    result, heading, key = {}, None, None
    for line in summary.splitlines():
        if line.startswith("#"):
            heading, n = line.lstrip("# "), 0
        elif not line.startswith("|"):
            key = None
        elif key is None:  # a table's header
            n += 1
            key = heading if n == 1 else f"{heading} #{n}"
            result[key] = []
        elif not line.startswith("|---"):
            result[key].append([c.strip() for c in line.strip("|").split("|")])
    return result


def row(rows, *keys):
    matches = [r for r in rows if r[: len(keys)] == list(keys)]
    assert len(matches) == 1, (keys, rows)
    return matches[0][len(keys) :]


def close(cell, value):
    return math.isclose(float(cell), value, rel_tol=5e-3)


def plot_a_known_sweep(directory):
    """`python plot.py` on make_sweep's records: its process and the directory it wrote."""
    out = directory / "figures"
    command = [sys.executable, str(ROOT / "plot.py"), str(make_sweep(directory)), "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600), out


@in_background(plot_a_known_sweep)
def test_plot_reproduces_known_ratios_and_writes_every_png(background):
    proc, out = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {p.name for p in out.glob("*.png")} == PNGS
    assert PNGS - {"learn_CartPole-v1.png"} <= set(plot.FIGURES)
    assert all((out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for png in PNGS)
    warnings = proc.stderr
    assert "torch__Freeway-MinAtar__l__seed1.json: failure record" in warnings
    assert "torch__Freeway-MinAtar__m__seed1.json: does not parse" in warnings
    summary = (out / "summary.md").read_text()
    assert set(re.findall(r"^!\[(.+)\]\(\1\)$", summary, flags=re.M)) == PNGS  # each figure linked, once drawn
    assert "Device: cpu, 2 CPU cores" in summary and "skipped: overall/torch__Freeway-MinAtar__l__seed1.json: oom" in summary
    assert "skipped: overall/torch__Freeway-MinAtar__m__seed1.json: does not parse" in summary
    t = tables(summary)

    # Pairwise speedups, per size: jax_linen vs torch is 1, 2, 8 over the envs, on each of 2 seeds.
    for size in HIDDEN:
        for metric in ("steady", "iteration 0", "total"):
            rows = t[f"Speedup, {metric}"]
            cell, blocks, verdict = row(rows, size, "jax_linen", "torch")
            ratio, low, high = numbers(cell)
            assert close(ratio, 16 ** (1 / 3)) and 1 <= low < ratio < high <= 8 and blocks == "6", cell
            assert verdict == "A faster"
            assert close(numbers(row(rows, size, "jax_linen", "jax_nnx")[0])[0], 1.25)
            assert close(numbers(row(rows, size, "jax_nnx", "torch")[0])[0], 16 ** (1 / 3) / 1.25)
            assert close(numbers(row(rows, size, "jax_linen", "jax_equinox")[0])[0], 1.5)
            assert close(numbers(row(rows, size, "jax_nnx", "jax_equinox")[0])[0], 1.5 / 1.25)
    assert len(t["Speedup, total"]) == 2 * 15  # every pair of the six variants, per size
    # torch on Breakout-MinAtar at m: its steady iteration 0.8 s, iteration 0 30x that, in total 40 s x 8
    steady, first, total = (t[f"Durations by environment cost{n}"] for n in ("", " #2", " #3"))
    for rows, value in ((steady, 0.8), (first, 24), (total, 320)):
        assert close(float(row(rows, "Breakout-MinAtar", "m")[4]), value), rows

    # Overhead of jax_linen (factor 1): setup 1 s; windows: iteration 0 = 3 s, 1-7 = 0.1 s, 8-end = 0.05 s.
    assert [float(c) for c in row(t["Overhead: iteration 0 vs 1-7 vs 8-end"], "s", "jax_linen")] == [1, 3, 0.1, 0.05]
    rollout, update, share = row(t["Rollout vs update (--sync-timing)"], "s", "torch")
    assert close(float(rollout), 0.15) and close(float(update), 0.05) and close(float(share), 0.75)
    cell, blocks, verdict = row(t["Speedup, rollout (--sync-timing)"], "s", "jax_linen", "torch")
    assert cell == "1" and blocks == "1" and verdict == "too few runs"  # one seed: no interval

    steady, first, total = (t["Compilation on/off"], t["Compilation on/off #2"], t["Compilation on/off #3"])
    assert close(numbers(row(total, "m", "jax_linen", "linen_nojit")[0])[0], 4)
    assert close(numbers(row(steady, "s", "jax_nnx", "jax_nnx+nocache")[0])[0], 3)  # the compile experiment's blocks
    assert close(numbers(row(total, "s", "torch_compile", "torch")[0])[0], 2 ** (1 / 3))  # of 0.5, 1, 4
    assert row(first, "s", "torch_compile", "torch")[1] == "6"

    # 32 envs x 256 steps in a 0.1 s iteration; 4x the envs in 4x the time: the same rate.
    assert [float(c) for c in row(t["Scaling with --num-envs"], "torch")] == pytest.approx([81920, 81920], rel=5e-3)

    learn = t["CartPole-v1"]  # the learn preset's section, one subsection per environment
    seeds, iqm, mean, lowest, collapsed, improvement, verdict = row(learn, "torch")
    assert seeds == "3" and close(numbers(mean)[0], (481 + 400 + 483) / 3) and lowest == "400" and collapsed == "33%"
    assert verdict == "learns like the reference"
    assert row(learn, "jax_linen")[-2:] == ["n/a", "the reference"]
    # The learn runs take FACTOR's CartPole column: nnx 1.25x linen, torch_compile 2x torch.
    # The learn runs' returns (20 (i + 1) + seed, 12 iterations) never reach CartPole-v1's 475.
    runs, share, seconds, after_compile = row(t["CartPole-v1 #2"], "torch_compile")
    assert runs == "3" and numbers(share)[:2] == (0, 0) and seconds == after_compile == "too few runs reach it"
    improvement, verdict, collapsed, collapse_verdict = row(t["CartPole-v1 #3"], "torch_compile", "torch")
    assert close(numbers(improvement)[0], 6 / 9) and verdict == "no difference detected"  # 481 vs 400 and more
    assert numbers(collapsed)[0] == pytest.approx(-1 / 3, abs=0.005) and collapse_verdict == "no difference detected"
    first, steady = row(t["CartPole-v1 #4"], "torch_compile")
    assert close(float(first), 30 * 0.2) and close(float(steady), 0.2)
    ratios = t["CartPole-v1 #5"]
    cell, blocks, _ = row(ratios, "steady", "jax_linen", "jax_nnx")
    assert close(numbers(cell)[0], 1.25) and blocks == "3"
    cell, blocks, _ = row(ratios, "steady", "jax_nnx", "jax_equinox")
    assert close(numbers(cell)[0], 1.5 / 1.25) and blocks == "3"
    cell, blocks, _ = row(ratios, "steady", "torch_compile", "torch")  # seed by seed 1, 1/2, 1/4
    assert close(numbers(cell)[0], 0.5) and blocks == "3"

    record_json = json.loads((out / "summary.json").read_text())
    keys = {"a", "b", "metric", "size", "ratio", "ci_low", "ci_high", "n_blocks", "verdict"}
    assert all(keys <= set(r) for r in record_json["ratios"])
    (linen_torch,) = [
        r
        for r in record_json["ratios"]
        if (r["a"], r["b"], r["metric"], r["size"], r["experiment"]) == ("jax_linen", "torch", "steady", "s", "overall")
    ]
    assert close(linen_torch["ratio"], 16 ** (1 / 3)) and linen_torch["n_blocks"] == 6
    (torch_learning,) = [r for r in record_json["learning"] if r["variant"] == "torch"]
    assert torch_learning["n_seeds"] == 3 and torch_learning["prob_improvement_vs_jax_linen"] == pytest.approx(
        3 / 9, abs=1e-9
    )  # 481: a tie (0.5); 400: no wins; 483: 2 wins and a tie


def numbers(cell):
    """'1.25 [1.1, 1.4]' -> (1.25, 1.1, 1.4); '1.25' -> (1.25,)."""
    return tuple(float(x) for x in re.findall(r"[-+0-9.e]+", cell))


def timed_runs(directory, a_seconds, b_seconds):
    """Records of jax_linen (A) and torch (B) in the overall experiment, one block per env and seed."""
    for i, (a, b) in enumerate(zip(a_seconds, b_seconds)):
        env, seed = list(ENVS)[i % len(ENVS)], 1 + i // len(ENVS)
        for variant, t in (("jax_linen", a), ("torch", b)):
            write(
                directory,
                f"overall/{variant}__{env}__s__seed{seed}.json",
                record("overall", variant, env, "s", seed, total=10 * t, iteration=t),
            )


# The machine's drift: each block is slower or faster as a whole, and the two runs of a block differ by a
# few percent either way, a deviation whose logarithms sum to zero (so the true ratio is exact).
DRIFT = [1.0, 1.4, 0.8, 1.1, 0.7, 1.3, 0.9, 1.2]
NOISE = [1.05, 1 / 1.05, 1.1, 1 / 1.1, 1.02, 1 / 1.02, 1.08, 1 / 1.08]


@pytest.mark.parametrize(
    "true_ratio, blocks, verdict",
    [
        (2.0, 8, "A faster"),  # torch takes twice jax_linen's time: found, and the interval excludes 1
        (1.0, 8, "no difference detected"),
        (0.5, 8, "B faster"),
        (2.0, 2, "too few runs"),
    ],
)
def test_a_known_ratio_is_found_with_the_verdict_its_interval_allows(tmp_path, true_ratio, blocks, verdict):
    d = tmp_path / "sweep"
    a = [0.1 * drift for drift in DRIFT[:blocks]]
    timed_runs(d, a, [t * true_ratio * noise for t, noise in zip(a, NOISE)])
    assert plot.main([str(d)]) == 0
    (steady,) = [
        r
        for r in json.loads((d / "summary.json").read_text())["ratios"]
        if (r["a"], r["b"], r["metric"]) == ("jax_linen", "torch", "steady")
    ]
    assert steady["n_blocks"] == blocks and steady["verdict"] == verdict
    assert steady["ratio"] == pytest.approx(true_ratio * np.exp(np.mean(np.log(NOISE[:blocks]))), rel=1e-6)
    if blocks >= timing.MIN_BLOCKS:
        assert steady["ci_low"] < true_ratio < steady["ci_high"] and steady["ci_high"] / steady["ci_low"] < 1.3
    else:
        assert steady["ci_low"] is None and steady["ci_high"] is None
    cell = row(tables((d / "summary.md").read_text())["Speedup, steady"], "s", "jax_linen", "torch")
    assert cell[1:] == [str(blocks), verdict]


def test_an_interval_does_not_move_when_the_values_move_in_their_last_bit():
    """A few blocks' ratios, then the same a last bit apart (as another CPU's logarithm gives them): one interval. With
    five values, 4% of the resamples are the sample reordered, whose sums land either side of the estimate."""
    logs = np.log([4.2233826, 4.6506627, 5.0866282, 4.7897411, 5.5818453])
    rng = np.random.default_rng(0)
    nudged = [logs * (1 + rng.integers(-3, 4, logs.size) * np.finfo(float).eps) for _ in range(6)]
    for x in nudged:  # the ends move with the values, in their last bits only
        assert timing.interval(x, np.mean) == pytest.approx(timing.interval(logs, np.mean), rel=1e-12)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ((56, 70), (48, 80), (0.2, 0.0524, 0.3339)),  # the published method-10 values (Newcombe 1998)
        ((9, 10), (3, 10), (0.6, 0.1705, 0.8090)),
        ((4, 30), (0, 30), (0.1333, -0.0057, 0.2968)),  # none of b's runs collapsed: 0 stays possible
    ],
)
def test_the_collapse_share_interval_is_newcombes(a, b, expected):
    runs = lambda collapsed, n: [300.0] * collapsed + [500.0] * (n - collapsed)
    assert learning.collapse_difference(runs(*a), runs(*b)) == pytest.approx(expected, abs=1e-4)


@pytest.mark.slow  # the bootstraps twice: 8 s on 2 cores
def test_the_same_runs_give_the_same_learning_intervals():
    finals = {"jax_linen": [500.0, 480, 470, 490, 499, 455], "torch": [500.0, 300, 495, 488, 470, 420]}
    first, again = (learning.learning_statistics(finals) for _ in range(2))
    assert first == again


def test_records_of_two_devices_give_two_reports_and_no_ratio_across_them(tmp_path, capsys):
    d = tmp_path / "sweep"
    timed_runs(d, [0.1] * 4, [0.2] * 4)  # on the CPU: torch takes 2x jax_linen's time
    for path in list(d.rglob("jax_linen__*.json")):  # jax_linen also ran on a GPU, 10x faster
        gpu = json.loads(path.read_text())
        gpu.update(device="NVIDIA H100 80GB HBM3", iteration_durations=[t / 10 for t in gpu["iteration_durations"]])
        write(d, f"gpu/{path.name}", gpu)
    assert plot.main([str(d), "--out", str(tmp_path / "out")]) == 0
    assert "one report per machine" in capsys.readouterr().err
    cpu = json.loads((tmp_path / "out" / "machine-cpu-model-not-recorded" / "summary.json").read_text())
    gpu = json.loads((tmp_path / "out" / "machine-NVIDIA-H100-80GB-HBM3" / "summary.json").read_text())
    assert (cpu["device"], gpu["device"]) == ("cpu", "NVIDIA H100 80GB HBM3") and gpu["ratios"] == []
    (steady,) = [r for r in cpu["ratios"] if r["metric"] == "steady"]
    assert steady["ratio"] == pytest.approx(2) and steady["n_blocks"] == 4


@pytest.mark.parametrize("device", ["NVIDIA H100 80GB HBM3", pytest.param("cpu", marks=pytest.mark.slow)])
def test_on_a_gpu_the_answer_marks_the_environment_whose_step_waits_for_the_host(tmp_path, device):
    """Asterix-MinAtar's lax.while_loop costs a host round trip per trip on a GPU only: a GPU's report names it beside
    the answer's figure (and daggers its name there); a CPU's report of the same runs says nothing of it."""
    d = tmp_path / "sweep"
    for env, seed, variant in itertools.product(["CartPole-v1", "Asterix-MinAtar"], (1, 2, 3), ("jax_linen", "torch")):
        run = record("overall", variant, env, "s", seed, total=10.0, iteration=0.1)
        write(d, f"overall/{variant}__{env}__s__seed{seed}.json", {**run, "device": device})
    assert plot.main([str(d), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "summary.md").read_text()
    said = re.findall(r"\N{DAGGER} ([\w-]+): its step's lax.while_loop", text)
    assert said == (["Asterix-MinAtar"] if device != "cpu" else [])
    assert (tmp_path / "out" / "answer_env_cost.png").exists()


EPYC = "AMD EPYC (family 25, model 1)"
KEEP = {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0"}


@pytest.mark.parametrize(
    "jax_cpu, names",
    [
        (
            {"model": "Intel Xeon (family 6, model 143)", "cores": 2},
            ["AMD-EPYC-family-25-model-1-2-cores", "Intel-Xeon-family-6-model-143-2-cores"],
        ),
        pytest.param(  # one CPU, another allocator setting: glibc told to keep freed memory changes an allocating call's time
            {"model": EPYC, "cores": 2, "allocator": {**KEEP, "LD_PRELOAD": None}},
            [
                "AMD-EPYC-family-25-model-1-2-cores",
                "AMD-EPYC-family-25-model-1-2-cores-GLIBC-TUNABLES-glibc.malloc.mmap-max-0",
            ],
            marks=pytest.mark.slow,  # the settings' names: the same report path as two CPU models', with -m slow
        ),
        pytest.param(  # one CPU, other XLA_FLAGS: XLA told to keep each operation on one thread
            {"model": EPYC, "cores": 2, "xla_flags": "--xla_cpu_multi_thread_eigen=false"},
            [
                "AMD-EPYC-family-25-model-1-2-cores",
                "AMD-EPYC-family-25-model-1-2-cores-XLA-FLAGS-xla-cpu-multi-thread-eigen-false",
            ],
            marks=pytest.mark.slow,
        ),
    ],
)
def test_records_of_two_machines_give_two_reports_and_no_ratio_across_them(tmp_path, capsys, jax_cpu, names):
    """Two CPU models, or one under two allocator settings or two XLA_FLAGS, are two machines: torch timed on one
    and jax_linen on the other are never paired."""
    d = tmp_path / "sweep"
    timed_runs(d, [0.1] * 4, [0.2] * 4)
    for path in d.rglob("*.json"):
        rec = json.loads(path.read_text())
        cpu = {"model": EPYC, "cores": 2, "allocator": {"GLIBC_TUNABLES": None}} if rec["variant"] == "torch" else jax_cpu
        cpu = dict(cpu)
        rec.update(schema_version=2, cpu=cpu, peak_host_memory_mb=500.0, xla_flags=cpu.pop("xla_flags", None))
        path.write_text(json.dumps(rec))
    assert plot.main([str(d), "--out", str(tmp_path / "out")]) == 0
    assert "2 machines" in capsys.readouterr().err
    reports = sorted((tmp_path / "out").glob("machine-*/summary.json"))
    assert [p.parent.name for p in reports] == [f"machine-{name}" for name in names]
    for report in reports:
        summary = json.loads(report.read_text())
        assert summary["ratios"] == [] and summary["answer"] == []
    assert f"Device: {EPYC}, 2 cores." in (reports[0].parent / "summary.md").read_text()


def test_plot_writes_into_dir_by_default_and_draws_what_it_has(tmp_path):
    d = tmp_path / "only_overall"
    write(
        d,
        "overall/jax_linen__CartPole-v1__s__seed1.json",
        record("overall", "jax_linen", "CartPole-v1", "s", 1, total=5, iteration=0.1),
    )
    write(d, "learn.png", "a figure from an earlier plot, of data no longer here")
    assert plot.main([str(d)]) == 0  # no env_cost.json: environments by name
    assert {"duration.png", "overhead.png", "learning_curves.png"} <= {p.name for p in d.glob("*.png")}
    assert "learn.png" not in {p.name for p in d.glob("*.png")}
    summary = (d / "summary.md").read_text()
    sections = re.split(r"^## ", summary, flags=re.M)[1:]
    assert sections and all(body.strip().count("\n") >= 2 for body in sections)  # no section without content
    assert "Does every variant learn" not in summary and "The answer" not in summary  # no learn runs, no pairs


def test_plot_flags_a_run_that_compiled_after_iteration_0(tmp_path, capsys):
    d = tmp_path / "recompiled"
    for seed, compiles in ((1, 0), (2, 1)):
        rec = record("overall", "jax_linen", "CartPole-v1", "s", seed, total=5, iteration=0.1)
        rec["compiles_after_first_iteration"] = compiles
        write(d, f"overall/jax_linen__CartPole-v1__s__seed{seed}.json", rec)
    assert plot.main([str(d)]) == 0
    flagged = [line for line in (d / "summary.md").read_text().splitlines() if "compiled again" in line]
    assert flagged == ["- compiled again after iteration 0 (1x), its times include it: overall/jax_linen CartPole-v1 s seed 2"]
    assert "seed2.json: compiled 1 time(s) after iteration 0" in capsys.readouterr().err


def test_a_steady_time_from_one_iteration_is_said_so(tmp_path):
    """A run of 2 iterations (--iterations 2): its steady iteration is one iteration's time; the report says how many
    such runs it holds, as it says of the quick preset's, and says nothing of runs with a median over several."""
    from report.markdown import markdown_header
    from report.summary import summary_header

    for seed, n in ((1, 3), (2, 2), (3, 2)):
        rec = record("overall", "jax_linen", "CartPole-v1", "s", seed, total=5, iteration=0.1)
        rec["iteration_durations"] = rec["iteration_durations"][:n]
        write(tmp_path, f"overall/jax_linen__CartPole-v1__s__seed{seed}.json", rec)
    runs, failures = records.load_runs(tmp_path)
    said = lambda: [line for line in markdown_header(summary_header(runs, failures, tmp_path)) if "one iteration" in line]
    assert len(said()) == 1 and said()[0].startswith("- 2 runs timed at most one iteration after iteration 0"), said()
    runs = [r for r in runs if len(r.record["iteration_durations"]) > 2]
    assert said() == []


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: p, lambda p: write(p, "a.json", "{") or p])
def test_plot_fails_clearly_on_a_missing_or_empty_dir(make, tmp_path, capsys):
    assert plot.main([str(make(tmp_path))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and ("not a directory" in err[-1] or "no run records" in err[-1])


@pytest.mark.slow  # the answer's ratios keep their default checks (the known ratios and verdicts above); 21 s on 2 cores
def test_the_answer_finds_a_gap_that_grows_with_the_model_per_cell_and_per_size(tmp_path):
    """torch takes 2x jax_linen's time at size s, 3x at m and 4x at l, on every env; NNX the same as Linen. Each
    block is slower or faster as a whole (the machine's drift): the ratios must come back with intervals."""
    d = tmp_path / "sweep"
    truth = {"s": 2.0, "m": 3.0, "l": 4.0}
    hidden = {"s": [64, 64], "m": [256] * 3, "l": [1024] * 6}
    for (size, ratio), env, seed in itertools.product(truth.items(), ["CartPole-v1", "Breakout-MinAtar"], (1, 2, 3)):
        drift = DRIFT[seed] * (1.5 if env == "Breakout-MinAtar" else 1)
        # each variant a few percent off its true time, differently in each block
        for variant, factor in (("jax_linen", 1), ("jax_nnx", NOISE[2 * seed - 1]), ("torch", ratio * NOISE[2 * seed - 2])):
            rec = record("overall", variant, env, "s", seed, total=1, iteration=0.1 * drift * factor)
            rec.update(hidden=hidden[size], param_count={"s": 1e4, "m": 1e5, "l": 1e6}[size])
            write(d, f"overall/{variant}__{env}__{size}__seed{seed}.json", rec)
    assert plot.main([str(d)]) == 0
    summary = json.loads((d / "summary.json").read_text())
    answer = {(r["variant"], r["env"], r["size"]): r for r in summary["answer"]}
    for size, ratio in truth.items():
        for env in (None, "CartPole-v1", "Breakout-MinAtar"):  # per size over the envs, then per cell
            torch, nnx = answer["torch", env, size], answer["jax_nnx", env, size]
            assert torch["n_blocks"] == (6 if env is None else 3)
            assert torch["ci_low"] <= ratio * 1.1 and torch["ci_high"] >= ratio / 1.1 and torch["ci_low"] > 1
            assert torch["verdict"] == "slower than jax_linen"
            assert nnx["ratio"] == pytest.approx(1, rel=0.15) and nnx["verdict"] != "slower than jax_linen"
    assert answer["torch", None, "s"]["ratio"] < answer["torch", None, "m"]["ratio"] < answer["torch", None, "l"]["ratio"]
    assert {"answer_env_cost.png", "answer_size.png"} <= {p.name for p in d.glob("*.png")}
    t = tables((d / "summary.md").read_text())
    cell, blocks, verdict, envs, lowest, highest = row(t["The answer: each variant's time over jax_linen's"], "l", "torch")
    assert close(numbers(cell)[0], answer["torch", None, "l"]["ratio"]) and (blocks, envs) == ("6", "2 gymnax")
    assert verdict == "slower than jax_linen"


def test_a_setting_in_the_references_blocks_gets_its_row_in_the_answer(tmp_path):
    """The gpu preset runs torch.compile with CUDA graphs in every overall block: the answer gives that setting a row,
    with its interval, beside torch_compile's. A setting that never shares a block with Linen (NNX without
    cached_partial, in the compile experiment) gets none."""
    d = tmp_path / "sweep"
    for seed in (1, 2, 3):
        truth = (("jax_linen", 1), ("torch_compile", 2.0 * NOISE[seed]), ("torch_compile+graphs", 1.2 * NOISE[seed + 1]))
        for variant, factor in truth:
            rec = record("overall", variant, "CartPole-v1", "s", seed, total=1, iteration=0.1 * DRIFT[seed] * factor)
            rec["args"]["cuda_graphs"] = variant.endswith("+graphs")
            write(d, f"overall/{variant}__CartPole-v1__s__seed{seed}.json", rec)
        for variant in ("jax_nnx", "jax_nnx+nocache"):
            rec = record("compile", variant, "CartPole-v1", "s", seed, total=1, iteration=0.1 * DRIFT[seed])
            write(d, f"compile/{variant}__CartPole-v1__s__seed{seed}.json", rec)
    assert plot.main([str(d)]) == 0
    answer = {(r["variant"], r["env"]): r for r in json.loads((d / "summary.json").read_text())["answer"]}
    graphs = answer["torch_compile+graphs", None]
    assert graphs["n_blocks"] == 3 and graphs["ci_low"] <= 1.2 * 1.1 and graphs["ci_high"] >= 1.2 / 1.1
    assert graphs["verdict"] == "slower than jax_linen" and answer["torch_compile", None]["ratio"] > graphs["ratio"]
    assert {variant for variant, _ in answer} == {"torch_compile", "torch_compile+graphs"}


def test_craftax_is_pooled_apart_from_the_gymnax_environments(tmp_path):
    """torch takes 3x Linen's time on two gymnax envs and 0.8x on Craftax: per size, one pooled row per suite, each
    with its own ratio; none over both."""
    d = tmp_path / "sweep"
    truth = {"CartPole-v1": 3.0, "Breakout-MinAtar": 3.0, "Craftax-Classic-Symbolic-v1": 0.8}
    for (env, ratio), seed in itertools.product(truth.items(), (1, 2, 3)):
        for variant, factor in (("jax_linen", 1), ("torch", ratio * NOISE[seed])):
            rec = record("overall", variant, env, "s", seed, total=1, iteration=0.1 * DRIFT[seed] * factor)
            write(d, f"overall/{variant}__{env}__s__seed{seed}.json", rec)
    assert plot.main([str(d)]) == 0
    pooled = [r for r in json.loads((d / "summary.json").read_text())["answer"] if r["env"] is None]
    assert [(r["suite"], r["n_blocks"]) for r in pooled] == [("gymnax", 6), ("Craftax", 3)]
    for r in pooled:
        expected = 3.0 if r["suite"] == "gymnax" else 0.8
        assert r["ci_low"] <= expected * 1.1 and r["ci_high"] >= expected / 1.1
    t = tables((d / "summary.md").read_text())["The answer: each variant's time over jax_linen's"]
    assert [cells[5] for cells in t if cells[:2] == ["s", "torch"]] == ["2 gymnax", "1 Craftax"]


def learn_record(variant, seed, returns, setup=1.0, first=2.0, later=0.5, env="CartPole-v1"):
    rec = record("learn", variant, env, "s", seed, total=1, iteration=later, returns=returns, final=returns[-1])
    rec.update(setup_duration=setup, iteration_durations=[first] + [later] * (len(returns) - 1))
    return rec


def test_time_to_threshold_counts_from_the_start_of_train_and_leaves_out_runs_that_never_reach_it():
    returns = [100.0, 200.0, None, 300.0, 480.0, 500.0]  # 475 first reached by iteration 4 (0-based)
    reached = learn_record("torch", 1, returns)
    assert learning.time_to_threshold(reached, 475) == (1.0 + 2.0 + 4 * 0.5, 4 * 0.5)
    assert learning.time_to_threshold(reached, 500) == (1.0 + 2.0 + 5 * 0.5, 5 * 0.5)
    assert learning.time_to_threshold(reached, 501) == (None, None)
    runs = [
        records.Run("learn", "torch", "CartPole-v1", "s", s, 32, learn_record("torch", s, returns, setup=s)) for s in (1, 2, 3)
    ]
    never = records.Run("learn", "torch", "CartPole-v1", "s", 4, 32, learn_record("torch", 4, [100.0] * 6))
    (row,) = learning.threshold_statistics({"torch": runs + [never]}, 475)
    assert (row["runs"], row["reached"], row["share_reached"]) == (4, 3, 0.75)
    assert row["share_reached_ci"][0] < 0.75 < row["share_reached_ci"][1]
    assert row["seconds"] == pytest.approx(2 + 2.0 + 2.0)  # setups 1, 2, 3: the IQM of 5, 6, 7 is 6
    assert row["seconds_after_iteration_0"] == pytest.approx(2.0) and row["seconds_ci"][0] <= 6 <= row["seconds_ci"][1]


def test_the_clock_curve_carries_each_runs_last_reported_return_where_an_iteration_reports_none():
    """Freeway-MinAtar's episodes span about ten iterations: most iterations report no return, and at a given second
    the runs of different speeds have reported at different iterations."""
    returns = [None, None, 10.0, None, None, 20.0, None, None, 30.0, None]
    fast, slow = (
        records.Run("learn", "torch", "Freeway-MinAtar", "s", seed, 32, learn_record("torch", seed, returns, later=later))
        for seed, later in ((1, 0.5), (2, 0.7))
    )
    seconds, iqm, low, high = learning.clock_curve([fast, slow], points=200)
    assert len(seconds) > 100  # every time after both runs' first return, not only the instants both report at
    # at second 6.6 the fast run (setup 1 s, iteration 0 2 s, then 0.5 s each) has ended iteration 7 and the slow
    # one (0.7 s each) iteration 5: neither reported there, each carries the 20 of iteration 5
    at = np.searchsorted(seconds, 6.6)
    assert iqm[at] == pytest.approx(20.0) and low[at] <= 20.0 <= high[at]
    assert seconds[0] >= 1 + 2 + 2 * 0.7  # nothing before the slow run's first return
    assert np.all(np.diff(iqm) >= 0)  # rising returns, carried forward, give a rising curve


def test_learn_runs_too_short_to_end_an_episode_still_get_their_report(tmp_path):
    d = tmp_path / "short"
    for seed in (1, 2, 3):
        for variant in ("jax_linen", "torch"):
            rec = learn_record(variant, seed, [None] * 5, env="Freeway-MinAtar")
            write(d, f"learn/{variant}__Freeway-MinAtar__s__seed{seed}.json", {**rec, "final_return": None})
    assert plot.main([str(d)]) == 0
    assert (d / "learn_Freeway-MinAtar.png").exists() and "Freeway-MinAtar" in (d / "summary.md").read_text()


def test_an_environment_with_two_thresholds_gets_the_time_to_each(monkeypatch):
    monkeypatch.setitem(learning.THRESHOLDS, "Breakout-MinAtar", (8.0, 6.0))
    runs = [  # 6 first reached at iteration 2, 8 at iteration 4 by seeds 1-3; seed 4 holds below 8
        records.Run(
            "learn", "torch", "Breakout-MinAtar", "s", seed, 32, learn_record("torch", seed, returns, env="Breakout-MinAtar")
        )
        for seed, returns in [(s, [1.0, 4.0, 6.5, 7.0, 9.0]) for s in (1, 2, 3)] + [(4, [1.0, 4.0, 6.5, 6.4, 6.4])]
    ]
    section = learning.learn("Breakout-MinAtar", runs)
    reach = {r["threshold"]: r for r in section["reach"]}
    assert sorted(reach) == [6.0, 8.0]
    assert (reach[8.0]["reached"], reach[6.0]["reached"]) == (3, 4)
    assert reach[8.0]["seconds"] == pytest.approx(1 + 2 + 4 * 0.5) and reach[6.0]["seconds"] == pytest.approx(1 + 2 + 2 * 0.5)
    text = "\n".join(learning_markdown.learn_env(section))
    assert "reach 8 [95% CI]" in text and "reach 6 [95% CI]" in text and "thresholds, 8 and 6" in text


def test_learning_is_compared_on_each_environment_with_its_own_threshold(tmp_path):
    d = tmp_path / "learn"
    for seed in (1, 2, 3):
        for variant, slow in (("jax_linen", 1), ("torch", 3)):
            # CartPole-v1 reaches 475 at iteration 3; Acrobot-v1 reaches -100 at iteration 2 and never 475.
            cartpole = learn_record(variant, seed, [50.0, 200.0, 400.0, 480.0, 500.0], later=0.5 * slow)
            acrobot = learn_record(variant, seed, [-500.0, -200.0, -90.0, -80.0, -80.0], later=0.5 * slow, env="Acrobot-v1")
            write(d, f"learn/{variant}__CartPole-v1__s__seed{seed}.json", cartpole)
            write(d, f"learn/{variant}__Acrobot-v1__s__seed{seed}.json", acrobot)
    assert plot.main([str(d)]) == 0
    summary = json.loads((d / "summary.json").read_text())
    times = {(r["env"], r["variant"]): r for r in summary["time_to_threshold"]}
    assert times["CartPole-v1", "jax_linen"]["seconds"] == pytest.approx(1 + 2 + 3 * 0.5)
    assert times["CartPole-v1", "torch"]["seconds_after_iteration_0"] == pytest.approx(3 * 1.5)
    assert times["Acrobot-v1", "jax_linen"]["threshold"] == -100
    assert times["Acrobot-v1", "torch"]["seconds"] == pytest.approx(1 + 2 + 2 * 1.5)
    verdicts = {(r["env"], r["variant"]): r["verdict"] for r in summary["learning"]}
    assert verdicts == {
        ("CartPole-v1", "jax_linen"): "the reference",
        ("CartPole-v1", "torch"): "learns like the reference",
        ("Acrobot-v1", "jax_linen"): "the reference",
        ("Acrobot-v1", "torch"): "learns like the reference",
    }
    assert "share_below_425" in next(r for r in summary["learning"] if r["env"] == "CartPole-v1")
    assert "share_below_425" not in next(r for r in summary["learning"] if r["env"] == "Acrobot-v1")
    assert {"learn_CartPole-v1.png", "learn_Acrobot-v1.png"} <= {p.name for p in d.glob("*.png")}


def test_the_memory_table_gives_each_variants_peak_per_size(tmp_path):
    d = tmp_path / "sweep"
    for seed, (linen, torch) in enumerate([(700.0, 900.0), (720.0, 950.0), (710.0, 2000.0)], start=1):
        for variant, peak in (("jax_linen", linen), ("torch", torch)):
            rec = record("overall", variant, "CartPole-v1", "s", seed, total=1, iteration=0.1)
            rec.update(schema_version=2, cpu={"model": "AMD EPYC", "cores": 2}, peak_host_memory_mb=peak)
            write(d, f"overall/{variant}__CartPole-v1__s__seed{seed}.json", rec)
    assert plot.main([str(d)]) == 0
    memory = {r["variant"]: r for r in json.loads((d / "summary.json").read_text())["memory"]}
    assert (memory["jax_linen"]["host_mb_median"], memory["torch"]["host_mb_median"]) == (710, 950)
    assert memory["torch"]["host_mb_max"] == 2000 and memory["torch"]["gpu_mb_median"] is None
    assert row(tables((d / "summary.md").read_text())["Peak memory"], "s", "torch") == ["3", "950", "2000"]


@pytest.mark.parametrize("measured_as_the_runs", [True, False])
def test_the_torch_rollout_splits_into_the_handover_floor_and_the_rest(tmp_path, capsys, measured_as_the_runs):
    """bench/handover.py's floor, read beside the sync runs measured as they were: its share of each torch rollout;
    a floor measured at another num_envs is not used (and not counted as a skipped run)."""
    d, cpu = tmp_path / "sweep", {"model": "AMD EPYC", "cores": 2}
    for seed in (1, 2, 3):
        for variant, iteration in (("jax_linen", 0.02), ("torch", 0.2)):
            rec = record("sync", variant, "CartPole-v1", "s", seed, total=1, iteration=iteration, sync=True)
            rec.update(schema_version=2, cpu=cpu, peak_host_memory_mb=800.0)
            write(d, f"sync/{variant}__CartPole-v1__s__seed{seed}.json", rec)
    floor = {"num_envs": 32 if measured_as_the_runs else 64, "num_steps": 256, "device": "cpu", "cpu": cpu}
    write(d, "handover.json", {**floor, "envs": {"CartPole-v1": {"median_s": 0.03}}})
    assert plot.main([str(d)]) == 0
    summary = json.loads((d / "summary.json").read_text())
    err = capsys.readouterr().err
    assert "handover.json" in err if not measured_as_the_runs else "handover.json" not in err
    if not measured_as_the_runs:
        assert summary["handover"] == [] and "hand-over floor" not in (d / "summary.md").read_text()
        return

    # record(): the rollout is 0.75 of each iteration; its steady value, the median of iterations 1-end
    def rollout(iteration):
        durations = record("sync", "torch", "CartPole-v1", "s", 1, total=1, iteration=iteration)["iteration_durations"]
        return float(np.median([0.75 * x for x in durations[1:]]))

    (split,) = summary["handover"]
    assert (split["env"], split["size"], split["variant"]) == ("CartPole-v1", "s", "torch")
    assert split["rollout_s"] == pytest.approx(rollout(0.2)) and split["floor_s"] == 0.03
    assert split["floor_share"] == pytest.approx(0.03 / rollout(0.2))
    assert split["jax_linen_rollout_s"] == pytest.approx(rollout(0.02))
    cells = row(
        tables((d / "summary.md").read_text())["The torch rollout: the hand-over floor and the rest"],
        "CartPole-v1",
        "s",
        "torch",
    )
    assert cells[1:4] == [f"{0.03:.3g}", f"{0.03 / rollout(0.2):.2g}", f"{rollout(0.2) - 0.03:.3g}"]


def test_an_incomplete_or_foreign_json_is_skipped_with_a_warning_naming_the_file_and_the_key(tmp_path, capsys):
    d = tmp_path / "sweep"
    timed_runs(d, [0.1] * 3, [0.2] * 3)
    write(d, "overall/torch__Acrobot-v1__s__seed9.json", {"schema_version": 1, "variant": "torch", "status": "ok"})
    newer = record("overall", "torch", "Acrobot-v1", "s", 8, total=1, iteration=0.1)
    write(d, "overall/torch__Acrobot-v1__s__seed8.json", {**newer, "schema_version": 2})  # no cpu, no peak memory
    write(d, "other-tool.json", [1, 2, 3])
    write(d, "no-num-envs.json", {**newer, "args": {"exp_name": "overall"}})
    seeds = record("overall", "jax_linen", "Acrobot-v1", "s", 7, total=1, iteration=0.1)
    write(d, "seeds.json", {**seeds, "args": {**seeds["args"], "num_seeds": 4}})
    assert plot.main([str(d)]) == 0
    err = capsys.readouterr().err
    assert "torch__Acrobot-v1__s__seed9.json: incomplete: no 'env_id'" in err  # the first key plot.py reads that is missing
    assert "torch__Acrobot-v1__s__seed8.json: incomplete: no 'cpu'" in err
    assert "other-tool.json: failure record or not a run (not a record)" in err
    assert "no-num-envs.json: incomplete: no 'args.num_envs'" in err
    assert "seeds.json: trained 4 seeds at once (--num-seeds), which only the seeds experiment reads" in err
    summary = (d / "summary.md").read_text()
    assert "6 runs from" in summary and "5 files skipped" in summary


@pytest.mark.slow  # a fresh interpreter's imports, 12 s on 2 cores
def test_the_statistics_import_and_compute_without_matplotlib():
    """The statistics and the report are functions over the runs: with matplotlib out of reach they import and give
    their numbers; only the figures need it."""
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None\n"  # any import of it fails
        "from report import learning, markdown, summary, timing\n"
        "print(learning.collapse_difference([300.0, 500.0, 500.0], [500.0] * 3)[0])\n"
        "print(timing.ratio_verdict(1.1, 1.3, timing.MIN_BLOCKS))\n"
        "finals = {'jax_linen': [500.0, 480, 470, 490], 'torch': [500.0, 300, 495, 488]}\n"
        "print(learning.learning_statistics(finals)[1]['verdict'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [str(1 / 3), "A faster", "learns like the reference"]


def test_seeds_at_once_are_compared_with_one_by_one_block_by_block(tmp_path):
    """The seeds experiment: jax_linen's 4 seeds at once take 2x one seed's iteration (seed by seed 1.5x, 2x, 2.5x),
    so at once over one by one is 2 / 4 = 0.5 (geometric mean of 0.375, 0.5, 0.625), and 4 x 32 x 256 agent steps
    in 0.2 s; torch runs one seed only; a 4-seed run of the overall experiment is refused, not mixed in."""
    d = tmp_path / "sweep"
    one, at_once = {1: 0.1, 2: 0.1, 3: 0.1}, {1: 0.15, 2: 0.2, 3: 0.25}
    for seed in (1, 2, 3):
        for variant, n, iteration in [("jax_linen", 1, one[seed]), ("torch", 1, 0.3), ("jax_linen", 4, at_once[seed])]:
            rec = record("seeds", variant, "CartPole-v1", "s", seed, total=1, iteration=iteration)
            rec["iteration_durations"] = [3.0] + [iteration] * 10
            rec.update(schema_version=2, cpu={"model": "AMD EPYC", "cores": 2}, peak_host_memory_mb=100.0 * n)
            rec["args"] |= {"num_seeds": n} if n > 1 else {}
            write(d, f"seeds/{variant}__CartPole-v1__s__k{n:03d}__seed{seed}.json", rec)
    assert plot.main([str(d)]) == 0
    rows = {(r["variant"], r["num_seeds"]): r for r in json.loads((d / "summary.json").read_text())["seeds"]}
    assert set(rows) == {("jax_linen", 1), ("jax_linen", 4), ("torch", 1)}
    four = rows["jax_linen", 4]
    assert math.isclose(four["agent_sps"], 4 * 32 * 256 / 0.2)
    expected = math.exp(np.mean(np.log([0.375, 0.5, 0.625])))
    assert (
        math.isclose(four["at_once_over_one_by_one"]["ratio"], expected) and four["at_once_over_one_by_one"]["n_blocks"] == 3
    )
    assert four["host_mb_median"] == 400 and rows["torch", 1]["at_once_over_one_by_one"] is None
    assert math.isclose(rows["torch", 1]["agent_sps"], 32 * 256 / 0.3)
    assert (d / "seeds.png").exists() and "## Seeds at once (--num-seeds) against one by one" in (d / "summary.md").read_text()


def test_a_log_axis_of_ratios_near_1_is_labelled_along_its_length():
    """A panel of ratios from 0.9 to 1.6 (size l): log ticks would label only 0.9 and 1, leaving torch's 1.3 with no
    tick near it; the axis gets evenly spaced round ticks instead, and a wide axis keeps its log ticks. So does one
    environment's env-cost axis, which spans 4x (half its cost to twice it): its log labels crowded ("90k", "100k")."""
    from report import figures

    fig, (narrow, wide, one_env) = figures.plt.subplots(1, 3)
    for ax, (low, high) in ((narrow, (0.9, 1.6)), (wide, (0.5, 80)), (one_env, (31850, 127400))):
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        figures.plain_log_ticks(ax)
    fig.canvas.draw()
    labelled = [float(t.get_text()) for t in narrow.get_yticklabels() if t.get_text()]
    shown = [v for v in labelled if 0.9 <= v <= 1.6]
    assert len(shown) >= 4 and max(shown) >= 1.4 and min(np.diff(sorted(shown))) > 0, labelled
    assert {"1", "10"} <= {t.get_text() for t in wide.get_yticklabels()}
    spaced = [float(t.get_text().replace("k", "e3")) for t in one_env.get_yticklabels() if t.get_text()]
    assert len(spaced) >= 3 and np.allclose(np.diff(spaced), np.diff(spaced)[0]), spaced
    figures.plt.close(fig)


def test_the_answers_legend_fits_its_figure_when_one_panel_holds_every_variant():
    """One size (the gpu preset's first parts) and seven entries, the longest torch_compile+graphs: the legend
    above the panel stays inside the figure, in as many rows as it needs, and clear of the panel's title."""
    from report import figures

    fig, axes = figures.size_axes(["s"])
    ax = axes[0, 0]
    for name in ("jax_linen (1)", "jax_nnx", "jax_equinox", "torch", "torch_compile", "torch_compile+graphs", "x"):
        ax.plot([1, 2], [1, 2], label=name)
    ax.set_title("size s")
    inches = figures.figure_legend(fig, ax)
    fig.tight_layout(rect=(0, 0, 1, 1 - inches / fig.get_figheight()))
    fig.canvas.draw()
    legend, title = fig.legends[0].get_window_extent(), ax.title.get_window_extent()
    assert 0 <= legend.x0 and legend.x1 <= fig.bbox.width and legend.y1 <= fig.bbox.height
    assert legend.y0 >= title.y1
    figures.plt.close(fig)


def test_compile_figures_come_from_cold_runs_and_a_warm_run_that_compiled_is_named(tmp_path):
    """Overall runs given warm caches load their programs in iteration 0: the steady ratio comes from them, but
    iteration 0's and the total's from the compile experiment's cold runs; a warm run whose caches missed is named."""
    d, seconds = tmp_path / "warm", {"jax_linen": 0.1, "torch": 0.3}
    for seed in (1, 2, 3):
        for variant, t in seconds.items():
            warm = record("overall", variant, "CartPole-v1", "s", seed, total=20 * t, iteration=t)
            warm["iteration_durations"][0] = {"jax_linen": 1.0, "torch": 0.5}[variant]  # loaded, not compiled
            warm["caches"] = {"persistent": True, "jax": {"hits": 40, "misses": 40 if seed == 1 else 0}}
            write(d, f"overall/{variant}__CartPole-v1__s__seed{seed}.json", warm)
            cold = record("compile", variant, "CartPole-v1", "s", seed, total=50 * t, iteration=t)
            cold["caches"] = {"persistent": False, "jax": {"hits": 0, "misses": 0}}
            write(d, f"compile/{variant}__CartPole-v1__s__seed{seed}.json", cold)
    assert plot.main([str(d)]) == 0
    rows = json.loads((d / "summary.json").read_text())["ratios"]
    pair = {r["metric"]: r for r in rows if (r["a"], r["b"]) == ("jax_linen", "torch") and r["size"] == "s"}
    assert pair["steady"]["experiment"] == "overall" and math.isclose(pair["steady"]["ratio"], 3.0)
    for metric in ("iteration 0", "total"):  # 30 t and 50 t, cold: 3x; the warm runs' iteration 0 would give 0.5x
        assert pair[metric]["experiment"] == "compile" and math.isclose(pair[metric]["ratio"], 3.0), pair[metric]
    text = (d / "summary.md").read_text()
    assert "- compiler caches: 6 runs were given the sweep's warm caches, 6 compiled from cold" in text
    assert "of the warm, 4 loaded their programs (their iteration 0 is not a compile time) and 2 compiled them" in text
    named = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("- compiled afresh")]
    assert named == [", ".join(f"overall/{v} CartPole-v1 s seed 1" for v in ("jax_linen", "torch"))]


def test_a_probability_of_improvement_whose_bootstrap_cannot_vary_says_why_instead_of_a_zero_width_interval():
    """rliable's stratified bootstrap gives every resample the same probability where every pair of runs ties (all
    end at the gridworld's 1) or every pair compares one way: [0.50, 0.50] or [1.00, 1.00] would read as certainty."""
    from report.tables import improvement

    ties = learning.probability_of_improvement({"a": [1.0] * 4, "b": [1.0] * 4}, [("a", "b")])[("a", "b")]
    one_way = learning.probability_of_improvement({"a": [2.0, 3.0, 4.0], "b": [0.0, 0.5, 1.0]}, [("a", "b")])[("a", "b")]
    mixed = learning.probability_of_improvement({"a": [1.0, 3.0, 5.0], "b": [2.0, 4.0, 0.0]}, [("a", "b")])[("a", "b")]
    assert improvement(*ties, "{:.2f}".format) == "0.50 (every pair of runs ties: no interval)"
    assert improvement(*one_way, "{:.2f}".format) == "1.00 (every pair of runs one way: no interval)"
    assert re.fullmatch(r"0\.\d\d \[0\.\d\d, [01]\.\d\d\]", improvement(*mixed, "{:.2f}".format))


def test_runs_that_all_compare_one_way_differ_only_where_an_exact_rank_test_says_so():
    """rliable's bootstrap gives 3 runs all above 3 of the reference's 1.00 [1.00, 1.00]: "better" with no evidence
    (an exact Mann-Whitney test: p = 0.1). The verdict takes the exact test where the interval has no width."""
    three = learning.learning_statistics({"jax_linen": [0.0, 0.5, 1.0], "jax_nnx": [2.0, 3.0, 4.0]}, collapse=None)
    five = learning.learning_statistics(
        {"jax_linen": [0.0, 0.5, 1.0, 1.5, 1.7], "jax_nnx": [2.0, 3.0, 4.0, 5.0, 6.0]}, collapse=None
    )
    worse = learning.learning_statistics(
        {"jax_linen": [2.0, 3.0, 4.0, 5.0, 6.0], "jax_nnx": [0.0, 0.5, 1.0, 1.5, 1.7]}, collapse=None
    )
    tied = learning.learning_statistics({"jax_linen": [1.0] * 5, "jax_nnx": [1.0] * 5}, collapse=None)
    nnx = lambda rows: next(r for r in rows if r["variant"] == "jax_nnx")  # noqa: E731
    assert nnx(three)["prob_improvement_vs_jax_linen_ci_low"] == 1.0  # the interval of no width the test is about
    assert nnx(three)["verdict"] == "learns like the reference"
    assert nnx(five)["verdict"] == "learns better than the reference"
    assert nnx(worse)["verdict"] == "learns worse than the reference"
    assert nnx(tied)["verdict"] == "learns like the reference"
