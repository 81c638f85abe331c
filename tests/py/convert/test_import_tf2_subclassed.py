"""TF2 SavedModels of subclassed Keras models (tf.saved_model.save of TensorFlow's text generation tutorial's
OneStep(MyModel): Embedding -> GRU -> Dense, StringLookup layers for the characters), written here without
TensorFlow in the layout such an export has (read off a real export of the tutorial): saved_model.pb with the
object graph (root -> model -> embedding / gru -> cell / dense, variables with their names and shapes, no layer
config), the graph's function library (standard_gru_N, dense_layer_call_and_return_conditional_losses_N with
their ops) and the StringLookup vocabulary as string constants; variables/ a tensor bundle whose
_CHECKPOINTABLE_OBJECT_GRAPH mirrors the object graph. The converted directory is checked against numpy
written from Keras' cells (test_import_keras_cells.check_converted)."""
import os
import unittest

import numpy as np

import pyutil
from convert.test_import_keras_cells import check_converted, gru_step, reference, sigmoid
from convert.test_import_tf2_cells import write_bundle
from tf1_ckpt_writer import _field

TMP = pyutil.temp_root("lstmlm_tf2_subclassed_")
CHARS = list("\n !',.:;?abcdeghilmnorstuwy")


def f64(a):
    return np.asarray(a, np.float64)


def string_const(name, strings):
    """A NodeDef Const with a DT_STRING tensor: attr value -> AttrValue.tensor (8) -> TensorProto."""
    tensor = _field(1, 0, 7) + b"".join(_field(8, 2, s.encode()) for s in strings)
    attr = _field(1, 2, b"value") + _field(2, 2, _field(8, 2, tensor))
    return _field(1, 2, name.encode()) + _field(2, 2, b"Const") + _field(5, 2, attr)


def function(name, ops):
    """A FunctionDef: signature (OpDef name) and one NodeDef per op."""
    return _field(1, 2, _field(1, 2, name.encode())) + b"".join(
        _field(3, 2, _field(1, 2, f"n{i}".encode()) + _field(2, 2, op.encode())) for i, op in enumerate(ops))


def write_subclassed(d, layers, functions, consts):
    """layers: [(attribute name, identifier, {variable: array}, in a cell?)] of the model object; functions:
    {name: [ops]}; consts: [[strings]]."""
    os.makedirs(os.path.join(d, "variables"))
    objects = []  # (children [(id, name)], identifier, variable (name, array) or None, checkpoint key or None)

    def new(children=(), ident="", var=None, key=None):
        objects.append((list(children), ident, var, key))
        return len(objects) - 1
    root = new(ident="_tf_keras_model")
    model = new(ident="_tf_keras_model")
    tensors, model_children = {}, []
    for attr, ident, variables, in_cell in layers:
        children = []
        for wname, a in variables.items():
            key = f"model/{attr}/{'cell/' if in_cell else ''}{wname}/.ATTRIBUTES/VARIABLE_VALUE"
            tensors[key] = a
            vname = f"text_model/{attr}/{attr + '_cell/' if in_cell else ''}{wname}"
            children.append((new(var=(vname, a), key=key), wname))
        if in_cell:
            children = [(new(children, "_tf_keras_layer"), "cell")]
        model_children.append((new(children, ident), attr))
    lookup = new([(new(), "lookup_table")], "_tf_keras_layer")
    objects[model] = (model_children, "_tf_keras_model", None, None)
    objects[root] = ([(model, "model"), (lookup, "ids_from_chars")], "_tf_keras_model", None, None)

    def ref(i, name):
        return _field(1, 2, _field(1, 0, i) + _field(2, 2, name.encode()))
    saved, trackable = b"", b""
    for children, ident, var, key in objects:
        refs = b"".join(ref(i, n) for i, n in children)
        body = refs
        if ident:
            body += _field(4, 2, _field(1, 2, ident.encode()))
        if var is not None:
            dims = b"".join(_field(2, 2, _field(1, 0, n)) for n in var[1].shape)
            body += _field(7, 2, _field(1, 0, 1) + _field(2, 2, dims) + _field(6, 2, var[0].encode()))
        saved += _field(1, 2, body)
        attrs = _field(2, 2, _field(1, 2, b"VARIABLE_VALUE") + _field(3, 2, key.encode())) if key else b""
        trackable += _field(1, 2, refs + attrs)
    library = b"".join(_field(1, 2, function(n, ops)) for n, ops in functions.items())
    graph = b"".join(_field(1, 2, string_const(f"Const_{i}", s)) for i, s in enumerate(consts)) + \
        _field(2, 2, library)
    meta = _field(2, 2, graph) + _field(7, 2, saved)
    with open(os.path.join(d, "saved_model.pb"), "wb") as f:
        f.write(_field(2, 2, meta))
    write_bundle(os.path.join(d, "variables", "variables"), tensors, {"_CHECKPOINTABLE_OBJECT_GRAPH": trackable})


STANDARD_GRU = ["Transpose", "MatMul", "BiasAdd", "Split", "AddV2", "Sigmoid", "Mul", "Sub", "Tanh",
                "StatelessWhile"]
DENSE = ["ReadVariableOp", "Tensordot", "MatMul", "Reshape", "BiasAdd", "Identity", "NoOp"]


