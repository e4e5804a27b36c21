#!/bin/bash
# Make a bare GPU machine (no registry) ready for bench/device_ladder.sh: source it with the
# folder of carried wheels and the folder of GL loader debs (docs/learned-policy.md says what
# they hold: mujoco, mujoco-core, PyOpenGL, glfw, websockets wheels; pkg.tar.xz with
# imageio-ffmpeg's Python package and pybullet_data's franka_panda meshes; ffmpeg7.xz, the
# ffmpeg binary of imageio-ffmpeg 0.6.0).
#   . bench/device_setup.sh ../.whl ../.gl
whl=$1
gl=$2
for f in "$gl"/*.deb; do dpkg -x "$f" /; done
ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$whl"/*.whl || return 1
tar -C /tmp/site -xJf "$whl/pkg.tar.xz" || return 1
[ -x /tmp/ffmpeg ] || { xz -dc "$whl/ffmpeg7.xz" > /tmp/ffmpeg && chmod +x /tmp/ffmpeg; }
export PYTHONPATH=/tmp/site:$PWD IMAGEIO_FFMPEG_EXE=/tmp/ffmpeg MUJOCO_GL=egl
nv=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f $nv ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$nv
python3 -c "import mujoco, imageio_ffmpeg, OpenGL, torch; print('mujoco', mujoco.__version__, 'torch', torch.__version__, torch.cuda.get_device_name(0), 'ffmpeg', imageio_ffmpeg.get_ffmpeg_exe())"
