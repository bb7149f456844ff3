"""GAE, the PPO loss, the Gaussian policy and --hidden parsing of every variant against plain NumPy loops and scipy."""

import numpy as np
import pytest

from benchback.checks import UsageError, parse_hidden
from conftest import framework, load, loss_and_output_grads, make_batch, to_native, to_numpy
from reference import gae_loop, ppo_loss_loop


def random_trajectory(rng, num_steps=64, num_envs=5):
    terminated = rng.random((num_steps, num_envs)) < 0.05
    truncated = (rng.random((num_steps, num_envs)) < 0.05) & ~terminated
    truncated[num_steps // 2, 0] = terminated[num_steps // 2, 0] = True  # both at once: termination wins
    return dict(
        rewards=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        values=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        bootstrap_values=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        terminated=terminated,
        truncated=truncated,
    )


@pytest.mark.parametrize("num_steps", [64, 37, 1])  # the torch scripts solve GAE by doubling: any length
def test_gae_matches_numpy_loop(variant, num_steps):
    module = load(variant)
    data = random_trajectory(np.random.default_rng(0), num_steps=num_steps)
    data["terminated"][0, 1], data["truncated"][-1, 2] = True, True  # an end at the first step and at the last
    assert data["truncated"].any() and data["terminated"].any()
    advantages, returns = module.compute_gae(
        **{k: to_native(variant, v) for k, v in data.items()}, gamma=0.99, gae_lambda=0.95
    )
    expected_adv, expected_ret = gae_loop(**data, gamma=0.99, lam=0.95)
    np.testing.assert_allclose(to_numpy(advantages), expected_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(returns), expected_ret, rtol=1e-5, atol=1e-5)


def test_gae_truncation_bootstraps_but_termination_does_not(variant):
    """One env, three steps, reward 1, values 0: only the bootstrap value can change step 1."""
    module = load(variant)
    ones, zeros = np.ones((3, 1), np.float32), np.zeros((3, 1), np.float32)
    ends = np.array([[False], [True], [False]])
    never = np.zeros((3, 1), bool)
    bootstrap = np.full((3, 1), 10.0, np.float32)
    as_native = lambda *xs: [to_native(variant, x) for x in xs]
    truncated_adv, _ = module.compute_gae(*as_native(ones, zeros, bootstrap, never, ends), gamma=0.5, gae_lambda=1.0)
    terminated_adv, _ = module.compute_gae(*as_native(ones, zeros, bootstrap, ends, never), gamma=0.5, gae_lambda=1.0)
    # Each step's own delta is 1 + 0.5 * 10 = 6, except a terminated step's, which is 1.
    # Step 1 ends the episode, so step 2 does not flow into it; step 0 sees step 1 (gamma * lambda = 0.5).
    np.testing.assert_allclose(to_numpy(truncated_adv)[:, 0], [6 + 0.5 * 6, 6, 6], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(terminated_adv)[:, 0], [6 + 0.5 * 1, 1, 6], rtol=1e-6)


@pytest.mark.parametrize("clip_vloss", [True, False])
def test_ppo_loss_and_output_gradients_match_numpy(variant, clip_vloss):
    module = load(variant)
    rng = np.random.default_rng(1)
    n, num_actions = 64, 3
    logits = rng.normal(size=(n, num_actions)).astype(np.float32)
    value = rng.normal(size=n).astype(np.float32)
    action = rng.integers(0, num_actions, size=n)
    # old log-probs near the new ones, so that some ratios fall inside and some outside the clip range
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    old_logprob = (logp[np.arange(n), action] + rng.normal(scale=0.3, size=n)).astype(np.float32)
    old_value = (value + rng.normal(scale=0.3, size=n)).astype(np.float32)
    advantage = rng.normal(size=n).astype(np.float32)
    ret = (value + rng.normal(size=n)).astype(np.float32)
    args = module.Args(clip_vloss=clip_vloss)
    coefs = dict(clip_coef=args.clip_coef, clip_vloss=clip_vloss, ent_coef=args.ent_coef, vf_coef=args.vf_coef)

    mb = make_batch(
        variant,
        module,
        obs=np.zeros((n, 4), np.float32),
        action=action,
        logprob=old_logprob,
        value=old_value,
        advantage=advantage,
        returns=ret,
    )
    loss, info, (grad_logits, grad_value) = loss_and_output_grads(
        variant, module, to_native(variant, logits), to_native(variant, value), mb, args
    )

    f64 = lambda x: x.astype(np.float64)
    reference = lambda lg, v: ppo_loss_loop(lg, v, action, f64(old_logprob), f64(old_value), f64(advantage), f64(ret), **coefs)
    expected_loss, expected_info = reference(f64(logits), f64(value))
    assert 0 < expected_info["clipfrac"] < 1
    np.testing.assert_allclose(float(to_numpy(loss)), expected_loss, rtol=1e-5, atol=1e-6)
    for name, expected in expected_info.items():
        np.testing.assert_allclose(float(to_numpy(info[name])), expected, rtol=1e-5, atol=1e-6, err_msg=name)

    # central differences of the float64 loop, one output at a time
    def numeric_grad(x, loss_of):
        grad, h = np.zeros_like(x), 1e-6
        for i in np.ndindex(x.shape):
            up, down = x.copy(), x.copy()
            up[i] += h
            down[i] -= h
            grad[i] = (loss_of(up)[0] - loss_of(down)[0]) / (2 * h)
        return grad

    np.testing.assert_allclose(
        to_numpy(grad_logits), numeric_grad(f64(logits), lambda lg: reference(lg, f64(value))), rtol=1e-4, atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(grad_value), numeric_grad(f64(value), lambda v: reference(f64(logits), v)), rtol=1e-4, atol=1e-6
    )


def test_the_gaussian_policy_is_scipys_normal(variant):
    """Continuous actions: log-probability (summed over the action's dimensions), entropy, their gradients with
    respect to mean and log standard deviation, and the samples' distribution, against scipy's Normal."""
    import scipy.stats

    module = load(variant)
    rng = np.random.default_rng(2)
    n, dims = 64, 3
    mean = rng.normal(size=(n, dims)).astype(np.float32)
    log_std = rng.normal(scale=0.5, size=dims).astype(np.float32)
    action = (mean + 2 * rng.normal(size=(n, dims))).astype(np.float32)
    f64 = lambda x: x.astype(np.float64)
    std = np.exp(f64(log_std))
    expected = scipy.stats.norm.logpdf(f64(action), f64(mean), std).sum(-1)
    entropy = scipy.stats.norm.entropy(scale=std).sum()
    # d log p / d mean = (a - mean) / std^2; d log p / d log_std = (a - mean)^2 / std^2 - 1 (each summed over rows)
    z = (f64(action) - f64(mean)) / std
    grad_mean, grad_log_std = z / std, (z**2 - 1).sum(0)
    if framework(variant) == "torch":
        mean_t, log_std_t = (to_native(variant, x).requires_grad_() for x in (mean, log_std))
        policy = module.Policy(mean_t, log_std_t)
        log_prob = policy.log_prob(to_native(variant, action))
        log_prob.sum().backward()
        grads = mean_t.grad, log_std_t.grad
        got_entropy = policy.entropy()
    else:
        import jax

        log_prob_of = lambda m, s: module.Policy(m, s).log_prob(to_native(variant, action))
        log_prob = log_prob_of(to_native(variant, mean), to_native(variant, log_std))
        grads = jax.grad(lambda m, s: log_prob_of(m, s).sum(), argnums=(0, 1))(
            to_native(variant, mean), to_native(variant, log_std)
        )
        got_entropy = module.Policy(to_native(variant, mean), to_native(variant, log_std)).entropy()
    np.testing.assert_allclose(to_numpy(log_prob), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.broadcast_to(to_numpy(got_entropy), ()), entropy, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(grads[0]), grad_mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_numpy(grads[1]), grad_log_std, rtol=1e-4, atol=1e-4)

    # samples: (draw - mean) / std is standard normal in every dimension
    rows = np.broadcast_to(mean[:1], (200_000, dims))
    policy = module.Policy(to_native(variant, np.ascontiguousarray(rows)), to_native(variant, log_std))
    if framework(variant) == "torch":
        import torch

        torch.manual_seed(0)
        draws = to_numpy(policy.sample())
    else:
        import jax

        draws = to_numpy(policy.sample(jax.random.key(0)))
    standard = (f64(draws) - f64(rows)) / std
    np.testing.assert_allclose(standard.mean(0), 0, atol=0.01)  # 4.5 standard errors
    np.testing.assert_allclose(standard.std(0), 1, atol=0.01)
    for d in range(dims):
        assert scipy.stats.kstest(standard[:, d], "norm").pvalue > 1e-3, d


@pytest.mark.parametrize(
    "text,expected", [("64,64", (64, 64)), ("256,256,256", (256, 256, 256)), ("7", (7,)), (" 32 , 16 ", (32, 16))]
)
def test_parse_hidden_accepts(text, expected):
    assert parse_hidden(text) == expected


@pytest.mark.parametrize("text", ["", " ", "64,,64", "64,", "a,b", "64x64", "0,64", "-5", "1.5"])
def test_parse_hidden_rejects(text):
    with pytest.raises(UsageError, match="--hidden"):
        parse_hidden(text)
