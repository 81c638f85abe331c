"""Keras models: .h5 from model.save (Keras 1/2 `name:0` weight names and Keras 3), .h5 from save_weights
(Keras 2 layout, and Keras 3 `.weights.h5`), and the Keras 3 `.keras` zip (config.json + model.weights.h5).

Supported: Embedding (optional; none = one-hot input) -> recurrent layers (LSTM, GRU, SimpleRNN, CuDNN*) x n
-> Dense [-> softmax Activation], with inference no-ops (Dropout, ...) skipped. Every option that changes
inference is read from the stored config; nothing is assumed (old Keras defaulted recurrent_activation to
hard_sigmoid, and Keras 2 and 3 define hard_sigmoid differently). Keras LSTM kernels are [in, 4H] with gates
i, f, c, o: transposed they are PyTorch's [4H, in] with the same gate order. GRU kernels are [in, 3H] in
column blocks z, r, h, transposed and reordered to the format's rows r, z, n; reset_after=True keeps its two
biases ([2, 3H]: input, recurrent), reset_after=False (Keras <= 2.2's only form) has one.
"""
import io
import json
import os
import re
import zipfile

import numpy as np

from ..format import dense as fmt_dense
from ..format import gru_layer, rnn_layer
from ..format import layer as fmt_layer
from ..format import MAX_INPUT_LENGTH
from ..format import names as tensor_names

from . import common, contained
from .common import ConvertError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
# Layers that are the identity at inference.
NOOP_LAYERS = {"InputLayer", "Dropout", "SpatialDropout1D", "GaussianDropout", "GaussianNoise", "AlphaDropout",
               "ActivityRegularization"}
LSTM_LAYERS = {"LSTM", "CuDNNLSTM"}
# The other recurrent layers, format v3: GRU (both reset conventions; CuDNNGRU is reset_after with two biases)
# and SimpleRNN. The plan keeps kind "lstm" for every recurrent layer, its cell in info["cell"].
CELL_OF = {"LSTM": "lstm", "CuDNNLSTM": "lstm", "GRU": "gru", "CuDNNGRU": "gru", "SimpleRNN": "rnn"}
GATES = {"lstm": 4, "gru": 3, "rnn": 1}
# Cell activations of an LSTM and activations of a Dense before the output (format v2 for all but tanh).
CELL_ACTIVATIONS = ("tanh", "relu", "linear", "sigmoid")
HEAD_ACTIVATIONS = ("relu", "linear", "tanh", "sigmoid")
# LSTM options that do not change what a trained model computes at inference.
IGNORED_LSTM_OPTIONS = {"name", "trainable", "dtype", "batch_input_shape", "batch_shape", "input_shape",
                        "units", "kernel_initializer", "recurrent_initializer", "bias_initializer",
                        "unit_forget_bias", "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                        "activity_regularizer", "kernel_constraint", "recurrent_constraint",
                        "bias_constraint", "dropout", "recurrent_dropout", "implementation", "unroll",
                        "time_major", "return_state", "zero_output_for_mask", "seed", "use_cudnn",
                        "activation", "recurrent_activation", "use_bias", "return_sequences",
                        "go_backwards", "stateful", "reset_after"}


def detect(path):
    if not os.path.isfile(path):  # directories, and TF checkpoint prefixes (no file by that name)
        return False
    if path.endswith((".h5", ".hdf5", ".keras")):
        return True
    with open(path, "rb") as f:
        head = f.read(8)
    if head == HDF5_MAGIC:
        return True
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
        return "config.json" in names and "model.weights.h5" in names
    return False


def add_arguments(p):
    g = p.add_argument_group("Keras")
    g.add_argument("--recurrent-activation", choices=("sigmoid", "hard_sigmoid"),
                   help="weights-only files (save_weights) carry no config: the LSTM recurrent_activation "
                        "(required for them; ignored when the file has the model config)")
    g.add_argument("--architecture", metavar="FILE",
                   help="weights-only files (save_weights): the architecture, from a full model file of the same "
                        "model (.h5), its model.to_json() / model_config JSON, a model.to_yaml() file or a "
                        "TF.js model.json")
    g.add_argument("--input-length", type=int, metavar="N",
                   help="the fixed input window the app fed (pad_sequences(maxlen=N) before model.predict), for a "
                        "file that does not record it (weights-only files); written as config.json input_length, "
                        "so lstmlm pre-pads every context to N by default (overrides the file's)")
    g.add_argument("--keras-version", metavar="V",
                   help="Keras version that trained the model when the file does not say (decides what "
                        "hard_sigmoid means: Keras 2 clip(0.2x+0.5), Keras 3 clip(x/6+0.5))")


def _s(v):
    return v.decode("utf-8") if isinstance(v, bytes) else v


# Keras 1 layer options that do not change inference (initialisers, regularisers, training-time dropout, the
# implementation choice consume_less, shape bookkeeping).
KERAS1_IGNORED = {"init", "inner_init", "forget_bias_init", "W_regularizer", "U_regularizer", "b_regularizer",
                  "W_constraint", "U_constraint", "b_constraint", "dropout_W", "dropout_U", "consume_less",
                  "input_dim", "input_length", "input_dtype"}


def _is_keras1(cls, c):
    return cls in ("LSTM", "GRU", "SimpleRNN", "Dense") and "output_dim" in c and "units" not in c


def _keras1_to_keras2(cls, c):
    """A Keras 1 LSTM / Dense config in Keras 2 terms: output_dim -> units, inner_activation ->
    recurrent_activation (Keras 1's default hard_sigmoid when absent), bias -> use_bias; the options that
    do not change inference dropped. Anything else is kept, so an unknown option is still refused."""
    c = {k: v for k, v in c.items() if k not in KERAS1_IGNORED}
    c["units"] = c.pop("output_dim")
    if cls in ("LSTM", "GRU"):
        c["recurrent_activation"] = c.pop("inner_activation", "hard_sigmoid")
    if cls in ("LSTM", "GRU", "SimpleRNN"):
        c.setdefault("activation", "tanh")
    if "bias" in c:
        c["use_bias"] = c.pop("bias")
    return c


