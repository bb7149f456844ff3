"""A SLURM array over the sweep's plan, for benchmark.sh --slurm: OUT/slurm/benchback.sbatch from
benchmark.sbatch.template, submitted with sbatch where it is on the PATH (else the command to run, printed).

    python bench/slurm.py BENCHMARK PYTHON ARGS...     # benchmark.sh's path, the interpreter, its ARGS

Each array task runs one run of the plan (benchmark.sh --task), numbered as bench/plan.py numbers it.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run as `python bench/slurm.py`: import bench.* from the root, not bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.plan import load
from bench.plan_args import Refused
from bench.variants import ROOT

# SLURM's default MaxArraySize (1001) allows indices up to 1000: a longer plan goes in several arrays, each after the
# one before it (so the limit on runs at once holds), with an offset added to the index.
MAX_ARRAY = 1000


def hms(seconds: int) -> str:
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def slurm_command(benchmark: str, python: str, argv: list) -> int:
    """OUT/slurm/benchback.sbatch from benchmark.sbatch.template, then sbatch it (or say how)."""
    try:
        plan = load(argv)
        total, limit, out = len(plan.runs), plan.jobs or 8, plan.out
        if not total:
            raise Refused("the plan has no runs; nothing to submit")
        template = ROOT / "benchmark.sbatch.template"
        try:
            text = template.read_text().rstrip("\n")
        except OSError:
            raise Refused(f"cannot read the SLURM template {template}") from None
    except Refused as e:
        print(f"benchmark.sh: {e}", file=sys.stderr)
        return 2
    time_limit = hms(plan.p["timeout"] + 30 + 300)  # the run's limit, timeout's 30 s grace, 5 minutes to start and record
    for field, value in [
        ("ARRAY", f"1-{min(total, MAX_ARRAY)}%{limit}"),
        ("TIME", time_limit),
        ("LOGS", f"{out}/slurm/logs"),
        ("PYTHON", shlex.quote(python)),
        ("BENCHMARK", shlex.quote(benchmark)),
        ("ARGS", shlex.join([*plan.args.forward, "--out", out])),
        ("RUNS", str(total)),
        ("PRESET", plan.args.preset),
    ]:
        text = text.replace(f"@{field}@", value)
    script = Path(out) / "slurm" / "benchback.sbatch"
    (script.parent / "logs").mkdir(parents=True, exist_ok=True)
    script.write_text(text + "\n")
    print(f"wrote {script}: {total} runs as a SLURM array, at most {limit} at once, each on one GPU for at most {time_limit}")

    quoted = shlex.quote(str(script))
    commands = [f"sbatch {quoted}"]
    if total > MAX_ARRAY:
        commands = [
            "sbatch --parsable"
            + (" --dependency=afterany:$jid" if offset else "")
            + f" --array=1-{min(total - offset, MAX_ARRAY)}%{limit} --export=ALL,BENCHBACK_TASK_OFFSET={offset} {quoted}"
            for offset in range(0, total, MAX_ARRAY)
        ]
    if not shutil.which("sbatch"):
        print("sbatch is not on the PATH: on the cluster's login node, in this directory, run:")
        print(f"  {commands[0]}" if len(commands) == 1 else "\n".join(f"  jid=$({c}); jid=${{jid%%;*}}" for c in commands))
        return 0
    jid = ""
    for command in commands:
        submit = command.replace("$jid", jid)
        print(submit, flush=True)
        submitted = subprocess.run(submit, shell=True, stdout=subprocess.PIPE, text=True)
        answer = submitted.stdout.rstrip("\n")
        if submitted.returncode:
            print(f"benchmark.sh: sbatch failed: {answer}", file=sys.stderr)
            return 2
        print(answer, flush=True)
        jid = answer.split(";")[0]
    return 0


if __name__ == "__main__":
    sys.exit(slurm_command(sys.argv[1], sys.argv[2], sys.argv[3:]))
