"""Mikolov's RNNLM toolkit (0.3e) models: the two shared models converted and scored give rnnlm -test -debug 2's
own output (../shared/data/rnnlm-mikolov-ptb, made by rnnlm itself) line for line; small models written here in
rnnlm's text and binary layouts score as a float64 numpy reference of rnnlm's computation (written from its
description in docs/model-format.md: sigmoid hidden layer, class then word softmax with rnnlm's exp, the hashed
n-gram direct connections); broken files are refused in one line naming the file and the line or byte."""
import gzip
import json
import os
import pickle
import re
import struct
import subprocess
import unittest

import numpy as np

import pyutil
import lstmlm.format as fmt

TMP = pyutil.temp_root("lstmlm_rnnlm_")
PRIMES = [108641969, 116049371, 125925907, 133333309, 145678979, 175308587, 197530793, 234567803, 251851741,
          264197411, 330864029, 399999781, 407407183, 459258997, 479012069, 545678687, 560493491, 607407037,
          629629243, 656789717, 716048933, 718518067, 725925469, 733332871, 753085943, 755555077, 782715551,
          790122953, 812345159, 814814293, 893826581, 923456189, 940740127, 953085797, 985184539, 990122807]


def lstmlm(*args):
    pyutil.require_cli()
    return subprocess.run([pyutil.CLI, *args], capture_output=True, text=True)


def convert(src, name):
    out = os.path.join(TMP, name)
    r = pyutil.convert(src, out)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return out


# --- a writer of rnnlm's model layouts (what rnnlm's saveNet writes), for small models made here -------------

def write_rnnlm(path, words, classes, H, syn0, syn1, hidden, direct=(), order=3, binary=False, independent=0,
                header=None):
    V, C = len(words), max(classes) + 1
    fields = [("version", 10), ("file format", int(binary)), None, ("training data file", "train"),
              ("validation data file", "valid"), None, ("last probability of validation data", "-1.0"),
              ("number of finished iterations", 1), ("current position in training data", 0),
              ("current probability of training data", "-1.0"), ("save after processing # words", 0),
              ("# of training words", 10), ("input layer size", V + H), ("hidden layer size", H),
              ("compression layer size", 0), ("output layer size", V + C), ("direct connections", len(direct)),
              ("direct order", order), ("bptt", 0), ("bptt block", 10), ("vocabulary size", V),
              ("class size", C), ("old classes", 0), ("independent sentences mode", independent),
              ("starting learning rate", "0.1"), ("current learning rate", "0.1"), ("learning rate decrease", 0)]
    for k, v in (header or {}).items():
        fields = [(k, v) if f and f[0] == k else f for f in fields]
    text = "".join("\n" if f is None else f"{f[0]}: {f[1]}\n" for f in fields) + "\n\nVocabulary:\n"
    text += "".join(f"{i:6d}\t{10:10d}\t{w}\t{c}\n" for i, (w, c) in enumerate(zip(words, classes)))
    if binary:
        data = text.encode() + b"".join(np.asarray(a, "<f4").tobytes() for a in (hidden, syn0, syn1, direct))
    else:
        text += "\nHidden layer activation:\n" + "".join(f"{v:.4f}\n" for v in hidden)
        text += "\nWeights 0->1:\n" + "".join(f"{v:.4f}\n" for v in np.ravel(syn0))
        text += "\n\nWeights 1->2:\n" + "".join(f"{v:.4f}\n" for v in np.ravel(syn1))
        text += "\nDirect connections:\n" + "".join(f"{v:.2f}\n" for v in direct)
        data = text.encode()
    with open(path, "wb") as f:
        f.write(data)
    return path


