"""The Python module under hostile use: threads racing on one State, Ctrl-C during a long generate, arguments
out of range or of the wrong kind, objects never initialized, malformed pickles, JSONL lines with bytes after
the object. Each ends in the documented exception with a one-line message (docs/python.md, "Errors"), or in
KeyboardInterrupt; never a crash, a bare TypeError/RuntimeError or a silently wrong result. What could crash
the interpreter runs in a subprocess, so a crash fails the test instead of killing the runner."""
import os
import pickle
import signal
import subprocess
import sys
import time
import unittest

import numpy as np

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


def write_wide_model(outdir, layers=2, hidden=40000):
    """A model whose State is large (per layer a cell of `hidden` floats, 160 KB) and cheap to step (proj_size
    1, embedding_dim 1): copying a State takes long enough for another thread to run meanwhile."""
    from lstmlm.format import layer, names, tokenizer, write_model
    rng = np.random.default_rng(0)
    vocab = ["<s>", "a", "b", "c", "d", "e"]
    w = {names.embedding: rng.uniform(-0.5, 0.5, (len(vocab), 1))}
    for k in range(layers):
        w[names.weight_ih(k)] = rng.uniform(-0.5, 0.5, (4 * hidden, 1))
        w[names.weight_hh(k)] = rng.uniform(-0.5, 0.5, (4 * hidden, 1))
        w[names.bias_ih(k)] = np.zeros(4 * hidden)
        w[names.bias_hh(k)] = np.zeros(4 * hidden)
        w[names.weight_hr(k)] = rng.uniform(-0.01, 0.01, (1, hidden))
    w[names.decoder_weight] = rng.uniform(-0.5, 0.5, (len(vocab), 1))
    w[names.decoder_bias] = np.zeros(len(vocab))
    write_model(outdir, vocab=vocab, embedding_dim=1, layers=[layer(hidden, proj_size=1)] * layers, tied=False,
                tokenizer=tokenizer("word", bos_token="<s>"), tensors={k: v.astype(np.float32) for k, v in w.items()},
                source={"framework": "test"})


class SharedState(unittest.TestCase):
    def test_threads_rewriting_and_reading_one_state_do_not_crash(self):
        # Two threads rewrite one State (NullContextWrite in a loop, BeginSentenceWrite and BaseScore into it
        # now and then) while two read it (BaseScore from it), 80 reads each. A State's memory was once read
        # without the GIL: a rewrite freed it under the reader. MALLOC_MMAP_THRESHOLD_ (glibc) gives every
        # cell vector its own mapping, unmapped when freed, so such a read is a SIGSEGV, not stale floats.
        import tempfile
        tmp = tempfile.mkdtemp(prefix="lstmlm_race_")
        self.addCleanup(__import__("shutil").rmtree, tmp, True)
        model = os.path.join(tmp, "wide")
        write_wide_model(model)
        code = r"""import sys, threading
sys.path.insert(0, sys.argv[1])
import lstmlm
m = lstmlm.Model(sys.argv[2], threads=1)
shared, other = lstmlm.State(), lstmlm.State()
m.BeginSentenceWrite(shared)
m.BeginSentenceWrite(other)
words = ["a", "b", "c", "d", "e"]
unexpected = []
done = threading.Event()
def writer(k):
    try:
        for i in range(1000000):
            if done.is_set():
                break
            if i % 10 == 0:
                m.BeginSentenceWrite(shared)
            elif i % 10 == 5:
                m.BaseScore(other, words[i % len(words)], shared)
            else:
                m.NullContextWrite(shared)
    except Exception as e:
        unexpected.append(repr(e))
def reader(k):
    out = lstmlm.State()
    try:
        for i in range(80):
            m.BaseScore(shared, words[(i + k) % len(words)], out)
    except Exception as e:
        unexpected.append(repr(e))
writers = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
readers = [threading.Thread(target=reader, args=(k,)) for k in range(2)]
[t.start() for t in writers + readers]
[t.join() for t in readers]
done.set()
[t.join() for t in writers]
print("unexpected:", unexpected)
print("done")
"""
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
        r = subprocess.run([sys.executable, "-c", code, PYTHONPATH, model], capture_output=True, text=True,
                           timeout=300, env=env)
        self.assertEqual(r.returncode, 0, f"exit {r.returncode} (a negative status is the signal): {r.stderr}")
        self.assertEqual(r.stdout, "unexpected: []\ndone\n", r.stderr)


