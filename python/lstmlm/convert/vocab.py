"""Vocabulary files in the forms real models ship with, recognised by content.

load_vocab(path) returns a Vocab: `tokens` indexed by id (None for an id the file does not name), a guess
of word vs char tokenization, and the tokenizer settings the file states (Keras Tokenizer: lower, filters,
oov_token, pad id 0). complete(vocab, V) turns it into the exact list of V strings a model directory needs.

Forms: Keras Tokenizer pickle (restricted unpickler, stub class), Keras Tokenizer JSON (to_json()),
Keras word_index JSON (also {"wordIndex": {...}}), char-rnn chars_vocab.pkl ((chars, {char: id}) or a
bare tuple of chars), JSON id maps (token -> id or id -> token), JSON array of strings, plain token lists
(one per line), "token id" lines (icefall's tokens.txt, ESPnet1's train_units.txt, Kaldi's words.txt), an ESPnet2
config.yaml's token_list, and word_language_model's dictionary rebuilt from its corpus files (corpus_vocab()).
"""
import dataclasses
import io
import json
import os
import re

from ..format import MAX_VOCAB_SIZE

from . import contained, unpickle
from .unpickle import brief

# keras.preprocessing.text.Tokenizer's default `filters` (also text_to_word_sequence's).
KERAS_DEFAULT_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


class VocabError(ValueError):
    """A vocabulary file that cannot be used; the message names the file and what was expected."""


@dataclasses.dataclass
class Vocab:
    tokens: list                      # index = id; None where the file names no token for that id
    form: str                         # which form was recognised (recorded in the model's provenance)
    path: str = ""
    keras: bool = False               # a Keras Tokenizer's ids: 0 is reserved for padding
    kind: str = None                  # "word" / "char" when the file says so, else guessed by kind_guess()
    lowercase: bool = None            # None = the file does not say
    filters: str = None
    split: str = None                 # Keras Tokenizer split (word models); None = whitespace, str.split()
    unk_token: str = None
    num_words: int = None             # Keras Tokenizer num_words: ids >= it are out of vocabulary
    notes: list = dataclasses.field(default_factory=list)
    convention: str = None            # "espnet": <blank> 0, <unk> 1, sos = eos = the last id (an ESPnet token list)

    def kind_guess(self):
        if self.kind:
            return self.kind
        special = ESPNET_SPECIALS if self.convention == "espnet" else ()
        real = [t for t in self.tokens if t is not None and t != self.unk_token and t not in special]
        return "char" if real and all(len(t) == 1 for t in real) else "word"


# ESPnet token lists' own symbols: CTC's <blank> (id 0), <unk>, sos/eos (the last id), never text.
ESPNET_SPECIALS = ("<blank>", "<unk>", "<sos/eos>", "<eos>")
# ESPnet's char tokenizer writes a space as this symbol (space_symbol="<space>"); a char model reads " ".
ESPNET_SPACE = "<space>"


def espnet_char_spaces(v):
    """An ESPnet char token list (every token one character but its specials and <space>) with <space> renamed
    " ", the character lstmlm's char tokenizer gives it; any other list unchanged."""
    toks = [t for t in v.tokens if t is not None and t not in ESPNET_SPECIALS]
    if ESPNET_SPACE in toks and " " not in toks and all(len(t) == 1 for t in toks if t != ESPNET_SPACE):
        v.tokens = [" " if t == ESPNET_SPACE else t for t in v.tokens]
        v.notes.append("ESPnet char token list: <space> written as ' ' (ESPnet's space_symbol), the character a "
                       "char tokenizer reads")
    return v


# A {token: id} map becomes a list indexed by id, so an id decides an allocation: ids may leave a few
# holes (unused ids get placeholders) but not more than this many beyond the number of tokens.
ID_HOLES_ALLOWED = 1 << 16


