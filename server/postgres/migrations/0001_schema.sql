-- Schema v1: what several odysseyd replicas share. The rows are the truth; LISTEN/NOTIFY
-- only wakes the replicas that follow them.

-- One row per session: the runtime's record of it (opaque here) and the last sequence of
-- its event log, which every append moves forward under the session's lease.
CREATE TABLE sessions (
    id            text PRIMARY KEY,
    record        bytea NOT NULL,
    last_sequence bigint NOT NULL DEFAULT 0 CHECK (last_sequence >= 0),
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The event log: gap-free sequences per session, starting at 1.
CREATE TABLE events (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    sequence   bigint NOT NULL CHECK (sequence >= 1),
    kind       text NOT NULL,
    body       bytea NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (session_id, sequence)
);

-- Every statement that appends events wakes the followers of each session it wrote to,
-- once, with `session_id:last_sequence`; delivered when the transaction commits.
CREATE FUNCTION odyssey_events_appended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('odyssey_events', session_id || ':' || max(sequence))
    FROM appended
    GROUP BY session_id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_appended
AFTER INSERT ON events
REFERENCING NEW TABLE AS appended
FOR EACH STATEMENT EXECUTE FUNCTION odyssey_events_appended();

-- Who may write a session's events and run its turns. `epoch` only grows (a release
-- expires the lease rather than deleting it), so a writer holding an old epoch is fenced
-- off for good.
CREATE TABLE session_leases (
    session_id  text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    holder      text NOT NULL,
    epoch       bigint NOT NULL CHECK (epoch >= 1),
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- The turn queue: claimed with FOR UPDATE SKIP LOCKED, in submission order (`position`)
-- within a session, never two running turns of one session.
CREATE TABLE turns (
    id           text PRIMARY KEY,
    session_id   text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position     bigint GENERATED ALWAYS AS IDENTITY,
    state        text NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'interrupted')),
    request      bytea NOT NULL,
    claimed_by   text,
    submitted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_at   timestamptz,
    finished_at  timestamptz
);
CREATE UNIQUE INDEX turns_one_running_per_session ON turns (session_id) WHERE state = 'running';
CREATE INDEX turns_queued ON turns (position) WHERE state = 'queued';
CREATE INDEX turns_of_session ON turns (session_id, position);

-- Tool calls waiting for a human, and the answers given.
CREATE TABLE approvals (
    id          text PRIMARY KEY,
    session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id     text NOT NULL,
    request     bytea NOT NULL,
    state       text NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'allowed', 'denied', 'expired')),
    decision    bytea,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    decided_at  timestamptz
);
CREATE INDEX approvals_pending ON approvals (session_id) WHERE state = 'pending';

-- An answer wakes the replica running the turn, whichever replica took it: channel
-- odyssey_approvals, the approval's id, delivered when the answer commits.
CREATE FUNCTION odyssey_approval_answered() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('odyssey_approvals', NEW.id);
    RETURN NULL;
END;
$$;

CREATE TRIGGER approval_answered
AFTER UPDATE OF state ON approvals
FOR EACH ROW
WHEN (OLD.state = 'pending' AND NEW.state <> 'pending')
EXECUTE FUNCTION odyssey_approval_answered();

-- Installed bundles, by their digest; the archive's own SHA-256 is checked on every read.
CREATE TABLE bundles (
    digest         text PRIMARY KEY,
    name           text NOT NULL,
    version        text NOT NULL,
    archive        bytea NOT NULL,
    archive_sha256 text NOT NULL,
    installed_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX bundles_by_name ON bundles (name, version);

-- The replicas serving this database, and when each was last heard from.
CREATE TABLE replicas (
    id         text PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    seen_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
