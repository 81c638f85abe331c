"""TF2 SavedModels of subclassed Keras models: tf.saved_model.save(obj, DIR) of a keras.Model subclass, or of a
module holding one, as TensorFlow's "Text generation with an RNN" tutorial saves its OneStep(MyModel). Such a
file holds no layer config (no keras_metadata.pb; empty metadata in saved_model.pb), so what the model computes
is read from what the file does hold:

- The layers: the object graph's Keras layers (identifier _tf_keras_layer / _tf_keras_rnn_layer) that own
  variables, all children of one model object under the attribute names its __init__ gave them: one with an
  `embeddings` variable (Embedding), one with a `cell` holding kernel / recurrent_kernel / bias (the recurrent
  layer: kernel [E, kH] over recurrent_kernel [H, kH] gives k = 4 LSTM, 3 GRU), one with kernel and bias
  (Dense). The call order of a subclassed model is code, not data: a model with another layer with weights, or
  a second recurrent layer, is refused.
- The cell's activations: Keras runs an LSTM or GRU through its functions standard_lstm / standard_gru (and
  their CuDNN twins) only when the layer has its default activations (tanh, sigmoid), a bias, no recurrent
  dropout, no unroll and, for a GRU, reset_after=True; the graph's function library holds them then, and the
  converter requires them (their ops Sigmoid and Tanh) and the matching bias shape. Anything else is refused.
- The output's activation: the ops of the Dense layer's own call function (`<layer name>_layer_call_and_return_
  conditional_losses`): a Softmax op makes it softmax, no activation op linear (logits, whose softmax is the
  model's distribution: the tutorial trains with from_logits=True); any other op refuses.
- The vocabulary: a StringLookup's table (mask_token=None, one OOV token: id 0 "[UNK]", ids 1.. the strings)
  is a string constant of V - 1 entries in the graph; taken when every such constant is the same list (the
  tutorial's ids_from_chars and chars_from_ids both hold it), else --vocab FILE.
- The weights: variables/variables.{index,data}, through the checkpoint's own object graph (the attribute
  path model/gru/cell/kernel).
"""
import re

from . import keras
from .common import ConvertError
from .tf1_checkpoint import Checkpoint
from .tf2_savedmodel import ObjectGraph, _parse, meta_graph, object_paths, saved_objects
from .vocab import Vocab

LAYER_IDENTIFIERS = ("_tf_keras_layer", "_tf_keras_rnn_layer")
MODEL_IDENTIFIERS = ("_tf_keras_model", "_tf_keras_network")
# Sequential and Functional models track their layers as layer-N / layer_with_weights-N: those carry a config.
_INDEXED = re.compile(r"layer(_with_weights)?-\d+$")
# Ops of a Dense layer's call function that compute no activation (the matmul of a 2-D or 3-D input).
_DENSE_OPS = {"BiasAdd", "Cast", "ConcatV2", "Const", "ExpandDims", "GatherV2", "Identity", "MatMul", "NoOp",
              "Pack", "Prod", "ReadVariableOp", "Reshape", "Shape", "Squeeze", "StridedSlice", "Tensordot",
              "Transpose"}
MAX_FUNCTIONS = 1 << 16          # functions in the graph's library (the tutorial's export has a few hundred)
UNK = "[UNK]"


def is_subclassed(nodes):
    """True when some Keras model object holds Keras layers under attribute names (not layer-N)."""
    return any(n.identifier in MODEL_IDENTIFIERS and
               any(0 <= c < len(nodes) and nodes[c].identifier in LAYER_IDENTIFIERS and not _INDEXED.match(name)
                   for c, name in n.children)
               for n in nodes)


def _graph(meta_fields, path):
    """({function name: {op}}, [string constants of the top-level graph, as lists of str])."""
    graph_defs = [v for f, w, v in meta_fields if f == 2 and w == 2]
    if not graph_defs:
        return {}, []
    functions, strings = {}, []
    for f, w, v in _parse(graph_defs[0], "GraphDef protobuf", path):
        if f == 1 and w == 2:
            s = _string_const(v, path)
            if s is not None:
                strings.append(s)
        elif f == 2 and w == 2:
            for f2, w2, fdef in _parse(v, "FunctionDefLibrary protobuf", path):
                if f2 != 1 or w2 != 2:
                    continue
                if len(functions) == MAX_FUNCTIONS:
                    raise ConvertError(f"{path}: the graph has more than {MAX_FUNCTIONS} functions: a hostile or "
                                       "corrupt SavedModel")
                name, ops = "", set()
                for f3, w3, v3 in _parse(fdef, "FunctionDef protobuf", path):
                    if f3 == 1 and w3 == 2:  # signature: OpDef, name = 1
                        name = next((v4 for f4, w4, v4 in _parse(v3, "OpDef protobuf", path)
                                     if f4 == 1 and w4 == 2), b"").decode("utf-8", "replace")
                    elif f3 == 3 and w3 == 2:  # node_def: NodeDef, op = 2
                        ops.add(next((v4 for f4, w4, v4 in _parse(v3, "NodeDef protobuf", path)
                                      if f4 == 2 and w4 == 2), b"").decode("utf-8", "replace"))
                functions[name] = ops
    return functions, strings


