"""Subword vocabularies for every converter (format v4, docs/importing.md "Subword models"):

- `--sentencepiece FILE.model`: the vocabulary is the SentencePiece model's pieces id for id, the .model file is
  copied into the model directory as tokenizer.model, unk / bos / eos come from its unk_id / bos_id / eos_id (-1:
  absent) unless the source's own convention says otherwise (icefall: sos = eos = id 1; ESPnet: the last id). A
  vocabulary the source has (or --vocab gives) must have as many ids as the model has pieces; it is either the
  pieces id for id, or an ESPnet token list (<blank>, <unk>, the pieces after <unk> <s> </s>, <sos/eos>), whose
  rows are then moved to the ids of their pieces.
- `--bpe`: the source's vocabulary is pre-split BPE pieces (subword-nmt, fairseq: "qu@@" continued by the next
  piece), `--bpe-continuation` the marker ("@@").

The .model file is read through contained.read_contained (a regular file, at most SPM_MODEL_LIMIT bytes) and
parsed by python3-sentencepiece from those bytes, never from a path.
"""
import os

import numpy as np

from ..format import DEFAULT_BPE_CONTINUATION, CELLS
from ..format import bpe_tokenizer as fmt_bpe_tokenizer
from ..format import names as tensor_names
from ..format import sentencepiece_tokenizer as fmt_sentencepiece_tokenizer

from . import contained
from . import vocab as vocab_mod
from .errors import ConvertError

# The largest .model file read (real ones are a few hundred KB to a few MB).
SPM_MODEL_LIMIT = 64 << 20
# The name the .model file gets in the model directory (config.json tokenizer.model).
MODEL_FILE = "tokenizer.model"
# Tokens of a source vocabulary with no SentencePiece piece of their name that still have a place: a start/end
# token takes the model's eos piece (else its bos piece), a blank or padding token one of the control pieces
# left (ESPnet's token list drops <s> and </s> and adds <blank> first and <sos/eos> last).
SOS_EOS_NAMES = ("<sos/eos>", "<eos>", "<sos>")
BLANK_NAMES = ("<blank>", "<blk>", "<pad>")


def add_arguments(g):
    g.add_argument("--sentencepiece", metavar="FILE.model",
                   help="the SentencePiece model of the vocabulary (icefall's bpe.model, ESPnet's bpe.model): "
                        "vocab = its pieces id for id, copied into the model directory as tokenizer.model")
    g.add_argument("--bpe", action="store_true",
                   help="the vocabulary is pre-split BPE pieces (subword-nmt, fairseq), text given already split")
    g.add_argument("--bpe-continuation", metavar="MARK", default=None,
                   help=f"with --bpe: the marker ending a piece the next one continues (default "
                        f"{DEFAULT_BPE_CONTINUATION!r})")


def wanted(args):
    """True when the options ask for a subword vocabulary (checked for contradictions first)."""
    spm, bpe = getattr(args, "sentencepiece", None), getattr(args, "bpe", False)
    if getattr(args, "bpe_continuation", None) is not None and not bpe:
        raise ConvertError("--bpe-continuation applies with --bpe only")
    if not spm and not bpe:
        return False
    this = "--sentencepiece" if spm else "--bpe"
    if spm and bpe:
        raise ConvertError("--sentencepiece and --bpe exclude each other (a SentencePiece model tokenizes text "
                           "itself; --bpe reads text already split into pieces)")
    for opt, value in (("--tokenizer", getattr(args, "tokenizer", None)), ("--filters", getattr(args, "filters", None)),
                       ("--split", getattr(args, "split", None))):
        if value is not None:
            raise ConvertError(f"{opt} does not apply with {this}: the subword tokenizer splits the text")
    return True


def load_sentencepiece(path):
    """(bytes of the .model file, SentencePieceProcessor) for a file the user named."""
    data = contained.read_contained(None, path, f"--sentencepiece {path}", limit=SPM_MODEL_LIMIT)
    import sentencepiece  # python3-sentencepiece; a missing package is one line naming it (entry.py)
    if not data:
        raise ConvertError(f"{path}: empty file, not a SentencePiece model")
    try:
        sp = sentencepiece.SentencePieceProcessor(model_proto=data)
    except Exception as e:  # RuntimeError("Internal: ... ParseFromArray failed"), TypeError, ...
        reason = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise ConvertError(f"{path}: not a SentencePiece model ({reason})") from None
    if sp.GetPieceSize() <= 0:
        raise ConvertError(f"{path}: a SentencePiece model without pieces")
    return data, sp


