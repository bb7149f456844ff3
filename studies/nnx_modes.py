"""NNX written as its users write it: what each way to compile an NNX train step costs, beside Linen and Equinox.

The same PPO update, the scripts' own pieces (ppo_jax_*.py's Agent, ppo_loss, Batch and update(); optax's global-norm
clipping and Adam with the scripts' learning-rate schedule), from the same starting parameters (Linen's, copied into
the NNX and Equinox agents), compiled in each way users write it, at two granularities:
  per_call       one compiled minibatch update (forward, loss, gradient, clipping, Adam), called 80 times from a
                 Python loop: 10 epochs x 8 minibatches of 1024 from a batch of 8192, cut beforehand as update() cuts
                 them, the way most NNX training loops are written;
  per_iteration  one compiled call of the script's update(): its scans over the same 80 minibatches, as ppo_jax_*.py
                 compile it.
The ways, and what flax 0.12.8 does on each call (files under flax/nnx/):
  linen               jax.jit of a pure step on a TrainState: jax flattens the pytree (the reference);
  equinox             eqx.filter_jit: flattens the arguments, splits the arrays from the rest, looks the program up by
                      the rest;
  nnx_jit             nnx.jit, graph mode (the default): transforms/compilation.py, JitWrapped.__call__ walks every
                      argument's object graph in Python (extract.to_tree -> graphlib.flatten, in an update_context)
                      before jax.jit's call and merges the outputs back into the objects after (extract.from_tree);
  nnx_jit_tree        nnx.jit(graph=False): SimpleJitWrapped.__call__ hands the modules to jax.jit as pytrees;
                      extract.check_no_aliases visits their Variables, extract.apply_updates writes back the ones
                      the traced SimpleJitFn found changed;
  nnx_jit_simple      nnx.jit(graph_updates=False): SimpleJitWrapped with graph=True: extract.to_tree2 (graphlib.flatten)
                      before the call and from_tree2 after, without an update context;
  nnx_cached_partial  nnx.cached_partial(nnx.jit(f), agent, optimizer), as ppo_jax_nnx.py writes it: graphlib.py's
                      _cached_partial walks the two objects once; on each call JitWrapped's SplitContext.flatten and
                      MergeContext.unflatten find them in that StaticCache and skip the walk;
  nnx_jit_partial     nnx.jit_partial(f, agent, optimizer, graph=False): transforms/compilation.py's jit_partial
                      flattens them once into a list of Variables; each call hands that list to jax.jit, and
                      _apply_raw_updates writes the changed ones back by index;
  nnx_split           Flax's functional training loop: nnx.split once, jax.jit of a pure function of (graphdef, state)
                      that nnx.merge's and returns nnx.state, nnx.update of the objects once an iteration.

Each block runs, at each size, `calls` minibatch updates of every way at both granularities (calls / 80 timed
iterations each), interleaved: one iteration of each in turn, the order rotating from one turn to the next and from
block to block. A timed iteration ends with block_until_ready on its outputs and nothing syncs inside it (transfers
are disallowed); no program compiles while timed. Per block, each way's median iteration over Linen's; over the blocks
the geometric mean with report.timing's 95% bootstrap interval, as plot.py gives a ratio. Before the timing, one
iteration of every way and granularity from the same start must give Linen's update()'s parameters (within TOLERANCE).

    python -m studies.nnx_modes --sizes s,m --blocks 6 --out results/studies/nnx-modes/nnx-modes.json
"""

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
from bench.load_script import load
from bench.outputs import check_out, write_atomic
from bench.presets import SIZES
from bench.run_records import cpu_model
from report.timing import MIN_BLOCKS, interval, median_with_interval, none_if_nan, ratio_verdict
from studies.nnx_ways import CALLS_PER_ITERATION, NUM_ACTIONS, OBS_DIM, Start, Way, make_way

MODES = {
    "linen": "Linen: jax.jit of a pure step (the reference)",
    "equinox": "Equinox: eqx.filter_jit",
    "nnx_jit": "NNX: nnx.jit (graph mode, the default)",
    "nnx_jit_tree": "NNX: nnx.jit(graph=False) (tree mode)",
    "nnx_jit_simple": "NNX: nnx.jit(graph_updates=False)",
    "nnx_cached_partial": "NNX: nnx.cached_partial(nnx.jit(f), agent, optimizer) (ppo_jax_nnx.py's)",
    "nnx_jit_partial": "NNX: nnx.jit_partial(f, agent, optimizer, graph=False)",
    "nnx_split": "NNX: nnx.split, jax.jit of a pure function, nnx.update",
}
REFERENCE = "linen"
GRANULARITIES = ("per_call", "per_iteration")
DEFAULT_CALLS = {"s": 2400, "m": 240, "l": 80}  # per size: a block about 75 s at s and 50 s at m, on 2 cores
# Three frameworks' arithmetic from the same start: the same float32 operations, grouped apart (Equinox's vmapped
# matrix-vector products); after 80 Adam steps their parameters agree to this.
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- the command line
def problems(a) -> list:
    """Each thing wrong with the command line, found before any work."""
    found = []
    sizes = a.sizes.split(",")
    if not all(s in SIZES for s in sizes) or len(set(sizes)) < len(sizes):
        found.append(f"--sizes {a.sizes}: comma-separated, each once, from {', '.join(SIZES)}")
    if not a.blocks.isdigit() or int(a.blocks) < 2:
        found.append(f"--blocks {a.blocks}: an interval needs at least 2")
    if a.calls is not None:
        calls = a.calls.split(",")
        if not all(c.isdigit() and int(c) > 0 and int(c) % CALLS_PER_ITERATION == 0 for c in calls):
            found.append(f"--calls {a.calls}: positive multiples of {CALLS_PER_ITERATION} (one iteration's minibatches)")
        elif len(calls) not in (1, len(sizes)):
            found.append(f"--calls {a.calls}: one number, or one per size of --sizes ({len(sizes)})")
    return found


