"""The C API (include/lstmlm/lstmlm.h) through Python's ctypes alone, on the built liblstmlm.so (LSTMLM_CAPI_LIB,
set by ctest; unset, the tests skip saying why): the ln p of every step equal to `lstmlm score --context document
--no-eos -v word` and the top candidates to `lstmlm predict --top N`, compared as the CLI prints them ('%.9g'),
with the states of several documents stepped in one batch; four threads sharing one model give one thread's
numbers; the serialized state is the Python module's State.to_bytes(); the library exports the header's
functions and nothing else, under the SONAME of the ABI number."""
import ctypes
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import unittest

import pyutil
from pyutil import SOURCE_DIR, require_cli

LIB = os.environ.get("LSTMLM_CAPI_LIB", "")
MODEL = os.path.join(SOURCE_DIR, "models", "fairytales-word")
HEADER = os.path.join(SOURCE_DIR, "include", "lstmlm", "lstmlm.h")

# Three documents of several lines (OOV words included: "fox", "badger" and "dragon" are scored as <unk>).
DOCUMENTS = [
    ["the old man went to the mountains to cut wood .", "his wife went to the river to wash clothes ."],
    ["once upon a time there lived a princess", "she had a fox and a badger", "and they were very happy"],
    ["the dragon said nothing .", "then the boy laughed and ran home", "the end"],
]
CONTEXTS = ["the old man", "once upon a time", "the princess said", "he went to the", "the fox and the badger"]

OK = 0
USAGE, INPUT = 1, 2


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("threads", ctypes.c_int32), ("precision", ctypes.c_int32)]