def config_is_keras1(model_config):
    """True when the layers use Keras 1 option names (output_dim, no units)."""
    try:
        layers = _layer_list(model_config, "")
    except (ConvertError, KeyError, TypeError, AttributeError):
        return False
    return any(isinstance(l, dict) and isinstance(l.get("config"), dict) and
               _is_keras1(l.get("class_name"), l["config"]) for l in layers)


def _activation_name(act, where):
    if isinstance(act, dict):  # Keras 3 may serialise {"class_name": "function", "config": "sigmoid"}
        cfg = act.get("config")
        act = cfg if isinstance(cfg, str) else act.get("class_name")
    if not isinstance(act, str):
        raise ConvertError(f"{where}: activation {act!r} is not a built-in activation name")
    return act


# ---------------------------------------------------------------------------------------------- config
def _layer_list(model_config, where):
    cls, cfg = model_config.get("class_name"), model_config.get("config")
    if cls == "Sequential":
        layers = cfg["layers"] if isinstance(cfg, dict) else cfg  # Keras < 2.2.3 stored a bare list
    elif cls in ("Functional", "Model"):
        layers = cfg["layers"]
        outs = cfg.get("output_layers", [])
        if isinstance(outs, list) and len(outs) > 0 and isinstance(outs[0], list) and len(outs) > 1:
            raise ConvertError(f"{where}: functional model with {len(outs)} outputs; one is supported")
    else:
        raise ConvertError(f"{where}: model class {cls!r} is not supported (Sequential or a single-chain "
                           "functional Model)")
    return layers


def _input_length(model_config):
    """The fixed input time dimension N of a model whose input shape is (batch, N[, features]): from the
    InputLayer's batch_shape (Keras 3) / batch_input_shape (Keras 2), else the first layer's
    batch_input_shape / input_shape (input_shape has no batch dimension), else Keras 3 Sequential's
    build_input_shape. None when the time dimension is None (any length) or no shape is recorded."""
    try:
        layers = _layer_list(model_config, "")
    except (ConvertError, KeyError, TypeError):
        return None
    shape = None
    for lay in layers[:2]:
        c = lay.get("config", {}) if isinstance(lay, dict) else {}
        for key in ("batch_shape", "batch_input_shape"):
            if isinstance(c.get(key), list):
                shape = c[key]
                break
        if shape is None and isinstance(c.get("input_shape"), list):
            shape = [None] + c["input_shape"]
        if shape is not None or lay.get("class_name") == "InputLayer":
            break
    cfg = model_config.get("config")
    if shape is None and isinstance(cfg, dict) and isinstance(cfg.get("build_input_shape"), list):
        shape = cfg["build_input_shape"]
    if shape is None or len(shape) < 2:
        return None
    n = shape[1]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return None
    return n


def _parse_architecture(model_config, keras_version, where):
    """[(kind, name, info)] for embedding / lstm / dense, in order; refuses what lstmlm cannot run. Dense
    layers between the last LSTM and the output Dense are the head (format v2, activations HEAD_ACTIVATIONS);
    the last Dense is the decoder: softmax, or linear followed by a softmax Activation/Softmax layer."""
    plan, out_done = [], False
    for lay in _layer_list(model_config, where):
        cls, c = lay.get("class_name"), lay.get("config", {})
        name = c.get("name", cls)
        lw = f"{where}: layer {name!r} ({cls})"
        if cls == "TimeDistributed" and c.get("layer", {}).get("class_name") == "Dense":
            inner = c["layer"]
            cls, c = "Dense", dict(inner.get("config", {}), name=name)
        if _is_keras1(cls, c):
            c = _keras1_to_keras2(cls, c)
        if cls in NOOP_LAYERS:
            continue
        trainable = bool(c.get("trainable", True))
        if out_done:
            raise ConvertError(f"{lw} follows the softmax output; nothing may come after it")
        if cls == "Embedding":
            if plan:
                raise ConvertError(f"{lw}: an Embedding is supported only as the first layer")
            plan.append(("embedding", name, {"input_dim": c.get("input_dim"), "output_dim": c.get("output_dim"),
                                             "mask_zero": bool(c.get("mask_zero", False)), "trainable": trainable}))
        elif cls in CELL_OF:
            if plan and plan[-1][0] == "dense":
                raise ConvertError(f"{lw}: a recurrent layer after a Dense layer is not supported")
            plan.append(("lstm", name, dict(_lstm_options(cls, c, keras_version, lw), trainable=trainable)))
        elif cls == "Dense":
            if not plan or plan[-1][0] not in ("lstm", "dense"):
                raise ConvertError(f"{lw}: the Dense output layer must follow an LSTM")
            act = _activation_name(c.get("activation", "linear"), lw)
            if act == "softmax":
                out_done = True
            elif act not in HEAD_ACTIVATIONS:
                raise ConvertError(f"{lw}: activation {act!r}; a Dense before the output layer takes "
                                   f"{', '.join(HEAD_ACTIVATIONS)}, the output Dense softmax")
            plan.append(("dense", name, {"units": c.get("units"), "use_bias": c.get("use_bias", True),
                                         "activation": act, "trainable": trainable, "lw": lw}))
        elif cls in ("Activation", "Softmax") and plan and plan[-1][0] == "dense" and \
                plan[-1][2]["activation"] == "linear":
            act = "softmax" if cls == "Softmax" else _activation_name(c.get("activation"), lw)
            if act != "softmax":
                raise ConvertError(f"{lw}: activation {act!r} after the output Dense; only softmax")
            if cls == "Softmax" and c.get("axis", -1) != -1:
                raise ConvertError(f"{lw}: softmax over axis {c.get('axis')} (only the last axis)")
            plan[-1][2]["activation"] = "softmax"
            out_done = True
        else:
            raise ConvertError(f"{lw}: layer type {cls} is not supported (Embedding -> LSTM... -> Dense... "
                               "[-> softmax])")
    kinds = [k for k, _, _ in plan]
    if "lstm" not in kinds or kinds[-1] != "dense":
        raise ConvertError(f"{where}: expected Embedding (optional) -> LSTM (1..n) -> Dense, found "
                           f"{' -> '.join(kinds) or 'no layers'}")
    if plan[-1][2]["activation"] != "softmax":
        out = plan[-1][2]
        what = (f"a {out['units']}-unit {out['activation']} classifier head, not a next-token softmax over the "
                "vocabulary: lstmlm converts language models only" if isinstance(out["units"], int) and
                out["units"] <= 2 and out["activation"] == "sigmoid" else
                "only softmax (in the Dense or a following Activation/Softmax layer) is a language model's output")
        raise ConvertError(f"{out['lw']}: output activation {out['activation']!r}; {what}")
    lstms = [info for k, _, info in plan if k == "lstm"]
    for info in lstms[:-1]:
        if not info["return_sequences"]:
            raise ConvertError(f"{where}: an inner LSTM has return_sequences=False")
    return plan


