"""Writer of the lstmlm model directory (format v1 to v4, docs/model-format.md), shared by every tool:
lstmlm.format.write_model.

Tensor names and the gate orders come from src/format/tensor_names.json, the spec the C++ loader is
generated from: `names.weight_ih(k)` (an LSTM layer's), `names.weight_ih(k, cell="gru")`, `names.embedding`,
..., `GATE_ORDER` (the LSTM's), `CELL_GATES` (every cell's), `CELL_TENSORS`. An installed package carries a
copy beside this file (cmake --install); the source tree and the build tree (whose lstmlm/format links here)
read the one in src/format."""
import json
import math
import os
import re
import shutil
import struct
import tempfile

import numpy as np

# A model is written in the oldest version that holds it: 4 only when its tokenizer is a subword one
# (sentencepiece, bpe); else 3 only when a layer is a GRU or a simple RNN or an LSTM with peepholes or a
# projection clip; else 2 only when it has a cell activation other than tanh or an output head (Dense layers
# before the decoder), so every other model stays readable by v1 builds.
FORMAT_VERSION = 1
FORMAT_VERSION_V2 = 2
FORMAT_VERSION_V3 = 3
FORMAT_VERSION_V4 = 4
# Version 5: a class-factored output (output.classes), the direct connections (output.direct), the exp
# approximation (exp), the state a reset starts from (state.h_l{k}), tokenizer.oov_input and the RNN's sigmoid.
FORMAT_VERSION_V5 = 5
LATEST_FORMAT_VERSION = FORMAT_VERSION_V5
# output.direct.size: the hash table's entries, bounded before anything is allocated (config.hpp kMaxDirectSize).
MAX_DIRECT_SIZE = 10 ** 9
MAX_DIRECT_ORDER = 20
EXP_KINDS = ("exact", "rnnlm")
OOV_INPUTS = ("skip", "zero")

# Tokenizer types: word and char split text here; sentencepiece (a SentencePiece .model file in the model
# directory) and bpe (text already split into pieces, "@@" ending a piece the next one continues) are format v4.
WORD_TOKENIZERS = ("word", "char")
SUBWORD_TOKENIZERS = ("sentencepiece", "bpe")
TOKENIZER_TYPES = WORD_TOKENIZERS + SUBWORD_TOKENIZERS
# The keys tokenizer objects of each kind may have (src/format/config.cpp refuses any other).
_TOKENIZER_KEYS = {
    "word": ("type", "lowercase", "filters", "split", "unk_token", "eos_token", "bos_token", "pad_id", "oov_input",
             "eos_is_line_break"),
    "char": ("type", "lowercase", "filters", "split", "unk_token", "eos_token", "bos_token", "pad_id"),
    "sentencepiece": ("type", "model", "lowercase", "unk_token", "eos_token", "bos_token", "pad_id"),
    "bpe": ("type", "continuation", "lowercase", "unk_token", "eos_token", "bos_token", "pad_id"),
}
# The three files of every model; an asset (write_model's `assets`, e.g. tokenizer.model) may not take their names.
MODEL_FILES = ("config.json", "vocab.json", "weights.safetensors")
DEFAULT_BPE_CONTINUATION = "@@"

# The loader's limits (include/lstmlm/config.hpp kMaxVocabSize, kMaxLayerWidth, kMaxLayerCount): a config
# outside them is refused by lstmlm, so the writer refuses it first.
MAX_VOCAB_SIZE = 1 << 28
MAX_LAYER_WIDTH = 1 << 16
MAX_LAYER_COUNT = 256
# config.json's optional input_length (kMaxInputLength): the fixed input window of a Keras model.
MAX_INPUT_LENGTH = 1000000
RECURRENT_ACTIVATIONS = ("sigmoid", "hard_sigmoid", "hard_sigmoid_keras3")
# Cell activations (format v2 for all but tanh) and head Dense activations.
ACTIVATIONS = ("tanh", "relu", "linear", "sigmoid")
# A simple RNN's activation (PyTorch nn.RNN's nonlinearity, ONNX RNN's Tanh / Relu).
RNN_ACTIVATIONS = ("tanh", "relu", "sigmoid")


def _spec_path():
    """The spec's path: beside this file when installed, else src/format/ of the source tree."""
    installed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensor_names.json")
    if os.path.isfile(installed):
        return installed
    # python/lstmlm/format/ in the source tree, reached directly or through the build tree's link.
    here = os.path.dirname(os.path.realpath(__file__))
    return os.path.normpath(os.path.join(here, os.pardir, os.pardir, os.pardir, "src", "format", "tensor_names.json"))


