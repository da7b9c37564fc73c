-- Snapshot of the schema the migrations produce (tests/store/test_db.py keeps it in step).
-- Regenerate: uv run python -m memex.store.snapshot
CREATE INDEX chunks_turn_id ON chunks(turn_id);
CREATE INDEX file_mentions_file_path ON file_mentions(file_path);
CREATE INDEX file_mentions_turn_id ON file_mentions(turn_id);
CREATE INDEX mirrors_project ON mirrors(project);
CREATE INDEX mirrors_timestamp_start ON mirrors(timestamp_start);
CREATE INDEX pr_links_pr_number ON pr_links(pr_number);
CREATE INDEX sessions_project_dir ON sessions(project_dir);
CREATE INDEX sessions_started_at ON sessions(started_at);
CREATE UNIQUE INDEX sessions_transcript_path ON sessions(transcript_path);
CREATE INDEX turns_started_at ON turns(started_at);
CREATE TABLE chunks ( id INTEGER PRIMARY KEY AUTOINCREMENT, turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE, chunk_index INTEGER NOT NULL, content TEXT NOT NULL, fts_text TEXT );
CREATE VIRTUAL TABLE chunks_fts USING fts5( body, content='chunks_fts_source', content_rowid='id', tokenize='unicode61 remove_diacritics 2' );
CREATE TABLE entries ( id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE, agent_id TEXT NOT NULL DEFAULT '', line_index INTEGER NOT NULL, entry_type TEXT NOT NULL, kind TEXT NOT NULL, role TEXT, timestamp TEXT, uuid TEXT, parent_uuid TEXT, message_id TEXT, text TEXT, is_sidechain INTEGER NOT NULL DEFAULT 0, UNIQUE (session_id, agent_id, line_index) );
CREATE TABLE file_mentions ( id INTEGER PRIMARY KEY, turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE, session_id TEXT NOT NULL, file_path TEXT NOT NULL, tool_name TEXT NOT NULL );
CREATE TABLE mirrors ( id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, computer TEXT NOT NULL, agent TEXT NOT NULL, project TEXT, title TEXT, timestamp_start TEXT, timestamp_end TEXT, conversation_text TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL, updated_at TEXT NOT NULL, fts_title TEXT, fts_body TEXT, UNIQUE (session_id, computer) );
CREATE VIRTUAL TABLE mirrors_fts USING fts5( title, body, content='mirrors_fts_source', content_rowid='id', tokenize='unicode61 remove_diacritics 2' );
CREATE TABLE pr_links ( session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE, pr_number INTEGER NOT NULL, pr_url TEXT, repository TEXT, PRIMARY KEY (session_id, pr_number) );
CREATE TABLE sessions ( session_id TEXT PRIMARY KEY, agent TEXT NOT NULL, computer TEXT NOT NULL, project_dir TEXT, transcript_path TEXT, title TEXT, title_rank INTEGER NOT NULL DEFAULT 0, started_at TEXT, ended_at TEXT, last_line_index INTEGER NOT NULL DEFAULT 0, last_offset INTEGER NOT NULL DEFAULT 0, resume_line_index INTEGER NOT NULL DEFAULT 0, resume_offset INTEGER NOT NULL DEFAULT 0, provisional_turn_start INTEGER, last_compact_line_index INTEGER, file_size INTEGER, file_mtime_ns INTEGER, head_hash TEXT, tail_hash TEXT, bad_lines INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL );
CREATE TABLE subagent_sessions ( session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE, agent_id TEXT NOT NULL, transcript_path TEXT NOT NULL, last_line_index INTEGER NOT NULL DEFAULT 0, last_offset INTEGER NOT NULL DEFAULT 0, resume_line_index INTEGER NOT NULL DEFAULT 0, resume_offset INTEGER NOT NULL DEFAULT 0, provisional_turn_start INTEGER, last_compact_line_index INTEGER, file_size INTEGER, file_mtime_ns INTEGER, head_hash TEXT, tail_hash TEXT, bad_lines INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL, PRIMARY KEY (session_id, agent_id) );
CREATE TABLE turns ( id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE, agent_id TEXT NOT NULL DEFAULT '', line_index INTEGER NOT NULL, end_line_index INTEGER NOT NULL, kind TEXT NOT NULL, is_sidechain INTEGER NOT NULL DEFAULT 0, provisional INTEGER NOT NULL DEFAULT 0, prompt_text TEXT NOT NULL DEFAULT '', full_text TEXT NOT NULL, tool_summary TEXT NOT NULL DEFAULT '', started_at TEXT, ended_at TEXT, UNIQUE (session_id, agent_id, line_index) );
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN INSERT INTO chunks_fts(chunks_fts, rowid, body) VALUES ('delete', old.id, coalesce(old.fts_text, old.content)); END;
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN INSERT INTO chunks_fts(rowid, body) VALUES (new.id, coalesce(new.fts_text, new.content)); END;
CREATE TRIGGER mirrors_fts_delete AFTER DELETE ON mirrors BEGIN INSERT INTO mirrors_fts(mirrors_fts, rowid, title, body) VALUES ( 'delete', old.id, coalesce(old.fts_title, old.title, ''), coalesce(old.fts_body, old.conversation_text) ); END;
CREATE TRIGGER mirrors_fts_insert AFTER INSERT ON mirrors BEGIN INSERT INTO mirrors_fts(rowid, title, body) VALUES (new.id, coalesce(new.fts_title, new.title, ''), coalesce(new.fts_body, new.conversation_text)); END;
CREATE TRIGGER mirrors_fts_update AFTER UPDATE ON mirrors BEGIN INSERT INTO mirrors_fts(mirrors_fts, rowid, title, body) VALUES ( 'delete', old.id, coalesce(old.fts_title, old.title, ''), coalesce(old.fts_body, old.conversation_text) ); INSERT INTO mirrors_fts(rowid, title, body) VALUES (new.id, coalesce(new.fts_title, new.title, ''), coalesce(new.fts_body, new.conversation_text)); END;
CREATE VIEW chunks_fts_source AS SELECT id, coalesce(fts_text, content) AS body FROM chunks;
CREATE VIEW mirrors_fts_source AS SELECT id, coalesce(fts_title, title, '') AS title, coalesce(fts_body, conversation_text) AS body FROM mirrors;
