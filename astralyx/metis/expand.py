"""A second keyword pass with the words the first hits share (pseudo-relevance feedback), for a chat saved
turn by turn.

A turn says little ("Yeah, the kids loved the clay!"), and a question rarely uses its words: "What
activities has Melanie done with her family?" finds the turns about camping and pottery, and those turns
share words ("kids", "camping", "clay") that the other turns of the same stretch use too. So when the
best hits are short numbered notes (search.py's chat context), the words found in at least two of the
first ten, not in the question nor its form (cues.py) nor the commonest English words, are added to the
keyword query (the five most shared), and each candidate that second ranking finds gains 2 / (60 + its
rank there), twice a first ranking's share (search.py `_feedback`; it adds no candidate). Measured on
LoCoMo's dev half (bench/locomo_search.py), turns, the answer: multi-hop 0.50 → 0.57, temporal 0.92 → 0.94,
open-domain 0.46 → 0.49 (test half: 0.52 → 0.53, 0.77 → 0.78, 0.41 → 0.44); facts (one sentence each, a
memory) did not gain and are left out.

    feedback_terms(["Mel (8 May): the kids loved the clay", "Mel: clay again, the kids…"], "What did Mel make?")
        -> ["kids", "clay"]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from .cues import QUESTION_WORDS
from .index.keywords import stems
from .index.passages import STOPWORDS

FEEDBACK_HITS = 10  # the first hits read for shared words
FEEDBACK_TERMS = 5  # at most this many words added
MIN_SHARED = 2  # a word counts when at least this many of those hits have it
FEEDBACK_WEIGHT = 2.0  # the second keyword ranking's weight (each ranking of the fusion: 1)
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_SPEAKER = re.compile(r"^[^:\n]{0,60}:")  # "Caroline (8 May 2023): " — who said it, not what


def feedback_terms(texts: Sequence[str], query: str) -> list[str]:
    """The words most of the given texts share (at least MIN_SHARED of them), the query's own words (by stem),
    question words and the commonest English words left out: at most FEEDBACK_TERMS, most shared first."""
    asked = set(stems(query))
    seen: dict[str, bool] = {}
    counts: Counter[str] = Counter()
    for text in texts:
        mine: set[str] = set()
        for word in _WORD.findall(_SPEAKER.sub("", text, count=1)):
            word = word.casefold()
            if word in mine:
                continue
            mine.add(word)
            if word not in seen:
                seen[word] = word not in STOPWORDS and word not in QUESTION_WORDS and not asked.intersection(stems(word))
            if seen[word]:
                counts[word] += 1
    return [word for word, n in counts.most_common() if n >= MIN_SHARED][:FEEDBACK_TERMS]
