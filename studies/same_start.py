"""Do the JAX variants run the same PPO? Start them from the same parameters and compare the runs.

    python -m studies.same_start --seeds 36,53 --out results/studies/same-start/same-start.json

A seed draws the same actions, minibatch permutations and env steps in every JAX script; what each
framework draws differently is the network's initial parameters. So, for each seed, with each script's
default config (100 iterations):
  jax_nnx and jax_equinox are trained from the parameters ppo_jax_linen.py initializes for that seed;
  jax_linen is trained from its own parameters with one weight moved by one float32 ulp, which shows how
  far a rounding-sized difference carries in PPO.
Each run's returns are compared with jax_linen's, iteration by iteration (equal: within 1e-4, relative).
Writes one JSON (atomically) with, per seed and setting, both final returns, the number of equal
iterations and the first that differs.
"""

import argparse
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
from bench.load_script import load
from bench.outputs import check_out, write_atomic

QUIET = dict(cuda=False, tensorboard=False, quiet=True)


def with_layers(variant: str, agent, name: str, params: list):
    """The agent with the actor's or critic's layers set to params, [(kernel (in, out), bias), ...]."""
    mlp = getattr(agent, name)
    if variant == "jax_nnx":  # NNX modules are updated in place
        for layer, (kernel, bias) in zip([*mlp.layers, mlp.out], params):
            layer.kernel[...], layer.bias[...] = kernel, bias
        return agent
    import equinox as eqx

    leaves = lambda a: [x for layer in getattr(a, name).layers for x in (layer.weight, layer.bias)]
    return eqx.tree_at(leaves, agent, [x for kernel, bias in params for x in (jnp.asarray(kernel).T, bias)])


def start_from_linen(variant: str, module, linen, seed: int):
    """Make module.train() build its network with the parameters ppo_jax_linen.py's train() draws for seed."""
    build = module.Agent

    def agent_from_linen(obs_dim, hidden, num_actions, continuous, **rngs):
        _, init_key, _ = jax.random.split(jax.random.key(seed), 3)  # the scripts' init key
        params = linen.Agent(hidden, num_actions, continuous).init(init_key, jnp.zeros((1, obs_dim)))["params"]
        agent = build(obs_dim, hidden, num_actions, continuous, **rngs)  # (a log std starts at 0 in every framework)
        for name in ("actor", "critic"):
            dense = [params[name][f"Dense_{i}"] for i in range(len(params[name]))]
            agent = with_layers(variant, agent, name, [(d["kernel"], d["bias"]) for d in dense])
        return agent

    module.Agent = agent_from_linen


def nudge_one_weight(linen):
    """Make linen.train() move its critic's first weight up by one float32 ulp after initializing."""

    class Nudged(linen.Agent):
        def init(self, *args, **kwargs):
            params = super().init(*args, **kwargs)
            kernel = params["params"]["critic"]["Dense_0"]["kernel"]
            up = np.nextafter(kernel[0, 0], np.float32(np.inf), dtype=np.float32)
            params["params"]["critic"]["Dense_0"]["kernel"] = kernel.at[0, 0].set(up)
            return params

    linen.Agent = Nudged


def compare(reference: dict, record: dict) -> dict:
    a, b = (np.array(r["episodic_return"], dtype=float) for r in (reference, record))
    equal = np.isclose(a, b, rtol=1e-4, equal_nan=True)
    return {
        "final_return": record["final_return"],
        "linen_final_return": reference["final_return"],
        "equal_iterations": int(equal.sum()),
        "first_different_iteration": None if equal.all() else int(np.argmin(equal)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="36,53", help="comma-separated seeds")
    parser.add_argument("--out", default="benchmark_out/studies/same-start.json")  # the committed result names its --out
    parser.add_argument("--iterations", type=int, default=100, help="iterations of the default config")
    args = parser.parse_args(argv)
    check_out(args.out)
    if args.iterations <= 0:
        print(f"error: --iterations must be positive; got {args.iterations}", file=sys.stderr)
        return 2
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        print(f"error: --seeds must be comma-separated integers; got {args.seeds!r}", file=sys.stderr)
        return 2
    linen = load("ppo_jax_linen.py", "benchback_jax_linen")
    config = dict(QUIET, total_timesteps=args.iterations * linen.Args.num_envs * linen.Args.num_steps)
    result = {}
    for seed in seeds:
        reference = linen.train(linen.Args(seed=seed, **config))
        runs = {}
        for variant in ("jax_nnx", "jax_equinox"):
            module = load(f"ppo_{variant}.py", f"benchback_{variant}_{seed}")
            start_from_linen(variant, module, linen, seed)
            runs[f"{variant} from Linen's parameters"] = module.train(module.Args(seed=seed, **config))
        nudged = load("ppo_jax_linen.py", f"benchback_jax_linen_nudged_{seed}")
        nudge_one_weight(nudged)
        runs["jax_linen, one weight +1 ulp"] = nudged.train(nudged.Args(seed=seed, **config))
        result[str(seed)] = {setting: compare(reference, record) for setting, record in runs.items()}
        print(f"seed {seed}: " + "; ".join(f"{k}: {v}" for k, v in result[str(seed)].items()), flush=True)
    write_atomic(args.out, json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
