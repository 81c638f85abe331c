"""lstmlm: LSTM language models exported from TensorFlow, Keras, PyTorch or ONNX, on the CPU.

    import lstmlm
    m = lstmlm.Model("models/fairytales-word", threads=2)
    print(m.score("the old man went to the mountains .", bos=True, eos=True))   # log10, as KenLM

Every number is the number `lstmlm score` / `predict` / `generate` prints for the same input (docs/python.md).
The GIL is released while the engine runs, so Python threads sharing one Model score in parallel.
"""
from collections import namedtuple as _namedtuple

# The compiled part. Without it (a source checkout, no build) the package still imports, so its pure-Python
# subpackages (lstmlm.convert, lstmlm.format) run; a name of the compiled part then raises ImportError saying
# how to build it (__getattr__ at the end).
try:
    from ._lstmlm import (Boost, Error, InputError, LineScore, ModelError, OutputError, ScoreSummary,  # noqa: F401
                          State, UsageError, __version__, kernels_for, line_jsonl)
    from ._lstmlm import _Mixture, _Model, _NgramModel
    _NOT_BUILT = None
except ImportError as _e:
    import importlib.util as _util
    import sys as _sys
    if isinstance(_e, ModuleNotFoundError) and _e.name == f"{__name__}._lstmlm":
        import glob as _glob
        import os as _os
        import re as _re
        _here = _os.path.dirname(_os.path.abspath(__file__))
        _built = sorted(_os.path.basename(p) for p in _glob.glob(_os.path.join(_here, "_lstmlm.*so")))
        if _built:
            # Built, but for another interpreter: its file name carries that interpreter's tag, which this
            # one does not load.
            _tag = _re.match(r"_lstmlm\.cpython-(\d)(\d+)", _built[0])
            _for = f"CPython {_tag.group(1)}.{_tag.group(2)}" if _tag else "another interpreter"
            _this = "%s %d.%d" % (_sys.implementation.name.replace("cpython", "CPython"), *_sys.version_info[:2])
            _NOT_BUILT = (f"the compiled module {_os.path.join(_here, _built[0])} was built for {_for}, and "
                          f"{_sys.executable} is {_this}: run the python3 it was built for (Debian's "
                          "/usr/bin/python3 for a default build), or build lstmlm for this interpreter "
                          f"(cmake -DPython_EXECUTABLE={_sys.executable})")
        else:
            _NOT_BUILT = ("the compiled module lstmlm._lstmlm is not built: build it with `cmake --build build` and "
                          "import lstmlm from the build tree (PYTHONPATH=build/python), or install it "
                          "(docs/python.md)")
    elif _util.find_spec("numpy") is None:
        # The compiled module needs numpy; the `lstmlm` command (the binary) and the converters' own check do
        # not, so the package still imports and says so in one line where the module is used.
        _NOT_BUILT = (f"the Python package numpy is not installed for {_sys.executable}: apt-get install "
                      "python3-numpy (or pip install numpy)")
    elif "numpy" in str(_e) or "numpy" in str(_e.__cause__ or _e.__context__ or ""):
        # A numpy the module cannot use (another major version than it was built against, a broken install):
        # the module's initialization failed on importing it, the cause chained.
        _why = str(_e.__cause__ or _e.__context__ or _e) or type(_e).__name__
        _where = _util.find_spec("numpy").origin
        _NOT_BUILT = (f"the compiled module cannot use the numpy of {_sys.executable} ({_where}): "
                      f"{_why.splitlines()[0]}; run the python3 it was "
                      "built for (Debian's /usr/bin/python3 with python3-numpy for a default build), or build "
                      "lstmlm for this interpreter and its numpy")
    else:
        raise
    _Model = _NgramModel = _Mixture = object  # Model, NgramModel and Mixture below are defined, then removed

__all__ = ["Model", "NgramModel", "Mixture", "State", "LineScore", "FullScore", "Candidate", "Hypothesis", "Boost", "Error", "ModelError", "InputError",
           "UsageError", "OutputError", "ScoreSummary", "kernels_for", "line_jsonl", "__version__"]

def _top(top):
    """`top` of predict and complete: None (every candidate) or an int >= 1; a float such as 1.5 is refused,
    not cut to 1."""
    if top is None:
        return 0
    if isinstance(top, bool) or not isinstance(top, int) and not hasattr(top, "__index__"):
        raise UsageError(f"top must be an int >= 1 or None, got {top!r}")
    n = top.__index__()
    if n < 0:
        raise UsageError(f"top must be >= 1 or None, got {top}")
    return n


# One predict candidate: the token, its id, p and ln p (the CLI's predict fields).
Candidate = _namedtuple("Candidate", ["token", "id", "prob", "logprob"])
# One beam-search hypothesis: the printed text (prompt and generated text), the generated ids, the model's
# total ln p, the search's score (length-normalised), each token's ln p, and whether it ended at eos.
Hypothesis = _namedtuple("Hypothesis", ["text", "ids", "logprob", "score", "logprobs", "stopped_at_eos"])


