"""plot.py on synthetic run records whose ratios are known: the tables must give those ratios back."""

import importlib.util
import json
import math
import re

import numpy as np
import pytest

from conftest import ROOT

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
    "duration.png",
    "speedup.png",
    "overhead.png",
    "rollout_update.png",
    "compilation.png",
    "scaling.png",
    "learning_curves.png",
    "learn.png",
}


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
        "setup_duration": 10 * iteration,
        "iteration_durations": durations,
        "rollout_durations": [d * 0.75 for d in durations] if sync else None,
        "update_durations": [d * 0.25 for d in durations] if sync else None,
        "total_duration": total,
        "compiles_after_first_iteration": 0,
        "episodic_return": returns or [None, *[10.0 * (i + 1) for i in range(ITERATIONS - 1)]],
        "final_return": final,
    }


def write(directory, name, content):
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))


@pytest.fixture
def sweep_dir(tmp_path):
    d = tmp_path / "sweep"
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
    for variant in plot.SPEEDUP_VARIANTS:
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


def test_plot_reproduces_known_ratios_and_writes_every_png(sweep_dir, tmp_path, capsys):
    out = tmp_path / "figures"
    assert plot.main([str(sweep_dir), "--out", str(out)]) == 0
    assert {p.name for p in out.glob("*.png")} == PNGS == set(plot.FIGURES)
    assert all((out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for png in PNGS)
    warnings = capsys.readouterr().err
    assert "torch__Freeway-MinAtar__l__seed1.json: failure record" in warnings
    assert "torch__Freeway-MinAtar__m__seed1.json: does not parse" in warnings
    summary = (out / "summary.md").read_text()
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
    assert close(float(row(t["Total duration by environment cost"], "Breakout-MinAtar", "m")[4]), 40 * 8)  # torch

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

    learn = t["Does every variant learn CartPole-v1? (learn preset)"]
    seeds, iqm, mean, lowest, collapsed, improvement, verdict = row(learn, "torch")
    assert seeds == "3" and close(numbers(mean)[0], (481 + 400 + 483) / 3) and lowest == "400" and collapsed == "33%"
    assert verdict == "learns like the reference"
    assert row(learn, "jax_linen")[-2:] == ["n/a", "the reference"]
    # The learn runs take FACTOR's CartPole column: nnx 1.25x linen, torch_compile 2x torch.
    improvement, verdict, collapsed, collapse_verdict = row(
        t["Does every variant learn CartPole-v1? (learn preset) #2"], "torch_compile", "torch"
    )
    assert close(numbers(improvement)[0], 6 / 9) and verdict == "no difference detected"  # 481 vs 400 and more
    assert numbers(collapsed)[0] == pytest.approx(-1 / 3, abs=0.005) and collapse_verdict == "no difference detected"
    first, steady = row(t["Does every variant learn CartPole-v1? (learn preset) #3"], "torch_compile")
    assert close(float(first), 30 * 0.2) and close(float(steady), 0.2)
    ratios = t["Does every variant learn CartPole-v1? (learn preset) #4"]
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
    if blocks >= plot.MIN_BLOCKS:
        assert steady["ci_low"] < true_ratio < steady["ci_high"] and steady["ci_high"] / steady["ci_low"] < 1.3
    else:
        assert steady["ci_low"] is None and steady["ci_high"] is None
    cell = row(tables((d / "summary.md").read_text())["Speedup, steady"], "s", "jax_linen", "torch")
    assert cell[1:] == [str(blocks), verdict]


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
    assert plot.collapse_difference(runs(*a), runs(*b)) == pytest.approx(expected, abs=1e-4)


def test_the_same_runs_give_the_same_learning_intervals():
    finals = {"jax_linen": [500.0, 480, 470, 490, 499, 455], "torch": [500.0, 300, 495, 488, 470, 420]}
    first, again = (plot.learning_statistics(finals) for _ in range(2))
    assert first == again


def test_records_of_two_devices_give_two_reports_and_no_ratio_across_them(tmp_path, capsys):
    d = tmp_path / "sweep"
    timed_runs(d, [0.1] * 4, [0.2] * 4)  # on the CPU: torch takes 2x jax_linen's time
    for path in list(d.rglob("jax_linen__*.json")):  # jax_linen also ran on a GPU, 10x faster
        gpu = json.loads(path.read_text())
        gpu.update(device="NVIDIA H100 80GB HBM3", iteration_durations=[t / 10 for t in gpu["iteration_durations"]])
        write(d, f"gpu/{path.name}", gpu)
    assert plot.main([str(d), "--out", str(tmp_path / "out")]) == 0
    assert "one report per device" in capsys.readouterr().err
    cpu = json.loads((tmp_path / "out" / "device-cpu" / "summary.json").read_text())
    gpu = json.loads((tmp_path / "out" / "device-NVIDIA-H100-80GB-HBM3" / "summary.json").read_text())
    assert (cpu["device"], gpu["device"]) == ("cpu", "NVIDIA H100 80GB HBM3") and gpu["ratios"] == []
    (steady,) = [r for r in cpu["ratios"] if r["metric"] == "steady"]
    assert steady["ratio"] == pytest.approx(2) and steady["n_blocks"] == 4


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
    assert "No runs for this section." in (d / "summary.md").read_text()


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


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: p, lambda p: write(p, "a.json", "{") or p])
def test_plot_fails_clearly_on_a_missing_or_empty_dir(make, tmp_path, capsys):
    assert plot.main([str(make(tmp_path))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and ("not a directory" in err[-1] or "no run records" in err[-1])
