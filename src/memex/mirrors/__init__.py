"""Mirrors: the conversation-only text of a session, the artefact that travels between computers.

`model` (what a mirror is), `build` (from a session's stored entries, incrementally), `segments` (how its
text is stored and full-text indexed in pieces), `search` (full-text search over mirrors).
"""
