"""TF2 Keras SavedModels (model.save(DIR), TF 2.5 - 2.15) with GRU and SimpleRNN layers, written here without
TensorFlow: keras_metadata.pb (SavedMetadata: the model config at "root", each layer at
"root.layer_with_weights-N") and variables/variables.{index,data} (a tensor bundle whose
_CHECKPOINTABLE_OBJECT_GRAPH maps layer_with_weights-N/cell/kernel to its checkpoint key), as
tf2_savedmodel.py reads them. The converted directory is checked against numpy written from Keras' cells on the
stored tensors (test_import_keras_cells.check_converted: float64 within 1e-6, lstmlm within 1e-4).

Not covered (no TensorFlow here, no such file in ../shared/data): a SavedModel that TensorFlow itself wrote with
a GRU and its config. Subclassed models: test_import_tf2_subclassed.py."""
import json
import os
import struct
import unittest

import numpy as np

import pyutil
from convert.test_import_keras_cells import ACT, check_converted, gru_step, reference, rnn_step, sigmoid
from tf1_ckpt_writer import _field, _varint, write_index
from lstmlm.convert.tf1_checkpoint import crc32c, mask_crc

TMP = pyutil.temp_root("lstmlm_tf2_cells_")


def write_bundle(prefix, tensors, strings):
    """A tensor bundle: tensors {key: float32 array}, strings {key: bytes} (scalar DT_STRING: varint length, a
    4-byte checksum, the bytes)."""
    data, entries = bytearray(), [(b"", _field(1, 0, 1))]
    items = [(k, 1, np.ascontiguousarray(v, "<f4").tobytes(), list(np.shape(v))) for k, v in tensors.items()]
    for k, s in strings.items():
        n = _varint(len(s))
        items.append((k, 7, n + struct.pack("<I", mask_crc(crc32c(n))) + s, []))
    for key, dtype, raw, shape in sorted(items):
        dims = b"".join(_field(2, 2, _field(1, 0, d)) for d in shape)
        value = (_field(1, 0, dtype) + _field(2, 2, dims) + _field(4, 0, len(data)) + _field(5, 0, len(raw)) +
                 _field(6, 5, mask_crc(crc32c(raw))))
        entries.append((key.encode(), value))
        data += raw
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(data)
    write_index(prefix, entries)


def write_savedmodel(d, layers, weights, keras_version="2.9.0"):
    """layers: Sequential layer configs; weights: {layer name: [(weight name, array)]}, an RNN layer's under its
    cell (as Keras tracks them)."""
    os.makedirs(os.path.join(d, "variables"))
    with open(os.path.join(d, "saved_model.pb"), "wb") as f:
        f.write(b"")  # not read when keras_metadata.pb is there
    config = {"class_name": "Sequential", "config": {"name": "sequential", "layers": layers},
              "keras_version": keras_version, "backend": "tensorflow"}
    nodes = [(b"root", b"_tf_keras_sequential", config)]
    # The object graph: node 0 the root; per layer with weights a node, [a cell node,] a node per variable.
    objects, tensors = [[]], {}

    def new(children=(), attrs=()):
        objects.append((list(children), list(attrs)))
        return len(objects) - 1
    root_children = []
    for n, l in enumerate(x for x in layers if x["config"]["name"] in weights):
        name, slot = l["config"]["name"], f"layer_with_weights-{n}"
        nodes.append((f"root.{slot}".encode(), b"_tf_keras_layer", {"name": name, "class_name": l["class_name"]}))
        rnn = l["class_name"] in ("GRU", "SimpleRNN", "LSTM")
        var_children = []
        for wname, a in weights[name]:
            key = f"{slot}/{'cell/' if rnn else ''}{wname}/.ATTRIBUTES/VARIABLE_VALUE"
            tensors[key] = a
            var_children.append((new(attrs=[("VARIABLE_VALUE", key)]), wname))
        if rnn:
            var_children = [(new(children=var_children), "cell")]
        root_children.append((new(children=var_children), slot))
    objects[0] = (root_children, [])

    def ref(node_id, local):
        return _field(1, 0, node_id) + _field(2, 2, local.encode())
    graph = b"".join(_field(1, 2, b"".join(_field(1, 2, ref(i, nm)) for i, nm in ch) +
                                 b"".join(_field(2, 2, _field(1, 2, a.encode()) + _field(3, 2, k.encode()))
                                          for a, k in at)) for ch, at in objects)
    write_bundle(os.path.join(d, "variables", "variables"), tensors, {"_CHECKPOINTABLE_OBJECT_GRAPH": graph})
    meta = b"".join(_field(1, 2, _field(2, 0, i) + _field(3, 2, p) + _field(4, 2, ident) +
                           _field(5, 2, json.dumps(m).encode())) for i, (p, ident, m) in enumerate(nodes))
    with open(os.path.join(d, "keras_metadata.pb"), "wb") as f:
        f.write(meta)


