"""Writer of the lstmlm model directory (format v1, docs/model-format.md), shared by every tool.

Tensor names and the gate order come from src/format/tensor_names.json, the spec the C++ loader is
generated from: `names.weight_ih(k)`, `names.embedding`, ..., `GATE_ORDER`."""
import json
import os
import re
import struct

import numpy as np

FORMAT_VERSION = 1

SPEC_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "src", "format",
                         "tensor_names.json")
with open(SPEC_PATH, encoding="utf-8") as _f:
    _SPEC = json.load(_f)

# Rows of the 4H-row LSTM tensors are four blocks of H rows in this order (PyTorch's).
GATE_ORDER = tuple(_SPEC["gate_order"])
GATE_COUNT = len(GATE_ORDER)


class _Names:
    """The tensor names of weights.safetensors: fixed ones as attributes (names.embedding), per-layer
    ones as functions of the 0-based layer index (names.weight_ih(0) == "lstm.weight_ih_l0")."""

    def __init__(self, templates):
        self.templates = dict(templates)
        for key, t in self.templates.items():
            setattr(self, key, (lambda t: lambda k: t.replace("{k}", str(int(k))))(t) if "{k}" in t else t)

    def is_known(self, name, num_layers):
        """True when `name` is a format tensor name for a model of `num_layers` LSTM layers."""
        for t in self.templates.values():
            if "{k}" not in t:
                if name == t:
                    return True
                continue
            pre, post = t.split("{k}")
            m = re.fullmatch(re.escape(pre) + r"(0|[1-9][0-9]*)" + re.escape(post), name)
            if m and int(m.group(1)) < num_layers:
                return True
        return False


names = _Names(_SPEC["tensors"])


def write_safetensors(path, tensors):
    """tensors: dict name -> numpy array; written as F32 little-endian, in insertion order."""
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        a = np.ascontiguousarray(np.asarray(arr, dtype="<f4"))
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)  # keeps the data section 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def layer(hidden_size, proj_size=0, recurrent_activation="sigmoid", cell_clip=None):
    return {"hidden_size": int(hidden_size), "proj_size": int(proj_size), "activation": "tanh",
            "recurrent_activation": recurrent_activation, "cell_clip": cell_clip}


def tokenizer(type="word", lowercase=False, filters="", unk_token=None, eos_token=None, bos_token=None,
              pad_id=None):
    return {"type": type, "lowercase": bool(lowercase), "filters": filters, "unk_token": unk_token,
            "eos_token": eos_token, "bos_token": bos_token, "pad_id": pad_id}


def write_model(outdir, *, vocab, embedding_dim, layers, tied, tokenizer, tensors, source):
    """Writes config.json, vocab.json and weights.safetensors into outdir (created if needed).
    A tensor name outside the spec (src/format/tensor_names.json) is a converter bug: ValueError, nothing written."""
    unknown = [n for n in tensors if not names.is_known(n, len(layers))]
    if unknown:
        raise ValueError(f"write_model: tensor name {unknown[0]!r} is not in the lstmlm format spec "
                         f"({os.path.normpath(SPEC_PATH)}) for {len(layers)} LSTM layer(s)")
    os.makedirs(outdir, exist_ok=True)
    config = {"format": "lstmlm", "format_version": FORMAT_VERSION, "vocab_size": len(vocab),
              "embedding_dim": int(embedding_dim), "layers": layers, "output": {"tied": bool(tied)},
              "tokenizer": tokenizer, "source": source}
    with open(os.path.join(outdir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(outdir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(list(vocab), f, ensure_ascii=False)
        f.write("\n")
    write_safetensors(os.path.join(outdir, "weights.safetensors"), tensors)