class TF2SubclassedTest(unittest.TestCase):
    def tutorial(self, name, rng, *, H=7, E=5, gates=3, bias=None, std="standard_gru", dense=DENSE, consts=None,
                 extra=()):
        V = len(CHARS) + 1
        emb, k, r, dk, db = [(rng.randn(*s) * 0.6).astype(np.float32) for s in (
            (V, E), (E, gates * H), (H, gates * H), (H, V), (V,))]
        b = (rng.randn(*(bias or (2, 3 * H))) * 0.3).astype(np.float32)
        layers = [("embedding", "_tf_keras_layer", {"embeddings": emb}, False),
                  ("gru", "_tf_keras_rnn_layer", {"kernel": k, "recurrent_kernel": r, "bias": b}, True),
                  ("dense", "_tf_keras_layer", {"kernel": dk, "bias": db}, False)] + list(extra)
        functions = {f"__inference_{std}_1234": STANDARD_GRU,
                     "__inference_dense_layer_call_and_return_conditional_losses_5678": dense,
                     "__inference_embedding_layer_call_fn_99": ["Identity", "StatefulPartitionedCall"]}
        d = os.path.join(TMP, name)
        write_subclassed(d, layers, functions, [CHARS, CHARS] if consts is None else consts)
        return d, V, (emb, k, r, b, dk, db)

    def refused(self, d, *args, want=()):
        r = pyutil.convert(d, d + "-out", *args)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        for s in want:
            self.assertIn(s, lines[0])

    def test_tutorial_gru_converts_with_its_characters(self):
        rng = np.random.RandomState(11)
        d, V, (emb, k, r, b, dk, db) = self.tutorial("gru", rng)
        out = d + "-out"
        pyutil.convert_ok(self, d, out)
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["source"]["format"], "tf2-savedmodel-subclassed")
        self.assertEqual(cfg["layers"][0]["cell"], "gru")
        self.assertTrue(cfg["layers"][0]["reset_after"])
        self.assertEqual(cfg["tokenizer"]["type"], "char")
        self.assertEqual(cfg["tokenizer"]["unk_token"], "[UNK]")
        with open(os.path.join(out, "vocab.json"), encoding="utf-8") as f:
            import json
            self.assertEqual(json.load(f), ["[UNK]"] + CHARS)  # StringLookup: id 0 the OOV token
        H = r.shape[0]
        step = lambda x, h: gru_step(x, h, f64(k), f64(r), f64(b), True, np.tanh, sigmoid)  # noqa: E731
        check_converted(self, out, lambda c: reference(c, f64(emb), [(step, H)], f64(dk), f64(db)), V, rng)

    def test_softmax_output_and_lstm(self):
        rng = np.random.RandomState(12)
        H = 6
        d, V, (emb, k, r, b, dk, db) = self.tutorial("lstm", rng, H=H, gates=4, bias=(4 * H,), std="standard_lstm",
                                                     dense=DENSE + ["Softmax"])
        out = d + "-out"
        pyutil.convert_ok(self, d, out)
        self.assertEqual(pyutil.read_config(out)["layers"][0].get("cell", "lstm"), "lstm")

        def step(x, state):  # Keras' LSTMCell, columns i f c o; the state is (h, c)
            h, c = state if isinstance(state, tuple) else (state, np.zeros(H))
            z = x @ f64(k) + h @ f64(r) + f64(b)
            i, f, g, o = (z[j * H:(j + 1) * H] for j in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            return sigmoid(o) * np.tanh(c), c

        def ref(ids):
            state = (np.zeros(H), np.zeros(H))
            for t in ids:
                state = step(f64(emb)[t], state)
            z = state[0] @ f64(dk) + f64(db)
            z = z - z.max()
            return z - np.log(np.exp(z).sum())
        check_converted(self, out, ref, V, rng)

    def test_without_a_vocabulary_constant_needs_vocab(self):
        rng = np.random.RandomState(13)
        d, V, _ = self.tutorial("novocab", rng, consts=[CHARS[:-1]])
        self.refused(d, want=("no vocabulary", "--vocab"))
        vocab = os.path.join(TMP, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("\n".join(f"w{i}" for i in range(V)) + "\n")
        pyutil.convert_ok(self, d, d + "-out", "--vocab", vocab)

    def test_what_the_file_does_not_record_is_refused(self):
        rng = np.random.RandomState(14)
        d, _, _ = self.tutorial("nostd", rng, std="some_other_gru")
        self.refused(d, want=("layer root.model.gru", "standard_gru", "Sequential"))
        d, _, _ = self.tutorial("before", rng, bias=(3 * 7,))  # reset_after=False: one bias row
        self.refused(d, want=("bias of shape [2, 21]", "found: bias [21]"))
        d, _, _ = self.tutorial("relu", rng, dense=DENSE + ["Relu"])
        self.refused(d, want=("layer root.model.dense (dense)", "Relu"))
        second = ("gru_1", "_tf_keras_rnn_layer", {"kernel": np.zeros((7, 21), np.float32),
                                                  "recurrent_kernel": np.zeros((7, 21), np.float32),
                                                  "bias": np.zeros((2, 21), np.float32)}, True)
        d, _, _ = self.tutorial("two", rng, extra=[second])
        self.refused(d, want=("two rnn layers", "call order", "Sequential"))
        conv = ("conv", "_tf_keras_layer", {"depthwise_kernel": np.zeros((3, 3), np.float32)}, False)
        d, _, _ = self.tutorial("conv", rng, extra=[conv])
        self.refused(d, want=("layer root.model.conv", "depthwise_kernel"))


if __name__ == "__main__":
    unittest.main()
