"""TF.js layers models (model.json + weight shards): the two real ones of ../shared/data and hand-made
quantized / multi-shard / hostile ones. The reference is test_import_keras1's float64 Keras LSTM (Keras'
documented semantics, hard_sigmoid = clip(0.2x + 0.5, 0, 1)), fed with weights this test reads from the
shards itself (float32 back to back in manifest order, uint8/uint16 dequantized as q * scale + min)."""
import json
import os
import unittest

import numpy as np

import pyutil
from convert.test_import_keras1 import Keras1Case, contexts, hard_sigmoid, keras2_gates, keras_next_logprobs, sigmoid


def read_manifest_weights(model_json):
    """{name: float64 array} read the way TF.js' io.decodeWeights does."""
    with open(model_json) as f:
        m = json.load(f)
    out = {}
    for group in m["weightsManifest"]:
        data = b""
        for p in group["paths"]:
            with open(os.path.join(os.path.dirname(model_json), p), "rb") as f:
                data += f.read()
        off = 0
        for w in group["weights"]:
            n = int(np.prod(w["shape"]))
            q = w.get("quantization")
            if q:
                dt = {"uint8": "u1", "uint16": "<u2"}[q["dtype"]]
                a = np.frombuffer(data, dt, n, off).astype(np.float64) * q["scale"] + q["min"]
            else:
                dt = "<f4"
                a = np.frombuffer(data, dt, n, off).astype(np.float64)
            off += n * np.dtype(dt).itemsize
            out[w["name"]] = a.reshape(w["shape"])
    return out


class TfjsRealTest(Keras1Case):
    def test_nyt_headlines_word(self):
        d = pyutil.data("tfjs-keras224-nyt-headlines-word")
        out = os.path.join(self.tmp, "nyt")
        pyutil.convert_ok(self, os.path.join(d, "model.json"), out, "--vocab", os.path.join(d, "word_index.json"))
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["input_length"], cfg["vocab_size"], cfg["embedding_dim"]), (18, 2422, 10))
        self.assertEqual((cfg["layers"][0]["recurrent_activation"], cfg["tokenizer"]["pad_id"]), ("hard_sigmoid", 0))
        w = read_manifest_weights(os.path.join(d, "model.json"))
        gates = keras2_gates(w["lstm_1/kernel"], w["lstm_1/recurrent_kernel"], w["lstm_1/bias"])
        ref = lambda ids: keras_next_logprobs(ids, 2422, w["embedding_1/embeddings"], [(gates, hard_sigmoid)],  # noqa: E731
                                              w["dense_1/kernel"], w["dense_1/bias"])
        idx = {t: i for i, t in enumerate(pyutil.read_vocab(out))}
        seq = [idx[t] for t in "trump says the new season of the show is".split() if t in idx]
        self.compare(out, ref, [seq[:n] for n in range(1, len(seq) + 1)] + contexts(np.random.RandomState(0), 2422))
        # input_length 18: the CLI's default pre-pads to 18 as Keras' predict on pad_sequences input.
        pad = [0] * (18 - len(seq)) + seq
        r = pyutil.run_lstmlm("predict", "-m", out, "--ids", "--top", "1", "--output-format", "jsonl",
                              " ".join(map(str, seq)))
        self.assertEqual(r.returncode, 0, r.stderr)
        top = json.loads(r.stdout.splitlines()[0])["top"][0]
        self.assertEqual(top["id"], int(np.argmax(ref(pad))))
        self.assertLess(abs(top["logprob"] - ref(pad).max()), 1e-4)

    def test_nietzsche_char_two_groups(self):
        d = pyutil.data("tfjs-keras215-nietzsche-char")
        out = os.path.join(self.tmp, "nie")
        pyutil.convert_ok(self, os.path.join(d, "lstm"), out, "--vocab", os.path.join(d, "char_indices.json"))
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["input_length"], cfg["embedding_dim"], cfg["tokenizer"]["type"]), (40, 0, "char"))
        w = read_manifest_weights(os.path.join(d, "lstm", "model.json"))
        gates = keras2_gates(w["lstm_2/kernel"], w["lstm_2/recurrent_kernel"], w["lstm_2/bias"])
        ref = lambda ids: keras_next_logprobs(ids, 57, None, [(gates, hard_sigmoid)],  # noqa: E731
                                              w["dense_3/kernel"], w["dense_3/bias"])
        idx = {t: i for i, t in enumerate(pyutil.read_vocab(out))}
        seq = [idx[c] for c in "the philosopher is a man who"]
        self.compare(out, ref, [seq[:n] for n in range(1, len(seq) + 1, 4)] + contexts(np.random.RandomState(1), 57))