def calls_per_size(a) -> dict:
    sizes = a.sizes.split(",")
    if a.calls is None:
        return {s: DEFAULT_CALLS[s] for s in sizes}
    calls = [int(c) for c in a.calls.split(",")]
    return dict(zip(sizes, calls * len(sizes) if len(calls) == 1 else calls))


# ---------------------------------------------------------------- the check and the timing
def largest_differences(ways: dict, against: str = None) -> dict:
    """granularity -> way -> the largest absolute difference of its parameters from the reference's at granularity
    `against` (None: at its own granularity)."""
    references = {g: ways[REFERENCE, against or g].params() for g in GRANULARITIES}
    out = {g: {} for g in GRANULARITIES}
    for (way, granularity), w in ways.items():
        out[granularity][way] = max(float(np.max(np.abs(a - b))) for a, b in zip(w.params(), references[granularity]))
    return out


def check_same_numbers(ways: dict) -> list:
    """Every way's parameters beside the reference's, [] if all agree within TOLERANCE; else what differs."""
    reference = ways[REFERENCE, "per_iteration"].params()
    wrong = []
    for (way, granularity), w in ways.items():
        if not all(np.allclose(a, b, **TOLERANCE) for a, b in zip(w.params(), reference)):
            wrong.append(f"{way} {granularity}")
    return wrong


def timed_iteration(way: Way) -> float:
    t0 = time.perf_counter()
    with jax.transfer_guard("disallow"):  # a hidden transfer (a host sync) fails the study instead of slowing it
        jax.block_until_ready(way.iterate())
    return time.perf_counter() - t0


def block_medians(ways: dict, iterations: int, turn: int) -> dict:
    """`iterations` timed iterations of every (way, granularity), one of each in turn, the order rotated every turn
    (starting at `turn`): each one's median."""
    pairs = list(ways)
    seconds = {pair: [] for pair in pairs}
    for i in range(iterations):
        shift = (turn + i) % len(pairs)
        for pair in pairs[shift:] + pairs[:shift]:
            seconds[pair].append(timed_iteration(ways[pair]))
    return {pair: statistics.median(found) for pair, found in seconds.items()}


# ---------------------------------------------------------------- the figures
def over_reference(times: list, reference: list) -> dict:
    """A way's time over the reference's per block: geometric mean, 95% bootstrap interval (3 blocks or more), verdict."""
    ratios = np.array(times) / np.array(reference)
    logs = np.log(ratios)
    low = high = np.nan
    if len(ratios) >= MIN_BLOCKS:
        low, high = np.exp(interval(logs, np.mean))
    verdict = ratio_verdict(low, high, len(ratios))
    verdict = {"A faster": f"slower than {REFERENCE}", "B faster": f"faster than {REFERENCE}"}.get(verdict, verdict)
    return {
        "ratio": float(np.exp(logs.mean())),
        "ci_low": none_if_nan(low),
        "ci_high": none_if_nan(high),
        "n_blocks": len(ratios),
        "verdict": verdict,
        "blocks": ratios.tolist(),
    }


def figures(seconds: dict) -> dict:
    """seconds[granularity][way]: each block's median iteration. Per way: its microseconds per minibatch update
    (median over the blocks, interval), its time over Linen's and the microseconds it adds to each update."""
    out = {}
    for granularity, by_way in seconds.items():
        reference = np.array(by_way[REFERENCE])
        out[granularity] = {}
        for way, times in by_way.items():
            per_call = np.array(times) / CALLS_PER_ITERATION * 1e6
            median, low, high = median_with_interval(per_call)
            row = {
                "seconds_per_iteration": times,
                "us_per_call": {"median": median, "ci_low": none_if_nan(low), "ci_high": none_if_nan(high)},
            }
            if way != REFERENCE:
                row["over_linen"] = over_reference(times, reference)
                extra = (np.array(times) - reference) / CALLS_PER_ITERATION * 1e6
                low, high = interval(extra, np.mean) if len(extra) >= MIN_BLOCKS else (np.nan, np.nan)
                row["extra_us_per_call"] = {
                    "mean": float(extra.mean()),
                    "ci_low": none_if_nan(low),
                    "ci_high": none_if_nan(high),
                }
            out[granularity][way] = row
    return out


