"""How a world's pictures differ from the twin's own look: the :class:`Look` hooks.

A :class:`~realm_ros.backends.mujoco.world.MujocoWorld` asks its look five things and never
looks inside: the camera rig to build (:meth:`Look.rig`), extra visual bodies and assets
(:meth:`Look.body_xml`, :meth:`Look.asset_xml`), changes to the compiled model before anything
snapshots or renders it (:meth:`Look.dress`), and what happens to each rendered frame
(:meth:`Look.finish`). The twin's look is the base class, which changes nothing.

:class:`AppearanceLook` is the digital real's hidden appearance
(:class:`realm_ros.core.appearance.Appearance`): true camera poses, its own materials,
procedural textures, light and clutter, and the camera sensor on every frame. The visually
matched twin's look is :class:`realm_ros.backends.mujoco.visual_match.VisualMatchLook`.
Everything here is visual: the physics of a dressed world is the twin's
(``test/unit/test_appearance.py`` steps both and compares).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import numpy as np

from realm_ros.backends.mujoco import camera_rig
from realm_ros.core.appearance import Appearance, Material
from realm_ros.core.config import CAMERA_NAMES

#: Renders the world's current state as segmentation: camera -> (H, W, 2) int32 (id, type).
Segmenter = Callable[[], Mapping[str, np.ndarray]]

#: Texture size painted for a textured surface, px.
TEXTURE_PX = 256
#: Materials of each surface in the twin's looks (``model.py``'s plain look, ``visuals.py``).
SURFACE_MATERIALS = {'table': ('table',), 'floor': ('floor',), 'walls': ('wall',),
                     'robot': ('panda_white',)}
#: The primitive arm's colour (``model.py``'s ``arm`` class): repainted when it has no meshes.
PRIMITIVE_ARM_RGBA = (0.92, 0.92, 0.95, 1.0)


class Look:
    """The twin's own look: every hook leaves the world as ``model.py`` builds it."""

    def rig(self, rig: camera_rig.Rig) -> camera_rig.Rig:
        """Return the rig the world builds its cameras from (given the configured one)."""
        return rig

    def body_xml(self) -> str:
        """Return extra worldbody MJCF (visual geoms only)."""
        return ''

    def asset_xml(self) -> str:
        """Return extra ``<asset>`` children."""
        return ''

    def dress(self, model: Any) -> None:
        """Change the compiled model (materials, lights, textures) before its first render."""

    def finish(self, world: Any, images: dict[str, np.ndarray],
               segment: Segmenter) -> dict[str, np.ndarray]:
        """Return the frames of ``world``'s current state as its cameras deliver them."""
        del world, segment
        return images


def _noise(shape: tuple[int, int], rng: np.random.Generator, smooth: int) -> np.ndarray:
    """Return zero-mean unit-ish noise smoothed over ``smooth`` px (wrapping: it tiles)."""
    x = rng.normal(size=shape)
    for _ in range(smooth):
        x = (x + np.roll(x, 1, 0) + np.roll(x, -1, 0) + np.roll(x, 1, 1) + np.roll(x, -1, 1)) / 5
    return x / max(float(x.std()), 1e-9)


def paint(material: Material, rng: np.random.Generator, size: int = TEXTURE_PX) -> np.ndarray:
    """Return a (size, size, 3) float texture of ``material`` (its procedural pattern)."""
    base = np.asarray(material.rgb, float)
    if material.texture == 'laminate':
        tone = 1.0 + 0.03 * _noise((size, size), rng, 1) + 0.04 * _noise((size, size), rng, 12)
    elif material.texture == 'wood':
        v = np.linspace(0, 1, size)[:, None]
        streaks = sum(a * np.sin(2 * np.pi * (k * v + rng.uniform()))
                      for k, a in ((5, 0.5), (17, 0.3), (41, 0.2)))
        tone = 1.0 + 0.08 * streaks + 0.04 * _noise((size, size), rng, 2)
    elif material.texture == 'concrete':
        tone = 1.0 + 0.05 * _noise((size, size), rng, 2) + 0.08 * _noise((size, size), rng, 20)
    elif material.texture == 'plaster':
        tone = 1.0 + 0.02 * _noise((size, size), rng, 1)
    elif material.texture == 'tiles':
        tone = 1.0 + 0.03 * _noise((size, size), rng, 1)
        step = size // 4
        tone = tone + np.kron(rng.uniform(-0.05, 0.05, (4, 4)), np.ones((step, step)))
        tone[::step, :] = 0.7
        tone[:, ::step] = 0.7
    else:
        tone = np.ones((size, size))
    return np.clip(base[None, None, :] * np.asarray(tone)[..., None], 0.0, 1.0)