def _string_const(node_def, path):
    """The strings of a Const node holding a DT_STRING tensor (attr "value" -> AttrValue.tensor = 8 ->
    TensorProto dtype = 1, string_val = 8), else None."""
    fields = _parse(node_def, "NodeDef protobuf", path)
    if next((v for f, w, v in fields if f == 2 and w == 2), b"") != b"Const":
        return None
    for f, w, v in fields:
        if f != 5 or w != 2:
            continue
        entry = {f2: v2 for f2, w2, v2 in _parse(v, "NodeDef.AttrEntry protobuf", path) if w2 == 2}
        if entry.get(1) != b"value" or 2 not in entry:
            continue
        tensor = next((v2 for f2, w2, v2 in _parse(entry[2], "AttrValue protobuf", path) if f2 == 8 and w2 == 2),
                      None)
        if tensor is None:
            return None
        t = _parse(tensor, "TensorProto", path)
        if next((v2 for f2, w2, v2 in t if f2 == 1 and w2 == 0), 0) != 7:
            return None
        try:
            return [v2.decode("utf-8") for f2, w2, v2 in t if f2 == 8 and w2 == 2]
        except UnicodeDecodeError:
            return None
    return None


def _layers(nodes, paths, pb):
    """(model path, {"embedding"|"rnn"|"dense": (attribute path, layer name, {variable: (shape, local path)})})."""
    def var(node_id):
        return nodes[node_id].variable if 0 <= node_id < len(nodes) else None

    cells = {c for n in nodes if n.identifier in LAYER_IDENTIFIERS for c, name in n.children if name == "cell"}
    found = {}
    for k, n in enumerate(nodes):
        if n.identifier not in LAYER_IDENTIFIERS or k not in paths or k in cells:
            continue
        own = {name: var(c) for c, name in n.children if var(c) is not None}
        cell = next((c for c, name in n.children if name == "cell" and 0 <= c < len(nodes)), None)
        cell_vars = {name: var(c) for c, name in nodes[cell].children if var(c) is not None} if cell else {}
        if "embeddings" in own:
            kind, vars_, sub = "embedding", {"embeddings": own["embeddings"]}, ()
        elif "kernel" in cell_vars and "recurrent_kernel" in cell_vars:
            kind, vars_, sub = "rnn", cell_vars, ("cell",)
        elif "kernel" in own:
            kind, vars_, sub = "dense", own, ()
        elif own or cell_vars:
            raise ConvertError(f"{pb}: layer {paths[k]} holds variables {', '.join(sorted(own or cell_vars))}: not "
                               "an Embedding, LSTM, GRU or Dense; lstmlm converts a subclassed model of those")
        else:
            continue
        if kind in found:
            raise ConvertError(f"{pb}: a subclassed model with two {kind} layers ({found[kind][0]}, {paths[k]}): its "
                               "call order is code, not recorded in the file; rebuild it as a Sequential with the "
                               "same layers, set_weights, and save that")
        names = {v[0] for v in vars_.values()}
        found[kind] = (paths[k], sub, vars_, names)
    missing = [k for k in ("embedding", "rnn", "dense") if k not in found]
    if missing:
        raise ConvertError(f"{pb}: a subclassed model without {' and '.join(missing)} layer; lstmlm converts "
                           "Embedding -> LSTM or GRU -> Dense")
    parents = {p.rsplit(".", 1)[0] for p, *_ in found.values()}
    if len(parents) != 1:
        raise ConvertError(f"{pb}: the layers are not children of one model ({', '.join(sorted(parents))})")
    return parents.pop(), found


def _layer_name(variable_name, depth):
    """The Keras layer name in a variable's name ("text_model/gru/gru_cell/kernel", depth 3 -> "gru")."""
    parts = variable_name.split(":")[0].split("/")
    return parts[-depth] if len(parts) >= depth else ""