def _lstm_options(cls, c, keras_version, lw):
    if c.get("go_backwards"):
        raise ConvertError(f"{lw}: go_backwards=True (reads the sequence reversed) is not supported")
    if c.get("stateful"):
        raise ConvertError(f"{lw}: stateful=True (state carried across batches) is not supported; re-save the "
                           "model with stateful=False (the weights are the same)")
    cell = CELL_OF[cls]
    if cls in ("CuDNNLSTM", "CuDNNGRU"):  # fixed tanh / sigmoid, two bias vectors
        act, ract, use_bias = "tanh", "sigmoid", True
    else:
        for key in ("activation",) + (() if cell == "rnn" else ("recurrent_activation",)):
            if key not in c:
                raise ConvertError(f"{lw}: the config has no {key}; refusing to assume a default")
        act = _activation_name(c["activation"], lw)
        ract = "sigmoid" if cell == "rnn" else _activation_name(c["recurrent_activation"], lw)
        use_bias = bool(c.get("use_bias", True))
    unknown = sorted(k for k in c if k not in IGNORED_LSTM_OPTIONS or (k == "reset_after" and cell != "gru"))
    if unknown:
        raise ConvertError(f"{lw}: option(s) {', '.join(unknown)} not understood by this converter")
    allowed = ("tanh", "relu") if cell == "rnn" else CELL_ACTIVATIONS
    if act not in allowed:
        raise ConvertError(f"{lw}: activation={act!r}; the {cls} activation must be one of {', '.join(allowed)}")
    info = {"cell": cell, "activation": act, "use_bias": use_bias,
            "recurrent_activation": _recurrent_activation(ract, keras_version, lw),
            "return_sequences": bool(c.get("return_sequences", False)), "cudnn": cls.startswith("CuDNN")}
    if cell == "gru":
        info["reset_after"] = True if cls == "CuDNNGRU" else _reset_after(c, keras_version, lw)
    return info


def _reset_after(c, keras_version, lw):
    """A GRU's reset convention: the config's reset_after, else Keras' default when the file was written
    (False before Keras 2.3, which added the key; the key is always written since)."""
    if "reset_after" in c:
        if not isinstance(c["reset_after"], bool):
            raise ConvertError(f"{lw}: reset_after={c['reset_after']!r}, expected true or false")
        return c["reset_after"]
    if not keras_version:
        raise ConvertError(f"{lw}: the GRU config has no reset_after and the file does not say which Keras "
                           "wrote it (before 2.3 the default was false); give --keras-version")
    major, minor = (list(map(int, re.findall(r"\d+", str(keras_version))[:2])) + [0, 0])[:2]
    if (major, minor) >= (2, 3):
        raise ConvertError(f"{lw}: the GRU config of Keras {keras_version} has no reset_after (that Keras "
                           "always writes it): refusing to guess")
    return False


def _recurrent_activation(ract, keras_version, lw):
    if ract == "sigmoid":
        return "sigmoid"
    if ract == "hard_sigmoid":
        if not keras_version:
            raise ConvertError(f"{lw}: recurrent_activation=hard_sigmoid but the file does not say which "
                               "Keras wrote it (Keras 2: clip(0.2x+0.5), Keras 3: clip(x/6+0.5)); give "
                               "--keras-version")
        return "hard_sigmoid_keras3" if int(str(keras_version).split(".")[0]) >= 3 else "hard_sigmoid"
    raise ConvertError(f"{lw}: recurrent_activation={ract!r}; supported: sigmoid, hard_sigmoid")


# --------------------------------------------------------------------------------------------- weights
class _DatasetReader:
    """Reads HDF5 datasets as float32 arrays. h5py allocates a dataset's declared shape before reading,
    and returns the fill value for one that was never written: a few KB of file can declare gigabytes.
    So a dataset must have storage, and all of them together fit common.alloc_limit of the file."""

    def __init__(self, where, nbytes):
        self.where, self.limit = where, common.alloc_limit(nbytes)
        self.left = self.limit

    def __call__(self, ds, what):
        import h5py
        if not isinstance(ds, h5py.Dataset):
            raise ConvertError(f"{self.where}: {what} ({_s(ds.name)}) is a group, expected a dataset")
        if ds.shape is None or ds.dtype.kind not in "fiu":
            raise ConvertError(f"{self.where}: {what} ({_s(ds.name)}) has dtype {ds.dtype} and shape "
                               f"{ds.shape}, expected a numeric array")
        if ds.size and ds.id.get_storage_size() == 0:
            raise ConvertError(f"{self.where}: {what} ({_s(ds.name)}) of shape {list(ds.shape)} was declared "
                               "but never written (no storage in the file)")
        item = max(ds.dtype.itemsize, 4)  # read as float32
        self.left -= item * common.checked_count(list(ds.shape), item, self.left,
                                                 f"{self.where}: {what} ({_s(ds.name)})")
        return np.asarray(ds, dtype=np.float32)


