"""Which compiled part of ppo_torch_compile.py changes how it learns? Compile one part at a time.

    python -m studies.torch_compile_parts --parts policy --seeds 1-32 --out results/studies/torch-compile-parts

Runs ppo_torch_compile.py's train() unchanged except that torch.compile returns the function
itself, uncompiled, for the parts not named in --parts:
  policy  the policy step with its sampler (`sample`),
  critic  the value of the final observations (`agent.value`),
  update  the minibatch update: forward, loss, traced backward, clipping, foreach Adam.
Every uncompiled part runs the same code eagerly. Only an eager update changes its optimizer: eager
Adam refuses capturable state on a CPU, so it is ppo_torch.py's (fused, the same tensor learning
rate). So --parts none is ppo_torch.py but for the sampler's and the compiled script's random draws
(the permutations come from the same generator either way), and a difference in learning between
settings belongs to the parts that differ. Writes one record per seed (the script's own record, with
`compiled_parts` added), atomically; a seed whose record exists is skipped.

    python -m studies.torch_compile_parts --summary results/studies/torch-compile-parts --learn results/learn/learn-preset/records/learn

compares every --parts setting found, and the whole compiled script, with eager torch (the learn
preset's records in --learn: torch__*.json and torch_compile__*.json) as plot.py compares variants: the
probability that a run of the setting ends higher than an eager one (rliable) and the difference in
the share of runs ending below report.learning.COLLAPSED, each with its 95% interval (rliable's bootstrap; Newcombe's
score interval for the share).
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from bench.compiler_caches import reset_torch_compile
from bench.load_script import load
from bench.outputs import check_out, write_atomic

PARTS = {"policy": "sample", "critic": "value", "update": "learn_minibatch"}  # part -> compiled function's name


def seeds(text: str) -> list[int]:
    """'1-32' or '1,5,9' -> a list of seeds."""
    out = []
    for piece in text.split(","):
        low, _, high = piece.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out


def summary(directory: Path, learn: Path) -> str:
    """A markdown table: each setting against eager torch."""
    import numpy as np

    from report.learning import COLLAPSED, collapse_difference, probability_of_improvement
    from report.markdown import fmt, table, with_interval
    from report.timing import MIN_BLOCKS

    finals = lambda paths: [json.loads(p.read_text())["final_return"] for p in sorted(paths)]
    eager = finals(learn.glob("torch__*.json"))
    settings = {f"compiled: {d.name}": finals(d.glob("seed*.json")) for d in sorted(directory.iterdir()) if d.is_dir()}
    settings["compiled: policy+critic+update (ppo_torch_compile.py)"] = finals(learn.glob("torch_compile__*.json"))
    rows = []
    for name, returns in settings.items():
        if len(returns) < MIN_BLOCKS:
            continue
        ((pi, low, high),) = probability_of_improvement({name: returns, "eager": eager}, [(name, "eager")]).values()
        difference = collapse_difference(returns, eager)
        below = int(np.sum(np.array(returns) < COLLAPSED))
        rows.append(
            [
                name,
                len(returns),
                fmt(np.mean(returns), 4),
                f"{below}/{len(returns)}",
                with_interval(pi, low, high, 2),
                with_interval(*difference, 2),
            ]
        )
    n_below = int(np.sum(np.array(eager) < COLLAPSED))
    header = (
        f"Eager torch (ppo_torch.py): {len(eager)} seeds, mean {np.mean(eager):.1f}, {n_below}/{len(eager)} below "
        f"{COLLAPSED}. Each row: the runs with those parts compiled, against eager torch; 95% intervals: rliable's "
        "bootstrap for the probability, Newcombe's score interval for the share.\n\n"
    )
    return header + table(
        [
            "setting",
            "seeds",
            "mean final_return",
            f"below {COLLAPSED}",
            "P(setting > eager)",
            f"share below {COLLAPSED}: setting - eager",
        ],
        rows,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--summary", type=Path, help="summarize the records under this directory instead of running")
    parser.add_argument(
        "--learn",
        type=Path,
        default=ROOT / "results/learn/learn-preset/records/learn",
        help="with --summary: the learn preset's records (torch__*.json, torch_compile__*.json)",
    )
    parser.add_argument("--parts", help=f"comma-separated, from {', '.join(PARTS)}; or none")
    parser.add_argument("--seeds", default="1-32", help="e.g. 1-32 or 1,5,9")
    parser.add_argument("--out", default="benchmark_out/studies/torch-compile-parts")  # the committed result names its --out
    parser.add_argument("--iterations", type=int, default=100, help="iterations of the default config")
    args = parser.parse_args(argv)
    check_out(args.summary or args.out, "--summary" if args.summary else "--out", directory=True)
    if args.summary:
        text = summary(args.summary, args.learn)
        print(text)
        write_atomic(args.summary / "summary.md", text + "\n")
        return 0
    if not args.parts:
        parser.error("--parts or --summary is required")
    parts = [] if args.parts == "none" else args.parts.split(",")
    try:
        seed_list = seeds(args.seeds)
    except ValueError:
        print(f"error: --seeds must look like 1-32 or 1,5,9; got {args.seeds!r}", file=sys.stderr)
        return 2
    if args.iterations <= 0:
        print(f"error: --iterations must be positive; got {args.iterations}", file=sys.stderr)
        return 2
    if not set(parts) <= set(PARTS):
        print(f"error: unknown part in --parts {args.parts!r}; parts: {', '.join(PARTS)}, or none", file=sys.stderr)
        return 2

    import torch

    real_compile = torch.compile
    chosen = {PARTS[p] for p in parts}
    torch.compile = lambda fn, **options: real_compile(fn, **options) if fn.__name__ in chosen else fn
    if "update" not in parts:
        real_adam = torch.optim.Adam
        torch.optim.Adam = lambda params, lr, eps, **_: real_adam(params, lr=lr, eps=eps, fused=True)
    script = load("ppo_torch_compile.py", "benchback_torch_compile")

    directory = Path(args.out) / (args.parts.replace(",", "+"))
    directory.mkdir(parents=True, exist_ok=True)
    for seed in seed_list:
        path = directory / f"seed{seed}.json"
        if path.exists():
            continue
        began = time.perf_counter()
        reset_torch_compile()  # each seed compiles afresh, as in a process of its own
        steps = args.iterations * script.Args.num_envs * script.Args.num_steps
        record = script.train(script.Args(seed=seed, cuda=False, tensorboard=False, quiet=True, total_timesteps=steps))
        record["compiled_parts"] = parts
        write_atomic(path, json.dumps(record))
        print(
            f"parts {args.parts} seed {seed}: final_return {record['final_return']:.1f} ({time.perf_counter() - began:.0f} s)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
