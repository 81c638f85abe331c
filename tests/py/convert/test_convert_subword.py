"""Subword models through the converters (format v4): --sentencepiece, --bpe, icefall's RnnLmModel and ESPnet's
RNN LMs (ESPnet2 SequentialRNNLM `lm.*`, ESPnet1 RNNLM in ClassifierWithState `predictor.*`).

The checkpoints are made here with PyTorch from the recipes' documented module code (icefall/rnn_lm/model.py,
espnet2/lm/seq_rnn_lm.py, espnet/nets/pytorch_backend/lm/default.py; random weights, small sizes), saved as the
recipes save them (icefall's training checkpoint with its params, pathlib paths included; ESPnet's state_dict),
and the SentencePiece models are trained at test time on a few hundred lines of ../shared/data/corpora-ptb with
python3-sentencepiece: icefall's way (user symbols <blk> <sos/eos>, unk_id 2, no bos/eos) and ESPnet's (the
defaults, its token list built as asr.sh builds it). Checked: the written vocab, tokenizer config and
tokenizer.model; per-token log-probabilities of `lstmlm score --ids` (start and end tokens included) within 1e-4
of the recipe's own PyTorch forward in float64; with a build that reads format v4, also plain text scored through
the SentencePiece model; refusals are one `lstmlm-convert: error:` line. Before the build reads v4 the numbers are
checked on a copy of the directory with a word tokenizer (same weights, same ids) and the v4 checks are skipped,
saying so.
"""
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import pyutil

TOL = 1e-4
TMP = pyutil.temp_root("lstmlm_convert_subword_")


def require_torch():
    try:
        import torch
    except ImportError:
        raise unittest.SkipTest("torch is not installed for this python3")
    return torch


def require_spm():
    try:
        import sentencepiece
    except ImportError:
        raise unittest.SkipTest("python3-sentencepiece is not installed")
    return sentencepiece


def corpus_lines(n=400):
    path = pyutil.data("corpora-ptb", "ptb.valid.txt")
    with open(path, encoding="utf-8") as f:
        lines = [" ".join(w for w in l.split() if w != "<unk>") for l in f]
    return [l for l in lines if l][:n]


_SPM = {}


def train_spm(style, vocab_size=120):
    """(path of a .model file, SentencePieceProcessor) trained on PTB lines: "icefall" as its
    local/train_bpe_model.py does (user symbols <blk> <sos/eos>, unk_id 2, bos_id = eos_id = -1), "espnet" with
    the defaults (<unk> 0, <s> 1, </s> 2) as asr.sh's spm_train."""
    if style not in _SPM:
        spm = require_spm()
        opts = dict(user_defined_symbols=["<blk>", "<sos/eos>"], unk_id=2, bos_id=-1, eos_id=-1) \
            if style == "icefall" else {}
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus_lines()), model_writer=buf,
                                       vocab_size=vocab_size, model_type="unigram", character_coverage=1.0,
                                       minloglevel=2, **opts)
        path = os.path.join(tempfile.mkdtemp(dir=TMP), "bpe.model")
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        _SPM[style] = (path, spm.SentencePieceProcessor(model_file=path))
    return _SPM[style]


def pieces_of(sp):
    return [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]


def icefall_model_class(torch):
    """icefall/rnn_lm/model.py's RnnLmModel (its modules and names; forward as score_token runs it)."""
    class RnnLmModel(torch.nn.Module):
        def __init__(self, vocab_size, embedding_dim, hidden_dim, num_layers, tie_weights=False):
            super().__init__()
            self.input_embedding = torch.nn.Embedding(num_embeddings=vocab_size, embedding_dim=embedding_dim)
            self.rnn = torch.nn.LSTM(input_size=embedding_dim, hidden_size=hidden_dim, num_layers=num_layers,
                                     batch_first=True)
            self.output_linear = torch.nn.Linear(in_features=hidden_dim, out_features=vocab_size)
            if tie_weights:
                self.output_linear.weight = self.input_embedding.weight

        def forward(self, x):
            out, _ = self.rnn(self.input_embedding(x))
            return self.output_linear(out).log_softmax(-1)
    return RnnLmModel


