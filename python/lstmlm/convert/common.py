"""What every converter shares: the vocabulary/tokenizer options and assembling write_model's kwargs."""
import argparse
import math
import os
import zipfile

import numpy as np

from ..format import layer as fmt_layer  # noqa: F401  (re-exported for converters)
from ..format import tokenizer as fmt_tokenizer

from . import subword
from . import vocab as vocab_mod
from .errors import ConvertError  # noqa: F401  (re-exported: every converter's error type)
from .unpickle import brief  # noqa: F401  (re-exported for converters)


# Floor of the memory a source may make us allocate: real models are never compressed more than a few
# times, so beyond max(4 x the file's bytes, this floor) a declared size is a zip bomb or a corrupt header.
MIN_ALLOC_LIMIT = 1 << 26


# Notes for the user (a guessed special token, a placeholder for an unusable key): printed by the command
# line (cli.main), one line each, only once the model is written; a failed conversion prints its error alone.
pending_notes = []


def note(text):
    """Queues `text` (without the `lstmlm-convert: note: ` prefix) for stderr once the model is written."""
    pending_notes.append(text)


def alloc_limit(path_or_size):
    """The most bytes of arrays a source of that path (or that many bytes) may declare."""
    size = path_or_size if isinstance(path_or_size, int) else os.path.getsize(path_or_size)
    return max(4 * size, MIN_ALLOC_LIMIT)


def read_zip_entry(z, name, where, limit):
    """The bytes of zip member `name`, refusing before any decompression what zipfile would fail on with a
    traceback (encryption, compression methods torch and Keras never write) and declared sizes over `limit`
    (zipfile.read allocates the declared uncompressed size)."""
    info = z.getinfo(name)
    if info.flag_bits & 1:
        raise ConvertError(f"{where}: zip entry {name} is encrypted; model archives are never encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ConvertError(f"{where}: zip entry {name} uses compression method {info.compress_type}; only "
                           "stored (0) and deflate (8), what torch.save and Keras write, are read")
    if info.file_size > limit:
        raise ConvertError(f"{where}: zip entry {name} declares {info.file_size} bytes uncompressed "
                           f"({info.compress_size} compressed), more than {limit} for an archive of this "
                           "size: a zip bomb or a corrupt entry")
    return z.read(name)


def checked_count(shape, itemsize, limit, what):
    """Elements of an array of `shape` (non-negative Python ints), or ConvertError when its bytes exceed
    `limit`: computed on Python ints, so a 2^63 dimension neither overflows nor makes numpy warn."""
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in shape):
        raise ConvertError(f"{what}: shape {brief(shape)} is not a list of non-negative integers")
    count = math.prod(shape)
    if count * itemsize > limit:
        raise ConvertError(f"{what}: shape {list(shape)} needs {count * itemsize} bytes, more than the "
                           f"{limit} this source can hold")
    return count


