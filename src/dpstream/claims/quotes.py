r"""Is a registered quote verbatim in its paper? Words and numbers in order, with markup normalised.

The seed documents (``/work/shared/seeds``) are text extracted from the papers: ligatures, LaTeXML's triplicated math
(``ε\varepsilonitalic_ε``, ``80808080KB``), ``\mathsf{CMS}`` and line breaks. A quote is verbatim when its words and
plain numbers are a contiguous run of the seed's, after: Unicode NFKC (ligatures), case folding, ``\mathsf{X}`` and
its kin unwrapped, every math token (one holding a backslash, ``_``, ``^``, ``~``, ``=``, braces or a Greek letter)
reduced to one placeholder (a run of them to one), and punctuation dropped (the extraction garbles it around math). A
quote writes math between dollars (``$\tilde{k} = 4k$``): one placeholder, which also absorbs up to ``RESIDUE`` short
tokens the extraction leaves after a formula (``k~=4k~4\tilde{k}=4kover~ = 4``). An editorial ``...`` or
``[insertion]`` in a quote splits it into fragments, each verbatim, in order, within one paragraph's reach (``GAP``
words).
"""

from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

MATH = "<m>"
RESIDUE = 2
"""Short tokens (a number, one or two characters) after a seed formula that a quote's formula absorbs."""
GAP = 80
"""Most seed words between two fragments of one quote (an ellipsis stays inside a paragraph)."""
_WRAPPERS = re.compile(r"\\(?:mathsf|mathrm|mathit|mathbf|textsf|textrm|text|emph|operatorname)\{([^{}]*)\}")
_MATHY = re.compile(r"[\\_^~={}\u0370-\u03ff]")
_PUNCT = re.compile(r"^[^\w<>]+|[^\w<>%]+$")
_FRAGMENTS = re.compile(r"\.\.\.|…|\[[^\]]*\]")
_DOLLARS = re.compile(r"\$[^$]*\$")


def tokens(text: str) -> list[str]:
    """The normalised word sequence of ``text`` (see the module docstring)."""
    text = _DOLLARS.sub(" \\\\m ", text)
    text = _WRAPPERS.sub(r" \1 ", unicodedata.normalize("NFKC", text)).casefold()
    text = text.replace("\u2014", " ").replace("\u2013", " ")
    out: list[str] = []
    for raw in text.split():
        if _MATHY.search(raw):
            word = MATH
        else:
            word = _PUNCT.sub("", raw.replace(",", " ").replace("(", " ").replace(")", " ").strip())
            word = " ".join(w for w in (_PUNCT.sub("", p) for p in word.split()) if w)
        for w in word.split() if word != MATH else [MATH]:
            if not w or (w == MATH and out and out[-1] == MATH):
                continue
            out.append(w)
    return out


def fragments(quote: str) -> list[list[str]]:
    """The quote's verbatim fragments (split at ``...`` and ``[...]``), each as ``tokens``; empty ones dropped."""
    return [t for t in (tokens(part) for part in _FRAGMENTS.split(quote)) if t]


def _residue(word: str) -> bool:
    return len(word) <= 2 or word.replace(".", "").isdigit()


def _match(hay: list[str], i: int, needle: list[str]) -> int:
    """End index of ``needle`` matched at ``hay[i]`` (a formula absorbing ``RESIDUE`` short tokens), else -1."""
    if not needle:
        return i
    if i >= len(hay) or hay[i] != needle[0]:
        return -1
    if needle[0] != MATH:
        return _match(hay, i + 1, needle[1:])
    j = i + 1
    while True:
        end = _match(hay, j, needle[1:])
        if end >= 0 or j - i > RESIDUE or j >= len(hay) or not _residue(hay[j]):
            return end
        j += 1


def _find(hay: list[str], needle: list[str], start: int, stop: int) -> tuple[int, int]:
    """(start, end) of the first match of ``needle`` beginning in [start, stop), else (-1, -1)."""
    first = needle[0]
    for i in range(start, min(stop, len(hay))):
        if hay[i] == first and (end := _match(hay, i, needle)) >= 0:
            return i, end
    return -1, -1


def verbatim(quote: str, seed_words: list[str]) -> bool:
    """True when every fragment of ``quote`` is in ``seed_words``, in order, each within ``GAP`` words of the last.

    ``seed_words`` are the ``tokens`` of the seed.
    """
    parts = fragments(quote)
    if not parts:
        return False
    begin = 0
    while (found := _find(seed_words, parts[0], begin, len(seed_words)))[0] >= 0:
        pos = found[1]
        for part in parts[1:]:
            at, end = _find(seed_words, part, pos, pos + GAP + 1)
            if at < 0:
                break
            pos = end
        else:
            return True
        begin = found[0] + 1
    return False


def seeds_dir(root: Path | None = None) -> Path | None:
    """The folder of the seed documents, or None.

    ``$DPSTREAM_SEEDS``, else the first ``shared/seeds`` beside the repository root or one of its parents (CI:
    ``../shared/seeds``).
    """
    if os.environ.get("DPSTREAM_SEEDS"):
        return Path(os.environ["DPSTREAM_SEEDS"])
    here = (root or Path(__file__).resolve().parents[3]).resolve()
    for parent in (here, *here.parents):
        candidate = parent / "shared" / "seeds"
        if candidate.is_dir():
            return candidate
    return None


@lru_cache(maxsize=16)
def seed_words(path: Path) -> list[str]:
    """``tokens`` of one seed file (cached: each file is read once per process)."""
    return tokens(path.read_text(encoding="utf-8"))