SPEC_PATH = _spec_path()
with open(SPEC_PATH, encoding="utf-8") as _f:
    _SPEC = json.load(_f)

# Rows of a layer's tensors are one block of H rows per gate, in the cell's order (PyTorch's); GATE_ORDER
# is the LSTM's.
CELL_GATES = {cell: tuple(spec["gate_order"]) for cell, spec in _SPEC["cells"].items()}
# The per-layer tensors (keys of names: "weight_ih", ..., "weight_ci") each cell may have.
CELL_TENSORS = {cell: tuple(spec["layer_tensors"]) for cell, spec in _SPEC["cells"].items()}
CELLS = tuple(CELL_GATES)
GATE_ORDER = CELL_GATES["lstm"]
GATE_COUNT = len(GATE_ORDER)


def layer_cell(layer_config):
    """The cell of a config.json layer: "lstm" when it names none (format v1/v2)."""
    return layer_config.get("cell", "lstm")


class _Names:
    """The tensor names of weights.safetensors: fixed ones as attributes (names.embedding), per-layer
    ones as functions of the 0-based layer index (names.weight_ih(0) == "lstm.weight_ih_l0")."""

    def __init__(self, templates):
        self.templates = dict(templates)
        for key, t in self.templates.items():
            setattr(self, key, self._per_layer(t) if "{k}" in t else t)

    @staticmethod
    def _per_layer(t):
        """names.weight_ih(0) == "lstm.weight_ih_l0"; names.weight_ih(0, cell="gru") == "gru.weight_ih_l0"."""
        return lambda k, cell="lstm": t.replace("{cell}", cell).replace("{k}", str(int(k)))

    def is_known(self, name, layers, num_heads=0):
        """True when `name` is a format tensor name for a model of these recurrent layers and `num_heads`
        head Dense layers. layers: the config's layer list (each layer's cell decides its names and which
        tensors it may have: a GRU has no weight_hr, an LSTM's are lstm.*), or a count of LSTM layers."""
        cells = ["lstm"] * layers if isinstance(layers, int) else [layer_cell(l) for l in layers]
        for key, t in self.templates.items():
            if "{k}" not in t:
                if name == t:
                    return True
                continue
            pre, post = t.split("{k}")
            if key.startswith("head_"):
                m = re.fullmatch(re.escape(pre) + r"(0|[1-9][0-9]*)" + re.escape(post), name)
                if m and int(m.group(1)) < num_heads:
                    return True
                continue
            for k, cell in enumerate(cells):
                if key in CELL_TENSORS.get(cell, ()) and name == getattr(self, key)(k, cell=cell):
                    return True
        return False


names = _Names(_SPEC["tensors"])


