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
import functools
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from flax.training.train_state import TrainState

ROOT = Path(__file__).resolve().parent.parent
from bench.load_script import load
from bench.outputs import check_out, write_atomic
from bench.presets import SIZES
from bench.run_records import cpu_model
from report.timing import MIN_BLOCKS, interval, median_with_interval, none_if_nan, ratio_verdict
from studies.same_start import with_layers

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
CALLS_PER_ITERATION = 80  # the scripts' update_epochs x num_minibatches (checked against their Args)
DEFAULT_CALLS = {"s": 2400, "m": 240, "l": 80}  # per size: a block about 75 s at s and 50 s at m, on 2 cores
OBS_DIM, NUM_ACTIONS = 4, 2  # CartPole-v1's
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


# ---------------------------------------------------------------- what every way starts from
class Start:
    """At one size: the three scripts, the starting parameters (Linen's), the optimizer, the batch, its minibatches."""

    def __init__(self, scripts: dict, hidden: tuple, seed: int = 0):
        self.scripts, self.hidden = scripts, hidden
        L = scripts["linen"]
        self.args = L.Args()
        batch_size = self.args.num_envs * self.args.num_steps
        assert self.args.update_epochs * self.args.num_minibatches == CALLS_PER_ITERATION, "the scripts' update changed"
        # the scripts' optimizer: its learning rate annealed once per iteration of 80 gradient steps
        schedule = optax.linear_schedule(self.args.learning_rate, 0.0, self.args.total_timesteps // batch_size)
        lr = lambda count: schedule(count // CALLS_PER_ITERATION)
        self.tx = optax.chain(optax.clip_by_global_norm(self.args.max_grad_norm), optax.adam(lr, eps=1e-5))
        init_key, data_key, self.key = jax.random.split(jax.random.key(seed), 3)
        self.linen_agent = L.Agent(hidden, NUM_ACTIONS, False)
        self.params = self.linen_agent.init(init_key, jnp.zeros((1, OBS_DIM)))
        self.layers = {name: linen_layers(self.params, name) for name in ("actor", "critic")}
        self.batch = synthetic_batch(data_key, batch_size)
        self.minibatches = cut(self.batch, self.key, self.args.update_epochs, self.args.num_minibatches)


def synthetic_batch(key, n: int) -> tuple:
    """A rollout's worth of Batch fields (obs, action, logprob, value, advantage, returns), random but shaped and
    scaled as CartPole-v1's: the update's arithmetic does not depend on the values."""
    k = jax.random.split(key, 4)
    obs = jax.random.normal(k[0], (n, OBS_DIM))
    action = jax.random.randint(k[1], (n,), 0, NUM_ACTIONS)
    logprob = jnp.log(0.5) + 0.01 * jax.random.normal(k[2], (n,))  # a near-uniform policy's, as at the start
    value, advantage = jax.random.normal(k[3], (2, n))
    return jax.block_until_ready((obs, action, logprob, value, advantage, advantage + value))


def cut(batch: tuple, key, epochs: int, minibatches: int) -> list:
    """The 80 minibatches update() takes from `batch` with `key` (the same permutations), each on the device."""
    cuts = []
    for _ in range(epochs):
        key, perm_key = jax.random.split(key)
        perm = jax.random.permutation(perm_key, batch[0].shape[0])
        split = [x[perm].reshape(minibatches, -1, *x.shape[1:]) for x in batch]
        cuts += [tuple(x[i] for x in split) for i in range(minibatches)]
    return jax.block_until_ready(cuts)


def linen_layers(params, name: str) -> list:
    dense = params["params"][name]
    return [(dense[f"Dense_{i}"]["kernel"], dense[f"Dense_{i}"]["bias"]) for i in range(len(dense))]


def as_numpy(layers: list) -> list:
    return [np.asarray(x) for pair in layers for x in pair]


class Way:
    """One way at one granularity, with its own copy of the start: `iterate()` runs one iteration (80 minibatch
    updates) and returns what to wait for; `params()` the parameters now, as Linen's layers (kernel (in, out), bias)."""

    def __init__(self, iterate, params):
        self.iterate, self.params = iterate, params


# ---------------------------------------------------------------- Linen and Equinox
def linen_way(s: Start, granularity: str) -> Way:
    L = s.scripts["linen"]
    train_state = TrainState.create(apply_fn=s.linen_agent.apply, params=s.params, tx=s.tx)
    params = lambda state: as_numpy(linen_layers(state.params, "actor") + linen_layers(state.params, "critic"))
    if granularity == "per_call":

        def minibatch_step(train_state: TrainState, mb):  # update()'s, one minibatch
            def loss_fn(params):
                logits, value = s.linen_agent.apply(params, mb.obs)
                return L.ppo_loss(logits, value, mb, s.args)

            (_, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(train_state.params)
            return train_state.apply_gradients(grads=grads), info

        step, minibatches = jax.jit(minibatch_step), [L.Batch(*mb) for mb in s.minibatches]

        def iterate():
            nonlocal train_state
            for mb in minibatches:
                train_state, info = step(train_state, mb)
            return train_state, info

        return Way(iterate, lambda: params(train_state))

    runner = L.Carry(train_state, None, None, None, s.key)  # update() reads the train state and the key alone
    update, batch = jax.jit(lambda runner, batch: L.update(runner, batch, s.linen_agent, s.args)), L.Batch(*s.batch)

    def iterate():
        nonlocal runner
        runner, info = update(runner, batch)
        return runner, info

    return Way(iterate, lambda: params(runner.train_state))


def equinox_way(s: Start, granularity: str) -> Way:
    E = s.scripts["equinox"]
    agent = E.Agent(OBS_DIM, s.hidden, NUM_ACTIONS, False, key=jax.random.key(0))
    for name in ("actor", "critic"):
        agent = with_layers("jax_equinox", agent, name, s.layers[name])
    opt_state = s.tx.init(eqx.filter(agent, eqx.is_array))
    params = lambda agent: as_numpy([(x.weight.T, x.bias) for mlp in (agent.actor, agent.critic) for x in mlp.layers])
    if granularity == "per_call":

        def minibatch_step(agent, opt_state, mb):  # update()'s, one minibatch
            def loss_fn(agent):
                logits, value = agent(mb.obs)
                return E.ppo_loss(logits, value, mb, s.args)

            (_, info), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(agent)
            updates, opt_state = s.tx.update(grads, opt_state, eqx.filter(agent, eqx.is_array))
            return eqx.apply_updates(agent, updates), opt_state, info

        step, minibatches = eqx.filter_jit(minibatch_step), [E.Batch(*mb) for mb in s.minibatches]

        def iterate():
            nonlocal agent, opt_state
            for mb in minibatches:
                agent, opt_state, info = step(agent, opt_state, mb)
            return agent, opt_state, info

        return Way(iterate, lambda: params(agent))

    runner = E.Carry(agent, opt_state, jnp.zeros((), jnp.int32), None, None, None, s.key)
    update, batch = eqx.filter_jit(lambda runner, batch: E.update(runner, batch, s.tx, s.args)), E.Batch(*s.batch)

    def iterate():
        nonlocal runner
        runner, info = update(runner, batch)
        return runner, info

    return Way(iterate, lambda: params(runner.agent))


# ---------------------------------------------------------------- NNX's ways
def functional(f, *models):
    """Flax's functional training loop (its performance guide): split once, jax.jit a pure function of (graphdef,
    state) that merges, calls f and returns the new state; update the objects from it when they are needed."""
    graphdef, state = nnx.split(models)

    @jax.jit
    def pure(graphdef, state, *args):
        models = nnx.merge(graphdef, state)
        out = f(*models, *args)
        return nnx.state(models), out

    def call(*args):
        nonlocal state
        state, out = pure(graphdef, state, *args)
        return out

    return call, lambda: nnx.update(models, state)


NOTHING_AFTER = lambda: None  # the other ways have updated the objects in place already
BIND = {  # NNX way -> (f, *models) -> (f with the models bound, what runs once an iteration after the calls)
    "nnx_jit": lambda f, *models: (functools.partial(nnx.jit(f), *models), NOTHING_AFTER),
    "nnx_jit_tree": lambda f, *models: (functools.partial(nnx.jit(f, graph=False), *models), NOTHING_AFTER),
    "nnx_jit_simple": lambda f, *models: (functools.partial(nnx.jit(f, graph_updates=False), *models), NOTHING_AFTER),
    "nnx_cached_partial": lambda f, *models: (nnx.cached_partial(nnx.jit(f), *models), NOTHING_AFTER),
    "nnx_jit_partial": lambda f, *models: (nnx.jit_partial(f, *models, graph=False), NOTHING_AFTER),
    "nnx_split": functional,
}


def nnx_way(way: str, s: Start, granularity: str) -> Way:
    N = s.scripts["nnx"]
    agent = N.Agent(OBS_DIM, s.hidden, NUM_ACTIONS, False, rngs=nnx.Rngs(0))
    for name in ("actor", "critic"):
        with_layers("jax_nnx", agent, name, s.layers[name])
    optimizer = nnx.Optimizer(agent, s.tx, wrt=nnx.Param)
    params = lambda: as_numpy([(x.kernel[...], x.bias[...]) for m in (agent.actor, agent.critic) for x in [*m.layers, m.out]])
    if granularity == "per_call":

        def minibatch_step(agent, optimizer: nnx.Optimizer, mb):  # update()'s, one minibatch
            def loss_fn(agent):
                logits, value = agent(mb.obs)
                return N.ppo_loss(logits, value, mb, s.args)

            (_, info), grads = nnx.value_and_grad(loss_fn, has_aux=True)(agent)
            optimizer.update(agent, grads)  # in place
            return info

        call, after = BIND[way](minibatch_step, agent, optimizer)
        minibatches = [N.Batch(*mb) for mb in s.minibatches]

        def iterate():
            for mb in minibatches:
                info = call(mb)
            after()
            return info, agent, optimizer

        return Way(iterate, params)

    def update(agent, optimizer: nnx.Optimizer, runner, batch):
        return N.update(agent, optimizer, runner, batch, s.args)

    call, after = BIND[way](update, agent, optimizer)
    runner, batch = N.Carry(None, None, None, s.key), N.Batch(*s.batch)  # update() reads the key alone

    def iterate():
        nonlocal runner
        runner, info = call(runner, batch)
        after()
        return runner, info, agent, optimizer

    return Way(iterate, params)


def make_way(way: str, s: Start, granularity: str) -> Way:
    if way == "linen":
        return linen_way(s, granularity)
    if way == "equinox":
        return equinox_way(s, granularity)
    return nnx_way(way, s, granularity)


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
    parser.add_argument("--out", default="results/studies/nnx-modes/nnx-modes.json")
    a = parser.parse_args(argv)
    for problem in problems(a):
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    check_out(a.out)
    blocks, calls = int(a.blocks), calls_per_size(a)
    began = time.perf_counter()
    scripts = {name: load(f"ppo_jax_{name}.py", f"benchback_nnx_modes_{name}") for name in ("linen", "nnx", "equinox")}
    compiles = scripts["linen"].COMPILES  # every XLA compilation in this process
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
