-- +goose Up
-- Every change to a user row moves its version, whatever statement made it:
-- a trigger does it, so no update can forget. Authentication reads the
-- version beside the token and reuses a user it read before only while the
-- version is the same, in any process (docs/design-notes.md, Performance).
ALTER TABLE users ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
-- dialect-specific: begin
-- +goose StatementBegin
CREATE FUNCTION users_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := OLD.version + 1;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER users_version BEFORE UPDATE ON users
FOR EACH ROW EXECUTE FUNCTION users_version();
-- dialect-specific: end

-- +goose Down
-- dialect-specific: begin
DROP TRIGGER users_version ON users;
DROP FUNCTION users_version();
-- dialect-specific: end
ALTER TABLE users DROP COLUMN version;