def rnn_cfg(cls, name, units, **kw):
    return {"class_name": cls, "config": dict({"name": name, "trainable": True, "units": units, "use_bias": True,
                                               "return_sequences": False}, **kw)}


class TF2CellsTest(unittest.TestCase):
    def test_gru_then_simple_rnn(self):
        rng = np.random.RandomState(4)
        V, E, H1, H2 = 10, 4, 6, 5
        emb, k1, r1, b1, k2, r2, b2, dk, db = [(rng.randn(*s) * 0.7).astype(np.float32) for s in (
            (V, E), (E, 3 * H1), (H1, 3 * H1), (2, 3 * H1), (H1, H2), (H2, H2), (H2,), (H2, V), (V,))]
        # A relu RNN's recurrent weights small enough that it does not blow up: where h grows without bound,
        # float32 and float64 drift apart as fast as h grows, whatever the converter does.
        r2 *= 0.5
        layers = [{"class_name": "InputLayer", "config": {"name": "input", "batch_input_shape": [None, None]}},
                  {"class_name": "Embedding", "config": {"name": "embedding", "trainable": True, "input_dim": V,
                                                         "output_dim": E, "mask_zero": False}},
                  rnn_cfg("GRU", "gru", H1, activation="tanh", recurrent_activation="sigmoid", reset_after=True,
                          return_sequences=True, implementation=2, time_major=False, unroll=False),
                  rnn_cfg("SimpleRNN", "simple_rnn", H2, activation="relu"),
                  {"class_name": "Dense", "config": {"name": "dense", "trainable": True, "units": V,
                                                     "activation": "softmax", "use_bias": True}}]
        weights = {"embedding": [("embeddings", emb)],
                   "gru": [("kernel", k1), ("recurrent_kernel", r1), ("bias", b1)],
                   "simple_rnn": [("kernel", k2), ("recurrent_kernel", r2), ("bias", b2)],
                   "dense": [("kernel", dk), ("bias", db)]}
        d = os.path.join(TMP, "gru_rnn")
        write_savedmodel(d, layers, weights)
        vocab = os.path.join(TMP, "vocab.json")
        with open(vocab, "w") as f:
            json.dump([f"w{i}" for i in range(V)], f)
        out = os.path.join(TMP, "gru_rnn-out")
        pyutil.convert_ok(self, d, out, "--vocab", vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["source"]["format"], "tf2-savedmodel")
        self.assertEqual([l.get("cell", "lstm") for l in cfg["layers"]], ["gru", "rnn"])
        self.assertTrue(cfg["layers"][0]["reset_after"])
        f64 = lambda a: a.astype(np.float64)  # noqa: E731
        cells = [(lambda x, h: gru_step(x, h, f64(k1), f64(r1), f64(b1), True, np.tanh, sigmoid), H1),
                 (lambda x, h: rnn_step(x, h, f64(k2), f64(r2), f64(b2), ACT["relu"]), H2)]
        check_converted(self, out, lambda c: reference(c, f64(emb), cells, f64(dk), f64(db)), V, rng)


if __name__ == "__main__":
    unittest.main()
