"""Does ppo_torch_compile.py train as ppo_torch.py does? Checked inside a whole training run.

    python -m studies.torch_compile_check --seed 3 --out results/studies/torch-compile-check/seed3.json

Runs ppo_torch_compile.py's train() unchanged (the same random numbers, the same result), and:
- runs ppo_torch.py's eager minibatch step (fused Adam) beside every compiled one, in lockstep from
  the same parameters, Adam state and learning rate at the start of each iteration's update, on the
  same minibatches; records how far the two sets of parameters are apart, and the samples whose side
  of PPO's clips differs between the two (where the loss's gradient jumps, so that two runs a float
  rounding apart part ways);
- records the learning rate the compiled optimizer holds against the schedule's;
- records, for every action the compiled policy step sampled, the probability the actor gave it, to
  check that the compiled sampler draws from softmax(logits): per probability bin the observed
  frequency against the mean probability (z-score), and the correlation of the sampling residuals
  from one step to the next and between neighbouring environments.
Prints a summary and writes a JSON record (atomically).
"""

import argparse
import copy
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
from bench.load_script import load
from bench.outputs import check_out, write_atomic


def closure(compiled_function) -> dict:
    """The variables a torch.compile'd closure of the script closes over (agent, optimizer)."""
    fn = compiled_function._torchdynamo_orig_callable
    return dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))


def eager_copy(agent, optimizer, lr):
    """A copy of agent with ppo_torch.py's eager Adam (fused) holding optimizer's state, at rate lr."""
    import torch

    agent = copy.deepcopy(agent)
    eager_optimizer = torch.optim.Adam(agent.parameters(), lr=lr.clone(), eps=1e-5, fused=True)
    eager_optimizer.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    for group in eager_optimizer.param_groups:  # the state dict carries the compiled optimizer's options
        group.update({"lr": lr.clone(), "foreach": None, "capturable": False, "fused": True})
    return agent, eager_optimizer


def clip_sides(agent, batch, index, args):
    """Per sample of the minibatch, whether each of PPO's two clips cuts its gradient off: the
    surrogate's (the ratio beyond 1 +- clip_coef in the advantage's direction) and the value's (the
    value moved more than clip_coef from the old one, and the clipped error is the larger)."""
    import torch

    with torch.no_grad():
        obs, action, logprob, value, advantage, returns = (x[index] for x in batch)
        policy, new_value = agent(obs)
        ratio = (policy.log_prob(action) - logprob).exp()
        surrogate = ((ratio > 1 + args.clip_coef) & (advantage > 0)) | ((ratio < 1 - args.clip_coef) & (advantage < 0))
        clipped_value = value + (new_value - value).clamp(-args.clip_coef, args.clip_coef)
        value_error, clipped_error = (new_value - returns) ** 2, (clipped_value - returns) ** 2
        value_side = ((new_value - value).abs() > args.clip_coef) & (clipped_error > value_error)
    return torch.stack([surrogate, value_side])


def relative(a, b) -> float:
    """||a - b|| / ||b|| over all parameters at once (biases start at 0: alone, their relative
    differences would be large while tiny)."""
    import torch

    a, b = (torch.cat([p.detach().flatten() for p in ps]) for ps in (a, b))
    return float((a - b).norm() / b.norm())


