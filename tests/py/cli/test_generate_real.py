"""`lstmlm generate --temperature 0` on the real PyTorch models of ../shared/data equals the greedy continuation
of an independent float64 implementation of the same PyTorch model (ref_numpy.TorchLM reading the source file),
token for token, with each token's log-probability within 1e-4.

Greedy decoding is only comparable while the winner is clear: if the reference's top two are within MARGIN
nats at some step, float32 vs float64 may legitimately choose differently, so the comparison stops there
(and the test requires enough clear steps to be meaningful).
"""
import json
import os
import shutil
import tempfile
import unittest

import numpy as np

import pyutil
import ref_numpy

TOL = 1e-4
MARGIN = 1e-3


class GreedyRealModelsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_gen_real_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def reference_greedy(self, ref, context, n, eos_id):
        """(ids, logprobs, clear_steps): the reference's greedy continuation and how many steps had a clear winner."""
        outs, state = ref.run(context)
        lp = outs[-1]
        ids, lps, clear = [], [], None
        for step in range(n):
            order = np.argsort(-lp, kind="stable")
            if clear is None and lp[order[0]] - lp[order[1]] < MARGIN:
                clear = step
            tok = int(order[0])
            ids.append(tok)
            lps.append(float(lp[tok]))
            if tok == eos_id:
                break
            outs, state = ref.run([tok], state)
            lp = outs[-1]
        return ids, lps, len(ids) if clear is None else clear

    def generate(self, outdir, prompt, n, *extra):
        r = pyutil.run_lstmlm("generate", "-m", outdir, "-p", prompt, "--temperature", "0", "-n", str(n),
                              "--output-format", "jsonl", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def compare(self, got, ids, lps, clear, min_clear):
        print(f"clear greedy steps: {clear} of {len(ids)}", flush=True)
        self.assertGreaterEqual(clear, min_clear, "too few clear greedy steps for a meaningful comparison")
        got_ids = [t["id"] for t in got["tokens"]]
        self.assertEqual(got_ids[:clear], ids[:clear])
        for k in range(clear):
            self.assertLess(abs(got["tokens"][k]["logprob"] - lps[k]), TOL, f"step {k}")

    def test_word_language_model(self):
        d = pyutil.data("torch-wlm-fairytales")
        name = "model_epochs_25_logint_75_emsize_100_nhid_100_drop_05.pt"
        pyutil.require_cli()
        out = os.path.join(self.tmp, "wlm100")
        pyutil.convert_ok(self, os.path.join(d, name), out)
        idx = {w: i for i, w in enumerate(pyutil.read_vocab(out))}
        ref = ref_numpy.TorchLM(ref_numpy.torch_load_trusted(os.path.join(d, name)).state_dict(), "encoder.weight",
                                "rnn.", "decoder", 2)
        prompt = "the king said"
        # The model has an eos token and no bos: generation starts after <eos>, like `score`.
        context = [idx["<eos>"]] + [idx[w] for w in prompt.split()]
        ids, lps, clear = self.reference_greedy(ref, context, 40, idx["<eos>"])
        got = self.generate(out, prompt, 40)
        self.compare(got, ids, lps, clear, 5)
        if clear == len(ids):
            self.assertEqual(got["stopped_at_eos"], ids[-1] == idx["<eos>"])

    def test_char_model_with_newline_in_prompt(self):
        d = pyutil.data("torch-charlstm-statedict")
        pyutil.require_cli()
        import torch
        out = os.path.join(self.tmp, "tchar")
        pyutil.convert_ok(self, os.path.join(d, "shakespeare.pt"), out)
        ck = torch.load(os.path.join(d, "shakespeare.pt"), map_location="cpu")
        ref = ref_numpy.TorchLM(ck["model"], None, "lstm.", "fc", ck["num_layers"])
        idx = {c: i for i, c in enumerate(ck["chars"])}
        prompt = "First Citizen:\nBefore we"
        # No bos/eos: the prompt alone is the context; its line break is the "\n" character.
        ids, lps, clear = self.reference_greedy(ref, [idx[c] for c in prompt], 60, None)
        got = self.generate(out, prompt, 60)
        self.compare(got, ids, lps, clear, 20)


if __name__ == "__main__":
    unittest.main()
