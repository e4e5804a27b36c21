"""Installed package files: :func:`realm_ros.core.share.share_path`, here for ``ros``-layer
callers (it needs no rclpy, so it lives in ``core`` where every layer may reach it)."""

from realm_ros.core.share import share_path

__all__ = ['share_path']
