"""Right-to-left models: `score --reverse` feeds each line's words last to first (the start token still first, eos
still last, as Kaldi's backward RNNLMs read a sentence), checked against a float64 numpy evaluation of the model
directory (tests/py/lstmlm_dir_ref.py) on the reversed ids; `rescore --reverse` gives score's numbers, and
`rescore --backward-model DIR --backward-weight W` weighs the forward and backward log-probs as (1 - W) fwd + W
bwd (by hand from the printed values); the Python keyword and the server's field give the CLI's numbers."""
import json
import os
import subprocess
import unittest

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel

LINES = ["the old man went to the mountains .", "", "once upon a time there lived a zyzzyva king .",
         "she said nothing"]
TEXT = "\n".join(LINES) + "\n"
NBEST = ["utt1-1 the old man went to the river", "utt1-2 the old man want to the river",
         "utt1-3 an old man went to a river", "utt2-1 once upon a time", "utt2-2 once upon the time",
         "utt3-1"]


def run(*args, text=TEXT):
    return subprocess.run([pyutil.require_cli(), *args], capture_output=True, text=True, input=text)


def jsonl(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def backward_model(path):
    """A random LSTM with fairytales-word's vocabulary (the backward side of a pair)."""
    import lstmlm.format as lf
    with open(os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word", "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    rng = np.random.default_rng(11)
    V, E, H = len(vocab), 16, 24
    t = {lf.names.embedding: rng.normal(0, 0.5, (V, E)).astype(np.float32),
         lf.names.weight_ih(0): rng.normal(0, 0.3, (4 * H, E)).astype(np.float32),
         lf.names.weight_hh(0): rng.normal(0, 0.3, (4 * H, H)).astype(np.float32),
         lf.names.bias_ih(0): rng.normal(0, 0.1, 4 * H).astype(np.float32),
         lf.names.bias_hh(0): rng.normal(0, 0.1, 4 * H).astype(np.float32),
         lf.names.decoder_weight: rng.normal(0, 0.5, (V, H)).astype(np.float32),
         lf.names.decoder_bias: rng.normal(0, 0.5, V).astype(np.float32)}
    lf.write_model(path, vocab=vocab, embedding_dim=E, layers=[lf.layer(H)], tied=False, tensors=t,
                   tokenizer=lf.tokenizer(lowercase=True, unk_token="<unk>", eos_token="<eos>"),
                   source={"framework": "random", "exporter": "tests/py/cli/test_reverse.py"})
    return path


class Reverse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pyutil.temp_root("lstmlm_reverse_")
        cls.fwd = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
        cls.bwd = backward_model(os.path.join(cls.tmp, "bwd"))
        cls.vocab = pyutil.read_vocab(cls.fwd)
        cls.eos = cls.vocab.index("<eos>")
        cls.unk = cls.vocab.index("<unk>")

    def ids(self, line):
        return [self.vocab.index(w) if w in self.vocab else self.unk for w in line.split()]

    def reference(self, model, line):
        """ln p of each token of [eos] + reversed(line) + [eos] after the first, float64."""
        return DirModel(model).token_logprobs([self.eos] + self.ids(line)[::-1] + [self.eos])

    def test_score_reverse_against_float64(self):
        for model in (self.fwd, self.bwd):
            with self.subTest(model=model):
                r = run("score", "-m", model, "--reverse", "--output-format", "jsonl")
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = [x for x in jsonl(r.stdout) if x["type"] == "line"]
                self.assertEqual(len(lines), len(LINES))
                for rec, line in zip(lines, LINES):
                    want = self.reference(model, line)
                    words = rec["words"]
                    # The tokens in the order they were fed: the line's words last to first, then eos.
                    self.assertEqual([w["id"] for w in words], self.ids(line)[::-1] + [self.eos])
                    self.assertEqual(len(words), len(want))
                    for w, lp in zip(words, want):
                        self.assertAlmostEqual(w["logprob"], lp, delta=1e-4)
                    self.assertAlmostEqual(rec["logprob"], want.sum(), delta=1e-4 * len(want))
                # Not the forward numbers: a reversed sentence is another sentence.
                fwd = [x for x in jsonl(run("score", "-m", model, "--output-format", "jsonl").stdout)
                       if x["type"] == "line"]
                self.assertGreater(abs(fwd[0]["logprob"] - lines[0]["logprob"]), 0.05)

    def test_reverse_is_scoring_the_reversed_text(self):
        # By hand: reversing the words of a line without OOVs and scoring it forward feeds the same ids.
        line = LINES[0]
        back = run("score", "-m", self.fwd, "--reverse", "-v", "sentence", text=line + "\n").stdout
        by_hand = run("score", "-m", self.fwd, "-v", "sentence", text=" ".join(line.split()[::-1]) + "\n").stdout
        self.assertEqual(back.splitlines()[0], by_hand.splitlines()[0])

    def rescore(self, *args, text="\n".join(NBEST) + "\n"):
        r = run("rescore", "-m", self.fwd, "--output-format", "jsonl", *args, text=text)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [x for x in jsonl(r.stdout) if x.get("type") != "summary"]

    def test_rescore_reverse_is_score_reverse(self):
        recs = self.rescore("--reverse")
        for rec, hyp in zip(recs, NBEST):
            text = hyp.split(" ", 1)[1] if " " in hyp else ""
            want = self.reference(self.fwd, text).sum()
            self.assertAlmostEqual(rec["lm_logprob"], want, delta=1e-4 * (len(text.split()) + 1))

    def test_rescore_with_a_backward_model(self):
        plain = self.rescore()
        for w in (0.0, 0.25, 1.0):
            with self.subTest(weight=w):
                recs = self.rescore("--backward-model", self.bwd, "--backward-weight", str(w))
                self.assertEqual(len(recs), len(NBEST))
                for rec, p, hyp in zip(recs, plain, NBEST):
                    text = hyp.split(" ", 1)[1] if " " in hyp else ""
                    # The forward side is rescore's own number, unchanged.
                    self.assertEqual(rec["lm_logprob"], p["lm_logprob"])
                    self.assertAlmostEqual(rec["lm_backward"], self.reference(self.bwd, text).sum(),
                                           delta=1e-4 * (len(text.split()) + 1))
                    both = (1 - w) * rec["lm_logprob"] + w * rec["lm_backward"]
                    self.assertAlmostEqual(rec["lm_bidirectional"], both, delta=1e-5 * max(1, abs(both)))
                    self.assertAlmostEqual(rec["combined"], rec["lm_bidirectional"],
                                           delta=1e-5 * max(1, abs(both)))
                # The best of each utterance is the highest weighed score.
                for utt in ("utt1", "utt2"):
                    mine = [r for r in recs if r["utt"] == utt]
                    best = max(mine, key=lambda r: r["lm_bidirectional"])
                    self.assertTrue(best["best"])
        tsv = run("rescore", "-m", self.fwd, "--backward-model", self.bwd, "--output-format", "tsv",
                  text="\n".join(NBEST) + "\n").stdout.splitlines()[0].split("\t")
        self.assertIn("lm_backward", tsv)
        self.assertIn("lm_bidirectional", tsv)

    def test_refusals(self):
        nbest = "\n".join(NBEST) + "\n"
        cases = [
            (["score", "-m", self.fwd, "--reverse", "--context", "document"], "--context", TEXT),
            (["rescore", "-m", self.fwd, "--backward-model", self.bwd, "--context", "conversation"], "conversation",
             nbest),
            (["rescore", "-m", self.fwd, "--backward-model", self.bwd, "--reverse"], "--reverse", nbest),
            (["rescore", "-m", self.fwd, "--backward-model", self.bwd, "--backward-weight", "1.5"],
             "--backward-weight", nbest),
            (["rescore", "-m", self.fwd, "--backward-model", os.path.join(self.tmp, "nothing")], "nothing", nbest),
        ]
        for argv, needle, text in cases:
            with self.subTest(argv=argv):
                r = run(*argv, text=text)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(needle, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


class FrontEnds(unittest.TestCase):
    def test_python_and_server(self):
        model = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
        want = [x for x in jsonl(run("score", "-m", model, "--reverse", "--output-format", "jsonl").stdout)]
        try:
            import lstmlm
            lstmlm.Model
        except (ImportError, AttributeError):
            lstmlm = None
        if lstmlm is not None:
            got = lstmlm.Model(model).score_lines(LINES, reverse=True)
            for g, w in zip(got, want):
                self.assertAlmostEqual(g.logprob, w["logprob"], delta=1e-5 * max(1, abs(w["logprob"])))
        from server.test_server import Server
        server = Server(model=model)
        try:
            status, body, _ = server.post("/v1/score", {"text": TEXT, "reverse": True})
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["lines"], want[:-1])
            hyps = [{"utt": h.split("-")[0], "hyp": h.split(" ", 1)[1] if " " in h else ""} for h in NBEST]
            status, body, _ = server.post("/v1/rescore", {"hyps": hyps, "reverse": True})
            self.assertEqual(status, 200, body)
            cli = jsonl(run("rescore", "-m", model, "--reverse", "--input-format", "jsonl", "--output-format",
                            "jsonl", text="\n".join(json.dumps(h) for h in hyps) + "\n").stdout)
            got = json.loads(body)
            got = got.get("hyps", got) if isinstance(got, dict) else got
            self.assertEqual(len(got), len(NBEST))
            self.assertEqual([h["lm_logprob"] for h in got], [h["lm_logprob"] for h in cli if "lm_logprob" in h])
        finally:
            self.assertEqual(server.stop(), 0)

    def test_the_server_weighs_its_backward_model_as_the_cli(self):
        """serve --backward-model DIR: /v1/rescore gives `rescore --backward-model DIR`'s records for the
        request's backward_weight, the forward ones alone with "backward": false, and says what is wrong with
        a weight out of range or a backward field on a server without the model."""
        fwd = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
        tmp = pyutil.temp_root("lstmlm_reverse_serve_")
        bwd = backward_model(os.path.join(tmp, "bwd"))
        hyps = [{"utt": h.split("-")[0], "hyp": h.split(" ", 1)[1] if " " in h else ""} for h in NBEST]
        nbest = "\n".join(json.dumps(h) for h in hyps) + "\n"

        def cli(*extra):
            r = run("rescore", "-m", fwd, "--input-format", "jsonl", "--output-format", "jsonl", *extra, text=nbest)
            self.assertEqual(r.returncode, 0, r.stderr)
            return jsonl(r.stdout)
        from server.test_server import Server
        server = Server("--backward-model", bwd, model=fwd)
        try:
            for request, extra in (({}, ["--backward-model", bwd]),
                                   ({"backward_weight": 0.25}, ["--backward-model", bwd, "--backward-weight", "0.25"]),
                                   ({"backward": False}, [])):
                with self.subTest(request=request):
                    status, body, _ = server.post("/v1/rescore", {"hyps": hyps, **request})
                    self.assertEqual(status, 200, body)
                    want = cli(*extra)
                    self.assertEqual(json.loads(body)["hyps"], want[:-1])
                    self.assertEqual("lm_backward" in want[0], bool(extra))
            status, body, _ = server.post("/v1/rescore", {"hyps": hyps, "backward_weight": 1.5})
            self.assertEqual(status, 400, body)
            self.assertIn("backward_weight", body)
        finally:
            self.assertEqual(server.stop(), 0)
        server = Server(model=fwd)
        try:
            for request in ({"backward": True}, {"backward_weight": 0.5}):
                status, body, _ = server.post("/v1/rescore", {"hyps": hyps, **request})
                self.assertEqual(status, 400, body)
                self.assertIn("--backward-model", body)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
