"""Each real model of ../shared/data, run the way its framework's own recipe runs it (the training
script's loss on a text, the app's predict loop, the generate loop at temperature 0; framework_recipes.py, in
float64 numpy from the source files), against the lstmlm command a user would run for that figure: the same
numbers within 1e-4 and the same words. The table of commands is in docs/importing.md ("Reproduce your
framework's numbers").

What the other real-model tests already assert is not repeated here: test_real_models_keras_torch.py and
test_real_models_tf1.py compare next-token distributions id by id, WlmPerplexityTest the single-stream
perplexity of word_language_model, CharDocumentNewlineTest char-rnn's document perplexity over its training
text, test_generate_real.py greedy generation after a prompt on the two PyTorch models.

KerasWindowRecipeTest uses lstmlm's fixed-window interface (`--pad-to N` on score and generate, and
`input_length` in config.json making it the default) (docs/scoring.md, "Fixed input windows (Keras)").
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # Debian's OpenMP OpenBLAS spins threads on small products

import json  # noqa: E402
import math  # noqa: E402
import pickle  # noqa: E402
import unittest  # noqa: E402

import numpy as np  # noqa: E402

import framework_recipes as fr  # noqa: E402
import pyutil  # noqa: E402
import ref_numpy  # noqa: E402

TOL = 1e-4
MARGIN = 1e-3  # greedy picks are compared while the recipe's top two are further apart than this (nats)
TMP = pyutil.temp_root("lstmlm_recipes_")
_converted = {}


def converted(name, source, *opts):
    """tools/convert.py SOURCE OUTDIR OPTS, once per name for the whole file."""
    if name not in _converted:
        out = os.path.join(TMP, name)
        r = pyutil.convert(source, out, *opts)
        if r.returncode != 0:
            raise AssertionError(f"convert.py {source} failed: {r.stderr}")
        _converted[name] = out
    return _converted[name]


def lstmlm_json(*args, stdin=None):
    """Runs lstmlm with jsonl output; returns the list of records (fails on a non-zero exit)."""
    import subprocess
    r = subprocess.run([pyutil.require_cli(), *args], input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"lstmlm {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def score_words(records):
    """(ids, ln p) of every word record of `score --output-format jsonl -v word`, None for unscored."""
    words = [w for rec in records if rec["type"] == "line" for w in rec["words"]]
    return [w["id"] for w in words], [w["logprob"] for w in words]


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return path


class RecipeBase(unittest.TestCase):
    def assert_top(self, got_top, ref_lp, vocab, k, what, check_logprob=True):
        """lstmlm predict's top-k entries == the recipe's k most likely tokens (words and probabilities)."""
        order = np.argsort(-ref_lp, kind="stable")[:k]
        self.assertEqual([e["token"] for e in got_top], [vocab[i] for i in order], what)
        for e, i in zip(got_top, order):
            self.assertEqual(e["id"], int(i))
            if check_logprob:
                self.assertLess(abs(e["logprob"] - ref_lp[i]), TOL, f"{what}: {vocab[i]!r}")
            self.assertLess(abs(e["prob"] - math.exp(ref_lp[i])), TOL, f"{what}: {vocab[i]!r}")
        print(f"{what}: " + ", ".join(f"{vocab[i]!r} {math.exp(ref_lp[i]):.4f}" for i in order), flush=True)

    def assert_greedy(self, got_tokens, ids, lps, margins, min_clear, what):
        """lstmlm generate --temperature 0 tokens == the recipe's greedy picks, while the picks are clear."""
        clear = next((k for k, m in enumerate(margins) if m < MARGIN), len(ids))
        self.assertGreaterEqual(clear, min_clear, f"{what}: too few clear greedy steps to compare")
        self.assertEqual([t["id"] for t in got_tokens][:clear], ids[:clear], what)
        for k in range(clear):
            self.assertLess(abs(got_tokens[k]["logprob"] - lps[k]), TOL, f"{what}: step {k}")
        print(f"{what}: {clear} clear greedy steps, total ln p {sum(lps[:clear]):.6f}", flush=True)


