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
        self.assertEqual(fmt.GATE_ORDER, tuple(spec["gate_order"]))
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


if __name__ == "__main__":
    unittest.main()