def convert(d, args, pb):
    meta = meta_graph(pb, d)
    nodes = saved_objects(meta, pb)
    paths = object_paths([n.children for n in nodes], pb)
    model_path, found = _layers(nodes, paths, pb)
    functions, strings = _graph(meta, pb)

    emb_shape = found["embedding"][2]["embeddings"][1]
    rnn_vars = found["rnn"][2]
    kernel, rec = rnn_vars["kernel"][1], rnn_vars["recurrent_kernel"][1]
    if len(emb_shape) != 2 or len(kernel) != 2 or len(rec) != 2 or rec[0] == 0 or rec[1] % rec[0]:
        raise ConvertError(f"{pb}: embeddings {list(emb_shape)}, kernel {list(kernel)}, recurrent_kernel "
                           f"{list(rec)}: not the shapes of an Embedding and a recurrent cell")
    V, E, H = emb_shape[0], emb_shape[1], rec[0]
    gates = rec[1] // H
    cls = {4: "LSTM", 3: "GRU"}.get(gates)
    rnn_where = f"{pb}: layer {found['rnn'][0]}"
    if cls is None:
        raise ConvertError(f"{rnn_where}: recurrent_kernel {list(rec)} has {gates} gate blocks; a subclassed model "
                           "converts with an LSTM (4) or GRU (3) cell")
    bias = rnn_vars.get("bias", (None, None))[1]
    want_bias = (2, 3 * H) if cls == "GRU" else (4 * H,)
    standard = "standard_gru" if cls == "GRU" else "standard_lstm"
    std_ops = [ops for name, ops in functions.items() if re.fullmatch(rf"__inference_{standard}_\d+", name)]
    if bias != want_bias or not std_ops or not all({"Sigmoid", "Tanh"} <= ops for ops in std_ops):
        raise ConvertError(f"{rnn_where}: a {cls} whose configuration the file does not record: lstmlm converts one "
                           f"with Keras' defaults (tanh, sigmoid, a bias{', reset_after=True' if cls == 'GRU' else ''}),"
                           f" which the graph shows by its {standard} function and a bias of shape {list(want_bias)} "
                           f"(found: bias {list(bias) if bias else 'none'}, {len(std_ops)} {standard} functions); "
                           "rebuild it as a Sequential, set_weights, and save that")

    dense_vars = found["dense"][2]
    dk, db = dense_vars["kernel"][1], dense_vars.get("bias", (None, None))[1]
    dense_name = _layer_name(dense_vars["kernel"][0], 2)
    dense_where = f"{pb}: layer {found['dense'][0]} ({dense_name or 'unnamed'})"
    if len(dk) != 2 or dk[0] != H:
        raise ConvertError(f"{dense_where}: kernel {list(dk)} does not take the {cls}'s {H} outputs")
    call = [ops for name, ops in functions.items()
            if re.fullmatch(rf"__inference_{re.escape(dense_name)}_layer_call_and_return_conditional_losses_\d+",
                            name)]
    if not call:
        raise ConvertError(f"{dense_where}: no call function of the layer in the graph, so its activation is not "
                           "recorded")
    other = sorted(set().union(*call) - _DENSE_OPS - {"Softmax"})
    if other:
        raise ConvertError(f"{dense_where}: its call computes {', '.join(other)}: an activation lstmlm does not map "
                           "from a graph (the output Dense is linear or softmax)")
    activation = "softmax" if any("Softmax" in ops for ops in call) else "linear"

    tables = [s for s in strings if len(s) == V - 1 and UNK not in s]
    source_vocab = None
    if tables and all(t == tables[0] for t in tables):
        source_vocab = Vocab([UNK] + tables[0], "tf2-stringlookup", pb, unk_token=UNK)

    config = {"class_name": "Sequential", "config": {"name": model_path, "layers": [
        {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": V, "output_dim": E,
                                               "mask_zero": False}},
        {"class_name": cls, "config": dict({"name": "rnn", "units": H, "activation": "tanh",
                                            "recurrent_activation": "sigmoid", "use_bias": True,
                                            "return_sequences": True},
                                           **({"reset_after": True} if cls == "GRU" else {}))},
        {"class_name": "Dense", "config": {"name": "dense", "units": dk[1], "activation": activation,
                                           "use_bias": db is not None}}]
        # Logits (the tutorial trains with from_logits=True and samples them with tf.random.categorical): the
        # distribution they stand for is their softmax.
        + ([{"class_name": "Softmax", "config": {"name": "softmax"}}] if activation == "linear" else [])}}
    ckpt = Checkpoint(f"{d}/variables/variables", root=d)
    graph = ObjectGraph(ckpt)
    local = {k: tuple(found[k][0].split(".")[1:]) + found[k][1] for k in found}

    def get_weights(kind, name):
        out = {}
        for wname in found[name][2]:
            key = graph.key(local[name] + (wname,))
            if key is None:
                raise ConvertError(f"{ckpt.index_path}: no checkpoint key for {'/'.join(local[name] + (wname,))}")
            a = ckpt.tensor(key)
            if a.dtype.kind != "f":
                raise ConvertError(f"{ckpt.index_path}: {key} has dtype {a.dtype}, expected floats")
            out[wname] = a.astype("float32")
        return out

    source = {"framework": "keras", "file": d.rsplit("/", 1)[-1], "exporter": "lstmlm-convert",
              "format": "tf2-savedmodel-subclassed", "keras_version": None, "model": model_path,
              "notes": [f"a subclassed model: Embedding -> {cls} -> Dense ({activation}), read from the object graph"]}
    return keras.from_config(args, config, None, get_weights, d, source, source_vocab=source_vocab)
