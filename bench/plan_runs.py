"""The runs of the sweep's plan, for bench/plan.py: a run (Run), what a run's name and flags say of it, and the runs
a preset's settings make, in the order they run (make_plan)."""

from typing import NamedTuple

from bench.presets import ENV_FLAGS, EXPERIMENTS, HIDDEN, SAC_CELLS, SAC_LEARN_FLAGS, SAC_LEARNING_STARTS, STACK_ENVS


class Run(NamedTuple):
    """One run of the plan. benchmark.sh reads it as one tab-separated line of every field but the variant (line())."""

    name: str  # EXPERIMENT/VARIANT__ENV__SIZE[__nNUM_ENVS][__kSEEDS]__seedSEED, its record's name in OUT
    script: str
    env: str
    hidden: str  # as --hidden takes it
    seed: int
    experiment: str
    size: str
    iterations: int
    flags: str  # every flag beyond those above, space-separated (empty for learn's defaults)
    variant: str  # the script's variant, a setting of it (jax_nnx+nocache) or a stack (torch+torchenv)

    def line(self) -> str:
        """The run as benchmark.sh reads it: NAME SCRIPT ENV HIDDEN SEED EXPERIMENT SIZE ITERATIONS FLAGS."""
        return "\t".join(map(str, self[:-1]))

    @classmethod
    def from_line(cls, line: str) -> "Run":
        """A run from its line (every field a string); the line leaves the variant out, its name holds it."""
        name, *rest = line.split("\t")
        return cls(name, *rest, variant=name.split("/")[1].split("__")[0])


def permits(restrict: dict, key: str, dim: str, item: str) -> bool:
    """Does restrict allow `item` (a variant, env or size) for `key` (an experiment, a size or a variant)?"""
    only = restrict.get(f"{key}:{dim}")
    return not only or item in only