def margins_of(lp_seq):
    return [float(np.diff(np.sort(lp)[-2:])[0]) for lp in lp_seq]


# ================================================================================== PyTorch word_language_model
WLM = "model_epochs_25_logint_75_emsize_100_nhid_100_drop_05.pt"


class TorchWlmRecipeTest(RecipeBase):
    """torch-wlm-fairytales (emsize 100, tied, 2 layers), pytorch/examples word_language_model."""

    @classmethod
    def setUpClass(cls):
        cls.d = pyutil.data("torch-wlm-fairytales")
        cls.m = ref_numpy.torch_load_trusted(os.path.join(cls.d, WLM))
        cls.ref = ref_numpy.TorchLM(cls.m.state_dict(), "encoder.weight", "rnn.", "decoder", 2)

    def test_evaluate_perplexity(self):
        # main.py: test_data = batchify(corpus.test, eval_batch_size=10); evaluate() -> exp(loss) = 51.89 (the
        # author's log). The lstmlm figure: the 10 batchify columns, one per line of ids, scored as sentences
        # from the zero state (`score --ids`) on a conversion without eos (`--eos ''`): each line's first id
        # is then context only, as data[0] is in evaluate(), and nothing is appended to a line.
        out = converted("wlm-noeos", os.path.join(self.d, WLM), "--eos", "")
        vocab = pyutil.read_vocab(out)
        idx = {w: i for i, w in enumerate(vocab)}
        with open(os.path.join(self.d, "test.txt"), encoding="utf-8") as f:
            stream = [idx[w] for line in f for w in line.split() + ["<eos>"]]  # data.Corpus.tokenize
        nll, data = fr.wlm_evaluate(self.ref, stream, eval_batch_size=10, bptt=35)
        ppl_recipe = math.exp(nll.mean())
        self.assertLess(abs(ppl_recipe - 51.89), 0.005, "the recipe does not give the author's recorded 51.89")
        cols = write(os.path.join(TMP, "wlm-columns.txt"),
                     "".join(" ".join(map(str, data[:, j])) + "\n" for j in range(data.shape[1])))
        recs = lstmlm_json("score", "-m", out, "--ids", "--output-format", "jsonl", cols)
        ids, lps = score_words(recs)
        self.assertEqual(ids, data.T.reshape(-1).tolist())
        got = np.array([lp for lp in lps if lp is not None])
        self.assertEqual(sum(lp is None for lp in lps), data.shape[1])  # each column's first id is context
        np.testing.assert_allclose(-got, nll.T.reshape(-1), atol=TOL, rtol=0)
        ppl_lstmlm = recs[-1]["perplexity"]
        self.assertLess(abs(ppl_lstmlm - ppl_recipe) / ppl_recipe, 1e-4)
        doc = lstmlm_json("score", "-m", converted("wlm", os.path.join(self.d, WLM)), "--context", "document",
                          "-v", "summary", "--output-format", "jsonl", os.path.join(self.d, "test.txt"))
        print(f"word_language_model evaluate(): recipe {ppl_recipe:.4f}, lstmlm score --ids (10 columns) "
              f"{ppl_lstmlm:.4f}; lstmlm score --context document test.txt {doc[-1]['perplexity']:.4f} "
              "(one stream, see WlmPerplexityTest)", flush=True)

    def test_generate_py_greedy(self):
        # generate.py: hidden = init_hidden(1), input = a start word, then model(input, hidden), pick, feed the
        # pick back, printing "\n" for <eos> and going on. At temperature -> 0 the pick is the argmax. With
        # <eos> as the start word this is `lstmlm generate` with an empty prompt (it starts from eos).
        out = converted("wlm", os.path.join(self.d, WLM))
        vocab = pyutil.read_vocab(out)
        eos = vocab.index("<eos>")
        outs, state = self.ref.run([eos])
        lp, ids, lps, lp_seq = outs[-1], [], [], []
        for _ in range(30):
            t = int(np.argmax(lp))
            ids.append(t)
            lps.append(float(lp[t]))
            lp_seq.append(lp)
            outs, state = self.ref.run([t], state)
            lp = outs[-1]
        rec = lstmlm_json("generate", "-m", out, "--temperature", "0", "-n", "30", "--no-stop-at-eos",
                          "--output-format", "jsonl")[0]
        self.assert_greedy(rec["tokens"], ids, lps, margins_of(lp_seq), 10, "word_language_model generate.py")
        print("  " + " ".join("\\n" if t == eos else vocab[t] for t in ids), flush=True)

    def test_predict_after_line(self):
        # The next-word distribution after "the old man" at the start of a line: the corpus stream has <eos>
        # before every line, so the context is <eos> the old man from the zero state (what `predict` feeds).
        out = converted("wlm", os.path.join(self.d, WLM))
        vocab = pyutil.read_vocab(out)
        idx = {w: i for i, w in enumerate(vocab)}
        ref_lp = self.ref.next_logprobs([idx["<eos>"]] + [idx[w] for w in "the old man".split()])
        rec = lstmlm_json("predict", "-m", out, "--top", "5", "--output-format", "jsonl", "the old man")[0]
        self.assert_top(rec["top"], ref_lp, vocab, 5, "word_language_model after 'the old man'")


