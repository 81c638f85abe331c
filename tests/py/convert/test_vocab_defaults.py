"""Vocabulary defaults: <unk>, <eos> / </s>, <s> in a vocabulary become unk, eos, bos unless an option says
otherwise; each guess is printed on stderr and recorded in config.json source.guessed. The real case:
torch-wlm-fairytales converted with --vocab (its dictionary as a token list) gets eos <eos>, and its
document perplexity then matches PyTorch reading the test set as one stream after a leading <eos>."""
import json
import math
import os
import shutil
import tempfile
import unittest

import numpy as np

import pyutil
import ref_numpy

WLM = "model_epochs_25_logint_75_emsize_100_nhid_100_drop_05.pt"


class VocabDefaultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_vocabdef_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_wlm_with_vocab_gets_eos(self):
        d = pyutil.data("torch-wlm-fairytales")
        from lstmlm.convert.vocab import corpus_vocab
        tokens = corpus_vocab(d).tokens
        vpath = os.path.join(self.tmp, "wlm-vocab.json")
        with open(vpath, "w", encoding="utf-8") as f:
            json.dump(tokens, f, ensure_ascii=False)
        out = os.path.join(self.tmp, "wlm")
        r = pyutil.convert_ok(self, os.path.join(d, WLM), out, "--vocab", vpath)
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["tokenizer"]["eos_token"], cfg["tokenizer"]["unk_token"]), ("<eos>", "<unk>"))
        self.assertEqual(cfg["source"]["guessed"], {"unk_token": "<unk>", "eos_token": "<eos>"})
        notes = [l for l in r.stderr.splitlines() if "note:" in l]
        self.assertEqual(len(notes), 2, r.stderr)
        idx = {w: i for i, w in enumerate(pyutil.read_vocab(out))}
        with open(os.path.join(d, "test.txt"), encoding="utf-8") as f:
            stream = [idx[w] for line in f for w in line.split() + ["<eos>"]]
        rr = pyutil.run_lstmlm("score", "-m", out, "--context", "document", "-v", "word", "--output-format",
                               "jsonl", os.path.join(d, "test.txt"))
        self.assertEqual(rr.returncode, 0, rr.stderr)
        words = [w for rec in map(json.loads, rr.stdout.splitlines()) if rec["type"] == "line"
                 for w in rec["words"] if w["logprob"] is not None]
        self.assertEqual(len(words), len(stream))  # with eos the first word is predicted from <eos>
        import torch
        m = ref_numpy.torch_load_trusted(os.path.join(d, WLM))
        ids = [idx["<eos>"]] + stream
        with torch.no_grad():
            x = torch.tensor(ids).view(-1, 1)
            o, _ = m.rnn.double()(m.encoder.double()(x))
            lp = torch.log_softmax(m.decoder.double()(o.view(-1, o.shape[-1])), -1)
            ref = (-lp[:-1].gather(1, torch.tensor(ids[1:]).view(-1, 1))).view(-1).numpy()
        got = -np.array([w["logprob"] for w in words])
        print(f"  wlm --vocab: max |d log-prob| {np.abs(got - ref).max():.2e}, ppl PyTorch "
              f"{math.exp(ref.mean()):.4f} lstmlm {math.exp(got.mean()):.4f}", flush=True)
        self.assertLess(np.abs(got - ref).max(), 1e-4)
        self.assertLess(abs(math.exp(got.mean()) - 51.784), 0.01)

    def test_s_and_slash_s(self):
        from lstmlm.convert import common
        import argparse
        p = argparse.ArgumentParser()
        common.add_common_arguments(p)
        from lstmlm.convert.vocab import Vocab
        v = Vocab(["<s>", "</s>", "a", "b"], "test")
        args = p.parse_args([])
        kw = common.assemble(args, size=4, tensors={}, embedding_dim=2, layers=[], tied=False, source={},
                             source_vocab=v, where="x")
        t = kw["tokenizer"]
        self.assertEqual((t["bos_token"], t["eos_token"], t["unk_token"]), ("<s>", "</s>", None))
        self.assertEqual(kw["source"]["guessed"], {"eos_token": "</s>", "bos_token": "<s>"})
        kw = common.assemble(p.parse_args(["--bos", "", "--eos", "a"]), size=4, tensors={}, embedding_dim=2,
                             layers=[], tied=False, source={}, source_vocab=v, where="x")
        self.assertEqual((kw["tokenizer"]["bos_token"], kw["tokenizer"]["eos_token"]), (None, "a"))
        self.assertNotIn("guessed", kw["source"])


if __name__ == "__main__":
    unittest.main()
