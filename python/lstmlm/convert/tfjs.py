"""TensorFlow.js layers models -> lstmlm model: model.json ("format": "layers-model", or a modelTopology +
weightsManifest) with the Keras model config in modelTopology and the weights in binary shards.

The weights manifest is a list of groups {"paths": [shard files], "weights": [{name, shape, dtype,
quantization?}]}: a group's shards concatenated in order hold its weights back to back, in manifest order.
float32 weights are read as stored; quantized ones ({"dtype": "uint8"|"uint16", "scale", "min"}, newer
files add "original_dtype") are dequantized as TF.js does, value = q * scale + min; {"dtype": "float16"}
is read as half floats. Every size is checked before reading. The layers are then Keras layers, converted by
keras.from_config (the same mapping as .h5 files: Embedding -> LSTM... -> Dense [-> softmax]).
"""
import json
import os
import re

import numpy as np

from . import common, contained
from . import keras
from .common import ConvertError

MODEL_JSON = "model.json"
_QUANT_DTYPES = {"uint8": np.dtype("u1"), "uint16": np.dtype("<u2"), "float16": np.dtype("<f2")}


def _model_json(path):
    if os.path.isdir(path):
        p = os.path.join(path, MODEL_JSON)
        return p if os.path.isfile(p) else None
    return path if os.path.isfile(path) and path.endswith(".json") else None


def _load(path, limit=1 << 24):
    data = contained.read_contained(os.path.dirname(path), path, path, limit=limit)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConvertError(f"{path}: not JSON ({e})") from None


def _is_tfjs(obj):
    return isinstance(obj, dict) and (obj.get("format") == "layers-model" or
                                      ("modelTopology" in obj and "weightsManifest" in obj))


def detect(path):
    p = _model_json(path)
    if p is None:
        return False
    try:
        return _is_tfjs(_load(p))
    except (ConvertError, OSError):
        return False


def add_arguments(p):
    pass  # Keras' --keras-version applies when model.json does not say which Keras wrote the model


def _shape(w, where):
    shape = w.get("shape")
    if not isinstance(shape, list):
        raise ConvertError(f"{where}: shape {common.brief(shape)} is not a list")
    return shape


def _read_shard(base, p, f, size, gw):
    with contained.open_contained(base, f, f"{gw}: shard") as fh:
        data = fh.read(size + 1)
    if len(data) != size:
        raise ConvertError(f"{gw}: shard {common.brief(p)} has {len(data)} bytes now, {size} when the manifest "
                           "was checked (the file changed during the conversion)")
    return data


