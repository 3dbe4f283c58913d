"""The words of a text: one vocabulary for finding (working memory's BM25 search) and for
comparing (the offline merger telling whether two sentences say the same thing).

Both drop ``FUNCTION_WORDS``. They differ on purpose, and only here:

* search splits identifiers the way people query them: ``parseHTTPResponse`` and
  ``parse_http_response`` both index as ``parse http response`` (plus the whole identifier), so
  a query for "http response" finds either; it also drops ``but has have its``;
* comparing reads plain lowercase words and also drops ``PHRASING_WORDS``, the words that say
  how a sentence is put rather than what it is about: "Should we use Redis?" and "We will use
  Redis" are about the same thing.

Search terms are stored with each item (the index), so ``terms`` must not change lightly: an
existing index would no longer match the queries.

``squeeze`` puts a text on one line within a length, for every one-line view of user text (a
reply line, a preview, a history row).
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_'][A-Za-z0-9]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_LOWER_WORD = re.compile(r"[a-z0-9]+")

#: words that carry no topic, left out of search terms and of comparisons alike
FUNCTION_WORDS = frozenset(
    "a an and are as at be by for from i in is it of on or that the this to was we were will with".split()
)
SEARCH_STOP_WORDS = FUNCTION_WORDS | {"but", "has", "have", "its"}
#: how a sentence is put (modal verbs, question words, yes/no): not what it is about
PHRASING_WORDS = frozenset(
    (
        "been our my into now then so use using should do does did would can could not no yes "
        "which what whether how who when where why"
    ).split()
)
COMPARE_STOP_WORDS = FUNCTION_WORDS | PHRASING_WORDS


def terms(text: str) -> list[str]:
    """Search terms: lowercase words, identifiers split on camelCase and snake_case (the whole
    identifier kept too), stop words and one-character words dropped."""
    out: list[str] = []
    for word in _IDENTIFIER.findall(text):
        if "_" not in word and (word.islower() or word.isdigit() or word[1:].islower()):
            out.append(word.lower())  # nothing to split
            continue
        parts = [p for chunk in word.split("_") for p in _CAMEL.findall(chunk)]
        lowered = word.lower()
        if len(parts) > 1:
            out.append(lowered.replace("_", ""))
            out += [p.lower() for p in parts]
        else:
            out.append(lowered)
    return [t for t in out if t not in SEARCH_STOP_WORDS and len(t) > 1]


def content_words(text: str) -> set[str]:
    """The words a sentence is about: lowercase letter/digit runs, stop and phrasing words and
    one-character words dropped."""
    return {w for w in _LOWER_WORD.findall(text.lower()) if w not in COMPARE_STOP_WORDS and len(w) > 1}


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of content words (0..1); 0 when either has none."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def squeeze(text: str, limit: int) -> str:
    """``text`` with each whitespace run as one space, cut to ``limit`` characters (the last an
    ellipsis). Only a prefix is read when it settles the answer (a prefix's squeezed form is a
    prefix of the whole's), so a long item costs no more than a short one on every line of a
    reply."""
    head = " ".join(text[: 2 * limit].split())
    if len(head) <= limit and len(text) > 2 * limit:  # mostly whitespace so far: read it all
        head = " ".join(text.split())
    return head if len(head) <= limit else head[: limit - 1] + "…"