def _strip(name):
    return re.sub(r":\d+$", "", _s(name)).split("/")[-1]


def _legacy_layer_weights(group, layer_name, read):
    """{kernel, recurrent_kernel, bias, embeddings: array} of one layer in the model.save/save_weights
    layout: group[layer]/<weight name> for each name in its weight_names attribute."""
    where = read.where
    if layer_name not in group:
        raise ConvertError(f"{where}: no weights for layer {layer_name!r}")
    g = group[layer_name]
    out = {}
    for wn in g.attrs.get("weight_names", []):
        wn = _s(wn)
        key = _strip(wn)
        if key in out:
            raise ConvertError(f"{where}: layer {layer_name!r} has two weights named {key!r}")
        if wn not in g:
            raise ConvertError(f"{where}: layer {layer_name!r}: weight {wn!r} (listed in weight_names) is missing")
        out[key] = read(g[wn], f"layer {layer_name!r}: weight {wn!r}")
    return out


_KERAS1_GATE = re.compile(r"(?:^|_)([WUb])_([icfo])$")
_KERAS1_GRU_GATE = re.compile(r"(?:^|_)([WUb])_([zrh])$")
_KERAS1_WHOLE = re.compile(r"(?:^|_)([WUb])$")


def keras1_weights(kind, w, where):
    """Keras 1 weight names in Keras 2 terms. An LSTM stores 12 per-gate arrays (W_i, U_i, b_i, W_c, ... with
    W [in, H], U [H, H], b [H]): concatenated in Keras 2's gate order i, f, c, o they are kernel,
    recurrent_kernel and bias. A Dense stores <name>_W / <name>_b, an Embedding <name>_W. kind None
    (weights-only file without an architecture): decided by the names. Keras 2/3 names pass unchanged."""
    if not w or any(k in w for k in ("kernel", "recurrent_kernel", "embeddings")):
        return w
    if kind == "lstm":
        # A Keras 1 GRU's per-gate arrays (W_z, U_z, b_z, W_r, ..., W_h): Keras 2's column blocks z, r, h.
        gru = {(m.group(1), m.group(2)): key for key in w for m in [_KERAS1_GRU_GATE.search(key)] if m}
        if gru:
            missing = [f"{a}_{g}" for a in "WUb" for g in "zrh" if (a, g) not in gru]
            if missing or len(gru) != len(w):
                raise ConvertError(f"{where}: Keras 1 GRU weights {sorted(w)}: expected the 9 per-gate arrays "
                                   f"W_*, U_*, b_* for gates z, r, h (missing: {', '.join(missing) or 'none'})")
            try:
                return {new: np.concatenate([w[gru[(a, g)]] for g in "zrh"], axis=axis)
                        for new, a, axis in (("kernel", "W", 1), ("recurrent_kernel", "U", 1), ("bias", "b", 0))}
            except ValueError as e:
                raise ConvertError(f"{where}: Keras 1 GRU per-gate arrays of different shapes "
                                   f"({', '.join(f'{k} {list(v.shape)}' for k, v in w.items())}): {e}") from None
        # consume_less='gpu' (and every SimpleRNN): the gates already concatenated as W, U, b.
        whole = {m.group(1): key for key in w for m in [_KERAS1_WHOLE.search(key)] if m}
        if {"W", "U"} <= set(whole) and len(whole) == len(w):
            out = {"kernel": w[whole["W"]], "recurrent_kernel": w[whole["U"]]}
            if "b" in whole:
                out["bias"] = w[whole["b"]]
            return out
    gates = {}
    for key in w:
        m = _KERAS1_GATE.search(key)
        if m:
            gates[(m.group(1), m.group(2))] = key
    if gates and kind in (None, "lstm"):
        missing = [f"{a}_{g}" for a in "WUb" for g in "icfo" if (a, g) not in gates]
        if missing or len(gates) != len(w):
            raise ConvertError(f"{where}: Keras 1 LSTM weights {sorted(w)}: expected the 12 per-gate arrays "
                               f"W_*, U_*, b_* for gates i, c, f, o (missing: {', '.join(missing) or 'none'})")
        try:
            return {new: np.concatenate([w[gates[(a, g)]] for g in "ifco"], axis=axis)
                    for new, a, axis in (("kernel", "W", 1), ("recurrent_kernel", "U", 1), ("bias", "b", 0))}
        except ValueError as e:
            raise ConvertError(f"{where}: Keras 1 LSTM per-gate arrays of different shapes "
                               f"({', '.join(f'{k} {list(v.shape)}' for k, v in w.items())}): {e}") from None
    ws = [k for k in w if k == "W" or k.endswith("_W")]
    bs = [k for k in w if k == "b" or k.endswith("_b")]
    if len(ws) == 1 and len(bs) <= 1 and len(w) == len(ws) + len(bs):
        if kind == "embedding" or (kind is None and not bs):
            return {"embeddings": w[ws[0]]}
        out = {"kernel": w[ws[0]]}
        if bs:
            out["bias"] = w[bs[0]]
        return out
    return w


_K3_VAR_NAMES = {"embedding": ["embeddings"], "lstm": ["kernel", "recurrent_kernel", "bias"],
                 "dense": ["kernel", "bias"]}


def _k3_groups(root):
    """{layer name: [(path, h5 group holding its variables)]} of a Keras 3 weights file: each layer is a
    group layers/<path> whose vars/ group carries the layer's name; an LSTM keeps its variables in cell/vars."""
    found = {}

    def visit(path, obj):
        if not hasattr(obj, "keys") or "vars" not in obj or "name" not in obj["vars"].attrs:
            return
        if path.split("/")[-1] == "cell":  # an RNN layer's cell: read through its layer below
            return
        g = obj["vars"]
        if len(g) == 0 and "cell" in obj and "vars" in obj["cell"]:
            g = obj["cell"]["vars"]
        if len(g):
            found.setdefault(_s(obj["vars"].attrs["name"]), []).append(("layers/" + path, g))
    root["layers"].visititems(visit)
    return found


