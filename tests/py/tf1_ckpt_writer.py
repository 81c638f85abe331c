"""Writes small TF1 V2 checkpoints (index SSTable + one data shard) for tests of the reader and converter.

Follows the same public formats the reader parses (LevelDB table_format.txt, tensor_bundle.proto), so a
synthetic checkpoint can exercise the naming eras and cell options that the two real ones do not cover.
"""
import struct

import numpy as np

import pyutil  # noqa: F401  (puts the package lstmlm on the path)
from lstmlm.convert.tf1_checkpoint import crc32c, mask_crc


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num, wire, payload):
    key = _varint((num << 3) | wire)
    if wire == 0:
        return key + _varint(payload)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    if wire == 5:
        return key + struct.pack("<I", payload)
    raise ValueError(wire)


def _entry(offset, raw, shape, crc=True):
    dims = b"".join(_field(2, 2, _field(1, 0, d)) for d in shape)
    return (_field(1, 0, 1) + _field(2, 2, dims) + _field(4, 0, offset) + _field(5, 0, len(raw))
            + (_field(6, 5, mask_crc(crc32c(raw))) if crc else b""))


def _block(entries):
    body = bytearray()
    restarts = []
    for key, value in entries:  # every entry is a restart point (shared = 0): valid, just not compact
        restarts.append(len(body))
        body += _varint(0) + _varint(len(key)) + _varint(len(value)) + key + value
    for r in restarts:
        body += struct.pack("<I", r)
    body += struct.pack("<I", len(restarts))
    return bytes(body)


def _with_trailer(block):
    return block + b"\x00" + struct.pack("<I", mask_crc(crc32c(block + b"\x00")))


def write_checkpoint(prefix, tensors, crc=True):
    """tensors: dict name -> float32 array. Writes PREFIX.index and PREFIX.data-00000-of-00001; crc False leaves
    the crc32c out of every entry (TF never does)."""
    data = bytearray()
    entries = [(b"", _field(1, 0, 1))]  # BundleHeaderProto: num_shards 1, little-endian
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        entries.append((name.encode(), _entry(len(data), raw, list(np.shape(tensors[name])), crc)))
        data += raw
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(data)
    write_index(prefix, entries)


def write_index(prefix, entries):
    """PREFIX.index: the sorted (key, value) entries in one block, its index block, an empty meta block and
    the footer."""
    block = _block(entries)
    index = _with_trailer(block)
    handle = _varint(0) + _varint(len(block))
    index_block = _block([(entries[-1][0] + b"\xff", handle)])
    index_offset = len(index)
    index += _with_trailer(index_block)
    meta_block = _block([])
    meta_offset = len(index)
    index += _with_trailer(meta_block)
    footer = _varint(meta_offset) + _varint(len(meta_block)) + _varint(index_offset) + _varint(len(index_block))
    footer += b"\x00" * (40 - len(footer)) + struct.pack("<Q", 0xDB4775248B80FB57)
    with open(prefix + ".index", "wb") as f:
        f.write(bytes(index) + footer)
