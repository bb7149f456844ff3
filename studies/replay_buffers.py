"""What do the frameworks' replay-buffer libraries cost in the SAC scripts' place of their own few lines of indexing?

The SAC scripts keep their buffer as the frameworks' own examples do: preallocated arrays (sac_jax_linen.py's `Buffer`,
in the carried state) or tensors (sac_torch.py's `ReplayBuffer`), written and indexed in a few lines. This runs each
script's real training loop with that buffer swapped for the library's, nothing else changed, and times both:
- jax_linen: make_buffer, store and sample replaced, on a freshly loaded sac_jax_linen.py, by flashbax's item buffer
  (flashbax.make_item_buffer, add_batches=True), its state living in the carry where `Buffer` lives, inside the
  iteration's one jitted program;
- torch: ReplayBuffer replaced, on a freshly loaded sac_torch.py, by a class of the same interface over torchrl's
  ReplayBuffer on a LazyTensorStorage (a TensorDict of the Transitions fields, extended each step, sampled each update).
Each run is a process of its own (`--one VARIANT BUFFER`) calling the script's train(); its steady iteration is the
median of iterations 1 to the end. Each block runs every variant with its own buffer and the library's, the order
rotated from block to block; per variant, the ratio library / own per block, over the blocks the geometric mean with a
95% bootstrap interval (report.timing's, as plot.py computes a ratio's). A library run must train (finite losses every
iteration, finite returns) and must not compile after iteration 0; both buffers' runs take the same steps and updates
of networks of one size. Their returns, from one seed, need not be the same (a library may draw its rows with other
random numbers): whether they are is kept, per block. --quick: tiny runs, one block (the tests').

    python -m studies.replay_buffers --blocks 6 --out results/studies/sac-buffer/libraries.json
"""

import argparse
import importlib.metadata
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from bench.load_script import load
from bench.outputs import check_out, write_atomic
from bench.run_records import cpu_model
from report.timing import MIN_BLOCKS, geometric_ratio

VARIANTS = {"jax_linen": "flashbax", "torch": "torchrl"}  # each variant -> the library whose buffer takes its own's place
BUFFERS = ("own", "library")
LIBRARIES = ("flashbax", "chex", "torchrl", "tensordict", "jax", "torch")  # the versions the result holds
# The settings of a run: Pendulum-v1 with CleanRL's networks, one env, one update a step, 11 iterations of 250 steps.
REAL = dict(hidden="256,256", steps_per_iteration=250, learning_starts=1000, iterations=11)
QUICK = dict(hidden="64,64", steps_per_iteration=20, learning_starts=64, iterations=3, buffer_size=1000)
DEFAULT_OUT = "benchmark_out/studies/replay_buffers.json"  # not the committed result: that one is named when made


def settings(quick: bool, buffer_size: int) -> dict:
    """The script's Args fields of every run (total_timesteps: the random steps, then the iterations')."""
    chosen = {**REAL, "buffer_size": buffer_size} | (QUICK if quick else {})
    iterations = chosen.pop("iterations")
    total = chosen["learning_starts"] + chosen["steps_per_iteration"] * iterations
    fixed = dict(env_id="Pendulum-v1", num_envs=1, updates_per_step=1, cuda=False, tensorboard=False, quiet=True)
    return {**fixed, **chosen, "total_timesteps": total}


# ---------------------------------------------------------------- the libraries' buffers in the scripts' place
def replace(module, name: str, value) -> None:
    """module.name = value, where the script still has that name: a rename in the script fails here, not silently."""
    if not hasattr(module, name):
        raise SystemExit(f"studies/replay_buffers.py: {module.__file__} has no {name} to replace")
    setattr(module, name, value)