def _k3_layer_weights(groups, kind, layer_name, read):
    where = read.where
    entries = groups.get(layer_name)
    if not entries:
        raise ConvertError(f"{where}: no weights for layer {layer_name!r}")
    path, g = entries[0]
    arrays = [read(g[str(i)], f"layer {layer_name!r} variable {i}") for i in range(len(g))]
    names = _K3_VAR_NAMES[kind]
    if kind == "lstm" and len(arrays) == 2:
        names = ["kernel", "recurrent_kernel"]
    if kind == "dense" and len(arrays) == 1:
        names = ["kernel"]
    if len(arrays) != len(names):
        raise ConvertError(f"{where}: layer {layer_name!r} ({path}) has {len(arrays)} variables, expected "
                           f"{len(names)} ({', '.join(names)})")
    return dict(zip(names, arrays))


# ------------------------------------------------------------------------------------------- assembling
def _build(plan, get_weights, where):
    tensors, layers, head, meta = {}, [], [], {"mask_zero": None}
    meta["head"] = head
    emb_dim, vocab_in, in_dim, k = 0, None, None, 0
    n_dense, di = sum(1 for kind, _, _ in plan if kind == "dense"), 0
    for kind, name, info in plan:
        lw = f"{where}: layer {name!r}"
        w = keras1_weights(kind, get_weights(kind, name), lw)
        if kind == "embedding":
            e = w.get("embeddings")
            if e is None or e.ndim != 2:
                raise ConvertError(f"{lw}: expected an embeddings matrix [V, E]")
            tensors[tensor_names.embedding] = e
            vocab_in, emb_dim, in_dim = e.shape[0], e.shape[1], e.shape[1]
            meta["mask_zero"] = info.get("mask_zero")
        elif kind == "lstm":
            cell = info.get("cell", "lstm")
            G = GATES[cell]
            kern, rec = w.get("kernel"), w.get("recurrent_kernel")
            if kern is None or rec is None or rec.ndim != 2 or kern.ndim != 2:
                raise ConvertError(f"{lw}: expected kernel [in, {G}H] and recurrent_kernel [H, {G}H]")
            hidden = rec.shape[0]
            if rec.shape[1] != G * hidden or kern.shape[1] != G * hidden:
                raise ConvertError(f"{lw}: kernel {kern.shape} / recurrent_kernel {rec.shape} are not [in, {G}H] "
                                   f"/ [H, {G}H]")
            if in_dim is not None and kern.shape[0] != in_dim:
                raise ConvertError(f"{lw}: kernel has {kern.shape[0]} inputs, the previous layer gives {in_dim}")
            if in_dim is None:  # no Embedding: one-hot input of vocabulary size
                vocab_in = kern.shape[0]
            bias, bias_hh = w.get("bias"), None
            two = info.get("cudnn") or (cell == "gru" and info.get("reset_after"))
            if info.get("cudnn"):  # CuDNN layers: input and recurrent biases concatenated
                if bias is None or bias.shape != (2 * G * hidden,):
                    raise ConvertError(f"{lw}: the CuDNN layer's bias should be [{2 * G}H] = [{2 * G * hidden}]")
                bias, bias_hh = bias[:G * hidden], bias[G * hidden:]
            elif two and info.get("use_bias", True):  # a reset_after GRU: [2, 3H], input then recurrent
                if bias is None or bias.shape != (2, G * hidden):
                    raise ConvertError(f"{lw}: a GRU with reset_after has bias [2, 3H] = [2, {G * hidden}], "
                                       f"found {None if bias is None else list(bias.shape)}")
                bias, bias_hh = bias[0], bias[1]
            elif info.get("use_bias", True):
                if bias is None or bias.shape != (G * hidden,):
                    raise ConvertError(f"{lw}: expected bias [{G}H] = [{G * hidden}]")
            else:
                bias = np.zeros(G * hidden, dtype=np.float32)
            if cell == "lstm" and bias_hh is not None:  # an LSTM's two biases are one sum
                bias, bias_hh = bias + bias_hh, None
            w_ih, w_hh = kern.T, rec.T
            if cell == "gru":  # Keras' column blocks z, r, h -> the format's rows r, z, n
                order = np.concatenate([np.arange(hidden, 2 * hidden), np.arange(hidden), np.arange(2 * hidden, 3 * hidden)])
                w_ih, w_hh, bias = w_ih[order], w_hh[order], bias[order]
                bias_hh = None if bias_hh is None else bias_hh[order]
            tensors[tensor_names.weight_ih(k, cell=cell)] = np.ascontiguousarray(w_ih)
            tensors[tensor_names.weight_hh(k, cell=cell)] = np.ascontiguousarray(w_hh)
            tensors[tensor_names.bias_ih(k, cell=cell)] = np.ascontiguousarray(bias)
            if bias_hh is not None:
                tensors[tensor_names.bias_hh(k, cell=cell)] = np.ascontiguousarray(bias_hh)
            if cell == "gru":
                layers.append(gru_layer(hidden, reset_after=bool(info.get("reset_after")),
                                        recurrent_activation=info["recurrent_activation"],
                                        activation=info.get("activation", "tanh")))
            elif cell == "rnn":
                layers.append(rnn_layer(hidden, activation=info.get("activation", "tanh")))
            else:
                layers.append(fmt_layer(hidden, recurrent_activation=info["recurrent_activation"],
                                        activation=info.get("activation", "tanh")))
            in_dim, k = hidden, k + 1
        elif kind == "dense":
            last = di == n_dense - 1
            di += 1
            kern = w.get("kernel")
            if kern is None or kern.ndim != 2 or kern.shape[0] != in_dim:
                raise ConvertError(f"{lw}: expected kernel [{in_dim}, {'V' if last else 'units'}]")
            size = kern.shape[1]
            bias = w.get("bias")
            if bias is None and info.get("use_bias", True):
                raise ConvertError(f"{lw}: the Dense has use_bias=True but no bias weight (has "
                                   f"{', '.join(sorted(w)) or 'none'})")
            if bias is None:
                bias = np.zeros(size, dtype=np.float32)
            if bias.shape != (size,):
                raise ConvertError(f"{lw}: bias {bias.shape} should be [{size}]")
            if not last:  # a head layer (format v2): y = act(W x + b), W = kernel.T [units, in]
                hk = len(head)
                tensors[tensor_names.head_weight(hk)] = kern.T
                tensors[tensor_names.head_bias(hk)] = bias
                head.append(fmt_dense(size, info["activation"]))
                in_dim = size
                continue
            if vocab_in != size:
                raise ConvertError(f"{lw}: {size} outputs but the input vocabulary has {vocab_in} ids; lstmlm "
                                   "needs one vocabulary for both")
            tensors[tensor_names.decoder_weight] = kern.T
            tensors[tensor_names.decoder_bias] = bias
    return tensors, layers, emb_dim, size, meta


