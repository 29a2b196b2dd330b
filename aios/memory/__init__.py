"""Memory and the assistant's self (DESIGN §15).

- :mod:`~aios.memory.store` — ``MemoryStore``: the memories (proposed, active,
  superseded, deleted), their search (FTS5 trigram + short grams, recency, use,
  pinned, vectors by reciprocal rank fusion) and the MEMORY.md parse-back.
- :mod:`~aios.memory.text` — what the indexes hold and what a query asks of them
  (CJK runs split into grams, English word forms), pure functions.
- :mod:`~aios.memory.vectors` — the ``/v1/embeddings`` client and the vector table.
- :mod:`~aios.memory.selfdoc` — the self files (SOUL, USER, AGENTS, MEMORY.md).
- :mod:`~aios.memory.extract` — durable facts from a conversation, by rules or the LLM.
"""

from __future__ import annotations

from aios.memory.store import MEMORY_TEXT_MAX as MEMORY_TEXT_MAX, MemoryStore as MemoryStore
from aios.memory.vectors import Embedder as Embedder, EndpointEmbedder as EndpointEmbedder