def random_rnnlm(seed, V=11, H=6, C=3, N=64, order=3):
    """(words, classes, H, syn0, syn1, hidden, direct): weights already on rnnlm's printed grid (4 decimals,
    2 for the direct connections), so the text and binary layouts hold the same model up to float32."""
    rng = np.random.RandomState(seed)
    words = ["</s>"] + [f"w{i}" for i in range(1, V)]
    classes = sorted(rng.randint(0, C, V))
    classes[:C] = range(C)  # every class used, ids non-decreasing: each class contiguous
    classes = sorted(classes)
    syn0 = np.round(rng.randn(H, V + H), 4)
    syn1 = np.round(rng.randn(V + C, H), 4)
    hidden = np.round(rng.rand(H), 4)
    direct = np.round(rng.randn(N) * 0.5, 2) if N else np.zeros(0)
    return words, classes, H, syn0, syn1, hidden, direct, order


# --- the float64 reference --------------------------------------------------------------------------------

def fast_exp(y):
    """rnnlm's exp: the high 32 bits of a double set to int(2^20/ln2 * y + 1072693248 - 60801), truncated."""
    i = int(1048576 / np.log(2) * y + (1072693248 - 60801))
    return struct.unpack("<d", struct.pack("<Ii", 0, i))[0]


def softmax(z):
    e = np.array([fast_exp(min(50.0, max(-50.0, v))) for v in z])
    return e / e.sum()


