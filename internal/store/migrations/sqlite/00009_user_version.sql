-- +goose Up
-- Every change to a user row moves its version, whatever statement made it:
-- a trigger does it, so no update can forget. Authentication reads the
-- version beside the token and reuses a user it read before only while the
-- version is the same, in any process (docs/design-notes.md, Performance).
ALTER TABLE users ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
-- dialect-specific: begin
-- +goose StatementBegin
CREATE TRIGGER users_version AFTER UPDATE ON users
FOR EACH ROW WHEN NEW.version = OLD.version
BEGIN
    UPDATE users SET version = OLD.version + 1 WHERE id = NEW.id;
END;
-- +goose StatementEnd
-- dialect-specific: end

-- +goose Down
-- dialect-specific: begin
DROP TRIGGER users_version;
-- dialect-specific: end
ALTER TABLE users DROP COLUMN version;
