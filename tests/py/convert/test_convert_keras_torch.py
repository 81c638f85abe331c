"""Keras and PyTorch converter cases beyond the real files: weights-only Keras files, options that change
inference (refused, naming layer and option), hard_sigmoid by Keras version, PyTorch variants (projection,
tied state_dict, bidirectional refused)."""
import json
import os
import shutil
import tempfile
import unittest
import zipfile

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel


def h5py():
    import h5py as h
    return h


class KerasVariantsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lstmlm_kv_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def edited_copy(self, src, edit_layer=None, version=None):
        """Copy of a model.save .h5 with one LSTM layer's config edited and/or another keras_version."""
        dst = os.path.join(self.tmp, "m.h5")
        shutil.copy(src, dst)
        os.chmod(dst, 0o644)
        with h5py().File(dst, "r+") as f:
            cfg = json.loads(f.attrs["model_config"])
            for layer in cfg["config"]["layers"]:
                if layer["class_name"] == "LSTM" and edit_layer:
                    edit_layer(layer)
                    break
            f.attrs["model_config"] = json.dumps(cfg)
            if version:
                f.attrs["keras_version"] = version
        return dst

    def run_convert(self, src, *opts):
        out = os.path.join(self.tmp, "out")
        return pyutil.convert(src, out, *opts), out

    def k2(self):
        return pyutil.data("keras2-char2-onehot", "next_word_model.h5")

    def vocab43(self):
        p = os.path.join(self.tmp, "v.json")
        with open(p, "w") as f:
            json.dump([chr(0x100 + i) for i in range(43)], f)
        return p

    def test_refusals_name_layer_and_option(self):
        cases = [
            (lambda l: l["config"].update(go_backwards=True), "go_backwards"),
            (lambda l: l["config"].update(stateful=True), "stateful"),
            (lambda l: l["config"].update(activation="softsign"), "activation='softsign'"),
            (lambda l: l["config"].pop("recurrent_activation"), "no recurrent_activation"),
            (lambda l: l["config"].update(recurrent_activation="tanh"), "recurrent_activation='tanh'"),
            (lambda l: l.update(class_name="Bidirectional"), "layer type Bidirectional"),
            (lambda l: l.update(class_name="Bidirectional"), "layer type Bidirectional"),
            (lambda l: l["config"].update(peephole=True), "peephole"),
        ]
        for edit, expected in cases:
            src = self.edited_copy(self.k2(), edit)
            r, _ = self.run_convert(src, "--vocab", self.vocab43())
            self.assertEqual(r.returncode, 1, expected)
            self.assertIn("lstm_21", r.stderr, expected)
            self.assertIn(expected, r.stderr)
            self.assertNotIn("Traceback", r.stderr)

    def test_trainable_flags_are_recorded(self):
        # A frozen LSTM (trainable=False in its layer config) must reach source.trainable, so that
        # `lstmlm info` splits trainable / non-trainable parameters as Keras's summary() does.
        src = self.edited_copy(self.k2(), lambda l: l["config"].update(trainable=False))
        r, out = self.run_convert(src, "--vocab", self.vocab43())
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "config.json")) as f:
            flags = json.load(f)["source"]["trainable"]
        # The model has two LSTMs (lstm_21, lstm_22) and no Embedding; edited_copy froze the first.
        self.assertEqual(flags, {"lstm_l0": False, "lstm_l1": True, "decoder": True})
        info = pyutil.run_lstmlm("info", "-m", out, "--json")
        self.assertEqual(info.returncode, 0, info.stderr)
        j = json.loads(info.stdout)
        lstm = sum(l["params"] for l in j["layers"] if l["name"] == "lstm_l0")
        self.assertEqual((j["non_trainable_params"], j["trainable_params"]), (lstm, j["total_params"] - lstm))

    def test_hard_sigmoid_depends_on_the_keras_version(self):
        def hs(l):
            l["config"]["recurrent_activation"] = "hard_sigmoid"
        for version, want in (("2.11.0", "hard_sigmoid"), ("2.2.4", "hard_sigmoid"), ("3.8.0", "hard_sigmoid_keras3")):
            src = self.edited_copy(self.k2(), hs, version)
            r, out = self.run_convert(src, "--vocab", self.vocab43())
            self.assertEqual(r.returncode, 0, r.stderr)
            layers = pyutil.read_config(out)["layers"]
            self.assertEqual([l["recurrent_activation"] for l in layers], [want, "sigmoid"])

    def test_keras2_weights_only_h5(self):
        # What Keras 2 save_weights writes: the model_weights group's content at the root, no model_config.
        src = self.k2()
        dst = os.path.join(self.tmp, "w.h5")
        with h5py().File(src, "r") as f, h5py().File(dst, "w") as g:
            for k, v in f["model_weights"].attrs.items():
                g.attrs[k] = v
            g.attrs["keras_version"] = f.attrs["keras_version"]
            for name in f["model_weights"]:
                f["model_weights"].copy(name, g)
        r, _ = self.run_convert(dst, "--vocab", self.vocab43())
        self.assertEqual(r.returncode, 1)
        self.assertIn("--recurrent-activation", r.stderr)
        r, out = self.run_convert(dst, "--vocab", self.vocab43(), "--recurrent-activation", "sigmoid")
        self.assertEqual(r.returncode, 0, r.stderr)
        full = os.path.join(self.tmp, "full")
        pyutil.convert_ok(self, src, full, "--vocab", self.vocab43())
        a = pyutil.read_safetensors(os.path.join(out, "weights.safetensors"))
        b = pyutil.read_safetensors(os.path.join(full, "weights.safetensors"))
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            self.assertTrue(np.array_equal(a[k], b[k]), k)

    def test_keras3_weights_only_h5(self):
        # Keras 3 model.save_weights("x.weights.h5") writes the layout of the .keras zip's model.weights.h5.
        d = pyutil.data("keras3-cs-nextword")
        with zipfile.ZipFile(os.path.join(d, "next_word_model1.keras")) as z:
            data = z.read("model.weights.h5")
        dst = os.path.join(self.tmp, "m.weights.h5")
        with open(dst, "wb") as f:
            f.write(data)
        vocab = os.path.join(d, "tokenizer1.pkl")
        r, out = self.run_convert(dst, "--vocab", vocab, "--recurrent-activation", "sigmoid")
        self.assertEqual(r.returncode, 0, r.stderr)
        full = os.path.join(self.tmp, "full")
        pyutil.convert_ok(self, os.path.join(d, "next_word_model1.h5"), full, "--vocab", vocab)
        a = pyutil.read_safetensors(os.path.join(out, "weights.safetensors"))
        b = pyutil.read_safetensors(os.path.join(full, "weights.safetensors"))
        for k in b:
            self.assertTrue(np.array_equal(a[k], b[k]), k)

    def test_missing_vocab_is_a_one_line_error(self):
        r, _ = self.run_convert(self.k2())
        self.assertEqual(r.returncode, 1)
        self.assertIn("--vocab", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)


