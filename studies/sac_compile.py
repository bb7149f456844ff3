"""Why does torch.compile not speed up SAC on a CPU? What sac_torch_compile.py compiles, and where a step's time goes.

Runs sac_torch.py and sac_torch_compile.py, each in a process of its own, on one cell (Pendulum-v1, one env, one
gradient step a step), their train() unchanged but for a profiler (torch.profiler, CPU activity) around one steady
iteration, and reports per variant:
- what dynamo made of the compiled script: graphs compiled, graph breaks and their reasons, frames (re)compiled
  (torch._dynamo.utils.counters);
- per step of the envs (act, step, store and its gradient step): the profiler's events, the ATen operators called, and
  the self CPU time of the top operators, compiled regions among them (torch.compile's "Torch-Compiled Region" and
  "CompiledFunction" events; inductor's generated kernels run inside them).

    python -m studies.sac_compile --hidden 64,64 --out results/studies/sac-compile/profile.json

A timing of one iteration each on a machine doing nothing else; its use is the breakdown, not the ratio.
"""

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.outputs import check_out, write_atomic  # noqa: E402

VARIANTS = ("torch", "torch_compile")
STEPS = 200  # an iteration's steps: a profile of a few thousand events a step stays small


def one(variant: str, hidden: str, out: str) -> None:
    """The profiled run of one variant (a process of its own), what it found written to `out`."""
    import torch

    from bench.load_script import load

    module = load(f"sac_{variant}.py", f"sac_compile_{variant}")
    found = {}
    Log = module.record.Log  # (benchback/record.py's, which the script imports)
    timed = Log.timed

    @contextlib.contextmanager
    def profiled(log, guards):
        if len(log.durations) != 1:  # iteration 1, the first steady one
            with timed(log, guards):
                yield
            return
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            with timed(log, guards):
                yield
        found["events"] = profile.key_averages()

    Log.timed = profiled
    flags = dict(env_id="Pendulum-v1", hidden=hidden, num_envs=1, updates_per_step=1, steps_per_iteration=STEPS)
    args = module.Args(
        **flags, learning_starts=1000, total_timesteps=1000 + 3 * STEPS, cuda=False, tensorboard=False, quiet=True
    )
    record = module.train(args)
    events = found["events"]
    rows = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)
    aten = [e for e in events if e.key.startswith("aten::")]
    counters = torch._dynamo.utils.counters
    result = {
        "variant": variant,
        "hidden": hidden,
        "steps": STEPS,
        "profiled_seconds": record["iteration_durations"][1],
        "steady_seconds": record["iteration_durations"][2],  # the one after, without the profiler
        "events_a_step": sum(e.count for e in events) / STEPS,
        "aten_calls_a_step": sum(e.count for e in aten) / STEPS,
        "aten_self_us_a_step": sum(e.self_cpu_time_total for e in aten) / STEPS,
        "top": [
            {"event": e.key, "calls_a_step": e.count / STEPS, "self_us_a_step": e.self_cpu_time_total / STEPS}
            for e in rows[:12]
        ],
        "dynamo": {
            "unique_graphs": counters["stats"].get("unique_graphs", 0),
            "frames_compiled": counters["frames"].get("ok", 0),
            "graph_breaks": dict(counters["graph_break"]),
        },
        "versions": {"torch": torch.__version__},
    }
    write_atomic(out, json.dumps(result, indent=1) + "\n")


def table(results: list) -> str:
    lines = []
    for r in results:
        d = r["dynamo"]
        breaks = "; ".join(f"{reason} ({n})" for reason, n in d["graph_breaks"].items()) or "none"
        lines += [
            f"{r['variant']}: {r['steady_seconds'] * 1e6 / r['steps']:.0f} us a step; {r['aten_calls_a_step']:.0f} ATen"
            f" calls a step ({r['aten_self_us_a_step']:.0f} us of their own); graphs {d['unique_graphs']}, frames"
            f" compiled {d['frames_compiled']}, graph breaks: {breaks}",
            *(f"    {t['self_us_a_step']:8.1f} us {t['calls_a_step']:6.1f}x  {t['event']}" for t in r["top"]),
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", default="64,64", help="the networks' hidden sizes (default 64,64)")
    parser.add_argument("--out", help="write both variants' findings as JSON here")
    parser.add_argument("--one", nargs=2, metavar=("VARIANT", "JSON"), help=argparse.SUPPRESS)  # a profiled run
    parser.error = lambda message: sys.exit(print(f"error: studies/sac_compile.py: {message}", file=sys.stderr) or 2)
    a = parser.parse_args(argv)
    parts = a.hidden.split(",")
    if not all(p.isdigit() and int(p) > 0 for p in parts):
        parser.error(f"--hidden must be positive integers, comma-separated; got {a.hidden!r}")
    if a.one:
        one(a.one[0], a.hidden, a.one[1])
        return 0
    if a.out:
        check_out(a.out, "--out")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for variant in VARIANTS:
            path = Path(tmp) / f"{variant}.json"
            command = [sys.executable, "-m", "studies.sac_compile", "--hidden", a.hidden, "--one", variant, str(path)]
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            if done.returncode:
                print(f"error: studies/sac_compile.py: {variant} failed: {done.stderr.strip()[-2000:]}", file=sys.stderr)
                return 1
            results.append(json.loads(path.read_text()))
    print(table(results))
    if a.out:
        write_atomic(a.out, json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
