"""MuJoCo backends: the twin (``world.MujocoWorld``) and its model builder (``model``)."""

import os

# Offscreen rendering with no display: EGL works on GPUs and on the CPU through Mesa.
# Set before anything imports mujoco; a user's explicit choice (osmesa, glfw) wins.
os.environ.setdefault('MUJOCO_GL', 'egl')
