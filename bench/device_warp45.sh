#!/bin/bash
# Issue 45's GPU measures on one device machine (docs/performance.md, docs/scaling.md), one stage
# per device call, run from the repository root there. The machine has no registry and a call
# carries at most 64 MiB with the tree, so the wheels travel beforehand into ~/parts (kept while
# the machine is warm), xz-compressed where that pays (warp-lang 1.19's wheel is 149 MB; its
# warp.so and warp-clang.so are 81 + 20 MB as .xz, the rest of the package 1.4 MB); built by
# bench/device_warp45_pack.sh:
#   c1: warp.so.xz.aa; c2: warp.so.xz.ab, warp_rest.tar.xz (the wheel without bin/*.so,
#   examples, tests), the mujoco 4.0, mujoco-core 4.0, mujoco-warp 4.0, PyOpenGL, glfw,
#   websockets cp312 wheels, pkg.tar.xz (bench/device_pack.py's: pybullet_data's franka_panda
#   meshes), COMMIT, MD5SUMS (of c1 and c2), warp_cache.tar.xz.aa (the `cache` stage's kernels,
#   since the fourth device session: 6.9 MB, spares a fresh machine 223 s of compilation); c3 (optional, later): warp-clang.so.xz (Warp's
#   CPU kernels, not needed on a GPU), ray.tar.xz (bench/device_ray_scaling.sh's trimmed Ray
#   2.60.0) with jsonschema's four wheels in rayw/. .gl carried (the GL loader debs).
#   call 1:         mkdir -p ~/parts && cp -r .dev45/c1/* ~/parts/
#   then, each:     mkdir -p ~/parts && cp -r .dev45/cK/* ~/parts/ && \
#                   bash bench/device_warp45.sh agree|speed|ray|cache [bench flags]
# `cache` returns Warp's compiled kernels; copied into a carried part (e.g. .dev45/c3) they
# spare the next machine the compilation.
set -o pipefail
P=~/parts
S=~/site
stage=$1
t0=$SECONDS
if [ ! -f $S/.done ]; then
    (cd $P && md5sum --quiet -c MD5SUMS) || { echo "parts: md5 mismatch"; exit 1; }
    for f in .gl/*.deb; do dpkg -x $f /; done
    ldconfig
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $S \
        $P/*.whl || exit 1
    tar -C $S -xJf $P/warp_rest.tar.xz || exit 1
    mkdir -p $S/warp/bin && cat $P/warp.so.xz.* | xz -dc > $S/warp/bin/warp.so || exit 1
    tar -C $S -xJf $P/pkg.tar.xz || exit 1
    touch $S/.done
fi
# Warp's kernel cache from an earlier machine (the `cache` stage's warp_cache.tar.xz.*, carried
# into ~/parts): compiled for sm_90, so it serves the H100 and the H200 alike, and a first run
# loads the kernels instead of compiling them (187 s on the H100)
if ls $P/warp_cache.tar.xz.* >/dev/null 2>&1 && [ ! -d ~/.cache/warp ]; then
    mkdir -p ~/.cache && cat $P/warp_cache.tar.xz.* | xz -dc | tar -C ~/.cache -xf - \
        && echo "warp kernel cache restored: $(du -sh ~/.cache/warp | cut -f1)"
fi
# warp-clang (Warp's CPU kernels) is optional on a GPU: installed once carried
if [ -f $P/warp-clang.so.xz ] && [ ! -f $S/warp/bin/warp-clang.so ]; then
    xz -dc $P/warp-clang.so.xz > $S/warp/bin/warp-clang.so || exit 1
fi
if [ "$stage" = ray ] && [ ! -d $S/ray ]; then
    tar -C $S -xJf $P/ray.tar.xz || exit 1
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $S \
        $P/rayw/*.whl || exit 1
fi
export PYTHONPATH=$S:$PWD MUJOCO_GL=egl PYTHONUNBUFFERED=1 REALM_BENCH_COMMIT=$(cat $P/COMMIT) \
    REALM_BENCH_RESULTS=$OUT/bench.jsonl RAY_DISABLE_USAGE_STATS=1
nv=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f $nv ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$nv
echo "setup $((SECONDS - t0)) s; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
python3 -c "import mujoco, warp, mujoco_warp, torch; print('mujoco', mujoco.__version__,
'warp', warp.__version__, 'torch', torch.__version__)" || exit 1
# LEARNED=checkpoints/learned/early.pt: another checkpoint of the learned ladder (its folder
# named by the file: warp_agree_early); LADDER=0: the learned sweep alone
learned=${LEARNED:-checkpoints/learned/final.pt}
name=$(basename $learned .pt)
suffix=$([ "$name" = final ] || echo _$name)
case $stage in
agree)  # the learned policy, 128 cells, then the scripted ladder, 4 rungs x 32 cells, each on
        # Warp and on the CPU twin (three cameras at 320x180 for the learned policy)
    timeout $((${BUDGET:-570} - SECONDS)) python3 -m realm_ros.cli sweep \
        --out $OUT/warp_agree$suffix --tasks push_switch --policies $name=learned:path=$learned \
        --episodes-per-cell 128 --max-steps 150 --cameras --device gpu --seed 3 \
        --compare-cpu 128 2>&1 | tail -30
    echo "learned done at $((SECONDS - t0)) s"
    if [ "${LADDER:-1}" = 1 ]; then
        timeout $((${BUDGET:-570} - SECONDS)) python3 -m realm_ros.cli sweep \
            --out $OUT/warp_ladder --tasks push_switch \
            --policies scripted:0 scripted:1 scripted:2 scripted:3 --episodes-per-cell 32 \
            --max-steps 150 --device gpu --gpu-engine warp --seed 3 --compare-cpu 128 2>&1 \
            | tail -30
    fi
    ;;
speed)  # real-time factor of the learned sweep on one GPU, batch processes sharing it;
        # MPS=1: through CUDA's Multi-Process Service (the processes' kernels side by side
        # instead of in turns), its daemon started here and stopped after the run
    shift
    if [ "${MPS:-0}" = 1 ]; then
        if command -v nvidia-cuda-mps-control >/dev/null; then
            export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
            mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
            nvidia-cuda-mps-control -d && echo "MPS daemon started"
        else
            echo "MPS=1: nvidia-cuda-mps-control is not on this machine; running without it"
            MPS=0
        fi
    fi
    # the GPU's utilisation every 0.5 s while the bench runs (util_N.txt: time, percent, MiB)
    util=$OUT/util_$(ls $OUT/util_*.txt 2>/dev/null | wc -l).txt
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits \
        -lms 500 > $util 2>/dev/null &
    smi=$!
    echo "speed $* MPS=${MPS:-0}: utilisation in $(basename $util)"
    timeout ${SPEED_TIMEOUT:-400} python3 bench/bench_sweep_warp.py --max-steps 150 \
        --cpu-episodes 0 "$@" 2>&1 | grep -v "^Module\|^Warp " | tail -40
    kill $smi 2>/dev/null
    [ "${MPS:-0}" = 1 ] && echo quit | nvidia-cuda-mps-control
    ;;
cache)  # compile the learned sweep's kernels (2 worlds, 4 steps, three cameras) and return Warp's
        # kernel cache as warp_cache.tar.xz.aa, .ab, ... (30 MB parts) for a later machine
    timeout ${CACHE_TIMEOUT:-400} python3 bench/bench_sweep_warp.py --worlds 2 --max-steps 4 \
        --cpu-episodes 0 --hand-back 2>&1 | grep -v "^Module\|^Warp " | tail -5
    tar -C ~/.cache -cf - warp | xz -T0 -6 | split -b 30M - $OUT/warp_cache.tar.xz.
    ls -la $OUT/warp_cache.tar.xz.*; du -sh ~/.cache/warp
    ;;
ray)  # Ray at 1..15 workers, interleaved with one worker to take out the machine's drift
    shift
    export OMP_NUM_THREADS=1
    timeout ${RAY_TIMEOUT:-400} python3 bench/bench_ray_scaling.py "$@" 2>&1 \
        | grep -v "authentication_token\|Worker exit detail"
    ;;
esac
for d in $OUT/warp_*; do
    [ -d "$d" ] && tar -C $OUT -cJf $d.tar.xz $(basename $d) && rm -rf $d
done
echo "stage $stage rc $? total $((SECONDS - t0)) s"
