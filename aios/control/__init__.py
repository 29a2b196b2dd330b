"""control: see README "How it fits together"."""
