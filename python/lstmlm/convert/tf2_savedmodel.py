"""TF2 Keras SavedModel directories (model.save(DIR) in TF 2.0 .. 2.15): saved_model.pb, keras_metadata.pb (TF 2.5
and later) and variables/variables.{index,data-*}, read without TensorFlow or the protobuf package.

- The layers: keras_metadata.pb is a SavedMetadata proto (repeated SavedObject nodes = 1, each with node_id = 2,
  node_path = 3, identifier = 4 and the Keras JSON metadata = 5). The model's node (path "root", identifier
  _tf_keras_network / _tf_keras_model) holds the model config: a JSON object with class_name Functional /
  Sequential / Model and config. The nodes "root.layer_with_weights-N" name the layer whose weights are
  checkpoint object N.
- TF 2.0 - 2.4 wrote no keras_metadata.pb: the same JSON is then in saved_model.pb, a SavedModel proto
  (meta_graphs = 2) -> MetaGraphDef (object_graph_def = 7) -> SavedObjectGraph (nodes = 1) -> SavedObject
  (children = 1 {node_id = 1, local_name = 2}, user_object = 4) -> SavedUserObject (identifier = 1,
  metadata = 3); node 0 is the root, and a node's path is its parent's path, ".", its local name.
- The weights: variables/variables.index + .data, a TF tensor bundle (tf1_checkpoint.Checkpoint). Keras stores
  some variables under generic keys (variables/0/.ATTRIBUTES/VARIABLE_VALUE, trainable_variables/N/...); the
  names live in the _CHECKPOINTABLE_OBJECT_GRAPH string tensor, a TrackableObjectGraph proto (nodes = 1; a
  node's children = 1 {node_id = 1, local_name = 2} and attributes = 2 {name = 1, full_name = 2,
  checkpoint_key = 3}). From the root (node 0): layer_with_weights-N -> [cell ->] kernel / recurrent_kernel /
  bias / embeddings, each variable's VARIABLE_VALUE attribute giving its checkpoint key. Optimizer slots and
  metrics are not read.
- The layer mapping is keras.from_config's (Embedding -> LSTM... -> Dense... -> softmax Dense). A model with
  several outputs converts one of them, chosen with --output NAME: its chain of layers back to the input.
"""
import collections
import json
import os
import struct

from . import contained, keras
from .common import ConvertError
from .tf1_checkpoint import Checkpoint, _fields, _varint

# Bounds of saved_model.pb's object graph (TF 2.0 - 2.4): a Keras model's has a few hundred objects, at most
# 4 levels below the root, a few dozen children each, names of a few dozen characters. Past these it is a
# hostile or corrupt file (the path strings of a chain N deep take N^2 / 2 characters).
MAX_OBJECTS = 1 << 17            # objects in the graph
MAX_CHILDREN = 1 << 16           # children of one object
MAX_DEPTH = 64                   # levels below the root of the shortest path to an object
MAX_PATH_CHARS = 1 << 24         # characters of all the objects' paths together
MODEL_CLASSES = ("Functional", "Sequential", "Model")
MODEL_IDENTIFIERS = ("_tf_keras_model", "_tf_keras_network", "_tf_keras_sequential")
# The variables of a layer by kind: (sub-object path, weight name).
_VARS = {"embedding": [((), "embeddings")],
         "lstm": [(("cell",), "kernel"), (("cell",), "recurrent_kernel"), (("cell",), "bias")],
         "dense": [((), "kernel"), ((), "bias")]}


def _directory(path):
    """The SavedModel directory of a path that may name its saved_model.pb (what the CLI's hint gives)."""
    return os.path.dirname(path) or "." if os.path.basename(path) == "saved_model.pb" else path


def detect(path):
    path = _directory(path)
    return (os.path.isdir(path) and os.path.isfile(os.path.join(path, "saved_model.pb")) and
            os.path.isfile(os.path.join(path, "variables", "variables.index")))


def add_arguments(p):
    g = p.add_argument_group("TF2 SavedModel and Keras functional models")
    g.add_argument("--output", metavar="NAME",
                   help="a model with several outputs: the name of the output layer (head) to convert")


def _parse(buf, what, where):
    try:
        return list(_fields(buf))
    except (ValueError, struct.error) as e:
        raise ConvertError(f"{where}: malformed {what} ({e})") from None


