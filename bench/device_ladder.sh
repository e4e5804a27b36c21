#!/bin/bash
# The vision ladder on one GPU machine (16 cores, one H200), in two calls of under 10 minutes:
#   bench/device_ladder.sh train OUT   demonstrations on the digital real (16 shards, one a core),
#                                      then three `realm-ros train` runs side by side on the GPU;
#                                      OUT/checkpoints.tgz holds every stage's checkpoint
#   bench/device_ladder.sh eval OUT CKDIR   every checkpoint on the digital real, blind, and under
#                                      8 other looks (bench/device_ladder.py eval), 16 workers
# Run from the repository root, with mujoco, imageio-ffmpeg, PyOpenGL and pybullet_data
# importable (bench/device_setup.sh carries them to a machine that cannot reach a registry).
# Sizes come from the environment: SHARDS (16), EPISODES per shard (44), STAGES, SMALL_MAX
# (0: the small run trains on each task's first shard), TRAIN_BUDGET_S, GEN_DEADLINE_S,
# TRAIN_ARGS, SEEDS (20), LOOKS (8), LOOK_SEEDS (3), BLIND (rungs), EVAL_DEADLINE_S; RUNS, the
# training runs (default "plain aug small"), GEN (1; 0 trains on the demonstrations already in
# DATA, ~/ladder_data), GEN_ONLY (0; 1 stops after the demonstrations), IMAGE_SIZE (320x180:
# the demonstrations' pictures, WxH).
set -o pipefail
phase=$1
out=$2
mkdir -p "$out"
export MUJOCO_GL=${MUJOCO_GL:-egl} PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
data=${DATA:-$HOME/ladder_data}
STAGES=${STAGES:-s150=150,s300=300,s600=600,s1200=1200,s2500=2500,s5000=5000}
pin=$(command -v taskset >/dev/null && echo --pin)
start=$SECONDS

if [ "$phase" = train ]; then
    [ "${GEN:-1}" = 0 ] || python3 bench/device_ladder.py gen --out "$data" --shards "${SHARDS:-16}" \
        --episodes "${EPISODES:-44}" --max-steps 200 --deadline "${GEN_DEADLINE_S:-0}" $pin \
        --image-size "${IMAGE_SIZE:-320x180}" \
        2>&1 | tee "$out/gen.log" || exit 1
    [ "${GEN_ONLY:-0}" = 1 ] && exit 0
    budget=$(( ${TRAIN_BUDGET_S:-100000} - (SECONDS - start) ))
    echo "gen took $((SECONDS - start)) s; training budget $budget s" | tee -a "$out/gen.log"
    small=$(ls -d "$data"/shard_*_0[0-${SMALL_MAX:-0}] | grep -v log)
    train() {  # name augment stages data...
        local name=$1 augment=$2 stages=$3; shift 3
        timeout "$budget" python3 -m realm_ros.commands.train --data "$@" \
            --out "$data/ck/$name" --stages "$stages" --augment "$augment" \
            --batch "${BATCH:-256}" ${TRAIN_ARGS:-} > "$out/train_$name.log" 2>&1
        echo "train $name exit $?" >> "$out/gen.log"
    }
    runs=" ${RUNS:-plain aug small} "
    [[ $runs == *" plain "* ]] && train plain shift "$STAGES" $(ls -d "$data"/shard_* | grep -v log) &
    [[ $runs == *" aug "* ]] && train aug appearance "$STAGES" $(ls -d "$data"/shard_* | grep -v log) &
    [[ $runs == *" small "* ]] && train small appearance "${SMALL_STAGES:-s1000=1000,s4000=4000}" $small &
    wait
    cat "$out/gen.log"
    tar -czf "$out/checkpoints.tgz" -C "$data" ck
    tail -qn1 "$data"/shard_*.log
    echo "phase train done in $((SECONDS - start)) s"
elif [ "$phase" = eval ]; then
    ck=$3
    args=()
    for f in "$ck"/*/*.pt; do
        run=$(basename "$(dirname "$f")"); stage=$(basename "$f" .pt)
        args+=("${run}_${stage}=$f")
    done
    python3 bench/device_ladder.py eval --checkpoints "${args[@]}" ${BLIND:+--blind $BLIND} \
        --seeds "${SEEDS:-20}" --looks "${LOOKS:-8}" --look-seeds "${LOOK_SEEDS:-3}" \
        --max-steps "${MAX_STEPS:-200}" --workers "${WORKERS:-16}" \
        --deadline "${EVAL_DEADLINE_S:-0}" --out "$out/episodes.jsonl" 2>&1 | tee "$out/eval.log"
    python3 bench/device_ladder.py summary "$out/episodes.jsonl" --json "$out/summary.json" \
        | tee "$out/table.md"
    echo "phase eval done in $((SECONDS - start)) s"
fi
