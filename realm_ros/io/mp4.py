"""Read an mp4's video track timing from its boxes (ISO/IEC 14496-12), with no decoder.

What LeRobot's loaders rely on, read the way a demuxer reads it: the media timescale and
duration (``mdhd``), each sample's decode delta (``stts``), composition offsets (``ctts``: present
when the encoder reorders frames, i.e. B-frames), and the edit list (``elst``), whose segment
durations are in the *movie* timescale (``mvhd``, often 1000: whole milliseconds). A stream
length taken from the edit list is what ``ffmpeg -f concat`` and PyAV's ``stream.duration`` can
disagree on; a file written without B-frames and without an edit list has one exact length.
Used by the dataset writer's checks and by the tests; nothing here needs ffmpeg.
"""

from __future__ import annotations

import dataclasses
import pathlib
import struct

from realm_ros.core.errors import ConfigError

_CONTAINERS = {b'moov', b'trak', b'mdia', b'minf', b'stbl', b'edts'}


@dataclasses.dataclass(frozen=True)
class VideoTrack:
    """The first video track's timing, in seconds unless named ticks."""

    codec: str                          # sample entry fourcc: 'av01', 'avc1', 'hvc1', ...
    width: int
    height: int
    timescale: int                      # media ticks per second (mdhd)
    duration_ticks: int                 # media duration (mdhd), ticks
    sample_pts: tuple[float, ...]       # presentation time of each sample, s (stts + ctts -
                                        # the first edit's media time), sorted
    has_ctts: bool                      # composition offsets: frames were reordered (B-frames)
    edits: tuple[tuple[float, float], ...]  # (segment duration s, media time s) per elst entry

    @property
    def frames(self) -> int:
        return len(self.sample_pts)

    @property
    def duration_s(self) -> float:
        return self.duration_ticks / self.timescale


def _boxes(data: bytes, start: int, end: int):
    pos = start
    while pos + 8 <= end:
        size, kind = struct.unpack_from('>I4s', data, pos)
        header = 8
        if size == 1:
            size = struct.unpack_from('>Q', data, pos + 8)[0]
            header = 16
        elif size == 0:
            size = end - pos
        if size < header or pos + size > end:
            raise ConfigError(f'mp4: box {kind!r} at byte {pos} overruns its parent')
        yield kind, pos + header, pos + size
        pos += size


def _find(data: bytes, start: int, end: int, path: tuple[bytes, ...]) -> list[tuple[int, int]]:
    """Every (payload start, end) of boxes at ``path`` below [start, end)."""
    found = []
    for kind, body, stop in _boxes(data, start, end):
        if kind != path[0]:
            continue
        if len(path) == 1:
            found.append((body, stop))
        elif kind in _CONTAINERS:
            found += _find(data, body, stop, path[1:])
    return found


def read_video_track(path: str | pathlib.Path) -> VideoTrack:
    """Return the timing of ``path``'s first video track.

    Raises:
        ConfigError: not an mp4, or it has no video track.
    """
    data = pathlib.Path(path).read_bytes()
    moov = _find(data, 0, len(data), (b'moov',))
    if not moov:
        raise ConfigError(f'{path}: no moov box (not an mp4, or not finished)')
    mstart, mend = moov[0]
    mvhd = _find(data, mstart, mend, (b'mvhd',))[0][0]
    movie_scale = struct.unpack_from('>I', data, mvhd + (20 if data[mvhd] == 1 else 12))[0]
    for tstart, tend in _find(data, mstart, mend, (b'trak',)):
        hdlr = _find(data, tstart, tend, (b'mdia', b'hdlr'))
        if not hdlr or data[hdlr[0][0] + 8:hdlr[0][0] + 12] != b'vide':
            continue
        mdhd = _find(data, tstart, tend, (b'mdia', b'mdhd'))[0][0]
        if data[mdhd] == 1:
            timescale, duration = struct.unpack_from('>IQ', data, mdhd + 20)
        else:
            timescale, duration = struct.unpack_from('>II', data, mdhd + 12)
        stbl = (b'mdia', b'minf', b'stbl')
        stsd = _find(data, tstart, tend, stbl + (b'stsd',))[0][0]
        codec = data[stsd + 12:stsd + 16].decode('ascii', 'replace')
        width, height = struct.unpack_from('>HH', data, stsd + 8 + 8 + 24)
        deltas: list[int] = []
        stts = _find(data, tstart, tend, stbl + (b'stts',))[0][0]
        for i in range(struct.unpack_from('>I', data, stts + 4)[0]):
            count, delta = struct.unpack_from('>II', data, stts + 8 + 8 * i)
            deltas += [delta] * count
        offsets = [0] * len(deltas)
        ctts = _find(data, tstart, tend, stbl + (b'ctts',))
        if ctts:
            body = ctts[0][0]
            fmt = '>Ii' if data[body] == 1 else '>II'
            k = 0
            for i in range(struct.unpack_from('>I', data, body + 4)[0]):
                count, off = struct.unpack_from(fmt, data, body + 8 + 8 * i)
                offsets[k:k + count] = [off] * count
                k += count
        edits = []
        elst = _find(data, tstart, tend, (b'edts', b'elst'))
        if elst:
            body = elst[0][0]
            v1 = data[body] == 1
            for i in range(struct.unpack_from('>I', data, body + 4)[0]):
                if v1:
                    seg, media = struct.unpack_from('>Qq', data, body + 8 + 20 * i)
                else:
                    seg, media = struct.unpack_from('>Ii', data, body + 8 + 12 * i)
                edits.append((seg / movie_scale, media / timescale if media >= 0 else -1.0))
        # A demuxer presents sample times shifted by the first edit's media time (with B-frames
        # the encoder delays composition by it); empty edits (media time -1) start later.
        shift = next((media for _, media in edits if media >= 0), 0.0)
        dts, pts = 0, []
        for delta, off in zip(deltas, offsets):
            pts.append((dts + off) / timescale - shift)
            dts += delta
        return VideoTrack(codec=codec, width=width, height=height, timescale=timescale,
                          duration_ticks=duration, sample_pts=tuple(sorted(pts)),
                          has_ctts=bool(ctts), edits=tuple(edits))
    raise ConfigError(f'{path}: no video track')


__all__ = ['VideoTrack', 'read_video_track']
