#!/usr/bin/python3
"""Writes the seed corpora fuzz/corpus/<target>/ from the bundled models and ../shared/data.

Run from the repository root: /usr/bin/python3 fuzz/make_corpus.py. The outputs are committed; rerun only
when the model format changes. Seeds are small (libFuzzer mutates them; -max_len bounds the rest).
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
DATA = os.path.join(ROOT, "..", "shared", "data")
MODELS = ["charrnn-space", "fairytales-word"]


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def safetensors(tensors):
    """tensors: [(name, dtype, shape, raw bytes)] -> a valid safetensors file."""
    header, off, body = {}, 0, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        body += raw
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + body


def main():
    for m in MODELS:
        d = os.path.join(ROOT, "models", m)
        with open(os.path.join(d, "weights.safetensors"), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            f.seek(0)
            # The real header plus a few data bytes: the reader must refuse the short data section.
            put("safetensors", m + "-header", f.read(8 + n + 16))
        for name, target in (("config.json", "config"), ("vocab.json", "vocab")):
            with open(os.path.join(d, name), "rb") as f:
                put(target, m + "-" + name, f.read())
    f32 = struct.pack("<6f", 0.5, -1.0, 2.0, 0.0, 1e-3, -7.5)
    put("safetensors", "tiny-valid", safetensors([
        ("a", "F32", [2, 3], f32), ("b", "F16", [2], struct.pack("<2e", 1.5, -2.0)),
        ("c", "BF16", [1, 1], b"\x80\x3f"), ("d", "F32", [0, 4], b"")]))
    put("vocab", "tiny", '["<pad>", "<unk>", "a", "a", "\\u00e9", "\\ud83d\\ude00"]')
    put("config", "minimal", json.dumps({
        "format": "lstmlm", "format_version": 1, "vocab_size": 3, "embedding_dim": 0,
        "layers": [{"hidden_size": 2, "proj_size": 1, "activation": "tanh",
                    "recurrent_activation": "hard_sigmoid", "cell_clip": 3.0}],
        "output": {"tied": False},
        "tokenizer": {"type": "char", "lowercase": False, "filters": "", "unk_token": None,
                      "eos_token": None, "bos_token": None, "pad_id": 0}}))
    lines = [b"the old man and the sea", b"", b"a", b"  \t  spaces\t", b"CRLF line\r",
             b"\xef\xbb\xbfbom first", b"nul\x00byte", b"bad \xff\xfe utf-8", b"cut \xe6\x97",
             b"overlong \xc0\xaf", b"surrogate \xed\xa0\x80", "ΣΊΣΥΦΟΣ straße İ".encode()]
    for path in ("corpora-french/notre-dame-de-paris.txt", "corpora-ptb/ptb.valid.txt"):
        p = os.path.join(DATA, path)
        if os.path.exists(p):
            with open(p, "rb") as f:
                got = [l for l in f.read(20000).split(b"\n") if len(l) > 20][:6]
            lines += got
            if path.startswith("corpora-french"):
                lines.append(b"\xef\xbb\xbf" + got[0])
    for i, l in enumerate(lines):
        put("tokenizer", "line%02d" % i, l)
        put("score_line", "line%02d" % i, l)


if __name__ == "__main__":
    main()