def espnet2_model_class(torch):
    """espnet2/lm/seq_rnn_lm.py's SequentialRNNLM inside ESPnetLanguageModel (whose `lm` it is)."""
    nn = torch.nn

    class SequentialRNNLM(nn.Module):
        def __init__(self, vocab_size, unit=16, nhid=None, nlayers=2, tie_weights=False, rnn_type="lstm"):
            super().__init__()
            ninp, nhid = unit, nhid or unit
            rnn_type = rnn_type.upper()
            self.encoder = nn.Embedding(vocab_size, ninp, padding_idx=0)
            if rnn_type in ("LSTM", "GRU"):
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, batch_first=True)
            else:
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity={"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type],
                                  batch_first=True)
            self.decoder = nn.Linear(nhid, vocab_size)
            if tie_weights:
                self.decoder.weight = self.encoder.weight

        def forward(self, x):
            out, _ = self.rnn(self.encoder(x))
            return self.decoder(out).log_softmax(-1)

    class ESPnetLanguageModel(nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, x):
            return self.lm(x)
    return SequentialRNNLM, ESPnetLanguageModel


def espnet1_model_class(torch):
    """espnet/nets/pytorch_backend/lm/default.py's RNNLM (a list of LSTMCell or GRUCell) in ClassifierWithState,
    the module whose state_dict DefaultRNNLM saves; forward one token at a time as its predict() does."""
    nn = torch.nn

    class RNNLM(nn.Module):
        def __init__(self, n_vocab, n_layers, n_units, typ="lstm"):
            super().__init__()
            self.embed = nn.Embedding(n_vocab, n_units)
            cell = nn.LSTMCell if typ == "lstm" else nn.GRUCell
            self.rnn = nn.ModuleList([cell(n_units, n_units) for _ in range(n_layers)])
            self.lo = nn.Linear(n_units, n_vocab)
            self.n_layers, self.n_units, self.typ = n_layers, n_units, typ
            for param in self.parameters():
                param.data.uniform_(-0.5, 0.5)

        def step(self, state, x):
            if state is None:
                z = torch.zeros(x.size(0), self.n_units, dtype=self.lo.weight.dtype)
                state = {"h": [z] * self.n_layers, "c": [z] * self.n_layers}
            h, c = [None] * self.n_layers, [None] * self.n_layers
            inp = self.embed(x)
            for n in range(self.n_layers):
                if self.typ == "lstm":
                    h[n], c[n] = self.rnn[n](inp, (state["h"][n], state["c"][n]))
                else:
                    h[n] = self.rnn[n](inp, state["h"][n])
                inp = h[n]
            return {"h": h, "c": c}, self.lo(h[-1])

        def forward(self, x):
            state, out = None, []
            for t in range(x.size(1)):
                state, y = self.step(state, x[:, t])
                out.append(y.log_softmax(-1))
            return torch.stack(out, 1)

    class ClassifierWithState(nn.Module):
        def __init__(self, predictor):
            super().__init__()
            self.predictor = predictor

        def forward(self, x):
            return self.predictor(x)
    return RNNLM, ClassifierWithState


def torch_logprobs(model, inputs, targets):
    """ln p(targets[t] | inputs[:t+1]) by the model's own forward in float64 (batch 1, batch_first)."""
    torch = require_torch()
    m = model.double().eval()
    with torch.no_grad():
        lp = m(torch.tensor([inputs]))[0]
    return np.array([float(lp[t, y]) for t, y in enumerate(targets)])


def save(obj, name):
    torch = require_torch()
    path = os.path.join(tempfile.mkdtemp(dir=TMP), name)
    torch.save(obj, path)
    return path


def convert(*args):
    out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
    return out, pyutil.convert(*[a if isinstance(a, str) else str(a) for a in args[:1]], out, *args[1:])


def refused(testcase, r, *needles):
    testcase.assertEqual(r.returncode, 1, r.stderr)
    lines = r.stderr.splitlines()
    testcase.assertEqual(len(lines), 1, r.stderr)
    testcase.assertTrue(lines[0].startswith("lstmlm-convert: error: "), r.stderr)
    for n in needles:
        testcase.assertIn(n, lines[0])
    return lines[0]