# ========================================================================================== PyTorch char model
class TorchCharRecipeTest(RecipeBase):
    """torch-charlstm-statedict: one-hot chars -> nn.LSTM(84, 256, 2) -> Linear (its greedy generation after a
    prompt is in test_generate_real.py)."""

    @classmethod
    def setUpClass(cls):
        import torch
        cls.d = pyutil.data("torch-charlstm-statedict")
        ck = torch.load(os.path.join(cls.d, "shakespeare.pt"), map_location="cpu")
        cls.ref = ref_numpy.TorchLM(ck["model"], None, "lstm.", "fc", ck["num_layers"])
        cls.chars = list(ck["chars"])

    def test_text_loss(self):
        # nn.CrossEntropyLoss of every next char of a text read as one stream (state carried, "\n" a char):
        # `score --context document` (the char model's "\n" ends each line; no bos/eos: char 1 is context).
        out = converted("tchar", os.path.join(self.d, "shakespeare.pt"))
        text = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
                "First Citizen:\nYou are all resolved rather to die than to famish?\n")
        ids = [self.chars.index(c) for c in text]
        outs, _ = self.ref.run(ids)
        want = np.array([outs[k][ids[k + 1]] for k in range(len(ids) - 1)])
        recs = lstmlm_json("score", "-m", out, "--context", "document", "--output-format", "jsonl",
                           write(os.path.join(TMP, "tchar.txt"), text))
        got_ids, lps = score_words(recs)
        self.assertEqual(got_ids, ids)
        self.assertIsNone(lps[0])
        np.testing.assert_allclose(lps[1:], want, atol=TOL, rtol=0)
        self.assertLess(abs(recs[-1]["perplexity"] - math.exp(-want.mean())), 1e-4 * math.exp(-want.mean()))
        print(f"torch char model, cross-entropy over the text: recipe ppl {math.exp(-want.mean()):.4f}, "
              f"lstmlm {recs[-1]['perplexity']:.4f}", flush=True)

    def test_predict_after_seed(self):
        out = converted("tchar", os.path.join(self.d, "shakespeare.pt"))
        seed = "Before we proceed any furthe"
        ref_lp = self.ref.next_logprobs([self.chars.index(c) for c in seed])
        rec = lstmlm_json("predict", "-m", out, "--top", "5", "--output-format", "jsonl", seed)[0]
        self.assert_top(rec["top"], ref_lp, self.chars, 5, f"torch char model after {seed!r}")