def with_flashbax(module, args, seen: dict) -> None:
    """sac_jax_linen.py's make_buffer, store and sample as flashbax's item buffer: a state (a pytree) in the carry
    where Buffer lives, added to with each step's transitions of every env, sampled args.batch_size rows at a time
    (uniformly, with replacement, from the rows filled; flashbax fixes the batch size when its buffer is made)."""
    import flashbax
    import jax.numpy as jnp

    buffer = flashbax.make_item_buffer(
        max_length=args.buffer_size, min_length=1, sample_batch_size=args.batch_size, add_batches=True
    )
    Batch = module.Transitions

    def make_buffer(capacity: int, obs_dim: int, action_dim: int):
        assert capacity == args.buffer_size, (capacity, args.buffer_size)
        zeros = lambda *shape: jnp.zeros(shape, jnp.float32)  # one transition: the shapes and dtypes of a row
        state = buffer.init(Batch(zeros(obs_dim), zeros(action_dim), zeros(), zeros(obs_dim), zeros()))
        seen["buffer"] = f"{type(state).__module__}.{type(state).__qualname__}"
        return state

    def store(state, transitions):
        seen["stores_traced"] = seen.get("stores_traced", 0) + 1
        return buffer.add(state, transitions)

    def sample(state, key, batch_size: int):
        assert batch_size == args.batch_size, (batch_size, args.batch_size)
        seen["samples_traced"] = seen.get("samples_traced", 0) + 1
        return buffer.sample(state, key).experience

    for name, value in (("make_buffer", make_buffer), ("store", store), ("sample", sample)):
        replace(module, name, value)


def with_torchrl(module, args, seen: dict) -> None:
    """sac_torch.py's ReplayBuffer as a class of its interface over torchrl's: a ReplayBuffer on a LazyTensorStorage
    on the torch device, extended with a TensorDict of each step's transitions and sampled whole, as LeanRL keeps its
    buffer (github.com/pytorch-labs/LeanRL, leanrl/sac_continuous_action_torchcompile.py at 8dbb633:
    ReplayBuffer(storage=LazyTensorStorage(args.buffer_size, device=device)), a TensorDict(..., batch_size=obs.shape[0],
    device=device) per step, rb.extend, rb.sample), with the batch size given when it is made, as flashbax's."""
    from tensordict import TensorDict
    from torchrl.data import LazyTensorStorage, ReplayBuffer

    Batch = module.Transitions

    class TorchRLBuffer:
        def __init__(self, capacity: int, obs_dim: int, action_dim: int, num_envs: int, device):
            self.rb = ReplayBuffer(storage=LazyTensorStorage(capacity, device=device), batch_size=args.batch_size)
            self.num_envs, self.device = num_envs, device
            seen["buffer"] = f"{type(self.rb).__module__}.{type(self.rb).__qualname__}"
            seen["buffer_object"] = self

        def store(self, transitions):
            self.rb.extend(TensorDict(transitions._asdict(), batch_size=self.num_envs, device=self.device))

        def sample(self, batch_size: int):
            assert batch_size == args.batch_size, (batch_size, args.batch_size)
            data = self.rb.sample()
            return Batch(*(data[name] for name in Batch._fields))

    replace(module, "ReplayBuffer", TorchRLBuffer)


# ---------------------------------------------------------------- one run, in a process of its own
def one(variant: str, buffer: str, quick: bool, buffer_size: int, out: str) -> None:
    """Train sac_{variant}.py once with its own buffer or the library's; write what the study keeps of the record."""
    module = load(f"sac_{variant}.py", f"sac_{variant}_{buffer}")
    args = module.Args(**settings(quick, buffer_size))
    seen, losses = {}, []
    if buffer == "library":
        (with_flashbax if variant == "jax_linen" else with_torchrl)(module, args, seen)
    Log = module.record.Log  # (benchback/record.py's, which the script imports)
    iteration = Log.iteration

    def kept_losses(log, metrics: dict):  # after each iteration's timer: what the record does not keep
        losses.append({name: float(np.mean(value)) for name, value in metrics.items() if name.endswith("_loss")})
        return iteration(log, metrics)

    Log.iteration = kept_losses  # this process's harness only: it runs nothing else
    record = module.train(args)
    stored = seen.pop("buffer_object", None)
    if stored is not None:  # torchrl's storage holds every transition stored, up to its capacity
        seen["rows_stored"] = len(stored.rb)
    made = {k: record[k] for k in ("iteration_durations", "compiles_after_first_iteration", "episodic_return")}
    made |= {"buffer_size": args.buffer_size}
    made |= {k: record[k] for k in ("env_steps", "grad_steps", "param_count", "cpu")}
    made |= {"variant": variant, "buffer": buffer, "losses": losses, "library": seen}
    if variant == "torch":  # whether importing or using torchrl changed torch's threads
        made["torch_threads"] = module.torch.get_num_threads()
    write_atomic(out, json.dumps(made) + "\n")