def _from_id_map(mapping, path, form):
    """{token: id} -> Vocab with holes where ids are unused; ids must be distinct non-negative ints."""
    by_id = {}
    id_limit = min(len(mapping) + ID_HOLES_ALLOWED, MAX_VOCAB_SIZE)
    for tok, i in mapping.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise VocabError(f"{path}: id of token {brief(tok)} is {brief(i)}, expected a non-negative integer")
        if not isinstance(tok, str):
            raise VocabError(f"{path}: token {brief(tok)} with id {i} is not a string")
        if i >= id_limit:
            raise VocabError(f"{path}: token {brief(tok)} has id {i}, but the file names {len(mapping)} "
                             f"tokens: ids must stay below {id_limit} (lstmlm reads at most {MAX_VOCAB_SIZE})")
        if i in by_id:
            raise VocabError(f"{path}: tokens {brief(by_id[i])} and {brief(tok)} share id {i}")
        by_id[i] = tok
    n = max(by_id) + 1 if by_id else 0
    return Vocab([by_id.get(i) for i in range(n)], form, path)


def _from_list(tokens, path, form):
    seen = {}
    for i, t in enumerate(tokens):
        if not isinstance(t, str):
            raise VocabError(f"{path}: entry {i} is {brief(t)}, expected a string token")
        if t in seen:
            raise VocabError(f"{path}: token {brief(t)} appears twice (ids {seen[t]} and {i})")
        seen[t] = i
    return Vocab(list(tokens), form, path)


def _keras_tokenizer(state, path, form):
    """Vocab of a Keras Tokenizer, from its attribute dict (pickle) or its to_json() config."""
    word_index = state.get("word_index")
    if isinstance(word_index, str):  # to_json() stores the dicts as JSON strings
        word_index = json.loads(word_index)
    if not isinstance(word_index, dict):
        raise VocabError(f"{path}: Keras Tokenizer without a word_index dict")
    _check_tokenizer_fields(state, path)
    v = _from_id_map(word_index, path, form)
    v.keras = True
    v.kind = "char" if state.get("char_level") else "word"
    v.lowercase = bool(state.get("lower", True))
    v.filters = state.get("filters", KERAS_DEFAULT_FILTERS) or ""
    v.unk_token = state.get("oov_token")
    v.num_words = state.get("num_words")
    # text_to_word_sequence cuts at `split` only (default " "): U+200A or a tab stay inside a word.
    v.split = state.get("split", " ") if v.kind == "word" else None
    if v.split == "":
        raise VocabError(f"{path}: Keras Tokenizer split is '', which Keras cannot split on")
    if v.unk_token is not None and word_index.get(v.unk_token) is None:
        raise VocabError(f"{path}: oov_token {v.unk_token!r} is not in the word_index")
    return v


# Keras Tokenizer fields that reach config.json or decide ids, and the types Keras gives them (None allowed).
_TOKENIZER_FIELD_TYPES = {"filters": (str, "a string"), "lower": (int, "a boolean"),
                          "char_level": (int, "a boolean"), "oov_token": (str, "a string"),
                          "num_words": (int, "a non-negative integer"), "split": (str, "a string")}


def _check_tokenizer_fields(state, path):
    """A field of the wrong type (filters=5) would be copied into config.json, which lstmlm then refuses."""
    for key, (want, what) in _TOKENIZER_FIELD_TYPES.items():
        val = state.get(key)
        if val is None:
            continue
        if not isinstance(val, want) or (key == "num_words" and (isinstance(val, bool) or val < 0)):
            raise VocabError(f"{path}: Keras Tokenizer {key} is {brief(val)}, expected {what} or null")


def _keras_word_index(mapping, path, form):
    v = _from_id_map(mapping, path, form)
    if v.tokens and v.tokens[0] is None:
        # A Keras Tokenizer's word_index: ids from 1. The file does not carry lower/filters; Keras's
        # defaults are the best guess (a word_index saved from another tokenizer needs the options).
        v.keras = True
        v.notes.append("word_index without tokenizer settings: Keras Tokenizer defaults assumed "
                       "(lower=True, default filters, split=' '); override with --no-lowercase / --filters / "
                       "--split")
        v.lowercase, v.filters, v.split = True, KERAS_DEFAULT_FILTERS, " "
    return v


