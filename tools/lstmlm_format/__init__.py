"""Writer of the lstmlm model directory (format v1, docs/model-format.md), shared by every tool."""
import json
import os
import struct

import numpy as np

FORMAT_VERSION = 1


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
    """Writes config.json, vocab.json and weights.safetensors into outdir (created if needed)."""
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