# ============================================================================================= TF1 char-rnn
class CharRnnRecipeTest(RecipeBase):
    """char-rnn-tensorflow checkpoints: train.py's loss with its own batch_size/seq_length (config.pkl) and
    model.sample(sampling_type=0)."""
    MODELS = {
        "art": ("tf012-charrnn-artclasses", "model.ckpt-46499", "artclasses_input.txt", "artclasses_vocab.pkl",
                "ART 2", "Prerequisite: AR"),
        "space": ("tf1-charrnn-space", "model.ckpt-248399", "input.txt", None, "The planet ", "the surface of th"),
    }
    # Characters of the text read. input.txt is char-rnn's data/space, but config.pkl says the model was
    # trained on data/spacebible (not in the repo; its vocabulary has "\r", input.txt has none): a text of
    # the model's domain, of which the first 25,000 characters are read (50 rows x 500 steps), the whole
    # artclasses text (its training text).
    LIMIT = {"art": None, "space": 25000}

    def load(self, key):
        from tf1_reference import TF1CharRNN
        from lstmlm.convert.tf1_checkpoint import Checkpoint
        folder, ckpt, text, vocab, prime, seed = self.MODELS[key]
        d = pyutil.data(folder)
        opts = ("--vocab", os.path.join(d, vocab)) if vocab else ()
        out = converted(key, os.path.join(d, ckpt), *opts)
        src = pyutil.read_config(out)["source"]["variables"]
        ck = Checkpoint(os.path.join(d, ckpt))
        ref = TF1CharRNN(ck.tensor(src["embedding"]), [{p: ck.tensor(n) for p, n in c.items()} for c in src["cells"]],
                         ck.tensor(src["softmax_w"]), ck.tensor(src["softmax_b"]))
        with open(os.path.join(d, "config.pkl"), "rb") as f:
            args = pickle.load(f)  # an argparse.Namespace (stdlib class only)
        return d, out, ref, args, os.path.join(d, text), prime, seed

    def train_loss(self, key):
        d, out, ref, args, text_path, _, _ = self.load(key)
        vocab = pyutil.read_vocab(out)
        idx = {c: i for i, c in enumerate(vocab)}
        with open(text_path, encoding="utf-8", newline="") as f:  # codecs.open: no newline translation
            text = f.read()[:self.LIMIT[key]]
        if self.LIMIT[key]:
            text_path = write(os.path.join(TMP, f"{key}-text.txt"), text)
        nll, x, y = fr.charrnn_train_loss(ref, [idx[c] for c in text], args.batch_size, args.seq_length)
        # lstmlm: each TextLoader row as one line of ids, its first x id then its y ids (y continues x by one;
        # the last row's last target wraps to xdata[0], as TextLoader makes it), scored from the zero state.
        rows = write(os.path.join(TMP, f"{key}-rows.txt"),
                     "".join(" ".join(map(str, [x[r, 0]] + y[r].tolist())) + "\n" for r in range(x.shape[0])))
        recs = lstmlm_json("score", "-m", out, "--ids", "--output-format", "jsonl", rows)
        ids, lps = score_words(recs)
        self.assertEqual(ids, np.concatenate([x[:, :1], y], 1).reshape(-1).tolist())
        got = np.array([lp for lp in lps if lp is not None])
        np.testing.assert_allclose(-got, nll.reshape(-1), atol=TOL, rtol=0)
        ppl = math.exp(nll.mean())
        self.assertLess(abs(recs[-1]["perplexity"] - ppl) / ppl, 1e-4)
        doc = lstmlm_json("score", "-m", out, "--context", "document", "-v", "summary", "--output-format", "jsonl",
                          text_path)[-1]
        print(f"char-rnn {key} train.py loss (batch {args.batch_size} x seq {args.seq_length}, "
              f"{nll.size} targets): recipe {nll.mean():.6f} nats/char, ppl {ppl:.4f}; lstmlm score --ids rows "
              f"{recs[-1]['perplexity']:.4f}; lstmlm score --context document {doc['perplexity']:.4f}",
              flush=True)
        return nll, ppl

    def test_train_loss_artclasses(self):
        nll, _ = self.train_loss("art")
        self.assertLess(nll.mean(), 0.5)  # SOURCE.md: ~0.20 nats/char on its own training text

    def test_train_loss_space(self):
        self.train_loss("space")

    def sample(self, key):
        d, out, ref, _, _, prime, _ = self.load(key)
        vocab = pyutil.read_vocab(out)
        idx = {c: i for i, c in enumerate(vocab)}
        ids, lps = fr.charrnn_sample_greedy(ref, [idx[c] for c in prime], 40)
        lp_all = ref.next_logprobs([idx[c] for c in prime] + ids)
        margins = margins_of(lp_all[len(prime) - 1:len(prime) - 1 + len(ids)])
        rec = lstmlm_json("generate", "-m", out, "-p", prime, "--temperature", "0", "-n", "40",
                          "--output-format", "jsonl")[0]
        self.assert_greedy(rec["tokens"], ids, lps, margins, 20, f"char-rnn {key} sample(prime={prime!r})")
        clear = next((k for k, m in enumerate(margins) if m < MARGIN), len(ids))
        self.assertTrue(rec["text"].startswith("".join(vocab[i] for i in ids[:clear])))
        print("  " + repr(prime + "".join(vocab[i] for i in ids)), flush=True)

    def test_sample_greedy_artclasses(self):
        self.sample("art")

    def test_sample_greedy_space(self):
        self.sample("space")

    def predict(self, key):
        d, out, ref, _, _, _, seed = self.load(key)
        vocab = pyutil.read_vocab(out)
        ref_lp = ref.next_logprobs([vocab.index(c) for c in seed])[-1]
        rec = lstmlm_json("predict", "-m", out, "--top", "5", "--output-format", "jsonl", seed)[0]
        self.assert_top(rec["top"], ref_lp, vocab, 5, f"char-rnn {key} after {seed!r}")

    def test_predict_artclasses(self):
        self.predict("art")

    def test_predict_space(self):
        self.predict("space")


