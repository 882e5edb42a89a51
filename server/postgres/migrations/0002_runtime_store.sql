-- Schema v2: what the runtime's storage traits need beyond v1.

-- A session's running totals, moved by every append in the statement that writes the
-- events (so they never disagree with the log), and the quarantine: a session whose
-- record cannot be read is set aside with the reason, not served, and reported.
ALTER TABLE sessions
    ADD COLUMN turn_count          bigint NOT NULL DEFAULT 0,
    ADD COLUMN model_calls         bigint NOT NULL DEFAULT 0,
    ADD COLUMN log_bytes           bigint NOT NULL DEFAULT 0,
    ADD COLUMN input_tokens        bigint NOT NULL DEFAULT 0,
    ADD COLUMN output_tokens       bigint NOT NULL DEFAULT 0,
    ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN reasoning_tokens    bigint NOT NULL DEFAULT 0,
    ADD COLUMN total_tokens        bigint NOT NULL DEFAULT 0,
    ADD COLUMN updated_at_ms       bigint NOT NULL DEFAULT 0,
    ADD COLUMN quarantined_at      timestamptz,
    ADD COLUMN quarantine_reason   text;

-- Newest first (ids are UUIDv7, compared byte by byte), quarantined sessions left out.
CREATE INDEX sessions_listed ON sessions (id COLLATE "C" DESC) WHERE quarantined_at IS NULL;

-- The queue: who submitted a turn (per-replica capacity, and for now the replica that
-- runs it), and the order within its session: a turn placed first gets a key below the
-- session's waiting turns; otherwise the key is its position.
ALTER TABLE turns
    ADD COLUMN submitted_by text NOT NULL DEFAULT '',
    ADD COLUMN sort_key     bigint;
CREATE INDEX turns_queued_by ON turns (submitted_by) WHERE state = 'queued';

-- The sessions with a turn in flight, by the replica running it, so that a replica
-- starting again repairs exactly those.
CREATE TABLE open_turns (
    session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    replica    text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX open_turns_of_replica ON open_turns (replica);

-- The namespace a bundle was installed into, so every replica unpacks it into the same.
ALTER TABLE bundles ADD COLUMN namespace text NOT NULL DEFAULT 'local';