def _weights_only_cell(name, w, ract, where):
    """A recurrent layer's plan info from its shapes: recurrent_kernel [H, 4H] is an LSTM, [H, 3H] a GRU whose
    bias says its reset convention ([2, 3H]: reset_after; [3H]: before). A SimpleRNN ([H, H]) is refused: its
    activation (tanh or relu) is in no weight."""
    rec, bias = w["recurrent_kernel"], w.get("bias")
    gates = rec.shape[1] // rec.shape[0] if rec.ndim == 2 and rec.shape[0] and rec.shape[1] % rec.shape[0] == 0 else 0
    info = {"recurrent_activation": ract, "use_bias": bias is not None, "return_sequences": True,
            "activation": "tanh"}
    if gates == 4:
        return dict(info, cell="lstm")
    if gates == 3 and bias is not None:
        return dict(info, cell="gru", reset_after=bias.ndim == 2)
    if gates == 3:
        raise ConvertError(f"{where}: layer {name!r} is a GRU without a bias: its reset_after is in no weight; "
                           "give --architecture FILE")
    if gates == 1:
        raise ConvertError(f"{where}: layer {name!r} is a SimpleRNN: its activation (tanh or relu) is in no "
                           "weight; give --architecture FILE")
    raise ConvertError(f"{where}: layer {name!r}: recurrent_kernel {list(rec.shape)} is not [H, 4H] (LSTM), "
                       "[H, 3H] (GRU) or [H, H] (SimpleRNN)")


def _weights_only_plan(entries, args, keras_version, where):
    """Architecture of a save_weights file from its shapes. entries: [(name, {var: array})]."""
    ract = args.recurrent_activation
    if not ract:
        raise ConvertError(f"{where}: weights-only file (no model config): give --architecture FILE (the "
                           "model's full file or its to_json()) or --recurrent-activation sigmoid|hard_sigmoid "
                           "(the LSTM setting the model was built with; not guessed)")
    ract = _recurrent_activation(ract, keras_version, where)
    plan = []
    for name, w in entries:
        keys = set(w)
        if keys == {"embeddings"}:
            plan.append(("embedding", name, {}))
        elif {"kernel", "recurrent_kernel"} <= keys:
            plan.append(("lstm", name, _weights_only_cell(name, w, ract, where)))
        elif "kernel" in keys and w["kernel"].ndim == 2 and keys <= {"kernel", "bias"}:
            plan.append(("dense", name, {"use_bias": "bias" in keys}))
        elif keys:
            raise ConvertError(f"{where}: layer {name!r} with weights {sorted(keys)} is not Embedding/LSTM/Dense")
    # Order: Embedding, then LSTMs chained by shape, then the Dense.
    emb = [p for p in plan if p[0] == "embedding"]
    lstms = [p for p in plan if p[0] == "lstm"]
    dense = [p for p in plan if p[0] == "dense"]
    if len(emb) > 1 or len(dense) != 1 or not lstms:
        raise ConvertError(f"{where}: expected at most one Embedding, LSTM layers and one Dense; found "
                           f"{len(emb)} / {len(lstms)} / {len(dense)}")
    w = dict(entries)
    chain, in_dim = [], w[emb[0][1]]["embeddings"].shape[1] if emb else None
    rest = list(lstms)
    while rest:
        nxt = [p for p in rest if in_dim is None or w[p[1]]["kernel"].shape[0] == in_dim]
        if in_dim is None:  # one-hot: the first LSTM is the one no other LSTM feeds
            hs = {w[p[1]]["recurrent_kernel"].shape[0] for p in rest}
            nxt = [p for p in rest if w[p[1]]["kernel"].shape[0] not in hs] or nxt
        if len(nxt) != 1:
            raise ConvertError(f"{where}: cannot order the LSTM layers by shape; use a full model file")
        chain.append(nxt[0])
        rest.remove(nxt[0])
        in_dim = w[nxt[0][1]]["recurrent_kernel"].shape[0]
    return emb + chain + dense


def _read_legacy_weights_only(f, read):
    names = [_s(n) for n in f.attrs["layer_names"]]
    return [(n, keras1_weights(None, _legacy_layer_weights(f, n, read), f"{read.where}: layer {n!r}"))
            for n in names]


