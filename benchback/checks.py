"""The scripts' input checks, run before anything is built or written: bad input is a UsageError, which cli.main
reports in one line with exit code 2. PPO's (check_ppo_args), the off-policy scripts' (check_offpolicy_args), and the parts they share."""

import dataclasses
import json
import math
import os

from benchback import gymnax_envs


class UsageError(ValueError):
    """Bad input: reported in one line, exit code 2, nothing written."""


def parse_hidden(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or not all(p.isdigit() for p in parts) or min(int(p) for p in parts) <= 0:
        raise UsageError(f"--hidden must be comma-separated positive integers such as 64,64; got {text!r}")
    return tuple(int(p) for p in parts)


def check_writable(path: str) -> None:
    """--json-out must name a file that can be written: found out before the run, not after it. The tools' rule
    (bench/outputs.py): no empty path, no directory's name ("new/"), no file its mode makes read-only."""
    if not path:
        raise UsageError("--json-out is empty; name a file, such as 'run.json'")
    if os.path.isdir(path) or path.endswith(os.sep):  # "new/" names a directory, absent or not
        what = "is" if os.path.isdir(path) else "names"
        raise UsageError(
            f"--json-out {path!r} {what} a directory; name a file in it, such as {os.path.join(path, 'run.json')!r}"
        )
    if os.path.exists(path) and not (os.access(path, os.W_OK) and os.stat(path).st_mode & 0o222):  # root: the mode
        raise UsageError(f"--json-out {path!r} is read-only: make it writable, or name another file")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(parent):  # write_json_atomic creates the missing directories below the nearest that exists
        if os.path.exists(parent):
            raise UsageError(f"--json-out {path!r} cannot be written: {parent!r} is a file")
        parent = os.path.dirname(parent)
    probe = os.path.join(parent, f".tmp-{os.getpid()}.json")
    try:
        open(probe, "w").close()
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"--json-out {path!r} cannot be written: {e.strerror} in {parent!r}") from None


SEEDS = 2**32  # the seeds every generator here takes (numpy's, jax's keys and torch's alike): 0 .. 2**32 - 1


def check_limits(args) -> None:
    """A seed every generator takes, and networks whose parameters fit in this machine's memory: beyond either a run
    fails part way with a traceback (or after asking the allocator for terabytes)."""
    last = args.seed + getattr(args, "num_seeds", 1) - 1  # --num-seeds trains seed .. last; the torch scripts one seed
    if args.seed < 0 or last >= SEEDS:
        raise UsageError(f"--seed must be between 0 and {SEEDS - 1}, and so must every seed --num-seeds adds; got {args.seed}")
    hidden = parse_hidden(args.hidden)
    weights = sum(hidden) + sum(a * b for a, b in zip(hidden, hidden[1:]))  # a network's, its input and output aside
    needed = 2 * weights * 4 * 4  # actor and critic, float32: parameters, gradients and Adam's two moments
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if needed > memory:
        raise UsageError(
            f"--hidden {args.hidden} needs {needed / 2**30:.3g} GiB for its networks' parameters alone; this machine"
            f" has {memory / 2**30:.3g} GiB"
        )


def check_coefficients(args) -> None:
    """PPO's coefficients in their ranges: out of them, training would run on quietly to a wrong result."""
    ranges = {  # what each must be: nan passes none of these tests
        "positive": (lambda x: 0 < x < float("inf"), ("learning_rate", "clip_coef", "max_grad_norm")),
        "0 or more": (lambda x: 0 <= x < float("inf"), ("ent_coef", "vf_coef")),
        "between 0 and 1": (lambda x: 0 <= x <= 1, ("gamma", "gae_lambda")),
    }
    for must_be, (holds, names) in ranges.items():
        for name in names:
            if not holds(getattr(args, name)):
                raise UsageError(f"--{name.replace('_', '-')} must be {must_be}; got {getattr(args, name)}")