def make_plan(p: dict, variants: list) -> list:
    """The runs (Run), in the order they run.

    The seed is the outermost loop: the plan is `repeats` rounds, each a block of every cell of every experiment,
    so a sweep stopped part way has every cell with fewer seeds rather than some cells with all. The variant is the
    innermost loop of every experiment: the runs a speedup compares follow each other, so a shared machine's slow
    spells (tens of percent here) fall on both sides of a ratio. Each seed of a cell is one such block, and the
    variants' order rotates from block to block, so that no variant always runs first after a pause (or after a
    run that leaves the machine warm). A preset with groups reorders the blocks, each as it was: group by group, and
    in a group every seed of a cell before the next (ordered_by_groups)."""
    if p["algorithm"] != "ppo":  # the off-policy scripts' (SAC's, TD3's)
        return sac_plan(p, variants)
    by_name = {v.name: v for v in variants}  # the scripts and their settings (jax_nnx+nocache)
    settings_of, stacks_of = {}, {}  # each script's settings and environment stacks in this plan
    for v in variants:
        if v.setting_of:
            (stacks_of if v.stack else settings_of).setdefault(v.setting_of, []).append(v.name)
    restrict, iteration, runs = p["restrict"], p["iteration"], []

    def allowed(key, dim, items):
        return [x for x in items if permits(restrict, key, dim, x)]

    def block(exp, env, size, seed, num_envs, iterations, flags, names, tag=""):
        for v in (names[(i + seed - 1) % len(names)] for i in range(len(names))):  # rotated by seed
            if seed > min(p["max_seeds"].get(v, p["repeats"]), p["repeats_in"].get(exp, p["repeats"])):
                continue
            if not allowed(v, "envs", [env]) or not allowed(v, "sizes", [size]):
                continue
            n = iterations if "+" in v else p["iterations_of"].get(v, iterations)  # a setting runs its cell's
            name, more = f"{exp}/{v}__{env}__{size}{tag}", [*ENV_FLAGS.get(env, []), *flags, *by_name[v].flags]
            if num_envs is not None:  # None: the script's defaults (learn)
                if exp == "scaling":
                    name += f"__n{num_envs:04d}"
                more += ["--num-envs", num_envs, "--num-steps", iteration["num_steps"]]
                more += ["--num-minibatches", iteration["num_minibatches"], "--update-epochs", iteration["update_epochs"]]
                more += ["--total-timesteps", num_envs * iteration["num_steps"] * n]
            flags_text = " ".join(map(str, more))
            runs.append(
                Run(f"{name}__seed{seed}", by_name[v].script, env, HIDDEN[size], seed, exp, size, n or 100, flags_text, v)
            )

    def grid(exp, seed, flags, names):
        for env in allowed(exp, "envs", p["envs"]):
            for size in allowed(exp, "sizes", p["sizes"]):
                if permits(restrict, size, "envs", env):
                    iterations = p["iterations_in"].get(env, p["iterations_at"].get(size, p["iterations"]))
                    block(exp, env, size, seed, iteration["num_envs"], iterations, flags, names)

    names = p["variants"]
    # Beside their scripts: in every overall block, where the preset says so, the GPU-only settings made by flags
    # (CUDA graphs); in every sync block, those made by the environment (XLA's command buffers for loops), whose
    # point is the rollout's loop. A plan without a GPU has neither.
    flagged = lambda s: by_name[s].gpu_only and not by_name[s].environment
    beside = {
        "overall": {v: [s for s in settings_of.get(v, []) if flagged(s)] for v in names} if p["settings_in_overall"] else {},
        "sync": {v: [s for s in settings_of.get(v, []) if by_name[s].environment] for v in names},
    }
    for seed in range(1, p["repeats"] + 1):
        for exp in p["experiments"]:
            if exp in ("overall", "sync"):
                chosen = [n for v in allowed(exp, "variants", names) for n in (v, *beside[exp].get(v, []))]
                grid(exp, seed, ["--sync-timing"] if exp == "sync" else [], chosen)
            elif exp == "compile":  # from cold: every script with its settings (compilation off, CUDA graphs), in blocks
                grid(exp, seed, [], [n for v in allowed(exp, "variants", names) for n in (v, *settings_of.get(v, []))])
            elif exp == "stacks":  # each script with a stack beside it on gymnax's envs, rollout and update timed apart
                chosen = [n for v in allowed(exp, "variants", names) if v in stacks_of for n in (v, *stacks_of[v])]
                for env in [e for e in allowed(exp, "envs", p["envs"]) if e in STACK_ENVS]:  # what the stacks have
                    for size in allowed(exp, "sizes", p["sizes"]):
                        block(exp, env, size, seed, iteration["num_envs"], p["stacks_iterations"], ["--sync-timing"], chosen)
            elif exp == "scaling":
                for n in p["scaling_num_envs"]:
                    block(exp, "CartPole-v1", "s", seed, n, p["scaling_iterations"], [], allowed(exp, "variants", names))
            elif exp == "seeds":  # N seeds at once where a script takes --num-seeds; one seed alone, every variant
                for env in allowed(exp, "envs", p["envs"]):
                    for k in p["seeds_num_seeds"]:
                        which = [v for v in allowed(exp, "variants", names) if k == 1 or by_name[v].num_seeds]
                        flags = ["--num-seeds", k] if k > 1 else []
                        block(exp, env, "s", seed, iteration["num_envs"], p["seeds_iterations"], flags, which, f"__k{k:03d}")
            elif exp == "search":  # a batch of N configurations where a script takes --configs; one a run, every variant
                from studies.search import configs_file

                for k in p["search_configs"]:
                    which = [v for v in allowed(exp, "variants", names) if k == 1 or by_name[v].configs]
                    flags = ["--configs", configs_file("ppo", k)] if k > 1 else []
                    block(
                        exp,
                        "CartPole-v1",
                        "s",
                        seed,
                        iteration["num_envs"],
                        p["search_iterations"],
                        flags,
                        which,
                        f"__k{k:03d}",
                    )
            else:  # learn: each script's defaults
                for env in p["learn_envs"]:
                    block(exp, env, "s", seed, None, None, [], allowed(exp, "variants", names))
    if p["groups"]:
        runs.sort(key=lambda run: ordered_by_groups(run, p))  # a sort is stable: seeds and blocks keep their order
    return runs


