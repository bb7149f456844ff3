"""Does a JAX SAC script's iteration copy its replay buffer every step?

The JAX scripts keep the buffer (1e6 rows by default) in the carried state, written in place each step. Whether XLA
writes it in place is its choice, not the script's: each variant runs a short iteration with XLA dumping the optimized
HLO of what it compiles (--xla_dump_to, --xla_dump_hlo_as_text: XLA's documented debug options), and this counts the
`copy` instructions of the iteration's program (jit_iteration) whose result has the buffer's rows: a copy of a buffer
column, once per step of the loop it sits in. Per variant and update-to-data ratio (--updates-per-step).

    python -m studies.buffer_copies --utd 1,2 --out results/studies/sac-buffer/copies.json
"""

import argparse
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

VARIANTS = ("jax_linen", "jax_nnx", "jax_equinox")


def buffer_copies(hlo: str, rows: int) -> list:
    """The optimized HLO's copy instructions whose result's leading dimension is `rows`: their shapes."""
    return re.findall(rf"= (f32\[{rows}(?:,\d+)*\])\S* copy\(", hlo)


def copies(variant: str, utd: int, hidden: str, buffer_size: int) -> dict:
    with tempfile.TemporaryDirectory() as dump:
        flags = f"--xla_dump_to={dump} --xla_dump_hlo_as_text"
        command = [sys.executable, str(ROOT / f"sac_{variant}.py"), "--hidden", hidden, "--updates-per-step", str(utd)]
        command += ["--buffer-size", str(buffer_size), "--learning-starts", "256", "--steps-per-iteration", "100"]
        command += ["--total-timesteps", "356", "--no-tensorboard", "--quiet", "--no-cuda"]
        done = subprocess.run(command, env={**os.environ, "XLA_FLAGS": flags}, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"studies/buffer_copies.py: {variant} failed: {done.stderr.strip().splitlines()[-1]}")
        (path,) = [p for p in Path(dump).glob("*.jit_iteration.*after_optimizations.txt")]
        found = buffer_copies(path.read_text(), buffer_size)
    return {"variant": variant, "updates_per_step": utd, "hidden": hidden, "buffer_size": buffer_size, "copies": found}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utd", default="1,2", help="update-to-data ratios, comma-separated")
    parser.add_argument("--hidden", default="64,64")
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    try:
        ratios = [int(x) for x in args.utd.split(",")]
        assert all(r > 0 for r in ratios)
    except (ValueError, AssertionError):
        print(f"studies/buffer_copies.py: --utd must be positive integers, comma-separated; got {args.utd!r}", file=sys.stderr)
        return 2
    if args.out:
        check_out(args.out, "--out")
    rows = [copies(v, utd, args.hidden, args.buffer_size) for utd in ratios for v in VARIANTS]
    for row in rows:
        print(f"{row['variant']:<12} UTD {row['updates_per_step']}: {len(row['copies'])} buffer copies a step {row['copies']}")
    if args.out:
        write_atomic(args.out, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