def check_ppo_args(args) -> tuple[int, ...]:
    """What every PPO script checks before anything is built or written: sizes, coefficients, the batch's shape, the
    output path, the limits and the environment id (named with the ids it can train). Returns the hidden sizes."""
    hidden = parse_hidden(args.hidden)
    positive = ("total_timesteps", "num_seeds", "num_envs", "num_steps", "num_minibatches", "update_epochs")
    for name in (name for name in positive if hasattr(args, name)):  # the torch scripts train one seed
        if getattr(args, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive; got {getattr(args, name)}")
    check_coefficients(args)
    batch_size = args.num_envs * args.num_steps
    if batch_size % args.num_minibatches:
        raise UsageError(f"num_envs * num_steps = {batch_size} is not divisible by --num-minibatches {args.num_minibatches}")
    if args.total_timesteps < batch_size:
        raise UsageError(f"--total-timesteps {args.total_timesteps} is smaller than one batch of {batch_size} steps")
    if args.json_out is not None:
        check_writable(args.json_out)
    check_limits(args)
    check_backend(args)
    check_env_id(args.env_id)
    if getattr(args, "configs", None):  # the JAX scripts' search batch
        if args.num_seeds > 1 or args.sync_timing or args.rollout == "python":
            raise UsageError(
                "--configs trains its configurations from one seed in one program: it does not combine with --num-seeds,"
                " --sync-timing or --rollout python"
            )
        read_configs(args)
    return hidden


# The hyperparameters a batch of configurations (--configs) may set: numbers the iteration reads, none a shape.
TUNABLE = {
    "ppo": ("learning_rate", "gamma", "gae_lambda", "clip_coef", "ent_coef", "vf_coef"),
    "dqn": ("learning_rate", "gamma", "exploration_fraction", "target_network_frequency"),
}


def read_configs(args) -> list:
    """--configs' file: a JSON list of one or more configurations, each {name: number} over the same names of
    TUNABLE's (the algorithm's whose names the script's Args have), each checked as the script's own arguments would
    be; a whole number where the Args' default is one. The configurations, or a UsageError."""
    where = f"--configs {args.configs!r}"
    algorithm = next(a for a, names in TUNABLE.items() if all(hasattr(args, n) for n in names))
    try:
        with open(args.configs) as f:
            configs = json.load(f)
    except OSError as e:
        raise UsageError(f"{where} cannot be read: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"{where} is not JSON: {e}") from None
    if not isinstance(configs, list) or not configs or not all(isinstance(c, dict) and c for c in configs):
        raise UsageError(f"{where} must hold a list of one or more configurations, each {{name: number}}")
    if unknown := sorted({n for c in configs for n in c} - set(TUNABLE[algorithm])):
        raise UsageError(
            f"{where}: {', '.join(unknown)} cannot be set per configuration; these can: {', '.join(TUNABLE[algorithm])}"
        )
    if any(c.keys() != configs[0].keys() for c in configs):
        raise UsageError(f"{where}: every configuration must set the same names, as the first: {', '.join(configs[0])}")
    for i, c in enumerate(configs):
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in c.values()):
            raise UsageError(f"{where}: configuration {i}'s values must be finite numbers; got {c}")
        if wrong := [n for n, v in c.items() if isinstance(getattr(args, n), int) and not isinstance(v, int)]:
            raise UsageError(f"{where}: configuration {i}'s {', '.join(wrong)} must be a whole number; got {c}")
        try:
            if algorithm == "ppo":
                check_coefficients(dataclasses.replace(args, **c))
            else:  # the off-policy checks, over the configuration's numbers (a target period in whole groups of steps)
                check_offpolicy_args(
                    dataclasses.replace(args, **c, json_out=None, configs=None), algorithm.upper(), "discrete"
                )
        except UsageError as e:
            raise UsageError(f"{where}: configuration {i}: {str(e).removeprefix('--')}") from None
    return configs


def check_backend(args) -> None:
    """An --env-backend other than gymnax has torch_ports.py's ids alone, or gymnasium_envs.py's."""
    if getattr(args, "env_backend", "gymnax") == "gymnax":
        return
    from benchback import gymnasium_envs, torch_ports  # only when asked for: they import torch

    ids = torch_ports.IDS if args.env_backend == "torch" else gymnasium_envs.IDS
    if args.env_id not in ids:
        raise UsageError(f"--env-backend {args.env_backend} has {', '.join(ids)}, not --env-id {args.env_id}")


def check_env_id(env_id: str) -> None:
    """An id the scripts can train (gymnax_envs.IDS); otherwise the ids, by their kind of actions."""
    if env_id not in gymnax_envs.IDS:
        kinds = {"discrete": [], "continuous": []}
        for e in gymnax_envs.IDS:
            kinds[gymnax_envs.action_space(e)["kind"]].append(e)
        ids = "; ".join(f"{kind}-action ids: {', '.join(ids)}" for kind, ids in kinds.items())
        raise UsageError(f"unsupported --env-id {env_id!r}; {ids}")


def check_offpolicy_args(args, algorithm: str, actions: str = "continuous") -> tuple[int, ...]:
    """What every off-policy script (SAC's, TD3's, DQN's: `algorithm`, for the message) checks before anything is built
    or written: sizes, coefficients (those its Args have), the output path, the limits and the environment id, which
    must have `actions` (continuous or discrete ones). Returns the hidden sizes."""
    hidden = parse_hidden(args.hidden)
    positive = ("total_timesteps", "num_envs", "steps_per_iteration", "buffer_size", "batch_size")
    positive += ("policy_frequency", "target_network_frequency", "train_frequency")  # those its Args have
    for name in (name for name in positive if hasattr(args, name)):
        if getattr(args, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive; got {getattr(args, name)}")
    for name in ("learning_starts", "updates_per_step"):  # 0 updates a step: the steps alone, what they cost
        if getattr(args, name, 0) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be 0 or more; got {getattr(args, name)}")
    if hasattr(args, "train_frequency"):  # DQN's: an iteration and the target's period hold whole groups of steps
        for name in ("steps_per_iteration", "target_network_frequency"):
            if getattr(args, name) % args.train_frequency:
                raise UsageError(
                    f"--{name.replace('_', '-')} {getattr(args, name)} is not a multiple of --train-frequency"
                    f" {args.train_frequency}"
                )
    if args.buffer_size < args.num_envs:
        raise UsageError(f"--buffer-size {args.buffer_size} is smaller than one step of --num-envs {args.num_envs}")
    if getattr(args, "full_buffer", False) and args.learning_starts == 0:
        raise UsageError("--full-buffer copies the random steps' transitions: it needs --learning-starts above 0")
    ranges = {  # nan passes none of these tests
        "positive": (
            lambda x: 0 < x < float("inf"),
            ("policy_lr", "q_lr", "alpha", "learning_rate", "exploration_fraction"),
        ),
        "between 0 and 1": (lambda x: 0 <= x <= 1, ("gamma", "tau", "start_e", "end_e")),
        "0 or more": (lambda x: 0 <= x < float("inf"), ("policy_noise", "exploration_noise", "noise_clip")),
    }
    for must_be, (holds, names) in ranges.items():
        for name in (name for name in names if hasattr(args, name)):
            if not holds(getattr(args, name)):
                raise UsageError(f"--{name.replace('_', '-')} must be {must_be}; got {getattr(args, name)}")
    random_steps = -(-args.learning_starts // args.num_envs) * args.num_envs  # whole steps of every env
    if args.total_timesteps < random_steps + args.num_envs * args.steps_per_iteration:
        raise UsageError(
            f"--total-timesteps {args.total_timesteps} is smaller than --learning-starts {args.learning_starts} and one"
            f" iteration of num_envs * steps_per_iteration = {args.num_envs * args.steps_per_iteration} steps"
        )
    if args.json_out is not None:
        check_writable(args.json_out)
    check_limits(args)
    check_backend(args)
    check_env_id(args.env_id)
    if gymnax_envs.action_space(args.env_id)["kind"] != actions:
        other = {"continuous": "discrete", "discrete": "continuous"}[actions]
        raise UsageError(f"{algorithm} needs {actions} actions; --env-id {args.env_id} has {other} ones")
    if getattr(args, "configs", None):  # the JAX DQN scripts' search batch
        read_configs(args)
    return hidden