class FullScore(tuple):
    """One token of Model.full_scores: unpacks as KenLM's (log10 prob, ngram length, oov) triple, and
    carries the token itself as `.token`. The n-gram length of an LSTM is the tokens of context it has seen
    (the start token counted) + 1; a token that is not scored (a first token without a start token) has
    length 0 and log10 prob 0.0, as in `lstmlm score --output-format kenlm`."""

    def __new__(cls, log10prob, length, oov, token):
        self = super().__new__(cls, (log10prob, length, oov))
        self.token = token
        return self

    log10prob = property(lambda self: self[0])
    length = property(lambda self: self[1])
    oov = property(lambda self: self[2])

    def __repr__(self):
        return f"FullScore(log10prob={self[0]!r}, length={self[1]!r}, oov={self[2]!r}, token={self.token!r})"


class Model(_Model):
    """A model directory (config.json, vocab.json, weights.safetensors), loaded once, shared by threads.

    Model(path, threads=0, precision="fp32", *, pad_to=None, window=None, stateful=False, fold_embedding="auto")
      threads: engine threads per call (0: one per core); precision: "fp32", "bf16" or "int8";
      pad_to / window / stateful: the fixed input window of `lstmlm score --pad-to/--window/--stateful`
      (a model with input_length in config.json uses pad_to=input_length unless told otherwise);
      fold_embedding: "auto", "always" or "never", layer 0's input per token as a table (faster, more
      memory) or the embedding through W_ih (`--fold-embedding`).
    Raises ModelError (an OSError) naming the file and the field when the directory cannot be used.
    """

    def full_scores(self, sentence, bos=True, eos=True):
        """Per token (eos included when eos=True): FullScore(log10 prob, ngram length, oov), `.token`."""
        return iter([FullScore(*t) for t in self._full_scores(sentence, bos, eos)])

    def predict(self, context, top=10, prefix="", boost=None, *, softmax="full", **cache):
        """The `top` most probable next tokens (top=None: the whole vocabulary) as Candidate tuples
        (token, id, prob, logprob), best first. `context` is text (tokenized, the start token added, as
        `lstmlm predict`) or a sequence of token ids (ints or numpy integers, or a 1-D numpy integer array; fed
        exactly as given, as `lstmlm predict --ids`). Another kind of id is a UsageError, an id outside the
        vocabulary an InputError. prefix: the letters of the word being typed (`predict --prefix`): only
        words that start with them (a character model: completions of them to the next word boundary).
        boost: a Boost (Model.load_boost) applied to the distribution first (`predict --boost`).
        cache_window=W, cache_lambda=L, cache_theta=T: the neural cache over the context's own words
        (`predict --cache-window`). softmax="skip": ranked by the logits, no normaliser computed (`predict
        --softmax skip`): each Candidate's logprob is then the logit and its prob NaN."""
        rows = self._predict(context, _top(top), prefix, boost, None, softmax, **cache)
        return [Candidate(*r) for r in rows]

    def complete(self, state, prefix="", top=10, boost=None, history=None):
        """A keyboard's keystroke: the `top` completions of `prefix` after a State (the committed text, advanced
        word by word with BaseScore), from the distribution the State keeps: no engine call for a word model.
        boost: a Boost; history: the token ids before the state, for boosted phrases (single words need none).
        Candidate tuples, best first."""
        return [Candidate(*r) for r in self._complete(state, prefix, _top(top), boost, history)]

    def generate(self, prompt="", max_tokens=100, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                 repeat_penalty=1.0, repeat_last_n=64, seed=None, num_samples=1, stop_at_eos=None, oov="skip",
                 boost=None, *, beam_size=0, n_best=1, length_penalty=0.0, no_repeat_ngram=0, logit_bias=None,
                 allowed_words=None, regex=None, stop=None, **cache):
        """Samples text after `prompt` with `lstmlm generate`'s sampler: the same seed gives the CLI's text
        (the prompt, then the generated tokens). Returns a str, or a list of num_samples strs when
        num_samples > 1 (sample i is the same whatever num_samples). seed=None draws a random seed; the
        seed used is `last_seed` afterwards. The CLI's limits: max_tokens <= 1000000, num_samples <= 100000
        (UsageError beyond). Ctrl-C (SIGINT) stops it with KeyboardInterrupt. boost: a Boost applied to each
        step's distribution before sampling (`generate --boost`). logit_bias: {token or id: value}
        (`--logit-bias`); allowed_words: a list of words (`--allowed-words`); regex: a pattern the generated
        text matches (`--regex`); stop: a string or a list of them (`--stop`). beam_size K > 0: a beam search
        instead (`--beam-size`), returning the n_best texts (a str when n_best is 1); Model.beam_search gives
        their log-probs. cache_window=W, cache_lambda=L, cache_theta=T: the neural cache over the prompt and
        each sample (`generate --cache-window`)."""
        if beam_size:
            hyps = self.beam_search(prompt, max_tokens, beam_size, n_best, length_penalty, no_repeat_ngram,
                                    stop_at_eos, oov, boost, logit_bias=logit_bias, allowed_words=allowed_words,
                                    regex=regex, stop=stop, **cache)
            return hyps[0].text if n_best == 1 else [h.text for h in hyps]
        texts, used = self._generate(prompt, int(max_tokens), float(temperature), int(top_k), float(top_p),
                                     float(min_p), float(repeat_penalty), int(repeat_last_n), seed,
                                     int(num_samples), stop_at_eos, oov, boost, None, logit_bias, allowed_words,
                                     regex, stop, **cache)
        self.last_seed = used
        return texts[0] if num_samples == 1 else list(texts)

    def beam_search(self, prompt="", max_tokens=100, beam_size=4, n_best=1, length_penalty=0.0, no_repeat_ngram=0,
                    stop_at_eos=None, oov="skip", boost=None, *, logit_bias=None, allowed_words=None, regex=None,
                    stop=None, **cache):
        """`lstmlm generate --beam-size`: the n_best best of beam_size hypotheses after `prompt`, best first,
        as Hypothesis tuples (text, ids, logprob, score, logprobs, stopped_at_eos); logprob is the model's total
        ln p, score what the search ranks by (GNMT's length penalty ((5 + len) / 6)^length_penalty). The same
        result as the CLI's, for any thread count."""
        rows = self._beam_search(prompt, max_tokens, beam_size, n_best, float(length_penalty), no_repeat_ngram,
                                 stop_at_eos, oov, boost, None, logit_bias, allowed_words, regex, stop, **cache)
        return [Hypothesis(*r) for r in rows]

    def __repr__(self):
        return f"<lstmlm.Model {self.path!r} V={self.vocab_size} kernels={self.kernels}>"


