"""The sweep's plan, for benchmark.sh: its arguments checked, the presets as data, and the runs in order.

benchmark.sh runs the plan (one runner for the serial sweep and --jobs, --task), handles signals and prints
--help; everything else about a sweep is decided here, once, so that --list, --task, --jobs, --slurm (bench/slurm.py),
--dry-run and the serial sweep share one plan and number its runs the same.

    python bench/plan.py plan ARGS...                  # benchmark.sh's ARGS checked, the plan as bash assignments
    python bench/plan.py status FILE [RUN]             # ok | failed | stale | corrupt | missing (RUN: a line of RUNS)
    python bench/plan.py failure FILE REASON CODE SECONDS LIMIT STDERR_FILE COMMAND...   # a run's failure record
    python bench/plan.py check-envs ENV...             # why an --envs id cannot be run, or nothing
    python bench/plan.py check-out OUT                 # why OUT cannot be written, or nothing (creates nothing)
    python bench/plan.py other-machine OUT             # a record in OUT from another CPU model or GPU, or nothing

A refused argument is one line on stderr, "benchmark.sh: ...", and exit code 2.
"""

import functools
import os
import platform
import shlex
import sys
from types import SimpleNamespace

if __name__ == "__main__" and not __package__:  # run as `python bench/plan.py`: import bench.* from the root, not bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.compiler_caches import warm_compiler_caches
from bench.outputs import out_problem
from bench.plan_args import Refused, and_list, check_jobs, devices_and_jobs, parse, settings, visible_gpus
from bench.plan_parts import parts_of
from bench.plan_runs import Run, algorithm_of, block_of, make_plan, ordered_by_groups, permits, seeds_of
from bench.presets import COLD, EXPERIMENTS, GYMNASIUM_ENVS, PRESETS, STACK_ENVS, TIMED
from bench.run_records import other_machine, read_status, record_host, record_status, write_failure
from bench.variants import OFFPOLICY_ALGORITHMS, ROOT, VariantError, discover, modules, scripts


def bash(name: str, value) -> str:
    """An assignment bash can eval: a scalar, or an array from a list."""
    if isinstance(value, list):
        return f"{name}=({' '.join(shlex.quote(str(x)) for x in value)})"
    return f"{name}={shlex.quote(str(value))}"


def warm(p: dict, experiment: str) -> bool:
    """Whether the experiment's runs load their programs from the sweep's shared compiler caches."""
    return p["caches"] == "warm" and experiment not in COLD


def impossible(runs: list, by_name: dict) -> str:
    """(by_name: {(script, variant): Variant}) A planned run its script would refuse (what a setting's flags cannot do with the run's), named, or ''."""
    for run in runs:
        v = by_name[run.script, run.variant]
        if "--env-backend" in v.flags:  # torch_ports.py's environments, or Gymnasium's
            envs = STACK_ENVS if v.flags[v.flags.index("--env-backend") + 1] == "torch" else GYMNASIUM_ENVS
            if run.env not in envs:
                return f"{run.variant} runs on {and_list(envs)} only, not --envs {run.env}"
        if "--rollout" in v.flags and "--num-seeds" in str(run.flags).split():
            return f"{run.variant} steps its rollout from Python, one seed at a time: not in the seeds experiment"
    return ""


def why_empty(p: dict, variants: list) -> str:
    """Why a plan has no run: what the experiments asked for and cannot take."""
    reasons = []
    if "stacks" in p["experiments"]:
        if not set(p["envs"]) & set(STACK_ENVS):
            reasons.append(f"the stacks experiment runs on {and_list(STACK_ENVS)} only (the stacks' environments)")
        stacked = sorted({v.setting_of for v in variants if v.stack})
        if not set(p["variants"]) & set(stacked):
            reasons.append(f"the stacks experiment runs {', '.join(stacked)} only (the scripts with stacks)")
    experiments = ",".join(p["experiments"])
    return "; ".join(reasons) or f"--experiments {experiments} takes none of these --variants, --envs and --sizes"


def with_offpolicy(a, preset: str) -> tuple:
    """The runs of an off-policy preset that a PPO preset's plan holds beside its own, narrowed by the same options
    where they apply (--variants, to the names its scripts have too; --envs, --sizes, --repeats, --iterations); and
    the variants of its algorithm (bench/variants.discover) they run."""
    variants = discover(algorithm=PRESETS[preset]["algorithm"])
    names, stacks = [v.name for v in scripts(variants)], [v.name for v in variants if v.stack and not v.gpu_only]
    chosen = [v for v in a.variants.split(",") if v in names + stacks] if a.variants else []
    planned = [v for v in variants if PRESETS[preset].get("for_gpu") or not v.gpu_only]
    if a.variants and not chosen:  # none of the variants asked for is one of its scripts'
        return planned, []
    q = settings(SimpleNamespace(**{**vars(a), "preset": preset, "variants": ",".join(chosen)}), names, stacks)
    return planned, make_plan(q, planned)


