"""Check and repair rosbag2/MCAP bags cut short by a crash (no ROS, no rosbags internals).

A bag whose writer was killed (``kill -9``, power loss of the recording PC) has an ``.mcap``
file without its summary and footer and no ``metadata.yaml``: ``rosbags`` refuses to open it.
:func:`repair_bag` scans the MCAP records from the start, keeps every complete message (also the
complete records of a chunk cut in the middle, when the chunk is uncompressed), and rewrites the
bag with :class:`rosbags.rosbag2.Writer`: a complete MCAP with summary and footer, and a fresh
``metadata.yaml``. The cut file is kept inside the repaired bag as ``<name>.mcap.cut`` (never
deleted; ``rosbags`` ignores it). Record layout: the MCAP specification, https://mcap.dev/spec.
"""

from __future__ import annotations

import dataclasses
import pathlib
import shutil
import struct
from typing import Iterator
import uuid

from realm_ros.core.errors import DataError

MAGIC = b'\x89MCAP0\r\n'
OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_FOOTER = 0x03, 0x04, 0x05, 0x06, 0x02


@dataclasses.dataclass
class RepairReport:
    """What :func:`repair_bag` found and did."""

    path: pathlib.Path
    status: str  # 'ok' (opened as is), 'repaired', 'empty' (nothing recoverable; rewritten)
    messages: dict[str, int] = dataclasses.field(default_factory=dict)  # topic -> count
    dropped_bytes: int = 0  # bytes of the cut file after the last complete record

    def __str__(self) -> str:
        total = sum(self.messages.values())
        text = f'{self.path}: {self.status}, {total} message(s)'
        if self.messages:
            text += ' (' + ', '.join(f'{t}: {n}' for t, n in sorted(self.messages.items())) + ')'
        if self.dropped_bytes:
            text += f', {self.dropped_bytes} trailing byte(s) of a cut record dropped'
        return text


def bag_opens(path: str | pathlib.Path) -> str:
    """Return '' if ``rosbags`` opens the bag and reads every message, else the reason."""
    from rosbags.rosbag2 import Reader

    try:
        with Reader(pathlib.Path(path)) as reader:
            for _ in reader.messages():
                pass
    except Exception as err:  # noqa: BLE001 - any failure to read is the answer
        return f'{type(err).__name__}: {err}'
    return ''


