"""Reader of TensorFlow 1 V2 checkpoints (`PREFIX.index` + `PREFIX.data-0000k-of-0000N`) without TensorFlow.

The .index is a LevelDB SSTable (tensorflow/core/lib/io/table_format.txt), written uncompressed by TF:
data blocks of prefix-compressed key/value entries with restart points, an index block mapping the last
key of each data block to its BlockHandle, and a 48-byte footer ending in a magic number. Each value is a
serialized tensorflow.BundleEntryProto (dtype, shape, shard_id, offset, size, crc32c); the entry with the
empty key is the BundleHeaderProto (num_shards, endianness). Protobuf is decoded by hand (varints).
Every block trailer and every tensor read is checked against its masked CRC-32C (Castagnoli).
"""
import math
import os
import struct

import numpy as np


from .contained import open_contained
from .errors import ConvertError  # noqa: F401  (re-exported: the converter's one error type)

# --- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) ------------------------------------------------


def _make_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data, crc=0):
    """CRC-32C of bytes; crc32c(b"123456789") == 0xE3069283 (the standard check value)."""
    crc ^= 0xFFFFFFFF
    t = _TABLE
    for b in bytes(data):
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def mask_crc(crc):
    """LevelDB/TF masking: rotate right by 15 and add a constant, so CRCs of CRCs stay well distributed."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# --- protobuf wire format ----------------------------------------------------------------------------------


def _varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _fields(buf):
    """Yields (field_number, wire_type, value) of one message; value is int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = struct.unpack_from("<Q", buf, pos)[0], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = bytes(buf[pos:pos + n]), pos + n
        elif wire == 5:
            value, pos = struct.unpack_from("<I", buf, pos)[0], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated protobuf field")
        yield field, wire, value


# tensorflow/core/framework/types.proto
DTYPES = {1: ("float32", "<f4"), 2: ("float64", "<f8"), 3: ("int32", "<i4"), 4: ("uint8", "u1"),
          5: ("int16", "<i2"), 6: ("int8", "i1"), 7: ("string", None), 9: ("int64", "<i8"), 10: ("bool", "?"),
          14: ("bfloat16", None), 17: ("uint16", "<u2"), 19: ("float16", "<f2")}


class Entry:
    """One tensorflow.BundleEntryProto."""

    def __init__(self, name, value):
        self.name = name
        self.dtype, self.shape, self.shard_id, self.offset, self.size = 0, [], 0, 0, 0
        self.crc32c, self.sliced = None, False
        for field, _, v in _fields(value):
            if field == 1:
                self.dtype = v
            elif field == 2:  # TensorShapeProto: repeated Dim dim = 2 {int64 size = 1}
                for f2, _, dim in _fields(v):
                    if f2 == 2:
                        size = next((s for f3, _, s in _fields(dim) if f3 == 1), 0)
                        # int64 on the wire: >= 2^63 is negative (-1 = unknown), never a stored tensor's.
                        if size >= 1 << 63:
                            raise ValueError(f"shape dimension {size - (1 << 64)} is negative")
                        self.shape.append(size)
            elif field == 3:
                self.shard_id = v
            elif field == 4:
                self.offset = v
            elif field == 5:
                self.size = v
            elif field == 6:
                self.crc32c = v
            elif field == 7:
                self.sliced = True

    @property
    def dtype_name(self):
        return DTYPES.get(self.dtype, (f"dtype {self.dtype}", None))[0]


# --- LevelDB SSTable -------------------------------------------------------------------------------------

_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48


def _block(data, offset, size, file):
    """Returns the contents of the block at a BlockHandle after checking its 5-byte trailer."""
    end = offset + size
    if end + 5 > len(data):
        raise ConvertError(f"{file}: block at offset {offset} (size {size}) runs past the end of the file "
                           f"({len(data)} bytes); the index is truncated")
    contents, kind = data[offset:end], data[end]
    stored = struct.unpack_from("<I", data, end + 1)[0]
    if mask_crc(crc32c(data[offset:end + 1])) != stored:
        raise ConvertError(f"{file}: block at offset {offset} fails its crc32c check; the index is corrupt")
    if kind != 0:
        raise ConvertError(f"{file}: block at offset {offset} has compression type {kind}; "
                           "TensorFlow writes checkpoint indexes uncompressed (type 0)")
    return contents


def _block_entries(block, file):
    """Key/value pairs of one block (keys are prefix-compressed against the previous key)."""
    if len(block) < 4:
        raise ConvertError(f"{file}: block of {len(block)} bytes is too short for its restart count")
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    limit = len(block) - 4 - 4 * num_restarts
    if limit < 0:
        raise ConvertError(f"{file}: block restart count {num_restarts} exceeds the block size")
    pos, key = 0, b""
    try:
        while pos < limit:
            shared, pos = _varint(block, pos)
            non_shared, pos = _varint(block, pos)
            value_len, pos = _varint(block, pos)
            if shared > len(key) or pos + non_shared + value_len > limit:
                raise ValueError("entry runs past the block")
            key = key[:shared] + bytes(block[pos:pos + non_shared])
            pos += non_shared
            yield key, bytes(block[pos:pos + value_len])
            pos += value_len
    except ValueError as e:
        raise ConvertError(f"{file}: malformed block entry at byte {pos}: {e}") from None