_READS_V4 = {}


def reads_v4(outdir):
    """True when this lstmlm loads the v4 directory; False (the reason kept) when it is older than the v4 loader."""
    if "ok" not in _READS_V4:
        r = pyutil.run_lstmlm("info", "-m", outdir)
        _READS_V4["ok"] = r.returncode == 0
        _READS_V4["why"] = r.stderr.strip()
    return _READS_V4["ok"]


def word_copy(outdir):
    """The directory with the same weights, vocabulary and special tokens under a word tokenizer (format v1-v3),
    which any build reads: the ids and numbers are the same, only text tokenization differs."""
    cfg = pyutil.read_config(outdir)
    d = os.path.join(tempfile.mkdtemp(dir=TMP), "word")
    os.makedirs(d)
    for name in ("vocab.json", "weights.safetensors"):
        shutil.copy(os.path.join(outdir, name), d)
    t = cfg["tokenizer"]
    cfg["tokenizer"] = {"type": "word", "lowercase": False, "filters": "",
                        **{k: t.get(k) for k in ("unk_token", "eos_token", "bos_token", "pad_id")}}
    cfg["format_version"] = 3 if any(l.get("cell", "lstm") != "lstm" for l in cfg["layers"]) else 1
    with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return d


def score_ids(testcase, outdir, ids):
    """[ln p] of each scored token of the id line (the start token predicts the first, the end token scored
    last) by `lstmlm score --ids`, on the v4 directory when the build reads it, else on its word copy."""
    model = outdir if reads_v4(outdir) else word_copy(outdir)
    rec = score_line(testcase, model, " ".join(str(i) for i in ids), "--ids", "-v", "word")
    return [w["id"] for w in rec["words"]], np.array([w["logprob"] for w in rec["words"]])


def score_line(testcase, model, line, *options):
    """The first jsonl record of `lstmlm score` over one line given on stdin."""
    r = subprocess.run([pyutil.require_cli(), "score", "-m", model, "--output-format", "jsonl", *options],
                       input=line + "\n", capture_output=True, text=True)
    testcase.assertEqual(r.returncode, 0, r.stderr)
    return json.loads(r.stdout.splitlines()[0])


def require_v4(testcase, outdir):
    if not reads_v4(outdir):
        print(f"SKIP: this lstmlm does not read format v4 yet: {_READS_V4['why']}", file=sys.stderr)
        testcase.skipTest(f"this lstmlm does not read format v4 yet ({_READS_V4['why']})")


