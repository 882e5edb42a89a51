-- Schema v5: signals for the replica running a turn (a decision on an approval, an answer
-- to a request for input, a cancel), sent by whichever replica a client reached. A row is
-- the signal; `target` is the replica it is for, chosen when it is written (the one
-- running the session's turn, or holding the turn queued). Rows are deleted a few minutes
-- after they were written: a signal is acted on at once or not at all.
CREATE TABLE turn_signals (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('decide', 'answer', 'cancel')),
    target     text NOT NULL,
    body       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX turn_signals_created ON turn_signals (created_at);

-- Each signal wakes the replicas with `id:target` on `odyssey_turn_signals` when it
-- commits; only its target reads the row.
CREATE FUNCTION odyssey_turn_signal_sent() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('odyssey_turn_signals', NEW.id || ':' || NEW.target);
    RETURN NULL;
END;
$$;

CREATE TRIGGER turn_signal_sent
AFTER INSERT ON turn_signals
FOR EACH ROW EXECUTE FUNCTION odyssey_turn_signal_sent();