def hashes(hist, K, N, mult, words):
    out = [0] * K
    for a in range(K):
        if a > 0 and hist[a - 1] == -1:
            break
        h = ((PRIMES[0] * PRIMES[1]) % 2 ** 32) * mult
        for b in range(1, a + 1):
            h += PRIMES[((a * PRIMES[b] + b) % 2 ** 32) % len(PRIMES)] * (hist[b - 1] + 1)
        h %= 2 ** 64
        out[a] = h % (N // 2) + (N // 2 if words else 0)
    return out


def reference(model, stream, reset):
    """p of each target of `stream` (ids, -1 = OOV), '</s>' (0) fed first; None for an OOV target. reset: the
    state goes back to all ones after each '</s>' (rnnlm -independent)."""
    words, classes, H, syn0, syn1, hidden, direct, K = model
    V, C, N = len(words), max(classes) + 1, len(direct)
    first = {c: classes.index(c) for c in range(C)}
    count = {c: classes.count(c) for c in range(C)}
    h = np.ones(H) if reset else np.array(hidden, dtype=np.float64)
    hist = [0] * max(K, 1)
    x, out = 0, []
    for target in stream:
        pre = syn0[:, V:] @ h + (syn0[:, x] if x >= 0 else 0.0)
        h = np.array([1.0 / (1.0 + fast_exp(-min(50.0, max(-50.0, v)))) for v in pre])
        hist = [x] + hist[:-1]
        zc = syn1[V:] @ h
        if N:
            hs = hashes(hist, K, N, 1, False)
            for c in range(C):
                for b in range(K):
                    if hs[b] == 0:
                        break
                    zc[c] += direct[hs[b]]
                    hs[b] += 1
        if target < 0:
            out.append(None)
        else:
            c = classes[target]
            zw = syn1[first[c]:first[c] + count[c]] @ h
            if N:
                hs = hashes(hist, K, N, c + 1, True)
                for i in range(count[c]):
                    for b in range(K):
                        if hs[b] == 0:
                            break
                        zw[i] += direct[hs[b]]
                        hs[b] = (hs[b] + 1) % N
            out.append(softmax(zc)[c] * softmax(zw)[target - first[c]])
        x = target
        if reset and target == 0:
            h, hist = np.ones(H), [0] * max(K, 1)
    return out


def dtypes(model_dir):
    with open(os.path.join(model_dir, "weights.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return {k: v["dtype"] for k, v in json.loads(f.read(n)).items() if k != "__metadata__"}


def scored(model_dir, text_path, *args):
    """lstmlm's per-word probabilities (None: not scored) from --output-format rnnlm."""
    r = lstmlm("score", "-m", model_dir, "--output-format", "rnnlm", *args, text_path)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    lines = r.stdout.split("\n")[2:]
    out = []
    for line in lines:
        if not line:
            break
        parts = line.split("\t")
        out.append(None if parts[0] == "-1" else float(parts[1]))
    return out, r.stdout


class SharedModels(unittest.TestCase):
    def test_both_models_give_rnnlm_tests_own_output(self):
        d = pyutil.data("rnnlm-mikolov-ptb")
        ptb = pyutil.data("corpora-ptb", "ptb.test.txt")
        test = os.path.join(TMP, "test.txt")
        with open(ptb, "rb") as f, open(test, "wb") as g:
            g.write(b"".join(f.readlines()[1800:]))  # tail -n +1801
        for name, ref in (("model-class", "test-class-debug2.txt"), ("model-me.gz", "test-me-debug2.txt")):
            with self.subTest(name):
                out = convert(os.path.join(d, name), name + ".lstmlm")
                config = pyutil.read_config(out)
                self.assertEqual(config["output"]["classes"], 50)
                self.assertEqual(config["exp"], "rnnlm")
                _, got = scored(out, test, "--context", "document")
                with open(os.path.join(d, ref), encoding="utf-8") as f:
                    want = f.read().split("\n", 3)[3]  # after rnnlm's own "debug mode", "test file", "rnnlm file"
                got_lines, want_lines = got.split("\n"), want.split("\n")
                self.assertEqual(len(got_lines), len(want_lines))
                for g, w in zip(got_lines, want_lines):
                    gp, wp = g.split("\t"), w.split("\t")
                    if len(wp) == 3 and wp[0] != "-1":  # a word: its id and word; p within 1e-6 relative
                        self.assertEqual((gp[0], gp[2]), (wp[0], wp[2]))
                        self.assertLessEqual(abs(float(gp[1]) - float(wp[1])), 1e-6 * float(wp[1]) + 5e-11, g)
                    else:  # headings, OOV lines and the totals, to rnnlm's printed digits
                        self.assertEqual(g, w)
                # The totals as rnnlm prints them (SOURCE.md of the shared data).
                totals = {"model-class": ("-97896.008805", "253.655358"),
                          "model-me.gz": ("-95778.257722", "225.026593")}[name]
                self.assertIn(f"test log probability: {totals[0]}\n", got)
                self.assertIn(f"PPL net: {totals[1]}\n", got)


class SmallModels(unittest.TestCase):
    TEXT = "w1 w2 w3\nw4 zz w5 w1\n\nw2 w2 w9 w10\nw3 qq w7"  # OOVs, an empty line, no final line break

    def stream(self, words):
        ids = {w: i for i, w in enumerate(words)}
        out = []
        lines = self.TEXT.split("\n")
        for k, line in enumerate(lines):
            out += [ids.get(w, -1) for w in line.split()]
            if k < len(lines) - 1:
                out.append(0)  # rnnlm reads a line break as </s>; the last line has none
        return out

    def check(self, model, path, *args, reset=False):
        text = os.path.join(TMP, "small.txt")
        with open(text, "w") as f:
            f.write(self.TEXT)
        out = convert(path, os.path.basename(path) + ".lstmlm")
        got, _ = scored(out, text, *args)
        want = reference(model, self.stream(model[0]), reset)
        self.assertEqual([g is None for g in got], [w is None for w in want])
        for g, w in zip(got, want):
            if w is not None:
                self.assertLessEqual(abs(g - w), 1e-6 * w + 5e-11, (got, want))
        return out

    def test_text_and_binary_with_direct_connections(self):
        for seed, binary, order in ((1, False, 3), (2, True, 3), (3, False, 1), (4, True, 4)):
            with self.subTest(seed=seed, binary=binary):
                m = random_rnnlm(seed, order=order)
                path = write_rnnlm(os.path.join(TMP, f"small{seed}"), *m[:7], order=m[7], binary=binary)
                if binary:  # the file holds float32 values: the reference computes with them
                    m = m[:3] + tuple(np.asarray(a, np.float32).astype(np.float64) for a in m[3:7]) + m[7:]
                out = self.check(m, path, "--context", "document")
                # A text file's 4-decimal weights are kept as F64; a binary file's float32 values as F32.
                self.assertEqual(dtypes(out)["rnn.weight_ih_l0"], "F32" if binary else "F64")
                self.assertEqual(dtypes(out)["class.word_class"], "F32")

    def test_no_direct_connections_and_gzip(self):
        m = random_rnnlm(5, N=0)
        path = write_rnnlm(os.path.join(TMP, "plain"), *m[:7], order=3)
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
            g.write(f.read())
        self.check(m, path + ".gz", "--context", "document")

    def test_independent_sentences(self):
        m = random_rnnlm(6, order=2)
        path = write_rnnlm(os.path.join(TMP, "indep"), *m[:7], order=2, independent=1)
        out = self.check(m, path, reset=True)  # --context sentence: each line from the reset state
        self.assertTrue(pyutil.read_config(out)["source"]["independent"])


    def test_a_double_precision_state_serializes_whole(self):
        """The serialized stream of an rnnlm model's state (format 3) holds its double h and c and the inputs its
        direct connections hash: a state read back from to_bytes or a pickle continues with the same bits as
        the state it was written from (format 2 kept float h and c only: the history reset and h rounded)."""
        lstmlm = pyutil.require_module()
        m = random_rnnlm(7)
        words = [w for w in m[0] if not w.startswith("<")]
        out = convert(write_rnnlm(os.path.join(TMP, "serial"), *m[:7], order=3), "serial.lstmlm")
        model = lstmlm.Model(out)

        def advanced():  # the state after <s> and four words, made anew for each comparison
            s, t = lstmlm.State(), lstmlm.State()
            model.BeginSentenceWrite(s)
            for w in words[:4]:
                model.BaseScore(s, w, t)
                s, t = t, s
            return s

        b = advanced().to_bytes()
        self.assertEqual(struct.unpack("<I", b[8:12])[0], 3)
        for back in (model.state_from_bytes(b), pickle.loads(pickle.dumps(advanced()))):
            x, y, xo, yo = advanced(), back, lstmlm.State(), lstmlm.State()
            for w in words[4:9] + words[:3]:
                self.assertEqual(model.BaseScore(x, w, xo), model.BaseScore(y, w, yo), w)
                x, xo, y, yo = xo, x, yo, y
        with self.assertRaises(lstmlm.InputError):  # a float model does not take it
            lstmlm.Model(os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")).state_from_bytes(b)


class BrokenFiles(unittest.TestCase):
    def refused(self, path, *needles):
        r = pyutil.convert(path, os.path.join(TMP, "never"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        for n in (path,) + needles:
            self.assertIn(n, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(TMP, "never")))

    def model(self, name, binary=False, **kw):
        m = random_rnnlm(7)
        return write_rnnlm(os.path.join(TMP, name), *m[:7], order=m[7], binary=binary, **kw)

    def test_truncated_text_names_the_line(self):
        path = self.model("trunc")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:data.index(b"Weights 1->2") + 40])
        self.refused(path, "the file ends inside the section 'Weights 1->2'", "line ")

    def test_truncated_binary_names_the_byte(self):
        path = self.model("truncb", binary=True)
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:-10])
        self.refused(path, "byte ", "the file ends inside 'Direct connections'")

    def test_counts_that_disagree_with_the_header(self):
        self.refused(self.model("insize", header={"input layer size": 99}), "'input layer size' is 99", "line 13")
        self.refused(self.model("vsize", header={"vocabulary size": 12}), "vocabulary", "line ")
        self.refused(self.model("compress", header={"compression layer size": 4}), "compression layer")
        # A vocabulary or a weight section longer than the header says.
        self.refused(self.model("vextra", header={"vocabulary size": 10, "input layer size": 16,
                                                  "output layer size": 13}), "w10", "more vocabulary entries")
        path = self.model("wextra")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("\n\n\nWeights 1->2:", "\n0.5\n\n\nWeights 1->2:"))
        self.refused(path, "'0.5' where 'Weights 1->2:' was expected", "weights 0->1")

    def test_direct_hash_size_bound(self):
        # rnnlm itself would ask for 8 TB here; refused before anything is allocated.
        self.refused(self.model("huge", header={"direct connections": 10 ** 12}), "'direct connections'",
                     "1000000000")

    def test_class_ids(self):
        path = self.model("badclass")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(re.sub(r"(\tw10\t)\d+\n", r"\g<1>7\n", text))  # the last word: still contiguous
        self.refused(path, "class 7, outside 0..2")
        words, classes, H, syn0, syn1, hidden, direct, order = random_rnnlm(8)
        classes = list(classes)
        i = classes.index(1)
        classes[i - 1], classes[i] = 1, 0 if i > 1 else classes[i]  # a class split by another
        path = write_rnnlm(os.path.join(TMP, "split"), words, classes, H, syn0, syn1, hidden, direct, order)
        self.refused(path, "are not contiguous")


