"""Between computers: mirrors over Redis Streams, heartbeats, the daemon and its HTTP API.

| module | job |
| --- | --- |
| `redact` | secrets out of text that leaves this computer |
| `wire` | a mirror as it travels: redacted, compressed JSON |
| `keys` | the Redis key names under a prefix |
| `link` | the connection to Redis: reconnects, says an outage once, notices a Redis that lost its data |
| `outbox` | publishing: which local mirrors are due, the `outbox` table, sending it to Redis |
| `inbox` | receiving: the consumer group, catch-up from the latest mirrors, idempotent upsert |
| `heartbeat` | announcing this computer and reading who else is there |
| `watch` | noticing changed transcripts (a polling scan, debounced) |
| `signals` | a Stop hook telling the daemon that a session just stopped |
| `token` | the API's bearer token |
| `api` | what the daemon's HTTP API answers (search, a mirror, a transcript's file), server-free |
| `server` | serving it: Starlette on uvicorn, worker threads, deadlines for slow clients |
| `readers` | the pool of read-only store connections the API's workers borrow |
| `client` | the client of another computer's API |
| `remote` | what the CLI asks another computer (`--computer`, `--raw`) |
| `daemon` | the loop that ties it together (`memex daemon`) |
"""