def write_safetensors(path, tensors, progress=None, f64=()):
    """tensors: dict name -> numpy array; written as F32 little-endian (F64 for the names in f64), in insertion
    order. progress: None, or called as progress(bytes_written, total_bytes, tensors_written) after the header
    and after each tensor."""
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        wide = name in f64
        a = np.ascontiguousarray(np.asarray(arr, dtype="<f8" if wide else "<f4"))
        b = a.tobytes()
        header[name] = {"dtype": "F64" if wide else "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)  # keeps the data section 8-byte aligned
    total = 8 + len(h) + offset
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        done = 8 + len(h)
        if progress:
            progress(done, total, 0)
        for k, b in enumerate(blobs):
            f.write(b)
            done += len(b)
            if progress:
                progress(done, total, k + 1)


def layer(hidden_size, proj_size=0, recurrent_activation="sigmoid", cell_clip=None, activation="tanh",
          peepholes=False, proj_clip=None):
    """An LSTM layer. peepholes (tensors names.weight_ci/cf/co(k), each [H]) and proj_clip (needs proj_size)
    are format v3, written only when set, so every other LSTM layer is written as format v1/v2 write it."""
    l = {"hidden_size": int(hidden_size), "proj_size": int(proj_size), "activation": activation,
         "recurrent_activation": recurrent_activation, "cell_clip": cell_clip}
    if peepholes:
        l["peepholes"] = True
    if proj_clip is not None:
        l["proj_clip"] = proj_clip
    return l


def gru_layer(hidden_size, reset_after=True, recurrent_activation="sigmoid", activation="tanh"):
    """A GRU layer (format v3), gates r, z, n: reset_after True is PyTorch's nn.GRU (and Keras
    reset_after=True, ONNX linear_before_reset=1), False applies r before W_hn (Keras <= 2.2, TF1 GRUCell,
    ONNX linear_before_reset=0). Tensors names.weight_ih(k, cell="gru"), ...: [3H, in], [3H, H], [3H]."""
    return {"cell": "gru", "hidden_size": int(hidden_size), "reset_after": bool(reset_after),
            "activation": activation, "recurrent_activation": recurrent_activation}


def rnn_layer(hidden_size, activation="tanh"):
    """A simple RNN layer (format v3): h' = activation(W_ih x + b_ih + W_hh h + b_hh), activation tanh or
    relu. Tensors names.weight_ih(k, cell="rnn"), ...: [H, in], [H, H], [H]."""
    return {"cell": "rnn", "hidden_size": int(hidden_size), "activation": activation}


def needs_v3(layers):
    """True when a layer needs format v3: a GRU or RNN cell, an LSTM's peepholes or projection clip."""
    return any(layer_cell(l) != "lstm" or l.get("peepholes") or l.get("proj_clip") is not None for l in layers)


def dense(units, activation):
    """One head layer (format v2): its tensors are names.head_weight(k) [units, in] and names.head_bias(k)."""
    return {"units": int(units), "activation": activation}


def tokenizer(type="word", lowercase=False, filters="", unk_token=None, eos_token=None, bos_token=None,
              pad_id=None, split=None, oov_input=None, eos_is_line_break=None):
    t = {"type": type, "lowercase": bool(lowercase), "filters": filters, "unk_token": unk_token,
         "eos_token": eos_token, "bos_token": bos_token, "pad_id": pad_id}
    if oov_input is not None:  # format v5: "zero" feeds an out-of-vocabulary word as the zero one-hot (rnnlm)
        t["oov_input"] = oov_input
    if eos_is_line_break is not None:  # format v5: eos is fed only where the text has a line break (rnnlm)
        t["eos_is_line_break"] = bool(eos_is_line_break)
    if split is not None:  # only when set (Keras): without it the model reads as before, str.split()
        t["split"] = split
    return t


def _subword_tokenizer(t, lowercase, unk_token, eos_token, bos_token, pad_id):
    """The fields a subword tokenizer shares; a special token or pad_id that is None is left out (absent)."""
    t["lowercase"] = bool(lowercase)
    for key, value in (("unk_token", unk_token), ("eos_token", eos_token), ("bos_token", bos_token),
                       ("pad_id", pad_id)):
        if value is not None:
            t[key] = value
    return t


def sentencepiece_tokenizer(model="tokenizer.model", unk_token=None, eos_token=None, bos_token=None, pad_id=None,
                            lowercase=False):
    """A SentencePiece tokenizer (format v4): `model` is the .model file's plain name inside the model directory
    (written by write_model's `assets`); vocab.json must be its pieces id for id; a special token is a piece
    (None: absent, as a model trained with bos_id=-1 has no bos)."""
    return _subword_tokenizer({"type": "sentencepiece", "model": model}, lowercase, unk_token, eos_token,
                              bos_token, pad_id)


def bpe_tokenizer(continuation=DEFAULT_BPE_CONTINUATION, unk_token=None, eos_token=None, bos_token=None,
                  pad_id=None, lowercase=False):
    """A pre-split BPE tokenizer (format v4; subword-nmt, fairseq): the text is already split into the
    vocabulary's pieces, `continuation` ending a piece the next one continues ("qu@@ ick")."""
    return _subword_tokenizer({"type": "bpe", "continuation": continuation}, lowercase, unk_token, eos_token,
                              bos_token, pad_id)


def check_file_name(name, field):
    """A plain file name inside the model directory (a tokenizer's model, an asset): no directory part, no
    '..', no NUL or control character, not one of the model's own three files (ValueError naming `field`)."""
    if not isinstance(name, str):
        raise ValueError(f"write_model: {field} is {type(name).__name__}, expected a file name")
    bad = (not name or name in (".", "..") or ".." in name or "/" in name or "\\" in name or
           any(ord(c) < 0x20 or ord(c) == 0x7F for c in name) or len(name.encode("utf-8", "replace")) > 255)
    if bad:
        raise ValueError(f"write_model: {field} {name!r} is not a plain file name inside the model directory "
                         "(no '/', '\\', '..' or control characters, 1..255 bytes)")
    if name in MODEL_FILES:
        raise ValueError(f"write_model: {field} {name!r} is one of the model's own files ({', '.join(MODEL_FILES)})")


def _int_in(value, lo, hi, field):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"write_model: {field} is {value!r}, expected an integer in {lo}..{hi}")


