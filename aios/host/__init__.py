"""host: see README "How it fits together"."""