# ============================================================================================== Keras apps
class KerasApps:
    """Per Keras model: how its app builds contexts (ids), its input length, a seed and a text."""

    @staticmethod
    def wordpred():
        d = pyutil.data("keras3-ml-wordpred")
        with open(os.path.join(d, "word_index.json"), encoding="utf-8") as f:
            wi = json.load(f)["wordIndex"]
        src = os.path.join(d, "word_prediction_model.h5")
        out = converted("wordpred", src, "--vocab", os.path.join(d, "word_index.json"))
        text = ("machine learning is a field of study in artificial intelligence concerned with the development "
                "and study of statistical algorithms that can learn from data")
        return dict(name="keras3-ml-wordpred", out=out, src=src, maxlen=8404, words=True,
                    encode=lambda s: fr.keras_texts_to_sequences(s, wi), seed="machine learning is a",
                    lines=[text, "deep learning is a subset of machine learning"])

    @staticmethod
    def csnextword():
        d = pyutil.data("keras3-cs-nextword")
        src = os.path.join(d, "next_word_model1.h5")
        out = converted("csnext", src, "--vocab", os.path.join(d, "tokenizer1.pkl"))
        vocab = pyutil.read_vocab(out)
        wi = {w: i for i, w in enumerate(vocab) if i > 0}
        with open(os.path.join(d, "cs_sentences_1000.txt"), encoding="utf-8") as f:
            lines = [l for l in f.read().splitlines() if l.strip()][:5]
        return dict(name="keras3-cs-nextword", out=out, src=src, maxlen=9, words=True,
                    encode=lambda s: fr.keras_texts_to_sequences(s, wi, wi["<OOV>"]), seed="data science",
                    lines=lines)

    @staticmethod
    def shakespeare():
        d = pyutil.data("keras3-shakespeare-char2")
        src = os.path.join(d, "shakespeare.h5")
        out = converted("shk", src, "--vocab", os.path.join(d, "char_to_idx.json"))
        with open(os.path.join(d, "char_to_idx.json"), encoding="utf-8") as f:
            c2i = json.load(f)
        text = ("to be or not to be that is the question\nwhether tis nobler in the mind to suffer\n"
                "the slings and arrows of outrageous fortune\n")
        return dict(name="keras3-shakespeare-char2", out=out, src=src, maxlen=60, words=False,
                    encode=lambda s: [c2i[c] for c in s], seed=text[:70], text=text)

    @staticmethod
    def onehot():
        d = pyutil.data("keras2-char2-onehot")
        with open(os.path.join(d, "data.txt"), encoding="utf-8") as f:
            full = f.read().lower()
        chars = sorted(set(full))  # lstm_text_generation's vocabulary (SOURCE.md)
        vpath = write(os.path.join(TMP, "k2-chars.json"), json.dumps(chars))
        src = os.path.join(d, "next_word_model.h5")
        out = converted("k2", src, "--vocab", vpath)
        c2i = {c: i for i, c in enumerate(chars)}
        text = full[1000:full.index("\n", 1130) + 1]  # whole lines: document mode adds no "\n" of its own
        return dict(name="keras2-char2-onehot", out=out, src=src, maxlen=40, words=False,
                    encode=lambda s: [c2i[c] for c in s], seed=full[2000:2045], text=text)