def load(argv: list) -> SimpleNamespace:
    """benchmark.sh's arguments checked (or Refused), and the plan they choose."""
    a = parse(argv)
    if a.preset not in PRESETS:
        raise Refused(f"unknown preset '{a.preset}'; valid: {' '.join(PRESETS)}")
    try:
        variants = discover(algorithm=PRESETS[a.preset].get("algorithm", "ppo"))
    except VariantError as e:
        raise Refused(f"cannot list the variants: {e}") from None
    p = settings(a, [v.name for v in scripts(variants)], [v.name for v in variants if v.stack and not v.gpu_only])
    devices, jobs = devices_and_jobs(a, p["gpu_check"])
    sweep = not (a.list or a.slurm or a.task or p["gpu_check"])  # the serial sweep, --jobs or --dry-run
    # The settings only a GPU runs are in the plans meant for a GPU. A sweep on a machine without one leaves them
    # out; --list, --task and --slurm keep them, so that a run has the same index where it is listed or submitted as
    # on the GPU node that runs it.
    gpu_only = [v.name for v in variants if v.gpu_only] if p["for_gpu"] else []
    on_gpu = p["for_gpu"] and bool(devices or visible_gpus())  # a plan for a GPU that runs on one (asks nvidia-smi)
    left_out = gpu_only if sweep and gpu_only and not on_gpu else []
    planned = [v for v in variants if p["for_gpu"] or not v.gpu_only]
    every = [] if p["gpu_check"] else make_plan(p, planned)
    offpolicy_planned = []
    for i, preset in enumerate([] if p["gpu_check"] else p["offpolicy_presets"]):  # SAC's, TD3's cells (the gpu preset's)
        its_planned, its_runs = with_offpolicy(a, preset)
        if i:  # the same cells as the first's, of another algorithm: its records named apart (VARIANT__...__td3__seedN)
            tag = f"__{PRESETS[preset]['algorithm']}__seed"
            its_runs = [run._replace(name=tag.join(run.name.rsplit("__seed", 1))) for run in its_runs]
        offpolicy_planned += its_planned
        gpu_only += [v.name for v in its_planned if v.gpu_only and v.name not in gpu_only and p["for_gpu"]]
        left_out = gpu_only if sweep and gpu_only and not on_gpu else []
        every += its_runs
    if offpolicy_planned and p["groups"]:
        every.sort(key=lambda run: ordered_by_groups(run, p))  # stable: each algorithm's runs keep their order
    part = parts_of(every, p)  # cut from the whole plan, the GPU-only settings included, wherever it is made
    runs = [run for run in every if run.variant not in left_out]
    part = [k for k, run in zip(part, every) if run.variant not in left_out]
    if not runs and not p["gpu_check"]:
        raise Refused(f"nothing to run: {why_empty(p, variants)}")
    if problem := impossible(runs, {(v.script, v.name): v for v in planned + offpolicy_planned}):
        raise Refused(problem)
    if a.task:
        if not (a.task.isascii() and a.task.isdigit() and a.task[0] != "0" and int(a.task) <= len(runs)):
            raise Refused(f"--task must be one of the plan's indices, 1..{len(runs)} (see --list); got '{a.task}'")
        variant = runs[int(a.task) - 1].variant
        if variant in gpu_only and not visible_gpus():
            raise Refused(f"--task {a.task}: {variant} needs a GPU, and none is visible here")
    n = max(part, default=1)
    if a.part and a.part != "next" and not (a.part.isascii() and a.part.isdigit() and a.part[0] != "0" and int(a.part) <= n):
        raise Refused(f"--part must be next or one of 1..{n} (the preset's parts); got '{a.part}'")
    if sweep:
        check_jobs(runs, jobs or 1, devices)
    out = os.path.realpath(a.out or f"benchmark_out/{a.preset}")  # absolute: the runs get it in --json-out
    marker = os.path.join(out, "logs", "preset")  # the preset of the sweep that ran in OUT (benchmark.sh writes it)
    if os.path.isfile(marker):
        with open(marker) as f:
            other = f.read().strip()
        if other and other != a.preset:
            raise Refused(
                f"--out {out} holds a sweep of preset {other}, not {a.preset}: give another --out (or --preset {other} to resume it)"
            )
    compiled = {v.name for v in planned if v.compiles == "torch.compile"}
    if any(c.isspace() for c in out) and any(run.variant in compiled for run in runs):
        # Inductor builds its C++ in the run's caches under OUT and splits the compiler's command at spaces
        raise Refused(f"--out {out!r} has a space, which torch.compile's C++ build cannot take; name one without")
    offpolicy = {a: {v.name for v in scripts(discover(algorithm=a))} for a in OFFPOLICY_ALGORITHMS} if p["gpu_check"] else {}
    return SimpleNamespace(
        check_rows=[*p["variants"], *(f"{a}:{v}" for a, names in offpolicy.items() for v in p["variants"] if v in names)],
        args=a,
        p=p,
        variants=planned,
        runs=runs,
        part=part,
        devices=devices,
        jobs=jobs,
        sweep=sweep,
        out=out,
        left_out=left_out,
        on_gpu=on_gpu,
    )