def _opt_str(value, field):
    if value is not None and not isinstance(value, str):
        raise ValueError(f"write_model: {field} is {type(value).__name__}, expected a string or null")


def _check_clip(l, key, p):
    clip = l.get(key)
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or
                             not math.isfinite(clip) or clip <= 0):
        raise ValueError(f"write_model: {p}{key} is {clip!r}, expected a positive finite number or null")


# The keys a layer of each cell may have (src/format/config.cpp refuses any other).
_LAYER_KEYS = {
    "lstm": ("cell", "hidden_size", "proj_size", "activation", "recurrent_activation", "cell_clip", "peepholes",
             "proj_clip"),
    "gru": ("cell", "hidden_size", "activation", "recurrent_activation", "reset_after"),
    "rnn": ("cell", "hidden_size", "activation"),
}


def check_layer(l, k):
    """One config.json layer against the loader's rules (ValueError naming layers[k].FIELD)."""
    p = f"layers[{k}]."
    cell = layer_cell(l)
    if cell not in _LAYER_KEYS:
        raise ValueError(f"write_model: {p}cell {cell!r} is not one of {', '.join(_LAYER_KEYS)}")
    extra = [key for key in l if key not in _LAYER_KEYS[cell]]
    if extra:
        raise ValueError(f"write_model: {p}{extra[0]}: a {cell} layer has no such field (it has "
                         f"{', '.join(_LAYER_KEYS[cell][1:])})")
    _int_in(l["hidden_size"], 1, MAX_LAYER_WIDTH, p + "hidden_size")
    activation = l.get("activation", "tanh")
    allowed = RNN_ACTIVATIONS if cell == "rnn" else ACTIVATIONS
    if activation not in allowed:
        raise ValueError(f"write_model: {p}activation {activation!r} is not one of {', '.join(allowed)}")
    if cell == "rnn":
        return
    if "recurrent_activation" in l or cell == "lstm":
        if l.get("recurrent_activation") not in RECURRENT_ACTIVATIONS:
            raise ValueError(f"write_model: {p}recurrent_activation {l.get('recurrent_activation')!r} is not one "
                             f"of {', '.join(RECURRENT_ACTIVATIONS)}")
    if cell == "gru":
        if not isinstance(l.get("reset_after", True), bool):
            raise ValueError(f"write_model: {p}reset_after is {l['reset_after']!r}, expected a boolean")
        return
    _int_in(l.get("proj_size", 0), 0, l["hidden_size"] - 1, p + "proj_size (0 or below hidden_size)")
    _check_clip(l, "cell_clip", p)
    _check_clip(l, "proj_clip", p)
    if not isinstance(l.get("peepholes", False), bool):
        raise ValueError(f"write_model: {p}peepholes is {l['peepholes']!r}, expected a boolean")
    if l.get("proj_clip") is not None and not l.get("proj_size", 0):
        raise ValueError(f"write_model: {p}proj_clip is {l['proj_clip']!r}, which needs a projection "
                         "(proj_size > 0)")


def check_trainable(trainable, layers, num_heads):
    """source.trainable (docs/model-format.md): booleans keyed embedding, decoder, {cell}_l{k} (a layer named by
    its cell: lstm_l0, gru_l1) and head_{k}; the loader refuses any other key."""
    if not isinstance(trainable, dict):
        raise ValueError(f"write_model: source.trainable is {type(trainable).__name__}, expected an object")
    known = {"embedding", "decoder"} | {f"{layer_cell(l)}_l{k}" for k, l in enumerate(layers)} | \
        {f"head_{k}" for k in range(num_heads)}
    for key, value in trainable.items():
        if key not in known:
            raise ValueError(f"write_model: source.trainable.{key}: unknown layer name (expected one of "
                             f"{', '.join(sorted(known))})")
        if not isinstance(value, bool):
            raise ValueError(f"write_model: source.trainable.{key} is {value!r}, expected a boolean")