def trains(run: dict) -> str:
    """Why a run's record is not one of a run that trained and timed its iterations steadily, or ""."""
    if run["compiles_after_first_iteration"]:
        return f"it compiled {run['compiles_after_first_iteration']} time(s) after iteration 0: its times are not steady"
    if len(run["losses"]) != len(run["iteration_durations"]) or not all(run["losses"]):
        return "it logged no losses for some iteration"
    if not all(math.isfinite(x) for losses in run["losses"] for x in losses.values()):
        return f"a loss is not finite: {run['losses']}"
    if len(run["episodic_return"]) != len(run["iteration_durations"]):
        return "its record has no return for some iteration"
    if not all(math.isfinite(r) for r in run["episodic_return"] if r is not None):
        return f"a return is not finite: {run['episodic_return']}"
    if run["buffer"] == "library" and not run["library"].get("buffer", "").startswith(VARIANTS[run["variant"]]):
        return f"its buffer was not {VARIANTS[run['variant']]}'s: {run['library']}"
    if "rows_stored" in run["library"] and run["library"]["rows_stored"] != min(run["buffer_size"], run["env_steps"]):
        return f"its buffer holds {run['library']['rows_stored']} rows after {run['env_steps']} steps"
    return ""


def timed(variant: str, buffer: str, quick: bool, buffer_size: int, tmp: str) -> dict:
    """One run as a process of its own: its record's kept fields, and its steady iteration (steady_s)."""
    out = os.path.join(tmp, f"{variant}-{buffer}.json")
    command = [sys.executable, "-m", "studies.replay_buffers", "--one", variant, buffer, "--buffer-size", str(buffer_size)]
    proc = subprocess.run([*command, "--json", out, *["--quick"] * quick], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"studies/replay_buffers.py: {variant} with the {buffer} buffer failed:\n{proc.stderr[-3000:]}")
    with open(out) as f:
        run = json.load(f)
    os.unlink(out)
    if problem := trains(run):
        raise SystemExit(f"studies/replay_buffers.py: {variant} with the {buffer} buffer: {problem}")
    return run | {"steady_s": statistics.median(run["iteration_durations"][1:])}


# ---------------------------------------------------------------- the ratios
def ratio(per_block) -> dict:
    """library / own per block: the geometric mean, its 95% bootstrap interval (from 2 blocks) and the verdict (from
    report.timing's MIN_BLOCKS: fewer give no interval worth the name)."""
    mean, low, high = geometric_ratio(per_block)
    if len(per_block) < MIN_BLOCKS:
        verdict = "too few blocks"
    else:
        verdict = "library slower" if low > 1 else "library faster" if high < 1 else "no difference detected"
    return {"ratio": mean, "ci": [low, high], "verdict": verdict}


def summary(runs: list, blocks: int) -> dict:
    """Per variant: each block's own and library steady seconds, their ratio, and the ratio over the blocks; and per
    block whether the two runs (one seed) had the same returns, which no one asks of them: a library may draw its rows
    with other random numbers (flashbax splits the key it is given), or with the same (torchrl's sampler calls
    torch.randint as sac_torch.py does)."""
    result = {}
    for variant, library in VARIANTS.items():
        made = {b: [r for r in runs if r["variant"] == variant and r["buffer"] == b] for b in BUFFERS}
        steady = {b: [r["steady_s"] for r in made[b]] for b in BUFFERS}
        per_block = [lib / own for own, lib in zip(steady["own"], steady["library"])]
        assert len(per_block) == blocks, steady
        same = [own["episodic_return"] == lib["episodic_return"] for own, lib in zip(made["own"], made["library"])]
        result[variant] = {"library": library, "steady_s": steady, "library_over_own": per_block, **ratio(per_block)}
        result[variant]["same_returns"] = same
    return result