def read_sstable(path, root=None):
    """Returns the list of (key, value) of an uncompressed LevelDB table, in key order. The file must resolve
    inside `root` (default: its own directory)."""
    with open_contained(os.path.dirname(path) if root is None else root, path, path) as f:
        data = f.read()
    if len(data) < _FOOTER:
        raise ConvertError(f"{path}: {len(data)} bytes, shorter than the 48-byte table footer; "
                           "the index is truncated or not a TF checkpoint index")
    footer = data[-_FOOTER:]
    if struct.unpack_from("<Q", footer, 40)[0] != _MAGIC:
        raise ConvertError(f"{path}: no table magic number at the end of the file; "
                           "the index is truncated or not a TF V2 checkpoint index")
    _, pos = _varint(footer, 0)  # metaindex handle (unused: TF writes no filter blocks)
    _, pos = _varint(footer, pos)
    index_offset, pos = _varint(footer, pos)
    index_size, pos = _varint(footer, pos)
    out = []
    for _, handle in _block_entries(_block(data, index_offset, index_size, path), path):
        off, p = _varint(handle, 0)
        size, _ = _varint(handle, p)
        out.extend(_block_entries(_block(data, off, size, path), path))
    return out


# --- the checkpoint --------------------------------------------------------------------------------------


class Checkpoint:
    """Tensors of a TF V2 checkpoint by name. `prefix` is the path without `.index`; every file of the
    checkpoint must resolve inside `root` (default: the prefix's directory), the directory the user gave."""

    def __init__(self, prefix, root=None):
        self.prefix = prefix
        self.root = os.path.dirname(prefix) if root is None else root
        self.index_path = prefix + ".index"
        if not os.path.lexists(self.index_path):
            raise ConvertError(f"{self.index_path}: not found (a TF checkpoint is given by its prefix, "
                               "e.g. save/model.ckpt-1000 for save/model.ckpt-1000.index)")
        self.num_shards = 1
        self.entries = {}
        for key, value in read_sstable(self.index_path, self.root):
            try:
                if key == b"":
                    for field, _, v in _fields(value):
                        if field == 1:
                            self.num_shards = v
                        elif field == 2 and v != 0:
                            raise ConvertError(f"{self.index_path}: header says big-endian tensors; "
                                               "only little-endian checkpoints are supported")
                    continue
                name = key.decode("utf-8")
                self.entries[name] = Entry(name, value)
            except (ValueError, UnicodeDecodeError) as e:
                raise ConvertError(f"{self.index_path}: malformed entry {key!r}: {e}") from None
        self._shards = {}

    def names(self):
        return sorted(self.entries)

    def shape(self, name):
        return tuple(self.entries[name].shape)

    def shard_path(self, shard_id):
        return f"{self.prefix}.data-{shard_id:05d}-of-{self.num_shards:05d}"

    def _shard(self, shard_id):
        if shard_id not in self._shards:
            path = self.shard_path(shard_id)
            if not os.path.lexists(path):
                raise ConvertError(f"{path}: data shard not found (named by {self.index_path})")
            with open_contained(self.root, path, f"{path}: data shard") as f:
                self._shards[shard_id] = f.read()
        return self._shards[shard_id]

    def tensor(self, name):
        """The tensor as a numpy array of its stored dtype, after checking its crc32c."""
        if name not in self.entries:
            raise ConvertError(f"{self.index_path}: no variable named '{name}'")
        e = self.entries[name]
        np_dtype = DTYPES.get(e.dtype, (None, None))[1]
        if np_dtype is None or e.sliced:
            what = "partitioned (sliced) variable" if e.sliced else f"dtype {e.dtype_name}"
            raise ConvertError(f"{self.index_path}: variable '{name}' has {what}, which is not supported")
        path = self.shard_path(e.shard_id)
        data = self._shard(e.shard_id)
        if e.offset + e.size > len(data):
            raise ConvertError(f"{path}: variable '{name}' at bytes {e.offset}..{e.offset + e.size} runs past "
                               f"the end of the shard ({len(data)} bytes); the data file is truncated")
        raw = data[e.offset:e.offset + e.size]
        if e.crc32c is None:
            # TF writes a checksum for every tensor: without one, nothing ties these bytes to this index.
            raise ConvertError(f"{self.index_path}: variable '{name}' has no crc32c in its index entry; TensorFlow "
                               "writes one for every tensor, so the checkpoint is damaged or was not written by TF")
        if mask_crc(crc32c(raw)) != e.crc32c:
            raise ConvertError(f"{path}: variable '{name}' fails its crc32c check "
                               f"(bytes {e.offset}..{e.offset + e.size}); the data file is corrupt")
        # Python ints: numpy's int64 product of a 2^62 x 4 shape wraps around with a RuntimeWarning.
        count = math.prod(e.shape)
        itemsize = np.dtype(np_dtype).itemsize
        if count * itemsize != len(raw):
            raise ConvertError(f"{self.index_path}: variable '{name}' has shape {e.shape} ({count} x {itemsize} "
                               f"bytes) but {len(raw)} stored bytes")
        return np.frombuffer(raw, dtype=np_dtype).reshape(e.shape)
