set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
export XLA_PYTHON_CLIENT_PREALLOCATE=false
for v in jax_linen jax_nnx jax_equinox; do
  timeout 85 python3 -m studies.buffer_copies --cuda --algorithms sac --cells 1,2,6,7,3,4,5 --variants $v --out $OUT/copies-sac-$v.json > $OUT/copies-$v.log 2>&1 &
done
wait
unset XLA_PYTHON_CLIENT_PREALLOCATE
cat $OUT/copies-*.log
XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE timeout 50 python3 bench/gpu_check.py --variants sac:jax_linen 2>&1 | tee $OUT/gpu-check-sac-while-command-buffers.txt