def sampler_statistics(samples) -> dict:
    import torch

    probs = torch.stack([p for p, _ in samples]).double()  # (steps, envs, actions)
    actions = torch.stack([a for _, a in samples])
    chosen = torch.nn.functional.one_hot(actions, probs.shape[-1]).double()
    p, hit = probs.flatten().numpy(), chosen.flatten().numpy()
    bins = []
    edges = np.linspace(0, 1, 11)
    for low, high in zip(edges[:-1], edges[1:]):
        inside = (p >= low) & (p < high)
        if inside.sum() >= 100:
            n, mean_p, frequency = int(inside.sum()), float(p[inside].mean()), float(hit[inside].mean())
            z = (frequency - mean_p) / np.sqrt(max(np.mean(p[inside] * (1 - p[inside])), 1e-12) / n)
            bins.append(
                {"bin": [float(low), float(high)], "n": n, "mean_probability": mean_p, "frequency": frequency, "z": float(z)}
            )
    residual = ((chosen - probs) / (probs * (1 - probs)).clamp_min(1e-6).sqrt())[..., 0].numpy()  # action 0's
    return {
        "draws": int(actions.numel()),
        "bins": bins,
        "max_abs_z": max(abs(b["z"]) for b in bins),
        "lag1_correlation": float(np.mean(residual[1:] * residual[:-1]) / np.mean(residual**2)),
        "cross_env_correlation": float(np.mean(residual[:, 1:] * residual[:, :-1]) / np.mean(residual**2)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=100, help="iterations of the default config")
    parser.add_argument("--out", help="JSON record to write")
    args = parser.parse_args(argv)
    if args.out:
        check_out(args.out)
    if args.iterations <= 0:
        print(f"error: --iterations must be positive; got {args.iterations}", file=sys.stderr)
        return 2
    compiled = load("ppo_torch_compile.py", "benchback_torch_compile")
    import torch

    per_iteration, samples = [], []
    rollout = compiled.rollout

    def update(learn_minibatch, batch, run_args):
        """ppo_torch_compile.update (the same permutations, drawn as it draws them), with the eager step beside."""
        agent, optimizer = closure(learn_minibatch)["agent"], closure(learn_minibatch)["optimizer"]
        lr = optimizer.param_groups[0]["lr"]
        eager_agent, eager_optimizer = eager_copy(agent, optimizer, lr)
        batch_size = batch.advantage.shape[0]
        minibatch_size = batch_size // run_args.num_minibatches
        metrics, flips, difference, before_first_flip = 0.0, 0, 0.0, None
        for _ in range(run_args.update_epochs):
            perm = torch.randperm(batch_size, device=batch.advantage.device)
            for start in range(0, batch_size, minibatch_size):
                index = perm[start : start + minibatch_size]
                differ = int(
                    (clip_sides(agent, batch, index, run_args) != clip_sides(eager_agent, batch, index, run_args)).sum()
                )
                if differ and before_first_flip is None:
                    before_first_flip = difference
                flips += differ
                metrics = metrics + learn_minibatch(batch, index)
                compiled.minibatch_step(eager_agent, eager_optimizer, batch, index, run_args)
                difference = relative(agent.parameters(), eager_agent.parameters())
        per_iteration.append(
            {
                "learning_rate": float(lr),
                "parameters_rel_diff": difference,
                "parameters_rel_diff_before_first_flip": difference if before_first_flip is None else before_first_flip,
                "clip_side_flips": flips,
            }
        )
        return dict(zip(compiled.LOSS_METRICS, metrics / (run_args.update_epochs * run_args.num_minibatches)))

    def checked_rollout(carry, env_step, envs, num_steps):
        """train()'s rollout with its env_step as train writes it, each action's probabilities kept beside it."""
        step_cells = env_step.__closure__ or ()
        sample = dict(zip(env_step.__code__.co_freevars, (c.cell_contents for c in step_cells)))["sample"]
        agent = closure(sample)["agent"]

        def checked_env_step(carry):
            action, logprob = sample(carry.obs)
            with torch.no_grad():
                samples.append((agent.policy(carry.obs).logits.softmax(-1), action.clone()))
            env_state, obs, output = envs.step(carry.env_state, action)
            return compiled.Carry(env_state, obs), compiled.Transition(carry.obs, action, logprob, *output)

        return rollout(carry, checked_env_step, envs, num_steps)

    compiled.update, compiled.rollout = update, checked_rollout
    run_args = compiled.Args(
        seed=args.seed,
        cuda=False,
        tensorboard=False,
        quiet=True,
        total_timesteps=args.iterations * compiled.Args.num_envs * compiled.Args.num_steps,
    )
    record = compiled.train(run_args)
    schedule = [run_args.learning_rate * (1 - i / args.iterations) for i in range(args.iterations)]
    result = {
        "seed": args.seed,
        "iterations": args.iterations,
        "final_return": record["final_return"],
        "max_parameters_rel_diff_before_first_flip": max(r["parameters_rel_diff_before_first_flip"] for r in per_iteration),
        "median_parameters_rel_diff": float(np.median([r["parameters_rel_diff"] for r in per_iteration])),
        "iterations_with_flips": sum(r["clip_side_flips"] > 0 for r in per_iteration),
        "max_learning_rate_rel_error": max(abs(r["learning_rate"] - s) / s for r, s in zip(per_iteration, schedule)),
        "sampler": sampler_statistics(samples),
        "per_iteration": per_iteration,
    }
    sampler = result["sampler"]
    print(
        f"seed {args.seed}: final_return {record['final_return']:.1f}. Each update beside ppo_torch.py's eager one from "
        f"the same start: parameters at most {result['max_parameters_rel_diff_before_first_flip']:.1e} apart (relative L2) "
        f"until a sample's clip side differs between the two ({result['iterations_with_flips']} of {args.iterations} "
        f"updates), {result['median_parameters_rel_diff']:.1e} at the median update's end. Learning rate off the "
        f"schedule by at most {result['max_learning_rate_rel_error']:.1e}. Sampler: {sampler['draws']} draws, largest "
        f"|z| over probability bins {sampler['max_abs_z']:.2f}, residual correlation step to step "
        f"{sampler['lag1_correlation']:+.4f}, env to env {sampler['cross_env_correlation']:+.4f}."
    )
    if args.out:
        write_atomic(args.out, json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
