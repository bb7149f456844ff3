"""Plain NumPy loops that spell out GAE and the PPO loss, one element at a time.

They are deliberately written differently from the scripts (loops, not scans or vector ops),
so that agreement means the same math, not the same code."""

import math

import numpy as np


def gae_loop(rewards, values, bootstrap_values, terminated, truncated, gamma, lam):
    num_steps, num_envs = rewards.shape
    advantages = np.zeros_like(values, dtype=np.float64)
    for e in range(num_envs):
        running = 0.0
        for t in reversed(range(num_steps)):
            if terminated[t, e]:
                delta = rewards[t, e] - values[t, e]
                running = delta
            elif truncated[t, e]:
                delta = rewards[t, e] + gamma * bootstrap_values[t, e] - values[t, e]
                running = delta
            else:
                delta = rewards[t, e] + gamma * bootstrap_values[t, e] - values[t, e]
                running = delta + gamma * lam * running
            advantages[t, e] = running
    return advantages, advantages + values


def ppo_loss_loop(logits, value, action, old_logprob, old_value, advantage, ret, clip_coef, clip_vloss, ent_coef, vf_coef):
    n = len(action)
    mean = sum(advantage) / n
    std = math.sqrt(sum((a - mean) ** 2 for a in advantage) / n)  # population std, as in the scripts
    pg, vl, ent, old_kl, kl, clipped = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        z = logits[i] - max(logits[i])
        logp = z - math.log(sum(math.exp(v) for v in z))
        ent -= sum(math.exp(lp) * lp for lp in logp) / n
        logratio = logp[action[i]] - old_logprob[i]
        ratio = math.exp(logratio)
        adv = (advantage[i] - mean) / (std + 1e-8)
        pg += max(-adv * ratio, -adv * min(max(ratio, 1 - clip_coef), 1 + clip_coef)) / n
        v = (value[i] - ret[i]) ** 2
        if clip_vloss:
            v_clip = old_value[i] + min(max(value[i] - old_value[i], -clip_coef), clip_coef)
            v = max(v, (v_clip - ret[i]) ** 2)
        vl += 0.5 * v / n
        old_kl += -logratio / n
        kl += ((ratio - 1) - logratio) / n
        clipped += (abs(ratio - 1) > clip_coef) / n
    loss = pg - ent_coef * ent + vf_coef * vl
    return loss, {
        "policy_loss": pg,
        "value_loss": vl,
        "entropy": ent,
        "old_approx_kl": old_kl,
        "approx_kl": kl,
        "clipfrac": clipped,
    }