def _piece(sp, i):
    return sp.IdToPiece(i) if 0 <= i < sp.GetPieceSize() else None


def _piece_order(tokens, pieces, sp, spm_path, vocab_path):
    """(model id -> piece id list, the piece a start/end token was given or None), or ConvertError. Identity
    when the tokens are the pieces; else every token is a piece of its name, or one of SOS_EOS_NAMES /
    BLANK_NAMES taking a control piece no token names."""
    if list(tokens) == list(pieces):
        return list(range(len(pieces))), None
    index = {p: j for j, p in enumerate(pieces)}
    order = [index.get(t) if t is not None else None for t in tokens]
    unmatched = [i for i, j in enumerate(order) if j is None]
    bad = [i for i in unmatched if tokens[i] not in SOS_EOS_NAMES + BLANK_NAMES]
    if bad:
        i = bad[0]
        raise ConvertError(f"{vocab_path}: token {tokens[i]!r} (id {i}) is not a piece of the SentencePiece model "
                           f"{spm_path} ({len(bad)} such tokens): is it this model's vocabulary?")
    claimed = set(j for j in order if j is not None)
    free = [j for j in range(len(pieces)) if j not in claimed]
    sos_eos_piece = None
    for i in sorted(unmatched, key=lambda i: tokens[i] not in SOS_EOS_NAMES):  # the start/end token first
        want = [j for j in (sp.eos_id(), sp.bos_id()) if j in free] if tokens[i] in SOS_EOS_NAMES else []
        choice = want[0] if want else next((j for j in free if sp.IsControl(j)), None)
        if choice is None:
            raise ConvertError(f"{vocab_path}: token {tokens[i]!r} (id {i}) has no piece in {spm_path}, and no "
                               "control piece is left for it")
        if tokens[i] in SOS_EOS_NAMES:
            sos_eos_piece = choice
        order[i] = choice
        free.remove(choice)
    if len(set(order)) != len(order):
        raise ConvertError(f"{vocab_path}: two tokens name the same piece of {spm_path}")
    return order, sos_eos_piece


def _permute(tensors, order, embedding_dim):
    """The tensors with the vocabulary's rows (embedding, decoder weight and bias; a one-hot model's layer-0
    input columns) moved from model id i to piece id order[i]."""
    inv = np.empty(len(order), dtype=np.int64)
    inv[np.asarray(order)] = np.arange(len(order))
    out = dict(tensors)
    for name in (tensor_names.embedding, tensor_names.decoder_weight, tensor_names.decoder_bias):
        if name in out:
            out[name] = np.asarray(out[name])[inv]
    if not embedding_dim:
        for cell in CELLS:
            name = tensor_names.weight_ih(0, cell=cell)
            if name in out:
                out[name] = np.asarray(out[name])[:, inv]
    return out


def _option_token(args, opt, default, names, where):
    given = getattr(args, opt, None)
    tok = default if given is None else (given or None)
    if tok is not None and tok not in names:
        raise ConvertError(f"{where}: --{opt} token {tok!r} is not a piece of the vocabulary")
    return tok


def _pad_id(args, size, where):
    pad_id = getattr(args, "pad_id", None)
    if pad_id is None or pad_id < 0:
        return None
    if pad_id >= size:
        raise ConvertError(f"{where}: --pad-id {pad_id} is outside the vocabulary (0..{size - 1})")
    return pad_id