def shown(row: dict) -> str:
    o = row.get("over_linen")
    ratio = (
        ""
        if o is None
        else f" {o['ratio']:.3f}" + (f" [{o['ci_low']:.3f}, {o['ci_high']:.3f}]" if o["ci_low"] is not None else "")
    )
    return f"{row['us_per_call']['median']:.0f} us{ratio}"


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="s,m", help=f"comma-separated, from {', '.join(SIZES)}")
    parser.add_argument("--blocks", default="6", help="blocks: every way at both granularities, interleaved (2 or more)")
    parser.add_argument(
        "--calls",
        help="minibatch updates each way times a block and granularity, a multiple of 80: one number, or one per size "
        f"(default: {', '.join(f'{s} {n}' for s, n in DEFAULT_CALLS.items())})",
    )
    parser.add_argument("--out", default="benchmark_out/studies/nnx-modes.json")  # the committed result names its --out
    a = parser.parse_args(argv)
    for problem in problems(a):
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    check_out(a.out)
    blocks, calls = int(a.blocks), calls_per_size(a)
    began = time.perf_counter()
    scripts = {name: load(f"ppo_jax_{name}.py", f"benchback_nnx_modes_{name}") for name in ("linen", "nnx", "equinox")}
    compiles = scripts["linen"].compiles.COMPILES  # every XLA compilation in this process (benchback/compiles.py)
    jax.config.update("jax_default_matmul_precision", "highest")  # the scripts' default: float32 in every framework

    ways, checks = {}, {}
    for size in calls:
        t0 = time.perf_counter()
        start = Start(scripts, SIZES[size])
        ways[size] = {(w, g): make_way(w, start, g) for g in GRANULARITIES for w in MODES}
        for way in ways[size].values():  # compiles, and is the check's iteration
            jax.block_until_ready(way.iterate())
        checks[size] = largest_differences(ways[size], against="per_iteration")
        if wrong := check_same_numbers(ways[size]):
            worst = max(d for g in checks[size].values() for d in g.values())
            print(
                f"error: at {size}, {', '.join(wrong)}: not Linen's parameters (largest difference {worst:.3g})",
                file=sys.stderr,
            )
            return 1
        for way in ways[size].values():  # one iteration more, untimed: warm
            jax.block_until_ready(way.iterate())
        print(f"{size}: {len(ways[size])} programs compiled and checked in {time.perf_counter() - t0:.0f} s", flush=True)

    seconds = {size: {g: {w: [] for w in MODES} for g in GRANULARITIES} for size in calls}
    compiled_before = len(compiles)
    timing_began = time.perf_counter()
    for block in range(blocks):
        for size, n in calls.items():
            iterations = n // CALLS_PER_ITERATION
            for (way, granularity), median in block_medians(ways[size], iterations, block * iterations).items():
                seconds[size][granularity][way].append(median)
            rows = {
                g: ", ".join(f"{w} {1e6 * seconds[size][g][w][-1] / CALLS_PER_ITERATION:.0f}" for w in MODES)
                for g in GRANULARITIES
            }
            print(
                f"block {block + 1}/{blocks}, {size}, us per minibatch update: "
                + "; ".join(f"{g}: {r}" for g, r in rows.items())
            )
        spent = time.perf_counter() - timing_began
        print(
            f"block {block + 1}/{blocks} done: {spent:.0f} s, about {spent / (block + 1) * (blocks - block - 1):.0f} s left",
            flush=True,
        )
    if len(compiles) > compiled_before:
        print(f"error: {len(compiles) - compiled_before} compilations while timed: not a steady state", file=sys.stderr)
        return 1

    result = {
        "question": __doc__.split("\n")[0],
        "command": " ".join(["python -m studies.nnx_modes", *(sys.argv[1:] if argv is None else argv)]),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "versions": {
            "python": sys.version.split()[0],
            **{n: importlib.metadata.version(n) for n in ("jax", "jaxlib", "flax", "optax", "equinox", "numpy")},
        },
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "blocks": blocks,
        "calls": calls,
        "minibatch_updates_per_iteration": CALLS_PER_ITERATION,
        "batch": {"size": start.batch[0].shape[0], "minibatch": start.minibatches[0][0].shape[0], "obs_dim": OBS_DIM},
        "num_actions": NUM_ACTIONS,
        "modes": MODES,
        "tolerance": TOLERANCE,
        "seconds": round(time.perf_counter() - began, 1),
        "sizes": {
            size: {
                "hidden": list(SIZES[size]),
                "largest_difference_after_one_iteration": checks[size],
                # from here on the two granularities part: per_call's iterations repeat the first's 80 minibatches
                "largest_difference_after_timing": largest_differences(ways[size]),
                **figures(seconds[size]),
            }
            for size in calls
        },
    }
    write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    for size, found in result["sizes"].items():
        for g in GRANULARITIES:
            print(
                f"{size} {g}: us per minibatch update, time over Linen's: "
                + "; ".join(f"{w} {shown(r)}" for w, r in found[g].items())
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
