"""Keyboard prediction from Python (Model.predict(prefix=, boost=), Model.complete, Model.load_boost,
Model.generate(boost=)) against numpy references computed from the model's own full distribution:
completion is the distribution restricted to the words that start with the prefix; boosting is
lp + bonus renormalized in float64; the incremental path (a State advanced word by word) gives the
numbers of predicting from the whole context."""
import math
import os
import unittest

import numpy as np

import pyutil

lstmlm = None

WORD = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
CHAR = os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space")
CONTEXT = "once upon a time there was a"


class KeyboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global lstmlm
        lstmlm = pyutil.require_module()
        cls.m = lstmlm.Model(WORD, threads=1)

    def full(self, context):
        rows = self.m.predict(context, top=None)
        lp = np.empty(len(rows))
        for c in rows:
            lp[c.id] = c.logprob
        return lp

    def test_prefix_is_the_distribution_restricted(self):
        lp = self.full(CONTEXT)
        for prefix in ["k", "th", "d", "zzq", "Ki"]:
            got = self.m.predict(CONTEXT, top=5, prefix=prefix)
            typed = prefix.lower()  # the model lowercases, as its tokenizer does
            words = [(i, t) for i, t in enumerate(self.m.vocab) if t.startswith(typed) and t not in ("<eos>", "<unk>")]
            want = sorted(words, key=lambda w: (-lp[w[0]], w[0]))[:5]
            self.assertEqual([(c.id, c.token) for c in got], want, prefix)
            for c in got:
                self.assertEqual(c.logprob, np.float32(lp[c.id]))

    def test_complete_from_a_state_is_predict_from_the_context(self):
        s, t = lstmlm.State(), lstmlm.State()
        self.m.BeginSentenceWrite(s)
        for w in CONTEXT.split():
            self.m.BaseScore(s, w, t)
            s, t = t, s
        for prefix in ["", "k", "d"]:
            self.assertEqual(self.m.complete(s, prefix, top=4), self.m.predict(CONTEXT, top=4, prefix=prefix))

    def test_boost_renormalizes(self):
        b = self.m.load_boost(["king\t2.5", "a king\t1", "daughter\t-3"])
        self.assertEqual(len(b), 3)
        lp = self.full(CONTEXT)
        ids = {t: i for i, t in enumerate(self.m.vocab)}
        want = lp.astype(np.float64)
        want[ids["king"]] += 3.5  # "king" and "a king" both apply after "... a"
        want[ids["daughter"]] -= 3
        want -= math.log(np.exp(want).sum())
        got = self.m.predict(CONTEXT, top=None, boost=b)
        self.assertEqual(len(got), len(lp))
        for c in got:
            self.assertAlmostEqual(c.logprob, want[c.id], delta=1e-5)
        # From a file, and the incremental path with the history for the phrase.
        path = os.path.join(pyutil.temp_root("lstmlm_boost_"), "b.tsv")
        with open(path, "w") as f:
            f.write("# boosts\nking\t2.5\na king\t1\ndaughter\t-3\n")
        fb = self.m.load_boost(path)
        self.assertEqual(self.m.predict(CONTEXT, top=3, boost=fb), got[:3])
        s, t = lstmlm.State(), lstmlm.State()
        self.m.BeginSentenceWrite(s)
        for w in CONTEXT.split():
            self.m.BaseScore(s, w, t)
            s, t = t, s
        history = [ids[w] for w in CONTEXT.split()]
        self.assertEqual(self.m.complete(s, "", top=3, boost=fb, history=history), got[:3])

    def test_generate_with_boost(self):
        b = self.m.load_boost(["daughter\t40"])
        text = self.m.generate("once upon a time", max_tokens=4, temperature=0, stop_at_eos=False, boost=b)
        self.assertEqual(text, "once upon a time daughter daughter daughter daughter")
        plain = self.m.generate("once upon a time", max_tokens=4, temperature=0, stop_at_eos=False)
        self.assertNotEqual(plain, text)

    def test_character_model_completes_to_the_boundary(self):
        c = lstmlm.Model(CHAR, threads=1)
        got = c.predict("once upon a time the ", top=3, prefix="ki")
        self.assertTrue(got)
        for cand in got:
            self.assertTrue(cand.token.startswith("ki"), cand)
            self.assertNotIn(" ", cand.token)
        s, t = lstmlm.State(), lstmlm.State()
        c.BeginSentenceWrite(s)
        for ch in "once upon a time the ":
            c.BaseScore(s, ch, t)
            s, t = t, s
        self.assertEqual([x.token for x in c.complete(s, "ki", top=3)], [x.token for x in got])

    def test_errors(self):
        other = lstmlm.Model(CHAR, threads=1)
        b = other.load_boost(["a\t1"])
        with self.assertRaisesRegex(lstmlm.UsageError, "loaded for another Model"):
            self.m.predict(CONTEXT, boost=b)
        with self.assertRaisesRegex(lstmlm.UsageError, "boost must be a Boost"):
            self.m.predict(CONTEXT, boost="king\t1")
        with self.assertRaisesRegex(lstmlm.InputError, r"<boost>:2: bonus 'x' is not a number"):
            self.m.load_boost(["king\t1", "queen\tx"])
        with self.assertRaisesRegex(lstmlm.InputError, "cannot open"):
            self.m.load_boost("/no/such/boost.tsv")
        s = lstmlm.State()
        with self.assertRaisesRegex(lstmlm.UsageError, "complete: the State has not been written"):
            self.m.complete(s, "k")


if __name__ == "__main__":
    unittest.main()