def _from_json(obj, path):
    if isinstance(obj, list):
        return _from_list(obj, path, "json-list")
    if not isinstance(obj, dict):
        raise VocabError(f"{path}: JSON vocabulary must be an array of strings or an object")
    if obj.get("class_name") == "Tokenizer" and isinstance(obj.get("config"), dict):
        return _keras_tokenizer(obj["config"], path, "keras-tokenizer-json")
    for key in ("word_index", "wordIndex"):
        if key in obj and len(obj) <= 3:
            inner = obj[key]
            if isinstance(inner, str):
                inner = json.loads(inner)
            return _keras_word_index(inner, path, f"keras-word-index-json ({key})")
    if obj and all(isinstance(v, int) and not isinstance(v, bool) for v in obj.values()):
        return _keras_word_index(obj, path, "json-token-to-id")
    if obj and all(isinstance(v, str) for v in obj.values()):
        try:
            ids = {int(k): v for k, v in obj.items()}
        except ValueError:
            raise VocabError(f"{path}: JSON object maps strings to strings; expected token -> id or "
                             "id -> token") from None
        return _from_id_map({v: k for k, v in ids.items()} if len(set(ids.values())) == len(ids) else
                            _dup_error(path, ids), path, "json-id-to-token")
    raise VocabError(f"{path}: JSON object is neither token -> id nor id -> token (nor a Keras Tokenizer)")


def _dup_error(path, ids):
    raise VocabError(f"{path}: the same token appears under two ids")


def _from_pickle(obj, path):
    if isinstance(obj, unpickle.TokenizerStub):
        return _keras_tokenizer(obj.__dict__, path, f"keras-tokenizer-pickle ({obj._lstmlm_global})")
    # char-rnn-tensorflow: pickle.dump((chars, vocab), f) with vocab = {char: id}
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], dict) and \
            isinstance(obj[0], (tuple, list)):
        chars, ids = obj
        v = _from_list(list(chars), path, "char-rnn chars_vocab.pkl")
        if any(ids.get(c) != i for i, c in enumerate(chars)) or len(ids) != len(chars):
            raise VocabError(f"{path}: the char list and the char -> id dict disagree")
        return v
    if isinstance(obj, (tuple, list)):
        return _from_list(list(obj), path, "pickled token sequence")
    if isinstance(obj, dict):
        if obj and all(isinstance(k, int) for k in obj):
            return _from_id_map({t: i for i, t in obj.items()}, path, "pickled id -> token dict")
        return _from_id_map(obj, path, "pickled token -> id dict")
    raise VocabError(f"{path}: pickle holds a {type(obj).__name__}, not a vocabulary")


# "token id" per line: icefall's tokens.txt and ESPnet1's train_units.txt (ids from 1, <blank> 0 and <eos> added by
# the recipe), Kaldi's words.txt.
_TOKEN_ID_LINE = re.compile(r"(\S+) (0|[1-9][0-9]{0,9})")


def _token_id_lines(lines, path):
    """Vocab of "token id" lines, or None when the lines are not all of that form."""
    if not lines or not all(_TOKEN_ID_LINE.fullmatch(l) for l in lines):
        return None
    mapping = {}
    for n, l in enumerate(lines, 1):
        tok, i = l.split(" ")
        if tok in mapping:
            raise VocabError(f"{path}: line {n}: token {brief(tok)} appears twice (ids {mapping[tok]} and {i})")
        mapping[tok] = int(i)
    return _from_id_map(mapping, path, "token id lines")


ESPNET_CONFIG_MAX_BYTES = 4 << 20


