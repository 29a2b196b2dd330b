"""desktop: see README "How it fits together"."""
