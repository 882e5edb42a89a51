-- Schema v4: long-term memory shared by the replicas. One row per remembered turn, in the
-- scope of one agent of one bundle; the runtime's record as JSON, its size beside it, so
-- that the bounds on records and bytes per scope are kept by one statement after each
-- capture.
CREATE TABLE memory_records (
    id         bigserial PRIMARY KEY,
    namespace  text NOT NULL,
    bundle     text NOT NULL,
    agent_id   text NOT NULL,
    record     bytea NOT NULL,
    bytes      integer NOT NULL CHECK (bytes >= 0),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX memory_records_scope ON memory_records (namespace, bundle, agent_id, id DESC);
