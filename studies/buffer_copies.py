"""Does a JAX off-policy script's iteration (SAC's, TD3's, DQN's) copy its replay buffer? At every cell of its presets.

The JAX scripts keep the buffer (1e6 rows by default) in the carried state, written in place each step. Whether XLA
writes it in place is its choice, not the script's: each variant runs one short iteration of a cell with XLA dumping
the optimized HLO of what it compiles (--xla_dump_to, --xla_dump_hlo_as_text: XLA's documented debug options), and
this counts the `copy` instructions of the iteration's program (jit_iteration) whose result has the buffer's rows: a
copy of a buffer column, made once per trip of the loop it sits in. The cells are those of the sac (and sac-gpu)
preset, sac-learn and sac-envs: their environments, sizes, numbers of envs, update-to-data ratios, steps per
iteration and --full-buffer; TD3's scripts, built on SAC's, run at the same cells; DQN's at the dqn and dqn-learn
presets' (its 10,000-row buffer, CleanRL's). XLA decides afresh with every jax release: run it again after an upgrade.

    python -m studies.buffer_copies --algorithms sac --out results/studies/sac-buffer/copies.json  # about 10 minutes
    python -m studies.buffer_copies --algorithms dqn --out results/studies/sac-buffer/copies-dqn.json
    python -m studies.buffer_copies --cells 1 --variants jax_linen --algorithms td3  # one cell, to check a program
    python -m studies.buffer_copies --cuda                                         # on a GPU (skipped without one)

It exits 1 if any program copies its buffer; bad input gets one line and exit 2, before any work.
"""

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.outputs import check_out, write_atomic  # noqa: E402
from bench.presets import DQN_CELLS, HIDDEN, PRESETS, SAC_CELLS, SAC_LEARN_FLAGS  # noqa: E402
from bench.variants import environment_defaults  # noqa: E402
from studies.search import SPACES, configs_file  # noqa: E402

VARIANTS = ("jax_linen", "jax_nnx", "jax_equinox")
ALGORITHMS = ("sac", "td3", "dqn")  # the scripts {algorithm}_{variant}.py
BUFFER_SIZES = {"sac": 1_000_000, "td3": 1_000_000, "dqn": 10_000}  # the scripts' defaults (CleanRL's)
RANDOM_STEPS = 256  # enough rows to sample a batch from; the random phase is a program of its own


def preset_cells(algorithm: str = "sac") -> list:
    """Every distinct cell of the algorithm's presets (TD3's: SAC's), as dicts of the flags that shape the iteration's
    program; DQN's updates_per_step is None (its scripts take a gradient step every train_frequency steps)."""
    dqn = algorithm == "dqn"
    cells = [
        dict(env_id=env, hidden=HIDDEN[size], num_envs=n, updates_per_step=utd, steps_per_iteration=steps, full_buffer=full)
        for env, size, n, utd, steps, _, _, full in (DQN_CELLS if dqn else SAC_CELLS)
    ]
    for preset in ("dqn-learn",) if dqn else ("sac-learn", "sac-envs"):  # the learn runs: 1 env, 1000 steps an iteration
        flags = PRESETS[preset].get("learn_flags") or SAC_LEARN_FLAGS
        assert "--steps-per-iteration" not in flags and "--num-envs" not in flags, preset
        for env in PRESETS[preset]["learn_envs"]:
            cells.append(
                dict(
                    env_id=env,
                    hidden=HIDDEN[PRESETS[preset].get("learn_size", "s")],
                    num_envs=1,
                    updates_per_step=None if dqn else 1,
                    steps_per_iteration=1000,
                    full_buffer=False,
                )
            )
    if dqn:  # the search preset's batch: its configurations' buffers stacked on a leading axis (studies.search's space)
        search = dict(env_id=SPACES["dqn"]["env_id"], hidden=HIDDEN["d"], num_envs=1, updates_per_step=None)
        cells.append(dict(search, steps_per_iteration=1000, full_buffer=False, configs=8))
    unique = {json.dumps(c, sort_keys=True): c for c in cells}
    return list(unique.values())


def buffer_copies(hlo: str, rows: int) -> list:
    """The optimized HLO's copy instructions whose result's leading dimension is `rows`, or its second after a batch's
    configurations: their shapes."""
    return re.findall(
        rf"= ([a-z]+\d*\[(?:\d+,)?{rows}(?:,\d+)*\])\S* copy\(", hlo
    )  # of any element type: DQN's actions are s32


def command(script: Path, cell: dict, buffer_size: int, cuda: bool = False) -> list:
    """One iteration of the cell, after RANDOM_STEPS random steps of every env; on the GPU with `cuda`."""
    n, steps = cell["num_envs"], cell["steps_per_iteration"]
    flags = ["--env-id", cell["env_id"], "--hidden", cell["hidden"], "--num-envs", str(n)]
    flags += ["--updates-per-step", str(cell["updates_per_step"])] if cell["updates_per_step"] is not None else []
    flags += ["--steps-per-iteration", str(steps)]
    flags += ["--buffer-size", str(buffer_size), "--learning-starts", str(RANDOM_STEPS * n)]
    flags += ["--total-timesteps", str((RANDOM_STEPS + steps) * n), "--no-tensorboard", "--quiet"]
    flags += ["--cuda" if cuda else "--no-cuda"]
    flags += ["--configs", str(configs_file("dqn", cell["configs"]))] if cell.get("configs") else []
    return [sys.executable, str(script), *flags, *(["--full-buffer"] if cell["full_buffer"] else [])]


