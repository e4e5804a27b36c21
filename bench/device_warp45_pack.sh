#!/bin/bash
# Build the parts bench/device_warp45.sh reads from ~/parts on the GPU machine, in .dev45/c1..c3
# (ignored by git: add "/.dev45/" to .git/info/exclude), from PyPI's cp312 wheels:
#   c1: warp.so.xz.aa                          (57 MB)
#   c2: warp.so.xz.ab, the rest of warp-lang, mujoco, mujoco-core, mujoco-warp, PyOpenGL,
#       glfw, websockets, pkg.tar.xz, COMMIT, MD5SUMS   (44 MB)
#   c3: warp-clang.so.xz, ray.tar.xz (Ray 2.60.0 trimmed as bench/device_ray_scaling.sh says),
#       rayw/ (jsonschema's four wheels)       (38 MB)
# A call carries the tree too (about 41 MB with the checkpoints; 64 MiB in all), so c1 and c2
# travel only with the tree's large files out of it (git rm --cached, then restore with
# git reset). Run from the repository root: bash bench/device_warp45_pack.sh
set -eo pipefail
PY=${PY:-.venv/bin/python}
W=$(mktemp -d)
trap 'rm -rf $W' EXIT
# cp312 wheels by device_pack's own download (its platforms; a wheel already in $W is reused)
PYTHONPATH=bench $PY -c "import pathlib, sys, device_pack as d
for spec in sys.argv[1:]: d.download(spec, pathlib.Path('$W'))" \
    warp-lang==1.19.0 mujoco-warp==4.0.0 mujoco==4.0.0 mujoco-core==4.0.0 PyOpenGL==3.1.10 \
    glfw==2.11.0 websockets==17.4 ray==2.60.0 jsonschema==4.26.0 \
    jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
rm -rf .dev45 && mkdir -p .dev45/c1 .dev45/c2 .dev45/c3/rayw
(cd $W && unzip -q warp_lang-*.whl 'warp/bin/*' -d bin)
xz -T0 -6 -c $W/bin/warp/bin/warp.so > $W/warp.so.xz
xz -T0 -6 -c $W/bin/warp/bin/warp-clang.so > .dev45/c3/warp-clang.so.xz
(cd $W && split -b 57000000 warp.so.xz warp.so.xz.)
mv $W/warp.so.xz.aa .dev45/c1/
mv $W/warp.so.xz.ab .dev45/c2/
(cd $W && unzip -q warp_lang-*.whl -x 'warp/bin/*.so' 'warp/examples/*' 'warp/tests/*' -d rest \
    && tar -C rest -cf - . | xz -T0 -6 > warp_rest.tar.xz)
mv $W/warp_rest.tar.xz .dev45/c2/
cp $W/mujoco-4*.whl $W/mujoco_core-*.whl $W/mujoco_warp-*.whl $W/[pP]y[oO]pen[gG][lL]-*.whl \
    $W/glfw-*.whl $W/websockets-*.whl .dev45/c2/
# pkg.tar.xz: pybullet_data's franka_panda meshes (and imageio-ffmpeg's package), device_pack's
PYTHONPATH=bench $PY -c "import pathlib, device_pack as d; d.twin_extras(pathlib.Path('$W'), pathlib.Path('$W'))"
cp $W/pkg.tar.xz .dev45/c2/
(cd $W && unzip -q ray-2.60.0-*.whl -d site && cd site \
    && rm -rf ray/jars ray/rllib ray/data ray/serve ray/tune ray/llm ray/dashboard/client/build \
    && find . -name '*.js.map' -delete \
    && strip --strip-unneeded ray/_raylet.so ray/core/src/ray/gcs/gcs_server \
        ray/core/src/ray/raylet/raylet \
    && tar -cf - ray ray-2.60.0.dist-info | xz -T0 -9e > ../ray.tar.xz)
mv $W/ray.tar.xz .dev45/c3/
cp $W/jsonschema*.whl $W/referencing-*.whl $W/rpds_py-*.whl .dev45/c3/rayw/
git rev-parse --short HEAD > .dev45/c2/COMMIT
(for d in c1 c2; do (cd .dev45/$d && find . -type f ! -name MD5SUMS ! -name COMMIT \
    -exec md5sum {} \; | sed 's#  \./#  #'); done) > $W/MD5SUMS
mv $W/MD5SUMS .dev45/c2/
du -sb .dev45/c1 .dev45/c2 .dev45/c3