def _read_k3_weights_only(root, read):
    where = read.where
    entries = []
    for name, lst in _k3_groups(root).items():
        path, g = lst[0]
        if path.startswith("optimizer"):
            continue
        arrays = [read(g[str(i)], f"layer {name!r} variable {i}") for i in range(len(g))]
        if len(arrays) == 1 and arrays[0].ndim == 2:
            entries.append((name, {"embeddings": arrays[0]}))
        elif len(arrays) in (2, 3) and arrays[0].ndim == 2 and arrays[1].ndim == 2:
            entries.append((name, dict(zip(["kernel", "recurrent_kernel", "bias"], arrays))))
        elif len(arrays) in (1, 2) and arrays[0].ndim == 2:
            entries.append((name, dict(zip(["kernel", "bias"], arrays))))
        else:
            raise ConvertError(f"{where}: layer {name!r} ({path}) has variables of shapes "
                               f"{[a.shape for a in arrays]}: not Embedding/LSTM/Dense")
    return entries


# ------------------------------------------------------------------------------------------------ entry
def _trainable(plan):
    """source.trainable (docs/model-format.md) from the stored layer configs: Keras's trainable flags."""
    keys, k = {}, 0
    n_dense, d = sum(1 for kind, _, _ in plan if kind == "dense"), 0
    for kind, _, info in plan:
        if kind == "lstm":
            key, k = f"{info.get('cell', 'lstm')}_l{k}", k + 1
        elif kind == "dense" and d < n_dense - 1:
            key, d = f"head_{d}", d + 1
        else:
            key = "embedding" if kind == "embedding" else "decoder"
        keys[key] = info["trainable"]
    return keys


def _keras_version(stated, config, source):
    """The Keras version that defines hard_sigmoid: the file's (or --keras-version), else 1 for a config in
    Keras 1 terms (output_dim / inner_activation: Keras 1's hard_sigmoid is clip(0.2x + 0.5, 0, 1))."""
    if stated:
        return stated
    if config is not None and config_is_keras1(config):
        source.setdefault("notes", []).append("Keras 1 config (output_dim, inner_activation): keras_version 1 "
                                              "assumed for hard_sigmoid = clip(0.2x + 0.5, 0, 1)")
        return "1"
    return None


class _YamlLoader:
    """yaml.SafeLoader that also reads the python/tuple tags of Keras' model.to_yaml() (as lists)."""

    @staticmethod
    def load(text):
        import yaml

        class Loader(yaml.SafeLoader):
            pass
        Loader.add_constructor("tag:yaml.org,2002:python/tuple",
                               lambda loader, node: loader.construct_sequence(node))
        return yaml.load(text, Loader=Loader)


def load_architecture(path):
    """(model_config dict, keras_version or None) from --architecture FILE: a full Keras HDF5 file (its
    model_config attribute), a model.to_json() / model_config JSON, a model.to_yaml() file, or a TF.js
    model.json (its modelTopology)."""
    with open(path, "rb") as f:
        head = f.read(8)
    if head == HDF5_MAGIC:
        import h5py
        with h5py.File(path, "r") as f:
            contained.check_hdf5_contained(f, path)
            if "model_config" not in f.attrs:
                raise ConvertError(f"{path}: --architecture HDF5 file has no model_config (a weights-only file "
                                   "cannot give an architecture)")
            return json.loads(_s(f.attrs["model_config"])), _s(f.attrs.get("keras_version", "")) or None
    if os.path.getsize(path) > 1 << 24:
        raise ConvertError(f"{path}: {os.path.getsize(path)} bytes: too large for a model architecture")
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        try:
            obj = _YamlLoader.load(text)
        except Exception as e:  # yaml's errors span lines; the message is what matters
            raise ConvertError(f"{path}: --architecture is neither JSON nor YAML ({type(e).__name__})") from None
    if isinstance(obj, dict) and isinstance(obj.get("modelTopology"), dict):  # TF.js model.json
        obj = obj["modelTopology"]
    version = obj.get("keras_version") if isinstance(obj, dict) else None
    if isinstance(obj, dict) and isinstance(obj.get("model_config"), dict):
        obj = obj["model_config"]
    if not isinstance(obj, dict) or "class_name" not in obj or "config" not in obj:
        raise ConvertError(f"{path}: --architecture holds no Keras model config ({{\"class_name\": ..., "
                           "\"config\": ...}}, as model.to_json() writes)")
    return obj, version if isinstance(version, str) else None


def convert(path, args):
    import h5py
    where = path
    base = os.path.basename(path)
    source = {"framework": "keras", "file": base, "exporter": "lstmlm-convert"}
    arch_path = getattr(args, "architecture", None)
    if zipfile.is_zipfile(path):
        limit = common.alloc_limit(path)
        with zipfile.ZipFile(path) as z:
            config = json.loads(common.read_zip_entry(z, "config.json", where, limit))
            meta = json.loads(common.read_zip_entry(z, "metadata.json", where, limit)) \
                if "metadata.json" in z.namelist() else {}
            weights_bytes = common.read_zip_entry(z, "model.weights.h5", where, limit)
        keras_version = meta.get("keras_version") or args.keras_version
        source.update(format="keras-v3-zip", keras_version=keras_version)
        read = _DatasetReader(where, len(weights_bytes))
        with h5py.File(io.BytesIO(weights_bytes), "r") as f:
            contained.check_hdf5_contained(f, f"{where}: model.weights.h5")
            groups = _k3_groups(f)
            return from_config(args, config, keras_version,
                               lambda kind, name: _k3_layer_weights(groups, kind, name, read), where, source)
    read = _DatasetReader(where, path)
    with h5py.File(path, "r") as f:
        contained.check_hdf5_contained(f, where)
        keras_version = _s(f.attrs.get("keras_version", "")) or args.keras_version
        source.update(keras_version=keras_version, backend=_s(f.attrs.get("backend", "")) or None)
        if "model_config" in f.attrs:
            config = json.loads(_s(f.attrs["model_config"]))
            keras_version = source["keras_version"] = _keras_version(keras_version, config, source)
            source["format"] = "h5-model"
            mw = f["model_weights"]
            return from_config(args, config, keras_version,
                               lambda kind, name: _legacy_layer_weights(mw, name, read), where, source)
        if "layer_names" not in f.attrs and "layers" not in f:
            raise ConvertError(f"{where}: HDF5 file holds neither a Keras model (model_config) nor Keras "
                               "weights (layer_names or layers/)")
        legacy = "layer_names" in f.attrs
        source["format"] = ("h5-weights (save_weights, Keras 1/2 layout)" if legacy else
                            "h5-weights (Keras 3 .weights.h5)")
        if arch_path:
            config, arch_version = load_architecture(arch_path)
            keras_version = _keras_version(keras_version or arch_version, config, source)
            if not legacy:
                keras_version = keras_version or "3"
            source.update(keras_version=keras_version, architecture=os.path.basename(arch_path))
            if legacy:
                get = lambda kind, name: _legacy_layer_weights(f, name, read)  # noqa: E731
            else:
                groups = _k3_groups(f)
                get = lambda kind, name: _k3_layer_weights(groups, kind, name, read)  # noqa: E731
            return from_config(args, config, keras_version, get, f"{where} (architecture {arch_path})", source)
        if legacy:
            entries = _read_legacy_weights_only(f, read)
        else:
            keras_version = keras_version or "3"
            entries = _read_k3_weights_only(f, read)
        source["keras_version"] = keras_version
        plan = _weights_only_plan(entries, args, keras_version, where)
        w = dict(entries)
        built = _build(plan, lambda kind, name: w[name], where)
        source["notes"] = ["architecture inferred from weight shapes (activation tanh, "
                           f"recurrent_activation {args.recurrent_activation} from the command line)"]
        return _finish(args, built, source, None, where)