def finite_float(text):
    """argparse type: a finite float (NaN and infinity would write a config.json that is not JSON)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return v


def positive_float(text):
    """argparse type: a finite float > 0."""
    v = finite_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return v


def add_common_arguments(p):
    g = p.add_argument_group("vocabulary and tokenizer (override what the source says)")
    g.add_argument("--vocab", metavar="FILE",
                   help="vocabulary file (Keras Tokenizer pickle/JSON, word_index JSON, chars_vocab.pkl, "
                        "JSON id map or array, one token per line)")
    g.add_argument("--corpus-dir", metavar="DIR",
                   help="rebuild word_language_model's dictionary from DIR/{train,valid,test}.txt")
    g.add_argument("--tokenizer", choices=("word", "char"), help="tokenization (default: guessed from the "
                   "vocabulary: char when every token is one character)")
    g.add_argument("--lowercase", dest="lowercase", action="store_true", default=None,
                   help="lowercase text before lookup")
    g.add_argument("--no-lowercase", dest="lowercase", action="store_false")
    g.add_argument("--filters", metavar="CHARS", help="characters replaced by the word separator before "
                   "splitting, as Keras' Tokenizer(filters=...); a char model deletes them")
    g.add_argument("--split", metavar="SEP", help="word separator, as Keras' Tokenizer(split=...) ('' = any "
                   "whitespace, as str.split())")
    g.add_argument("--unk", metavar="TOKEN", help="unknown-word token ('' = none)")
    g.add_argument("--eos", metavar="TOKEN", help="end-of-sentence token ('' = none)")
    g.add_argument("--bos", metavar="TOKEN", help="beginning-of-sentence token ('' = none)")
    g.add_argument("--pad-id", type=int, metavar="ID", help="padding id (Keras reserves 0); -1 = none")
    g.add_argument("--allow-vocab-mismatch", action="store_true",
                   help="convert a Keras Tokenizer whose ids do not fit the model's outputs (words with ids "
                        "past the outputs are dropped)")
    subword.add_arguments(g)


def _check_char_tokens(tokens, special, where):
    """A char tokenizer looks up one code point at a time: a vocabulary of longer tokens would make
    those unreachable, so every word would be out of vocabulary. Placeholders and the Keras padding
    name are not text."""
    special = set(special) | {"<pad>"}
    longer = [t for t in tokens if len(t) != 1 and t not in special and not t.startswith("<unused:")]
    if longer:
        shown = ", ".join(repr(t) for t in longer[:3])
        raise ConvertError(f"{where}: --tokenizer char, but {len(longer)} vocabulary tokens are longer than "
                           f"one character ({shown}): this is a word vocabulary (use --tokenizer word)")


def _opt_token(value, default):
    if value is None:
        return default
    return value or None  # '' on the command line = none


# Special tokens taken from the vocabulary when neither an option nor the vocabulary file names them:
# (option, tokenizer field, the names tried in order).
GUESSED_SPECIALS = (("unk", "unk_token", ("<unk>",)), ("eos", "eos_token", ("<eos>", "</s>")),
                    ("bos", "bos_token", ("<s>",)))


def _special_tokens(args, v, names, default_eos, default_bos=None):
    """unk, eos, bos and {field: token} of those guessed from the vocabulary's names. An option always wins
    ('' = none); then what the source states (a Keras Tokenizer's oov_token, word_language_model's <eos>, ESPnet's
    sos/eos); then the conventional names. Every guess is printed on stderr, one line each."""
    stated = {"unk": v.unk_token, "eos": default_eos if default_eos in names else None,
              "bos": default_bos if default_bos in names else None}
    out, guessed = {}, {}
    for opt, field, candidates in GUESSED_SPECIALS:
        given = getattr(args, opt, None)
        if given is not None:
            out[opt] = given or None
        elif stated[opt] is not None:
            out[opt] = stated[opt]
        else:
            tok = next((c for c in candidates if c in names), None)
            out[opt] = tok
            if tok is not None:
                guessed[field] = tok
                note(f"{field} {tok!r} (found in the vocabulary; --{opt} '' to turn off)")
    return out["unk"], out["eos"], out["bos"], guessed


def check_finite(tensors, where):
    """Refuses a tensor holding NaN or an infinity once it is float32, as weights.safetensors stores it: a
    source's value beyond float32's range (a TF.js quantization scale of 1e300, a float64 weight of 1e39)
    becomes infinite there, and lstmlm would compute NaN from it. Every converter's tensors pass here
    (assemble), so no converter writes a non-finite weight."""
    for name, arr in tensors.items():
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.asarray(arr, dtype=np.float32)
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            first = int(bad[0])
            src = np.asarray(arr)
            was = f", from {float(src.flat[first])!r}" if src.dtype != np.float32 else ""
            raise ConvertError(f"{where}: tensor {name!r} holds {bad.size} non-finite value"
                               f"{'s' if bad.size > 1 else ''} as float32 (first at flat index {first} of "
                               f"shape {list(a.shape)}: {a.flat[first]}{was}); a converted model's weights are "
                               "finite")


def assemble(args, *, size, tensors, embedding_dim, layers, tied, source, source_vocab=None,
             default_eos=None, where, head=None, specials=None, vocab_fix=None):
    """write_model kwargs: the vocabulary (--vocab / --corpus-dir win over the source's), completed to
    `size` ids, and the tokenizer from options, else the vocabulary file, else neutral defaults; with
    --sentencepiece / --bpe a subword vocabulary and tokenizer (subword.py). The tensors must be finite as
    float32 (check_finite). specials: the source's own start/end ids ({"bos": id, "eos": id, "why": text}, e.g.
    icefall's sos_id = eos_id = 1); vocab_fix: a function completing the loaded Vocab the source's way (ESPnet1's
    units file lacks the <blank> and <eos> its recipe adds)."""
    check_finite(tensors, where)
    v = None
    if getattr(args, "vocab", None):
        v = vocab_mod.load_vocab(args.vocab)
    elif getattr(args, "corpus_dir", None):
        v = vocab_mod.corpus_vocab(args.corpus_dir)
        default_eos = default_eos or "<eos>"
    else:
        v = source_vocab
    if v is not None and vocab_fix is not None:
        v = vocab_fix(v)
    default_bos = None
    if v is not None and v.convention == "espnet" and v.tokens and v.tokens[-1] is not None:
        # ESPnet: sos = eos = the last id (<sos/eos>, ESPnet1's <eos>); <blank> 0 is CTC's, never text.
        default_eos = default_bos = v.tokens[-1]
    common = dict(embedding_dim=embedding_dim, layers=layers, tied=tied, **({"head": head} if head else {}))
    if subword.wanted(args):
        if getattr(args, "sentencepiece", None):
            out = subword.assemble_sentencepiece(args, size=size, tensors=tensors, embedding_dim=embedding_dim, v=v,
                                                 source=source, where=where, specials=specials, note=note)
        else:
            if specials and v is not None:
                tokens = v.tokens
                default_bos = tokens[specials["bos"]] if specials.get("bos") is not None else None
                default_eos = tokens[specials["eos"]] if specials.get("eos") is not None else None
            out = subword.assemble_bpe(args, size=size, v=v, source=source, where=where,
                                       specials_fn=lambda names: _special_tokens(args, v, names, default_eos,
                                                                                 default_bos))
            out["tensors"] = tensors
        return dict(common, **out)
    if v is None:
        raise ConvertError(f"{where}: the source holds no vocabulary; give one with --vocab FILE "
                           "(or --corpus-dir DIR for a word_language_model corpus)")
    tokens = vocab_mod.complete(v, size, where, getattr(args, "allow_vocab_mismatch", False))
    names = set(tokens)
    kind = args.tokenizer or v.kind_guess()
    lowercase = args.lowercase if args.lowercase is not None else bool(v.lowercase)
    filters = args.filters if args.filters is not None else (v.filters or "")
    split = _opt_token(getattr(args, "split", None), v.split) if kind == "word" else None
    if specials:
        default_bos = tokens[specials["bos"]] if specials.get("bos") is not None else None
        default_eos = tokens[specials["eos"]] if specials.get("eos") is not None else None
    unk, eos, bos, guessed = _special_tokens(args, v, names, default_eos, default_bos)
    pad_id = args.pad_id if args.pad_id is not None else (0 if v.keras else None)
    if pad_id is not None and pad_id < 0:
        pad_id = None
    for opt, tok in (("--unk", unk), ("--eos", eos), ("--bos", bos)):
        if tok is not None and tok not in names:
            raise ConvertError(f"{where}: {opt} token {tok!r} is not in the vocabulary")
    if kind == "char":
        _check_char_tokens(tokens, (unk, eos, bos) + (vocab_mod.ESPNET_SPECIALS if v.convention == "espnet" else ()),
                           where)
    if pad_id is not None and not 0 <= pad_id < size:
        raise ConvertError(f"{where}: --pad-id {pad_id} is outside the vocabulary (0..{size - 1})")
    source = vocab_mod.vocab_source(source, v, guessed)
    return dict(vocab=tokens, embedding_dim=embedding_dim, layers=layers, tied=tied,
                tokenizer=fmt_tokenizer(kind, lowercase, filters, unk, eos, bos, pad_id, split),
                tensors=tensors, source=source, **({"head": head} if head else {}))