_padded = {}


def padded(app):
    if app["name"] not in _padded:
        _padded[app["name"]] = fr.KerasPadded(ref_numpy.keras_h5(app["src"]), app["maxlen"])
    return _padded[app["name"]]


ALL_APPS = ("wordpred", "csnextword", "shakespeare", "onehot")


class KerasPredictRecipeTest(RecipeBase):
    """The Keras apps' predict call, pad_sequences([ids], maxlen, padding='pre') then model.predict, vs
    `lstmlm predict --pad-to N` (an option lstmlm has today)."""

    def test_wordpred_recipe_itself(self):
        # The recipe's own figures, a check of it: Keras' padded call gives "learning" (0.142) after
        # "machine learning is a"; the zero-state unpadded run (lstmlm's stateful default) gives "feature" (0.095).
        app = KerasApps.wordpred()
        vocab = pyutil.read_vocab(app["out"])
        ctx = app["encode"](app["seed"])
        lp = padded(app).predict(ctx)
        self.assertEqual((vocab[int(np.argmax(lp))], round(math.exp(lp.max()), 3)), ("learning", 0.142))
        st = padded(app).lm.next_logprobs(ctx)
        self.assertEqual((vocab[int(np.argmax(st))], round(math.exp(st.max()), 3)), ("feature", 0.095))

    def check_predict(self, key, check_logprob=True):
        app = getattr(KerasApps, key)()
        vocab = pyutil.read_vocab(app["out"])
        ref_lp = padded(app).predict(app["encode"](app["seed"]))
        rec = lstmlm_json("predict", "-m", app["out"], "--pad-to", str(app["maxlen"]), "--top", "5",
                          "--output-format", "jsonl", app["seed"])[0]
        # jsonl lists the real ids of the window and counts the pad ids fed before them.
        window = fr.pad_sequences_pre(app["encode"](app["seed"]), app["maxlen"])
        self.assertEqual([0] * rec["pads"] + rec["ids"], window)
        self.assert_top(rec["top"], ref_lp, vocab, 5, f"{app['name']} predict --pad-to {app['maxlen']}",
                        check_logprob)

    def test_predict_wordpred(self):
        # The app prints the probabilities: words and p within 1e-4 (ln p: the next test).
        self.check_predict("wordpred", check_logprob=False)

    @unittest.expectedFailure
    def test_predict_wordpred_logprob(self):
        # KNOWN MISMATCH (float32, not lstmlm): after 8400 padding steps "model" (p 0.1075) has ln p 1.34e-4
        # from the float64 recipe. The same recipe in float32 numpy is 6.1e-4 from float64 at worst over the
        # vocabulary and within 1.7e-5 of lstmlm: the error is the float32 state's (Keras computes in float32
        # too), which no fp32 engine avoids over 8404 steps. Expected to fail; an unexpected pass is reported.
        self.check_predict("wordpred")

    def test_predict_csnextword(self):
        self.check_predict("csnextword")