def child_environment(script: Path, dump: str) -> dict:
    """The script's environment: this one's; XLA's options the script gives itself (a GPU's command buffers), XLA
    dumping its programs to `dump`; this repository ahead of the caller's PYTHONPATH, which may hold packages (a GPU
    machine's carried wheels)."""
    own = dict(environment_defaults(ast.parse(Path(script).read_text()))).get("XLA_FLAGS", "")
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    flags = f"{own} --xla_dump_to={dump} --xla_dump_hlo_as_text".strip()
    return {**os.environ, "XLA_FLAGS": flags, "PYTHONPATH": path}


def copies(script, cell: dict, buffer_size: int, cuda: bool = False) -> list:
    """The buffer copies in the optimized iteration of `script` (a sac_jax_*.py or td3_jax_*.py file) at `cell`, on the GPU with
    `cuda` (whose compiler decides on its own: its loops keep their known trip counts, sac_jax_linen.py says why)."""
    with tempfile.TemporaryDirectory() as dump:
        done = subprocess.run(
            command(Path(script), cell, buffer_size, cuda), env=child_environment(script, dump), capture_output=True, text=True
        )
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"{Path(script).name} failed at {cell}: {last}")
        programs = sorted(Path(dump).glob("*.jit_iteration.*after_optimizations.txt"))
        if not programs:
            raise RuntimeError(f"{Path(script).name} at {cell}: XLA dumped no optimized jit_iteration program")
        return [shape for path in programs for shape in buffer_copies(path.read_text(), buffer_size)]


def versions() -> dict:
    import importlib.metadata

    return {name: importlib.metadata.version(name) for name in ("jax", "jaxlib", "flax", "equinox")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from " + ", ".join(VARIANTS))
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS), help="comma-separated, from " + ", ".join(ALGORITHMS))
    parser.add_argument("--cells", help="comma-separated indices (1-based) of each algorithm's cells to check; default all")
    parser.add_argument("--buffer-size", type=int, help="default: the scripts' own, 1000000 (DQN's 10000)")
    parser.add_argument("--out", help="write the rows, the versions and the commit as JSON here")
    parser.add_argument("--cuda", action="store_true", help="on the GPU (where one is visible to jax; else skipped)")
    parser.error = lambda message: sys.exit(print(f"error: studies/buffer_copies.py: {message}", file=sys.stderr) or 2)
    args = parser.parse_args(argv)
    variants, algorithms = args.variants.split(","), args.algorithms.split(",")
    problem, plan = None, {}
    if unknown := [v for v in variants if v not in VARIANTS]:
        problem = f"--variants: unknown {', '.join(unknown)}; from {', '.join(VARIANTS)}"
    elif unknown := [a for a in algorithms if a not in ALGORITHMS]:
        problem = f"--algorithms: unknown {', '.join(unknown)}; from {', '.join(ALGORITHMS)}"
    else:
        plan = {a: (preset_cells(a), BUFFER_SIZES[a] if args.buffer_size is None else args.buffer_size) for a in algorithms}
        rows_needed = max(c["num_envs"] * RANDOM_STEPS for cells, _ in plan.values() for c in cells)
        fewest = min(len(cells) for cells, _ in plan.values())
        if min(size for _, size in plan.values()) < rows_needed:
            problem = (
                f"--buffer-size must hold the random steps of every cell, {rows_needed} rows or more; got {args.buffer_size}"
            )
        elif args.cells is not None:
            try:
                chosen = [int(x) for x in args.cells.split(",")]
                assert chosen and all(1 <= i <= fewest for i in chosen)
            except (ValueError, AssertionError):
                problem = f"--cells must be indices from 1 to {fewest}, comma-separated; got {args.cells!r}"
            else:
                plan = {a: ([cells[i - 1] for i in chosen], size) for a, (cells, size) in plan.items()}
    if problem:
        print(f"error: studies/buffer_copies.py: {problem}", file=sys.stderr)
        return 2
    if args.out:
        check_out(args.out, "--out")
    if args.cuda:
        import jax

        if jax.default_backend() != "gpu":
            print("studies/buffer_copies.py --cuda: skipped: no GPU visible to jax (nothing checked, nothing written)")
            return 0
    rows = []
    for algorithm, (cells, size) in plan.items():
        for i, cell in enumerate(cells, 1):
            for variant in variants:
                try:
                    found = copies(ROOT / f"{algorithm}_{variant}.py", cell, size, args.cuda)
                except RuntimeError as e:
                    print(f"error: studies/buffer_copies.py: {e}", file=sys.stderr)
                    return 1
                rows.append({"algorithm": algorithm, "variant": variant, **cell, "buffer_size": size, "copies": found})
                print(f"[{i}/{len(cells)}] {algorithm} {variant:<12} {cell}: {len(found)} buffer copies {found}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if args.out:
        result = {"git_commit": commit or None, "versions": versions(), "device": "gpu" if args.cuda else "cpu", "rows": rows}
        write_atomic(args.out, json.dumps(result, indent=1) + "\n")
    copying = [r for r in rows if r["copies"]]
    print(f"{len(copying)} of {len(rows)} programs copy their buffer")
    return 1 if copying else 0


if __name__ == "__main__":
    sys.exit(main())
