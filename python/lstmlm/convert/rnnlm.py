"""Tomas Mikolov's RNNLM toolkit (rnnlm 0.3e/0.4b) model files, text (`file format: 0`) and binary
(`file format: 1`, `-binary`), plain or gzip: the header, the vocabulary with its classes, the sigmoid hidden
layer (weights 0->1: the one-hot word then the previous hidden state), the class and word output (weights 1->2:
the words then the classes), the direct connections' hash table (RNNME) and the hidden state saved with the model.

The model directory computes what rnnlm's -test computes (docs/model-format.md): a one-hot simple RNN with a
sigmoid, a class-factored output with rnnlm's hashed n-gram direct connections, rnnlm's exp approximation, the
saved hidden state as the state a reset starts from (a vector of ones for a model trained -independent, as rnnlm
resets it), `</s>` as the start and end token, an out-of-vocabulary input fed as no word (the zero one-hot).
Every error is one line naming the file and the line (text) or byte offset (binary)."""
import gzip
import os

import numpy as np

from ..format import names as tensor_names, rnn_layer, tokenizer as fmt_tokenizer
from .common import ConvertError

GZIP_MAGIC = b"\x1f\x8b"
# The header's fields this reader needs, as rnnlm writes them.
_FIELDS = ("version", "file format", "input layer size", "hidden layer size", "compression layer size",
           "output layer size", "direct connections", "direct order", "vocabulary size", "class size",
           "independent sentences mode")
# rnnlm 0.3e and 0.4b write version 10; older files lack fields this reader needs.
_VERSIONS = (10,)
# The direct connections' hash table: rnnlm allocates whatever the header says (a typo asks for terabytes);
# this reader and the lstmlm loader refuse more than 10^9 entries (4 GB as float32) before allocating.
MAX_DIRECT_SIZE = 10 ** 9
MAX_DIRECT_ORDER = 20  # rnnlm's MAX_NGRAM_ORDER
MAX_VOCAB = 1 << 28
MAX_WIDTH = 1 << 16


def _read_bytes(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConvertError(f"{path}: cannot read: {e.strerror or e}")
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, ValueError) as e:
            raise ConvertError(f"{path}: not a readable gzip file: {e}")
    return data


def add_arguments(p):
    """No rnnlm-specific options: the file holds everything its -test computes with."""