class Api:
    """liblstmlm.so with its prototypes; every call checked (an error raises with lstmlm_last_error())."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        c = ctypes
        P, I32, SZ, F = c.c_void_p, c.c_int32, c.c_size_t, c.c_float
        protos = {
            "lstmlm_version": (c.c_char_p, []),
            "lstmlm_abi_version": (c.c_int, []),
            "lstmlm_last_error": (c.c_char_p, []),
            "lstmlm_status_name": (c.c_char_p, [c.c_int]),
            "lstmlm_model_load": (c.c_int, [c.c_char_p, c.POINTER(Options), c.POINTER(P)]),
            "lstmlm_model_free": (None, [P]),
            "lstmlm_model_vocab_size": (c.c_int, [P, c.POINTER(I32)]),
            "lstmlm_model_token": (c.c_int, [P, I32, c.POINTER(c.c_char_p), c.POINTER(SZ)]),
            "lstmlm_model_special_tokens": (c.c_int, [P, c.POINTER(I32), c.POINTER(I32), c.POINTER(I32)]),
            "lstmlm_tokenize": (c.c_int, [P, c.c_char_p, SZ, c.POINTER(I32), SZ, c.POINTER(SZ)]),
            "lstmlm_state_new": (c.c_int, [P, c.c_int, c.POINTER(P)]),
            "lstmlm_state_clone": (c.c_int, [P, c.POINTER(P)]),
            "lstmlm_state_free": (None, [P]),
            "lstmlm_state_serialize": (c.c_int, [P, c.c_void_p, SZ, c.POINTER(SZ)]),
            "lstmlm_state_deserialize": (c.c_int, [P, c.c_void_p, SZ, c.POINTER(P)]),
            "lstmlm_step_batch": (c.c_int, [P, c.POINTER(P), c.POINTER(I32), SZ, c.POINTER(F)]),
            "lstmlm_state_logprob": (c.c_int, [P, P, I32, c.POINTER(F)]),
            "lstmlm_state_top": (c.c_int, [P, P, SZ, c.POINTER(I32), c.POINTER(F), c.POINTER(SZ)]),
            "lstmlm_mix_load": (c.c_int, [P, c.POINTER(c.c_char_p), SZ, c.c_char_p, c.POINTER(P)]),
            "lstmlm_mix_free": (None, [P]),
            "lstmlm_mix_logprobs": (c.c_int, [P, P, c.POINTER(I32), SZ, c.c_int, c.POINTER(F), SZ]),
        }
        for name, (res, args) in protos.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        self.lib = lib

    def call(self, name, *args):
        """The status of lstmlm_NAME(*args), with the thread's message."""
        status = getattr(self.lib, "lstmlm_" + name)(*args)
        return status, self.lib.lstmlm_last_error().decode()

    def ok(self, name, *args):
        status, message = self.call(name, *args)
        if status != OK:
            raise AssertionError(f"lstmlm_{name}: {self.lib.lstmlm_status_name(status).decode()}: {message}")

    def load(self, path, threads=0):
        model = ctypes.c_void_p()
        self.ok("model_load", path.encode(), ctypes.byref(Options(ctypes.sizeof(Options), threads, 0)),
                ctypes.byref(model))
        return model

    def vocab_size(self, model):
        v = ctypes.c_int32()
        self.ok("model_vocab_size", model, ctypes.byref(v))
        return v.value

    def start(self, model):
        s = ctypes.c_int32()
        self.ok("model_special_tokens", model, ctypes.byref(s), None, None)
        return s.value

    def tokenize(self, model, text):
        b = text.encode()
        n = ctypes.c_size_t()
        self.ok("tokenize", model, b, len(b), None, 0, ctypes.byref(n))
        ids = (ctypes.c_int32 * n.value)()
        self.ok("tokenize", model, b, len(b), ids, n.value, ctypes.byref(n))
        return list(ids)

    def state(self, model, bos):
        s = ctypes.c_void_p()
        self.ok("state_new", model, int(bos), ctypes.byref(s))
        return s

    def free(self, *states):
        for s in states:
            self.lib.lstmlm_state_free(s)

    def step(self, model, states, tokens, rows=False):
        """Advances states[i] by tokens[i] in one call; the n x V log-probs (a flat ctypes array) when rows."""
        n = len(states)
        out = (ctypes.c_float * (n * self.vocab_size(model)))() if rows else None
        self.ok("step_batch", model, (ctypes.c_void_p * n)(*states), (ctypes.c_int32 * n)(*tokens), n, out)
        return out

    def logprob(self, model, state, token):
        f = ctypes.c_float()
        self.ok("state_logprob", model, state, token, ctypes.byref(f))
        return f.value

    def top(self, model, state, k):
        ids, lps, n = (ctypes.c_int32 * k)(), (ctypes.c_float * k)(), ctypes.c_size_t()
        self.ok("state_top", model, state, k, ids, lps, ctypes.byref(n))
        return [(ids[i], lps[i]) for i in range(n.value)]

    def serialize(self, state):
        n = ctypes.c_size_t()
        self.ok("state_serialize", state, None, 0, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        self.ok("state_serialize", state, buf, n.value, ctypes.byref(n))
        return buf.raw


def g9(x):
    """A number as the CLI prints it."""
    return "%.9g" % x


def cli_records(args, stdin=None):
    """The jsonl records of one CLI run, numbers kept as the CLI printed them (strings)."""
    p = subprocess.run([require_cli(), *args], input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"lstmlm {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return [json.loads(line, parse_float=str) for line in p.stdout.splitlines() if line.strip()]


def parse_state(data):
    """(version, fingerprint, tokens fed, [h bytes per layer], [c bytes per layer], next bytes) of the serialized
    stream (docs/c-api.md, format 2), read here from its documented layout."""
    assert data[:8] == b"LSTMLMST", data[:8]
    version, fingerprint, fed, layers, vocab = struct.unpack_from("<IQqII", data, 8)
    widths = [struct.unpack_from("<II", data, 36 + 8 * i) for i in range(layers)]
    at = 36 + 8 * layers
    h, c = [], []
    for i in range(layers):
        h.append(data[at:at + 4 * widths[i][0]])
        at += 4 * widths[i][0]
    for i in range(layers):
        c.append(data[at:at + 4 * widths[i][1]])
        at += 4 * widths[i][1]
    nxt = data[at:at + 4 * vocab]
    assert at + 4 * vocab == len(data)
    return version, fingerprint, fed, h, c, nxt


def setUpModule():
    global api
    if not LIB:
        why = os.environ.get("LSTMLM_CAPI_SKIP") or "LSTMLM_CAPI_LIB not set (ctest sets it to the built liblstmlm.so)"
        print(f"SKIP: {why}", file=sys.stderr)
        raise unittest.SkipTest(why)
    api = Api(LIB)


class CApiAgainstCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = api.load(MODEL)
        cls.V = api.vocab_size(cls.model)

    @classmethod
    def tearDownClass(cls):
        api.lib.lstmlm_model_free(cls.model)

    def test_document_scores_equal_the_cli_in_one_batch(self):
        # Each document scored by the CLI alone; in the C API the three documents' states step together,
        # one lstmlm_step_batch per token position (3 rows, then fewer as documents end).
        expected, streams = [], []
        for doc in DOCUMENTS:
            recs = cli_records(["score", "-m", MODEL, "--context", "document", "--no-eos", "--output-format",
                                "jsonl", "-v", "word"], "\n".join(doc) + "\n")
            words = [w for r in recs if r["type"] == "line" for w in r["words"]]
            expected.append([(w["id"], w["logprob"]) for w in words])
            streams.append([i for line in doc for i in api.tokenize(self.model, line)])
        for want, ids in zip(expected, streams):
            self.assertEqual([i for i, _ in want], ids)
        self.assertIn(0, streams[1])  # an OOV scored as <unk>
        states = [api.state(self.model, True) for _ in DOCUMENTS]
        got = [[] for _ in DOCUMENTS]
        try:
            for t in range(max(len(s) for s in streams)):
                rows = [d for d in range(len(DOCUMENTS)) if t < len(streams[d])]
                for d in rows:
                    got[d].append((streams[d][t], g9(api.logprob(self.model, states[d], streams[d][t]))))
                out = api.step(self.model, [states[d] for d in rows], [streams[d][t] for d in rows], rows=True)
                for r, d in enumerate(rows):
                    # the row written is the distribution kept for the next step
                    tok = streams[d][t + 1] if t + 1 < len(streams[d]) else 4
                    self.assertEqual(out[r * self.V + tok], api.logprob(self.model, states[d], tok))
        finally:
            api.free(*states)
        for d in range(len(DOCUMENTS)):
            self.assertEqual(got[d], expected[d], f"document {d}")

    def test_top_equals_cli_predict(self):
        for top in (1, 20):
            recs = cli_records(["predict", "-m", MODEL, "--top", str(top), "--output-format", "jsonl", *CONTEXTS])
            self.assertEqual(len(recs), len(CONTEXTS))
            states = [api.state(self.model, True) for _ in CONTEXTS]
            try:
                ids = [api.tokenize(self.model, c) for c in CONTEXTS]
                for rec, i in zip(recs, ids):
                    self.assertEqual(rec["ids"], [api.start(self.model)] + i)
                for t in range(max(map(len, ids))):
                    rows = [k for k in range(len(CONTEXTS)) if t < len(ids[k])]
                    api.step(self.model, [states[k] for k in rows], [ids[k][t] for k in rows])
                for rec, s in zip(recs, states):
                    got = [(i, g9(lp)) for i, lp in api.top(self.model, s, top)]
                    self.assertEqual(got, [(c["id"], c["logprob"]) for c in rec["top"]], rec["context"])
            finally:
                api.free(*states)

    def test_a_mixture_gives_cli_predict_mix_numbers(self):
        """lstmlm_mix_logprobs after a state stepped through a context, with that context as history, is the
        row `predict --mix` ranks: every candidate's ln p, to the 9 digits the CLI prints; with an ARPA model,
        and with it and a neural word model (the model itself) mixed in."""
        arpa = os.path.join(pyutil.DATA, "kenlm-test-arpa", "test.arpa")
        if not os.path.exists(arpa):
            self.skipTest("no ../shared/data/kenlm-test-arpa")
        for members in ([f"{arpa}:0.3"], [f"{arpa}:0.3", f"{MODEL}:0.2"]):
            self.check_mixture(members)

    def check_mixture(self, members):
        mix = ctypes.c_void_p()
        specs = (ctypes.c_char_p * len(members))(*[m.encode() for m in members])
        api.ok("mix_load", self.model, specs, len(members), None, ctypes.byref(mix))
        try:
            for context in CONTEXTS:
                rec = cli_records(["predict", "-m", MODEL, *[a for m in members for a in ("--mix", m)], "--top", "0",
                                   "--output-format", "jsonl", context])[0]
                ids = api.tokenize(self.model, context)
                s = api.state(self.model, True)
                try:
                    for t in ids:
                        api.step(self.model, [s], [t])
                    row = (ctypes.c_float * self.V)()
                    hist = (ctypes.c_int32 * len(ids))(*ids)
                    api.ok("mix_logprobs", mix, s, hist, len(ids), 1, row, self.V)
                    got = {i: g9(row[i]) for i in range(self.V)}
                    self.assertEqual({c["id"]: c["logprob"] for c in rec["top"]}, got, context)
                    self.assertAlmostEqual(sum(math.exp(x) for x in row), 1.0, delta=1e-5)
                    # A state of no next distribution, a short buffer, an id outside the vocabulary, NULLs.
                    self.assertEqual(api.call("mix_logprobs", mix, s, hist, len(ids), 1, row, self.V - 1)[0], 1)
                    bad = (ctypes.c_int32 * 1)(self.V)
                    status, message = api.call("mix_logprobs", mix, s, bad, 1, 1, row, self.V)
                    self.assertEqual(status, 2, message)
                    self.assertIn("history[0]", message)
                    self.assertEqual(api.call("mix_logprobs", None, s, hist, len(ids), 1, row, self.V)[0], 1)
                finally:
                    api.free(s)
        finally:
            api.lib.lstmlm_mix_free(mix)

    def test_a_mixture_refuses_what_it_cannot_mix(self):
        arpa = os.path.join(pyutil.DATA, "kenlm-test-arpa", "test.arpa")
        broken = os.path.join(pyutil.temp_root("lstmlm_capi_mix_"), "broken.arpa")
        with open(broken, "w") as f:
            f.write("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\t<s>\n\n\\end\\\n")
        char = os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space")
        for bad_spec, status, why in ((f"{arpa}:1.5", 1, "(0, 1]"), (f"{char}:0.5", 1, "needs a word model"),
                                      (arpa, 1, "MODEL:WEIGHT"), (f"{broken}:0.5", 3, "broken.arpa")):
            out = ctypes.c_void_p()
            got, message = api.call("mix_load", self.model, (ctypes.c_char_p * 1)(bad_spec.encode()), 1, None,
                                    ctypes.byref(out))
            self.assertEqual(got, status, message)
            self.assertIn(why, message)
            self.assertFalse(out.value)
        self.assertEqual(api.call("mix_load", self.model, None, 0, None, ctypes.byref(ctypes.c_void_p()))[0], 1)

    def test_bad_input_statuses(self):
        s = api.state(self.model, True)
        other = api.load(MODEL)
        try:
            f = ctypes.c_float()
            status, msg = api.call("state_logprob", self.model, s, self.V, ctypes.byref(f))
            self.assertEqual(status, INPUT)
            self.assertIn("not a token id", msg)
            status, msg = api.call("state_logprob", other, s, 4, ctypes.byref(f))
            self.assertEqual(status, USAGE)
            self.assertIn("another model", msg)
            status, msg = api.call("step_batch", self.model, None, None, 1, None)
            self.assertEqual((status, msg), (USAGE, "lstmlm_step_batch: states is NULL"))
            status, msg = api.call("step_batch", self.model, None, None, 0, None)
            self.assertEqual((status, msg), (OK, ""))
            status, msg = api.call("state_deserialize", self.model, b"LSTMLMST\x01", 9, ctypes.byref(ctypes.c_void_p()))
            self.assertEqual(status, INPUT)
            self.assertIn("truncated", msg)
        finally:
            api.free(s)
            api.lib.lstmlm_model_free(other)

    def test_messages_are_one_printable_line(self):
        model = ctypes.c_void_p()
        status, message = api.call("model_load", b"/nonexistent/a\nb\x1b[31m\xff", None, ctypes.byref(model))
        self.assertNotEqual(status, OK)
        self.assertTrue(message.isprintable(), repr(message))  # decodes as UTF-8, no newline, no escape byte
        self.assertIn("\\x0a", message)
        self.assertIn("\\xff", message)

    def test_serialized_state_is_the_python_modules(self):
        start = api.start(self.model)
        s = api.state(self.model, True)
        ids = api.tokenize(self.model, "the old man")
        try:
            for i in ids:
                api.step(self.model, [s], [i])
            data = api.serialize(s)
        finally:
            api.free(s)
        version, _, fed, h, c, nxt = parse_state(data)
        self.assertEqual((version, fed, len(h), len(c), len(nxt)), (2, 1 + len(ids), 1, 1, 4 * self.V))
        back = ctypes.c_void_p()
        api.ok("state_deserialize", self.model, data, len(data), ctypes.byref(back))
        try:
            self.assertEqual(api.serialize(back), data)
        finally:
            api.free(back)
        # The Python module, when it is built (not in the sanitizer build): the same state, same bytes.
        import lstmlm  # pyutil put the build tree's package (LSTMLM_PYTHONPATH) first on sys.path
        try:
            m = lstmlm.Model(MODEL)
        except ImportError as e:
            print(f"SKIP part: the Python module is not built ({e})", file=sys.stderr)
            return
        st = lstmlm.State()
        m.BeginSentenceWrite(st)
        vocab = m.vocab
        self.assertEqual(vocab.index(vocab[start]), start)
        for i in ids:
            m.BaseScore(st, vocab[i], st)
        self.assertEqual(st.to_bytes(), data)


class CApiThreads(unittest.TestCase):
    def test_four_threads_share_one_model(self):
        model = api.load(MODEL, threads=1)
        streams = [[i for line in doc for i in api.tokenize(model, line)] for doc in DOCUMENTS]

        def run(rounds):
            """ln p of every token of every document, the documents stepped together, `rounds` times over."""
            states = [api.state(model, True) for _ in streams]
            out = []
            try:
                for _ in range(rounds):
                    for t in range(max(map(len, streams))):
                        rows = [d for d in range(len(streams)) if t < len(streams[d])]
                        out.extend(api.logprob(model, states[d], streams[d][t]) for d in rows)
                        api.step(model, [states[d] for d in rows], [streams[d][t] for d in rows])
                    out.extend(api.serialize(s) for s in states)
            finally:
                api.free(*states)
            return out

        try:
            expected = run(4)
            results, errors = [None] * 4, []

            def worker(k):
                try:
                    results[k] = run(4)
                except Exception as e:  # reported by the main thread
                    errors.append(e)

            threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
            self.assertFalse(any(t.is_alive() for t in threads), "a thread did not finish in 300 s")
            self.assertEqual(errors, [])
            for k in range(4):
                self.assertEqual(results[k], expected, f"thread {k}")
        finally:
            api.lib.lstmlm_model_free(model)


class CApiLibrary(unittest.TestCase):
    def test_versions(self):
        with open(HEADER, encoding="utf-8") as f:
            abi = int(re.search(r"^#define LSTMLM_ABI_VERSION (\d+)$", f.read(), re.M).group(1))
        self.assertEqual(api.lib.lstmlm_abi_version(), abi)
        with open(os.path.join(SOURCE_DIR, "CMakeLists.txt"), encoding="utf-8") as f:
            version = re.search(r"project\(lstmlm VERSION (\S+)", f.read()).group(1)
        self.assertEqual(api.lib.lstmlm_version().decode(), version)

    def test_exports_only_the_c_api_under_its_soname(self):
        with open(HEADER, encoding="utf-8") as f:
            declared = set(re.findall(r"LSTMLM_API [^;(]*?\b(lstmlm_\w+)\(", f.read()))
        self.assertIn("lstmlm_step_batch", declared)
        nm = shutil.which("nm")
        if nm is None:
            self.skipTest("no nm (binutils)")
        out = subprocess.run([nm, "-D", "--defined-only", LIB], capture_output=True, text=True, check=True).stdout
        exported = {line.split()[-1] for line in out.splitlines() if line.split()}
        self.assertEqual(exported, declared)
        readelf = shutil.which("readelf")
        if readelf is None:
            self.skipTest("no readelf (binutils)")
        out = subprocess.run([readelf, "-d", LIB], capture_output=True, text=True, check=True).stdout
        soname = re.search(r"\(SONAME\)\s+Library soname: \[(.+)\]", out)
        self.assertIsNotNone(soname, out)
        self.assertEqual(soname.group(1), f"liblstmlm.so.{api.lib.lstmlm_abi_version()}")


if __name__ == "__main__":
    unittest.main()