class Fuzz(unittest.TestCase):
    """Truncated and corrupted files (seeded, bounded): the reader gives a model or a ConvertError naming the
    file, never another exception."""

    def test_mutations(self):
        from lstmlm.convert import rnnlm
        from lstmlm.convert.common import ConvertError
        rng = np.random.RandomState(11)
        for binary in (False, True):
            m = random_rnnlm(12, V=7, H=3, C=2, N=16)
            path = write_rnnlm(os.path.join(TMP, f"fuzz{int(binary)}"), *m[:7], order=m[7], binary=binary)
            with open(path, "rb") as f:
                good = f.read()
            for i in range(150):
                data = bytearray(good)
                kind = i % 3
                if kind == 0:
                    data = data[:rng.randint(0, len(data))]
                elif kind == 1:
                    for _ in range(rng.randint(1, 4)):
                        data[rng.randint(0, len(data))] = rng.randint(0, 256)
                else:
                    at = rng.randint(0, len(data))
                    data = data[:at] + bytes(rng.randint(0, 256, rng.randint(1, 9)).astype(np.uint8)) + data[at:]
                bad = os.path.join(TMP, "fuzzed")
                with open(bad, "wb") as f:
                    f.write(bytes(data))
                try:
                    rnnlm.read(bad)
                except ConvertError as e:
                    self.assertIn(bad, str(e))
                    self.assertNotIn("\n", str(e))


