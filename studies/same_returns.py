"""Do two checkouts of a script train the same run, return for return?

A change meant to move nothing in an eager script (torch's, linen_nojit) is checked by its returns, not by a timing:
each variant runs a short training from each checkout with the same seed and flags, on each environment stack asked
for, and its per-iteration episodic returns are compared exactly (the same float operations in the same order give
the same bits), with its compilations after iteration 0.

    python -m studies.same_returns --other-code OLD --variants torch,torch_compile --backends gymnax,torch \
        --out results/studies/train-layout/same-returns.json
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from bench.outputs import check_out, write_atomic
from bench.variants import discover
from studies.envs import env_problem

# One short run's flags, each algorithm's
SHORT = {
    "ppo": [
        "--num-envs",
        "8",
        "--num-steps",
        "32",
        "--num-minibatches",
        "4",
        "--update-epochs",
        "2",
        "--total-timesteps",
        "768",
    ],
    "sac": ["--num-envs", "2", "--steps-per-iteration", "50", "--learning-starts", "100", "--total-timesteps", "1300"],
}


def record(directory: Path, variant: str, flags: list, algorithm: str = "ppo") -> dict:
    """The record of one short run of the script in `directory`."""
    script = f"{algorithm}_{variant}.py"
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "run.json"
        command = [sys.executable, str(directory / script), "--no-cuda", *SHORT[algorithm], "--quiet", "--no-tensorboard"]
        command += [*flags, "--json-out", str(out)]
        proc = subprocess.run(command, capture_output=True, text=True, cwd=scratch, timeout=900)
        if proc.returncode:
            raise RuntimeError(f"{script} in {directory} failed:\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other-code", required=True, help="the other checkout: the directory of its variant scripts")
    parser.add_argument("--variants", default="torch,torch_compile", help="variants, comma-separated")
    parser.add_argument("--backends", default="gymnax", help="--env-backend values for the torch variants, comma-separated")
    parser.add_argument("--algorithm", default="ppo", help="ppo (the ppo_*.py scripts) or sac (sac_*.py)")
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    a = parser.parse_args(argv)
    known = {v.name: v for v in discover() if not v.setting_of}
    other, variants, backends = Path(a.other_code), a.variants.split(","), a.backends.split(",")
    problems = [f"--variants: {v} is not a variant ({', '.join(known)})" for v in variants if v not in known]
    problems += [f"--algorithm {a.algorithm}: algorithms are {', '.join(SHORT)}"] * (a.algorithm not in SHORT)
    scripts = [f"{a.algorithm}_{v}.py" for v in variants]
    problems += [f"--other-code {other} has no {s}" for s in scripts if not problems and not (other / s).exists()]
    problems += [f"this checkout has no {s}" for s in scripts if not problems and not (ROOT / s).exists()]
    problems += [
        f"--backends: {b} is not gymnax, torch or gymnasium" for b in backends if b not in ("gymnax", "torch", "gymnasium")
    ]
    problems += [p for p in [env_problem(a.env_id)] if p]
    if problems:
        print(f"error: {problems[0]}", file=sys.stderr)
        return 2
    check_out(a.out)
    result = {"algorithm": a.algorithm, "env_id": a.env_id, "flags": SHORT[a.algorithm], "other_code": str(other.resolve())}
    result["runs"] = {}
    for variant in variants:
        for backend in backends if known[variant].framework == "torch" else ["gymnax"]:
            flags = ["--env-id", a.env_id] + (["--env-backend", backend] if known[variant].framework == "torch" else [])
            own, theirs = (record(d, variant, flags, a.algorithm) for d in (ROOT, other))
            same = own["episodic_return"] == theirs["episodic_return"]
            name = variant if backend == "gymnax" else f"{variant}+{backend}"
            result["runs"][name] = {
                "same_returns": same,
                "episodic_return": own["episodic_return"],
                "other_episodic_return": theirs["episodic_return"],
                "compiles_after_first_iteration": [
                    own["compiles_after_first_iteration"],
                    theirs["compiles_after_first_iteration"],
                ],
            }
            print(f"{name}: {'the same returns' if same else 'returns differ'} ({len(own['episodic_return'])} iterations)")
    write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