def same_work(runs: list) -> str:
    """Why the library's runs did other work than the own buffer's (steps, updates, network size, iterations), or ""."""
    for variant in VARIANTS:
        kinds = {
            (r["env_steps"], r["grad_steps"], r["param_count"], len(r["iteration_durations"]))
            for r in runs
            if r["variant"] == variant
        }
        if len(kinds) != 1:
            return f"{variant}'s runs differ in steps, updates, parameters or iterations: {sorted(kinds)}"
    return ""


def table(result: dict) -> str:
    """The result as a markdown table: a row per variant."""
    rows = ["| variant | library | own steady (s) | library steady (s) | library / own | 95% CI | verdict |"]
    rows.append("|---|---|---|---|---|---|---|")
    for variant, row in result["variants"].items():
        low, high = row["ci"]
        ci = "n/a" if low is None else f"[{low:.3f}, {high:.3f}]"
        own, lib = (statistics.median(row["steady_s"][b]) for b in BUFFERS)
        rows.append(f"| {variant} | {row['library']} | {own:.4f} | {lib:.4f} | {row['ratio']:.3f} | {ci} | {row['verdict']} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, help="blocks, each running every variant with both buffers (default 6)")
    parser.add_argument("--buffer-size", type=int, help="the buffers' capacity (rows; default 1000000)")
    parser.add_argument("--quick", action="store_true", help=f"tiny runs, 1 block, {QUICK['buffer_size']} rows (the tests')")
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}; the committed result's is in the docstring"
    )
    parser.add_argument("--one", nargs=2, metavar=("VARIANT", "BUFFER"), help="run one training (the study's runs)")
    parser.add_argument("--json", help="with --one: where its run writes what the study keeps")
    a = parser.parse_args(argv)
    problems = []
    if a.one:
        variant, buffer = a.one
        problems += [f"--one: {variant} is not one of {', '.join(VARIANTS)}"] * (variant not in VARIANTS)
        problems += [f"--one: {buffer} is not one of {', '.join(BUFFERS)}"] * (buffer not in BUFFERS)
        problems += ["--one needs --json PATH"] * (not a.json)
    for flag, value in (("--blocks", a.blocks), ("--buffer-size", a.buffer_size)):
        problems += [f"{flag} {value}: --quick sets its own; give one or the other"] * (a.quick and value is not None)
        problems += [f"{flag} {value}: at least 1"] * (value is not None and value < 1)
    a.blocks = 6 if a.blocks is None else a.blocks
    a.buffer_size = 1_000_000 if a.buffer_size is None else a.buffer_size
    if problems:
        print(f"error: {problems[0]}", file=sys.stderr)
        return 2
    if a.one:
        check_out(a.json, "--json")
        one(*a.one, a.quick, a.buffer_size, a.json)
        return 0
    check_out(a.out)
    blocks = 1 if a.quick else a.blocks
    order = [(v, b) for v in VARIANTS for b in BUFFERS]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for block in range(blocks):
            for position, (variant, buffer) in enumerate(order[block % len(order) :] + order[: block % len(order)]):
                run = timed(variant, buffer, a.quick, a.buffer_size, tmp)
                runs.append({"block": block + 1, "position": position + 1, **run})
                print(f"block {block + 1}/{blocks}, {variant} with the {buffer} buffer: {run['steady_s']:.4f} s", flush=True)
    if problem := same_work(runs):
        raise SystemExit(f"studies/replay_buffers.py: {problem}")
    result = {
        "cpu": cpu_model(),  # a study's timings hold only on the CPU model they were made on (each run's "cpu": its record's)
        "settings": {**settings(a.quick, a.buffer_size), "blocks": blocks, "quick": a.quick},
        "versions": {name: importlib.metadata.version(name) for name in LIBRARIES},
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "runs": runs,
    }
    result["variants"] = summary(runs, blocks)
    write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