class LoaderChecks(unittest.TestCase):
    """The loader's own checks of format v5 (a model directory written by hand, not by the importer)."""

    def write(self, name, word_class, classes=2, direct=None):
        V, H = 4, 3
        rng = np.random.RandomState(0)
        n = fmt.names
        t = {n.weight_ih(0, cell="rnn"): rng.randn(H, V), n.weight_hh(0, cell="rnn"): rng.randn(H, H),
             n.bias_ih(0, cell="rnn"): np.zeros(H), n.decoder_weight: rng.randn(V, H), n.decoder_bias: np.zeros(V),
             n.class_weight: rng.randn(classes, H), n.class_bias: np.zeros(classes),
             n.word_class: np.array(word_class, dtype=np.float32)}
        out = os.path.join(TMP, "dir-" + name)
        fmt.write_model(out, vocab=["</s>", "a", "b", "c"], embedding_dim=0,
                        layers=[fmt.rnn_layer(H, activation="sigmoid")], tied=False,
                        tokenizer=fmt.tokenizer(eos_token="</s>"), tensors=t, source={}, classes=classes)
        return out

    def info(self, model):
        return lstmlm("info", "-m", model)

    def test_good_and_bad_class_maps(self):
        self.assertEqual(self.info(self.write("good", [0, 0, 1, 1])).returncode, 0)
        r = self.info(self.write("range", [0, 0, 1, 2]))
        self.assertEqual(r.returncode, 1)
        self.assertIn("class.word_class", r.stderr)
        self.assertIn("word 3 has class 2", r.stderr)
        r = self.info(self.write("split", [0, 1, 0, 1]))
        self.assertEqual(r.returncode, 1)
        self.assertIn("the words of class 0 are not contiguous", r.stderr)

    def test_direct_size_is_bounded_before_reading(self):
        out = self.write("direct", [0, 0, 1, 1])
        config = pyutil.read_config(out)
        config["output"]["direct"] = {"size": 10 ** 12, "order": 3}
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(config, f)
        r = self.info(out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("output.direct.size", r.stderr)
        self.assertIn("at most 1000000000", r.stderr)


if __name__ == "__main__":
    unittest.main()
