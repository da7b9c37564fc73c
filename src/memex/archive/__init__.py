"""The archive: a compressed copy of every transcript memex indexed, kept after the agent deletes it.

| module | job |
| --- | --- |
| `frames` | the file layout: zstd frames (`zstd -d` gives the transcript back), pieces checked by hash |
| `copies` | keeping one stream's copy up to date: append what the source gained, verified, crash-safe |
| `reader` | reading a copy back: a file-like reader (`--raw`, the HTTP API), restoring for a re-parse |
"""