class AppearanceLook(Look):
    """The digital real's hidden appearance applied to its MuJoCo model and frames."""

    def __init__(self, appearance: Appearance) -> None:
        self.appearance = appearance

    def rig(self, rig: camera_rig.Rig) -> camera_rig.Rig:
        """The rig with the appearance's true cameras; its light's shadows are drawn."""
        cams = self.appearance.cameras
        where = f'{self.appearance.source or "appearance"}: cameras'
        exterior = tuple(camera_rig.camera_from_entry(c.name, cams[c.name], f'{where}.{c.name}')
                         if c.name in cams else c for c in rig.exterior)
        wrist = (camera_rig.camera_from_entry('wrist', cams['wrist'], f'{where}.wrist')
                 if 'wrist' in cams else rig.wrist)
        light = self.appearance.light
        shadows = rig.shadows if light is None else light.shadows
        return dataclasses.replace(rig, exterior=exterior, wrist=wrist, shadows=shadows)

    def body_xml(self) -> str:
        """The clutter: visual geoms in the world body."""
        parts = []
        for k, item in enumerate(self.appearance.clutter):
            size = ' '.join(f'{v:.6g}' for v in item.size)
            pos = ' '.join(f'{v:.6g}' for v in item.pos)
            rgb = ' '.join(f'{v:.4g}' for v in item.rgb)
            parts.append(f'<geom class="visual" name="appearance_clutter_{k}" type="{item.shape}" '
                         f'size="{size}" pos="{pos}" rgba="{rgb} 1"/>')
        return '\n'.join(parts)

    def asset_xml(self) -> str:
        """A texture per textured surface (painted in :meth:`dress`)."""
        return '\n'.join(
            f'<texture name="appearance_{name}" type="2d" builtin="flat" rgb1="1 1 1" '
            f'width="{TEXTURE_PX}" height="{TEXTURE_PX}"/>'
            for name, m in self.appearance.materials.items() if m.texture)

    def dress(self, model: Any) -> None:
        """Materials, textures, robot paint, the key light and the ambient light."""
        import mujoco

        rng = np.random.default_rng(self.appearance.seed)
        role = int(mujoco.mjtTextureRole.mjTEXROLE_RGB)
        for surface, material in self.appearance.materials.items():
            texid = -1
            if material.texture:
                texid = model.texture(f'appearance_{surface}').id
                pixels = (paint(material, rng) * 255.0 + 0.5).astype(np.uint8)
                adr, n = int(model.tex_adr[texid]), int(model.tex_nchannel[texid])
                if n == 4:
                    pixels = np.concatenate(
                        [pixels, np.full(pixels.shape[:2] + (1,), 255, np.uint8)], -1)
                model.tex_data[adr:adr + pixels.size] = pixels.reshape(-1)
            for name in SURFACE_MATERIALS[surface]:
                try:
                    mat = model.material(name).id
                except KeyError:
                    continue
                model.mat_rgba[mat, :3] = (1.0, 1.0, 1.0) if texid >= 0 else material.rgb
                # A geom's own rgba (the table's `scene` class sets one) tints its material.
                model.geom_rgba[model.geom_matid == mat, :3] = model.mat_rgba[mat, :3]
                model.mat_specular[mat] = material.specular
                if texid >= 0:
                    model.mat_texid[mat, role] = texid
            if surface == 'robot':
                arm = np.all(np.isclose(model.geom_rgba, PRIMITIVE_ARM_RGBA, atol=1e-3), axis=1)
                model.geom_rgba[arm, :3] = material.rgb
        light = self.appearance.light
        if light is not None:
            key = model.light('key').id
            direction = np.asarray(light.direction, float)
            direction /= np.linalg.norm(direction)
            model.light_dir[key] = direction
            model.light_pos[key] = np.array([0.45, 0.0, 0.0]) - direction * (1.8 / -direction[2])
            model.light_diffuse[key] = light.rgb
            model.light_castshadow[key] = light.shadows
            model.vis.headlight.ambient[:] = light.ambient

    def finish(self, world: Any, images: dict[str, np.ndarray],
               segment: Segmenter) -> dict[str, np.ndarray]:
        """Each frame through its camera's sensor, seeded by appearance, episode, time, camera."""
        del segment
        episode = int(getattr(world, 'perturbation', {}).get('seed', 0) or 0)
        tick = int(round(float(world.time) * 1e4))
        return {name: self.appearance.sensor(name).apply(
                    image, (self.appearance.seed, episode, tick, CAMERA_NAMES.index(name)))
                for name, image in images.items()}


__all__ = ['AppearanceLook', 'Look', 'Segmenter', 'paint']