def assemble_sentencepiece(args, *, size, tensors, embedding_dim, v, source, where, specials, note):
    """write_model kwargs for --sentencepiece; v: the source's vocabulary (or --vocab's), or None. specials:
    {"bos": id, "eos": id, "why": text} in the source's ids, its own convention, or None."""
    path = args.sentencepiece
    data, sp = load_sentencepiece(path)
    pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
    if len(pieces) != size:
        raise ConvertError(f"{path}: the SentencePiece model has {len(pieces)} pieces but {where} has {size} "
                           "outputs: is it this model's vocabulary?")
    order, sos_eos_piece = list(range(size)), None
    if v is not None:
        tokens = list(v.tokens)
        if len(tokens) != size:
            raise ConvertError(f"{v.path or where}: the vocabulary has {len(tokens)} ids but the SentencePiece model "
                               f"{path} has {len(pieces)} pieces")
        order, sos_eos_piece = _piece_order(tokens, pieces, sp, path, v.path or where)
        if order != list(range(size)):
            tensors = _permute(tensors, order, embedding_dim)
            moved = sum(1 for i, j in enumerate(order) if i != j)
            note(f"vocabulary: {moved} of {size} ids of {os.path.basename(v.path or where)} moved to the ids of "
                 f"their pieces in {os.path.basename(path)}" +
                 (f" (the start/end token {tokens[order.index(sos_eos_piece)]!r} is piece {pieces[sos_eos_piece]!r})"
                  if sos_eos_piece is not None else ""))
    unk = _piece(sp, sp.unk_id())
    bos, eos = _piece(sp, sp.bos_id()), _piece(sp, sp.eos_id())
    if sos_eos_piece is not None:
        bos = eos = pieces[sos_eos_piece]
    if specials:
        bos = pieces[order[specials["bos"]]] if specials.get("bos") is not None else None
        eos = pieces[order[specials["eos"]]] if specials.get("eos") is not None else None
        if specials.get("why"):
            note(f"bos_token {bos!r}, eos_token {eos!r}: {specials['why']} (--bos / --eos to override)")
    names = set(pieces)
    unk = _option_token(args, "unk", unk, names, where)
    eos = _option_token(args, "eos", eos, names, where)
    bos = _option_token(args, "bos", bos, names, where)
    lowercase = bool(getattr(args, "lowercase", None))
    source = dict(source)
    source["vocab"] = {"form": "sentencepiece model", "file": os.path.basename(path)}
    info = {"file": os.path.basename(path), "pieces": len(pieces), "unk_id": sp.unk_id(), "bos_id": sp.bos_id(),
            "eos_id": sp.eos_id(), "pad_id": sp.pad_id()}
    if v is not None:
        info["source_vocab"] = {"form": v.form, "file": os.path.basename(v.path.rstrip("/")) if v.path else None,
                                "reordered": order != list(range(size))}
    source["sentencepiece"] = info
    tok = fmt_sentencepiece_tokenizer(MODEL_FILE, unk_token=unk, eos_token=eos, bos_token=bos,
                                      pad_id=_pad_id(args, size, where), lowercase=lowercase)
    return dict(vocab=pieces, tokenizer=tok, tensors=tensors, source=source, assets={MODEL_FILE: data})


def assemble_bpe(args, *, size, v, source, where, specials_fn):
    """write_model kwargs for --bpe: v is the source's vocabulary (required). specials_fn(names) -> (unk, eos,
    bos, guessed) as for word models."""
    cont = args.bpe_continuation if getattr(args, "bpe_continuation", None) is not None else DEFAULT_BPE_CONTINUATION
    if not cont or any(c.isspace() for c in cont):
        raise ConvertError(f"--bpe-continuation {cont!r}: expected a non-empty marker without whitespace")
    if v is None:
        raise ConvertError(f"{where}: --bpe needs the model's vocabulary of pieces: the source holds none, give it "
                           "with --vocab FILE")
    tokens = vocab_mod.complete(v, size, where, getattr(args, "allow_vocab_mismatch", False))
    if not any(t.endswith(cont) and t != cont for t in tokens):
        raise ConvertError(f"{v.path or where}: --bpe, but no token of the vocabulary ends with the continuation "
                           f"marker {cont!r}: is it a BPE vocabulary? (--bpe-continuation names another marker)")
    names = set(tokens)
    unk, eos, bos, guessed = specials_fn(names)
    for opt, tok in (("--unk", unk), ("--eos", eos), ("--bos", bos)):
        if tok is not None and tok not in names:
            raise ConvertError(f"{where}: {opt} token {tok!r} is not in the vocabulary")
    source = vocab_mod.vocab_source(source, v, guessed)
    tok = fmt_bpe_tokenizer(cont, unk_token=unk, eos_token=eos, bos_token=bos, pad_id=_pad_id(args, size, where),
                            lowercase=bool(getattr(args, "lowercase", None)))
    return dict(vocab=tokens, tokenizer=tok, source=source)
