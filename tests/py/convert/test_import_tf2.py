"""TF2 Keras SavedModel directories (python/lstmlm/convert/tf2_savedmodel.py): two real models convert and give
every next-token log-prob of ref_numpy.KerasLM (float64, Keras' documented LSTM / Dense semantics) within 1e-4.
The reference reads the weights by the generic checkpoint keys written down in each model's SOURCE.md
(variables/N, trainable_variables/N, layer_with_weights-N) and the architecture stated there, not through the
converter's metadata / object-graph resolution. Refusals: a two-head model without --output, a head whose size
is not the input vocabulary's, a truncated variables.index, a directory with no Keras metadata anywhere.
TF 2.0 - 2.4 kept the metadata in saved_model.pb's object graph (SavedUserObject.metadata) instead of
keras_metadata.pb: such a directory is made here from the real TF 2.9 one and must give the same model."""
import json
import os
import shutil
import struct
import tempfile
import unittest

import numpy as np

import pyutil
import ref_numpy

TOL = 1e-4
VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode(fields):
    """A protobuf message of (field number, wire type, value) triples, as tf1_checkpoint._fields yields them."""
    out = bytearray()
    for num, wire, v in fields:
        out += varint(num << 3 | wire)
        out += {0: lambda: varint(v), 1: lambda: struct.pack("<Q", v), 5: lambda: struct.pack("<I", v),
                2: lambda: varint(len(v)) + v}[wire]()
    return bytes(out)


def bundle(model_dir):
    from lstmlm.convert.tf1_checkpoint import Checkpoint
    return Checkpoint(os.path.join(model_dir, "variables", "variables"))