def detect(path):
    """True for a file whose first line is rnnlm's `version: N` (gzip too)."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            if head == GZIP_MAGIC:
                with gzip.open(f) as g:
                    first = g.read(64)
            else:
                first = f.read(64)
    except (OSError, EOFError, ValueError):
        return False
    return first.startswith(b"version: ")


class _Lines:
    """The text part of a file as lines, with 1-based line numbers for the errors."""

    def __init__(self, path, data):
        self.path, self.data, self.pos, self.line = path, data, 0, 1

    def fail(self, what, line=None):
        raise ConvertError(f"{self.path}: line {self.line if line is None else line}: {what}")

    def next(self, what):
        if self.pos >= len(self.data):
            self.fail(f"the file ends before {what}")
        end = self.data.find(b"\n", self.pos)
        end = len(self.data) if end < 0 else end
        text = self.data[self.pos:end].decode("utf-8", "surrogateescape").rstrip("\r")
        self.pos, self.line = end + 1, self.line + 1
        return text

    def until(self, label, after):
        """Skips blank lines to the line `label` (a section heading). Anything else there is a value the header
        did not count (`after`: what came before, for the message)."""
        while True:
            if self.pos >= len(self.data):
                self.fail(f"the file ends before the section {label!r} (truncated?)")
            text = self.next(label)
            if text == label:
                return
            if text.strip():
                self.fail(f"{text.strip()[:40]!r} where {label!r} was expected: more {after} than the header says?",
                          self.line - 1)

    def numbers(self, count, section):
        """`count` numbers, one a line, after the current line: float64 array. Parsed in bulk; the slow
        line-by-line pass runs only to name the line at fault."""
        parts = self.data[self.pos:].split(b"\n", count)
        if len(parts) >= count:
            try:
                out = np.array(parts[:count], dtype=np.bytes_).astype(np.float64)
            except ValueError:
                out = None
            if out is not None and np.all(np.isfinite(out)):
                self.pos = len(self.data) - (len(parts[count]) if len(parts) > count else 0)
                self.line += count
                return out
        return self._numbers_slowly(count, section)

    def _numbers_slowly(self, count, section):
        first = self.line
        out = np.empty(count, dtype=np.float64)
        for i in range(count):
            if self.pos >= len(self.data):
                self.fail(f"the file ends inside the section {section!r}: {i} of {count} values (truncated?)")
            text = self.next(section).strip()
            try:
                out[i] = float(text)
            except ValueError:
                out[i] = np.nan
            if not np.isfinite(out[i]):
                self.fail(f"{text[:40]!r} in the section {section!r} is not a finite number (value {i + 1} of "
                          f"{count}; the section starts at line {first})", self.line - 1)
        return out


def _header(lines):
    values = {}
    while True:
        text = lines.next("the vocabulary ('Vocabulary:')")
        if text == "Vocabulary:":
            break
        if ":" not in text:
            continue
        key, _, value = text.partition(":")
        values[key.strip()] = (value.strip(), lines.line - 1)
    missing = [k for k in _FIELDS if k not in values]
    if missing:
        lines.fail(f"the header has no {missing[0]!r} field before 'Vocabulary:' (not an rnnlm 0.3e/0.4b model?)")
    out = {}
    for key in _FIELDS:
        value, line = values[key]
        try:
            out[key] = int(value)
        except ValueError:
            lines.fail(f"header field {key!r} is {value[:40]!r}, expected an integer", line)
        out[key + " line"] = line
    return out


def _check_header(h, fail):
    def bad(key, what):
        fail(f"header field {key!r} is {h[key]}: {what}", h[key + " line"])

    if h["version"] not in _VERSIONS:
        bad("version", "this reader knows rnnlm's version 10 (0.3e, 0.4b)")
    if h["file format"] not in (0, 1):
        bad("file format", "expected 0 (text) or 1 (binary)")
    V, H, C = h["vocabulary size"], h["hidden layer size"], h["class size"]
    if not 1 <= V <= MAX_VOCAB:
        bad("vocabulary size", f"expected 1..{MAX_VOCAB}")
    if not 1 <= H <= MAX_WIDTH:
        bad("hidden layer size", f"expected 1..{MAX_WIDTH}")
    if not 1 <= C <= V:
        bad("class size", f"expected 1..{V} (the vocabulary size): lstmlm reads class-factored rnnlm models")
    if h["compression layer size"] != 0:
        bad("compression layer size", "a compression layer is not supported (only 0)")
    if h["input layer size"] != V + H:
        bad("input layer size", f"expected the vocabulary size + the hidden layer size, {V + H}")
    if h["output layer size"] != V + C:
        bad("output layer size", f"expected the vocabulary size + the class size, {V + C}")
    N, K = h["direct connections"], h["direct order"]
    if not 0 <= N <= MAX_DIRECT_SIZE:
        bad("direct connections", f"expected 0..{MAX_DIRECT_SIZE} hash entries (refused before allocating)")
    if N and N < 2 * C:
        bad("direct connections", f"expected at least twice the class size ({2 * C}) or 0")
    if N and not 1 <= K <= MAX_DIRECT_ORDER:
        bad("direct order", f"expected 1..{MAX_DIRECT_ORDER}")
    if h["independent sentences mode"] not in (0, 1):
        bad("independent sentences mode", "expected 0 or 1")


def _vocabulary(lines, V, C):
    words, classes, first = [], np.empty(V, dtype=np.int64), lines.line
    for i in range(V):
        if lines.pos >= len(lines.data):
            lines.fail(f"the file ends inside the vocabulary: {i} of {V} words (the header says 'vocabulary "
                       f"size: {V}')")
        text = lines.next("the vocabulary")
        parts = text.split()
        if len(parts) != 4:
            lines.fail(f"expected 'index count word class' ({len(parts)} fields; vocabulary entry {i} of {V}, "
                       f"the vocabulary starts at line {first})", lines.line - 1)
        try:
            index, cls = int(parts[0]), int(parts[3])
        except ValueError:
            lines.fail("the index and the class must be integers", lines.line - 1)
        if index != i:
            lines.fail(f"vocabulary index {index}, expected {i} (the header says 'vocabulary size: {V}')",
                       lines.line - 1)
        if not 0 <= cls < C:
            lines.fail(f"word {parts[2]!r} has class {cls}, outside 0..{C - 1} (class size {C})", lines.line - 1)
        words.append(parts[2])
        classes[i] = cls
    # rnnlm computes a class's words as one block of the output layer: each class's words must be contiguous.
    start = {}
    for i in range(V):
        c = int(classes[i])
        if c in start and classes[i - 1] != c:
            lines.fail(f"the words of class {c} are not contiguous (word {i} {words[i]!r} after word {start[c]}, "
                       f"with others between)", first + i)
        start.setdefault(c, i)
    return words, classes


def _binary(path, data, pos, counts):
    """float32 little-endian arrays of the given counts, from byte offset pos."""
    out = []
    for name, count in counts:
        end = pos + 4 * count
        if end > len(data):
            raise ConvertError(f"{path}: byte {len(data)}: the file ends inside {name!r} ({(len(data) - pos) // 4} "
                               f"of {count} float32 values; truncated?)")
        out.append(np.frombuffer(data, dtype="<f4", count=count, offset=pos).astype(np.float64))
        pos = end
    if pos != len(data):
        raise ConvertError(f"{path}: byte {pos}: {len(data) - pos} bytes after the direct connections (the header's "
                           "sizes disagree with the file)")
    return out


def read(path):
    """The model as a dict: header fields, words, classes and float64 arrays."""
    data = _read_bytes(path)
    lines = _Lines(path, data)
    if not data.startswith(b"version:"):
        lines.fail("not an rnnlm model file (it does not start with 'version:')", 1)
    h = _header(lines)
    _check_header(h, lines.fail)
    V, H, C, N = h["vocabulary size"], h["hidden layer size"], h["class size"], h["direct connections"]
    words, classes = _vocabulary(lines, V, C)
    if h["file format"] == 1:
        hidden, syn0, syn1, direct = _binary(path, data, lines.pos, [
            ("Hidden layer activation", H), ("Weights 0->1", H * (V + H)), ("Weights 1->2", (V + C) * H),
            ("Direct connections", N)])
    else:
        lines.until("Hidden layer activation:", "vocabulary entries")
        hidden = lines.numbers(H, "Hidden layer activation")
        lines.until("Weights 0->1:", "hidden layer values")
        syn0 = lines.numbers(H * (V + H), "Weights 0->1")
        lines.until("Weights 1->2:", "weights 0->1")
        syn1 = lines.numbers((V + C) * H, "Weights 1->2")
        lines.until("Direct connections:", "weights 1->2")
        direct = lines.numbers(N, "Direct connections")
        while lines.pos < len(data):
            if lines.next("the end").strip():
                lines.fail("a value after the direct connections (the header says 'direct connections: "
                           f"{N}')", lines.line - 1)
    return {"header": h, "words": words, "classes": classes, "hidden": hidden,
            "syn0": syn0.reshape(H, V + H), "syn1": syn1.reshape(V + C, H), "direct": direct}


def convert(path, args):
    m = read(path)
    h = m["header"]
    V, H, C = h["vocabulary size"], h["hidden layer size"], h["class size"]
    # A binary file holds float32 values; a text file's decimals are kept as F64, which lstmlm's double-precision
    # path reads as rnnlm does (rounded to float32 they move a probability by up to 1e-6).
    wide = np.float32 if h["file format"] == 1 else np.float64
    independent = bool(h["independent sentences mode"])
    syn0, syn1 = m["syn0"], m["syn1"]
    tensors = {
        tensor_names.weight_ih(0, cell="rnn"): syn0[:, :V].astype(wide),
        tensor_names.weight_hh(0, cell="rnn"): syn0[:, V:].astype(wide),
        tensor_names.bias_ih(0, cell="rnn"): np.zeros(H, np.float32),
        tensor_names.decoder_weight: syn1[:V].astype(wide),
        tensor_names.decoder_bias: np.zeros(V, np.float32),
        tensor_names.class_weight: syn1[V:].astype(wide),
        tensor_names.class_bias: np.zeros(C, np.float32),
        tensor_names.word_class: m["classes"].astype(np.float32),
        # rnnlm -independent resets the hidden layer to ones at the start and after every sentence.
        tensor_names.initial_h(0): np.ones(H, wide) if independent else m["hidden"].astype(wide),
    }
    direct = None
    if h["direct connections"]:
        tensors[tensor_names.direct_weight] = m["direct"].astype(wide)
        direct = {"size": h["direct connections"], "order": h["direct order"]}
    if "</s>" not in m["words"]:
        raise ConvertError(f"{path}: the vocabulary has no '</s>' (rnnlm's sentence end, index 0)")
    source = {"framework": "rnnlm", "file": os.path.basename(path),
              "file_format": "binary" if h["file format"] == 1 else "text",
              "independent": independent}
    return {"vocab": m["words"], "embedding_dim": 0, "layers": [rnn_layer(H, activation="sigmoid")], "tied": False,
            "tokenizer": fmt_tokenizer("word", eos_token="</s>", oov_input="zero", eos_is_line_break=True),
            "tensors": tensors, "source": source, "classes": C, "direct": direct, "exp": "rnnlm",
            "f64": () if wide is np.float32 else tuple(n for n, t in tensors.items() if t.dtype == np.float64)}
