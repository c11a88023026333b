"""data=wordfreq: real word frequencies, synthetic order -- a heavy-tailed stream that runs offline.

The frequencies are real: the ``wordfreq`` package's word frequencies of ``language`` (its ``wordlist``, "best"
= "large" where it exists; the data ship inside the wheel, so nothing is downloaded). The ORDER is synthetic: the
``n_words`` most frequent words get exact counts proportional to their frequencies, renormalised over those words
(c_i = floor(p_i * length), the remaining length - sum_i c_i items to the largest remainders p_i * length - c_i,
so the counts sum to ``length`` and every c_i is round(p_i * length) up to one), and the ``length`` items are
shuffled by ``seed``. The ground truth is therefore exact (``word_counts``), not sampled; a real text's bursts and
topic drift are absent. Words whose count rounds to 0 do not occur.

Items are the words' canonical keys (``dpstream.hashing.canonical_key(word)``: xxh64 of the UTF-8 bytes mod
2^61 - 1, int64): the vocabulary is public, not the user's data, so the public hash is used (``data=items`` keys
a user's text with a secret); ``vocabulary`` maps them back.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from types import ModuleType

import numpy as np

from dpstream.data.cache import cached_array, seed_token
from dpstream.hashing import canonical_keys
from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.validation import check_choice, check_positive_int

WORDLISTS = ("best", "large", "small")


def _wordfreq() -> ModuleType:
    try:
        import wordfreq
    except ImportError as exc:
        raise ImportError("data=wordfreq needs the wordfreq package (pip install 'wordfreq>=3.1'); it ships its "
                          "word lists, so no download follows") from exc
    return wordfreq


def _frequencies(language: str, wordlist: str) -> dict[str, float]:
    wordfreq = _wordfreq()
    check_choice(wordlist, "wordfreq wordlist", WORDLISTS)
    check_choice(language, f"wordfreq language (wordlist {wordlist!r})",
                 sorted(lang for lang, ok in wordfreq.available_languages(wordlist).items() if ok))
    return wordfreq.get_frequency_dict(language, wordlist)


def vocabulary(language: str = "en", n_words: int = 100_000, wordlist: str = "best"
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``n_words`` most frequent words, their items and their renormalised frequencies.

    Most frequent first, ties in wordfreq's order; items are canonical keys (int64); frequencies sum to 1.
    """
    n_words = check_positive_int(n_words, "n_words")
    freqs = _frequencies(language, wordlist)
    if n_words > len(freqs):
        raise ValueError(f"n_words must be <= {len(freqs)}, the size of wordfreq's {language!r} {wordlist!r} "
                         f"list, got {n_words}")
    words = np.array(list(freqs)[:n_words], dtype=object)
    p = np.fromiter(freqs.values(), np.float64, len(freqs))[:n_words]
    order = np.argsort(-p, kind="stable")
    words, p = words[order], p[order]
    return words, canonical_keys(words).astype(np.int64), p / p.sum()


def exact_counts(p: np.ndarray, length: int) -> np.ndarray:
    """Counts c_i summing to ``length``, with |c_i - p_i length| < 1.

    c_i = floor(p_i length) plus one for the largest remainders (ties: the more frequent word first).
    """
    exact = p * length
    counts = np.floor(exact).astype(np.int64)
    short = length - int(counts.sum())
    counts[np.argsort(counts - exact, kind="stable")[:short]] += 1
    return counts


def word_counts(language: str = "en", length: int = 2**20, n_words: int = 100_000,
                wordlist: str = "best") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(words, items, exact counts) of the stream ``wordfreq_stream`` builds with these parameters (any seed)."""
    length = check_positive_int(length, "length")
    words, items, p = vocabulary(language, n_words, wordlist)
    return words, items, exact_counts(p, length)


def wordfreq_stream(language: str = "en", length: int = 2**20, n_words: int = 100_000, wordlist: str = "best",
                    seed: SeedLike = 0, cache_dir: str | Path | None = None) -> np.ndarray:
    """``length`` int64 items: every word of ``word_counts`` repeated its exact count, shuffled.

    The order is shuffled by ``seed`` (real frequencies, synthetic order: module docstring). Cached under
    ``cache_dir/wordfreq/`` keyed by every parameter, the seed and the wordfreq version.
    """
    length = check_positive_int(length, "length")
    seq = as_seed_sequence(seed)
    _wordfreq()

    def build() -> np.ndarray:
        _, items, counts = word_counts(language, length, n_words, wordlist)
        return np.random.default_rng(seq).permutation(np.repeat(items, counts))

    params = {"language": language, "length": length, "n_words": n_words, "wordlist": wordlist,
              "seed": seed_token(seq), "wordfreq": version("wordfreq")}
    return cached_array(cache_dir, "wordfreq", params, build)
