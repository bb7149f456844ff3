"""Do two checkouts of the JAX scripts compile the same XLA program for an iteration?

A change to a script's layout (where a helper lives, how the harness composes the iteration) need not change the
arithmetic. If the program XLA runs for an iteration is the same after XLA's optimizations, the work of the iteration
has not changed, only the Python around it could have, whatever a timing on a drifting machine says. Each variant
runs one iteration from each checkout with XLA dumping the optimized HLO of every module it compiles (--xla_dump_to,
--xla_dump_hlo_as_text: XLA's documented debug options, xla/debug_options_flags.cc); the iteration's module
(jit_iteration, formerly jit_collect_and_update) is compared with what names the same program differently taken out:
source locations, the Python names of its parameters and of the functions its instructions were traced in, and the ids
XLA numbers instructions with.

    python -m studies.same_program --other-code OLD --variants jax_linen,jax_nnx,jax_equinox \
        --env-id CartPole-v1 --out results/studies/script-layout/same-program.json
    python -m studies.same_program --algorithm sac --other-code OLD --env-id Pendulum-v1 --out ...
    python -m studies.same_program --algorithm dqn --other-code OLD --env-id FourRooms-misc --size d --out ...
"""

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from bench.outputs import check_out, write_atomic
from bench.variants import discover
from studies.envs import env_problem

# The name of the iteration's one program in every jitted JAX script: jit_iteration, or in checkouts before the scripts
# wrote their iteration in train, jit_collect_and_update.
PROGRAMS = ("jit_iteration", "jit_collect_and_update")
HIDDEN = {"s": "64,64", "m": "256,256,256", "d": "120,84"}  # d: CleanRL's DQN network
# One short run's flags, each algorithm's (the SAC iteration: 50 steps of 2 envs, an update each, after 100 random ones)
SHORT = {
    "ppo": ["--num-envs", "8", "--num-steps", "32", "--total-timesteps", "256"],
    "sac": ["--num-envs", "2", "--steps-per-iteration", "50", "--learning-starts", "100", "--total-timesteps", "300"],
    "dqn": ["--num-envs", "2", "--steps-per-iteration", "50", "--learning-starts", "100", "--total-timesteps", "300"],
}


def normalized(text: str) -> list:
    """The optimized HLO's lines without what names the same program differently: source locations (metadata and the
    module's tables of them), the Python names of its parameters and instructions and XLA's numbering of them."""
    # a parameter is named after the Python argument it came from (runner_obs, inputs_0_...): by its number instead
    named = {m[1]: f"parameter.{m[2]}" for m in re.finditer(r"%?([\w.\-]+) = [^\n]*? parameter\((\d+)\)", text)}
    text = re.sub(r"(?<![\w.\-])%?[\w.\-]+", lambda m: named.get(m[0].lstrip("%"), m[0]), text)
    text = re.sub(r",? metadata=\{[^}]*\}", "", text)
    text = re.sub(r",? stack_frame_id=\d+", "", text)
    # An instruction's name is the Python function it was traced in (rollout__locals__env_step, mul_jit_iteration_), a
    # name only: every %name becomes its order of first appearance, so that what remains is opcodes, shapes and edges.
    order = {}
    text = re.sub(r"%[\w.\-]+", lambda m: order.setdefault(m[0], f"%v{len(order)}"), text)
    # the module's tables of source files, functions and stack frames (FileNames, FunctionNames, ...): debug info
    text = "\n".join(
        line
        for line in text.splitlines()
        if not re.match(r"^(\d+ (\"|\{)|(FileNames|FunctionNames|FileLocations|StackFrames)$)", line.strip())
    )
    text = re.sub(r"\b([A-Za-z][\w\-]*?)(?:[._]\d+)+\b", r"\1.N", text)  # add.123 -> add.N, region_4.5 -> region.N
    text = re.sub(r"HloModule \S+", "HloModule", text)
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def dumped_program(directory: Path, variant: str, env_id: str, hidden: str, algorithm: str = "ppo") -> list:
    """The normalized optimized HLO of the iteration's program, from one iteration of the script in `directory`."""
    script = f"{algorithm}_{variant}.py"
    with tempfile.TemporaryDirectory() as dump:
        flags = f"--xla_dump_to={dump} --xla_dump_hlo_as_text"
        env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()}
        command = [sys.executable, str(directory / script), "--env-id", env_id, "--hidden", hidden]
        command += [*SHORT[algorithm], "--quiet", "--no-tensorboard"]
        proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=dump, timeout=900)
        if proc.returncode:
            raise RuntimeError(f"{script} in {directory} failed:\n{proc.stderr[-2000:]}")
        found = [p for name in PROGRAMS for p in sorted(Path(dump).glob(f"*.{name}.*after_optimizations.txt"))]
        if len(found) != 1:
            raise RuntimeError(f"{script} in {directory}: {len(found)} optimized dumps of {' or '.join(PROGRAMS)}")
        return normalized(found[0].read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other-code", required=True, help="the other checkout: the directory of its variant scripts")
    parser.add_argument("--variants", default="jax_linen,jax_nnx,jax_equinox", help="jitted JAX variants, comma-separated")
    parser.add_argument("--algorithm", default="ppo", help="ppo (the ppo_*.py scripts), sac or dqn")
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--size", default="s", help="the model size: s, m or d (DQN's)")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    a = parser.parse_args(argv)
    jitted = [v.name for v in discover() if v.framework == "jax" and v.compiles and not v.setting_of]
    other = Path(a.other_code)
    problems = [
        f"--variants: {v} is not a jitted JAX variant ({', '.join(jitted)})" for v in a.variants.split(",") if v not in jitted
    ]
    problems += [f"--algorithm {a.algorithm}: algorithms are {', '.join(SHORT)}"] * (a.algorithm not in SHORT)
    scripts = [f"{a.algorithm}_{v}.py" for v in a.variants.split(",")]
    problems += [f"--other-code {other} has no {s}" for s in scripts if not problems and not (other / s).exists()]
    problems += [f"this checkout has no {s}" for s in scripts if not problems and not (ROOT / s).exists()]
    problems += [f"--size {a.size}: sizes are {', '.join(HIDDEN)}"] * (a.size not in HIDDEN)
    problems += [problem] if not problems and (problem := env_problem(a.env_id)) else []
    if problems:
        print(f"error: {problems[0]}", file=sys.stderr)
        return 2
    check_out(a.out)
    result = {"algorithm": a.algorithm, "env_id": a.env_id, "size": a.size, "other_code": str(other.resolve()), "variants": {}}
    for variant in a.variants.split(","):
        own, theirs = (dumped_program(d, variant, a.env_id, HIDDEN[a.size], a.algorithm) for d in (ROOT, other))
        changed = [line for line in difflib.unified_diff(theirs, own, lineterm="", n=0) if line[:1] in "+-"]
        changed = [line for line in changed if not line.startswith(("+++", "---"))]
        reordered = sorted(own) == sorted(theirs)  # the same instructions, some in another order
        result["variants"][variant] = {
            "lines": len(own),
            "same": not changed,
            "same_instructions": reordered,
            "changed_lines": changed[:40],
        }
        said = "the same program" if not changed else f"{len(changed)} lines differ"
        said += ", the same instructions in another order" if changed and reordered else ""
        print(f"{variant}: {said} ({len(own)} lines)")
    write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