class IcefallTest(unittest.TestCase):
    def make(self, E, H, layers, tied, seed, training_checkpoint=True, vocab_size=None):
        torch = require_torch()
        path, sp = train_spm("icefall")
        torch.manual_seed(seed)
        model = icefall_model_class(torch)(vocab_size or sp.GetPieceSize(), E, H, layers, tie_weights=tied)
        if training_checkpoint:
            # icefall.checkpoint.save_checkpoint: the state_dict under "model", the optimizer's, and the training
            # params as keys of their own (train.py's get_params(): sos_id = eos_id = 1, blank_id 0, Path values).
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": None,
                    "grad_scaler": None, "sampler": None, "sos_id": 1, "eos_id": 1, "blank_id": 0,
                    "best_train_loss": float("inf"), "exp_dir": pathlib.Path("rnn_lm/exp"),
                    "lm_data": pathlib.PurePosixPath("data/lm_training_bpe_500/sorted_lm_data.pt"),
                    "env_info": {"k2-version": "1.24", "torch-cuda-available": False}, "cur_epoch": 3}
        else:  # rnn_lm/export.py
            ckpt = {"model": model.state_dict()}
        return model, save(ckpt, "epoch-3.pt" if training_checkpoint else "pretrained.pt"), path, sp

    def check(self, model, ckpt, spm_path, sp):
        out, r = convert(ckpt, "--sentencepiece", spm_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tokenizer sentencepiece", r.stderr)
        self.assertIn("icefall's sos_id 1 and eos_id 1", r.stderr)
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["format_version"], 4)
        self.assertEqual(cfg["tokenizer"], {"type": "sentencepiece", "model": "tokenizer.model", "lowercase": False,
                                            "unk_token": "<unk>", "eos_token": "<sos/eos>", "bos_token": "<sos/eos>"})
        self.assertEqual(cfg["source"]["recipe"], "icefall rnn_lm RnnLmModel")
        self.assertEqual(pyutil.read_vocab(out), pieces_of(sp))
        with open(os.path.join(out, "tokenizer.model"), "rb") as f, open(spm_path, "rb") as g:
            self.assertEqual(f.read(), g.read())
        pyutil.require_cli()
        ids = sp.encode("the new show is racing to exploit the telephone")
        got_ids, got = score_ids(self, out, ids)
        self.assertEqual(got_ids, ids + [1])
        want = torch_logprobs(model, [1] + ids, ids + [1])  # icefall: x = sos + tokens, y = tokens + eos
        np.testing.assert_allclose(got, want, atol=TOL)
        return out

    def test_training_checkpoint_untied_two_layers(self):
        model, ckpt, spm_path, sp = self.make(8, 12, 2, False, seed=1)
        self.check(model, ckpt, spm_path, sp)

    def test_exported_checkpoint_tied(self):
        model, ckpt, spm_path, sp = self.make(10, 10, 1, True, seed=2, training_checkpoint=False)
        out = self.check(model, ckpt, spm_path, sp)
        self.assertTrue(pyutil.read_config(out)["output"]["tied"])

    def test_text_is_scored_through_the_sentencepiece_model(self):
        model, ckpt, spm_path, sp = self.make(8, 12, 1, False, seed=3)
        out = self.check(model, ckpt, spm_path, sp)
        require_v4(self, out)
        text = "consumers may want to move their telephones a little closer"
        rec = score_line(self, out, text, "-v", "sentence")
        ids = sp.encode(text)
        want = torch_logprobs(model, [1] + ids, ids + [1])
        self.assertAlmostEqual(rec["logprob"], float(want.sum()), delta=TOL * len(want))
        self.assertEqual(rec["tokens"], len(ids) + 1)

    def test_refusals(self):
        model, ckpt, spm_path, sp = self.make(8, 8, 1, False, seed=4, vocab_size=100)
        refused(self, convert(ckpt, "--sentencepiece", spm_path)[1], "120 pieces", "100 outputs")
        refused(self, convert(ckpt)[1], "holds no vocabulary", "--sentencepiece")
        model, ckpt, spm_path, sp = self.make(8, 8, 1, False, seed=4)
        refused(self, convert(ckpt, "--sentencepiece", pyutil.data("corpora-ptb", "ptb.valid.txt"))[1],
                "not a SentencePiece model")
        refused(self, convert(ckpt, "--sentencepiece", os.path.dirname(spm_path))[1], "is a directory")
        fifo = os.path.join(tempfile.mkdtemp(dir=TMP), "bpe.model")
        os.mkfifo(fifo)  # never opened for writing: a blocking read would hang the conversion
        refused(self, convert(ckpt, "--sentencepiece", fifo)[1], "is a FIFO")
        refused(self, convert(ckpt, "--sentencepiece", spm_path + ".missing")[1], "not found")
        refused(self, convert(ckpt, "--sentencepiece", spm_path, "--bpe")[1], "exclude each other")
        refused(self, convert(ckpt, "--sentencepiece", spm_path, "--filters", "!")[1], "--filters does not apply")
        refused(self, convert(ckpt, "--sentencepiece", spm_path, "--eos", "</s>")[1], "not a piece")
        # a vocabulary of another size than the pieces, both named
        tokens = os.path.join(tempfile.mkdtemp(dir=TMP), "tokens.txt")
        with open(tokens, "w", encoding="utf-8") as f:
            f.write("".join(f"{p} {i}\n" for i, p in enumerate(pieces_of(sp)[:-1])))
        refused(self, convert(ckpt, "--sentencepiece", spm_path, "--vocab", tokens)[1], "119 ids", "120 pieces")

    def test_tokens_txt_is_the_pieces(self):
        """icefall's tokens.txt (`piece id` lines, generate_tokens) agrees with its bpe.model id for id."""
        model, ckpt, spm_path, sp = self.make(8, 8, 1, False, seed=5)
        tokens = os.path.join(tempfile.mkdtemp(dir=TMP), "tokens.txt")
        with open(tokens, "w", encoding="utf-8") as f:
            f.write("".join(f"{p} {i}\n" for i, p in enumerate(pieces_of(sp))))
        out, r = convert(ckpt, "--sentencepiece", spm_path, "--vocab", tokens)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(pyutil.read_vocab(out), pieces_of(sp))
        out, r = convert(ckpt, "--vocab", tokens)  # the token list alone: a word model of the pieces
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg = pyutil.read_config(out)
        self.assertEqual((cfg["tokenizer"]["type"], cfg["tokenizer"]["bos_token"], cfg["tokenizer"]["eos_token"]),
                         ("word", "<sos/eos>", "<sos/eos>"))


