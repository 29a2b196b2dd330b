"""llm: see README "How it fits together"."""
