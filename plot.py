"""Figures and tables from a benchmark.sh output directory.

    python plot.py benchmark_out/cpu                 # PNGs, summary.md and summary.json into that directory
    python plot.py benchmark_out/cpu --out results   # ... or into another one

Reads every run JSON (schema 1 or 2) under DIR, skipping with a warning files that do not parse, failure
records and incomplete ones, plus DIR/env_cost.json (the x-axis "environment cost") when it is there; a file or
folder it cannot read is an error (exit 2, nothing written), not a report without it. The report is made in a
temporary folder and moved in whole.
Which experiment a run belongs to is its `args.exp_name`, which benchmark.sh sets. Records of two
machines (two GPUs, or two CPU models) are never compared: each gets its own report, in OUT/machine-*. SAC's
and TD3's records get an off-policy report (report.offpolicy); in a set of more than one algorithm (the gpu preset's),
each in a folder of its own, sac/ or td3/.
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
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from bench.outputs import check_out
from report import learning, learning_figures, offpolicy, offpolicy_figures, search, search_figures, timing_figures
from report.figures import FIGURES
from report.markdown import render
from report.records import Unreadable, group_by, load_runs, machine
from report.summary import as_json, summarize


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", help="a benchmark.sh output directory")
    parser.add_argument("--out", help="where to write the PNGs and summary.md (default: DIR)")
    args = parser.parse_args(argv)
    if not args.dir or not Path(args.dir).is_dir():
        print(f"error: {args.dir!r} is not a directory", file=sys.stderr)
        return 2
    directory, given = Path(args.dir), args.out if args.out is not None else args.dir
    check_out(given, "--out" if args.out is not None else "DIR", directory=True)
    out = Path(given)
    try:
        runs, failures = load_runs(directory)
    except Unreadable as e:  # a report without some records would change in silence
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not runs:
        print(f"error: no run records (schema 1 or 2 JSON with status ok) under {directory}", file=sys.stderr)
        return 2
    by_machine = group_by(runs, lambda r: machine(r.record))
    try:  # an off-policy cell joins records of one algorithm and setting only
        for machine_runs in by_machine.values():
            for algorithm in offpolicy.ALGORITHMS:
                offpolicy.check_settings([r for r in machine_runs if r.record.get("algorithm") == algorithm])
    except offpolicy.MixedSettings as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    reports = {out: runs}
    if len(by_machine) > 1:  # a time on one machine is never divided by a time on another: one report per machine
        print(f"records from {len(by_machine)} machines: one report per machine, in {out}/machine-*", file=sys.stderr)
        reports = {
            out / f"machine-{re.sub(r'[^A-Za-z0-9.]+', '-', name).strip('-')}": machine_runs
            for name, machine_runs in sorted(by_machine.items())
        }
    publish(by_algorithm(reports), failures, directory, out)
    return 0


def by_algorithm(reports: dict) -> dict:
    """Each report's runs of each algorithm apart: where a set holds more than one (the gpu preset's: PPO's, SAC's and
    TD3's), each off-policy algorithm's report goes to a folder of its own (sac/, td3/) beside PPO's."""
    split = {}
    for target, runs in reports.items():
        of = {a: [r for r in runs if r.record.get("algorithm") == a] for a in offpolicy.ALGORITHMS}
        of = {a: its for a, its in of.items() if its}
        ppo = [r for r in runs if not offpolicy.is_offpolicy(r)]
        if len(of) + bool(ppo) < 2:
            split[target] = runs
        else:
            split |= {target / a: its for a, its in of.items()} | ({target: ppo} if ppo else {})
    return split


def publish(reports: dict, failures, directory: Path, out: Path) -> None:
    """Every report ({folder: its runs}) made in a temporary folder in `out`, then moved in, only once all are made:
    a failure or a Ctrl-C on the way leaves the previous reports whole, and no half-made one."""
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".tmp-plot-", dir=out))
    try:
        for target, runs in reports.items():
            make_report(runs, failures, directory, stage / target.relative_to(out))
        for target in reports:
            made = stage / target.relative_to(out)
            target.mkdir(parents=True, exist_ok=True)
            for path in target.glob("*.png"):  # a figure left from an earlier plot of other data would mislead
                ours = path.name in [*FIGURES, offpolicy_figures.FIGURE, offpolicy_figures.SCALING, search_figures.FIGURE]
                ours = ours or path.name.startswith("learn_")
                if ours and not (made / path.name).exists():
                    path.unlink()
            for path in sorted(made.iterdir()):
                if path.is_file():  # a folder in it is another report's (sac/), moved as its own
                    os.replace(path, target / path.name)
            print(f"wrote {target / 'summary.md'}, summary.json and {len(list(target.glob('*.png')))} figures")
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def make_report(runs, failures, directory: Path, out: Path) -> None:
    """The figures, summary.md and summary.json of runs (all from one machine) into out."""
    out.mkdir(parents=True, exist_ok=True)
    # SAC's (TD3's, DQN's) cells differ by more than PPO's report tells apart; a search's trials have a section of their own
    if any(offpolicy.is_offpolicy(r) for r in runs if r.experiment != "search"):
        sac = offpolicy.summary(runs)
        offpolicy_figures.draw(sac, out)
        offpolicy_figures.draw_scaling(sac, out)
        for env, config in offpolicy.learn_configs(runs).items():  # the return curves and final returns of each learn env
            learning_figures.learn(
                learning.learn(env, [r for r in runs if r.experiment == "learn" and r.env == env]), out, config
            )
        versions = ", ".join(f"{k} {v}" for k, v in sorted(runs[0].record.get("versions", {}).items()))
        head = f"# {offpolicy.algorithm_name(runs)}: {machine(runs[0].record)}\n\n{len(runs)} runs ({versions}); skipped: {len(failures)}.\n\n"
        figure = (
            f"![each variant's time over Linen's, per cell]({offpolicy_figures.FIGURE})\n\n"
            * (out / offpolicy_figures.FIGURE).exists()
        )
        figure += (
            f"![each variant's env steps a second against the number of envs]({offpolicy_figures.SCALING})\n\n"
            * (out / offpolicy_figures.SCALING).exists()
        )
        figure += "".join(
            f"![the return curves of the learn runs]({path.name})\n\n" for path in sorted(out.glob("learn_*.png"))
        )
        (out / "summary.md").write_text(head + figure + offpolicy.markdown(sac))
        (out / "summary.json").write_text(json.dumps(sac, indent=1, default=float) + "\n")
        return
    trials = search.search(runs)  # a search's trials: a section of their own, and in no other
    others = [r for r in runs if r.experiment != "search"]
    summary = summarize(others, failures, directory) if others else None
    parts = []
    if summary:
        timing_figures.draw(summary, out)
        learning_figures.draw(summary, out)
        parts.append(render(summary))
    if trials:
        search_figures.draw(trials, out)
        versions = ", ".join(f"{k} {v}" for k, v in sorted(runs[0].record.get("versions", {}).items()))
        head = (
            "" if summary else f"# {machine(runs[0].record)}\n\n{len(runs)} runs ({versions}); skipped: {len(failures)}.\n\n"
        )
        figure = f"![configurations an hour against those trained at once]({search_figures.FIGURE})\n\n"
        parts.append(head + figure + search.markdown(trials))
    (out / "summary.md").write_text("\n".join(parts))
    (out / "summary.json").write_text(as_json(summary, trials, machine(runs[0].record)))


if __name__ == "__main__":
    sys.exit(main())
