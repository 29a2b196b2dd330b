"""Duplex conversation and a proactive desktop (DESIGN §18): the desktop that listens while
the user types, speaks first when it should, and runs what the user scheduled."""
