"""lstmlm.format: tensor names and gate order come from the spec the C++ loader is generated from
(src/format/tensor_names.json), and write_model refuses a tensor name the spec does not have."""
import json
import os
import tempfile
import unittest

import numpy as np

import pyutil
import lstmlm.format as fmt

TMP = pyutil.temp_root("lstmlm_writer_")


def tiny_tensors(names):
    """V=3, E=2, H=1, one layer: the tensors of a valid model under the spec's names."""
    return {names.embedding: np.zeros((3, 2)), names.weight_ih(0): np.zeros((4, 2)),
            names.weight_hh(0): np.zeros((4, 1)), names.bias_ih(0): np.zeros(4),
            names.decoder_weight: np.zeros((3, 1)), names.decoder_bias: np.zeros(3)}


def write(outdir, tensors, layers=None):
    fmt.write_model(outdir, vocab=["a", "b", "c"], embedding_dim=2, layers=layers or [fmt.layer(1)], tied=False,
                    tokenizer=fmt.tokenizer(), tensors=tensors, source={"exporter": "test"})


class FormatWriterTest(unittest.TestCase):
    def test_names_and_gate_order_come_from_the_spec(self):
        with open(os.path.join(pyutil.SOURCE_DIR, "src", "format", "tensor_names.json"), encoding="utf-8") as f:
            spec = json.load(f)
        self.assertEqual(fmt.GATE_ORDER, ("i", "f", "g", "o"))
        self.assertEqual(fmt.GATE_ORDER, tuple(spec["cells"]["lstm"]["gate_order"]))
        self.assertEqual(fmt.CELL_GATES, {"lstm": ("i", "f", "g", "o"), "gru": ("r", "z", "n"), "rnn": ("h",)})
        self.assertEqual(fmt.names.weight_ih(1, cell="gru"), "gru.weight_ih_l1")
        self.assertEqual(fmt.names.bias_hh(0, cell="rnn"), "rnn.bias_hh_l0")
        self.assertEqual(fmt.names.weight_ci(2), "lstm.weight_ci_l2")
        self.assertEqual(fmt.names.embedding, "embedding.weight")
        self.assertEqual(fmt.names.weight_ih(0), "lstm.weight_ih_l0")
        self.assertEqual(fmt.names.weight_hh(2), "lstm.weight_hh_l2")
        self.assertEqual(fmt.names.bias_ih(1), "lstm.bias_ih_l1")
        self.assertEqual(fmt.names.bias_hh(1), "lstm.bias_hh_l1")
        self.assertEqual(fmt.names.weight_hr(3), "lstm.weight_hr_l3")
        self.assertEqual(fmt.names.decoder_weight, "decoder.weight")
        self.assertEqual(fmt.names.decoder_bias, "decoder.bias")

    def test_spec_names_are_written(self):
        d = tempfile.mkdtemp(dir=TMP)
        write(d, tiny_tensors(fmt.names))
        self.assertEqual(sorted(os.listdir(d)), ["config.json", "vocab.json", "weights.safetensors"])

    def test_unknown_tensor_name_is_refused_before_anything_is_written(self):
        for bad in ("lstm.weight_ih_10", "decoder.weights", "rnn.weight_ih_l0", "lstm.weight_ih_l1",
                    "lstm.weight_ih_l01", "embedding.weight "):
            with self.subTest(name=bad):
                d = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
                tensors = tiny_tensors(fmt.names)
                tensors[bad] = np.zeros(1)
                with self.assertRaises(ValueError) as cm:
                    write(d, tensors)
                self.assertIn(repr(bad), str(cm.exception))
                self.assertIn("tensor_names.json", str(cm.exception))
                self.assertFalse(os.path.exists(d), "a directory was created for a refused model")

    def test_input_length_is_written_when_given_and_checked(self):
        args = dict(vocab=["a", "b", "c"], embedding_dim=2, layers=[fmt.layer(1)], tied=False,
                    tokenizer=fmt.tokenizer(), tensors=tiny_tensors(fmt.names), source={})
        d = tempfile.mkdtemp(dir=TMP)
        fmt.write_model(d, **args)
        self.assertNotIn("input_length", pyutil.read_config(d))
        fmt.write_model(d, input_length=np.int64(8404), **args)
        self.assertEqual(pyutil.read_config(d)["input_length"], 8404)
        for bad in (0, -1, 1000001, 2.5, "9", True):
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError) as cm:
                    fmt.write_model(os.path.join(tempfile.mkdtemp(dir=TMP), "out"), input_length=bad, **args)
                self.assertIn("input_length", str(cm.exception))

    def test_layer_names_follow_the_number_of_layers(self):
        self.assertTrue(fmt.names.is_known("lstm.weight_hr_l1", 2))
        self.assertFalse(fmt.names.is_known("lstm.weight_hr_l2", 2))
        self.assertTrue(fmt.names.is_known("decoder.bias", 1))

    def test_layer_names_follow_each_layers_cell(self):
        layers = [fmt.gru_layer(2), fmt.layer(2, peepholes=True), fmt.rnn_layer(2)]
        for name in ("gru.weight_ih_l0", "gru.bias_hh_l0", "lstm.weight_hh_l1", "lstm.weight_ci_l1",
                     "lstm.weight_co_l1", "rnn.weight_hh_l2", "rnn.bias_ih_l2"):
            self.assertTrue(fmt.names.is_known(name, layers), name)
        for name in ("lstm.weight_ih_l0", "gru.weight_ih_l1", "gru.weight_hr_l0", "gru.weight_ci_l0",
                     "rnn.weight_ih_l0", "lstm.weight_ih_l2", "rnn.weight_ih_l3", "gru.weight_ih_l01"):
            self.assertFalse(fmt.names.is_known(name, layers), name)

    def test_version_3_only_when_a_layer_needs_it(self):
        H, V, E = 2, 3, 2

        def tensors(cell, k, gates, in_size, **extra):
            n = fmt.names
            t = {n.weight_ih(k, cell=cell): np.zeros((gates * H, in_size)),
                 n.weight_hh(k, cell=cell): np.zeros((gates * H, H)), n.bias_ih(k, cell=cell): np.zeros(gates * H)}
            t.update(extra)
            return t

        base = {fmt.names.embedding: np.zeros((V, E)), fmt.names.decoder_weight: np.zeros((V, H)),
                fmt.names.decoder_bias: np.zeros(V)}
        cases = [
            ([fmt.layer(H)], tensors("lstm", 0, 4, E), 1),
            ([fmt.layer(H, activation="relu")], tensors("lstm", 0, 4, E), 2),
            ([fmt.gru_layer(H)], tensors("gru", 0, 3, E), 3),
            ([fmt.rnn_layer(H, activation="relu")], tensors("rnn", 0, 1, E), 3),
            ([fmt.layer(H, peepholes=True)],
             tensors("lstm", 0, 4, E, **{fmt.names.weight_ci(0): np.zeros(H), fmt.names.weight_cf(0): np.zeros(H),
                                         fmt.names.weight_co(0): np.zeros(H)}), 3),
            ([fmt.gru_layer(H, reset_after=False), fmt.layer(H)],
             {**tensors("gru", 0, 3, E), **tensors("lstm", 1, 4, H)}, 3),
        ]
        for layers, t, version in cases:
            with self.subTest(layers=layers):
                d = tempfile.mkdtemp(dir=TMP)
                fmt.write_model(d, vocab=["a", "b", "c"], embedding_dim=E, layers=layers, tied=False,
                                tokenizer=fmt.tokenizer(), tensors={**base, **t}, source={})
                config = pyutil.read_config(d)
                self.assertEqual(config["format_version"], version)
                self.assertEqual(config["layers"], layers)
        self.assertEqual(fmt.layer(H), {"hidden_size": H, "proj_size": 0, "activation": "tanh",
                                        "recurrent_activation": "sigmoid", "cell_clip": None})

    def test_v3_layers_are_checked(self):
        bad = [
            (fmt.rnn_layer(2, activation="linear"), "layers[0].activation"),
            (fmt.gru_layer(2, recurrent_activation="tanh"), "layers[0].recurrent_activation"),
            ({**fmt.gru_layer(2), "proj_size": 1}, "layers[0].proj_size"),
            ({**fmt.gru_layer(2), "cell": "tree"}, "layers[0].cell"),
            (fmt.layer(2, proj_clip=3.0), "layers[0].proj_clip"),
            (fmt.layer(2, proj_size=1, proj_clip=-1.0), "layers[0].proj_clip"),
            ({**fmt.layer(2), "peepholes": 1}, "layers[0].peepholes"),
        ]
        for l, field in bad:
            with self.subTest(layer=l):
                config = {"vocab_size": 3, "embedding_dim": 2, "layers": [l], "output": {"tied": False},
                          "tokenizer": fmt.tokenizer()}
                with self.assertRaises(ValueError) as cm:
                    fmt.check_config(config)
                self.assertIn(field, str(cm.exception))

    def test_trainable_keys_name_each_layer_by_its_cell(self):
        layers = [fmt.gru_layer(2), fmt.layer(2)]
        ok = {"embedding": False, "gru_l0": True, "lstm_l1": False, "decoder": True}
        fmt.check_trainable(ok, layers, 0)
        for bad, field in (({"lstm_l0": True}, "source.trainable.lstm_l0"), ({"gru_l2": True}, "gru_l2"),
                           ({"head_0": True}, "head_0"), ({"decoder": 1}, "source.trainable.decoder is 1")):
            with self.subTest(trainable=bad):
                with self.assertRaises(ValueError) as cm:
                    fmt.check_trainable(bad, layers, 0)
                self.assertIn(field, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