class Interrupt(unittest.TestCase):
    def test_ctrl_c_stops_a_long_generate(self):
        # A generate of a million tokens x 32 samples runs for minutes; SIGINT after it started ends it with
        # KeyboardInterrupt within seconds.
        code = r"""import sys, time
sys.path.insert(0, sys.argv[1])
import lstmlm
m = lstmlm.Model(sys.argv[2], threads=1)
print("started", flush=True)
t = time.monotonic()
try:
    m.generate("once", max_tokens=1000000, num_samples=32, seed=1, stop_at_eos=False)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted %.3f" % (time.monotonic() - t), flush=True)
"""
        p = subprocess.Popen([sys.executable, "-c", code, PYTHONPATH, CHAR], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline(), "started\n")
            time.sleep(1.0)  # generate is running
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=20)
            took = time.monotonic() - sent
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual(p.returncode, 0, err)
        self.assertTrue(out.startswith("interrupted "), (out, err))
        self.assertLess(took, 10)


class GenerateLimits(unittest.TestCase, OneLine):
    def test_the_cli_limits(self):
        m = lstmlm.Model(WORD, threads=1)
        with self.assertRaises(lstmlm.UsageError) as cm:
            m.generate("the", max_tokens=1, num_samples=10_000_000)
        self.assertOneLine(cm.exception, lstmlm.UsageError, r"^num_samples must be in \[1, 100000\], got 10000000$")
        with self.assertRaises(lstmlm.UsageError) as cm:
            m.generate("the", max_tokens=2**31)
        self.assertOneLine(cm.exception, lstmlm.UsageError, r"^max_tokens must be in \[0, 1000000\], got 2147483648$")
        for kw, name in (({"max_tokens": 10**30}, "max_tokens"), ({"top_k": 2**40}, "top_k"),
                         ({"repeat_last_n": -2}, "repeat_last_n"), ({"seed": -1}, "seed"), ({"seed": 2**64}, "seed")):
            with self.subTest(kw=kw):
                with self.assertRaises(lstmlm.UsageError) as cm:
                    m.generate("the", **kw)
                self.assertOneLine(cm.exception, lstmlm.UsageError, rf"^{name} must be")
        self.assertEqual(len(m.generate("the", max_tokens=2, num_samples=3, seed=2**64 - 1)), 3)
        # The same limits as `lstmlm generate`.
        cli = pyutil.require_cli()
        for flag, value, limit in (("--num-samples", "100001", "100000"), ("-n", "1000001", "1000000")):
            r = subprocess.run([cli, "generate", "-m", WORD, flag, value], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(limit + "]", r.stderr)


class Arguments(unittest.TestCase, OneLine):
    @classmethod
    def setUpClass(cls):
        cls.m = lstmlm.Model(WORD, threads=1)

    def test_first_line_must_be_a_line_number(self):
        for first in (-1, 0, 2**64, -2**70, 1.0, "1"):
            with self.subTest(first=first):
                with self.assertRaises(lstmlm.UsageError) as cm:
                    self.m.score_lines(["the king"], "src", first)
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^first_line must be a line number")
        # The last line's number must fit too: no wrap to 0.
        with self.assertRaises(lstmlm.UsageError) as cm:
            self.m.score_lines(["the king", "the old man"], "src", 2**64 - 1)
        self.assertOneLine(cm.exception, lstmlm.UsageError, r"^first_line .*18446744073709551614\]")
        last = self.m.score_lines(["the king", "the old man"], "src", 2**64 - 2)
        self.assertEqual([s.line for s in last], [2**64 - 2, 2**64 - 1])
        self.assertEqual([s.line for s in self.m.score_lines(["a", "b"], "src", 7)], [7, 8])

    def test_token_ids_must_be_integers(self):
        m = self.m
        want = m.predict([0, 1, 2], top=3)
        self.assertEqual(m.predict(np.array([0, 1, 2], dtype=np.int32), top=3), want)
        self.assertEqual(m.predict((np.int64(0), 1, np.uint8(2)), top=3), want)
        self.assertEqual(m.predict(np.array([0, 1, 2], dtype=np.uint64), top=3), want)
        for bad in ([0, 1.0, 2], [0.5], ["3"], [b"3"], np.array([0.0, 1.0]), [True], [None], [[1]], 5):
            with self.subTest(bad=repr(bad)):
                with self.assertRaises(lstmlm.UsageError) as cm:
                    m.predict(bad)
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^context")
        for call in (m.logprobs, m.decode):
            with self.subTest(call.__name__):
                self.assertEqual(call(np.array([0, 1], dtype=np.int16)).__class__, call([0, 1]).__class__)
                with self.assertRaises(lstmlm.UsageError) as cm:
                    call([0, 1.5])
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^ids\[1\] is a float, not a token id")
                with self.assertRaises(lstmlm.UsageError) as cm:
                    call("0 1")
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^ids")
                with self.assertRaises(lstmlm.UsageError):
                    call(np.zeros((2, 2), dtype=np.int64))
        with self.assertRaisesRegex(lstmlm.InputError, r"^context\[1\]: 554 is not a token id"):
            m.predict([0, m.vocab_size])
        with self.assertRaisesRegex(lstmlm.InputError, r"^context\[1\]: 9223372036854775813 is not a token id"):
            m.predict(np.array([0, 2**63 + 5], dtype=np.uint64))

    def test_negative_threads_refused(self):
        with self.assertRaises(lstmlm.UsageError) as cm:
            lstmlm.Model(WORD, threads=-1)
        self.assertOneLine(cm.exception, lstmlm.UsageError, r"^threads must be in \[0, 256\], got -1$")
        self.assertGreaterEqual(lstmlm.Model(WORD, threads=0).threads, 1)

    def test_lone_surrogate_is_an_input_error_with_its_position(self):
        m = self.m
        with self.assertRaises(lstmlm.InputError) as cm:
            m.score("the \udcff man")
        self.assertOneLine(cm.exception, lstmlm.InputError,
                           r"^sentence is not valid UTF-8 \(lone surrogate U\+DCFF at position 4\)")
        with self.assertRaises(lstmlm.InputError) as cm:
            m.score_lines(["the old man", "a \ud800"], "src")
        self.assertOneLine(cm.exception, lstmlm.InputError,
                           r"^lines\[1\] is not valid UTF-8 \(lone surrogate U\+D800 at position 2\)")
        calls = [lambda: m.score_batch(["x\udc80"]), lambda: m.full_scores("\udc80"),
                 lambda: m.perplexity("\udc80"), lambda: m.tokenize("\udc80"), lambda: m.encode("\udc80"),
                 lambda: m.predict("\udc80"), lambda: m.generate("\udc80"), lambda: "\udc80" in m,
                 lambda: m.vocab_index("\udc80"), lambda: m.score_lines(["a"], context="\udc80"),
                 lambda: lstmlm.kernels_for("\udc80"), lambda: lstmlm.Model(WORD, precision="\udc80"),
                 lambda: m.BaseScore(lstmlm.State(), "\udc80", lstmlm.State())]
        for i, call in enumerate(calls):
            with self.subTest(i):
                with self.assertRaises(lstmlm.InputError) as cm:
                    call()
                self.assertOneLine(cm.exception, lstmlm.InputError, r"is not valid UTF-8 \(lone surrogate")
        # Invalid UTF-8 bytes stay the library's InputError naming the line; a str without surrogates works.
        with self.assertRaisesRegex(lstmlm.InputError, r"^src:2: "):
            m.score_lines(["the", b"\xff"], "src")
        self.assertEqual(m.score("the old man"), m.score(b"the old man"))
        # A path is a file name: surrogate-escaped bytes name the bytes on disk (os.fsencode).
        with self.assertRaises(lstmlm.ModelError) as cm:
            lstmlm.Model("/nonexistent/\udcff")
        self.assertOneLine(cm.exception, lstmlm.ModelError, r"/nonexistent/\\xff")


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

    def test_model_made_by_new_alone(self):
        m = lstmlm.Model.__new__(lstmlm.Model)
        for call in (lambda: m.vocab_size, lambda: m.score("the"), lambda: m.generate("the", max_tokens=1),
                     lambda: repr(m), lambda: m.BeginSentenceWrite(lstmlm.State())):
            with self.assertRaises(lstmlm.UsageError) as cm:
                call()
            self.assertOneLine(cm.exception, lstmlm.UsageError,
                               r"^an lstmlm.Model made by __new__ without __init__ holds nothing")

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
        version, data = s.__getstate__()
        self.assertEqual((version, data), (2, s.to_bytes()))
        # Format 1, as earlier versions pickled: still read.
        h, c = [a.tobytes() for a in s.h], [a.tobytes() for a in s.c]
        nxt = b"\0" * 4 * len(m.vocab)
        t = lstmlm.State.__new__(lstmlm.State)
        t.__setstate__((1, h, c, nxt))
        self.assertEqual(t, s)
        bad = [("1", h, c, nxt), (1.0, h, c, nxt), (None, h, c, nxt), (3, h, c, nxt), (2**70, h, c, nxt),
               (1, h, c), (1, [5], c, nxt), (1, h, ["x"], nxt), (1, h, c, None), (1, h, c, b"abc"),
               (1, "h", c, nxt), [1, h, c, nxt], "state", None, (1, h, [], nxt), (3, data), ("2", data),
               (2, "bytes"), (2, None)]
        for state in bad:
            with self.subTest(state=repr(state)[:60]):
                t = lstmlm.State.__new__(lstmlm.State)
                with self.assertRaises(lstmlm.UsageError) as cm:
                    t.__setstate__(state)
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^State: not a pickle of an lstmlm State")
        # Bytes that are no serialized stream: InputError naming what is wrong.
        for b, why in ((data[:-1], "truncated"), (data + b"\0", "left over"), (b"X" + data[1:], "LSTMLMST"),
                       (data[:-4] + b"\0\0\xc0\x7f", "NaN")):
            t = lstmlm.State.__new__(lstmlm.State)
            with self.assertRaisesRegex(lstmlm.InputError, why):
                t.__setstate__((2, b))
            with self.assertRaisesRegex(lstmlm.InputError, why):
                m.state_from_bytes(b)
        # Through pickle itself: the format field a str.
        data = pickle.dumps(s, protocol=3)
        self.assertIn(b"K\x02", data)
        data = data.replace(b"K\x02", b"X\x01\x00\x00\x002", 1)  # BININT1 2 -> BINUNICODE "2"
        with self.assertRaises(lstmlm.UsageError) as cm:
            pickle.loads(data)
        self.assertOneLine(cm.exception, lstmlm.UsageError, r"^State: .*format is 2")
        self.assertEqual(pickle.loads(pickle.dumps(s)), s)


class BoostOwner(unittest.TestCase, OneLine):
    def test_a_boost_is_refused_by_every_model_but_its_own(self):
        import gc
        # A Boost keeps its model alive: a model loaded after the first is dropped never takes its address,
        # so it cannot accept the Boost and apply another vocabulary's ids.
        for _ in range(5):
            a = lstmlm.Model(WORD, threads=1)
            b = a.load_boost(["king\t2"])
            del a
            gc.collect()
            other = lstmlm.Model(WORD, threads=1)
            with self.assertRaises(lstmlm.UsageError) as cm:
                other.predict("the", 3, boost=b)
            self.assertOneLine(cm.exception, lstmlm.UsageError, r"^boost: this Boost was loaded for another Model")


class KeyboardArguments(unittest.TestCase, OneLine):
    def test_top_is_an_int_and_boost_files_are_read_as_score_reads_files(self):
        import tempfile
        m = lstmlm.Model(WORD, threads=1)
        s = lstmlm.State()
        m.BeginSentenceWrite(s)
        for top in (1.5, "3", True):
            for call in (lambda: m.complete(s, "k", top=top), lambda: m.predict("the", top=top)):
                with self.assertRaises(lstmlm.UsageError) as cm:
                    call()
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^top must be an int")
        self.assertEqual(len(m.complete(s, "k", top=np.int64(2))), 2)
        d = tempfile.mkdtemp()
        bom = os.path.join(d, "bom.tsv")
        with open(bom, "wb") as f:
            f.write(b"\xef\xbb\xbfking\t2.5\r\nprincess\t1\n")
        self.assertEqual(len(m.load_boost(bom)), 2)  # the BOM dropped, as score drops it
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        with self.assertRaises(lstmlm.InputError) as cm:
            m.load_boost(fifo)  # refused before it is opened for reading: no hang
        self.assertIn("not a regular file", str(cm.exception))


class Names(unittest.TestCase, OneLine):
    def test_a_name_from_the_caller_is_escaped_never_cut_or_split(self):
        m = lstmlm.Model(WORD, threads=1)
        with self.assertRaises(lstmlm.InputError) as cm:
            m.score_lines([b"caf\xe9"], source="a\nb")
        self.assertOneLine(cm.exception, lstmlm.InputError, r"^a\\x0ab:1: ")
        with self.assertRaises(lstmlm.ModelError) as cm:
            lstmlm.Model(b"/nonexistent/x\x00y/more")
        self.assertIn("\\x00y/more", str(cm.exception))  # escaped, not cut at the NUL
        self.assertOneLine(cm.exception, lstmlm.ModelError, r".")


class Jsonl(unittest.TestCase, OneLine):
    @classmethod
    def setUpClass(cls):
        cls.m = lstmlm.Model(WORD, threads=1)

    def test_a_line_is_one_object_and_nothing_else(self):
        m = self.m
        lines = ['{"text": "the old man"}', '{"text": "the old man"}\x00 trailing', b'{"text": "the"}\x00\xff\xfe',
                 '{"text": "the"}  \x00', '\x00{"text": "the"}', '{"text": "the"}\t ']
        got = m.score_jsonl(lines, "docs.jsonl")
        self.assertEqual([g[0] for g in got], ["kept", "error", "error", "error", "error", "kept"])
        for k, byte in ((1, 24), (2, 16), (3, 18), (4, 1)):
            self.assertEqual(got[k][1], f"docs.jsonl:{k + 1}: invalid JSON at byte {byte}: a NUL byte; a line holds "
                                        "one JSON object and nothing else")
        # Whitespace after the object is no error; the kept line is the object with the fields added.
        self.assertEqual(got[5][1], m.score_jsonl(['{"text": "the"}'])[0][1])

    def test_negative_perplexity_bounds_refused(self):
        doc = '{"text": "the old man"}'
        for kw in ({"min_perplexity": -1.0}, {"max_perplexity": -0.5}, {"min_perplexity": -float("inf")},
                   {"min_perplexity": float("nan")}):
            with self.subTest(kw=kw):
                with self.assertRaises(lstmlm.UsageError) as cm:
                    self.m.score_jsonl([doc], **kw)
                self.assertOneLine(cm.exception, lstmlm.UsageError, r"^(min|max)_perplexity must be a perplexity >= 0")
        self.assertEqual(self.m.score_jsonl([doc], min_perplexity=0.0, max_perplexity=float("inf"))[0][0], "kept")

    def test_first_line_and_text_arguments(self):
        m = self.m
        for first in (-1, 0, 2**64):
            with self.assertRaises(lstmlm.UsageError) as cm:
                m.score_jsonl(['{"text": "a"}'], "src", first)
            self.assertOneLine(cm.exception, lstmlm.UsageError, r"^first_line must be a line number")
        with self.assertRaises(lstmlm.UsageError):
            m.score_jsonl(['{"text": "a"}', '{"text": "b"}'], "src", 2**64 - 1)
        got = m.score_jsonl(['{"text": "a"}', "x"], "src", 2**64 - 2)
        self.assertTrue(got[1][1].startswith("src:18446744073709551615: "), got)
        for kw in ({"source": "\udc80"}, {"text_field": "\ud800"}, {"lines": ['{"text": "\udc80"}']}):
            args = {"lines": ['{"text": "a"}'], **kw}
            with self.assertRaises(lstmlm.InputError) as cm:
                m.score_jsonl(**args)
            self.assertOneLine(cm.exception, lstmlm.InputError, r"is not valid UTF-8 \(lone surrogate")
        # A source that is not UTF-8 is quoted as \xNN in the messages.
        self.assertEqual(m.score_jsonl(["x"], b"s\xff")[0][1][:8], "s\\xff:1:")


if __name__ == "__main__":
    unittest.main()