class TF2SavedModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_tf2_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def sc2(self):
        return pyutil.data("tf2-savedmodel-sc2-nextunit", "trained_nns", "rnn")

    def guitar(self):
        return pyutil.data("tf2-savedmodel-guitar-nextbeat", "models", "lstm")

    def vocab13(self):
        p = os.path.join(self.tmp, "notes.json")
        with open(p, "w") as f:
            json.dump([f"n{i}" for i in range(13)], f)
        return p

    def compare(self, out, ref, V, seed, lengths=(1, 2, 3, 5, 8, 8, 12)):
        rng = np.random.RandomState(seed)
        ctxs = [list(rng.randint(0, V, size=n)) for n in lengths]
        worst = 0.0
        for c, g in zip(ctxs, pyutil.predict_logprobs(out, ctxs)):
            r = ref.next_logprobs(c)
            self.assertFalse(np.isnan(g).any())
            worst = max(worst, float(np.abs(g - r).max()))
        print(f"  {os.path.basename(out)}: max |d log-prob| {worst:.2e} over {len(ctxs)} contexts", flush=True)
        self.assertLess(worst, TOL)

    def test_sc2_nextunit(self):
        src = self.sc2()
        vocab = pyutil.data("tf2-savedmodel-sc2-nextunit", "classes.json")
        out = os.path.join(self.tmp, "sc2")
        pyutil.convert_ok(self, src, out, "--vocab", vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["format_version"], cfg["vocab_size"], cfg["embedding_dim"], cfg["input_length"]),
                         (2, 53, 0, 8))
        self.assertEqual(cfg["output"]["head"], [{"units": 48, "activation": "relu"}])
        self.assertEqual([(l["hidden_size"], l["activation"]) for l in cfg["layers"]], [(48, "tanh")])
        b = bundle(src)
        t = lambda k: b.tensor(k + VALUE)  # noqa: E731
        lstm = {"kernel": t("variables/0"), "recurrent_kernel": t("variables/1"), "bias": t("variables/2"),
                "activation": "tanh", "recurrent_activation": "sigmoid"}
        ref = ref_numpy.KerasLM(None, [lstm], t("layer_with_weights-2/kernel"), t("layer_with_weights-2/bias"), 53,
                                head=[(t("layer_with_weights-1/kernel"), t("layer_with_weights-1/bias"), "relu")])
        self.compare(out, ref, 53, 0)

    def test_guitar_notes_head(self):
        src = self.guitar()
        out = os.path.join(self.tmp, "guitar-notes")
        pyutil.convert_ok(self, src, out, "--vocab", self.vocab13(), "--output", "notes")
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["format_version"], cfg["vocab_size"], cfg["embedding_dim"], cfg["input_length"]),
                         (2, 13, 0, 5))
        self.assertEqual([(l["hidden_size"], l["activation"]) for l in cfg["layers"]], [(65, "relu")])
        self.assertNotIn("head", cfg["output"])
        b = bundle(src)
        t = lambda k: b.tensor(k + VALUE)  # noqa: E731
        lstm = {"kernel": t("trainable_variables/0"), "recurrent_kernel": t("trainable_variables/1"),
                "bias": t("trainable_variables/2"), "activation": "relu", "recurrent_activation": "sigmoid"}
        ref = ref_numpy.KerasLM(None, [lstm], t("layer_with_weights-1/kernel"), t("layer_with_weights-1/bias"), 13)
        # Contexts inside the model's input window (None, 5, 13). Past it the unbounded relu cell amplifies
        # float32 rounding: after 12 random steps numpy's own float32 run is 3e-5 from float64 and lstmlm's
        # 1.5e-4 (its summation order differs), while both stay within 6e-6 up to 5 steps.
        self.compare(out, ref, 13, 1, lengths=(1, 2, 3, 4, 5, 5, 5, 5, 5, 5))

    def refused(self, src, *args, want=()):
        r = pyutil.convert(src, os.path.join(self.tmp, "refused"), *args)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        for s in want:
            self.assertIn(s, lines[0])
        return lines[0]

    def test_two_heads_need_output(self):
        self.refused(self.guitar(), "--vocab", self.vocab13(), want=("keras_metadata.pb", "2 outputs", "notes",
                                                                     "duration", "--output"))

    def test_duration_head_is_not_an_lm(self):
        self.refused(self.guitar(), "--vocab", self.vocab13(), "--output", "duration",
                     want=("lstm", "'duration'", "8 outputs", "13"))

    def test_unknown_output(self):
        self.refused(self.guitar(), "--vocab", self.vocab13(), "--output", "pitch", want=("'pitch'", "notes"))

    def copy(self, src, name):
        dst = os.path.join(self.tmp, name)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        for root, dirs, files in os.walk(dst):
            for f in files + dirs:
                os.chmod(os.path.join(root, f), 0o755)
        return dst

    def test_truncated_index(self):
        dst = self.copy(self.sc2(), "sc2-cut")
        idx = os.path.join(dst, "variables", "variables.index")
        with open(idx, "rb") as f:
            data = f.read()
        for keep in (len(data) // 2, len(data) - 10):
            with open(idx, "wb") as f:
                f.write(data[:keep])
            self.refused(dst, "--vocab", pyutil.data("tf2-savedmodel-sc2-nextunit", "classes.json"),
                         want=("variables.index",))

    def test_bidirectional_refused(self):
        # The real metadata with the LSTM's layer config wrapped as Bidirectional, the protobuf re-encoded here.
        from lstmlm.convert.tf1_checkpoint import _fields
        dst = self.copy(self.sc2(), "sc2-bidi")
        path = os.path.join(dst, "keras_metadata.pb")
        with open(path, "rb") as f:
            data = f.read()

        def field(num, wire, v):
            return encode([(num, wire, v)])

        nodes = []
        for num, wire, v in _fields(data):
            sub = list(_fields(v))
            if any(f == 3 and val == b"root" for f, _, val in sub):
                sub2 = []
                for f, w, val in sub:
                    if f == 5:
                        meta = json.loads(val)
                        for lay in meta["config"]["layers"]:
                            if lay["class_name"] == "LSTM":
                                lay["config"] = {"name": lay["config"]["name"], "layer": dict(lay)}
                                lay["class_name"] = "Bidirectional"
                        val = json.dumps(meta).encode()
                    sub2.append((f, w, val))
                sub = sub2
            nodes.append(field(num, wire, b"".join(field(f, w, val) for f, w, val in sub)))
        with open(path, "wb") as f:
            f.write(b"".join(nodes))
        self.refused(dst, "--vocab", pyutil.data("tf2-savedmodel-sc2-nextunit", "classes.json"),
                     want=("'LSTM_1'", "Bidirectional", "not supported"))

    def tf24_layout(self, name):
        """sc2 as TF 2.0 - 2.4 saved it: no keras_metadata.pb, each object's JSON in saved_model.pb's
        SavedObjectGraph (SavedModel.meta_graphs = 2 -> MetaGraphDef.object_graph_def = 7 -> nodes = 1 ->
        SavedObject.user_object = 4 -> SavedUserObject.metadata = 3; tensorflow/core/protobuf/*.proto), the
        node of path root.a.b found through SavedObject.children = 1 {node_id = 1, local_name = 2}."""
        from lstmlm.convert.tf1_checkpoint import _fields
        dst = self.copy(self.sc2(), name)
        by_path = {}
        with open(os.path.join(dst, "keras_metadata.pb"), "rb") as f:
            for _, _, v in _fields(f.read()):
                node = {fn: val for fn, _, val in _fields(v)}
                by_path[node[3].decode()] = node[5]
        os.remove(os.path.join(dst, "keras_metadata.pb"))

        def replace(fields, num, fn):
            return [(f, w, fn(v) if f == num and w == 2 else v) for f, w, v in fields]

        pb = os.path.join(dst, "saved_model.pb")
        with open(pb, "rb") as f:
            top = list(_fields(f.read()))

        def object_graph(og):
            nodes = [list(_fields(v)) for f, w, v in _fields(og) if f == 1 and w == 2]
            paths, queue = {0: "root"}, [0]
            while queue:
                n = queue.pop(0)
                for f, w, v in nodes[n]:
                    if f == 1 and w == 2:
                        ref = {fn: val for fn, _, val in _fields(v)}
                        child = ref.get(1, 0)
                        if child not in paths:
                            paths[child] = paths[n] + "." + ref[2].decode()
                            queue.append(child)
            done = 0
            for k, fields in enumerate(nodes):
                meta = by_path.get(paths.get(k))
                if meta is None:
                    continue
                nodes[k] = replace(fields, 4, lambda u: encode([(f, w, v) for f, w, v in _fields(u) if f != 3] +
                                                               [(3, 2, meta)]))
                done += 1
            self.assertGreaterEqual(done, 4)  # the model and its layers
            rest = [(f, w, v) for f, w, v in _fields(og) if not (f == 1 and w == 2)]
            return encode([(1, 2, encode(n)) for n in nodes] + rest)

        meta_graph = lambda mg: encode(replace(list(_fields(mg)), 7, object_graph))  # noqa: E731
        with open(pb, "wb") as f:
            f.write(encode(replace(top, 2, meta_graph)))
        return dst

    def test_tf24_metadata_in_the_object_graph(self):
        vocab = pyutil.data("tf2-savedmodel-sc2-nextunit", "classes.json")
        new, old = os.path.join(self.tmp, "sc2-new"), os.path.join(self.tmp, "sc2-tf24")
        pyutil.convert_ok(self, self.sc2(), new, "--vocab", vocab)
        pyutil.convert_ok(self, self.tf24_layout("sc2-tf24-src"), old, "--vocab", vocab)
        a, b = pyutil.read_config(new), pyutil.read_config(old)
        self.assertEqual((a["layers"], a["output"], a["input_length"]), (b["layers"], b["output"], b["input_length"]))
        with open(os.path.join(new, "weights.safetensors"), "rb") as f1, \
                open(os.path.join(old, "weights.safetensors"), "rb") as f2:
            self.assertEqual(f1.read(), f2.read())

    def test_no_keras_metadata_anywhere(self):
        dst = self.copy(self.sc2(), "sc2-nometa")
        os.remove(os.path.join(dst, "keras_metadata.pb"))  # TF 2.9's saved_model.pb has empty metadata
        self.refused(dst, "--vocab", pyutil.data("tf2-savedmodel-sc2-nextunit", "classes.json"),
                     want=("saved_model.pb", "no Keras model config"))


if __name__ == "__main__":
    unittest.main()
