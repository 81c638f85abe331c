"""The models shipped in models/: their shape is what the docs promise, they are reproducible from their
sources, and lstmlm runs them with PyTorch's numbers."""
import collections
import json
import os
import struct
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/py: the helpers
SOURCE_DIR = os.environ.get("LSTMLM_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from fidelity.test_real_models_tf1 import cli_logprobs, options  # noqa: E402

MODELS = os.path.join(SOURCE_DIR, "models")
DATA = os.path.join(SOURCE_DIR, "..", "shared", "data")


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack_from("<Q", blob, 0)[0]
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        assert meta["dtype"] in ("F32", "F16"), meta
        a, b = meta["data_offsets"]
        dtype = "<f4" if meta["dtype"] == "F32" else "<f2"
        out[name] = np.frombuffer(blob[8 + n + a:8 + n + b], dtype=dtype).reshape(meta["shape"]).astype("<f4")
    return out


def load(name):
    d = os.path.join(MODELS, name)
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    return d, config, vocab, read_safetensors(os.path.join(d, "weights.safetensors"))


def torch_logprobs(tensors, n_layers, ids):
    """Next-token log-probs after each prefix of ids, with PyTorch's nn.LSTM in float64 on stored weights."""
    import torch
    t = {k: torch.tensor(np.array(v), dtype=torch.float64) for k, v in tensors.items()}
    x = t["embedding.weight"][torch.tensor(ids)].unsqueeze(1)
    for k in range(n_layers):
        w_ih = t[f"lstm.weight_ih_l{k}"]
        lstm = torch.nn.LSTM(w_ih.shape[1], w_ih.shape[0] // 4).double()
        zero = torch.zeros(w_ih.shape[0], dtype=torch.float64)
        lstm.load_state_dict({"weight_ih_l0": w_ih, "weight_hh_l0": t[f"lstm.weight_hh_l{k}"],
                              "bias_ih_l0": t.get(f"lstm.bias_ih_l{k}", zero),
                              "bias_hh_l0": t.get(f"lstm.bias_hh_l{k}", zero)})
        with torch.no_grad():
            x, _ = lstm(x)
    return torch.log_softmax(x.squeeze(1) @ t["decoder.weight"].T + t["decoder.bias"], -1).numpy()


class FairytalesWordTest(unittest.TestCase):
    def setUp(self):
        self.dir, self.config, self.vocab, self.tensors = load("fairytales-word")

    def test_shape_is_the_seed_keras_model(self):
        self.assertEqual(self.config["vocab_size"], 554)
        self.assertEqual(self.config["embedding_dim"], 100)
        self.assertEqual([(l["hidden_size"], l["proj_size"]) for l in self.config["layers"]], [(100, 0)])
        self.assertEqual({k: list(v.shape) for k, v in self.tensors.items()},
                         {"embedding.weight": [554, 100], "lstm.weight_ih_l0": [400, 100],
                          "lstm.weight_hh_l0": [400, 100], "lstm.bias_ih_l0": [400],
                          "decoder.weight": [554, 100], "decoder.bias": [554]})
        # 554*100 + (400*100 + 400*100 + 400) + (554*100 + 554) = 55,400 + 80,400 + 55,954
        self.assertEqual(sum(v.size for v in self.tensors.values()), 191754)
        tok = self.config["tokenizer"]
        self.assertEqual((tok["type"], tok["lowercase"], tok["unk_token"], tok["eos_token"]),
                         ("word", True, "<unk>", "<eos>"))
        self.assertEqual(len(self.vocab), 554)
        self.assertEqual(len(set(self.vocab)), 554)
        self.assertEqual(self.vocab[:2], ["<unk>", "<eos>"])

    def test_vocab_is_the_552_most_frequent_train_words(self):
        path = os.path.join(DATA, "torch-wlm-fairytales", "train.txt")
        if not os.path.exists(path):
            print(f"skipping: {path} is absent")
            raise unittest.SkipTest("data absent")
        with open(path, encoding="utf-8") as f:
            counts = collections.Counter(w for line in f for w in line.lower().split())
        del counts["<unk>"]  # the corpus already holds <unk> for rare words: the special token, not a word
        words = self.vocab[2:]
        threshold = min(counts[w] for w in words)
        self.assertTrue(all(counts[w] >= threshold for w in words))
        self.assertTrue(all(c <= threshold for w, c in counts.items() if w not in set(words)))

    def test_model_card_and_log_present(self):
        with open(os.path.join(self.dir, "README.md"), encoding="utf-8") as f:
            card = f.read()
        self.assertIn("191,754", card)
        self.assertIn(f"{self.config['source']['valid_ppl_sentences']:.2f}", card)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "training.log")))

    def test_lstmlm_matches_pytorch(self):
        ids = {w: i for i, w in enumerate(self.vocab)}
        words = "the old man said to the <unk> , and he went to the sea .".split()
        seq = [ids["<eos>"]] + [ids.get(w, 0) for w in words]
        np.testing.assert_allclose(cli_logprobs(self.dir, seq), torch_logprobs(self.tensors, 1, seq),
                                   atol=1e-4, rtol=0)


