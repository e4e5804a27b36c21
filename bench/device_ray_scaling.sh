#!/bin/bash
# Issue 45's Ray table on the GPU host's 16 cores, in one device call (run from the repository
# root there, with the folder below carried). The GPU host has no registry and a call carries at
# most 64 MiB with the tree (~32 MB), so Ray 2.60.0's cp312 wheel (79 MB) travels trimmed:
#   unzip ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl -d site && cd site
#   rm -rf ray/jars ray/rllib ray/data ray/serve ray/tune ray/llm ray/dashboard/client/build
#   find . -name '*.js.map' -delete
#   strip --strip-unneeded ray/_raylet.so ray/core/src/ray/gcs/gcs_server \
#       ray/core/src/ray/raylet/raylet
#   tar -cf - ray ray-2.60.0.dist-info | xz -9e > $D/ray.tar.xz           # 18.4 MB
# and beside it in $D: w/ = the mujoco 4.0 and mujoco-core 4.0 cp312 wheels, websockets, and
# jsonschema, jsonschema-specifications, referencing, rpds-py (Ray imports jsonschema; the
# machine lacks it); pkg.tar.xz (bench/device_setup.sh's); benchlib.py and bench_ray_scaling.py;
# COMMIT (the commit measured). No GL is needed: the cells are headless.
#   device run: BENCH_TIMEOUT=265 DEADLINE=195 bash $D/run.sh   (carry $D; 205 s there)
set -o pipefail
D=${D:-.dev45}
t0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    $D/w/*.whl || exit 1
tar -C /tmp/site -xJf $D/pkg.tar.xz || exit 1
tar -C /tmp/site -xJf $D/ray.tar.xz || exit 1
export PYTHONPATH=/tmp/site:$PWD MUJOCO_GL=egl OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 \
  REALM_BENCH_RESULTS=$OUT/ray_scaling.jsonl REALM_BENCH_COMMIT=$(cat $D/COMMIT) \
  RAY_DISABLE_USAGE_STATS=1
echo "setup $((SECONDS - t0)) s"; uptime; free -g | head -2; df -h /dev/shm | tail -1
python3 -c "import ray, mujoco, numpy; print('ray', ray.__version__, 'mujoco', mujoco.__version__,
'numpy', numpy.__version__)" || exit 1
timeout ${BENCH_TIMEOUT:-290} python3 $D/bench_ray_scaling.py --workers 1 2 4 8 15 \
  --cell-steps 1000 --cells-per-worker 6 --tiny 150 --kill-at 8 --kill-after 12 \
  --same-cells 8 --repeat 2 --processes --deadline ${DEADLINE:-215} 2>&1 \
  | grep -v "authentication_token\|Worker exit detail" | tee $OUT/log.txt
echo "rc $? total $((SECONDS - t0)) s"
