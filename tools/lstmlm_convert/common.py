"""What every converter shares: the vocabulary/tokenizer options and assembling write_model's kwargs."""
import os

from lstmlm_format import layer as fmt_layer  # noqa: F401  (re-exported for converters)
from lstmlm_format import tokenizer as fmt_tokenizer

from . import vocab as vocab_mod


class ConvertError(Exception):
    """A source that cannot be converted; the message names the file, the layer/tensor and the reason."""


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
    g.add_argument("--filters", metavar="CHARS", help="characters deleted before splitting (Keras-style)")
    g.add_argument("--unk", metavar="TOKEN", help="unknown-word token ('' = none)")
    g.add_argument("--eos", metavar="TOKEN", help="end-of-sentence token ('' = none)")
    g.add_argument("--bos", metavar="TOKEN", help="beginning-of-sentence token ('' = none)")
    g.add_argument("--pad-id", type=int, metavar="ID", help="padding id (Keras reserves 0); -1 = none")


def _opt_token(value, default):
    if value is None:
        return default
    return value or None  # '' on the command line = none


def assemble(args, *, size, tensors, embedding_dim, layers, tied, source, source_vocab=None,
             default_eos=None, where):
    """write_model kwargs: the vocabulary (--vocab / --corpus-dir win over the source's), completed to
    `size` ids, and the tokenizer from options, else the vocabulary file, else neutral defaults."""
    v = None
    if getattr(args, "vocab", None):
        v = vocab_mod.load_vocab(args.vocab)
    elif getattr(args, "corpus_dir", None):
        v = vocab_mod.corpus_vocab(args.corpus_dir)
        default_eos = default_eos or "<eos>"
    else:
        v = source_vocab
    if v is None:
        raise ConvertError(f"{where}: the source holds no vocabulary; give one with --vocab FILE "
                           "(or --corpus-dir DIR for a word_language_model corpus)")
    tokens = vocab_mod.complete(v, size, where)
    names = set(tokens)
    kind = args.tokenizer or v.kind_guess()
    lowercase = args.lowercase if args.lowercase is not None else bool(v.lowercase)
    filters = args.filters if args.filters is not None else (v.filters or "")
    unk = _opt_token(args.unk, v.unk_token if v.unk_token is not None else
                     ("<unk>" if "<unk>" in names else None))
    eos = _opt_token(args.eos, default_eos if default_eos in names else None)
    bos = _opt_token(args.bos, None)
    pad_id = args.pad_id if args.pad_id is not None else (0 if v.keras else None)
    if pad_id is not None and pad_id < 0:
        pad_id = None
    for opt, tok in (("--unk", unk), ("--eos", eos), ("--bos", bos)):
        if tok is not None and tok not in names:
            raise ConvertError(f"{where}: {opt} token {tok!r} is not in the vocabulary")
    if pad_id is not None and not 0 <= pad_id < size:
        raise ConvertError(f"{where}: --pad-id {pad_id} is outside the vocabulary (0..{size - 1})")
    source = dict(source)
    source["vocab"] = {"form": v.form, "file": os.path.basename(v.path.rstrip("/")) if v.path else None}
    notes = list(source.get("notes", [])) + v.notes
    if notes:
        source["notes"] = notes
    return dict(vocab=tokens, embedding_dim=embedding_dim, layers=layers, tied=tied,
                tokenizer=fmt_tokenizer(kind, lowercase, filters, unk, eos, bos, pad_id),
                tensors=tensors, source=source)