def check_config(config):
    """The rules of src/format/config.cpp that a converter could break: a model lstmlm would refuse to load
    is a conversion error (ValueError naming the field), not a directory written with exit 0."""
    V = config["vocab_size"]
    _int_in(V, 1, MAX_VOCAB_SIZE, "vocab_size")
    _int_in(config["embedding_dim"], 0, MAX_LAYER_WIDTH, "embedding_dim (0 = one-hot input)")
    layers = config["layers"]
    if not 1 <= len(layers) <= MAX_LAYER_COUNT:
        raise ValueError(f"write_model: {len(layers)} layers, expected 1..{MAX_LAYER_COUNT}")
    for k, l in enumerate(layers):
        check_layer(l, k)
    trainable = (config.get("source") or {}).get("trainable")
    if trainable is not None:
        check_trainable(trainable, layers, len(config["output"].get("head", [])))
    for k, d in enumerate(config["output"].get("head", [])):
        _int_in(d["units"], 1, MAX_LAYER_WIDTH, f"output.head[{k}].units")
        if d.get("activation") not in ACTIVATIONS:
            raise ValueError(f"write_model: output.head[{k}].activation {d.get('activation')!r} is not one of "
                             f"{', '.join(ACTIVATIONS)}")
    t = config["tokenizer"]
    if t.get("type") not in TOKENIZER_TYPES:
        raise ValueError(f"write_model: tokenizer.type {t.get('type')!r} is not one of {', '.join(TOKENIZER_TYPES)}")
    extra = [key for key in t if key not in _TOKENIZER_KEYS[t["type"]]]
    if extra:
        raise ValueError(f"write_model: tokenizer.{extra[0]}: a {t['type']} tokenizer has no such field (it has "
                         f"{', '.join(_TOKENIZER_KEYS[t['type']][1:])})")
    if not isinstance(t.get("lowercase", False), bool):
        raise ValueError(f"write_model: tokenizer.lowercase is {t.get('lowercase')!r}, expected a boolean")
    for key in ("filters", "split", "unk_token", "eos_token", "bos_token"):
        _opt_str(t.get(key), "tokenizer." + key)
    if t.get("split") is not None and (t["split"] == "" or t["type"] != "word"):
        raise ValueError(f"write_model: tokenizer.split is {t['split']!r}, expected a non-empty string on a "
                         "word model, or null")
    if t["type"] == "sentencepiece":
        if "model" not in t:
            raise ValueError("write_model: tokenizer.model is missing: a sentencepiece tokenizer names its .model "
                             "file in the model directory")
        check_file_name(t["model"], "tokenizer.model")
    if t["type"] == "bpe" and "continuation" in t:
        c = t["continuation"]
        if not isinstance(c, str) or not c or any(ch.isspace() for ch in c):
            raise ValueError(f"write_model: tokenizer.continuation is {c!r}, expected a non-empty string without "
                             "whitespace")
    version = config.get("format_version")
    if version is not None:
        _int_in(version, 1, LATEST_FORMAT_VERSION, "format_version")
        if t["type"] in SUBWORD_TOKENIZERS and version < FORMAT_VERSION_V4:
            raise ValueError(f"write_model: tokenizer.type {t['type']!r} needs format_version {FORMAT_VERSION_V4} "
                             f"(format_version {version} has word and char tokenizers only)")
    if t.get("pad_id") is not None:
        _int_in(t["pad_id"], 0, V - 1, "tokenizer.pad_id")
    if config.get("input_length") is not None:
        _int_in(config["input_length"], 1, MAX_INPUT_LENGTH, "input_length")
    out = config["output"]
    if "classes" in out:
        _int_in(out["classes"], 1, V, "output.classes")
    if "direct" in out:
        _int_in(out["direct"]["size"], 1, MAX_DIRECT_SIZE, "output.direct.size")
        _int_in(out["direct"]["order"], 1, MAX_DIRECT_ORDER, "output.direct.order")
        if "classes" in out and out["direct"]["size"] < 2 * out["classes"]:
            raise ValueError("write_model: output.direct.size is below twice output.classes")
    if config.get("exp", "exact") not in EXP_KINDS:
        raise ValueError(f"write_model: exp {config['exp']!r} is not one of {', '.join(EXP_KINDS)}")
    if t.get("oov_input", "skip") not in OOV_INPUTS:
        raise ValueError(f"write_model: tokenizer.oov_input {t['oov_input']!r} is not one of {', '.join(OOV_INPUTS)}")