class TorchVariantsTest(unittest.TestCase):
    def setUp(self):
        import torch
        self.torch = torch
        torch.manual_seed(0)
        self.tmp = tempfile.mkdtemp(prefix="lstmlm_tv_")
        self.vocab = os.path.join(self.tmp, "v.json")
        with open(self.vocab, "w") as f:
            json.dump([f"w{i}" for i in range(7)], f)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def save(self, obj):
        p = os.path.join(self.tmp, "m.pt")
        self.torch.save(obj, p)
        return p

    def torch_logprobs(self, emb, lstm, lin, ids):
        t = self.torch
        with t.no_grad():
            x = emb(t.tensor(ids).view(-1, 1)).double()
            out, _ = lstm.double()(x)
            return t.log_softmax(lin.double()(out[-1, 0]), -1).numpy()

    def test_projection_and_bias_free_state_dict(self):
        t = self.torch
        emb, lstm, lin = t.nn.Embedding(7, 5), t.nn.LSTM(5, 6, 2, proj_size=3), t.nn.Linear(3, 7)
        sd = {"embed.weight": emb.weight, **{"rnn." + k: v for k, v in lstm.state_dict().items()},
              "out.weight": lin.weight, "out.bias": lin.bias}
        out = os.path.join(self.tmp, "o")
        pyutil.convert_ok(self, self.save({"state_dict": sd, "epoch": 3}), out, "--vocab", self.vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual([(l["hidden_size"], l["proj_size"]) for l in cfg["layers"]], [(6, 3), (6, 3)])
        ids = [1, 4, 2, 6]
        got = DirModel(out).next_logprobs(ids)
        self.assertLess(np.abs(got - self.torch_logprobs(emb, lstm, lin, ids)).max(), 1e-6)

    def test_tied_state_dict(self):
        t = self.torch
        emb, lstm, lin = t.nn.Embedding(7, 4), t.nn.LSTM(4, 4), t.nn.Linear(4, 7)
        lin.weight = emb.weight
        sd = {"encoder.weight": emb.weight, **{"rnn." + k: v for k, v in lstm.state_dict().items()},
              "decoder.weight": lin.weight, "decoder.bias": lin.bias}
        out = os.path.join(self.tmp, "o")
        pyutil.convert_ok(self, self.save(sd), out, "--vocab", self.vocab)
        self.assertTrue(pyutil.read_config(out)["output"]["tied"])
        self.assertNotIn("decoder.weight", pyutil.read_safetensors(os.path.join(out, "weights.safetensors")))
        ids = [3, 0, 5]
        self.assertLess(np.abs(DirModel(out).next_logprobs(ids) - self.torch_logprobs(emb, lstm, lin, ids)).max(),
                        1e-6)

    def test_bidirectional_is_refused(self):
        t = self.torch
        for rnn, expected in ((t.nn.GRU(4, 4, bidirectional=True), "bidirectional"),
                              (t.nn.LSTM(4, 4, bidirectional=True), "bidirectional")):
            sd = {"encoder.weight": t.zeros(7, 4), **{"rnn." + k: v for k, v in rnn.state_dict().items()},
                  "decoder.weight": t.zeros(7, 4), "decoder.bias": t.zeros(7)}
            r = pyutil.convert(self.save(sd), os.path.join(self.tmp, "o"), "--vocab", self.vocab)
            self.assertEqual(r.returncode, 1)
            self.assertIn(expected, r.stderr)
            self.assertNotIn("Traceback", r.stderr)

    def test_whole_module_of_unimportable_class(self):
        t = self.torch

        class TinyLM(t.nn.Module):
            def __init__(self):
                super().__init__()
                self.enc, self.lstm, self.dec = t.nn.Embedding(7, 3), t.nn.LSTM(3, 5), t.nn.Linear(5, 7)
        TinyLM.__module__, TinyLM.__qualname__ = "__main__", "TinyLM"
        import __main__
        __main__.TinyLM = TinyLM  # needed by torch.save only; the converter never imports it
        m = TinyLM()
        p = self.save(m)
        del __main__.TinyLM
        out = os.path.join(self.tmp, "o")
        pyutil.convert_ok(self, p, out, "--vocab", self.vocab)
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["source"]["module_class"], "__main__.TinyLM")
        ids = [2, 2, 6]
        got = DirModel(out).next_logprobs(ids)
        self.assertLess(np.abs(got - self.torch_logprobs(m.enc, m.lstm, m.dec, ids)).max(), 1e-6)


if __name__ == "__main__":
    unittest.main()
