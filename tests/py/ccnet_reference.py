"""cc_net's line normalizer, the reference `lstmlm score --normalize ccnet` is compared with
(tests/py/fidelity/test_normalize_ccnet.py).

Copied unchanged from facebookresearch/cc_net, file cc_net/text_normalizer.py at commit
bda555bd1cf1ee2e0b925363e62a61cd46c8b60d (its last change: 242e10d, "Relicense to MIT"), MIT license,
Copyright (c) Facebook, Inc. and its affiliates. Only what normalize() calls is kept (the tokenizer-spacing
and dedup helpers are left out). Its defaults (accent, case, numbers, punct=1) are the ccnet mode.

Note what the code does, not what its names suggest: DIGIT_RE is Unicode \\d (every Nd digit, not only 0-9),
remove_non_printing_char drops U+0000-U+001F and U+007F-U+009F only (not every category C* character),
"１" (U+FF11) in UNICODE_PUNCT is dead (\\d made it "0" first), and strip_accents' `len(output) == line`
is never true (it always joins, which is the same string anyway).
"""
import re
import unicodedata

UNICODE_PUNCT = {
    "，": ",",
    "。": ".",
    "、": ",",
    "„": '"',
    "”": '"',
    "“": '"',
    "«": '"',
    "»": '"',
    "１": '"',
    "」": '"',
    "「": '"',
    "《": '"',
    "》": '"',
    "´": "'",
    "∶": ":",
    "：": ":",
    "？": "?",
    "！": "!",
    "（": "(",
    "）": ")",
    "；": ";",
    "–": "-",
    "—": " - ",
    "．": ". ",
    "～": "~",
    "’": "'",
    "…": "...",
    "━": "-",
    "〈": "<",
    "〉": ">",
    "【": "[",
    "】": "]",
    "％": "%",
    "►": "-",
}

UNICODE_PUNCT_RE = re.compile(f"[{''.join(UNICODE_PUNCT.keys())}]")


def replace_unicode_punct(text: str) -> str:
    return "".join((UNICODE_PUNCT.get(c, c) for c in text))


def remove_unicode_punct(text: str) -> str:
    """More aggressive version of replace_unicode_punct but also faster."""
    return UNICODE_PUNCT_RE.sub("", text)


def strip_accents(line: str) -> str:
    """Strips accents from a piece of text."""
    nfd = unicodedata.normalize("NFD", line)
    output = [c for c in nfd if unicodedata.category(c) != "Mn"]
    if len(output) == line:
        return line
    return "".join(output)


# Build a regex matching all control characters.
NON_PRINTING_CHARS_RE = re.compile(
    f"[{''.join(map(chr, list(range(0,32)) + list(range(127,160))))}]"
)
DIGIT_RE = re.compile(r"\d")


def remove_non_printing_char(text: str) -> str:
    return NON_PRINTING_CHARS_RE.sub("", text)


def normalize(line: str, accent=True, case=True, numbers=True, punct=1) -> str:
    line = line.strip()
    if not line:
        return line
    if case:
        line = line.lower()
    if accent:
        line = strip_accents(line)
    if numbers:
        line = DIGIT_RE.sub("0", line)
    if punct == 1:
        line = replace_unicode_punct(line)
    elif punct == 2:
        line = remove_unicode_punct(line)
    line = remove_non_printing_char(line)
    return line