def _lone_surrogate(obj, field):
    """The field (`tokenizer.unk_token`, `source.layers[2]`) of the first string in `obj` that holds a lone
    surrogate, with that string, or None: such a string is not Unicode text, and UTF-8 cannot encode it."""
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return field, obj
        return None
    if isinstance(obj, dict):
        items = [(k, f"{field}.{k}" if field else str(k)) for k in obj]
        for k, f in items:
            found = _lone_surrogate(k, f"{f} (the key)") or _lone_surrogate(obj[k], f)
            if found:
                return found
    elif isinstance(obj, (list, tuple)):
        for i, x in enumerate(obj):
            found = _lone_surrogate(x, f"{field}[{i}]")
            if found:
                return found
    return None


def check_text(config, vocab):
    """Every string written (config.json, vocab.json) must be Unicode text: a lone surrogate ("\\ud800" in a
    JSON source, an undecodable byte of an option) is refused as a ValueError naming the field."""
    for name, encode, obj, root in (
            ("vocab.json", lambda: "".join(t for t in vocab if isinstance(t, str)).encode("utf-8"), list(vocab),
             "token"),
            ("config.json", lambda: json.dumps(config, ensure_ascii=False, default=str).encode("utf-8"), config, "")):
        try:
            encode()
        except UnicodeEncodeError:
            field, text = _lone_surrogate(obj, root)
            raise ValueError(f"write_model: {name}: {field} {text!r} holds a lone surrogate: not Unicode text, "
                             "which the model's JSON files are (UTF-8)") from None


