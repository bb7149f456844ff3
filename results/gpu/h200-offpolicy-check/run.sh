#!/usr/bin/env bash
# One GPU lease (15 minutes): what has never run on a GPU, most urgent first, each step under a deadline.
# 1. studies/buffer_copies --cuda: does XLA's GPU program of a JAX SAC iteration copy its 1e6-row buffer?
# 2. gpu-check's SAC rows, then TD3's and DQN's (none has run on a GPU).
set -uo pipefail
export PYTHONUNBUFFERED=1
START=$(date +%s); END=$((START + ${BUDGET:-540}))
left() { echo $((END - $(date +%s))); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
{ echo "commit $(cat .gpu/commit.txt)"; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  lscpu | grep -E "^CPU\(s\)|Model name|^Model:|CPU family"
  python3 -c "import sys, jax; from importlib.metadata import version as v; print(sys.version.split()[0], jax.devices(), *(f'{p} {v(p)}' for p in 'torch jax jaxlib flax optax equinox tyro gymnax gymnasium'.split()))"
} > $OUT/machine.txt 2>&1
cat $OUT/machine.txt
# Each program is compiled in a process of its own; three at once (one per variant), sharing the GPU's memory.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
for v in jax_linen jax_nnx jax_equinox; do
  timeout 200 python3 -m studies.buffer_copies --cuda --algorithms sac --variants $v --out $OUT/copies-sac-$v.json > $OUT/copies-$v.log 2>&1 &
done
wait
unset XLA_PYTHON_CLIENT_PREALLOCATE
cat $OUT/copies-*.log
echo "== gpu-check sac, $(left) s left"
timeout $(( $(left) - 5 )) python3 bench/gpu_check.py --variants sac:jax_linen,sac:jax_nnx,sac:jax_equinox,sac:torch,sac:torch_compile 2>&1 | tee $OUT/gpu-check.txt
echo "== gpu-check td3, dqn, $(left) s left" | tee -a $OUT/gpu-check.txt
[ $(left) -gt 60 ] && timeout $(( $(left) - 5 )) python3 bench/gpu_check.py --variants dqn:jax_linen,dqn:torch,dqn:torch_compile,td3:jax_linen,td3:torch,td3:torch_compile,dqn:jax_nnx,dqn:jax_equinox,td3:jax_nnx,td3:jax_equinox 2>&1 | tee -a $OUT/gpu-check.txt
echo "== done, $(left) s left"