class _Buf:
    """A bounds-checked little-endian reader over bytes."""

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise EOFError
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u16(self) -> int:
        return struct.unpack('<H', self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack('<I', self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack('<Q', self.take(8))[0]

    def string(self) -> str:
        return bytes(self.take(self.u32())).decode()

    def blob(self) -> bytes:
        return bytes(self.take(self.u32()))


def _records(buf: _Buf) -> Iterator[tuple[int, memoryview]]:
    """Yield ``(opcode, content)`` of complete records; stop at the first cut one."""
    while True:
        start = buf.pos
        try:
            op = buf.take(1)[0]
            length = buf.u64()
            if op == OP_CHUNK and buf.pos + length > len(buf.data):
                buf.pos = start
                return  # a cut chunk: the caller salvages what it can
            content = buf.take(length)
        except EOFError:
            buf.pos = start
            return
        yield op, content


@dataclasses.dataclass
class _Scan:
    schemas: dict[int, tuple[str, str, str]] = dataclasses.field(default_factory=dict)
    channels: dict[int, tuple[str, int, str, bytes]] = dataclasses.field(default_factory=dict)
    messages: list[tuple[int, int, bytes]] = dataclasses.field(default_factory=list)
    end: int = 0
    footer: bool = False


def _parse(op: int, content: memoryview, scan: _Scan) -> None:
    rec = _Buf(content)
    if op == OP_SCHEMA:
        sid = rec.u16()
        scan.schemas[sid] = (rec.string(), rec.string(), rec.blob().decode())
    elif op == OP_CHANNEL:
        cid, sid, topic, encoding = rec.u16(), rec.u16(), rec.string(), rec.string()
        scan.channels[cid] = (topic, sid, encoding, rec.blob())
    elif op == OP_MESSAGE:
        cid, _seq, log_time, _pub = rec.u16(), rec.u32(), rec.u64(), rec.u64()
        scan.messages.append((cid, log_time, bytes(rec.data[rec.pos:])))
    elif op == OP_CHUNK:
        _parse_chunk(rec, len(content), scan)
    elif op == OP_FOOTER:
        scan.footer = True


def _parse_chunk(rec: _Buf, available: int, scan: _Scan) -> None:
    rec.u64(), rec.u64()
    size, _crc, compression, length = rec.u64(), rec.u32(), rec.string(), rec.u64()
    data: bytes | memoryview = rec.data[rec.pos:rec.pos + min(length, available - rec.pos)]
    if compression:
        try:
            data = _decompress(compression, bytes(data), size)
        except Exception:  # noqa: BLE001 - a cut compressed chunk cannot be salvaged
            return
    inner = _Buf(data)
    for op, content in _records(inner):
        try:
            _parse(op, content, scan)
        except (EOFError, UnicodeDecodeError):
            return


def _decompress(compression: str, data: bytes, size: int) -> bytes:
    if compression == 'zstd':
        try:
            from compression import zstd  # Python >= 3.14
        except ImportError:
            from backports import zstd
        return zstd.decompress(data)
    if compression == 'lz4':
        import lz4.frame
        return lz4.frame.decompress(data)
    raise DataError(f'unsupported MCAP chunk compression {compression!r}')


def scan_mcap(path: str | pathlib.Path) -> _Scan:
    """Return every complete schema, channel and message of an MCAP file, cut or not."""
    data = pathlib.Path(path).read_bytes()
    if len(data) < len(MAGIC) and MAGIC.startswith(data):
        return _Scan()  # cut before its header was out: an empty bag
    if not data.startswith(MAGIC):
        raise DataError(f'{path} is not an MCAP file (no MCAP magic at its start)')
    buf = _Buf(data)
    buf.pos = len(MAGIC)
    scan = _Scan()
    for op, content in _records(buf):
        try:
            _parse(op, content, scan)
        except (EOFError, UnicodeDecodeError):
            break
        scan.end = buf.pos
        if scan.footer:
            return scan
    if buf.pos < len(data) and data[buf.pos] == OP_CHUNK:  # salvage a cut, uncompressed chunk
        rec = _Buf(data)
        rec.pos = buf.pos + 9
        try:
            _parse_chunk(rec, len(data), scan)
        except (EOFError, UnicodeDecodeError):
            pass
    scan.end = max(scan.end, buf.pos)
    return scan


def _mcap_file(path: pathlib.Path) -> pathlib.Path:
    files = sorted(p for p in path.glob('*.mcap'))
    if not files:
        raise DataError(f'{path} holds no .mcap file: not a rosbag2/MCAP bag (nothing to repair)')
    if len(files) > 1:
        raise DataError(f'{path} holds {len(files)} .mcap files; repair handles one per bag')
    return files[0]


def repair_bag(path: str | pathlib.Path) -> RepairReport:
    """Make the bag at ``path`` readable by ``rosbags``; return what was recovered.

    A bag that already opens is left untouched (status ``ok``).

    Raises:
        DataError: ``path`` is not a bag directory or its file is not MCAP.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    path = pathlib.Path(path)
    if not path.is_dir():
        raise DataError(f'{path} is not a bag directory')
    if (path / 'metadata.yaml').exists() and not bag_opens(path):
        return RepairReport(path, 'ok')
    mcap = _mcap_file(path)
    scan = scan_mcap(mcap)
    size = mcap.stat().st_size
    staging = path.parent / f'.{path.name}.repair-{uuid.uuid4().hex[:8]}'
    staging.mkdir()
    new = staging / path.name
    counts: dict[str, int] = {}
    typestore = get_typestore(Stores.ROS2_KILTED)  # our own copy: unknown types join it
    writer = Writer(new, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    try:
        connections = {}
        for cid, (topic, sid, _encoding, _meta) in sorted(scan.channels.items()):
            name, _fmt, text = scan.schemas.get(sid, ('', '', ''))
            if not name:
                continue
            if name not in typestore.types:
                try:  # a type we do not know: learn it from the schema the bag carries
                    typestore.register(get_types_from_msg(text, name))
                except Exception:  # noqa: BLE001 - unparsable schema: that topic is skipped
                    continue
            connections[cid] = writer.add_connection(topic, name, typestore=typestore)
            counts.setdefault(topic, 0)
        for cid, t_ns, data in sorted(scan.messages, key=lambda m: m[1]):
            conn = connections.get(cid)
            if conn is not None:
                writer.write(conn, t_ns, data)
                counts[conn.topic] += 1
    finally:
        writer.close()
    shutil.move(str(mcap), str(new / f'{mcap.name}.cut'))
    for leftover in path.iterdir():  # e.g. a stale metadata.yaml: keep it beside the cut file
        shutil.move(str(leftover), str(new / f'{leftover.name}.cut'))
    path.rmdir()
    new.rename(path)
    staging.rmdir()
    status = 'repaired' if sum(counts.values()) else 'empty'
    return RepairReport(path, status, counts, max(0, size - scan.end) if not scan.footer else 0)


def bag_dirs(root: str | pathlib.Path, recursive: bool = False) -> list[pathlib.Path]:
    """Return the bag directories (folders holding ``*.mcap``) of ``root``: itself, else its
    children, or with ``recursive`` every folder below it (a run's ``bags_real/<pair>/``)."""
    root = pathlib.Path(root)
    if any(root.glob('*.mcap')):
        return [root]
    if recursive:
        return sorted({p.parent for p in root.rglob('*.mcap')})
    return sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob('*.mcap')))


def is_cut(path: pathlib.Path, deep: bool = True) -> bool:
    """Whether the bag at ``path`` needs repair: no ``metadata.yaml`` (what a killed writer
    leaves; cheap), or with ``deep`` a message rosbags cannot read."""
    return not (path / 'metadata.yaml').exists() or bool(deep and bag_opens(path))


def find_cut_bags(root: str | pathlib.Path, deep: bool = True) -> list[pathlib.Path]:
    """Return bag directories under ``root`` (itself or its children) that rosbags cannot open.

    ``deep=False`` only looks for a missing ``metadata.yaml`` (what a killed writer leaves;
    cheap); ``deep=True`` also reads every message of the other bags.
    """
    return [p for p in bag_dirs(root) if is_cut(p, deep)]
