"""The sweep's presets, as data: the environments, sizes, seeds, experiments and iterations each runs, and where it
narrows the grid to save time. bench/plan.py applies the command line's options to one and makes its plan."""

# The model sizes: the hidden layers of actor and critic (run_costs.py and plot.py name a record's size from here).
SIZES = {"s": (64, 64), "m": (256,) * 3, "l": (1024,) * 6, "c": (256, 256), "d": (120, 84)}  # c, d: CleanRL's SAC, DQN
HIDDEN = {size: ",".join(map(str, layers)) for size, layers in SIZES.items()}  # as --hidden takes them
STUDY_ENVS = [
    "CartPole-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "DiscountingChain-bsuite",
    "MemoryChain-bsuite",
    "UmbrellaChain-bsuite",
    "BernoulliBandit-misc",
    "GaussianBandit-misc",
    "Asterix-MinAtar",
    "Breakout-MinAtar",
    "Freeway-MinAtar",
    "SpaceInvaders-MinAtar",
]
# Craftax-Classic (benchback/craftax_gymnax.py): the expensive environment, where the env may matter more than the framework.
CRAFTAX = "Craftax-Classic-Symbolic-v1"
# The environments whose step makes a GPU wait for the host, in every framework alike: gymnax's Asterix-MinAtar runs a
# data-dependent lax.while_loop (while_sample_slots) in its step, and XLA's GPU runtime reads the loop's condition back
# to the host on every trip unless while loops run in command buffers (docs/gpu.md); a CPU has no such round trip.
# gpu-check runs each to see the waits; a GPU's report marks each in its answer.
HOST_WAITS_ON_GPU = {"Asterix-MinAtar": "its step's lax.while_loop makes the GPU wait for the host on every trip"}
EXPERIMENTS = ["overall", "sync", "compile", "scaling", "seeds", "stacks", "search", "learn"]
TIMED = ["overall", "sync", "compile"]  # the experiments whose x-axis is bench/env_cost.py's
# The experiments whose runs compile from cold, each with empty compiler caches of its own: compile, the one source of
# iteration-0 and compile-time figures, and learn, whose time to learn includes compiling. The others time steady
# iterations, and their runs share the sweep's compiler caches (OUT/.caches): a cell's first run fills them, the
# runs after it load what it compiled (docs/method.md, "Compiler caches"). benchmark.sh --caches cold: every run cold.
COLD = {"compile", "learn", "search"}


# The PPO settings an environment needs beside the scripts' defaults (CleanRL's, for discrete actions), on every run of it
# in every experiment. Pendulum-v1 (continuous actions): rl-baselines3-zoo's PPO settings for it (learning rate 1e-3, no
# entropy bonus, and no clipping of the value loss, Stable-Baselines3's default), with a discount of 0.95 between the
# zoo's 0.9 and CleanRL's 0.99: it learned in each of 4 Linen seeds (docs/findings.md, "Continuous actions").
ENV_FLAGS = {"Pendulum-v1": ["--learning-rate", "1e-3", "--gamma", "0.95", "--ent-coef", "0", "--no-clip-vloss"]}
BOTH = ["CartPole-v1", "Breakout-MinAtar"]  # the cells beyond size s: a cheap env and a dear one
# The environments the stacks experiment runs, where the preset has them: benchback/torch_ports.py's IDS (a test holds them equal),
# which Gymnasium has too, with gymnax's dynamics.
STACK_ENVS = ["CartPole-v1", "Acrobot-v1", "Pendulum-v1"]
# Gymnasium's stack's (--env-backend gymnasium, gymnasium-async): those, and benchback/gridworld.py's NumPy gridworld
# (benchback/gymnasium_envs.py's IDS, a test holds them equal).
GYMNASIUM_ENVS = [*STACK_ENVS, "FourRooms-misc"]


class AllBut(tuple):
    """A restriction to every variant but these: the variants are the scripts found, not a list kept here."""


