"""Encode, join, cut and decode dataset videos with the ffmpeg that imageio-ffmpeg ships.

Encoding follows LeRobot's recorder (``lerobot/datasets/video_utils.py``, ``encode_video_frames``):
AV1 with SVT-AV1, ``yuv420p``, a keyframe every 2 frames (``g=2``), ``crf=30``, preset 12 (SVT
maps it to its fastest, 11), one frame per ``1/fps`` s. AV1 in mp4 never reorders frames (no
composition offsets), so presentation time = decode time = k / fps exactly on a timescale of
``fps * 1024`` ticks; the movie timescale is set to the same so the edit list is exact too (the
mp4 muxer's default of 1000 rounds each file's length to whole milliseconds, and a concatenation
by those lengths drifts off the 1/fps grid: issue 28). Where the ffmpeg here has no ``libsvtav1``
encoder, H.264 is written with ``-bf 0`` (no B-frames, the same exact timing) and a warning.

Joining (:func:`concat`) copies packets through ffmpeg's concat demuxer, as LeRobot's
``concatenate_video_files`` does with PyAV; cutting (:func:`truncate`) copies the first N
packets. Neither re-encodes. Decoding (:func:`decode`) uses dav1d/libavcodec through the same
binary; OpenCV's bundled FFmpeg has no AV1 decoder.
"""

from __future__ import annotations

import functools
import os
import pathlib
import subprocess
import tempfile
from typing import Sequence
import warnings

import numpy as np

from realm_ros.core.errors import ConfigError

#: (ffmpeg encoder, codec name as LeRobot's info.json writes it, extra encoder arguments)
AV1 = ('libsvtav1', 'av1', ['-g', '2', '-crf', '30', '-preset', '12'])
H264 = ('libx264', 'h264', ['-g', '2', '-crf', '23', '-bf', '0', '-preset', 'veryfast'])


@functools.lru_cache(maxsize=1)
def ffmpeg() -> str:
    """Path of the ffmpeg binary (imageio-ffmpeg's); ConfigError naming the package if absent."""
    try:
        import imageio_ffmpeg
    except ImportError:
        raise ConfigError('video encoding needs imageio-ffmpeg: pip install imageio-ffmpeg'
                          ) from None
    return imageio_ffmpeg.get_ffmpeg_exe()


@functools.lru_cache(maxsize=1)
def default_codec() -> tuple[str, str, list[str]]:
    """AV1 (SVT-AV1) as LeRobot writes it, else H.264 without B-frames (with a warning)."""
    out = subprocess.run([ffmpeg(), '-hide_banner', '-encoders'], capture_output=True,
                         text=True, check=False).stdout
    if ' libsvtav1 ' in out:
        return AV1
    warnings.warn('this ffmpeg has no libsvtav1 encoder: writing H.264 without B-frames '
                  '(LeRobot loads it; lerobot-edit-dataset will not merge it with AV1 sets)',
                  stacklevel=2)
    return H264


def _run(cmd: list[str], what: str, stdin: bytes | None = None) -> bytes:
    # SVT-AV1 prints its banner on stderr whatever ffmpeg's log level: keep stderr for errors.
    proc = subprocess.run(cmd, input=stdin, capture_output=True, check=False,
                          env=dict(os.environ, SVT_LOG='1'))
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors='replace').strip().splitlines()[-3:]
        raise ConfigError(f'ffmpeg could not {what}: {" / ".join(tail)}')
    return proc.stdout


def _mux_args(fps: int) -> list[str]:
    scale = str(int(fps) * 1024)
    return ['-video_track_timescale', scale, '-movie_timescale', scale,
            '-movflags', '+faststart']


def encode(frames: np.ndarray, path: str | pathlib.Path, fps: int,
           codec: tuple[str, str, list[str]] | None = None) -> str:
    """Write (T, H, W, 3) uint8 RGB frames as an mp4 at ``fps``; return the codec name.

    Raises:
        ConfigError: odd width or height (yuv420p needs even ones), or ffmpeg failed.
    """
    encoder, name, extra = codec or default_codec()
    frames = np.ascontiguousarray(frames, dtype=np.uint8)
    t, h, w, c = frames.shape
    if c != 3 or h % 2 or w % 2:
        raise ConfigError(f'video frames must be (T, H, W, 3) with even H and W, got '
                          f'{frames.shape}')
    cmd = [ffmpeg(), '-hide_banner', '-loglevel', 'error', '-y', '-f', 'rawvideo',
           '-pix_fmt', 'rgb24', '-s', f'{w}x{h}', '-r', str(int(fps)), '-i', '-',
           '-c:v', encoder, *extra, '-pix_fmt', 'yuv420p', *_mux_args(fps), '-f', 'mp4',
           str(path)]
    _run(cmd, f'encode {path}', stdin=frames.tobytes())
    return name


def concat(paths: Sequence[str | pathlib.Path], out: str | pathlib.Path, fps: int) -> None:
    """Join mp4 files of one codec and size into ``out`` by copying packets (no re-encode)."""
    with tempfile.NamedTemporaryFile('w', suffix='.ffconcat', delete=False) as f:
        f.write('ffconcat version 1.0\n')
        for p in paths:
            f.write(f"file '{pathlib.Path(p).resolve()}'\n")
        listing = f.name
    try:
        _run([ffmpeg(), '-hide_banner', '-loglevel', 'error', '-y', '-f', 'concat',
              '-safe', '0', '-i', listing, '-map', '0:v:0', '-c', 'copy', *_mux_args(fps),
              '-f', 'mp4', str(out)], f'join {len(paths)} videos into {out}')
    finally:
        os.unlink(listing)


def truncate(path: str | pathlib.Path, frames: int, out: str | pathlib.Path, fps: int) -> None:
    """Copy the first ``frames`` frames of ``path`` into ``out`` (no re-encode)."""
    _run([ffmpeg(), '-hide_banner', '-loglevel', 'error', '-y', '-i', str(path),
          '-map', '0:v:0', '-c', 'copy', '-frames:v', str(int(frames)), *_mux_args(fps),
          '-f', 'mp4', str(out)], f'cut {path} to {frames} frames')


def decode(path: str | pathlib.Path) -> np.ndarray:
    """Return every frame of an mp4 as (T, H, W, 3) uint8 RGB."""
    from realm_ros.io.mp4 import read_video_track

    track = read_video_track(path)
    raw = _run([ffmpeg(), '-hide_banner', '-loglevel', 'error', '-i', str(path),
                '-map', '0:v:0', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-fps_mode', 'passthrough',
                '-'], f'decode {path}')
    frame_bytes = track.width * track.height * 3
    if not raw or len(raw) % frame_bytes:
        raise ConfigError(f'{path}: decoded {len(raw)} bytes, not whole '
                          f'{track.width}x{track.height} frames')
    return np.frombuffer(raw, np.uint8).reshape(-1, track.height, track.width, 3)


__all__ = ['AV1', 'H264', 'concat', 'decode', 'default_codec', 'encode', 'ffmpeg', 'truncate']
