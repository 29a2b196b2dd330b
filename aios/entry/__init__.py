"""entry: see README "How it fits together"."""