class TfjsSyntheticTest(Keras1Case):
    """Embedding(6, 3) -> LSTM(4, sigmoid) -> Dense(6, softmax): group 1 = the Dense (uint8 kernel, float32 bias)
    in two shards, group 2 = embeddings (uint16) + LSTM (float32 kernel, uint8 recurrent kernel with the newer
    original_dtype key, float32 bias)."""

    def make(self, name, mutate=None):
        rng = np.random.RandomState(7)
        V, E, H = 6, 3, 4
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        layers = [{"class_name": "Embedding", "config": {"name": "emb", "input_dim": V, "output_dim": E,
                                                         "batch_input_shape": [None, None], "mask_zero": False}},
                  {"class_name": "LSTM", "config": {"name": "lstm", "units": H, "activation": "tanh",
                                                    "recurrent_activation": "sigmoid", "use_bias": True,
                                                    "return_sequences": False, "implementation": 2}},
                  {"class_name": "Dense", "config": {"name": "out", "units": V, "activation": "softmax"}}]
        weights = [  # (group, name, shape, quantization dtype or None)
            (0, "out/kernel", [H, V], "uint8"), (0, "out/bias", [V], None),
            (1, "emb/embeddings", [V, E], "uint16"), (1, "lstm/kernel", [E, 4 * H], None),
            (1, "lstm/recurrent_kernel", [H, 4 * H], "uint8-new"), (1, "lstm/bias", [4 * H], None)]
        blobs, manifest = [b"", b""], [{"paths": [], "weights": []}, {"paths": [], "weights": []}]
        for g, wname, shape, q in weights:
            entry = {"name": wname, "shape": shape, "dtype": "float32"}
            n = int(np.prod(shape))
            if q is None:
                blobs[g] += rng.randn(n).astype("<f4").tobytes()
            else:
                qd = "uint8" if q.startswith("uint8") else "uint16"
                top = 255 if qd == "uint8" else 65535
                codes = rng.randint(0, top + 1, n).astype("u1" if qd == "uint8" else "<u2")
                entry["quantization"] = {"dtype": qd, "scale": 2.0 / top, "min": -1.0}
                if q == "uint8-new":
                    entry["quantization"]["original_dtype"] = "float32"
                blobs[g] += codes.tobytes()
            manifest[g]["weights"].append(entry)
        for g, blob in enumerate(blobs):  # two shards per group, cut mid-weight
            cut = len(blob) // 2 + 1
            for k, part in enumerate((blob[:cut], blob[cut:])):
                fn = f"group{g + 1}-shard{k + 1}of2"
                with open(os.path.join(d, fn), "wb") as f:
                    f.write(part)
                manifest[g]["paths"].append(fn)
        mj = {"format": "layers-model", "generatedBy": "keras v2.2.4", "convertedBy": "hand-made",
              "modelTopology": {"keras_version": "2.2.4", "backend": "tensorflow",
                                "model_config": {"class_name": "Sequential", "config": {"name": "s", "layers": layers}}},
              "weightsManifest": manifest}
        if mutate:
            mutate(mj, d)
        with open(os.path.join(d, "model.json"), "w") as f:
            json.dump(mj, f)
        vocab = os.path.join(self.tmp, "v6.json")
        with open(vocab, "w") as f:
            json.dump(["a", "b", "c", "d", "e", "f"], f)
        return d, vocab

    def test_dequantized_multi_shard(self):
        d, vocab = self.make("q")
        out = os.path.join(self.tmp, "q-out")
        pyutil.convert_ok(self, d, out, "--vocab", vocab)
        w = read_manifest_weights(os.path.join(d, "model.json"))
        self.assertTrue(np.all(np.abs(w["emb/embeddings"]) <= 1.0))
        gates = keras2_gates(w["lstm/kernel"], w["lstm/recurrent_kernel"], w["lstm/bias"])
        ref = lambda ids: keras_next_logprobs(ids, 6, w["emb/embeddings"], [(gates, sigmoid)],  # noqa: E731
                                              w["out/kernel"], w["out/bias"])
        self.compare(out, ref, contexts(np.random.RandomState(2), 6))
        # The converted tensors are the dequantized values (float32 of q * scale + min).
        t = pyutil.read_safetensors(os.path.join(out, "weights.safetensors"))
        self.assertLess(np.abs(t["embedding.weight"] - w["emb/embeddings"]).max(), 1e-6)

    def refused(self, name, mutate, *want):
        d, vocab = self.make(name, mutate)
        r = pyutil.convert(d, os.path.join(self.tmp, name + "-out"), "--vocab", vocab)
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        for s in want:
            self.assertIn(s, lines[0])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, name + "-out")))

    def test_truncated_shard(self):
        def cut(mj, d):
            p = os.path.join(d, "group2-shard2of2")
            with open(p, "rb") as f:
                data = f.read()
            with open(p, "wb") as f:
                f.write(data[:-10])
        self.refused("trunc", cut, "group2-shard2of2", "lstm/bias", "shorter than the manifest")

    def test_manifest_shape_mismatch(self):
        def grow(mj, d):
            mj["weightsManifest"][1]["weights"][1]["shape"] = [3, 20]  # lstm/kernel declared larger
        self.refused("shape", grow, "lstm/")

    def test_manifest_size_mismatch_longer_shard(self):
        def extra(mj, d):
            with open(os.path.join(d, "group1-shard2of2"), "ab") as f:
                f.write(b"\0" * 8)
        self.refused("long", extra, "weight group 0", "disagree")

    def test_manifest_shape_vs_topology(self):
        def topo(mj, d):  # consistent bytes, but a [3, 16] kernel declared [4, 12]: not what units=4 needs
            mj["weightsManifest"][1]["weights"][1]["shape"] = [4, 12]
        self.refused("topo", topo, "lstm")

    def test_missing_weight(self):
        def drop(mj, d):
            mj["weightsManifest"][0]["weights"].pop(1)  # out/bias gone (its bytes too)
            data = b""
            for k in (1, 2):
                with open(os.path.join(d, f"group1-shard{k}of2"), "rb") as f:
                    data += f.read()
            for k, part in ((1, data[:24]), (2, b"")):
                with open(os.path.join(d, f"group1-shard{k}of2"), "wb") as f:
                    f.write(part)
        self.refused("missing", drop, "out")

    def test_unknown_layer_refused(self):
        def bidirectional(mj, d):
            mj["modelTopology"]["model_config"]["config"]["layers"][1]["class_name"] = "Bidirectional"
        self.refused("bidirectional", bidirectional, "'lstm'", "Bidirectional", "not supported")

    def test_bare_list_config_and_top_level_topology(self):
        def newer(mj, d):  # Keras <= 2.1 bare list, and modelTopology holding the model config itself
            cfg = mj["modelTopology"]["model_config"]
            mj["modelTopology"] = {"class_name": "Sequential", "config": cfg["config"]["layers"],
                                   "keras_version": "2.1.5"}
        d, vocab = self.make("bare", newer)
        pyutil.convert_ok(self, d, os.path.join(self.tmp, "bare-out"), "--vocab", vocab)


if __name__ == "__main__":
    unittest.main()