class KerasWindowRecipeTest(RecipeBase):
    """lstmlm's fixed-window interface: `score/generate --pad-to N` (and predict's on a model
    without pad_id, padding with 0), `--window N`, `--stateful`, and `input_length` in config.json (written by
    the converter for a fixed Keras input) making `--pad-to input_length` the default of score, predict and
    generate."""

    def training_loss(self, key, *pad, exact_logprob=True):
        app = getattr(KerasApps, key)()
        kp = padded(app)
        if app["words"]:
            # The app's training set: for each line, the n-gram prefixes [w1..wk] (k >= 2), pre-padded, X = all
            # but the last id, y = the last; model.evaluate = their mean categorical cross-entropy. lstmlm's
            # sentence mode on the line with each word's context padded: the first word is context only.
            seqs = [app["encode"](l) for l in app["lines"]]
            want = np.concatenate([-kp.training_losses(s) for s in seqs])
            text = "".join(l + "\n" for l in app["lines"])
            recs = lstmlm_json("score", "-m", app["out"], *pad, "--output-format", "jsonl", stdin=text)
            ids, lps = score_words(recs)
            # Words outside the word_index: dropped by texts_to_sequences, skipped by lstmlm (id -1, unscored).
            self.assertEqual([i for i in ids if i >= 0], [i for s in seqs for i in s])
            got = np.array([lp for lp in lps if lp is not None])
        else:
            # lstm_text_generation: windows of maxlen chars -> the next char (step 1 here), every window full.
            # lstmlm: the text as one document, every char's context cut to its last maxlen chars.
            seq = app["encode"](app["text"])
            N = app["maxlen"]
            want = np.array([kp.predict(seq[k - N:k])[seq[k]] for k in range(N, len(seq))])
            recs = lstmlm_json("score", "-m", app["out"], "--context", "document", *pad, "--output-format",
                               "jsonl", stdin=app["text"])
            ids, lps = score_words(recs)
            self.assertEqual(ids, seq)
            got = np.array(lps[N:])
        if exact_logprob:
            np.testing.assert_allclose(got, want, atol=TOL, rtol=0)
        else:  # float32 over 8404 steps: see test_predict_wordpred_logprob
            np.testing.assert_allclose(np.exp(got), np.exp(want), atol=TOL, rtol=0)
            self.assertLess(abs(got.mean() - want.mean()), TOL)
        print(f"{app['name']} evaluate() cross-entropy: recipe {-want.mean():.6f}, lstmlm {-got.mean():.6f}",
              flush=True)

    def generate(self, key, *pad):
        app = getattr(KerasApps, key)()
        kp = padded(app)
        ctx = app["encode"](app["seed"])
        n = 6 if app["words"] else 30
        ids, lps = kp.greedy(ctx, n)
        margins = margins_of([kp.predict(ctx + ids[:k]) for k in range(n)])
        rec = lstmlm_json("generate", "-m", app["out"], "-p", app["seed"], "--temperature", "0", "-n", str(n),
                          *pad, "--output-format", "jsonl")[0]
        self.assert_greedy(rec["tokens"], ids, lps, margins, 3 if app["words"] else 10,
                           f"{app['name']} generate loop")

    def default_pad(self, key):
        app = getattr(KerasApps, key)()
        self.assertEqual(pyutil.read_config(app["out"]).get("input_length"), app["maxlen"])
        return app

    def test_training_loss_pad_to(self):
        for key in ALL_APPS:
            with self.subTest(key):
                self.training_loss(key, "--pad-to", str(getattr(KerasApps, key)()["maxlen"]),
                                   exact_logprob=key != "wordpred")

    def test_training_loss_default(self):
        for key in ALL_APPS:
            with self.subTest(key):
                self.default_pad(key)
                self.training_loss(key, exact_logprob=key != "wordpred")

    @unittest.expectedFailure
    def test_training_loss_wordpred_logprob(self):
        # KNOWN MISMATCH once --pad-to exists (float32, as test_predict_wordpred_logprob): each target read after
        # up to 8403 padding steps; ln p within 1e-4 of float64 fails by ~1.1e-4 on some targets (measured with
        # lstmlm's predict --ids on the padded contexts).
        self.training_loss("wordpred", "--pad-to", "8404")

    def test_generate_pad_to(self):
        for key in ALL_APPS:
            with self.subTest(key):
                self.generate(key, "--pad-to", str(getattr(KerasApps, key)()["maxlen"]))

    def test_generate_default(self):
        for key in ALL_APPS:
            with self.subTest(key):
                self.default_pad(key)
                self.generate(key)

    def test_predict_pad_to_char_models(self):
        # A Keras char model has no pad_id: --pad-to pads with 0 (the seeds here are longer than the window,
        # so only the truncation acts). The binary of today refuses --pad-to without tokenizer.pad_id.
        for key in ("shakespeare", "onehot"):
            with self.subTest(key):
                KerasPredictRecipeTest.check_predict(self, key)

    def test_predict_window_char_models(self):
        # lstm_text_generation's window: the last maxlen chars, no padding (the seeds are longer than it).
        for key in ("shakespeare", "onehot"):
            with self.subTest(key):
                app = getattr(KerasApps, key)()
                vocab = pyutil.read_vocab(app["out"])
                ctx = app["encode"](app["seed"])
                self.assertGreater(len(ctx), app["maxlen"])
                ref_lp = padded(app).predict(ctx)
                rec = lstmlm_json("predict", "-m", app["out"], "--window", str(app["maxlen"]), "--top", "5",
                                  "--output-format", "jsonl", app["seed"])[0]
                self.assert_top(rec["top"], ref_lp, vocab, 5, f"{app['name']} predict --window {app['maxlen']}")

    def test_stateful_turns_the_default_off(self):
        # With input_length in config.json, --stateful gives the zero-state unpadded run again: "feature" (0.095)
        # after "machine learning is a" on keras3-ml-wordpred, where the default window gives "learning".
        app = self.default_pad("wordpred")
        vocab = pyutil.read_vocab(app["out"])
        ref_lp = padded(app).lm.next_logprobs(app["encode"](app["seed"]))
        rec = lstmlm_json("predict", "-m", app["out"], "--stateful", "--top", "5", "--output-format", "jsonl",
                          app["seed"])[0]
        self.assertEqual(rec["top"][0]["token"], "feature")
        self.assert_top(rec["top"], ref_lp, vocab, 5, f"{app['name']} predict --stateful")

    def test_predict_default(self):
        for key in ALL_APPS:
            with self.subTest(key):
                app = self.default_pad(key)
                vocab = pyutil.read_vocab(app["out"])
                ref_lp = padded(app).predict(app["encode"](app["seed"]))
                rec = lstmlm_json("predict", "-m", app["out"], "--top", "5", "--output-format", "jsonl",
                                  app["seed"])[0]
                self.assert_top(rec["top"], ref_lp, vocab, 5, f"{app['name']} predict (default window)",
                                key != "wordpred")  # see test_predict_wordpred_logprob


if __name__ == "__main__":
    unittest.main()
