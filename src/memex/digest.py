"""blake2b, memex's one hash (ids, fingerprints, content hashes), without importing `hashlib`.

`hashlib` loads OpenSSL's bindings (~3 ms of a process's start, paid by every hook that hashes a session
id or the settings); its `blake2b` is CPython's own `_blake2.blake2b` (`hashlib.blake2b is
_blake2.blake2b`), imported here directly when the interpreter has it.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter without the module: hashlib's, the same function
    from hashlib import blake2b

__all__ = ["blake2b"]