def _untuple(v):
    """Keras' SavedModel JSON writes tuples as {"class_name": "__tuple__", "items": [...]}: as lists."""
    if isinstance(v, dict):
        if v.get("class_name") == "__tuple__" and isinstance(v.get("items"), list) and len(v) == 2:
            return [_untuple(x) for x in v["items"]]
        return {k: _untuple(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_untuple(x) for x in v]
    return v


def _json_object(b):
    if not isinstance(b, bytes) or b[:1] != b"{":
        return None
    try:
        obj = json.loads(b.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def _model_of(entries, path):
    """The model config among (path, identifier, metadata): the root's, else the first model-like one."""
    model = [(p != "root", ident not in MODEL_IDENTIFIERS, k, meta) for k, (p, ident, meta) in enumerate(entries)
             if meta.get("class_name") in MODEL_CLASSES and isinstance(meta.get("config"), dict)]
    if not model:
        raise ConvertError(f"{path}: no Keras model config in the metadata (a JSON object with class_name "
                           f"{'/'.join(MODEL_CLASSES)} and config)")
    return min(model, key=lambda m: m[:3])[3], {p: meta for p, _, meta in entries}


SavedNode = collections.namedtuple("SavedNode", "children identifier metadata variable")


def meta_graph(path, root):
    """(the first MetaGraphDef's bytes, its fields) of saved_model.pb, which must resolve inside the SavedModel
    directory `root`."""
    data = contained.read_contained(root, path, path)
    graphs = [v for fld, w, v in _parse(data, "SavedModel protobuf", path) if fld == 2 and w == 2]
    if not graphs:
        raise ConvertError(f"{path}: no meta graph in the SavedModel")
    return _parse(graphs[0], "MetaGraphDef protobuf", path)


def saved_objects(meta_fields, path):
    """The SavedObjectGraph's nodes (node 0 the root) as SavedNode: children [(node_id, local_name)], the user
    object's identifier ("" for others), its metadata JSON (None where empty), and a variable's (name, shape)
    (None for other objects)."""
    objects = [v for fld, w, v in meta_fields if fld == 7 and w == 2]
    if not objects:
        raise ConvertError(f"{path}: the meta graph has no object graph (not a TF2 SavedModel)")
    nodes = []
    for fld, w, v in _parse(objects[0], "SavedObjectGraph protobuf", path):
        if fld != 1 or w != 2:
            continue
        if len(nodes) == MAX_OBJECTS:
            raise ConvertError(f"{path}: the object graph has more than {MAX_OBJECTS} objects (a Keras model's has "
                               "a few hundred): a hostile or corrupt SavedModel")
        children, ident, meta, variable = [], "", None, None
        for f2, w2, v2 in _parse(v, "SavedObject protobuf", path):
            if f2 == 1 and w2 == 2:
                if len(children) == MAX_CHILDREN:
                    raise ConvertError(f"{path}: object {len(nodes)} of the object graph has more than "
                                       f"{MAX_CHILDREN} children: a hostile or corrupt SavedModel")
                ref = {f3: v3 for f3, _, v3 in _parse(v2, "ObjectReference protobuf", path)}
                if isinstance(ref.get(1, 0), int) and isinstance(ref.get(2, b""), bytes):
                    children.append((ref.get(1, 0), ref.get(2, b"").decode("utf-8", "replace")))
            elif f2 == 4 and w2 == 2:
                user = {f3: v3 for f3, _, v3 in _parse(v2, "SavedUserObject protobuf", path)}
                ident = user.get(1, b"").decode("utf-8", "replace") if isinstance(user.get(1), bytes) else ""
                meta = _json_object(user.get(3))
            elif f2 == 7 and w2 == 2:  # SavedVariable: shape = 2 (TensorShapeProto: dim = 2 {size = 1}), name = 6
                var = _parse(v2, "SavedVariable protobuf", path)
                name = next((v3 for f3, w3, v3 in var if f3 == 6 and w3 == 2), b"")
                shape = []
                for f3, w3, v3 in var:
                    if f3 == 2 and w3 == 2:
                        for f4, w4, v4 in _parse(v3, "TensorShapeProto", path):
                            if f4 == 2 and w4 == 2:
                                shape.append(next((v5 for f5, w5, v5 in _parse(v4, "TensorShapeProto.Dim", path)
                                                   if f5 == 1 and w5 == 0), 0))
                variable = (name.decode("utf-8", "replace"), tuple(shape))
        nodes.append(SavedNode(children, ident, meta, variable))
    if not nodes:
        raise ConvertError(f"{path}: the object graph has no nodes")
    return nodes


def object_graph_metadata(nodes, path):
    """(root metadata JSON, {node_path: metadata JSON}) from saved_model.pb's object graph (TF 2.0 - 2.4)."""
    paths = object_paths([n.children for n in nodes], path)
    entries = [(paths[k], n.identifier, n.metadata) for k, n in enumerate(nodes)
               if n.metadata is not None and k in paths]
    return _model_of(entries, path)


def object_paths(children, path):
    """{object: its path from the root ("root.layer_with_weights-0.cell")}: breadth first (a deque, linear in
    the references), so each object gets its shortest path (objects are shared in the graph); refuses a path
    more than MAX_DEPTH levels deep and paths adding up to more than MAX_PATH_CHARS characters."""
    paths, depth, queue, chars = {0: "root"}, {0: 0}, collections.deque([0]), 4
    while queue:
        n = queue.popleft()
        for child, name in children[n]:
            if 0 <= child < len(children) and child not in paths:
                if depth[n] == MAX_DEPTH:
                    raise ConvertError(f"{path}: object {child} of the object graph is more than {MAX_DEPTH} "
                                       "levels below the root (a Keras model's objects are a few levels down): a "
                                       "hostile or corrupt SavedModel")
                paths[child] = paths[n] + "." + name
                depth[child] = depth[n] + 1
                chars += len(paths[child])
                if chars > MAX_PATH_CHARS:
                    raise ConvertError(f"{path}: the object graph's paths add up to more than {MAX_PATH_CHARS} "
                                       "characters: a hostile or corrupt SavedModel")
                queue.append(child)
    return paths


def read_metadata(path, root):
    """(root metadata JSON, {node_path: metadata JSON}) of keras_metadata.pb, which must resolve inside the
    SavedModel directory `root`."""
    data = contained.read_contained(root, path, path)
    entries = []
    for field, wire, v in _parse(data, "SavedMetadata protobuf", path):
        if field != 1 or wire != 2:
            continue
        node = {}
        for f2, w2, v2 in _parse(v, "SavedObject protobuf", path):
            if w2 == 2:
                node.setdefault(f2, v2)
        npath = node.get(3, b"").decode("utf-8", "replace")
        ident = node.get(4, b"").decode("utf-8", "replace")
        meta = next((m for m in map(_json_object, node.values()) if m is not None), None)  # wherever it is
        if meta is not None:
            entries.append((npath, ident, meta))
    return _model_of(entries, path)


class ObjectGraph:
    """The TrackableObjectGraph of a TF2 checkpoint: nodes with children {local_name: node_id} and attributes
    {name: checkpoint_key}."""

    def __init__(self, ckpt):
        where = ckpt.index_path
        key = "_CHECKPOINTABLE_OBJECT_GRAPH"
        if key not in ckpt.entries:
            raise ConvertError(f"{where}: no {key} entry: not a TF2 object-based checkpoint")
        e = ckpt.entries[key]
        data = ckpt._shard(e.shard_id)
        if e.offset + e.size > len(data):
            raise ConvertError(f"{ckpt.shard_path(e.shard_id)}: {key} at bytes {e.offset}..{e.offset + e.size} runs "
                               f"past the end of the shard ({len(data)} bytes); the data file is truncated")
        raw = data[e.offset:e.offset + e.size]
        # A scalar DT_STRING in a bundle: varint64 length, a 4-byte checksum of the lengths, the bytes.
        try:
            n, pos = _varint(raw, 0)
        except ValueError as err:
            raise ConvertError(f"{where}: {key}: {err}") from None
        if pos + 4 + n != len(raw):
            raise ConvertError(f"{where}: {key}: string of {n} bytes does not fit its {len(raw)} stored bytes")
        self.nodes = []
        for field, wire, v in _parse(raw[pos + 4:], "TrackableObjectGraph protobuf", where):
            if field != 1 or wire != 2:
                continue
            children, attrs = {}, {}
            for f2, w2, v2 in _parse(v, "TrackableObject protobuf", where):
                if f2 == 1 and w2 == 2:
                    ref = {f3: v3 for f3, _, v3 in _parse(v2, "ObjectReference protobuf", where)}
                    name = ref.get(2, b"")
                    children[name.decode("utf-8", "replace") if isinstance(name, bytes) else ""] = ref.get(1, 0)
                elif f2 == 2 and w2 == 2:
                    t = {f3: v3 for f3, _, v3 in _parse(v2, "SerializedTensor protobuf", where)}
                    if isinstance(t.get(1), bytes) and isinstance(t.get(3), bytes):
                        attrs[t[1].decode("utf-8", "replace")] = t[3].decode("utf-8", "replace")
            self.nodes.append((children, attrs))
        if not self.nodes:
            raise ConvertError(f"{where}: {key} has no objects")
        self.where = where

    def key(self, path):
        """The checkpoint key of the variable at the path of local names from the root, or None."""
        node = 0
        for name in path:
            children = self.nodes[node][0]
            if name not in children or not 0 <= children[name] < len(self.nodes):
                return None
            node = children[name]
        return self.nodes[node][1].get("VARIABLE_VALUE")


def convert(path, args):
    d = _directory(path).rstrip("/") or path
    where = d
    meta_path = os.path.join(d, "keras_metadata.pb")
    if os.path.lexists(meta_path):
        root, nodes = read_metadata(meta_path, d)
    else:  # TF 2.0 - 2.4: the metadata is in saved_model.pb's object graph
        meta_path = os.path.join(d, "saved_model.pb")
        objects = saved_objects(meta_graph(meta_path, d), meta_path)
        from . import tf2_subclassed  # it reads the object graph with this module's functions
        if not any(n.metadata for n in objects) and tf2_subclassed.is_subclassed(objects):
            return tf2_subclassed.convert(d, args, meta_path)
        root, nodes = object_graph_metadata(objects, meta_path)
    config = _untuple(root)
    config = {"class_name": config["class_name"], "config": config["config"]}
    keras_version = root.get("keras_version") if isinstance(root.get("keras_version"), str) else None
    output = getattr(args, "output", None)
    outs = keras.output_names(config) if config["class_name"] in ("Functional", "Model") else None
    if outs is not None:
        if output is None and len(outs) > 1:
            raise ConvertError(f"{meta_path}: the model has {len(outs)} outputs ({', '.join(outs)}); choose one "
                               "with --output NAME")
        if output is not None and output not in outs:
            raise ConvertError(f"{meta_path}: --output {output!r} is not an output of the model (outputs: "
                               f"{', '.join(outs)})")
        config = keras.output_chain(config, output or outs[0], meta_path)
    elif output is not None:
        raise ConvertError(f"{meta_path}: --output {output!r}: a {config['class_name']} model has one output")

    # layer name -> layer_with_weights-N, from the metadata's node paths.
    slot = {}
    for npath, m in nodes.items():
        parts = npath.split(".")
        if len(parts) == 2 and parts[0] == "root" and parts[1].startswith("layer_with_weights-"):
            if isinstance(m.get("name"), str):
                slot[m["name"]] = parts[1]
    ckpt = Checkpoint(os.path.join(d, "variables", "variables"), root=d)
    graph = ObjectGraph(ckpt)

    def get_weights(kind, name):
        if name not in slot:
            raise ConvertError(f"{meta_path}: layer {name!r} has no layer_with_weights-N object in the metadata")
        out = {}
        for sub, wname in _VARS.get(kind, []):
            obj_path = (slot[name],) + sub + (wname,)
            key = graph.key(obj_path)
            if key is None:
                continue
            a = ckpt.tensor(key)
            if a.dtype.kind != "f":
                raise ConvertError(f"{ckpt.index_path}: {'/'.join(obj_path)} ({key}) has dtype {a.dtype}, expected "
                                   "floats")
            out[wname] = a.astype("float32")
        return out

    source = {"framework": "keras", "file": os.path.basename(d), "exporter": "lstmlm-convert",
              "format": "tf2-savedmodel", "keras_version": keras_version}
    if output is not None:
        source["output"] = output
    return keras.from_config(args, config, keras_version, get_weights, where, source)
