"""Numbered schema migrations, applied in order; `PRAGMA user_version` records the last one applied.

Append new migrations at the end, never edit one that shipped. `schema.sql` beside this file is the
snapshot of the schema they produce (a test keeps the two in step).
"""

from __future__ import annotations

# A database older than this (or made before migrations were numbered) cannot be migrated: it is set
# aside and rebuilt from the transcripts, which are the source of truth.
MIN_COMPATIBLE_VERSION = 1

MIGRATIONS: list[str] = [
    # 1: sessions, their entries and turns, chunks with full-text search, file mentions, PR links.
    # Turn and chunk ids are never reused (AUTOINCREMENT): vectors and caches keyed by them stay valid.
    """
    CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        computer TEXT NOT NULL,
        project_dir TEXT,
        transcript_path TEXT,
        title TEXT,
        title_rank INTEGER NOT NULL DEFAULT 0,
        started_at TEXT,
        ended_at TEXT,
        last_line_index INTEGER NOT NULL DEFAULT 0,
        last_offset INTEGER NOT NULL DEFAULT 0,
        resume_line_index INTEGER NOT NULL DEFAULT 0,
        resume_offset INTEGER NOT NULL DEFAULT 0,
        provisional_turn_start INTEGER,
        last_compact_line_index INTEGER,
        file_size INTEGER,
        file_mtime_ns INTEGER,
        head_hash TEXT,
        tail_hash TEXT,
        bad_lines INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX sessions_started_at ON sessions(started_at);
    CREATE INDEX sessions_project_dir ON sessions(project_dir);
    CREATE UNIQUE INDEX sessions_transcript_path ON sessions(transcript_path);

    CREATE TABLE subagent_sessions (
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL,
        transcript_path TEXT NOT NULL,
        last_line_index INTEGER NOT NULL DEFAULT 0,
        last_offset INTEGER NOT NULL DEFAULT 0,
        resume_line_index INTEGER NOT NULL DEFAULT 0,
        resume_offset INTEGER NOT NULL DEFAULT 0,
        provisional_turn_start INTEGER,
        last_compact_line_index INTEGER,
        file_size INTEGER,
        file_mtime_ns INTEGER,
        head_hash TEXT,
        tail_hash TEXT,
        bad_lines INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (session_id, agent_id)
    );

    CREATE TABLE entries (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL DEFAULT '',
        line_index INTEGER NOT NULL,
        entry_type TEXT NOT NULL,
        kind TEXT NOT NULL,
        role TEXT,
        timestamp TEXT,
        uuid TEXT,
        parent_uuid TEXT,
        message_id TEXT,
        text TEXT,
        is_sidechain INTEGER NOT NULL DEFAULT 0,
        UNIQUE (session_id, agent_id, line_index)
    );

    CREATE TABLE turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL DEFAULT '',
        line_index INTEGER NOT NULL,
        end_line_index INTEGER NOT NULL,
        kind TEXT NOT NULL,
        is_sidechain INTEGER NOT NULL DEFAULT 0,
        provisional INTEGER NOT NULL DEFAULT 0,
        prompt_text TEXT NOT NULL DEFAULT '',
        full_text TEXT NOT NULL,
        tool_summary TEXT NOT NULL DEFAULT '',
        started_at TEXT,
        ended_at TEXT,
        UNIQUE (session_id, agent_id, line_index)
    );
    CREATE INDEX turns_started_at ON turns(started_at);

    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        chunk_index INTEGER NOT NULL,
        content TEXT NOT NULL,
        fts_text TEXT
    );
    CREATE INDEX chunks_turn_id ON chunks(turn_id);
    -- FTS5 reads its text through this view: CJK text is indexed with a space around each character.
    CREATE VIEW chunks_fts_source AS SELECT id, coalesce(fts_text, content) AS body FROM chunks;
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        body, content='chunks_fts_source', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, body) VALUES (new.id, coalesce(new.fts_text, new.content));
    END;
    CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, body)
        VALUES ('delete', old.id, coalesce(old.fts_text, old.content));
    END;

    CREATE TABLE file_mentions (
        id INTEGER PRIMARY KEY,
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        file_path TEXT NOT NULL,
        tool_name TEXT NOT NULL
    );
    CREATE INDEX file_mentions_turn_id ON file_mentions(turn_id);
    CREATE INDEX file_mentions_file_path ON file_mentions(file_path);

    CREATE TABLE pr_links (
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        pr_number INTEGER NOT NULL,
        pr_url TEXT,
        repository TEXT,
        PRIMARY KEY (session_id, pr_number)
    );
    CREATE INDEX pr_links_pr_number ON pr_links(pr_number);
    """,
    # 2: mirrors, the conversation-only text of each session (user and assistant text), keyed by session and
    # computer: local mirrors and those received from other computers share the table. The integer id only
    # anchors the full-text index (an implicit rowid may change on VACUUM); (session_id, computer) is the key.
    """
    CREATE TABLE mirrors (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        computer TEXT NOT NULL,
        agent TEXT NOT NULL,
        project TEXT,
        title TEXT,
        timestamp_start TEXT,
        timestamp_end TEXT,
        conversation_text TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        content_hash TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        fts_title TEXT,
        fts_body TEXT,
        UNIQUE (session_id, computer)
    );
    CREATE INDEX mirrors_timestamp_start ON mirrors(timestamp_start);
    CREATE INDEX mirrors_project ON mirrors(project);
    -- As for chunks: FTS5 reads CJK text with a space around each character.
    CREATE VIEW mirrors_fts_source AS
        SELECT id, coalesce(fts_title, title, '') AS title, coalesce(fts_body, conversation_text) AS body FROM mirrors;
    CREATE VIRTUAL TABLE mirrors_fts USING fts5(
        title, body, content='mirrors_fts_source', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER mirrors_fts_insert AFTER INSERT ON mirrors BEGIN
        INSERT INTO mirrors_fts(rowid, title, body)
        VALUES (new.id, coalesce(new.fts_title, new.title, ''), coalesce(new.fts_body, new.conversation_text));
    END;
    CREATE TRIGGER mirrors_fts_delete AFTER DELETE ON mirrors BEGIN
        INSERT INTO mirrors_fts(mirrors_fts, rowid, title, body)
        VALUES (
            'delete', old.id, coalesce(old.fts_title, old.title, ''), coalesce(old.fts_body, old.conversation_text)
        );
    END;
    CREATE TRIGGER mirrors_fts_update AFTER UPDATE ON mirrors BEGIN
        INSERT INTO mirrors_fts(mirrors_fts, rowid, title, body)
        VALUES (
            'delete', old.id, coalesce(old.fts_title, old.title, ''), coalesce(old.fts_body, old.conversation_text)
        );
        INSERT INTO mirrors_fts(rowid, title, body)
        VALUES (new.id, coalesce(new.fts_title, new.title, ''), coalesce(new.fts_body, new.conversation_text));
    END;
    """,
    # 3: vectors and the durable queue of embedding work. A vector belongs to a chunk, a turn or (level
    # `session`) a mirror, so a session known only by another computer's mirror has one too. Triggers keep
    # the queue complete (every new chunk, turn and changed mirror gets a pending job in the transaction
    # that wrote it) and delete a deleted owner's vectors and jobs (the cascade of the owner's delete).
    # A job's `text_hash` is its mirror's content hash (a mirror changes in place), or for chunks and turns
    # (never changed, only replaced) the hash of the text embedded. `model_name` lets search compare a
    # query only with vectors of its own model while a version bump is re-embedded lazily.
    """
    CREATE TABLE vectors (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        level TEXT NOT NULL CHECK (level IN ('chunk', 'turn', 'session')),
        owner_id INTEGER NOT NULL,
        model_name TEXT NOT NULL,
        model_version TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        embedding BLOB NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (level, owner_id, model_version)
    );
    CREATE INDEX vectors_model ON vectors(model_name, level, id);
    CREATE INDEX vectors_text_hash ON vectors(text_hash);

    CREATE TABLE embed_jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        level TEXT NOT NULL CHECK (level IN ('chunk', 'turn', 'session')),
        owner_id INTEGER NOT NULL,
        text_hash TEXT NOT NULL DEFAULT '',
        model_version TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'error')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        next_attempt_at TEXT,
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        UNIQUE (level, owner_id)
    );
    CREATE INDEX embed_jobs_queue ON embed_jobs(status, level, id);
    CREATE INDEX embed_jobs_version ON embed_jobs(model_version, status);

    -- (An upsert's conflict handling overrides a trigger's OR REPLACE: a requeue deletes, then inserts.)
    CREATE TRIGGER chunks_embed_enqueue AFTER INSERT ON chunks BEGIN
        INSERT INTO embed_jobs (level, owner_id) VALUES ('chunk', new.id);
    END;
    CREATE TRIGGER turns_embed_enqueue AFTER INSERT ON turns BEGIN
        INSERT INTO embed_jobs (level, owner_id) VALUES ('turn', new.id);
    END;
    CREATE TRIGGER mirrors_embed_enqueue AFTER INSERT ON mirrors BEGIN
        DELETE FROM embed_jobs WHERE level = 'session' AND owner_id = new.id;
        INSERT INTO embed_jobs (level, owner_id, text_hash) VALUES ('session', new.id, new.content_hash);
    END;
    CREATE TRIGGER mirrors_embed_requeue AFTER UPDATE OF content_hash ON mirrors
    WHEN old.content_hash IS NOT new.content_hash BEGIN
        DELETE FROM embed_jobs WHERE level = 'session' AND owner_id = new.id;
        INSERT INTO embed_jobs (level, owner_id, text_hash) VALUES ('session', new.id, new.content_hash);
    END;

    CREATE TRIGGER chunks_vectors_delete AFTER DELETE ON chunks BEGIN
        DELETE FROM vectors WHERE level = 'chunk' AND owner_id = old.id;
        DELETE FROM embed_jobs WHERE level = 'chunk' AND owner_id = old.id;
    END;
    CREATE TRIGGER turns_vectors_delete AFTER DELETE ON turns BEGIN
        DELETE FROM vectors WHERE level = 'turn' AND owner_id = old.id;
        DELETE FROM embed_jobs WHERE level = 'turn' AND owner_id = old.id;
    END;
    CREATE TRIGGER mirrors_vectors_delete AFTER DELETE ON mirrors BEGIN
        DELETE FROM vectors WHERE level = 'session' AND owner_id = old.id;
        DELETE FROM embed_jobs WHERE level = 'session' AND owner_id = old.id;
    END;

    -- What a store indexed before this migration holds waits in the queue too.
    INSERT INTO embed_jobs (level, owner_id) SELECT 'chunk', id FROM chunks;
    INSERT INTO embed_jobs (level, owner_id) SELECT 'turn', id FROM turns;
    INSERT INTO embed_jobs (level, owner_id, text_hash) SELECT 'session', id, content_hash FROM mirrors;
    """,
    # 4: distribution between computers (memex.sync). `outbox`: mirrors of local sessions waiting to be
    # published (redacted and encoded as they will travel), one per session (a newer version replaces a
    # waiting one); rows leave once Redis has them. `published_mirrors`: what was published, and to which
    # Redis data generation (`epoch`): a Redis that lost its data gets everything again. `computers`: the
    # last heartbeat seen of each computer, so `--computer` and `--raw` find an API while Redis is away.
    """
    CREATE TABLE outbox (
        session_id TEXT PRIMARY KEY,
        source_hash TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        payload BLOB NOT NULL,
        queued_at TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT
    );

    CREATE TABLE published_mirrors (
        session_id TEXT PRIMARY KEY,
        source_hash TEXT NOT NULL,
        epoch TEXT NOT NULL,
        published_at TEXT NOT NULL
    );

    CREATE TABLE computers (
        computer TEXT PRIMARY KEY,
        version TEXT,
        api_url TEXT,
        sessions INTEGER,
        started_at TEXT,
        last_seen TEXT NOT NULL
    );
    """,
    # 5: find-related (access patterns). `resource_embeddings` caches one vector per distinct file path (as
    # file_mentions stores it, relative to its project) and resource model version, shared by every session;
    # it only grows. The centroids are computed lazily by `memex find-related`, never at ingest: per turn the
    # weighted mean of its files' vectors, per session the weighted mean of its turns' (subagent turns
    # included). A session's `max_turn_id` is its watermark (its highest turn id when computed: a session
    # that gained turns since is recomputed); `access_pattern_state.turn_watermark` is the highest turn id
    # of the last refresh, so a refresh only looks at newer turns. Deleting a turn deletes its centroid and
    # marks its session stale (the triggers below; deleting a session cascades).
    """
    CREATE TABLE resource_embeddings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        resource TEXT NOT NULL,
        model_version TEXT NOT NULL,
        embedding BLOB NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (resource, model_version)
    );

    CREATE TABLE turn_access_patterns (
        turn_id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        model_version TEXT NOT NULL,
        weight REAL NOT NULL,
        files INTEGER NOT NULL,
        embedding BLOB NOT NULL
    );
    CREATE INDEX turn_access_patterns_session ON turn_access_patterns(session_id);

    CREATE TABLE session_access_patterns (
        session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
        model_version TEXT NOT NULL,
        turns INTEGER NOT NULL,
        files INTEGER NOT NULL,
        max_turn_id INTEGER NOT NULL,
        stale INTEGER NOT NULL DEFAULT 0,
        embedding BLOB,
        computed_at TEXT NOT NULL
    );
    CREATE INDEX session_access_patterns_stale ON session_access_patterns(session_id) WHERE stale != 0;

    CREATE TABLE access_pattern_state (
        model_version TEXT PRIMARY KEY,
        turn_watermark INTEGER NOT NULL,
        updated_at TEXT NOT NULL
    );

    CREATE TRIGGER turns_access_patterns_delete AFTER DELETE ON turns BEGIN
        DELETE FROM turn_access_patterns WHERE turn_id = old.id;
        UPDATE session_access_patterns SET stale = 1 WHERE session_id = old.session_id AND stale = 0;
    END;
    """,
    # 6: incremental mirrors. A mirror's conversation is stored in segments (`mirror_segments`: consecutive
    # pieces of the text, cut at paragraph breaks chosen by content, about MIRROR_SEGMENT_CHARS long) and
    # full-text indexed per segment, so a session that grows rewrites and re-indexes only its last segments
    # instead of the whole conversation. A segment also holds the spans of the messages that end in it,
    # relative to its start (so a segment whose text only moved stays the same row), and the session title
    # when it is the first. `mirror_records` holds the rest of each mirror (its metadata with an empty
    # `messages` list); the view `mirrors` joins them back into the rows readers know, text and spans in
    # the order of `start`. (A segment's small columns come before its text: reading them never walks the
    # text's pages.) The triggers and indexes of `mirrors` follow it to `mirror_records`. `mirror_state`
    # remembers, per local session, how far its conversation had got at the session's resume line, so the
    # next ingest reads only the entries after it; `entries_message_id` finds the earlier text lines of a
    # response in a main stream (its repeated blocks count once). A mirror stored before this migration
    # keeps its text and spans as one segment until it next changes.
    """
    DROP TRIGGER mirrors_fts_insert;
    DROP TRIGGER mirrors_fts_delete;
    DROP TRIGGER mirrors_fts_update;
    DROP TABLE mirrors_fts;
    DROP VIEW mirrors_fts_source;
    ALTER TABLE mirrors RENAME TO mirror_records;

    CREATE TABLE mirror_segments (
        id INTEGER PRIMARY KEY,
        mirror_id INTEGER NOT NULL REFERENCES mirror_records(id) ON DELETE CASCADE,
        start INTEGER NOT NULL,
        length INTEGER NOT NULL,
        digest TEXT,
        title TEXT NOT NULL DEFAULT '',
        spans TEXT NOT NULL DEFAULT '[]',
        body TEXT NOT NULL,
        fts_body TEXT
    );
    CREATE INDEX mirror_segments_mirror ON mirror_segments(mirror_id, start);
    -- Search maps a hit (a segment) to its mirror through this, without reading the segment's row.
    CREATE INDEX mirror_segments_owner ON mirror_segments(id, mirror_id);
    INSERT INTO mirror_segments (mirror_id, start, length, title, spans, body, fts_body)
        SELECT id, 0, length(conversation_text), coalesce(fts_title, title, ''),
            coalesce(json_extract(metadata, '$.messages'), '[]'), conversation_text, fts_body
        FROM mirror_records WHERE conversation_text != '' ORDER BY id;
    UPDATE mirror_records SET metadata = json_set(metadata, '$.messages', json('[]'))
        WHERE json_type(metadata, '$.messages') = 'array';
    ALTER TABLE mirror_records DROP COLUMN conversation_text;
    ALTER TABLE mirror_records DROP COLUMN fts_title;
    ALTER TABLE mirror_records DROP COLUMN fts_body;

    CREATE VIEW mirrors AS SELECT r.id, r.session_id, r.computer, r.agent, r.project, r.title, r.timestamp_start,
        r.timestamp_end,
        coalesce((SELECT group_concat(body, '') FROM (SELECT body FROM mirror_segments s
            WHERE s.mirror_id = r.id ORDER BY s.start)), '') AS conversation_text,
        CASE WHEN json_type(r.metadata, '$.messages') IS NULL THEN r.metadata
        ELSE json_set(r.metadata, '$.messages', (SELECT json_group_array(json(span)) FROM (
            SELECT json_array(json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]') + s.start,
                json_extract(j.value, '$[2]') + s.start, json_extract(j.value, '$[3]')) AS span
            FROM mirror_segments s, json_each(s.spans) j WHERE s.mirror_id = r.id ORDER BY s.start, j.key)))
        END AS metadata,
        r.content_hash, r.updated_at FROM mirror_records r;
    CREATE TRIGGER mirrors_delete INSTEAD OF DELETE ON mirrors BEGIN
        DELETE FROM mirror_records WHERE id = old.id;
    END;

    -- As for chunks: FTS5 reads CJK text with a space around each character.
    CREATE VIEW mirrors_fts_source AS SELECT id, title, coalesce(fts_body, body) AS body FROM mirror_segments;
    CREATE VIRTUAL TABLE mirrors_fts USING fts5(
        title, body, content='mirrors_fts_source', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
    );
    INSERT INTO mirrors_fts(mirrors_fts) VALUES ('rebuild');
    CREATE TRIGGER mirror_segments_fts_insert AFTER INSERT ON mirror_segments BEGIN
        INSERT INTO mirrors_fts(rowid, title, body) VALUES (new.id, new.title, coalesce(new.fts_body, new.body));
    END;
    CREATE TRIGGER mirror_segments_fts_delete AFTER DELETE ON mirror_segments BEGIN
        INSERT INTO mirrors_fts(mirrors_fts, rowid, title, body)
        VALUES ('delete', old.id, old.title, coalesce(old.fts_body, old.body));
    END;
    CREATE TRIGGER mirror_segments_fts_update AFTER UPDATE OF title ON mirror_segments
    WHEN old.title IS NOT new.title BEGIN
        INSERT INTO mirrors_fts(mirrors_fts, rowid, title, body)
        VALUES ('delete', old.id, old.title, coalesce(old.fts_body, old.body));
        INSERT INTO mirrors_fts(rowid, title, body) VALUES (new.id, new.title, coalesce(new.fts_body, new.body));
    END;

    CREATE TABLE mirror_state (
        session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
        line_index INTEGER NOT NULL,
        messages INTEGER NOT NULL,
        chars INTEGER NOT NULL,
        last_role TEXT,
        last_start INTEGER,
        last_chars INTEGER NOT NULL DEFAULT 0,
        last_timestamp TEXT,
        head INTEGER,
        tail_start INTEGER,
        content_hash TEXT NOT NULL,
        recipe TEXT NOT NULL
    );
    CREATE INDEX entries_message_id ON entries(message_id)
        WHERE message_id IS NOT NULL AND kind = 'assistant' AND agent_id = '' AND text IS NOT NULL;
    """,
    # 7: today's agent formats (Claude Code 2.1.330, Codex 0.169, Gemini 0.61). `unknown_records`: the records
    # of types their agent's adapter does not know (kept as entries too), with the version of the agent that
    # wrote them, so `memex stats` shows a format change the day it lands; `sessions.agent_version` is the
    # latest version seen in a session. `subagent_sessions` gains what Claude's `agent-<id>.meta.json` says.
    # `pr_links` is per stream and per link (a number alone is not unique across repositories): links come
    # from the agent's own records (`source = 'record'`) and from pull request URLs in tool output and
    # answers (`source = 'text'`); readers deduplicate by `link_key` (the URL). Title ranks make room for a
    # subagent's title (the weakest: a session known only through a subagent). Every stream is marked to be
    # read again, so the next `memex index` applies the new parsers to what is already indexed.
    """
    ALTER TABLE sessions ADD COLUMN agent_version TEXT;
    ALTER TABLE subagent_sessions ADD COLUMN agent_type TEXT;
    ALTER TABLE subagent_sessions ADD COLUMN description TEXT;

    CREATE TABLE unknown_records (
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL DEFAULT '',
        line_index INTEGER NOT NULL,
        record_type TEXT NOT NULL,
        agent_version TEXT,
        PRIMARY KEY (session_id, agent_id, line_index)
    );

    CREATE TABLE pr_links_v7 (
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL DEFAULT '',
        link_key TEXT NOT NULL,
        pr_number INTEGER NOT NULL,
        pr_url TEXT,
        repository TEXT,
        source TEXT NOT NULL DEFAULT 'record' CHECK (source IN ('record', 'text')),
        line_index INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (session_id, agent_id, link_key)
    );
    INSERT INTO pr_links_v7 (session_id, link_key, pr_number, pr_url, repository)
        SELECT session_id, coalesce(pr_url, coalesce(repository, '') || '#' || pr_number), pr_number, pr_url,
            repository FROM pr_links;
    DROP TABLE pr_links;
    ALTER TABLE pr_links_v7 RENAME TO pr_links;
    CREATE INDEX pr_links_pr_number ON pr_links(pr_number);

    UPDATE sessions SET title_rank = title_rank + 1 WHERE title_rank > 0;
    UPDATE sessions SET file_mtime_ns = -1, head_hash = 'reparse' WHERE file_size IS NOT NULL;
    UPDATE subagent_sessions SET file_mtime_ns = -1, head_hash = 'reparse';
    """,
    # 8: the archive and forgetting. `archive_streams` caches what each compressed copy of a transcript in
    # `$MEMEX_HOME/archive` holds (the file itself is the truth: a store rebuilt from scratch finds its copies
    # again by reading their headers): the stream it copies, the source file, how many of its bytes are
    # archived and the size they take, and when the source was last seen. Not tied to `sessions` by a
    # foreign key: a copy outlives its session's rows (a clean rebuild) until `memex forget` removes it.
    # `forgotten`: sessions the user asked memex to forget (a tombstone per session and the computer it ran
    # on), so re-indexing a transcript still on disk, or a mirror delivered again, does not bring them back;
    # `origin` is the computer where the user asked, `published_at` when this computer told the others.
    """
    CREATE TABLE archive_streams (
        session_id TEXT NOT NULL,
        agent_id TEXT NOT NULL DEFAULT '',
        agent TEXT NOT NULL,
        source_path TEXT NOT NULL,
        archive_path TEXT NOT NULL,
        raw_bytes INTEGER NOT NULL,
        stored_bytes INTEGER NOT NULL,
        pieces INTEGER NOT NULL,
        source_size INTEGER,
        source_mtime_ns INTEGER,
        source_gone_at TEXT,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (session_id, agent_id)
    );
    CREATE UNIQUE INDEX archive_streams_path ON archive_streams(archive_path);

    CREATE TABLE forgotten (
        session_id TEXT NOT NULL,
        computer TEXT NOT NULL,
        origin TEXT NOT NULL,
        forgotten_at TEXT NOT NULL,
        published_at TEXT,
        PRIMARY KEY (session_id, computer)
    );
    """,
    # 9: tool output and the voices of the conversation, searchable on request (`memex search --in tools`,
    # `--role user|assistant`); lexical only, so neither gets an embed job. `tool_outputs`: the output of each
    # tool call of a turn (tool results are not in `entries.text`), bounded at ingest (the head and the tail
    # of a long output: `tool_output_max_chars`), with the tool's name when the call was seen; it belongs
    # to its turn (a rebuilt turn rebuilds its outputs) and stays on this computer (mirrors never read it).
    # `tool_output_backfill`: the streams indexed before this migration, whose outputs `memex index` reads
    # from their transcripts without rebuilding their turns (a rebuild would re-embed every chunk).
    # `entries_fts`: the words of each prompt (the user's) and each assistant message, the text entries
    # already hold, indexed per entry so a search can keep to one voice; `entries.fts_text` is the
    # CJK-spaced form as for chunks (entries stored before this migration are indexed as they are).
    """
    CREATE TABLE tool_outputs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        line_index INTEGER NOT NULL,
        tool_name TEXT,
        is_error INTEGER NOT NULL DEFAULT 0,
        chars INTEGER NOT NULL,
        text TEXT NOT NULL,
        fts_text TEXT
    );
    CREATE INDEX tool_outputs_turn_id ON tool_outputs(turn_id);
    CREATE VIEW tool_outputs_fts_source AS SELECT id, coalesce(fts_text, text) AS body FROM tool_outputs;
    CREATE VIRTUAL TABLE tool_outputs_fts USING fts5(
        body, content='tool_outputs_fts_source', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER tool_outputs_fts_insert AFTER INSERT ON tool_outputs BEGIN
        INSERT INTO tool_outputs_fts(rowid, body) VALUES (new.id, coalesce(new.fts_text, new.text));
    END;
    CREATE TRIGGER tool_outputs_fts_delete AFTER DELETE ON tool_outputs BEGIN
        INSERT INTO tool_outputs_fts(tool_outputs_fts, rowid, body)
        VALUES ('delete', old.id, coalesce(old.fts_text, old.text));
    END;

    CREATE TABLE tool_output_backfill (
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (session_id, agent_id)
    );
    INSERT INTO tool_output_backfill (session_id, agent_id)
        SELECT DISTINCT session_id, agent_id FROM turns;

    ALTER TABLE entries ADD COLUMN fts_text TEXT;
    CREATE VIEW entries_fts_source AS SELECT id, coalesce(fts_text, text) AS body FROM entries
        WHERE kind IN ('prompt', 'assistant') AND text IS NOT NULL;
    CREATE VIRTUAL TABLE entries_fts USING fts5(
        body, content='entries_fts_source', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
    );
    INSERT INTO entries_fts(entries_fts) VALUES ('rebuild');
    CREATE TRIGGER entries_fts_insert AFTER INSERT ON entries
    WHEN new.kind IN ('prompt', 'assistant') AND new.text IS NOT NULL BEGIN
        INSERT INTO entries_fts(rowid, body) VALUES (new.id, coalesce(new.fts_text, new.text));
    END;
    CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries
    WHEN old.kind IN ('prompt', 'assistant') AND old.text IS NOT NULL BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, body) VALUES ('delete', old.id, coalesce(old.fts_text, old.text));
    END;
    """,
    # 10: the archive's listings. `archive_listings`: the modification time of the archive folder (`''`)
    # and of each agent's folder in it (`claude`…) when every session folder they held was known to this
    # store (`memex.archive.reader.register_found`). While none of them has changed, no copy can be unknown
    # and `memex index` does not list them again; a store rebuilt from scratch has no rows, so it lists them.
    """
    CREATE TABLE archive_listings (
        folder TEXT PRIMARY KEY,
        mtime_ns INTEGER NOT NULL
    );
    """,
    # 11: snapshots of what every `memex index` reads whole (`memex.store.snapshots`): the stored streams
    # (each transcript's stored size, time and stream) and the archive's source paths, each one marshal'd
    # value, with the log of what changed since it was taken, which triggers keep in the transaction of
    # every change (a changed stream: the path it had, and its key now, to read it again). A reader takes a
    # snapshot with its log in one read transaction, so what it gets is the store's own state, whoever wrote
    # to it and however.
    """
    CREATE TABLE snapshots (
        kind TEXT PRIMARY KEY,
        last_change INTEGER NOT NULL,
        data BLOB NOT NULL
    );
    CREATE TABLE stream_changes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        old_path TEXT,
        session_id TEXT NOT NULL,
        agent_id TEXT NOT NULL
    );
    CREATE TRIGGER sessions_stream_insert AFTER INSERT ON sessions BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id) VALUES (NULL, new.session_id, '');
    END;
    CREATE TRIGGER sessions_stream_update AFTER UPDATE ON sessions
    WHEN old.transcript_path IS NOT new.transcript_path OR old.file_size IS NOT new.file_size
        OR old.file_mtime_ns IS NOT new.file_mtime_ns OR old.agent IS NOT new.agent
        OR old.session_id IS NOT new.session_id OR old.computer IS NOT new.computer BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id) VALUES (old.transcript_path, new.session_id, '');
        INSERT INTO stream_changes (old_path, session_id, agent_id)
            SELECT transcript_path, session_id, agent_id FROM subagent_sessions
            WHERE session_id IN (old.session_id, new.session_id)
            AND (old.agent IS NOT new.agent OR old.session_id IS NOT new.session_id);
    END;
    CREATE TRIGGER sessions_stream_delete AFTER DELETE ON sessions BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id) VALUES (old.transcript_path, old.session_id, '');
    END;
    CREATE TRIGGER subagent_sessions_stream_insert AFTER INSERT ON subagent_sessions BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id) VALUES (NULL, new.session_id, new.agent_id);
    END;
    CREATE TRIGGER subagent_sessions_stream_update AFTER UPDATE ON subagent_sessions
    WHEN old.transcript_path IS NOT new.transcript_path OR old.file_size IS NOT new.file_size
        OR old.file_mtime_ns IS NOT new.file_mtime_ns OR old.session_id IS NOT new.session_id
        OR old.agent_id IS NOT new.agent_id BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id)
            VALUES (old.transcript_path, new.session_id, new.agent_id);
    END;
    CREATE TRIGGER subagent_sessions_stream_delete AFTER DELETE ON subagent_sessions BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id)
            VALUES (old.transcript_path, old.session_id, old.agent_id);
    END;
    -- The stream log also names the sessions whose mirror went (or moved): with the streams that changed,
    -- those are the only sessions that can have come to hold conversation without a mirror since the last
    -- check (`mirror_check`: the last change it covered; memex.ingest.indexer.backfill_mirrors).
    CREATE TRIGGER mirror_records_stream_delete AFTER DELETE ON mirror_records BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id) VALUES (NULL, old.session_id, '');
    END;
    CREATE TRIGGER mirror_records_stream_update AFTER UPDATE ON mirror_records
    WHEN old.session_id IS NOT new.session_id OR old.computer IS NOT new.computer BEGIN
        INSERT INTO stream_changes (old_path, session_id, agent_id) VALUES (NULL, old.session_id, '');
    END;
    CREATE TABLE mirror_check (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        verified INTEGER NOT NULL
    );
    CREATE TABLE archive_source_changes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        source_path TEXT NOT NULL
    );
    CREATE TRIGGER archive_streams_source_insert AFTER INSERT ON archive_streams BEGIN
        INSERT INTO archive_source_changes (source_path) VALUES (new.source_path);
    END;
    CREATE TRIGGER archive_streams_source_update AFTER UPDATE OF source_path ON archive_streams
    WHEN old.source_path IS NOT new.source_path BEGIN
        INSERT INTO archive_source_changes (source_path) VALUES (new.source_path);
    END;
    CREATE INDEX archive_streams_source_path ON archive_streams(source_path);
    -- A store that no `memex index` reads (a hook's ingests only) keeps its logs short: every 1,024th change,
    -- a snapshot 4,096 changes old (far past use: a reader reads row by row past 256) goes, and with it the
    -- log it needed.
    CREATE TRIGGER stream_changes_bound AFTER INSERT ON stream_changes WHEN new.id % 1024 = 0 BEGIN
        DELETE FROM snapshots WHERE kind = 'streams' AND last_change < new.id - 4096;
        DELETE FROM stream_changes WHERE id < new.id - 4096
            AND NOT EXISTS (SELECT 1 FROM snapshots WHERE kind = 'streams');
    END;
    CREATE TRIGGER archive_source_changes_bound AFTER INSERT ON archive_source_changes
    WHEN new.id % 1024 = 0 BEGIN
        DELETE FROM snapshots WHERE kind = 'archive_sources' AND last_change < new.id - 4096;
        DELETE FROM archive_source_changes WHERE id < new.id - 4096
            AND NOT EXISTS (SELECT 1 FROM snapshots WHERE kind = 'archive_sources');
    END;
    """,
    # 12: the streams whose archive copy is not known to match what was indexed (`archive_pending`): triggers
    # name a stream in the transaction that indexes it, and keeping its copy (`memex.archive.copies`) takes
    # it out. A run killed between the two left a stream indexed, so never read again, and never copied; a
    # stream still named here is read by the next `memex index` (its copy made then). Every stream without a
    # copy that matches its indexed size and time is named at once.
    """
    CREATE TABLE archive_pending (
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (session_id, agent_id)
    );
    CREATE TRIGGER sessions_archive_pending_insert AFTER INSERT ON sessions WHEN new.file_size IS NOT NULL BEGIN
        INSERT OR IGNORE INTO archive_pending (session_id, agent_id) VALUES (new.session_id, '');
    END;
    CREATE TRIGGER sessions_archive_pending_update AFTER UPDATE ON sessions
    WHEN new.file_size IS NOT NULL AND (old.file_size IS NOT new.file_size OR old.file_mtime_ns IS NOT new.file_mtime_ns
        OR old.transcript_path IS NOT new.transcript_path) BEGIN
        INSERT OR IGNORE INTO archive_pending (session_id, agent_id) VALUES (new.session_id, '');
    END;
    CREATE TRIGGER subagent_sessions_archive_pending_insert AFTER INSERT ON subagent_sessions
    WHEN new.file_size IS NOT NULL BEGIN
        INSERT OR IGNORE INTO archive_pending (session_id, agent_id) VALUES (new.session_id, new.agent_id);
    END;
    CREATE TRIGGER subagent_sessions_archive_pending_update AFTER UPDATE ON subagent_sessions
    WHEN new.file_size IS NOT NULL AND (old.file_size IS NOT new.file_size OR old.file_mtime_ns IS NOT new.file_mtime_ns
        OR old.transcript_path IS NOT new.transcript_path) BEGIN
        INSERT OR IGNORE INTO archive_pending (session_id, agent_id) VALUES (new.session_id, new.agent_id);
    END;
    INSERT OR IGNORE INTO archive_pending (session_id, agent_id)
        SELECT s.session_id, '' FROM sessions s WHERE s.file_size IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM archive_streams a WHERE a.session_id = s.session_id AND a.agent_id = ''
            AND a.source_size = s.file_size AND a.source_mtime_ns IS s.file_mtime_ns);
    INSERT OR IGNORE INTO archive_pending (session_id, agent_id)
        SELECT s.session_id, s.agent_id FROM subagent_sessions s WHERE s.file_size IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM archive_streams a WHERE a.session_id = s.session_id AND a.agent_id = s.agent_id
            AND a.source_size = s.file_size AND a.source_mtime_ns IS s.file_mtime_ns);
    """,
    # 13: what a `memex index PATH` (one named transcript, in a store of tens of thousands) looks up without
    # reading every row: a subagent stream by its file (`memex.store.streams.streams_at`; a main transcript's
    # path is indexed since 1), and the sessions stored under another name of this computer
    # (`memex.store.computers.stranded`: none, as a rule, found without scanning every session).
    """
    CREATE INDEX subagent_sessions_transcript_path ON subagent_sessions(transcript_path);
    CREATE INDEX sessions_computer ON sessions(computer);
    """,
    # 14: scoped npm packages a prompt named (`npm i -D @biomejs/biome`, pasted knip output) were recorded as
    # @-mentioned files; `memex.ingest.mentions.is_package` leaves them out since, and those recorded before
    # go: `scope/name` in lowercase, one `/`, no dot (a dotted name may be a file: kept), written so in the
    # prompt (`@scope/name`, never `@scope/name/`: a folder's `/` was dropped when the path was stored), with
    # a version (`@scope/name@1`) or in a prompt that speaks of packages when the scope is no usual source
    # folder (`@bin/setup` alone, `@src/utils` anywhere, is a file: `mentions.SOURCE_FOLDERS`). The sessions
    # that lose one have their access patterns computed again (find-related).
    """
    CREATE TEMP TABLE package_mentions AS
        SELECT m.id, m.session_id FROM file_mentions AS m JOIN turns AS t ON t.id = m.turn_id
        WHERE m.tool_name = 'at_mention' AND m.file_path GLOB '[a-z0-9]*/[a-z0-9]*'
            AND m.file_path NOT GLOB '*/*/*' AND m.file_path NOT GLOB '*[^a-z0-9_/-]*'
            AND instr(t.prompt_text, '@' || m.file_path) > 0 AND instr(t.prompt_text, '@' || m.file_path || '/') = 0
            AND (instr(t.prompt_text, '@' || m.file_path || '@') > 0 OR (
                substr(m.file_path, 1, instr(m.file_path, '/') - 1) NOT IN ('src', 'lib', 'app', 'apps', 'test',
                    'tests', 'spec', 'bin', 'script', 'scripts', 'doc', 'docs', 'packages')
                AND (t.prompt_text LIKE '%npm%'
                OR t.prompt_text LIKE '%yarn%' OR t.prompt_text LIKE '%npx%' OR t.prompt_text LIKE '%node_modules%'
                OR t.prompt_text LIKE '%package.json%' OR t.prompt_text LIKE '%dependenc%'
                OR t.prompt_text LIKE '%bunx%' OR t.prompt_text LIKE '%bun add%' OR t.prompt_text LIKE '%bun i%')));
    UPDATE session_access_patterns SET stale = 1
        WHERE session_id IN (SELECT session_id FROM temp.package_mentions);
    DELETE FROM file_mentions WHERE id IN (SELECT id FROM temp.package_mentions);
    DROP TABLE temp.package_mentions;
    """,
]
# The first migration that has the snapshots: any later one drops them (a migration may rebuild a table the
# triggers watch, and a snapshot is only ever a copy).
SNAPSHOTS_VERSION = 11

SCHEMA_VERSION = len(MIGRATIONS)
