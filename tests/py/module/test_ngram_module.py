"""lstmlm.NgramModel: KenLM's Python names on an ARPA model, with the numbers `lstmlm score -m FILE.arpa`
prints (the CLI is the reference: the same library call), and KenLM's own expectations on its test.arpa."""
import json
import os
import subprocess
import unittest

import pyutil

SENTENCES = ["looking on a little the biarritz not_found more .", "also would consider higher looking", ""]


class NgramModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lstmlm = pyutil.require_module()
        cls.path = pyutil.data("kenlm-test-arpa", "test.arpa")
        cls.model = cls.lstmlm.NgramModel(cls.path)

    def cli_fields(self, sentence, *flags):
        r = subprocess.run([pyutil.require_cli(), "score", "-m", self.path, "--output-format", "kenlm", *flags],
                           input=sentence + "\n", capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        fields = r.stdout.splitlines()[0].split("\t")
        out = []
        for f in fields:
            if f.startswith("Total:"):
                break
            word, rest = f.rsplit("=", 1)
            _, length, log10 = rest.split()
            out.append((word, int(length), float(log10)))
        return out

    def test_full_scores_and_score_are_the_clis(self):
        for s in SENTENCES:
            for bos, eos, flags in ((True, True, ()), (False, True, ("--no-bos",)), (True, False, ("--no-eos",))):
                got = list(self.model.full_scores(s, bos=bos, eos=eos))
                want = self.cli_fields(s, *flags)
                self.assertEqual([(f.token, f.length) for f in got], [(w, n) for w, n, _ in want])
                for f, (_, _, lp) in zip(got, want):
                    self.assertAlmostEqual(f.log10prob, lp, delta=6e-7 * max(1.0, abs(lp)))  # 7 digits printed
                self.assertAlmostEqual(self.model.score(s, bos=bos, eos=eos), sum(f.log10prob for f in got),
                                       delta=1e-9)

    def test_kenlms_expectations(self):
        # KenLM's lm/model_test.cc (../shared/data/kenlm-test-arpa/SOURCE.md): "<s> looking on a little",
        # then "more" and "loin" as 5-grams.
        got = list(self.model.full_scores("looking on a little more loin", eos=False))
        self.assertEqual([f.length for f in got], [2, 3, 4, 5, 5, 5])
        for f, want in zip(got, [-0.4846522, -0.348837, -0.0155266, -0.00306122, -0.00181395, -0.0432557]):
            self.assertAlmostEqual(f.log10prob, want, delta=1e-6)
        oov = list(self.model.full_scores("not_found", bos=False, eos=False))[0]
        self.assertEqual((oov.length, oov.oov), (1, True))
        self.assertAlmostEqual(oov.log10prob, -1.995635, delta=1e-6)
        self.assertEqual(self.model.order, 5)
        self.assertEqual(self.model.counts, [37, 47, 11, 6, 4])
        self.assertIn("looking", self.model)
        self.assertNotIn("not_found", self.model)

    def test_a_mixture_gives_score_mix_numbers(self):
        model = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
        lines = ["once upon a time there was a king", "looking on a little more loin", "the old man ."]
        mix = self.lstmlm.Mixture(self.lstmlm.Model(model), [(self.model, 0.4)])
        self.assertEqual(mix.weights, [0.6, 0.4])
        r = subprocess.run([pyutil.require_cli(), "score", "-m", model, "--mix", f"{self.path}:0.4", "--output-format",
                            "jsonl"], input="\n".join(lines) + "\n", capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        cli = [json.loads(x) for x in r.stdout.splitlines() if json.loads(x)["type"] == "line"]
        got = mix.score_lines(lines)
        for g, c in zip(got, cli, strict=True):
            self.assertAlmostEqual(g.logprob, c["logprob"], delta=1e-6 * max(1.0, abs(c["logprob"])))
        for line, c in zip(lines, cli):
            self.assertAlmostEqual(mix.score(line), c["log10prob"], delta=1e-6 * max(1.0, abs(c["log10prob"])))
            self.assertAlmostEqual(sum(f.log10prob for f in mix.full_scores(line)), mix.score(line), delta=1e-9)
        # The same mixture from a path; weights that do not fit are the CLI's UsageError.
        self.assertAlmostEqual(self.lstmlm.Mixture(self.lstmlm.Model(model), [(self.path, 0.4)]).score(lines[0]),
                               mix.score(lines[0]), delta=1e-12)
        for bad in ([(self.model, 1.5)], [(self.model, 0.6), (self.model, 0.6)], [], [("x",)], [(self.model, "a")]):
            with self.assertRaises(self.lstmlm.UsageError):
                self.lstmlm.Mixture(self.lstmlm.Model(model), bad)

    def test_a_mixture_predicts_and_generates_as_the_cli(self):
        model = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
        m = self.lstmlm.Model(model)
        mix = self.lstmlm.Mixture(m, [(self.model, 0.3)])
        self.assertIs(mix.model, m)
        cli = lambda *a: subprocess.run([pyutil.require_cli(), *a, "-m", model, "--mix", f"{self.path}:0.3",
                                         "--output-format", "jsonl"], capture_output=True, text=True)
        r = cli("predict", "--top", "6", "once upon a")
        self.assertEqual(r.returncode, 0, r.stderr)
        want = [(c["token"], c["id"], c["logprob"]) for c in json.loads(r.stdout)["top"]]
        got = [(c.token, c.id, c.logprob) for c in mix.predict("once upon a", top=6)]
        self.assertEqual([g[:2] for g in got], [w[:2] for w in want])
        for g, w in zip(got, want):
            self.assertAlmostEqual(g[2], w[2], delta=1e-6 * max(1.0, abs(w[2])))
        self.assertNotEqual([c.id for c in m.predict("once upon a", top=6)], [w[1] for w in want])
        r = cli("generate", "-p", "the king", "--max-tokens", "8", "--seed", "11")
        self.assertEqual(r.returncode, 0, r.stderr)
        text = json.loads(r.stdout.splitlines()[0])["text"]  # the generated text; Python's has the prompt first
        self.assertEqual(mix.generate("the king", max_tokens=8, seed=11), "the king " + text)
        self.assertNotEqual(m.generate("the king", max_tokens=8, seed=11), "the king " + text)
        self.assertEqual(mix.last_seed, 11)
        log = self.lstmlm.Mixture(m, [(self.model, 0.3)], mode="loglinear")
        r = subprocess.run([pyutil.require_cli(), "predict", "-m", model, "--mix", f"{self.path}:0.3", "--mix-mode",
                            "loglinear", "--output-format", "jsonl", "--top", "6", "once upon a"],
                           capture_output=True, text=True)
        want = [(c["id"], c["logprob"]) for c in json.loads(r.stdout)["top"]]
        got = [(c.id, c.logprob) for c in log.predict("once upon a", top=6)]
        self.assertEqual([g[0] for g in got], [w[0] for w in want])
        for g, w in zip(got, want):
            self.assertAlmostEqual(g[1], w[1], delta=1e-6 * max(1.0, abs(w[1])))
        r = subprocess.run([pyutil.require_cli(), "score", "-m", model, "--mix", f"{self.path}:0.3", "--mix-mode",
                            "loglinear", "--output-format", "jsonl"], input="once upon a time\n", capture_output=True,
                           text=True)
        self.assertAlmostEqual(log.score_lines(["once upon a time"])[0].logprob, json.loads(r.stdout.splitlines()[0])["logprob"],
                               delta=1e-5)
        with self.assertRaises(self.lstmlm.UsageError):
            self.lstmlm.Mixture(m, [(self.model, 0.3)], mode="geometric")
        other = self.lstmlm.Mixture(self.lstmlm.Model(model), [(self.model, 0.3)])
        with self.assertRaises(self.lstmlm.UsageError):
            m._predict("once", 3, "", None, other)  # a Mixture of another Model
        with self.assertRaises(self.lstmlm.UsageError):
            m._predict("once", 3, "", None, "mix")

    def test_a_mixture_takes_neural_models_as_the_cli(self):
        """Mixture(model, [(Model or model directory, weight)]): the numbers of `--mix DIR:WEIGHT` in score,
        predict and generate (the CLI's are checked against the float64 rule in cli/test_mix.py)."""
        from cli.test_mix import neural_member
        model = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
        other = neural_member(pyutil.temp_root("lstmlm_pymix_"))
        m = self.lstmlm.Model(model)
        cli = lambda *a, **kw: subprocess.run([pyutil.require_cli(), *a, "-m", model, "--mix", f"{other}:0.3",
                                               "--output-format", "jsonl"], capture_output=True, text=True, **kw)
        lines = ["once upon a time there was a king", "the zz3 said nothing ."]
        r = cli("score", input="\n".join(lines) + "\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        want_lines = [json.loads(x)["logprob"] for x in r.stdout.splitlines() if json.loads(x)["type"] == "line"]
        r = cli("predict", "--top", "6", "there was a")
        self.assertEqual(r.returncode, 0, r.stderr)
        want_top = [(c["id"], c["logprob"]) for c in json.loads(r.stdout)["top"]]
        r = cli("generate", "-p", "the king", "--max-tokens", "8", "--seed", "11")
        self.assertEqual(r.returncode, 0, r.stderr)
        want_text = "the king " + json.loads(r.stdout.splitlines()[0])["text"]
        for member in (self.lstmlm.Model(other), other):
            mix = self.lstmlm.Mixture(m, [(member, 0.3)])
            for g, w in zip(mix.score_lines(lines), want_lines, strict=True):
                self.assertAlmostEqual(g.logprob, w, delta=1e-6 * max(1.0, abs(w)))
            got = [(c.id, c.logprob) for c in mix.predict("there was a", top=6)]
            self.assertEqual([g[0] for g in got], [w[0] for w in want_top])
            for g, w in zip(got, want_top):
                self.assertAlmostEqual(g[1], w[1], delta=1e-6 * max(1.0, abs(w[1])))
            self.assertEqual(mix.generate("the king", max_tokens=8, seed=11), want_text)
        self.assertNotEqual(m.generate("the king", max_tokens=8, seed=11), want_text)
        with self.assertRaises(self.lstmlm.UsageError):  # not a word model
            self.lstmlm.Mixture(m, [(self.lstmlm.Model(os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space")), 0.3)])

    def test_a_broken_file_is_a_model_error_naming_file_and_line(self):
        path = os.path.join(pyutil.temp_root("lstmlm_ngram_py_"), "cut.arpa")
        with open(path, "w") as f:
            f.write("\\data\\\nngram 1=3\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n")
        with self.assertRaises(self.lstmlm.ModelError) as e:
            self.lstmlm.NgramModel(path)
        self.assertIn(path + ": line 6:", str(e.exception))
        with self.assertRaises(TypeError):
            self.lstmlm.NgramModel(None)


if __name__ == "__main__":
    unittest.main()