def sac_plan(p: dict, variants: list) -> list:
    """The off-policy presets' runs (SAC's, TD3's, DQN's), as make_plan orders PPO's: the seed outermost, a block of
    every variant per cell and seed, the variants rotated by seed (and the torch script's stacks where a cell says
    so). overall: the preset's cells narrowed by --envs and --sizes, named
    VARIANT__ENV__SIZE__nNUM_ENVS__uUPDATES_PER_STEP__seedSEED (DQN's without __u and --updates-per-step: its scripts
    take a gradient step every train_frequency steps); learn: the preset's learn_flags (or SAC_LEARN_FLAGS) on each
    learn env at its learn_size."""
    by_name, runs = {v.name: v for v in variants}, []
    stacks = [v for v in variants if v.stack and v.setting_of in p["variants"] and not v.gpu_only]
    # beside their scripts in every block, where the preset says so: the GPU-only settings made by flags (CUDA graphs)
    beside = [v.name for v in variants if v.gpu_only and not v.stack and v.setting_of in p["variants"]]
    beside = beside if p["settings_in_overall"] else []

    def block(exp, env, size, seed, tag, flags, names=p["variants"]):
        for v in (names[(i + seed - 1) % len(names)] for i in range(len(names))):
            more = " ".join(map(str, [*flags, *by_name[v].flags]))
            runs.append(
                Run(
                    f"{exp}/{v}__{env}__{size}{tag}__seed{seed}",
                    by_name[v].script,
                    env,
                    HIDDEN[size],
                    seed,
                    exp,
                    size,
                    p["iterations"] if exp == "overall" else 100,
                    more,
                    v,
                )
            )

    for seed in range(1, p["repeats"] + 1):
        if "overall" in p["experiments"]:
            for env, size, num_envs, utd, steps, repeats, stacked, full in p["cells"] or SAC_CELLS:
                if env not in p["envs"] or size not in p["sizes"] or seed > (repeats or p["repeats"]):
                    continue
                random_steps = -(-SAC_LEARNING_STARTS // num_envs) * num_envs  # as the scripts round it
                flags = ["--num-envs", num_envs, *(["--updates-per-step", utd] if utd is not None else [])]
                flags += ["--steps-per-iteration", steps]
                flags += ["--learning-starts", SAC_LEARNING_STARTS]
                flags += ["--total-timesteps", random_steps + num_envs * steps * p["iterations"]]
                flags += ["--full-buffer"] if full else []
                names = [*p["variants"], *beside, *(v.name for v in stacks if v.name.split("+", 1)[1] in stacked)]
                tag = f"__n{num_envs:04d}" + (f"__u{utd}" if utd is not None else "") + "__full" * full  # DQN's: no u
                block("overall", env, size, seed, tag, flags, names)
        if "search" in p["experiments"]:  # studies.search's trials: one configuration a run, every variant, and batches
            from studies.search import SPACES, configs_file

            space = SPACES[p["algorithm"]]
            for k in p["search_configs"]:
                which = [v for v in p["variants"] if k == 1 or by_name[v].configs]
                flags = ["--total-timesteps", space["total_timesteps"]]
                flags += ["--configs", configs_file(p["algorithm"], k)] if k > 1 else []
                block("search", space["env_id"], p["learn_size"], seed, f"__k{k:03d}", flags, which)
        if "learn" in p["experiments"]:
            for env in p["learn_envs"]:
                block("learn", env, p["learn_size"], seed, "", p["learn_flags"] or SAC_LEARN_FLAGS)
    return runs


def algorithm_of(run: Run) -> str:
    """The algorithm whose script a run runs: ppo (ppo_*.py), sac (sac_*.py) or td3 (td3_*.py)."""
    return run.script.split("/")[-1].split("_", 1)[0]


def group_of(run: Run, groups: list) -> int:
    """The index of the first of the preset's groups that takes the run (a group takes its algorithm's runs only,
    PPO's unless it names another); len(groups) for none."""
    for i, group in enumerate(groups):
        if group.get("algorithm", "ppo") != algorithm_of(run):
            continue
        in_envs = run.env in group.get("envs", [run.env])
        if run.experiment in group["experiments"] and in_envs and int(run.seed) <= group.get("seeds", 1e9):
            return i
    return len(groups)


def ordered_by_groups(run: Run, p: dict) -> tuple:
    """Where a run goes in a plan ordered by the preset's groups: by group, then every seed of a cell (size, env,
    experiment) before the next cell."""
    if algorithm_of(run) != "ppo":  # another algorithm's runs keep their own plan's order (its preset's)
        return group_of(run, p["groups"]), 0, 0, 0
    sizes, envs = (dict(zip(items, range(len(items)))) for items in (p["sizes"], p["envs"]))
    where = sizes.get(run.size, len(sizes)), envs.get(run.env, len(envs)), EXPERIMENTS.index(run.experiment)
    return group_of(run, p["groups"]), *where


def seeds_of(run: Run) -> int:
    """How many seeds (or a search's configurations) a run trains at once: its --num-seeds, the configurations in its
    --configs (the search experiment's name says how many: __kNNN), else 1."""
    flags = run.flags.split()
    if "--configs" in flags:
        return int(run.name.split("__k")[1][:3])
    return int(flags[flags.index("--num-seeds") + 1]) if "--num-seeds" in flags else 1


def variant_of(run: Run) -> str:
    """The variant (or setting) a run of the plan runs, for the tests that ask it of a run."""
    return run.variant


def block_of(run: Run) -> tuple:
    """A run's block, the runs a ratio compares, run back to back: its experiment, and its name after its variant (env,
    size, num_envs, seed)."""
    return run.experiment, run.name.removeprefix(f"{run.experiment}/{run.variant}__")
