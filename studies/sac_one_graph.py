"""Does torch.compile pay on a CPU once a SAC gradient step is one graph?

sac_torch_compile.py compiles its updates as LeanRL does: whole functions around `loss.backward()` and
`optimizer.step()`. Dynamo does not trace either: the backward breaks the graph ("Tensor.backward() ... when
trace_autograd_ops is off") and torch.optim's step breaks it twice on purpose (`torch._dynamo.graph_break()` in
torch/optim/optimizer.py's `_use_grad_for_differentiable`), so a step runs about 16 compiled regions, each with its
guard checks (studies/sac_compile.py). Here the same script runs with its two update functions written so that
dynamo sees all of a step: the loss's gradients from `torch.func.grad_and_value` over the parameters (traced into the
graph with the forward), and Adam as torch.optim's functional `adam` (torch/optim/adam.py, foreach and capturable:
the same arithmetic as the script's optimizer) on the optimizers' own state. Nothing else changes: the same networks,
batches, noise and order; tests/test_sac_one_graph.py checks that one update of each form agrees with the script's.

Three forms, each run a process of its own calling the script's train(): eager PyTorch (sac_torch.py), the script
(sac_torch_compile.py) and its one-graph form; Pendulum-v1, 64x64, one env, UTD 1, 500 steps an iteration, 6
iterations (a steady time over 5). Each block runs the three, the order rotated from block to block; per form, its
steady iteration over eager PyTorch's in the same block, over the blocks the geometric mean with a 95% bootstrap
interval (report.timing's), and the one-graph form over the script's.

    python -m studies.sac_one_graph --blocks 5 --out results/studies/sac-compile/one-graph.json
"""

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from bench.load_script import load
from bench.outputs import check_out, write_atomic
from bench.run_records import cpu_model
from report.timing import MIN_BLOCKS, geometric_ratio

FORMS = {"eager": "sac_torch.py", "compiled": "sac_torch_compile.py", "one_graph": "sac_torch_compile.py"}
SETTINGS = dict(env_id="Pendulum-v1", hidden="64,64", num_envs=1, updates_per_step=1, steps_per_iteration=500)
ITERATIONS = 6
QUICK = dict(hidden="16,16", steps_per_iteration=20, buffer_size=2000)  # the tests': tiny runs, one block


def settings(quick: bool) -> dict:
    chosen = {**SETTINGS, "learning_starts": 1000, **(QUICK if quick else {})}
    total = chosen["learning_starts"] + chosen["steps_per_iteration"] * (2 if quick else ITERATIONS)
    return {**chosen, "total_timesteps": total, "cuda": False, "tensorboard": False, "quiet": True}


# ---------------------------------------------------------------- the one-graph updates
def one_graph(module):
    """module's update_critic and update_actor (sac_torch_compile.py's, same signatures) with gradients from
    torch.func.grad_and_value and torch.optim's functional Adam: no backward and no optimizer.step to break the graph."""
    import torch
    from torch.func import functional_call, grad_and_value
    from torch.optim.adam import adam  # torch.optim's own arithmetic, called as a function (dynamo traces it)

    def adam_step(optimizer, params: list, grads: list):
        """One step of `optimizer` (Adam, foreach) on its own state, created as its first step would; capturable (the
        script's setting) where compiled, which torch.optim refuses eagerly on a CPU."""
        group = optimizer.param_groups[0]
        for p in params:
            if not optimizer.state[p]:  # the state Adam's _init_group makes, capturable: the step a tensor
                zeros = lambda: torch.zeros_like(p, memory_format=torch.preserve_format)
                optimizer.state[p].update(step=torch.zeros((), device=p.device), exp_avg=zeros(), exp_avg_sq=zeros())
        state = [optimizer.state[p] for p in params]
        beta1, beta2 = group["betas"]
        with torch.no_grad():
            adam(
                params, grads, [s["exp_avg"] for s in state], [s["exp_avg_sq"] for s in state], [],
                [s["step"] for s in state], foreach=True, capturable=torch.compiler.is_compiling(), amsgrad=False, beta1=beta1, beta2=beta2,
                lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"], maximize=False,
            )  # fmt: skip

    def update_critic(agent, optimizers, batch, noise, alpha, args) -> dict:
        target = module.q_target(agent, batch, noise, alpha, args)
        params = {name: dict(getattr(agent, name).named_parameters()) for name in ("qf1", "qf2")}

        def loss(params):
            q1, q2 = (functional_call(getattr(agent, n), params[n], (batch.obs, batch.action)) for n in ("qf1", "qf2"))
            qf1_loss, qf2_loss = ((q1 - target) ** 2).mean(), ((q2 - target) ** 2).mean()
            info = dict(qf1_values=q1.mean(), qf2_values=q2.mean(), qf1_loss=qf1_loss, qf2_loss=qf2_loss)
            return qf1_loss + qf2_loss, info | dict(qf_loss=(qf1_loss + qf2_loss) / 2)

        grads, (_, info) = grad_and_value(loss, has_aux=True)(params)
        flat = lambda tree: [x for n in ("qf1", "qf2") for x in tree[n].values()]
        adam_step(optimizers.q, flat(params), flat(grads))
        return {k: v.detach() for k, v in info.items()}

    def update_actor(agent, optimizers, obs, noise, alpha_noise, alpha, target_entropy, args) -> dict:
        params = dict(agent.actor.named_parameters())

        def loss(params):  # the script's actor_loss, the actor's parameters an argument
            mean, log_std = functional_call(agent.actor, params, (obs,))
            action, log_pi = module.tanh_gaussian(mean, log_std, noise, agent.actor.action_scale, agent.actor.action_bias)
            q = lambda qf: functional_call(qf, {k: v.detach() for k, v in qf.named_parameters()}, (obs, action))
            return (alpha * log_pi - torch.min(q(agent.qf1), q(agent.qf2))).mean()

        grads, actor_loss = grad_and_value(loss)(params)
        adam_step(optimizers.actor, list(params.values()), list(grads.values()))
        info = dict(actor_loss=actor_loss.detach(), alpha=alpha.clone(), alpha_loss=torch.zeros((), device=obs.device))
        if args.autotune:
            with torch.no_grad():
                _, log_pi = agent.actor.get_action(obs, alpha_noise)
            loss_of = lambda log_alpha: module.alpha_loss(log_alpha, log_pi, target_entropy)
            grad, alpha_loss = grad_and_value(loss_of)(agent.log_alpha.detach())
            adam_step(optimizers.alpha, [agent.log_alpha], [grad])
            with torch.no_grad():
                alpha.copy_(agent.log_alpha.exp())
            info |= dict(alpha_loss=alpha_loss.detach())
        return info

    return update_critic, update_actor


