"""The semantic relevance floor, calibrated per query against texts that say nothing.

Embedding models do not put unrelated texts near cosine 0: e5 scores almost any pair of texts between
0.70 and 0.85, and short turns ("ok" → "Done.") sit close to every query. So a fixed cosine floor is
wrong for some query or other. Instead each query is compared with a few content-free *anchor* turns;
a hit found only by meaning must beat the best anchor by a margin (`search_semantic_margin`). Their
vectors are computed once per model and kept beside the vector cache.
"""

from __future__ import annotations

import numpy as np

from memex.config import Config
from memex.digest import blake2b
from memex.embed.model import Embedder

ANCHORS = (
    "User: ok\n\nAssistant: Done.",
    "User: thanks\n\nAssistant: You're welcome.",
    "User: yes, go ahead\n\nAssistant: Let me check that.",
    "User: 好的，继续\n\nAssistant: 好的。",
    "User: はい、お願いします\n\nAssistant: 承知しました。",
    "ok",
    "Let me look at the file.",
    "Sounds good.",
)
_cache: dict[str, np.ndarray] = {}


def anchor_vectors(config: Config, embedder: Embedder) -> np.ndarray:
    """The anchors' passage vectors (computed once per model, then read from disk)."""
    digest = blake2b("\n".join(ANCHORS).encode(), digest_size=6).hexdigest()
    key = f"{embedder.name}-{digest}"
    if key in _cache:
        return _cache[key]
    path = config.home / "vectors" / embedder.name / f"anchors-{digest}.f32"
    try:
        vectors = np.fromfile(path, dtype="<f4").reshape(len(ANCHORS), embedder.dimension)
    except (OSError, ValueError):
        vectors = embedder.embed_passages(list(ANCHORS))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            vectors.astype("<f4").tofile(path)
        except OSError:
            pass  # a read-only home: computed again next time
    _cache[key] = vectors
    return vectors


def semantic_floor(config: Config, embedder: Embedder, query: np.ndarray) -> float:
    """The cosine a hit found only by meaning must reach for this query."""
    best_anchor = float((anchor_vectors(config, embedder) @ query).max())
    return best_anchor + config.search_semantic_margin / 1000
