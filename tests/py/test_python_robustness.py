"""The Python module under hostile use: State objects never initialized, None for a State, malformed State
pickles. Each ends in the documented exception with a one-line message (docs/python.md, "Errors"); never a
crash, a bare TypeError/RuntimeError or a silently wrong result."""
import os
import pickle
import sys
import unittest

import pyutil

PYTHONPATH = os.environ.get("LSTMLM_PYTHONPATH", "")
try:
    if PYTHONPATH:
        sys.path.insert(0, PYTHONPATH)
    import lstmlm
    lstmlm.Model  # the compiled part: a package without it (the source tree's) raises ImportError here
except ImportError as e:
    lstmlm = None
    REASON = f"the lstmlm module is not importable ({e}; LSTMLM_PYTHONPATH={PYTHONPATH!r})"

WORD = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
CHAR = os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space")


def setUpModule():
    if lstmlm is None:
        print("SKIP:", REASON, file=sys.stderr)
        raise unittest.SkipTest(REASON)


class OneLine:
    def assertOneLine(self, exc, cls, pattern):
        """exc is exactly of the documented class `cls`, its message one line matching `pattern`."""
        self.assertIsInstance(exc, cls)
        msg = str(exc)
        self.assertNotIn("\n", msg)
        self.assertRegex(msg, pattern)


class Uninitialized(unittest.TestCase, OneLine):
    def test_state_made_by_new_alone(self):
        s = lstmlm.State.__new__(lstmlm.State)
        for call in (lambda: s.h, lambda: s.written, lambda: pickle.dumps(s), lambda: s == lstmlm.State(),
                     lambda: lstmlm.State() == s, lambda: repr(s)):
            with self.assertRaises(lstmlm.UsageError) as cm:
                call()
            self.assertOneLine(cm.exception, lstmlm.UsageError,
                               r"^an lstmlm.State made by __new__ without __init__ holds nothing")
        m = lstmlm.Model(WORD, threads=1)
        for call in (lambda: m.BaseScore(s, "the", lstmlm.State()), lambda: m.NullContextWrite(s)):
            with self.assertRaises(lstmlm.UsageError) as cm:
                call()
            self.assertOneLine(cm.exception, lstmlm.UsageError, r"__init__")
        self.assertFalse(lstmlm.State() == 5)

    def test_none_for_a_state(self):
        m = lstmlm.Model(WORD, threads=1)
        for call in (lambda: m.BaseScore(None, "the", lstmlm.State()), lambda: m.NullContextWrite(None),
                     lambda: m.BaseScore(lstmlm.State(), "the", None)):
            with self.assertRaises(lstmlm.UsageError) as cm:
                call()
            self.assertOneLine(cm.exception, lstmlm.UsageError, r"^None where an lstmlm.State is expected$")

    def test_malformed_pickles(self):
        m = lstmlm.Model(WORD, threads=1)
        s = lstmlm.State()
        m.BeginSentenceWrite(s)
        version, h, c, nxt = s.__getstate__()
        self.assertEqual(version, 1)
        bad = [("1", h, c, nxt), (1.0, h, c, nxt), (None, h, c, nxt), (2, h, c, nxt), (2**70, h, c, nxt),
               (1, h, c), (1, [5], c, nxt), (1, h, ["x"], nxt), (1, h, c, None), (1, h, c, b"abc"),
               (1, "h", c, nxt), [1, h, c, nxt], "state", None, (1, h, [], nxt)]
        for state in bad:
            with self.subTest(state=repr(state)[:60]):
                t = lstmlm.State.__new__(lstmlm.State)
                with self.assertRaises(lstmlm.UsageError) as cm:
                    t.__setstate__(state)
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^State: not a pickle of an lstmlm State")
        # Through pickle itself: the format field a str.
        data = pickle.dumps(s, protocol=3)
        self.assertIn(b"K\x01", data)
        data = data.replace(b"K\x01", b"X\x01\x00\x00\x001", 1)  # BININT1 1 -> BINUNICODE "1"
        with self.assertRaises(lstmlm.UsageError) as cm:
            pickle.loads(data)
        self.assertOneLine(cm.exception, lstmlm.UsageError, r"^State: .*format field is a str")
        self.assertEqual(pickle.loads(pickle.dumps(s)), s)


if __name__ == "__main__":
    unittest.main()