class CharrnnSpaceTest(unittest.TestCase):
    def setUp(self):
        self.dir, self.config, self.vocab, self.tensors = load("charrnn-space")

    def test_shape_and_license(self):
        self.assertEqual(self.config["vocab_size"], 103)
        self.assertEqual([l["hidden_size"] for l in self.config["layers"]], [128, 128])
        self.assertEqual(self.config["tokenizer"]["type"], "char")
        self.assertEqual(sum(v.size for v in self.tensors.values()), 289639)
        with open(os.path.join(self.dir, "LICENSE.md"), encoding="utf-8") as f:
            self.assertIn("MIT License", f.read())

    def test_reproducible_from_the_checkpoint(self):
        src = os.path.join(DATA, "tf1-charrnn-space")
        if not os.path.exists(src):
            print(f"skipping: {src} is absent")
            raise unittest.SkipTest("data absent")
        from lstmlm.convert import tf1
        kw = tf1.convert(src, options())
        self.assertEqual(kw["vocab"], self.vocab)
        self.assertEqual(sorted(kw["tensors"]), sorted(self.tensors))
        for name, t in kw["tensors"].items():
            np.testing.assert_array_equal(np.asarray(t, np.float32), self.tensors[name], err_msg=name)

    def test_lstmlm_matches_pytorch(self):
        ids = {c: i for i, c in enumerate(self.vocab)}
        seq = [ids[c] for c in "The moon is a harsh mistress."]
        np.testing.assert_allclose(cli_logprobs(self.dir, seq), torch_logprobs(self.tensors, 2, seq),
                                   atol=1e-4, rtol=0)


class DocsSpmTest(unittest.TestCase):
    """models/docs-spm: SentencePiece (unigram, 500 pieces) + LSTM trained on README.md and docs/*.md by
    tools/train_docs_subword.py; weights stored as F16."""

    def setUp(self):
        self.dir, self.config, self.vocab, self.tensors = load("docs-spm")

    def test_shape_and_tokenizer(self):
        self.assertEqual(self.config["format_version"], 4)
        self.assertEqual(self.config["vocab_size"], 500)
        self.assertEqual(self.config["embedding_dim"], 64)
        self.assertEqual([l["hidden_size"] for l in self.config["layers"]], [128])
        tok = self.config["tokenizer"]
        self.assertEqual((tok["type"], tok["model"]), ("sentencepiece", "tokenizer.model"))
        self.assertEqual(self.vocab[:3], ["<unk>", "<s>", "</s>"])
        # 500*64 + (512*64 + 512*128 + 2*512) + (500*128 + 500)
        # stored: both PyTorch biases (195,828); lstmlm info counts them once (195,316)
        self.assertEqual(sum(v.size for v in self.tensors.values()), 195828)
        size = sum(os.path.getsize(os.path.join(self.dir, f)) for f in os.listdir(self.dir))
        self.assertLess(size, 400 * 1024)

    def test_vocab_is_the_sentencepiece_model(self):
        try:
            import sentencepiece as spm
        except ImportError:
            raise unittest.SkipTest("python3-sentencepiece absent")
        sp = spm.SentencePieceProcessor(model_file=os.path.join(self.dir, "tokenizer.model"))
        self.assertEqual(self.vocab, [sp.id_to_piece(i) for i in range(sp.get_piece_size())])

    def test_model_card(self):
        with open(os.path.join(self.dir, "README.md"), encoding="utf-8") as f:
            card = f.read()
        self.assertIn("195,316", card)
        self.assertIn("MIT", card)
        self.assertIn("tools/train_docs_subword.py", card)

    def test_lstmlm_matches_pytorch(self):
        try:
            import sentencepiece as spm
        except ImportError:
            raise unittest.SkipTest("python3-sentencepiece absent")
        sp = spm.SentencePieceProcessor(model_file=os.path.join(self.dir, "tokenizer.model"))
        seq = [sp.bos_id()] + sp.encode("Every example of the docs is run and compared with the page.")
        np.testing.assert_allclose(cli_logprobs(self.dir, seq), torch_logprobs(self.tensors, 1, seq),
                                   atol=1e-4, rtol=0)


if __name__ == "__main__":
    unittest.main()