class NgramModel(_NgramModel):
    """An ARPA n-gram model (plain or gzip), with KenLM's Python names: kenlm.Model(path) becomes
    lstmlm.NgramModel(path). score (log10), full_scores, perplexity, order, `word in model`: the numbers of
    `lstmlm score -m FILE.arpa` (docs/mixing.md). Raises ModelError naming the file and line of a malformed
    file."""

    def full_scores(self, sentence, bos=True, eos=True):
        """Per word (</s> included when eos=True): FullScore(log10 prob, ngram length, oov), `.token`."""
        return iter([FullScore(*t) for t in self._full_scores(sentence, bos, eos)])

    def __repr__(self):
        return f"<lstmlm.NgramModel {self.path!r} order={self.order}>"


class Mixture(_Mixture):
    """A word Model mixed token by token with ARPA and neural word models: Mixture(model, [(NgramModel, Model
    or path, weight), ...]) (a path: an ARPA file or a model directory),
    the model's weight 1 - the others' (`weights` lists all, the model's first); mode="loglinear" for
    `--mix-mode loglinear` (sentence mode only in scoring). score (log10), full_scores,
    perplexity and score_lines give the numbers of `lstmlm score --mix PATH:WEIGHT`; predict and generate
    those of `lstmlm predict/generate --mix PATH:WEIGHT` (docs/mixing.md)."""

    def full_scores(self, sentence, bos=True, eos=True):
        """Per token (eos included when eos=True): FullScore(log10 prob, ngram length, oov), `.token`."""
        return iter([FullScore(*t) for t in self._full_scores(sentence, bos, eos)])

    def predict(self, context, top=10, boost=None):
        """Model.predict on the mixture: the candidates' numbers are the mixture's; "<unk>" stands for every
        word the model lacks (`lstmlm predict --mix`)."""
        return [Candidate(*r) for r in self.model._predict(context, _top(top), "", boost, self)]

    def generate(self, prompt="", max_tokens=100, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                 repeat_penalty=1.0, repeat_last_n=64, seed=None, num_samples=1, stop_at_eos=None, oov="skip",
                 boost=None):
        """Model.generate sampling from the mixture (`lstmlm generate --mix`): the same seed gives the CLI's
        text. The seed used is `last_seed` afterwards."""
        texts, used = self.model._generate(prompt, int(max_tokens), float(temperature), int(top_k), float(top_p),
                                           float(min_p), float(repeat_penalty), int(repeat_last_n), seed,
                                           int(num_samples), stop_at_eos, oov, boost, self)
        self.last_seed = used
        return texts[0] if num_samples == 1 else list(texts)

    def __repr__(self):
        return f"<lstmlm.Mixture weights={self.weights!r}>"


if _NOT_BUILT is not None:
    del Model, NgramModel, Mixture
    _COMPILED = frozenset(__all__) - {"FullScore", "Candidate", "Hypothesis"} | {"_Model", "_lstmlm"}

    def __getattr__(name):
        if name in _COMPILED:
            raise ImportError(f"lstmlm.{name}: {_NOT_BUILT}", name=f"{__name__}._lstmlm")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
