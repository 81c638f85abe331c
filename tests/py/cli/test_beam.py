"""`lstmlm generate --beam-size`: each hypothesis' per-token records are the ones `lstmlm score` prints for its
text, the output is the same for any --batch-size and --threads, and bad options are one-line usage errors
(exit 2) naming the option."""
import json
import os
import subprocess
import unittest

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")


def beam(*args):
    r = pyutil.run_lstmlm("generate", "-m", MODEL, *args)
    if r.returncode != 0:
        raise AssertionError(f"generate failed ({r.returncode}): {r.stderr}")
    return r.stdout


def hypotheses(*args):
    return [json.loads(line) for line in beam("--output-format", "jsonl", *args).splitlines()]


class BeamCliTest(unittest.TestCase):
    def test_token_records_are_scores(self):
        hyps = hypotheses("-n", "14", "--beam-size", "6", "--n-best", "6")
        self.assertEqual(len(hyps), 6)
        compared = 0
        for i, h in enumerate(hyps):
            self.assertEqual(h["hypothesis"], i)
            self.assertEqual([t["id"] for t in h["tokens"]], h["ids"])
            self.assertAlmostEqual(sum(t["logprob"] for t in h["tokens"]), h["logprob"], places=5)
            if i > 0:
                self.assertGreaterEqual(hyps[i - 1]["score"], h["score"])
            r = subprocess.run([pyutil.require_cli(), "score", "-m", MODEL, "--output-format",
                                              "jsonl"], input=h["text"] + "\n", capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            words = json.loads(r.stdout.splitlines()[0])["words"]
            # score ends the line with eos: a hypothesis that ended there has all of them, another all but it.
            n = len(h["tokens"])
            self.assertEqual(words[:n], h["tokens"], h["text"])
            self.assertEqual(len(words), n if h["stopped_at_eos"] else n + 1)
            compared += 1
        self.assertGreater(compared, 0)

    def test_same_for_any_batch_size_and_threads(self):
        args = ["-p", "the king", "-n", "10", "--beam-size", "8", "--n-best", "8", "--length-penalty", "0.7",
                "--output-format", "jsonl"]
        ref = beam(*args)
        for extra in (["--batch-size", "1"], ["--batch-size", "3"], ["--threads", "2"],
                      ["--threads", "2", "--batch-size", "5"]):
            self.assertEqual(beam(*args, *extra), ref, extra)

    def test_text_is_one_hypothesis_a_line(self):
        out = beam("-p", "the king", "-n", "6", "--beam-size", "4", "--n-best", "3")
        lines = out.splitlines()
        self.assertEqual(len(lines), 3)
        for line in lines:
            self.assertTrue(line.startswith("the king "), line)

    def test_constraints_and_bias(self):
        words = os.path.join(pyutil.temp_root("lstmlm_beam_"), "words.txt")
        with open(words, "w") as f:
            f.write("the\nking\nprincess\nand\nsaid\nnot-a-word\n")
        allowed = {"the", "king", "princess", "and", "said", "<eos>"}
        for extra in ([], ["--beam-size", "3", "--n-best", "3"]):
            for h in hypotheses("-n", "8", "--allowed-words", words, "--seed", "1", "--num-samples", "1", *extra):
                self.assertTrue({t["token"] for t in h["tokens"]} <= allowed, h)
        hs = hypotheses("-n", "8", "--beam-size", "3", "--regex", "the (king|princess)( and the (king|princess))*")
        self.assertRegex(hs[0]["text"], r"^the (king|princess)( and the (king|princess))*$")
        biased = hypotheses("-n", "5", "--beam-size", "2", "--logit-bias", "princess=40")
        self.assertTrue(all(t == "princess" for t in biased[0]["text"].split()), biased[0]["text"])

    def test_sentencepiece_and_char_models(self):
        """The pattern holds over the pieces as the tokenizer joins them, in beam search and sampling; a stop
        string ends a sample."""
        for model, pattern, prompt in ((os.path.join(pyutil.SOURCE_DIR, "models", "docs-spm"),
                                        r"[a-z]+( [a-z]+)*\.", ""),
                                       (os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space"),
                                        r"[A-Z][a-z]+ (is|was) [a-z]+\.", "The ")):
            for extra in (["--beam-size", "3", "--n-best", "3"], ["--seed", "2", "--num-samples", "3"]):
                r = pyutil.run_lstmlm("generate", "-m", model, "-p", prompt, "-n", "40", "--regex", pattern,
                                      "--output-format", "jsonl", *extra)
                self.assertEqual(r.returncode, 0, r.stderr)
                recs = [json.loads(line) for line in r.stdout.splitlines()]
                self.assertEqual(len(recs), 3)
                for rec in recs:
                    self.assertRegex(rec["text"], "^" + pattern + "$", (model, extra))
        r = pyutil.run_lstmlm("generate", "-m", MODEL, "-n", "40", "--seed", "1", "--num-samples", "4", "--stop",
                              "the", "--output-format", "jsonl")
        stopped = 0
        for rec in (json.loads(line) for line in r.stdout.splitlines()):
            if rec["stopped_at"] is not None:
                self.assertEqual(rec["stopped_at"], "the")
                self.assertTrue(rec["text"].endswith("the"), rec["text"])
                stopped += 1
        self.assertGreater(stopped, 0)

    def test_refusals(self):
        empty = os.path.join(pyutil.temp_root("lstmlm_beam_"), "none.txt")
        with open(empty, "w") as f:
            f.write("zzqx\nqqqy\n")
        cases = [
            (["--beam-size", "0", "--n-best", "2"], "--n-best"),
            (["--beam-size", "1000000000"], "--beam-size"),
            (["--beam-size", "2", "--n-best", "3"], "--n-best"),
            (["--beam-size", "2", "--length-penalty", "nan"], "--length-penalty"),
            (["--beam-size", "2", "--length-penalty", "inf"], "--length-penalty"),
            (["--beam-size", "2", "--logit-bias", "the=nan"], "--logit-bias"),
            (["--beam-size", "2", "--logit-bias", "the=inf"], "--logit-bias"),
            (["--logit-bias", "zzqx=1"], "--logit-bias"),
            (["--allowed-words", empty], "--allowed-words"),
            (["--regex", "(the"], "--regex"),
            (["--regex", "a{3,2}"], "--regex"),
            (["--beam-size", "2", "--num-samples", "2"], "--num-samples"),
        ]
        for args, option in cases:
            r = pyutil.run_lstmlm("generate", "-m", MODEL, "-n", "3", *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(r.stdout, "")
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertIn(option, r.stderr)

    def test_dead_end_names_step_and_prefix(self):
        r = pyutil.run_lstmlm("generate", "-m", MODEL, "-n", "5", "--beam-size", "2", "--regex", "the zzzq")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--regex", r.stderr)
        self.assertIn('step 2 after "the"', r.stderr)


if __name__ == "__main__":
    unittest.main()