def begun_elsewhere(runs: list, found: dict, out: str) -> dict:
    """{index: ("elsewhere", why)} for the records of the blocks begun on another machine (host) and not finished: a
    block's runs are compared with each other, so a sweep resumed on another machine (of the same GPU or CPU model)
    times such a block again, whole, here, and replaces what the other machine made of it."""
    here, blocks, redo = platform.node(), {}, {}
    for i, run in enumerate(runs):
        blocks.setdefault(block_of(run), []).append(i)
    for members in blocks.values():
        if all(found[i][0] == "ok" for i in members):
            continue
        for i in members:
            host = record_host(os.path.join(out, f"{runs[i].name}.json")) if found[i][0] == "ok" else here
            if host != here:
                redo[i] = (
                    "elsewhere",
                    f"timed on {host}, the rest of its block to be timed here: a block is timed on one machine",
                )
    return redo


@functools.cache
def offpolicy_frameworks() -> dict:
    """{variant: its framework} of the off-policy scripts (read once: a plan in parts estimates each part)."""
    return {v.name: v.framework for a in OFFPOLICY_ALGORITHMS for v in discover(algorithm=a)}


def estimate(runs: list, at_once: int, gpu: bool, source: bool = True) -> str:
    """Those runs' estimated duration, from the costs measured before (bench/run_costs.py: for a GPU, the GPU runs'
    where there are any), and (source) what it comes from."""
    try:
        from bench import run_costs

        framework = offpolicy_frameworks()
        lines = [
            f"run {framework.get(run.variant, 'torch')} {algorithm} {run.name}"
            if (algorithm := algorithm_of(run)) != "ppo"
            else f"{run.variant} {run.env} {run.size} {run.iterations} {seeds_of(run)}"
            for run in runs
        ]
        return run_costs.estimate(lines, run_costs.COSTS, at_once, gpu, source)
    except Exception:  # an estimate is never worth stopping the sweep for
        return "no estimate (bench/run_costs.py failed)"


