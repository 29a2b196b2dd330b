"""apphost: see README "How it fits together"."""