def _espnet_config(text, path):
    """An ESPnet2 config.yaml (lm or asr training): its token_list, ids in order; <blank> 0, <unk> 1 and <sos/eos>
    last by the recipe's convention. Read with yaml.safe_load (python3-yaml): plain data only. PyYAML holds about
    250 bytes per input byte while it parses, so the text is bounded first: a real one (5,000 BPE units) is 100 KB."""
    if len(text) > ESPNET_CONFIG_MAX_BYTES:
        raise VocabError(f"{path}: {len(text)} bytes, more than the {ESPNET_CONFIG_MAX_BYTES} an ESPnet config.yaml "
                         "is read from (its token_list of 100,000 units is about 1 MB)")
    import yaml
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise VocabError(f"{path}: not valid YAML ({str(e).splitlines()[0][:200]})") from None
    tokens = obj.get("token_list") if isinstance(obj, dict) else None
    if not isinstance(tokens, list) or not tokens:
        raise VocabError(f"{path}: YAML without a token_list (an ESPnet config.yaml has one)")
    v = _from_list([str(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else t for t in tokens],
                   path, "espnet config.yaml token_list")
    v.convention = "espnet"
    v.unk_token = "<unk>" if "<unk>" in tokens else None
    return espnet_char_spaces(v)


def _from_text(text, path):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [l[:-1] if l.endswith("\r") else l for l in lines]
    if any(l.startswith("token_list:") for l in lines):
        return _espnet_config(text, path)
    v = _token_id_lines(lines, path)
    if v is not None:
        return v
    for n, l in enumerate(lines, 1):
        if l == "":
            raise VocabError(f"{path}: line {n} is empty; a token list has one token per line")
        if len(l.split()) > 1:
            raise VocabError(f"{path}: line {n} holds several words; a token list has one token per line "
                             "(for a word_language_model corpus use --corpus-dir)")
    return _from_list(lines, path, "token list (one per line)")


def load_vocab(path, root=None):
    """Reads any supported vocabulary file (see the module doc); raises VocabError naming the problem. A
    vocabulary found next to the model (root: the model's directory) must resolve inside it; one the user
    named may be anywhere. Either must be a regular file."""
    data = contained.read_contained(root, path, path)
    if data[:1] == b"\x80":  # pickle protocol >= 2
        try:
            obj = unpickle.loads(data, encoding="utf-8")
        except (unpickle.UnpicklingError, EOFError, ValueError, IndexError, KeyError, TypeError) as e:
            # RefusedGlobal (names the global) or a damaged pickle (truncated, bad opcode).
            raise VocabError(f"{path}: {e}") from None
        v = _from_pickle(obj, path)
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise VocabError(f"{path}: neither a pickle nor UTF-8 text") from None
        stripped = text.lstrip()
        obj = None
        if stripped[:1] in ("[", "{"):
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                obj = None
        v = _from_json(obj, path) if obj is not None else _from_text(text, path)
    v.path = path
    return v


def corpus_vocab(corpus_dir, files=("train.txt", "valid.txt", "test.txt")):
    """word_language_model's data.Corpus dictionary: every whitespace token in order of first occurrence over
    train, valid, test, with '<eos>' added after every line (that is where its id comes from)."""
    tokens, seen = [], set()
    for name in files:
        p = os.path.join(corpus_dir, name)
        if not os.path.exists(p):
            raise VocabError(f"{corpus_dir}: corpus file {name} is missing (word_language_model's dictionary "
                             f"is rebuilt from {', '.join(files)})")
        with io.TextIOWrapper(contained.open_contained(None, p, f"{corpus_dir}: corpus file {name}"),
                              encoding="utf8") as f:
            for line in f:
                for w in line.split() + ["<eos>"]:
                    if w not in seen:
                        seen.add(w)
                        tokens.append(w)
    v = Vocab(tokens, "word_language_model corpus (" + ", ".join(files) + ")", corpus_dir, kind="word")
    return v


# A Keras model has one output per Tokenizer id plus id 0, which the Tokenizer reserves (padding); apps
# size the Dense layer len(word_index) + 1, and some one more (keras3-ml-wordpred: 2,116 words, 2,118
# outputs). Outputs beyond that are another model's vocabulary far more often than unused ids.
KERAS_SPARE_OUTPUTS = 1


def _not_text(s):
    """(index, character) of the first lone surrogate in `s`, or None. JSON's "\\ud800" and a pickle's
    strings decode to one, but it is not Unicode text: no UTF-8 file (vocab.json, config.json) can hold it."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start, s[e.start]
    return None


def _check_text(v, tokens):
    """Refuses a token or tokenizer setting of `v` that is not Unicode text, naming the file and the entry
    (before any note is printed or file written)."""
    try:
        "".join(t for t in tokens if isinstance(t, str)).encode("utf-8")
        bad = None
    except UnicodeEncodeError:
        bad = next((i, t) for i, t in enumerate(tokens) if isinstance(t, str) and _not_text(t))
    fields = (("oov_token", v.unk_token), ("filters", v.filters), ("split", v.split))
    what, s = (f"token {bad[0]}", bad[1]) if bad else next(
        ((f"tokenizer {f}", s) for f, s in fields if isinstance(s, str) and _not_text(s)), (None, None))
    if what is not None:
        at, c = _not_text(s)
        raise VocabError(f"{v.path}: {what} {brief(s)} holds a lone surrogate (U+{ord(c):04X} at character {at}): "
                         "not Unicode text, which vocab.json and config.json are (UTF-8)")


def complete(v, size, where, allow_mismatch=False):
    """The final list of `size` token strings for a model with `size` outputs.

    Keras: id 0 becomes "<pad>"; ids the Tokenizer does not use below `size` become "<unused:N>" (models
    often have a few more outputs than words); words with ids >= num_words are dropped, as Keras's
    texts_to_sequences drops them (or maps them to oov_token). A Tokenizer whose ids do not fit the model
    (ids >= size without num_words, or more than KERAS_SPARE_OUTPUTS outputs beyond id 0 and its ids) is
    refused unless `allow_mismatch`: then words with ids >= size are dropped. Other forms must have
    exactly `size` ids (ids missing inside a {token: id} map get placeholders too).
    """
    tokens = list(v.tokens)
    _check_text(v, tokens)
    limit = size
    if v.keras and v.num_words:
        limit = min(limit, int(v.num_words))
    if v.keras and not allow_mismatch:
        needed = len(tokens) if not v.num_words else min(len(tokens), int(v.num_words))
        if needed > size or size - needed > KERAS_SPARE_OUTPUTS:
            words = sum(1 for t in tokens[:needed] if t is not None)
            effect = (f"{needed - size} ids would be dropped" if needed > size
                      else f"{size - needed} outputs would have no word")
            raise VocabError(
                f"{v.path}: the Keras Tokenizer has {words} words (ids 1..{needed - 1}, 0 reserved) but "
                f"{where} has {size} outputs ({effect}): is it this model's vocabulary? "
                "(--allow-vocab-mismatch converts anyway)")
    if len(tokens) != size and not v.keras:
        # Only a Keras Tokenizer legitimately leaves outputs unnamed (id 0, ids past num_words); any other
        # form of a different length is the wrong vocabulary file for this model.
        raise VocabError(f"{v.path}: vocabulary has {len(tokens)} ids but {where} has {size} outputs "
                         f"(is it this model's vocabulary?)")
    tokens = tokens[:limit] + [None] * (size - min(len(tokens), limit))
    tokens = tokens[:size]
    names = set(t for t in tokens if t is not None)
    for i, t in enumerate(tokens):
        if t is None:
            name = "<pad>" if (v.keras and i == 0) else f"<unused:{i}>"
            while name in names:
                name = f"<unused:{i}>" if name == "<pad>" else name + "'"
            tokens[i] = name
            names.add(name)
    if v.unk_token is not None and v.unk_token not in names:
        raise VocabError(f"{v.path}: unk token {v.unk_token!r} falls outside the model's {size} ids")
    return tokens


def vocab_source(source, v, guessed):
    """config.json's `source` with where the vocabulary came from: its form and file, the special tokens
    guessed, and the vocabulary reader's notes after the source's own."""
    source = dict(source)
    source["vocab"] = {"form": v.form, "file": os.path.basename(v.path.rstrip("/")) if v.path else None}
    if guessed:
        source["guessed"] = guessed
    notes = list(source.get("notes", [])) + v.notes
    if notes:
        source["notes"] = notes
    return source