def openmp_override(frameworks: set) -> str:
    """A warning for the sweep's first lines when the environment overrides how the torch scripts' OpenMP threads
    wait (they set a short spin themselves, unless the environment already sets one; what GOMP_SPINCOUNT=0 did to
    them: docs/findings.md). The records keep the settings (cpu.openmp)."""
    found = [f"{name}={os.environ[name]}" for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY") if name in os.environ]
    if "torch" not in frameworks or not found:
        return ""
    return (
        f"  warning: {' '.join(found)} in the environment overrides the torch scripts' own OpenMP setting, which changes"
        " their speed (docs/findings.md); unset it unless that is what you measure"
    )


def kept_stale(stale: list) -> str:
    """--keep-stale's refusal of records made with other settings than the plan gives their runs, [(name, why)]: how
    many, and the first."""
    (name, why), n = stale[0], len(stale)
    records, runs, them = ("records", "their runs", "them") if n > 1 else ("record", "its run", "it")
    return (
        f"--keep-stale: {n} {records} made with other settings than this plan gives {runs} (the first, {name}: {why});"
        f" nothing run: give another --out, or drop --keep-stale to run {them} again"
    )


def plan_command(argv: list) -> int:
    """What benchmark.sh needs, as bash assignments: the options, the plan's settings and RUNS, one tab-separated
    "NAME SCRIPT ENV HIDDEN SEED EXPERIMENT SIZE ITERATIONS FLAGS" per run in the order they run (no field but
    FLAGS is ever empty); for a sweep, the runs TODO (indices into RUNS), what it prints first (INTRO) and, with
    --dry-run or --list, the LISTING."""
    try:
        plan = load(argv)
    except Refused as e:
        print(f"benchmark.sh: {e}", file=sys.stderr)
        return 2
    a, p, runs, out = plan.args, plan.p, plan.runs, plan.out
    jobs = plan.jobs or 1
    if a.task and a.keep_stale:  # its record was made otherwise, and is to be kept: the task would replace it
        run = runs[int(a.task) - 1]
        status, why = read_status(os.path.join(out, f"{run.name}.json"), run, warm(p, run.experiment))
        if status == "stale":
            print(f"benchmark.sh: {kept_stale([(run.name, why)])}", file=sys.stderr)
            return 2
    # What env_cost.py times: the environments of the timed experiments (plot.py's x-axis).
    cost_envs = {e for exp in TIMED if exp in p["experiments"] for e in p["envs"] if permits(p["restrict"], exp, "envs", e)}
    script = {v.name: v.script for v in plan.variants}
    # What bench/host_cost.py times: the sync and stacks experiments' environments where a torch script is timed (the
    # floor under its rollout, which plot.py splits off).
    framework = {v.name: v.framework for v in plan.variants}
    floor_wanted = lambda run: run.experiment in ("sync", "stacks") and framework[run.variant] == "torch"
    handover_envs = {run.env for run in runs if floor_wanted(run)}
    values = {
        "PRESET": a.preset,
        "OUT": out,
        "LIST": int(a.list),
        "DRY_RUN": int(a.dry_run),
        "SLURM": int(a.slurm),
        "TASK": a.task,
        "RETRY_FAILED": int(a.retry_failed),
        "JOBS": jobs,
        "DEVICES": plan.devices,
        "PARALLEL": int(jobs > 1 or bool(plan.devices)),  # else the serial sweep
        "GPU_CHECK": int(p["gpu_check"]),
        "TIMEOUT": p["timeout"],
        "NUM_ENVS": p["iteration"]["num_envs"],
        "VARIANTS": p["variants"],
        "CHECK_ROWS": plan.check_rows,  # gpu-check's: the variants, and the SAC and TD3 scripts' of the same names (bench/gpu_check.py)
        "MODULES": sorted(
            {m for s in {script[v] for v in p["variants"]} | {run.script for run in runs} for m in modules(ROOT / s)}
        ),
        "USER_ENVS": p["envs"] if a.envs else [],  # to check: the presets' own environments are known to be gymnax's
        "COST_ENVS": sorted(cost_envs),
        "HANDOVER_ENVS": sorted(handover_envs),
        "NUM_STEPS": p["iteration"]["num_steps"],
        # the runs of these experiments share the compiler caches under OUT/.caches, with this environment
        "WARM_EXPERIMENTS": [e for e in p["experiments"] if warm(p, e)],
        "WARM_ENV": [f"{k}={v}" for k, v in warm_compiler_caches(os.path.join(out, ".caches")).items()],
        "RUNS": [run.line() for run in runs],
        # what a setting made by the environment adds to a variable, VARIANT=NAME=VALUE (run_one adds VALUE to NAME's)
        "SETTING_ENVIRONMENTS": [f"{v.name}={'='.join(v.environment)}" for v in plan.variants if v.environment],
        "LISTING": "".join(f"{i} {run.name}\n" for i, run in enumerate(runs, 1)) if a.list else "",
    }
    if plan.sweep:
        part, n = plan.part, max(plan.part, default=1)
        found = {
            i: read_status(os.path.join(out, f"{run.name}.json"), run, warm(p, run.experiment)) for i, run in enumerate(runs)
        }
        moved = begun_elsewhere(runs, found, out)
        found |= moved
        status = {i: s for i, (s, _) in found.items()}
        done = {i: s == "ok" or s == "failed" and not a.retry_failed for i, s in status.items()}
        # --part next: the first part with a run to do (none when every part is done)
        k = min((part[i] for i in done if not done[i]), default=None) if a.part == "next" else int(a.part or 0) or None
        chosen = [i for i in range(len(runs)) if not a.part or part[i] == k]  # indices into runs
        if a.part:  # the probe's floors where this part times a torch script's rollout
            values["HANDOVER_ENVS"] = sorted({runs[i].env for i in chosen if floor_wanted(runs[i])})
        stale = [i for i in chosen if status[i] in ("stale", "corrupt")]  # made otherwise, or unreadable: not done
        if stale and a.keep_stale and not a.dry_run:  # refused before any work, not part way through the sweep
            print(f"benchmark.sh: {kept_stale([(runs[i].name, found[i][1]) for i in stale])}", file=sys.stderr)
            return 2
        todo = [i for i in chosen if not done[i]]
        where = ""
        if values["PARALLEL"]:
            where = f", {jobs} at a time " + (f"on devices {','.join(plan.devices)}" if plan.devices else "on the CPU")
        n_done = len(chosen) - len(todo)
        values["TODO"], values["SKIPPED"] = todo, n_done
        values["REDO"] = [i for i in todo if i in moved]  # ok records a run here replaces (claim_and_run)
        values["OLD_FAILED"] = sum(done[i] and status[i] == "failed" for i in chosen)
        intro = [
            f"benchback sweep: preset {a.preset}{f', part {k} of {n}' if k else ''}, {len(chosen)} runs"
            f" ({n_done} already done), out {out}, per-run limit {p['timeout']}s{where}",
            f"  {estimate([runs[i] for i in todo], jobs, p['for_gpu'])}",
        ]
        if a.part == "next" and not k:
            intro.append(f"  every part of the {n} is done")
        if again := [i for i in chosen if status[i] == "elsewhere"]:
            intro.append(
                f"  {len(again)} records are of blocks begun on another machine and not finished: each such block is"
                f" timed again here, whole (the first, {runs[again[0]].name}: {found[again[0]][1]})"
            )
        fate = "kept: --keep-stale refuses the sweep while they are here" if a.keep_stale else "run again and replaced"
        for kind, what in (
            ("stale", "were made with other settings than this plan gives their runs"),
            ("corrupt", "are corrupt"),
        ):
            if which := [i for i in stale if status[i] == kind]:
                first = which[0]
                intro.append(f"  {len(which)} records {what}: {fate} (the first, {runs[first].name}: {found[first][1]})")
        if p["for_gpu"] and not plan.on_gpu:  # a preset for a GPU, on a machine without one: what it costs here too
            intro.append(f"  here, without a GPU: {estimate([runs[i] for i in todo], jobs, False)}")
        if plan.left_out:
            intro.append(f"  {', '.join(plan.left_out)}: needs a GPU, left out (none is visible here)")
        if spin := openmp_override({framework[v] for v in p["variants"]}):
            intro.append(spin)
        values["INTRO"] = "".join(f"{line}\n" for line in intro)
        if a.dry_run:
            lines = [f"  {exp}: {k} runs" for exp in EXPERIMENTS if (k := sum(runs[i].experiment == exp for i in chosen))]
            if n > 1 and not a.part:  # each part's runs, and the estimate of what is left of it
                for k in range(1, n + 1):
                    members = [i for i in chosen if part[i] == k]
                    if members:
                        left = estimate([runs[i] for i in members if not done[i]], jobs, p["for_gpu"], source=False)
                        lines.append(f"  --part {k}: runs {members[0] + 1}-{members[-1] + 1}, {left}")
            for i in chosen:
                state = {"ok": "done", "elsewhere": "redo"}.get(status[i], status[i])
                shown = status[i] in ("stale", "elsewhere", "corrupt")
                state = state if done[i] or shown else "to-run"
                why = f"  ({status[i]}: {found[i][1]})" if shown else ""
                lines.append(f"[{i + 1}/{len(runs)}] {state:<6} {runs[i].name}  {runs[i].flags}{why}")
            lines.append(f"plan: {len(chosen)} runs, {n_done} already done, {len(todo)} to run")
            values["LISTING"] = "".join(f"{line}\n" for line in lines)
    print("\n".join(bash(name, value) for name, value in values.items()))
    return 0


def main(argv=None) -> int:
    command, *rest = sys.argv[1:] if argv is None else argv
    if command == "plan":
        return plan_command(rest)
    if command == "status":  # a RUN (a line of RUNS) makes a record made with other settings stale
        print(record_status(rest[0], Run.from_line(rest[1]) if len(rest) > 1 else None))
    elif command == "failure":
        write_failure(*rest)
    elif command == "check-envs":  # the environments a sweep can run, as env_cost.py checks them
        from bench.env_cost import bad_env

        print(bad_env(rest))
    elif command == "check-out":  # as every tool checks its --out
        print(out_problem(rest[0], directory=True))
    elif command == "other-machine":
        print(other_machine(rest[0]) if os.path.isdir(rest[0]) else "")
    else:
        print(f"bench/plan.py: unknown command {command!r} (see its docstring)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