class EspnetTest(unittest.TestCase):
    def token_list(self, sp):
        """asr.sh: <blank>, <unk>, the .vocab's pieces after <unk> <s> </s>, <sos/eos>."""
        return ["<blank>", "<unk>"] + pieces_of(sp)[3:] + ["<sos/eos>"]

    def config(self, tokens, **lm_conf):
        import yaml
        path = os.path.join(tempfile.mkdtemp(dir=TMP), "config.yaml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({"lm": "seq_rnn", "lm_conf": lm_conf, "token_type": "bpe",
                            "bpemodel": "data/en_token_list/bpe_unigram120/bpe.model", "token_list": tokens}, f)
        return path

    def espnet2(self, rnn_type, seed, tied=False):
        torch = require_torch()
        path, sp = train_spm("espnet")
        tokens = self.token_list(sp)
        SequentialRNNLM, ESPnetLanguageModel = espnet2_model_class(torch)
        torch.manual_seed(seed)
        model = ESPnetLanguageModel(SequentialRNNLM(len(tokens), unit=12, nlayers=2, rnn_type=rnn_type,
                                                    tie_weights=tied))
        return model, save(model.state_dict(), "valid.loss.ave.pth"), path, sp, tokens

    def test_espnet2_with_its_sentencepiece_model(self):
        model, ckpt, spm_path, sp, tokens = self.espnet2("lstm", seed=1)
        cfg_path = self.config(tokens, unit=12, nlayers=2, rnn_type="lstm")
        out, r = convert(ckpt, "--vocab", cfg_path, "--sentencepiece", spm_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("moved to the ids of their pieces", r.stderr)
        cfg = pyutil.read_config(out)
        self.assertEqual(pyutil.read_vocab(out), pieces_of(sp))
        # <sos/eos>'s rows go to </s>, the piece no token names (and <blank>'s to <s>)
        self.assertEqual({k: cfg["tokenizer"].get(k) for k in ("unk_token", "bos_token", "eos_token")},
                         {"unk_token": "<unk>", "bos_token": "</s>", "eos_token": "</s>"})
        self.assertEqual(cfg["source"]["recipe"], "espnet2 SequentialRNNLM")
        pyutil.require_cli()
        text = "the syndicated reality show records viewers opinions"
        pids = sp.encode(text)
        got_ids, got = score_ids(self, out, pids)
        self.assertEqual(got_ids, pids + [sp.eos_id()])
        mids = [tokens.index(sp.IdToPiece(i)) for i in pids]  # the model's own ids
        sos = len(tokens) - 1
        want = torch_logprobs(model, [sos] + mids, mids + [sos])
        np.testing.assert_allclose(got, want, atol=TOL)
        if reads_v4(out):
            rec = score_line(self, out, text, "-v", "sentence")
            self.assertAlmostEqual(rec["logprob"], float(want.sum()), delta=TOL * len(want))

    def test_espnet2_token_list_alone_gru(self):
        model, ckpt, spm_path, sp, tokens = self.espnet2("gru", seed=2)
        out, r = convert(ckpt, "--vocab", self.config(tokens, rnn_type="gru"))
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg = pyutil.read_config(out)
        self.assertEqual(pyutil.read_vocab(out), tokens)
        self.assertEqual({k: cfg["tokenizer"].get(k) for k in ("unk_token", "bos_token", "eos_token")},
                         {"unk_token": "<unk>", "bos_token": "<sos/eos>", "eos_token": "<sos/eos>"})
        self.assertEqual(cfg["layers"][0]["cell"], "gru")
        pyutil.require_cli()
        ids = [5, 17, 40, 3, 99, 2]
        got_ids, got = score_ids(self, out, ids)
        sos = len(tokens) - 1
        self.assertEqual(got_ids, ids + [sos])
        np.testing.assert_allclose(got, torch_logprobs(model, [sos] + ids, ids + [sos]), atol=TOL)

    def test_espnet2_refusals(self):
        model, ckpt, spm_path, sp, tokens = self.espnet2("lstm", seed=3)
        refused(self, convert(ckpt, "--sentencepiece", spm_path)[1], "--vocab", "token list")
        refused(self, convert(ckpt, "--vocab", self.config(tokens[:-1]), "--sentencepiece", spm_path)[1],
                f"{len(tokens) - 1} ids", f"{len(tokens)} pieces")
        wrong = list(tokens)
        wrong[7] = "zzz-not-a-piece"
        refused(self, convert(ckpt, "--vocab", self.config(wrong), "--sentencepiece", spm_path)[1],
                "'zzz-not-a-piece' (id 7) is not a piece")
        big = self.config(tokens)
        with open(big, "a", encoding="utf-8") as f:  # a comment past the bound: refused before YAML parses it
            f.write("#" + "x" * (4 << 20) + "\n")
        refused(self, convert(ckpt, "--vocab", big, "--sentencepiece", spm_path)[1], "bytes, more than the 4194304")

    def espnet1(self, typ, seed):
        torch = require_torch()
        RNNLM, ClassifierWithState = espnet1_model_class(torch)
        units = sorted(set("".join(corpus_lines(50)).replace(" ", "")))
        units = ["<unk>", "<space>"] + units
        path = os.path.join(tempfile.mkdtemp(dir=TMP), "train_units.txt")
        with open(path, "w", encoding="utf-8") as f:  # data/lang_1char/train_nodev_units.txt: `token id`, from 1
            f.write("".join(f"{u} {i}\n" for i, u in enumerate(units, 1)))
        torch.manual_seed(seed)
        model = ClassifierWithState(RNNLM(len(units) + 2, 2, 10, typ))
        return model, save(model.state_dict(), "rnnlm.model.best"), path, units

    def test_espnet1_lstmcell_and_grucell(self):
        for typ, seed in (("lstm", 4), ("gru", 5)):
            with self.subTest(typ=typ):
                model, ckpt, units_path, units = self.espnet1(typ, seed)
                out, r = convert(ckpt, "--vocab", units_path)
                self.assertEqual(r.returncode, 0, r.stderr)
                vocab = pyutil.read_vocab(out)
                # <blank> 0 and <eos> last as the recipe adds them; ESPnet's <space> is the char model's " "
                self.assertEqual(vocab, ["<blank>"] + [" " if u == "<space>" else u for u in units] + ["<eos>"])
                cfg = pyutil.read_config(out)
                self.assertEqual({k: cfg["tokenizer"][k] for k in ("type", "unk_token", "bos_token", "eos_token")},
                                 {"type": "char", "unk_token": "<unk>", "bos_token": "<eos>", "eos_token": "<eos>"})
                self.assertEqual(cfg["source"]["recipe"], "espnet1 RNNLM (ClassifierWithState)")
                pyutil.require_cli()
                text = "the new show"
                ids = [vocab.index(c) for c in text]
                eos = len(vocab) - 1
                want = torch_logprobs(model, [eos] + ids, ids + [eos])
                got_ids, got = score_ids(self, out, ids)
                self.assertEqual(got_ids, ids + [eos])
                np.testing.assert_allclose(got, want, atol=TOL)
                rec = score_line(self, out, text, "-v", "sentence")  # the char tokenizer reads the spaces
                self.assertEqual(rec["tokens"], len(ids) + 1)
                self.assertAlmostEqual(rec["logprob"], float(want.sum()), delta=TOL * len(want))


class Espnet1Gaps(unittest.TestCase):
    def test_a_units_file_with_a_gap_is_refused(self):
        model, ckpt, units_path, units = EspnetTest.espnet1(self, "lstm", 6)
        with open(units_path, "w", encoding="utf-8") as f:  # the third unit's id skipped
            f.write("".join(f"{u} {i + (i >= 3)}\n" for i, u in enumerate(units, 1)))
        out, r = convert(ckpt, "--vocab", units_path)
        refused(self, r, "without a gap", "id 3 is missing")


class BpeTest(unittest.TestCase):
    def test_pre_split_bpe_vocabulary(self):
        torch = require_torch()
        vocab = ["<pad>", "</s>", "<unk>", "the", "qu@@", "ick", "br@@", "own", "fo@@", "x", "jump@@", "s"]
        torch.manual_seed(6)
        emb, rnn, dec = torch.nn.Embedding(len(vocab), 6), torch.nn.LSTM(6, 7, 1), torch.nn.Linear(7, len(vocab))
        sd = {"encoder.weight": emb.weight, **{f"rnn.{k}": v for k, v in rnn.state_dict().items()},
              "decoder.weight": dec.weight, "decoder.bias": dec.bias}
        ckpt = save({"model": {k: v.detach() for k, v in sd.items()}, "vocab": vocab}, "bpe_lm.pt")
        out, r = convert(ckpt, "--bpe")
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg = pyutil.read_config(out)
        self.assertEqual(cfg["format_version"], 4)
        self.assertEqual(cfg["tokenizer"], {"type": "bpe", "continuation": "@@", "lowercase": False,
                                            "unk_token": "<unk>", "eos_token": "</s>"})
        self.assertEqual(pyutil.read_vocab(out), vocab)
        self.assertEqual(sorted(os.listdir(out)), ["config.json", "vocab.json", "weights.safetensors"])
        refused(self, convert(ckpt, "--bpe", "--bpe-continuation", "##")[1], "ends with the continuation")
        refused(self, convert(ckpt, "--bpe-continuation", "@@")[1], "--bpe-continuation applies with --bpe only")
        refused(self, convert(ckpt, "--bpe", "--tokenizer", "word")[1], "--tokenizer does not apply")
        pyutil.require_cli()
        ids = [3, 4, 5, 6, 7, 8, 9]
        got_ids, got = score_ids(self, out, ids)
        self.assertEqual(got_ids, ids + [1])
        seq = torch.tensor([[1] + ids]).T  # eos starts the line (no bos), batch 1, time first
        with torch.no_grad():
            m = [x.double() for x in (emb, rnn, dec)]
            lp = m[2](m[1](m[0](seq))[0]).log_softmax(-1)[:, 0]
        want = np.array([float(lp[t, y]) for t, y in enumerate(ids + [1])])
        np.testing.assert_allclose(got, want, atol=TOL)


class MissingSentencepieceTest(unittest.TestCase):
    def test_one_line_naming_the_package(self):
        _, ckpt, spm_path, _ = IcefallTest().make(4, 4, 1, False, seed=7, training_checkpoint=False)
        code = ("import runpy, sys; sys.modules['sentencepiece'] = None; sys.argv = ['convert.py'] + sys.argv[1:]; "
                f"runpy.run_path({os.path.join(pyutil.TOOLS, 'convert.py')!r}, run_name='__main__')")
        out = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
        r = subprocess.run([sys.executable, "-c", code, ckpt, out, "--sentencepiece", spm_path], capture_output=True,
                           text=True, timeout=120)
        line = refused(self, r, "apt-get install python3-sentencepiece")
        self.assertIn("sentencepiece is not installed", line)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
