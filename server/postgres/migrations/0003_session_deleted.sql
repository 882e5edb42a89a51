-- Schema v3: a deletion of sessions wakes the replicas following them. Each deleted
-- session's id is announced on `odyssey_sessions_deleted` when the deletion commits,
-- whoever deletes (the rows are gone by then: the notification is the only trace).
CREATE FUNCTION odyssey_sessions_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('odyssey_sessions_deleted', id)
    FROM deleted;
    RETURN NULL;
END;
$$;

CREATE TRIGGER sessions_deleted
AFTER DELETE ON sessions
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION odyssey_sessions_deleted();