def _write_files(outdir, config, vocab, tensors, progress=None, assets=None, f64=()):
    with open(os.path.join(outdir, "config.json"), "w", encoding="utf-8") as f:
        # allow_nan=False: NaN / Infinity are not JSON; a float that slipped past check_config fails here.
        f.write(json.dumps(config, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    with open(os.path.join(outdir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(list(vocab), f, ensure_ascii=False)
        f.write("\n")
    for name, data in (assets or {}).items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
    write_safetensors(os.path.join(outdir, "weights.safetensors"), tensors, progress, f64)


def check_assets(assets, tokenizer):
    """write_model's `assets`: {plain file name: bytes}; a sentencepiece tokenizer's model must be one of them
    (the loader reads it from the model directory). Returns the dict with bytes values."""
    if assets is None:
        assets = {}
    if not isinstance(assets, dict):
        raise ValueError(f"write_model: assets is {type(assets).__name__}, expected a dict of file name -> bytes")
    out = {}
    for name, data in assets.items():
        check_file_name(name, "asset")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValueError(f"write_model: asset {name!r} is {type(data).__name__}, expected bytes")
        out[name] = bytes(data)
    if isinstance(tokenizer, dict) and tokenizer.get("type") == "sentencepiece" and tokenizer.get("model") not in out:
        raise ValueError(f"write_model: tokenizer.model {tokenizer.get('model')!r} is not among the assets written "
                         f"({', '.join(sorted(out)) or 'none'}): a sentencepiece model needs its .model file in the "
                         "model directory")
    return out


def _replace_files(tmp, outdir, files):
    """Moves `files` from tmp into the existing directory outdir, each with os.replace; on a failure the files
    already moved are put back as they were (a previous file restored from a hard link kept beside it, a new one
    removed), so outdir ends as it was."""
    backup = tempfile.mkdtemp(prefix=os.path.basename(os.path.abspath(outdir)) + ".old-", dir=os.path.dirname(tmp))
    done = []  # (name, kept a previous file)
    try:
        for name in files:
            dst = os.path.join(outdir, name)
            kept = os.path.lexists(dst)
            if kept:
                try:
                    os.link(dst, os.path.join(backup, name), follow_symlinks=False)
                except OSError:
                    shutil.copy2(dst, os.path.join(backup, name), follow_symlinks=False)
            done.append((name, kept))
            os.replace(os.path.join(tmp, name), dst)
    except BaseException:
        for name, kept in reversed(done):
            dst = os.path.join(outdir, name)
            try:
                if kept:
                    os.replace(os.path.join(backup, name), dst)
                elif os.path.lexists(dst) and not os.path.lexists(os.path.join(tmp, name)):
                    os.remove(dst)
            except OSError:
                pass
        raise
    finally:
        shutil.rmtree(backup, ignore_errors=True)


def write_model(outdir, *, vocab, embedding_dim, layers, tied, tokenizer, tensors, source, input_length=None,
                head=None, progress=None, assets=None, classes=None, direct=None, exp=None, f64=()):
    """Writes config.json, vocab.json and weights.safetensors (and the assets) into outdir (created if needed;
    in an existing directory these files are replaced, other files are left alone).
    A tensor name outside the spec (src/format/tensor_names.json) is a converter bug, and a config lstmlm
    would refuse is a bad source: ValueError, nothing written. The files are written into a temporary
    sibling directory and moved into place only when all are complete, so a failure at any point
    leaves outdir as it was (absent, or with its previous files).
    input_length: the model's fixed input time dimension (Keras Input shape (None, N)), written as the
    top-level "input_length" when given (lstmlm then pre-pads every context to it by default).
    layers: layer(...) (LSTM), gru_layer(...), rnn_layer(...) in stack order; format_version 3 is written only
    when one needs it (needs_v3), else 2 or 1 as before; 4 only for a subword tokenizer (sentencepiece_tokenizer,
    bpe_tokenizer).
    head: Dense layers (dense(units, activation)) between the last recurrent layer and the decoder, format v2.
    progress: None, or progress(bytes_written, total_bytes, tensors_written) while weights.safetensors is written.
    assets: None, or {file name: bytes} written beside the three files, e.g. {"tokenizer.model": data} for
    sentencepiece_tokenizer(): plain file names only (check_file_name), moved into place with the rest.
    classes: None, or C for a class-factored output (tensors class.weight [C, in], class.bias [C],
    class.word_class [V]); direct: None, or {"size": N, "order": K}, the direct connections (direct.weight [N]);
    exp: None, or "rnnlm" (rnnlm's exp approximation): format v5.
    f64: names of tensors written as F64 (format v5): values a float32 would round, which lstmlm's
    double-precision path reads as they are."""
    head = list(head or [])
    assets = check_assets(assets, tokenizer)
    unknown = [n for n in tensors if not names.is_known(n, layers, len(head))]
    if unknown:
        cells = "+".join(layer_cell(l) for l in layers)
        raise ValueError(f"write_model: tensor name {unknown[0]!r} is not in the lstmlm format spec "
                         f"({os.path.normpath(SPEC_PATH)}) for {len(layers)} recurrent layer(s) ({cells}) and "
                         f"{len(head)} head layer(s)")
    if isinstance(embedding_dim, np.integer):
        embedding_dim = int(embedding_dim)
    v2 = bool(head) or any(l.get("activation", "tanh") != "tanh" for l in layers)
    subword = isinstance(tokenizer, dict) and tokenizer.get("type") in SUBWORD_TOKENIZERS
    version = FORMAT_VERSION_V4 if subword else FORMAT_VERSION_V3 if needs_v3(layers) else \
        FORMAT_VERSION_V2 if v2 else FORMAT_VERSION
    output = {"tied": bool(tied)}
    if head:
        output["head"] = head
    if classes is not None:
        output["classes"] = int(classes)
    if direct is not None:
        output["direct"] = {"size": int(direct["size"]), "order": int(direct["order"])}
    v5 = classes is not None or direct is not None or exp is not None or \
        any(l.get("activation") == "sigmoid" and l.get("cell") == "rnn" for l in layers) or \
        (isinstance(tokenizer, dict) and ("oov_input" in tokenizer or "eos_is_line_break" in tokenizer)) or \
        any(n.startswith("state.") for n in tensors) or bool(f64)
    if v5:
        version = FORMAT_VERSION_V5
    config = {"format": "lstmlm", "format_version": version,
              "vocab_size": len(vocab), "embedding_dim": embedding_dim, "layers": layers, "output": output,
              "tokenizer": tokenizer, "source": source}
    if input_length is not None:
        config["input_length"] = int(input_length) if isinstance(input_length, np.integer) else input_length
    if exp is not None:
        config["exp"] = exp
    check_config(config)
    check_text(config, vocab)
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise FileExistsError(f"{outdir}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(outdir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(os.path.abspath(outdir)) + ".tmp-", dir=parent)
    try:
        _write_files(tmp, config, vocab, tensors, progress, assets, f64)
        if os.path.isdir(outdir):
            # The assets first and config.json last: a reader never sees a config naming a file not yet there.
            _replace_files(tmp, outdir, list(assets) + ["vocab.json", "weights.safetensors", "config.json"])
            os.rmdir(tmp)
        else:
            os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700; a model directory is an ordinary one
            os.rename(tmp, outdir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
