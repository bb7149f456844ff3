"""Figures and tables from a benchmark.sh output directory.

    python plot.py benchmark_out/cpu                 # PNGs, summary.md and summary.json into that directory
    python plot.py benchmark_out/cpu --out results   # ... or into another one

Reads every run JSON (schema 1 or 2) under DIR, skipping with a warning files that do not parse and
failure records, plus DIR/env_cost.json (the x-axis "environment cost") when it is there.
Which experiment a run belongs to is its `args.exp_name`, which benchmark.sh sets. Records of two
machines (two GPUs, or two CPU models) are never compared: each gets its own report, in OUT/machine-*.
The answer comes first: each variant's time as a multiple of jax_linen's, computed per block of runs
that ran back to back (same experiment, env, size, num_envs, seed), then the geometric mean over the
blocks with a 95% bootstrap interval and the verdict the interval allows; per (env, size) cell and per
size over its envs. Learning is compared with rliable: IQM, mean and probability of improvement, with
stratified-bootstrap intervals, and the wall-clock seconds to each environment's threshold.
Writes the figures, summary.md, and every ratio and learning statistic in summary.json.

The work is done in report/, one job a module: the records as one table, the statistics (which import
without matplotlib), the summary they make, summary.md, and the figures.
"""

import argparse
import re
import sys
from pathlib import Path

from report import figures, learning_figures
from report.figures import FIGURES
from report.markdown import render
from report.records import group_by, load_runs, machine
from report.summary import as_json, summarize

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))
from load_script import check_out, write_atomic  # noqa: E402  (the ones the tools share)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path, help="a benchmark.sh output directory")
    parser.add_argument("--out", type=Path, help="where to write the PNGs and summary.md (default: DIR)")
    args = parser.parse_args(argv)
    if not args.dir.is_dir():
        print(f"error: {args.dir} is not a directory", file=sys.stderr)
        return 2
    out = args.out or args.dir
    check_out(out, "--out" if args.out else "DIR", directory=True)
    runs, failures = load_runs(args.dir)
    if not runs:
        print(f"error: no run records (schema 1 or 2 JSON with status ok) under {args.dir}", file=sys.stderr)
        return 2
    by_machine = group_by(runs, lambda r: machine(r.record))
    if len(by_machine) == 1:
        write_report(runs, failures, args.dir, out)
        return 0
    # A time on one machine is never divided by a time on another: one report per machine.
    print(f"records from {len(by_machine)} machines: one report per machine, in {out}/machine-*", file=sys.stderr)
    for name, machine_runs in sorted(by_machine.items()):
        write_report(machine_runs, failures, args.dir, out / f"machine-{re.sub(r'[^A-Za-z0-9.]+', '-', name).strip('-')}")
    return 0


def write_report(runs, failures, directory: Path, out: Path) -> None:
    """The figures, summary.md and summary.json of runs (all from one machine) into out."""
    out.mkdir(parents=True, exist_ok=True)
    for path in out.glob("*.png"):  # a figure left from an earlier plot of other data would mislead
        if path.name in FIGURES or path.name.startswith("learn_"):
            path.unlink()
    summary = summarize(runs, failures, directory)
    figures.draw(summary, out)
    learning_figures.draw(summary, out)
    write_atomic(out / "summary.md", render(summary))
    write_atomic(out / "summary.json", as_json(summary))
    print(f"wrote {out / 'summary.md'}, summary.json and {len(list(out.glob('*.png')))} figures")


if __name__ == "__main__":
    sys.exit(main())