def output_chain(config, output, where):
    """The functional config reduced to the chain of layers from the input to the output layer `output`
    (its name): refuses branches and merges on the way."""
    layers = config["config"]["layers"]
    by_name = {l.get("name", l.get("config", {}).get("name")): l for l in layers}
    chain, name, seen = [], output, set()
    while True:
        if name not in by_name or name in seen:
            raise ConvertError(f"{where}: layer {name!r} (on the way to output {output!r}) is not in the model")
        seen.add(name)
        lay = by_name[name]
        chain.append(lay)
        nodes = lay.get("inbound_nodes") or []
        if not nodes:
            break
        if len(nodes) != 1 or len(nodes[0]) != 1:
            raise ConvertError(f"{where}: layer {name!r} has {sum(len(n) for n in nodes)} inputs; only a single "
                               "chain of layers is supported")
        name = nodes[0][0][0]
    chain.reverse()
    cfg = dict(config["config"], layers=chain, output_layers=[[output, 0, 0]])
    return dict(config, config=cfg)


def output_names(config):
    """The names of a functional config's output layers, or None when it lists none."""
    outs = config["config"].get("output_layers") if isinstance(config.get("config"), dict) else None
    if not isinstance(outs, list):
        return None
    if outs and isinstance(outs[0], str):  # a single [name, 0, 0]
        outs = [outs]
    return [o[0] for o in outs if isinstance(o, list) and o and isinstance(o[0], str)]


def select_output(config, output, where):
    """A functional model with several outputs reduced to the chain of the one named by --output; without
    it, refused with the list of outputs."""
    outs = output_names(config) if config.get("class_name") in ("Functional", "Model") else None
    if not outs or (len(outs) == 1 and output in (None, outs[0])):
        if output is not None and outs is None:
            raise ConvertError(f"{where}: --output {output!r}: a {config.get('class_name')} model has one output")
        return config if output is None else output_chain(config, output, where)
    if output is None:
        raise ConvertError(f"{where}: the model has {len(outs)} outputs ({', '.join(outs)}); choose one with "
                           "--output NAME")
    if output not in outs:
        raise ConvertError(f"{where}: --output {output!r} is not an output of the model (outputs: "
                           f"{', '.join(outs)})")
    return output_chain(config, output, where)


def from_config(args, config, keras_version, get_weights, where, source, source_vocab=None):
    """write_model kwargs of a Keras model given its model_config (dict), the Keras version that defines
    hard_sigmoid, and get_weights(kind, layer name) -> {weight name: array} (Keras 1, 2 or 3 names):
    the layer mapping shared by the HDF5/zip reader and the TF.js reader. source_vocab: the vocabulary the
    source holds (a Vocab), if any."""
    config = select_output(config, getattr(args, "output", None), where)
    plan = _parse_architecture(config, keras_version, where)
    built = _build(plan, get_weights, where)
    source = dict(source, trainable=_trainable(plan))
    return _finish(args, built, source, _input_length(config), where, source_vocab)


def _finish(args, built, source, input_length, where, source_vocab=None):
    tensors, layers, emb_dim, size, meta = built
    given = getattr(args, "input_length", None)
    if given is not None:
        if not 1 <= given <= MAX_INPUT_LENGTH:
            raise ConvertError(f"{where}: --input-length {given} is not in [1, {MAX_INPUT_LENGTH}]")
        input_length = given
    elif input_length is None and str(source.get("format", "")).startswith("h5-weights"):
        # A weights-only file records no input shape: the model would run stateful where the app may have fed
        # a fixed window; say so and how to set it.
        common.note(f"{source.get('file', where)} is weights only and records no input length: the model runs "
                    "stateful over a whole context; if the app fed a fixed window (pad_sequences(maxlen=N) before "
                    "model.predict), reconvert with --input-length N")
    source["mask_zero"] = meta["mask_zero"]
    if meta["mask_zero"]:
        source.setdefault("notes", []).append(
            "Embedding mask_zero=True: Keras skips steps with id 0 (padding); do not feed pad ids")
    kwargs = common.assemble(args, size=size, tensors=tensors, embedding_dim=emb_dim, layers=layers, tied=False,
                             source=source, source_vocab=source_vocab, where=where, head=meta.get("head") or None)
    if input_length is not None:
        kwargs["input_length"] = input_length
    return kwargs
