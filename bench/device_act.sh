#!/bin/bash
# The LeRobot ACT rung on one GPU machine, beside the vision ladder (docs/learned-policy.md,
# section 5), on the demonstrations `bench/device_ladder.sh train` wrote to DATA (~/ladder_data):
#   bench/device_act.sh train OUT   join the shards into one LeRobot dataset (LeRobot's own
#                                   aggregate_datasets) and start `lerobot-train` (through
#                                   bench/lerobot_act.py) on the GPU in its own process session,
#                                   so that it runs on after the command returns (while the
#                                   machine stays warm); returns at once. Log: ACT_DIR.log
#   bench/device_act.sh eval OUT    wait for it up to ACT_WAIT_S, stop it, then its newest whole
#                                   checkpoint through realm_ros's `lerobot` policy: the lab look,
#                                   the same blind, LOOKS other looks (bench/device_ladder.py eval);
#                                   bench/lerobot_parity.py; CPU time per chunk on one thread
# REALM_LEROBOT_PYTHON names the interpreter that imports lerobot. Sizes from the environment:
# ACT_STEPS (20000), ACT_BATCH (64), ACT_WORKERS (8), ACT_SAVE (1000), ACT_DEVICE (cuda),
# ACT_BACKEND (pyav; torchcodec where the FFmpeg libraries load), ACT_BACKBONE_STEPS (0: ACT's
# ResNet18 from scratch; N: first pretrain it N steps on the demonstrations with
# bench/act_backbone.py), ACT_WAIT_S (0), SEEDS (20), LOOKS (5), LOOK_SEEDS (2), MAX_STEPS (160),
# WORKERS (16), EVAL_DEADLINE_S (0), IMAGE_SIZE (320x180: the demonstrations' WxH).
# What ran on 2026-12-07 (docs/learned-policy.md, "The ACT rung that looks"), after
# `IMAGE_SIZE=160x90 GEN_ONLY=1 bash bench/device_ladder.sh train OUT`:
#   ACT_BACKBONE_STEPS=3000 ACT_STEPS=12000 ACT_WORKERS=14 ACT_SAVE=2000 ... train OUT
#   ACT_WAIT_S=120 EVAL_DEADLINE_S=320 SEEDS=40 LOOKS=5 LOOK_SEEDS=2 IMAGE_SIZE=160x90 ... eval OUT
# (16.6 lerobot-train steps/s at 160x90 with 14 loader processes; 6.8 at 320x180 with 8.)
set -o pipefail
phase=$1
out=$2
mkdir -p "$out"
export MUJOCO_GL=${MUJOCO_GL:-egl} PYTHONUNBUFFERED=1
data=${DATA:-$HOME/ladder_data}
act=${ACT_DIR:-$HOME/act}
start=$SECONDS

shards=$(ls -d "$data"/shard_* 2>/dev/null | grep -v log | tr "\n" " ")
if [ "$phase" = train ]; then
    rm -rf "$act" "$act.data" "$act.backbone"
    bb=""
    if [ "${ACT_BACKBONE_STEPS:-0}" -gt 0 ]; then
        # ACT's ResNet18 from a backbone pretrained on these demonstrations (bench/act_backbone.py)
        bb="python3 bench/act_backbone.py --data $shards --out $act.backbone \
            --steps $ACT_BACKBONE_STEPS --device ${ACT_DEVICE:-cuda} && "
    fi
    setsid nohup bash -c "$bb python3 bench/lerobot_act.py --python $REALM_LEROBOT_PYTHON \
        --shards $shards --data $act.data --out $act \
        --steps ${ACT_STEPS:-20000} --batch ${ACT_BATCH:-64} --workers ${ACT_WORKERS:-8} \
        --save-freq ${ACT_SAVE:-1000} --device ${ACT_DEVICE:-cuda} \
        --video-backend ${ACT_BACKEND:-pyav} ${bb:+--backbone $act.backbone}" \
        > "$act.log" 2>&1 < /dev/null &
    echo "lerobot-train started (pid $!), log $act.log"
elif [ "$phase" = eval ]; then
    while pgrep -f "lerobot_act.py|lerobot_train" >/dev/null && [ $((SECONDS - start)) -lt "${ACT_WAIT_S:-0}" ]; do
        sleep 5
    done
    pids=$(pgrep -f "lerobot_act.py|lerobot_train")
    [ -n "$pids" ] && kill $pids && sleep 5
    # tqdm's bar and LeRobot's log line share a carriage-return segment: cut the bar off
    tr '\r' '\n' < "$act.log" | sed -E 's/^Training:[^]]*\]//' | grep -v '^\s*$' \
        | tail -n 400 > "$out/act_train.log"
    # a checkpoint trained from a pretrained backbone names it; LeRobot's own loader (the
    # parity check) builds that backbone first, from torchvision's cache
    [ -d "$act.backbone" ] && export TORCH_HOME=$act.backbone && cp "$act.backbone/backbone.json" "$out/"
    ck=""
    for d in $(ls -d "$act"/checkpoints/[0-9]* | sort -r); do
        m=$d/pretrained_model
        if [ -f $m/model.safetensors ] && [ -f $m/config.json ] && ls $m/policy_postprocessor* >/dev/null 2>&1; then
            ck=$m; break
        fi
    done
    [ -n "$ck" ] || { echo "no whole ACT checkpoint in $act/checkpoints"; exit 1; }
    step=$(basename "$(dirname "$ck")" | sed 's/^0*//')
    name=act${step}
    echo "evaluating $ck as $name ($((SECONDS - start)) s)"
    ls -la "$ck" | tee "$out/act_checkpoint.txt"
    python3 bench/device_ladder.py eval --checkpoints "$name=lerobot:$ck" --blind "$name" \
        --seeds "${SEEDS:-20}" --looks "${LOOKS:-5}" --look-seeds "${LOOK_SEEDS:-2}" \
        --max-steps "${MAX_STEPS:-160}" --workers "${WORKERS:-16}" \
        --image-size "${IMAGE_SIZE:-320x180}" --deadline "${EVAL_DEADLINE_S:-0}" --out "$out/act_episodes.jsonl" 2>&1 | tee "$out/act_eval.log"
    python3 bench/device_ladder.py summary "$out/act_episodes.jsonl" \
        --json "$out/act_summary.json" | tee -a "$out/act_eval.log"
    python3 bench/lerobot_parity.py --checkpoint "$ck" --task pick_spoon --seed 0 \
        --image-size "${IMAGE_SIZE:-320x180}" 2>&1 | tail -n 3 | tee -a "$out/act_eval.log"
    taskset -c $(( $(nproc) - 1 )) env OMP_NUM_THREADS=1 python3 bench/device_ladder.py latency \
        "lerobot:$ck" --calls 30 2>&1 | tail -n 2 | tee -a "$out/act_eval.log"
    rm -rf "$out/looks"  # the look files are rebuilt from VariantSet's seed
    echo "phase eval done in $((SECONDS - start)) s"
fi
