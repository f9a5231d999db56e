"""Helpers that know nothing of the IR: graph orders, garbage-collector control."""