def read_weights(model_path, manifest):
    """{weight name: float32 array} of a weights manifest, every shard's size checked against what the
    manifest declares before anything is read."""
    base = os.path.dirname(model_path) or "."
    if not isinstance(manifest, list):
        raise ConvertError(f"{model_path}: weightsManifest is not a list of weight groups")
    out, listed = {}, set()
    for gi, group in enumerate(manifest):
        gw = f"{model_path}: weight group {gi}"
        if not isinstance(group, dict) or not isinstance(group.get("paths"), list) or \
                not isinstance(group.get("weights"), list):
            raise ConvertError(f"{gw}: expected {{\"paths\": [...], \"weights\": [...]}}")
        shards = []
        for p in group["paths"]:
            f = os.path.join(base, p) if isinstance(p, str) else None
            if f is None or os.path.isabs(p):
                raise ConvertError(f"{gw}: shard path {common.brief(p)} is not a file next to model.json")
            if not os.path.lexists(f):
                raise ConvertError(f"{gw}: shard {p} is missing")
            real = contained.contained_path(base, f, f"{gw}: shard")
            if real in listed:
                # The converter writes each shard once; one listed again would be read (and held) again.
                raise ConvertError(f"{gw}: shard {common.brief(p)} is listed twice in weightsManifest")
            listed.add(real)
            with contained.open_contained(base, f, f"{gw}: shard") as fh:
                shards.append((p, f, os.fstat(fh.fileno()).st_size))
        total = sum(n for _, _, n in shards)
        layout, offset = [], 0
        for w in group["weights"]:
            if not isinstance(w, dict) or not isinstance(w.get("name"), str):
                raise ConvertError(f"{gw}: weight entry {common.brief(w)} has no name")
            name = w["name"]
            what = f"{gw}: weight {name!r}"
            shape = _shape(w, what)
            q = w.get("quantization")
            if q is not None:
                if not isinstance(q, dict) or q.get("dtype") not in _QUANT_DTYPES:
                    raise ConvertError(f"{what}: quantization {common.brief(q)}; supported: uint8, uint16 "
                                       "(scale, min), float16")
                orig = q.get("original_dtype", w.get("dtype", "float32"))
                if orig != "float32":
                    raise ConvertError(f"{what}: quantized {orig} weights; only float32 ones are model weights")
                if q["dtype"] != "float16":
                    for k in ("scale", "min"):
                        if isinstance(q.get(k), bool) or not isinstance(q.get(k), (int, float)) or \
                                not np.isfinite(q[k]):
                            raise ConvertError(f"{what}: quantization {k} {common.brief(q.get(k))} is not a "
                                               "finite number")
                dt = _QUANT_DTYPES[q["dtype"]]
            else:
                if w.get("dtype", "float32") != "float32":
                    raise ConvertError(f"{what}: dtype {common.brief(w.get('dtype'))}; model weights are float32")
                dt = np.dtype("<f4")
            count = common.checked_count(shape, dt.itemsize, 1 << 62, what)  # ints only; sizes below
            nbytes = count * dt.itemsize
            if offset + nbytes > total:
                at, ends = 0, None
                for p, _, n in shards:
                    at += n
                    ends = p
                    if at >= offset:
                        break
                raise ConvertError(f"{what} (shape {shape}, {nbytes} bytes at byte {offset} of the group): the "
                                   f"group's shards hold {total} bytes; shard {shards[-1][0] if shards else '?'} "
                                   f"ends before the weight does (shorter than the manifest says; the weight "
                                   f"starts in shard {ends})")
            layout.append((name, shape, dt, q, offset, nbytes))
            offset += nbytes
        if offset != total:
            raise ConvertError(f"{gw}: the manifest declares {offset} bytes of weights, its shards "
                               f"({', '.join(p for p, _, _ in shards)}) hold {total}: shard and manifest disagree")
        data = b"".join(_read_shard(base, p, f, n, gw) for p, f, n in shards)
        for name, shape, dt, q, off, nbytes in layout:
            a = np.frombuffer(data, dtype=dt, count=nbytes // dt.itemsize, offset=off).reshape(shape)
            if q is not None and q["dtype"] != "float16":
                a = (a.astype(np.float64) * q["scale"] + q["min"])
            if name in out:
                raise ConvertError(f"{gw}: weight {name!r} appears twice in the manifest")
            out[name] = a.astype(np.float32)
    return out


def _layer_weights(weights, layer_names):
    """{layer name: {last name component: array}}: a weight belongs to the first component of its name that
    is a layer of the model (lstm_1/kernel, sequential/lstm_1/lstm_cell/kernel)."""
    by_layer = {}
    for name, a in weights.items():
        parts = re.sub(r":\d+$", "", name).split("/")
        layer = next((p for p in parts[:-1] if p in layer_names), parts[0])
        by_layer.setdefault(layer, {})[parts[-1]] = a
    return by_layer


def convert(path, args):
    mj = _model_json(path)
    if mj is None:
        raise ConvertError(f"{path}: not a TF.js model (no {MODEL_JSON})")
    obj = _load(mj)
    if not _is_tfjs(obj):
        raise ConvertError(f"{mj}: not a TF.js layers model (no \"format\": \"layers-model\", nor modelTopology + "
                           "weightsManifest)")
    if obj.get("format") not in (None, "layers-model"):
        raise ConvertError(f"{mj}: format {common.brief(obj.get('format'))}; only layers-model (a Keras model) "
                           "is read (a graph-model is a TF graph, not Keras layers)")
    topo = obj.get("modelTopology")
    if not isinstance(topo, dict):
        raise ConvertError(f"{mj}: modelTopology is not an object")
    config = topo.get("model_config", topo)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ConvertError(f"{mj}: modelTopology holds no Keras model config (class_name, config)")
    source = {"framework": "tfjs", "format": "tfjs layers-model", "file": os.path.basename(mj),
              "generated_by": obj.get("generatedBy"), "converted_by": obj.get("convertedBy"),
              "exporter": "lstmlm-convert"}
    version = topo.get("keras_version") or getattr(args, "keras_version", None)
    gen = str(obj.get("generatedBy") or "")
    m = re.match(r"keras v(\d[\w.]*)", gen)
    if not version and m:
        version = m.group(1)
    if not version and "tfjs-layers" in gen:
        # tfjs-layers' hardSigmoid is clip(0.2x + 0.5, 0, 1), Keras 2's.
        version = "2"
        source["notes"] = ["written by TensorFlow.js itself: hard_sigmoid = clip(0.2x + 0.5, 0, 1) (tfjs-layers)"]
    version = keras._keras_version(version, config, source)
    source["keras_version"] = version
    weights = read_weights(mj, obj.get("weightsManifest"))
    try:
        names = {l.get("config", {}).get("name") for l in keras._layer_list(config, mj) if isinstance(l, dict)}
    except (KeyError, TypeError, AttributeError):
        raise ConvertError(f"{mj}: modelTopology's model config has no layer list") from None
    by_layer = _layer_weights(weights, names)

    def get(kind, name):
        if name not in by_layer:
            raise ConvertError(f"{mj}: no weights for layer {name!r} in the weightsManifest (has "
                               f"{', '.join(sorted(by_layer)) or 'none'})")
        return by_layer[name]
    return keras.from_config(args, config, version, get, mj, source)
