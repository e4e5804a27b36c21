"""What a judge's browser receives of a video: its frames, and nothing that tells clips apart.

An episode video on disk carries side channels a judge could read in the browser's developer
tools: its modification time (``paired-eval`` runs the policies of a start in configuration
order, so the earlier file marks the same policy in every pair; a new policy's run folder is
newer), a per-file ``ETag`` derived from it, and container metadata (a title, a creation date,
the muxer's and encoder's versions, which differ between run folders made on different
machines). The arena therefore never serves the file itself: :func:`blind` re-muxes it (stream
copy of the first video stream, no re-encoding, so the frames are bit for bit the recorded
ones) with ffmpeg's bit-exact flags and every metadata, chapter and attachment dropped, which
leaves a WebM whose bytes depend on the frames only (fixed segment UID, ``WritingApp`` and
``MuxingApp`` ``Lavf`` without a version, no ``DateUTC``). :class:`BlindClips` keeps the last
re-muxed clips in memory, and :func:`byte_range` answers the Range requests a ``<video>`` makes,
so the response headers are only the type, the length and the range.

What is left is what the judge is meant to see: the frames and their number (the duration), and
the byte count, a function of those frames.
"""

from __future__ import annotations

import collections
import pathlib
import subprocess
import tempfile
import threading

from realm_ros.core.errors import DataError

#: Memory kept for re-muxed clips (a 320x180 episode of 10 s is about 100-300 kB).
DEFAULT_CACHE_BYTES = 256 * 2**20


def blind(path: str | pathlib.Path) -> bytes:
    """Return the WebM at ``path`` re-muxed without metadata (the same bytes for the same frames).

    Raises:
        DataError: ffmpeg cannot read the file.
    """
    import imageio_ffmpeg
    with tempfile.TemporaryDirectory(prefix='realm_ros_arena_') as tmp:
        out = pathlib.Path(tmp) / 'clip.webm'  # seekable: the muxer writes duration and cues
        command = [imageio_ffmpeg.get_ffmpeg_exe(), '-nostdin', '-v', 'error', '-i', str(path),
                   '-map', '0:v:0', '-c', 'copy', '-map_metadata', '-1',
                   '-map_metadata:s', '-1', '-map_chapters', '-1', '-fflags', '+bitexact',
                   '-flags', '+bitexact', '-f', 'webm', str(out)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not out.is_file():
            raise DataError(f'{path}: cannot re-mux the video: {done.stderr.strip()[-300:]}')
        return out.read_bytes()


class BlindClips:
    """The blinded bytes of clips by path, the most recently used kept up to ``max_bytes``."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.max_bytes = int(max_bytes)
        self._clips: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str | pathlib.Path) -> bytes:
        """Return :func:`blind` of ``path`` (re-muxed once, then from memory)."""
        key = str(path)
        with self._lock:
            if key in self._clips:
                self._clips.move_to_end(key)
                return self._clips[key]
        data = blind(key)  # outside the lock: two judges' clips re-mux at once
        with self._lock:
            self._clips[key] = data
            self._clips.move_to_end(key)
            total = sum(len(v) for v in self._clips.values())
            while total > self.max_bytes and len(self._clips) > 1:
                total -= len(self._clips.popitem(last=False)[1])
        return data


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """Return the inclusive ``(first, last)`` byte of a single-range ``Range`` header.

    None: no header, or one this server answers with the whole body (several ranges, another
    unit, a malformed value), as RFC 9110 allows.

    Raises:
        DataError: a well-formed range outside the ``size`` bytes (answered 416).
    """
    if not header or not header.startswith('bytes=') or ',' in header:
        return None
    first_text, sep, last_text = header[len('bytes='):].strip().partition('-')
    if not sep:
        return None
    try:
        if first_text == '':  # the last N bytes
            count = int(last_text)
            if count <= 0:
                raise DataError('empty suffix range')
            return max(0, size - count), size - 1
        first = int(first_text)
        last = size - 1 if last_text == '' else min(int(last_text), size - 1)
    except ValueError:
        return None
    if first < 0 or first >= size or last < first:
        raise DataError(f'range {header!r} is outside the {size} bytes')
    return first, last
