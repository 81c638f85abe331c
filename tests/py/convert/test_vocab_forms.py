"""Every vocabulary form load_vocab recognises, from files written here (and the real ones when present)."""
import json
import os
import pickle
import tempfile
import unittest

import pyutil
from lstmlm.convert import vocab

TMP = pyutil.temp_root("lstmlm_vocabforms_")


def write(name, data, mode="w"):
    d = tempfile.mkdtemp(dir=TMP)
    p = os.path.join(d, name)
    with open(p, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        f.write(data)
    return p


def keras_tokenizer_pickle(state):
    """Bytes of pickle.dumps(keras.src.legacy.preprocessing.text.Tokenizer) with the given attributes:
    NEWOBJ of the class, then BUILD with its __dict__ (what pickling an instance writes)."""
    body = pickle.dumps(state, protocol=4)[2:-1]  # the dict's opcodes, without PROTO and STOP
    if body[:1] == b"\x95":  # FRAME
        body = body[9:]
    def short_str(s):
        return b"\x8c" + bytes([len(s)]) + s.encode()
    head = (b"\x80\x04" + short_str("keras.src.legacy.preprocessing.text") + short_str("Tokenizer") +
            b"\x93)\x81")
    return head + body + b"b."


class VocabFormsTest(unittest.TestCase):
    def test_json_array(self):
        v = vocab.load_vocab(write("v.json", json.dumps(["<eos>", " ", "\n", "héllo"])))
        self.assertEqual(v.tokens, ["<eos>", " ", "\n", "héllo"])
        self.assertEqual(v.kind_guess(), "word")

    def test_json_token_to_id_and_id_to_token(self):
        a = vocab.load_vocab(write("a.json", json.dumps({"b": 1, "a": 0, "\n": 2})))
        b = vocab.load_vocab(write("b.json", json.dumps({"1": "b", "0": "a", "2": "\n"})))
        self.assertEqual(a.tokens, ["a", "b", "\n"])
        self.assertEqual(b.tokens, ["a", "b", "\n"])
        self.assertEqual(a.kind_guess(), "char")

    def test_keras_word_index_json_reserves_zero(self):
        for obj in ({"wordIndex": {"the": 1, "cat": 2}}, {"word_index": {"the": 1, "cat": 2}},
                    {"the": 1, "cat": 2}):
            v = vocab.load_vocab(write("wi.json", json.dumps(obj)))
            self.assertTrue(v.keras, obj)
            self.assertEqual(v.tokens, [None, "the", "cat"])
            # Model with 4 outputs: 0 = padding, 3 never produced by the Tokenizer (one spare output, as
            # apps that size Dense len(word_index) + 2 have).
            self.assertEqual(vocab.complete(v, 4, "m"), ["<pad>", "the", "cat", "<unused:3>"])
            self.assertTrue(v.lowercase)

    def test_keras_tokenizer_that_does_not_fit_the_model_is_refused(self):
        # ids 1..3 + reserved 0 need 4 outputs. 2 outputs would drop "c" and "d"; 6 leave two
        # outputs without a word beyond the one spare: both are another model's vocabulary.
        v = vocab.load_vocab(write("wi.json", json.dumps({"a": 1, "b": 2, "c": 3})))
        with self.assertRaisesRegex(vocab.VocabError, r"3 words \(ids 1\.\.3, 0 reserved\) but m has 2 outputs "
                                    r"\(2 ids would be dropped\)"):
            vocab.complete(v, 2, "m")
        with self.assertRaisesRegex(vocab.VocabError, r"m has 6 outputs \(2 outputs would have no word\)"):
            vocab.complete(v, 6, "m")
        self.assertEqual(len(vocab.complete(v, 5, "m")), 5)
        self.assertEqual(vocab.complete(v, 2, "m", allow_mismatch=True), ["<pad>", "a"])
        self.assertEqual(vocab.complete(v, 6, "m", allow_mismatch=True)[4:], ["<unused:4>", "<unused:5>"])

    def test_other_models_keras_vocabulary_is_refused(self):
        # The case: keras3-ml-wordpred's 2,116-word index given to keras3-cs-nextword's 101-row model.
        model = pyutil.data("keras3-cs-nextword", "next_word_model1.h5")
        wrong = pyutil.data("keras3-ml-wordpred", "word_index.json")
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "m")
        r = pyutil.convert(model, out, "--vocab", wrong)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("2116 words (ids 1..2116, 0 reserved)", r.stderr)
        self.assertIn("has 101 outputs (2016 ids would be dropped)", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "config.json")))
        r = pyutil.convert(model, out, "--vocab", wrong, "--allow-vocab-mismatch")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_char_tokenizer_over_words_is_refused(self):
        model = pyutil.data("keras3-cs-nextword", "next_word_model1.h5")
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "m")
        r = pyutil.convert(model, out, "--vocab", pyutil.data("keras3-cs-nextword", "tokenizer1.pkl"),
                           "--tokenizer", "char")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"--tokenizer char, but \d+ vocabulary tokens are longer than one character")
        self.assertIn("use --tokenizer word", r.stderr)

    def test_keras_tokenizer_json(self):
        cfg = {"num_words": 3, "filters": "!?", "lower": False, "split": " ", "char_level": False,
               "oov_token": "<OOV>", "document_count": 2,
               "word_index": json.dumps({"<OOV>": 1, "Hi": 2, "there": 3})}
        v = vocab.load_vocab(write("tok.json", json.dumps({"class_name": "Tokenizer", "config": cfg})))
        self.assertEqual((v.lowercase, v.filters, v.unk_token, v.num_words), (False, "!?", "<OOV>", 3))
        # num_words=3: Keras's texts_to_sequences only emits ids < 3, so "there" (3) is out of vocabulary.
        self.assertEqual(vocab.complete(v, 4, "m"), ["<pad>", "<OOV>", "Hi", "<unused:3>"])

    def test_keras_tokenizer_split_recorded(self):
        # The Tokenizer's split is what separates words in Keras; it reaches config.json.
        cfg = {"filters": "", "lower": True, "split": "|", "char_level": False,
               "word_index": json.dumps({"a b": 1, "c": 2})}
        p = write("tok.json", json.dumps({"class_name": "Tokenizer", "config": cfg}))
        self.assertEqual(vocab.load_vocab(p).split, "|")
        cfg["split"] = ""
        with self.assertRaisesRegex(vocab.VocabError, "split is ''"):
            vocab.load_vocab(write("tok.json", json.dumps({"class_name": "Tokenizer", "config": cfg})))
        # A bare word_index carries no settings: Keras' default split " " is assumed, like its filters.
        self.assertEqual(vocab.load_vocab(write("wi.json", json.dumps({"the": 1}))).split, " ")
        # Non-Keras vocabularies keep the whitespace rule (no split written).
        self.assertIsNone(vocab.load_vocab(write("v.json", json.dumps(["<eos>", "the"]))).split)

    def test_keras_tokenizer_pickle_via_stub(self):
        import collections
        state = {"word_counts": collections.OrderedDict(a=2), "word_docs": collections.defaultdict(int),
                 "filters": "#", "split": " ", "lower": True, "num_words": None, "document_count": 1,
                 "char_level": False, "oov_token": None, "index_docs": collections.defaultdict(int),
                 "word_index": {"a": 1, "b": 2}, "index_word": {1: "a", 2: "b"}, "analyzer": None}
        v = vocab.load_vocab(write("tok.pkl", keras_tokenizer_pickle(state), "wb"))
        self.assertIn("keras.src.legacy.preprocessing.text.Tokenizer", v.form)
        self.assertEqual((v.tokens, v.filters, v.lowercase), ([None, "a", "b"], "#", True))

    def test_char_rnn_chars_vocab_pickle(self):
        chars = (" ", "e", "\n", "€")
        for obj in ((chars, {c: i for i, c in enumerate(chars)}), chars):
            v = vocab.load_vocab(write("chars_vocab.pkl", pickle.dumps(obj, protocol=3), "wb"))
            self.assertEqual(v.tokens, list(chars))
            self.assertEqual(v.kind_guess(), "char")

    def test_chars_vocab_inconsistent_is_refused(self):
        p = write("cv.pkl", pickle.dumps((("a", "b"), {"a": 1, "b": 0})), "wb")
        with self.assertRaisesRegex(vocab.VocabError, "disagree"):
            vocab.load_vocab(p)

    def test_plain_token_list(self):
        v = vocab.load_vocab(write("vocab.txt", "the\ncat\r\n<unk>\n"))
        self.assertEqual(v.tokens, ["the", "cat", "<unk>"])
        with self.assertRaisesRegex(vocab.VocabError, "line 2 holds several words"):
            vocab.load_vocab(write("corpus.txt", "the\nthe cat sat\n"))

    def test_duplicates_and_bad_ids_are_refused(self):
        with self.assertRaisesRegex(vocab.VocabError, "appears twice"):
            vocab.load_vocab(write("d.json", json.dumps(["a", "b", "a"])))
        with self.assertRaisesRegex(vocab.VocabError, "share id 1"):
            vocab.load_vocab(write("d.json", json.dumps({"a": 1, "b": 1})))
        with self.assertRaisesRegex(vocab.VocabError, "non-negative integer"):
            vocab.load_vocab(write("d.json", json.dumps({"a": -1})))

    def test_word_language_model_corpus(self):
        d = tempfile.mkdtemp(dir=TMP)
        for name, text in (("train.txt", "a b\nb c\n"), ("valid.txt", "d a\n"), ("test.txt", "\ne\n")):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        # data.Corpus: first occurrence order over train, valid, test; '<eos>' after every line.
        self.assertEqual(vocab.corpus_vocab(d).tokens, ["a", "b", "<eos>", "c", "d", "e"])

    def test_complete_refuses_a_too_large_vocabulary(self):
        v = vocab.load_vocab(write("v.json", json.dumps(["a", "b", "c"])))
        with self.assertRaisesRegex(vocab.VocabError, "3 ids but m has 2 outputs"):
            vocab.complete(v, 2, "m")

    def test_complete_refuses_a_too_small_vocabulary(self):
        # A JSON array (or corpus, or chars_vocab) names every id: 3 names for 5 outputs is another
        # model's vocabulary, not one to pad with placeholders (only a Keras Tokenizer leaves ids unnamed).
        v = vocab.load_vocab(write("v.json", json.dumps(["a", "b", "c"])))
        with self.assertRaisesRegex(vocab.VocabError, "3 ids but m has 5 outputs"):
            vocab.complete(v, 5, "m")

    def test_real_vocabularies(self):
        v = vocab.load_vocab(pyutil.data("keras3-cs-nextword", "tokenizer1.pkl"))
        self.assertEqual((len(v.tokens), v.tokens[1], v.unk_token, v.lowercase), (101, "<OOV>", "<OOV>", True))
        v = vocab.load_vocab(pyutil.data("keras3-ml-wordpred", "word_index.json"))
        self.assertEqual((len(v.tokens), v.tokens[1]), (2117, "the"))  # 2116 words, ids 1..2116
        v = vocab.load_vocab(pyutil.data("tf1-charrnn-space", "chars_vocab.pkl"))
        self.assertEqual(len(v.tokens), 103)
        a = vocab.load_vocab(pyutil.data("keras3-shakespeare-char2", "char_to_idx.json"))
        b = vocab.load_vocab(pyutil.data("keras3-shakespeare-char2", "idx_to_char.json"))
        self.assertEqual(a.tokens, b.tokens)
        v = vocab.corpus_vocab(os.path.dirname(pyutil.data("torch-wlm-fairytales", "train.txt")))
        self.assertEqual(len(v.tokens), 4934)  # ntoken of the pickled RNNModel


if __name__ == "__main__":
    unittest.main()
