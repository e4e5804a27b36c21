"""Which look a world has: the twin's own, a hidden appearance (the digital real), a visual
match (the matched twin) or a rebuilt look (``cameras rebuild``: a ``visual_match_dir`` with
``rebuild.yaml``). Apart from ``appearance`` and ``visual_match`` so that neither imports
the other."""

from __future__ import annotations

from realm_ros.backends.mujoco.appearance import AppearanceLook, Look
from realm_ros.backends.mujoco.visual_match import VisualMatchLook
from realm_ros.core.appearance import Appearance


def look_for(appearance_file: str = '', visual_match_dir: str = '') -> Look:
    """Return the look of a world: a hidden appearance (digital real), a visual match (twin),
    or the twin's own."""
    if appearance_file:
        return AppearanceLook(Appearance.from_yaml(appearance_file))
    if visual_match_dir:
        from realm_ros.backends.mujoco import rebuild

        if rebuild.is_rebuild(visual_match_dir):
            return rebuild.RebuiltLook.load(visual_match_dir)
        return VisualMatchLook.load(visual_match_dir)
    return Look()


__all__ = ['look_for']
