"""msgpack with numpy arrays, in the two wire encodings realm_ros speaks.

openpi (websocket policy servers) encodes an ``np.ndarray`` as the map
``{b'__ndarray__': True, b'data': raw bytes (C order), b'dtype': dtype.str, b'shape': shape}``
and a numpy scalar as ``{b'__npgeneric__': True, b'data': value.item(), b'dtype': dtype.str}``.
The keys are msgpack *bin* values (Python ``bytes``), not strings. This is not the format of the
PyPI ``msgpack-numpy`` package.

GR00T (ZeroMQ policy servers since Aug/Sep 2025) encodes an ``np.ndarray`` as
``{'__ndarray_class__': True, 'as_npy': <bytes of np.save(..., allow_pickle=False)>}`` with string
keys, and its ``ModalityConfig`` objects as ``{'__ModalityConfig_class__': True, 'as_json': ...}``
(a JSON string in N1.5, a plain map in N1.6/N1.7), which realm_ros decodes to a plain dict.

Neither encoding ever falls back to pickle: object, void and complex dtypes are refused, and
``np.load`` runs with ``allow_pickle=False``.
"""

from __future__ import annotations

import io
import json
from typing import Any

import msgpack
import numpy as np

_REFUSED_KINDS = ('O', 'V', 'c')


def _check_dtype(dtype: np.dtype) -> None:
    if dtype.kind in _REFUSED_KINDS:
        raise ValueError(f'cannot serialise numpy dtype {dtype} (object, void and complex '
                         'arrays are refused: they would need pickle)')


# ---- openpi encoding ----------------------------------------------------------------------------

def openpi_encode(obj: Any) -> Any:
    """msgpack ``default`` hook: numpy arrays and scalars -> openpi maps."""
    if isinstance(obj, np.ndarray):
        _check_dtype(obj.dtype)
        return {b'__ndarray__': True, b'data': np.ascontiguousarray(obj).tobytes(),
                b'dtype': obj.dtype.str, b'shape': list(obj.shape)}
    if isinstance(obj, np.generic):
        _check_dtype(obj.dtype)
        return {b'__npgeneric__': True, b'data': obj.item(), b'dtype': obj.dtype.str}
    raise TypeError(f'cannot serialise {type(obj).__name__} with msgpack')


def openpi_decode(obj: dict) -> Any:
    """msgpack ``object_hook``: openpi maps -> numpy arrays and scalars; other maps unchanged."""
    if b'__ndarray__' in obj:
        dtype = np.dtype(obj[b'dtype'])
        _check_dtype(dtype)
        # A copy, so the array owns writable memory rather than viewing msgpack's buffer.
        return np.frombuffer(obj[b'data'], dtype=dtype).reshape(obj[b'shape']).copy()
    if b'__npgeneric__' in obj:
        dtype = np.dtype(obj[b'dtype'])
        _check_dtype(dtype)
        return dtype.type(obj[b'data'])
    return obj


def openpi_packb(obj: Any) -> bytes:
    """Serialise ``obj`` (dicts, lists, str, numbers, numpy) in openpi's encoding."""
    return msgpack.packb(obj, default=openpi_encode, use_bin_type=True)


def openpi_unpackb(data: bytes) -> Any:
    """Parse bytes written by :func:`openpi_packb` or by openpi itself."""
    return msgpack.unpackb(data, object_hook=openpi_decode, raw=False, strict_map_key=False)


# ---- GR00T encoding -----------------------------------------------------------------------------

def gr00t_encode(obj: Any) -> Any:
    """msgpack ``default`` hook: numpy arrays -> GR00T's ``np.save`` maps."""
    if isinstance(obj, np.ndarray):
        _check_dtype(obj.dtype)
        buffer = io.BytesIO()
        np.save(buffer, obj, allow_pickle=False)
        return {'__ndarray_class__': True, 'as_npy': buffer.getvalue()}
    if isinstance(obj, np.generic):
        # GR00T's own encoder does not handle numpy scalars; send them as plain numbers.
        return obj.item()
    raise TypeError(f'cannot serialise {type(obj).__name__} with msgpack')


def gr00t_decode(obj: dict) -> Any:
    """msgpack ``object_hook``: GR00T maps -> numpy arrays; ModalityConfig -> a plain dict."""
    if '__ndarray_class__' in obj:
        return np.load(io.BytesIO(obj['as_npy']), allow_pickle=False)
    if '__ModalityConfig_class__' in obj:
        config = obj['as_json']
        return json.loads(config) if isinstance(config, (str, bytes)) else dict(config)
    return obj


def gr00t_packb(obj: Any) -> bytes:
    """Serialise ``obj`` in GR00T's encoding."""
    return msgpack.packb(obj, default=gr00t_encode, use_bin_type=True)


def gr00t_unpackb(data: bytes) -> Any:
    """Parse bytes written by :func:`gr00t_packb` or by a GR00T server."""
    return msgpack.unpackb(data, object_hook=gr00t_decode, raw=False, strict_map_key=False)


__all__ = ['gr00t_decode', 'gr00t_encode', 'gr00t_packb', 'gr00t_unpackb', 'openpi_decode',
           'openpi_encode', 'openpi_packb', 'openpi_unpackb']
