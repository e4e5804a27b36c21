"""Offscreen rendering for the twin: one OpenGL context per world, on a thread of its own.

An OpenGL context (EGL, OSMesa or GLFW) can be current on one thread at a time. MuJoCo's
``Renderer`` makes its context current on the thread that created it and on every thread that
calls ``render``, and never releases it; a second thread that renders the same world then fails
with ``EGL_BAD_ACCESS`` (a paired evaluation in one process renders the digital real on one
node's thread and the twin on another's, and builds both on the main thread). So every
:class:`FrameRenderer` owns a thread that creates its context, renders, and frees it; callers on
any thread hand it the scene and wait for the pixels. Any number of worlds render in one process,
each on its own context and thread.

A context uploads the model's textures once, when it is made: the world paints its procedural
textures (:func:`realm_ros.backends.mujoco.visuals.paint_textures`) before the first render.

Shadows and reflections are the two extra passes per image. ``'auto'`` (the rig's default) keeps
them on a GPU and turns them off on a software renderer (Mesa's llvmpipe/softpipe, OSMesa,
SwiftShader: no GPU), where they cost most of the frame: three DROID cameras at 320x180 took
55 ms of CPU per step with both, 24 ms without shadows and 14 ms without either (this machine,
llvmpipe). ``True``/``False`` force them either way.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Sequence, Union

import mujoco
import numpy as np

#: Substrings of ``GL_RENDERER`` that name a software rasteriser (no GPU).
SOFTWARE_RENDERERS = ('llvmpipe', 'softpipe', 'swrast', 'swiftshader', 'osmesa', 'software')

Toggle = Union[bool, str]


def resolve(option: Toggle, software: bool) -> bool:
    """Return whether a ``True``/``False``/``'auto'`` pass is on (auto: on unless software)."""
    if option == 'auto':
        return not software
    return bool(option)


class FrameRenderer:
    """Render named cameras of a model on a dedicated thread that owns the GL context.

    Args:
        model: the compiled model (its ``vis.global_.offwidth/offheight`` bound the size).
        width, height: image size, px.
        shadows, reflections: ``True``, ``False`` or ``'auto'`` (off on a software renderer);
            shadows need the model's light to cast them (the rig's ``render.shadows``).
    """

    _count = 0
    _count_lock = threading.Lock()

    def __init__(self, model: Any, width: int, height: int, shadows: Toggle = 'auto',
                 reflections: Toggle = 'auto') -> None:
        with FrameRenderer._count_lock:
            FrameRenderer._count += 1
            index = FrameRenderer._count
        self.model = model
        self.width = int(width)
        self.height = int(height)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f'realm_ros-render-{index}')
        self._renderer: Any = None
        #: ``GL_RENDERER`` of the context ('' if it could not be read) and whether it is a
        #: software rasteriser; the passes in force.
        self.gl_renderer = ''
        self.software = False
        self.shadows = self.reflections = False
        self._pool.submit(self._open, shadows, reflections).result()

    def _open(self, shadows: Toggle, reflections: Toggle) -> None:
        self._renderer = mujoco.Renderer(self.model, self.height, self.width)
        try:
            from OpenGL import GL  # type: ignore[import-untyped]  # ships no stubs
            name = GL.glGetString(GL.GL_RENDERER)
            self.gl_renderer = name.decode() if isinstance(name, bytes) else str(name or '')
        except Exception:  # no PyOpenGL, or it cannot read this context: assume a GPU
            self.gl_renderer = ''
        self.software = any(s in self.gl_renderer.lower() for s in SOFTWARE_RENDERERS)
        self.shadows = resolve(shadows, self.software)
        self.reflections = resolve(reflections, self.software)
        flags = self._renderer.scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = self.shadows
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = self.reflections

    def _render(self, data: Any, cameras: Sequence[str],
                segmentation: bool) -> dict[str, np.ndarray]:
        images = {}
        if segmentation:
            self._renderer.enable_segmentation_rendering()
        try:
            for name in cameras:
                self._renderer.update_scene(data, camera=name)
                images[name] = self._renderer.render().copy()
        finally:
            if segmentation:
                self._renderer.disable_segmentation_rendering()
        return images

    def render(self, data: Any, cameras: Sequence[str],
               segmentation: bool = False) -> dict[str, np.ndarray]:
        """Return an (H, W, 3) uint8 RGB image per camera of ``data``'s current state.

        With ``segmentation`` each image is (H, W, 2) int32 instead: the id and the type
        (``mjtObj``) of the object drawn at each pixel, -1 where nothing is (MuJoCo's
        segmentation rendering). The caller must not step ``data`` until this returns (it
        blocks until then).
        """
        if self._renderer is None:
            raise RuntimeError('FrameRenderer is closed')
        return self._pool.submit(self._render, data, tuple(cameras), segmentation).result()

    def close(self) -> None:
        """Free the context (on its own thread) and stop the thread."""
        if self._renderer is not None:
            renderer, self._renderer = self._renderer, None
            self._pool.submit(renderer.close).result()
        self._pool.shutdown(wait=True)

    def __del__(self) -> None:
        # A world dropped without close(): free the context on its own thread, not on
        # whichever thread the garbage collector runs (that would be EGL_BAD_ACCESS).
        if getattr(self, '_renderer', None) is not None:
            try:
                self.close()
            except RuntimeError:  # the interpreter is shutting down: no new work accepted
                pass


__all__ = ['FrameRenderer']