# The full sweep's settings, which every preset starts from. Every preset keeps the original study's iteration
# (32 envs x 256 steps, 8 minibatches, 10 epochs) unless it says otherwise, so per-iteration times stay comparable;
# presets differ in how many iterations, environments, sizes and repeats they can afford.
# restrict["KEY:DIM"] narrows the variants, envs or sizes (DIM) of one experiment, one size or one variant (KEY)
# where the whole grid would cost too much: "sync:envs", "m:envs", "linen_nojit:sizes". max_seeds[VARIANT] caps
# that variant's repeats, iterations_of[VARIANT] its iterations (for a variant too slow to run as often or as long
# as the others); iterations_at[SIZE]: a size's iterations, iterations_in[ENV] an env's (at every size, before
# iterations_at). for_gpu: a preset meant for a GPU, whose plan holds the settings only a GPU runs
# (bench/variants.py; left out of a sweep on a machine without one) and whose estimate is derived for a GPU
# (bench/run_costs.py). settings_in_overall: the overall experiment's blocks hold the GPU-only settings beside every
# variant (so the answer has torch's best against Linen). repeats_in[EXPERIMENT] caps an experiment's repeats.
# groups: the order of the plan, for a sweep stopped early or run a part at a time: a list of groups, each the
# runs of some experiments (and envs, and seeds up to a number) that answer one question, in the order they answer;
# within a group, every seed of a cell before the next cell, by size and env, so that a sweep stopped early holds
# whole cells with intervals. A run no group takes comes last. part_minutes: cut the plan, in its order, into parts
# (--part) of whole blocks, a group's runs never sharing a part with another's, each at most this long by its
# estimate; None: one part.
FULL = {
    "envs": STUDY_ENVS,
    "sizes": ["s", "m", "l"],
    "repeats": 3,
    "experiments": ["overall", "sync", "compile", "scaling", "seeds"],
    "iteration": {"num_envs": 32, "num_steps": 256, "num_minibatches": 8, "update_epochs": 10},
    "iterations": 100,
    "iterations_at": {},
    "iterations_in": {},
    "iterations_of": {},
    "max_seeds": {},
    "restrict": {"seeds:envs": BOTH},
    "scaling_num_envs": [32, 64, 128, 256, 512, 1024, 2048, 4096],
    "scaling_iterations": 20,  # throughput needs few iterations
    # seeds: several seeds trained at once (--num-seeds, where a script takes it) at size s, beside one seed alone
    # (every variant) in the same block: what N seeds cost at once against N runs one after another.
    "seeds_num_seeds": [1, 4, 16, 64],
    "seeds_iterations": 20,
    # stacks: each framework on environments in its own stack (benchback/torch_ports.py, Gymnasium; gymnax stepped from a Python
    # loop) beside gymnax's, with the same dynamics: the environments those stacks have, rollout and update timed apart.
    "stacks_iterations": 11,
    # search: what a hyperparameter search's trials cost, a batch of N configurations trained at once (--configs, where a
    # script takes it; studies/search_configs/) beside one configuration a run (every variant, its defaults) in the same
    # block, each run the search's budget from cold: N configurations an hour, compilation included, as studies.search
    # pays it for every trial or batch.
    "search_configs": [1, 8, 64],
    "search_iterations": 25,
    "learn_envs": ["CartPole-v1"],
    "timeout": 7200,
    "gpu_check": False,
    "for_gpu": False,
    "settings_in_overall": False,
    "repeats_in": {},
    "groups": None,
    "part_minutes": None,
    "learn_flags": None,  # a SAC preset's learn runs' flags (None: SAC_LEARN_FLAGS); PPO's run each script's defaults
    "learn_size": "s",  # an off-policy preset's learn runs' size
    "offpolicy_presets": (),  # off-policy presets whose runs a PPO preset's plan holds too, each a group (the gpu preset's)
    "algorithm": "ppo",  # the scripts it runs: ppo_*.py, or sac_*.py, td3_*.py, dqn_*.py (bench/variants.py)
    "cells": None,  # an off-policy preset's timed cells (None: SAC_CELLS)
}
# The sac preset's cells, in the order they run within a block of seeds: (env, size, num_envs, updates_per_step,
# steps_per_iteration, repeats or None for the preset's, stacks, full). The iteration is sized so that every cell's
# costs a few tenths of a second to a few seconds here; the update-to-data ratio 8 does 8 gradient steps per env step,
# 0 none: the steps alone (act, step, store), what the updates' share is told from. stacks: the tags of the torch
# scripts' environment stacks that run in the cell's blocks too (torchenv: benchback/torch_ports.py's Pendulum-v1; gymnasium,
# Gymnasium's, runs where --variants names it). full: --full-buffer, samples drawn from all 1e6 rows as late in a long
# run (named __full).
SAC_CELLS = [
    ("Pendulum-v1", "c", 1, 1, 250, None, ("torchenv",), False),
    ("Pendulum-v1", "s", 1, 1, 500, None, (), False),
    ("Pendulum-v1", "s", 1, 0, 500, None, (), False),
    ("Pendulum-v1", "s", 16, 1, 500, None, (), False),
    ("Pendulum-v1", "s", 1, 8, 125, None, (), False),
    ("Pendulum-v1", "s", 1, 1, 500, 5, (), True),
    ("MountainCarContinuous-v0", "c", 1, 1, 250, 3, (), False),
]
# TD3's cells: the four its issue names (256x256 and 64x64 at 1 env and UTD 1, 64x64 with 16 envs and at UTD 8), with
# the torch scripts' own Pendulum-v1 beside them in the first. The steps-only, full-buffer and MountainCarContinuous-v0
# cells answer SAC's questions (where the time goes, a full buffer), which TD3's same loop would answer alike.
TD3_CELLS = [cell for cell in SAC_CELLS if cell[0] == "Pendulum-v1" and cell[3] > 0 and not cell[7]]
# DQN's cells: CleanRL's network (d) and its one gradient step every train_frequency = 10 steps (the scripts' own: no
# updates_per_step, None), at CleanRL's one env and at 16, on CartPole-v1 and on gymnax's gridworld with doorways.
DQN_CELLS = [(env, "d", n, None, 500, None, (), False) for env in ("CartPole-v1", "FourRooms-misc") for n in (1, 16)]
# DQN's training time against the number of environments (the post's second figure): the gridworld at 1 to 256 envs,
# each iteration the same 2560 steps of the envs (so 256 gradient steps at 1 env, 1 at 256: one every train_frequency
# steps of all the envs at once, CleanRL's), the torch scripts also on Gymnasium's stack, in turn and a process per env.
SCALING_STEPS = 2560
DQN_SCALING_CELLS = [
    ("FourRooms-misc", "d", n, None, SCALING_STEPS // n, None, ("gymnasium", "gymnasium-async"), False)
    for n in (1, 4, 16, 64, 256)
]

PRESETS = {
    # A smoke test of the sweep and of every figure: a tiny iteration, so process start-up and compilation
    # dominate; the timings mean nothing. Under 3 minutes on 2 cores (2:25 and 2:48 here): sync and scaling run
    # torch only (it starts fastest), and compile adds no run, since its on/off pairs also come from overall's runs.
    "quick": {
        "envs": ["CartPole-v1"],
        "sizes": ["s"],
        "repeats": 1,
        "experiments": ["overall", "sync", "scaling"],
        "iteration": {"num_envs": 8, "num_steps": 32, "num_minibatches": 4, "update_epochs": 2},
        "iterations": 3,
        "restrict": {"sync:variants": ["torch"], "scaling:variants": ["torch"]},
        "scaling_num_envs": [8, 32],
        "scaling_iterations": 2,
        "timeout": 300,
    },
    # The study's two questions on 2 CPU cores, 3 seeds (blocks) per cell. Environment cost: all 12 environments at
    # size s. Model size: s, m and l on CartPole-v1, s and m on Breakout-MinAtar (a dearer env with 100 inputs
    # instead of 4). 21 iterations give a steady time over 20 (the machine's slow spells last seconds to minutes: 10
    # were too few); an l iteration is long and compute-bound, so l runs 3 (a steady time over 2). Rollout vs update
    # (sync) and NNX with and without cached_partial (compile) on CartPole-v1 and Breakout-MinAtar at s. linen_nojit
    # (eager, about 40 s an iteration) runs in overall only: one seed of 3 iterations at s on CartPole-v1 and
    # Breakout-MinAtar. Seeds: 1, 4 and 16 at once on CartPole-v1 and Breakout-MinAtar at s, 11 iterations, beside
    # one seed alone of every variant but linen_nojit. No scaling: its large num-envs cost more than the rest together
    # here. Craftax-Classic, the expensive environment, at s in overall only, 16 iterations (long ones, the env most of
    # each): a steady time over 15, and 131,072 steps, enough for the return to rise (studies/expensive_env.py).
    # Stacks: CartPole-v1 and Acrobot-v1 at s and m, each torch script on benchback/torch_ports.py and Gymnasium beside it on
    # gymnax, Linen stepped from a Python loop beside it scanned, 11 iterations (FULL's stacks_iterations).
    "cpu": {
        "envs": [*STUDY_ENVS, CRAFTAX],
        "repeats": 3,
        "experiments": ["overall", "sync", "compile", "seeds", "stacks"],
        "iterations": 21,
        "iterations_at": {"l": 3},
        "iterations_in": {CRAFTAX: 16},
        "iterations_of": {"linen_nojit": 3},
        "max_seeds": {"linen_nojit": 1},
        "restrict": {
            "m:envs": BOTH,
            "l:envs": ["CartPole-v1"],
            "sync:envs": BOTH,
            "sync:sizes": ["s"],
            "compile:envs": BOTH,
            "compile:sizes": ["s"],
            "linen_nojit:sizes": ["s"],
            "linen_nojit:envs": BOTH,
            "sync:variants": AllBut(["linen_nojit"]),
            "seeds:envs": BOTH,
            "seeds:variants": AllBut(["linen_nojit"]),
            "stacks:sizes": ["s", "m"],
        },
        "seeds_num_seeds": [1, 4, 16],
        "seeds_iterations": 11,
        "scaling_num_envs": [32, 256, 2048],  # for --experiments scaling
        "scaling_iterations": 3,
        "timeout": 1200,
    },
    "full": {"for_gpu": True},  # the original study's GPU sweep
    # The headline questions on one GPU, in parts of at most 8 minutes by the estimate (a GPU may be had for a quarter
    # hour, about ten minutes of it for runs), in the order of what they answer: (1) CartPole-v1 at s, m and l, every variant but linen_nojit (eager, it
    # dispatches every op from Python; what jit buys is answered on the CPU), torch.compile with CUDA graphs beside it
    # in every block, and each framework on environments of its own stack (stacks: the torch scripts on
    # benchback/torch_ports.py and Gymnasium, Linen from a Python loop); (2) Breakout-MinAtar at s, m and l, a dearer env; (3)
    # rollout and update timed apart at s on both, each JAX variant also with XLA's command buffers for loops
    # beside it (its gpu_environment setting); (4) compile times: every variant and setting at s, m and l on
    # CartPole-v1, one cold run each; then 3 more seeds of (1) and (2). SAC's and TD3's cells (the sac-gpu and td3-gpu
    # presets' runs, 3 blocks each) come after (1): off-policy RL has no GPU answer. Three blocks a cell first. 11 iterations: a
    # steady time over 10, on a GPU held alone. The timed runs share warm compiler caches: only a cell's first run
    # compiles (docs/sweep.md). `--part next` runs the first part with a run still to do, so that any later run on a
    # GPU of the same model continues the sweep with one command.
    "gpu": {
        "for_gpu": True,
        "envs": BOTH,
        "repeats": 6,
        "experiments": ["overall", "stacks", "sync", "compile"],
        "iterations": 11,
        "restrict": {
            "overall:variants": AllBut(["linen_nojit"]),
            "sync:variants": AllBut(["linen_nojit"]),
            "compile:variants": AllBut(["linen_nojit"]),
            "sync:sizes": ["s"],
            "compile:envs": ["CartPole-v1"],
        },
        "repeats_in": {"compile": 1, "sync": 3},
        "groups": [
            {"experiments": ["overall", "stacks"], "envs": ["CartPole-v1"], "seeds": 3},
            {
                "algorithm": "sac",
                "experiments": ["overall"],
            },  # (a group takes its algorithm's runs only: ppo's unless it says)
            {"algorithm": "td3", "experiments": ["overall"]},
            {"experiments": ["overall"], "envs": ["Breakout-MinAtar"], "seeds": 3},
            {"experiments": ["sync"]},
            {"experiments": ["compile"]},
            {"experiments": ["overall", "stacks"]},
        ],
        "part_minutes": 8,
        "timeout": 300,  # five times a torch_compile run's estimate: a hung run costs a part little
        "settings_in_overall": True,
        "offpolicy_presets": ("sac-gpu", "td3-gpu"),
    },
    # Each script's default config (819200 steps) on CartPole-v1, Acrobot-v1 and Pendulum-v1 (continuous actions, with
    # its ENV_FLAGS), seeds 1-10: enough for rliable's interval estimates (plot.py). On 2 CPU cores a run takes about
    # 20 s (JAX) or 50-75 s (torch, torch_compile) on CartPole-v1, about 30 s (JAX), 110 s (torch) and 230 s
    # (torch_compile) on Pendulum-v1, but about 37 minutes for linen_nojit, which runs seeds 1-3 on CartPole-v1.
    "learn": {
        "experiments": ["learn"],
        "repeats": 10,
        "timeout": 3600,
        "learn_envs": ["CartPole-v1", "Acrobot-v1", "Pendulum-v1"],
        "max_seeds": {"linen_nojit": 3},
        "restrict": {"linen_nojit:envs": ["CartPole-v1"]},
    },
    # A hyperparameter search's cost in each framework (studies.search's PPO on CartPole-v1: 25 iterations, 204,800 env
    # steps a trial): one configuration a run, every variant but linen_nojit (eager: minutes a trial), beside a batch
    # of 8 and of 64 in each JAX script, 5 blocks. A block takes about 13 minutes on 2 CPU cores, most of it the batches
    # of 64.
    "search": {
        "envs": ["CartPole-v1"],
        "sizes": ["s"],
        "experiments": ["search"],
        "repeats": 5,
        "restrict": {"search:variants": AllBut(["linen_nojit"])},
        "timeout": 1800,
    },
    # Not a sweep: bench/gpu_check.py runs every variant for 3 short iterations on CartPole-v1 with every check on
    # (device per framework, compilations after iteration 0, host syncs trapped) and prints one table; it fails if
    # any check does. A few minutes on 2 CPU cores, where it runs the CPU's checks.
    "gpu-check": {
        "gpu_check": True
    },  # SAC (sac_*.py): each variant's steady iteration in interleaved blocks, on the off-policy cells (SAC_CELLS), CleanRL's
    # settings but 1000 random steps before learning (5000 cost a torch run seconds and change no iteration's work).
    "sac": {
        "algorithm": "sac",
        "experiments": ["overall"],
        "envs": ["Pendulum-v1", "MountainCarContinuous-v0"],
        "sizes": ["c", "s"],
        "repeats": 14,  # blocks of each cell (MountainCarContinuous-v0: 3, the full buffer 5): about 4 h on 2 cores
        "iterations": 11,  # a steady time over 10, as the gpu preset's
        "timeout": 900,
    },
    # SAC's cells on one GPU: the sac preset's, torch.compile with CUDA graphs beside every variant in each block, 3
    # blocks (a GPU held alone drifts less than this CPU), in parts of at most 8 minutes by the estimate, as the gpu
    # preset's: `--part next` goes on where the last part stopped.
    "sac-gpu": {
        "algorithm": "sac",
        "for_gpu": True,
        "experiments": ["overall"],
        "envs": ["Pendulum-v1", "MountainCarContinuous-v0"],
        "sizes": ["c", "s"],
        "repeats": 3,
        "iterations": 11,
        "settings_in_overall": True,
        "part_minutes": 8,
        "timeout": 600,
    },
    # Every SAC variant learns Pendulum-v1 (size s, 20000 steps, the first 1000 random), seeds 1-10: the IQM and
    # probability of improvement over Linen (plot.py), and the seconds to a return of -200.
    "sac-learn": {
        "algorithm": "sac",
        "experiments": ["learn"],
        "learn_envs": ["Pendulum-v1"],
        "repeats": 10,
        "timeout": 1800,
    },
    # Which of gymnax's other continuous environments SAC learns: Linen and NNX (which draw the same random numbers:
    # their agreement checks the program, not learning) and eager torch (its own draws), size s, 50000 steps of which
    # CleanRL's 5000 random, seeds 1-5. A run learns what its final return has over the random steps' (plot.py).
    "sac-envs": {
        "algorithm": "sac",
        "experiments": ["learn"],
        "learn_envs": ["MountainCarContinuous-v0", "Reacher-misc", "Swimmer-misc", "PointRobot-misc"],
        "variants": ["jax_linen", "jax_nnx", "torch"],
        "learn_flags": ["--total-timesteps", 50000, "--learning-starts", 5000],
        "repeats": 5,
        "timeout": 1800,
    },
    # TD3 (td3_*.py), on SAC's structure: TD3_CELLS with the sac preset's settings, 10 blocks (about 2 h on 2 cores).
    "td3": {
        "algorithm": "td3",
        "experiments": ["overall"],
        "cells": TD3_CELLS,
        "envs": ["Pendulum-v1"],
        "sizes": ["c", "s"],
        "repeats": 10,
        "iterations": 11,
        "timeout": 900,
    },
    # TD3's cells on one GPU, as sac-gpu's: torch.compile with CUDA graphs beside every variant in each block, 3 blocks,
    # in parts of at most 8 minutes (`--part next`).
    "td3-gpu": {
        "algorithm": "td3",
        "for_gpu": True,
        "experiments": ["overall"],
        "cells": TD3_CELLS,
        "envs": ["Pendulum-v1"],
        "sizes": ["c", "s"],
        "repeats": 3,
        "iterations": 11,
        "settings_in_overall": True,
        "part_minutes": 8,
        "timeout": 600,
    },
    # Every TD3 variant learns Pendulum-v1 as sac-learn's: size s, 20000 steps, the first 1000 random, seeds 1-10.
    "td3-learn": {
        "algorithm": "td3",
        "experiments": ["learn"],
        "learn_envs": ["Pendulum-v1"],
        "repeats": 10,
        "timeout": 1800,
    },
    # DQN (dqn_*.py): DQN_CELLS with the sac preset's settings, 10 blocks.
    "dqn": {
        "algorithm": "dqn",
        "experiments": ["overall"],
        "cells": DQN_CELLS,
        "envs": ["CartPole-v1", "FourRooms-misc"],
        "sizes": ["d"],
        "repeats": 10,
        "iterations": 11,
        "timeout": 900,
    },
    # DQN_SCALING_CELLS: Linen's compiled loop, torch on gymnax and on Gymnasium's stack (in turn, a process per env),
    # eager and compiled, 5 blocks.
    "dqn-scaling": {
        "algorithm": "dqn",
        "experiments": ["overall"],
        "cells": DQN_SCALING_CELLS,
        "variants": ["jax_linen", "torch", "torch_compile"],
        "envs": ["FourRooms-misc"],
        "sizes": ["d"],
        "repeats": 5,
        "iterations": 11,
        "timeout": 900,
    },
    # A hyperparameter search's cost in each DQN framework (studies.search's DQN on FourRooms-misc: CleanRL's settings,
    # 100,000 env steps a trial of which 10,000 random): one configuration a run, every variant, beside a batch of 8
    # and of 64 in each JAX script, 5 blocks.
    "search-dqn": {
        "algorithm": "dqn",
        "experiments": ["search"],
        "learn_size": "d",
        "repeats": 5,
        "timeout": 1800,
    },
    # Every DQN variant learns CartPole-v1 and FourRooms-misc with CleanRL's dqn.py settings (its network, 500000
    # steps of which 10000 random), seeds 1-10.
    "dqn-learn": {
        "algorithm": "dqn",
        "experiments": ["learn"],
        "learn_envs": ["CartPole-v1", "FourRooms-misc"],
        "learn_flags": ["--total-timesteps", 500000, "--learning-starts", 10000],
        "learn_size": "d",
        "repeats": 10,
        "timeout": 3600,
    },
    # Which of gymnax's other continuous environments TD3 learns, every variant, as sac-envs': size s, 50000 steps of
    # which 5000 random (SAC's; CleanRL's TD3 waits 25000, half such a run), seeds 1-5. PointRobot-misc, a meta-RL task
    # that no memoryless policy solves (SAC's set), is left out.
    "td3-envs": {
        "algorithm": "td3",
        "experiments": ["learn"],
        "learn_envs": ["Reacher-misc", "Swimmer-misc", "MountainCarContinuous-v0"],
        "learn_flags": ["--total-timesteps", 50000, "--learning-starts", 5000],
        "repeats": 5,
        "timeout": 1800,
    },
}
SAC_LEARNING_STARTS = 1000  # random steps before learning, in every SAC preset's runs
SAC_LEARN_FLAGS = ["--total-timesteps", 20000, "--learning-starts", SAC_LEARNING_STARTS]  # sac-learn, at size s
