"""runs: see README "How it fits together"."""