def loaded(form: str):
    """The script of `form`, freshly loaded; the one-graph form with its two updates replaced."""
    module = load(FORMS[form], f"sac_one_graph_{form}")
    if form == "one_graph":
        for name in ("update_critic", "update_actor", "q_target", "tanh_gaussian", "alpha_loss"):
            assert hasattr(module, name), f"{FORMS[form]} has no {name}: this study needs updating"
        module.update_critic, module.update_actor = one_graph(module)
    return module


# ---------------------------------------------------------------- the runs
def one(form: str, quick: bool, out: str) -> None:
    """Train once in this process; write what the study keeps of the record, and what dynamo counted."""
    module = loaded(form)
    record = module.train(module.Args(**settings(quick)))
    made = {k: record[k] for k in ("iteration_durations", "compiles_after_first_iteration", "episodic_return")}
    made |= {k: record[k] for k in ("env_steps", "grad_steps", "param_count")}
    if form != "eager":
        counters = module.torch._dynamo.utils.counters
        made |= {"graph_breaks": sum(counters["graph_break"].values()), "graphs": counters["stats"]["unique_graphs"]}
    write_atomic(out, json.dumps({"form": form, **made}) + "\n")


def timed(form: str, quick: bool, tmp: str) -> dict:
    out = os.path.join(tmp, f"{form}.json")
    command = [sys.executable, "-m", "studies.sac_one_graph", "--one", form, "--json", out, *["--quick"] * quick]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"studies/sac_one_graph.py: the {form} run failed:\n{proc.stderr[-3000:]}")
    with open(out) as f:
        run = json.load(f)
    if run["compiles_after_first_iteration"]:
        raise SystemExit(f"studies/sac_one_graph.py: the {form} run compiled after iteration 0: its times are not steady")
    return run | {"steady_s": statistics.median(run["iteration_durations"][1:])}


def ratio(per_block) -> dict:
    """The geometric mean of per-block ratios, its 95% bootstrap interval (report.timing's) and the verdict."""
    mean, low, high = geometric_ratio(per_block)
    if len(per_block) < MIN_BLOCKS:
        verdict = "too few blocks"
    else:
        verdict = "slower" if low > 1 else "faster" if high < 1 else "no difference detected"
    return {"per_block": list(per_block), "ratio": mean, "ci": [low, high], "verdict": verdict}


def summary(runs: list) -> dict:
    steady = {f: [r["steady_s"] for r in runs if r["form"] == f] for f in FORMS}
    over = lambda a, b: ratio([x / y for x, y in zip(steady[a], steady[b])])
    return {
        "steady_s": steady,
        "compiled_over_eager": over("compiled", "eager"),
        "one_graph_over_eager": over("one_graph", "eager"),
        "one_graph_over_compiled": over("one_graph", "compiled"),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=5, help="blocks, each running the three forms (default 5)")
    parser.add_argument("--quick", action="store_true", help="tiny runs, one block (the tests')")
    parser.add_argument("--out", help="write the result (JSON) here")
    parser.add_argument("--one", choices=list(FORMS), help="run one training (the study's runs)")
    parser.add_argument("--json", help="with --one: where its run writes what the study keeps")
    parser.error = lambda message: sys.exit(print(f"error: studies/sac_one_graph.py: {message}", file=sys.stderr) or 2)
    a = parser.parse_args(argv)
    if a.blocks < 1 or (a.one and not a.json):
        parser.error("--blocks must be 1 or more" if a.blocks < 1 else "--one needs --json PATH")
    if a.one:
        check_out(a.json, "--json")
        one(a.one, a.quick, a.json)
        return 0
    if a.out:
        check_out(a.out, "--out")
    blocks, order, runs = 1 if a.quick else a.blocks, list(FORMS), []
    with tempfile.TemporaryDirectory() as tmp:
        for block in range(blocks):
            for form in order[block % 3 :] + order[: block % 3]:
                run = timed(form, a.quick, tmp)
                runs.append({"block": block + 1, **run})
                print(f"block {block + 1}/{blocks}, {form}: {run['steady_s']:.4f} s", flush=True)
    if len({(r["env_steps"], r["grad_steps"], r["param_count"]) for r in runs}) != 1:
        raise SystemExit("studies/sac_one_graph.py: the forms did different work (steps, updates or parameters)")
    result = {
        "cpu": cpu_model(),
        "settings": {**settings(a.quick), "blocks": blocks},
        "versions": {name: importlib.metadata.version(name) for name in ("torch", "jax")},
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "runs": runs,
        **summary(runs),
    }
    if a.out:
        write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    for name in ("compiled_over_eager", "one_graph_over_eager", "one_graph_over_compiled"):
        r = result[name]
        print(f"{name}: {r['ratio']:.3f} {r['ci']} {r['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
