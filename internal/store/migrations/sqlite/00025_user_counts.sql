-- +goose Up
-- How many users each clinic has of each type and status, kept by triggers
-- in the transaction of every insert, change and delete of a user, so no
-- write can forget it. GET /users answers a total_count with every page:
-- counted from the users table it cost a read of every matching user
-- (3.8 ms a page at 100,000 users against 0.33 ms at 1,000); a filter of
-- types and statuses alone is now a sum of a few of these rows
-- (store.ListUsers). Other filters still count the users they match.
CREATE TABLE user_counts (
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    type       INTEGER NOT NULL,
    status     INTEGER NOT NULL,
    n          BIGINT  NOT NULL,
    PRIMARY KEY (account_id, type, status)
);
INSERT INTO user_counts (account_id, type, status, n)
SELECT account_id, type, status, COUNT(*) FROM users GROUP BY account_id, type, status;
-- dialect-specific: begin
-- +goose StatementBegin
CREATE TRIGGER users_count_insert AFTER INSERT ON users
BEGIN
    INSERT INTO user_counts (account_id, type, status, n) VALUES (NEW.account_id, NEW.type, NEW.status, 1)
    ON CONFLICT (account_id, type, status) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER users_count_delete AFTER DELETE ON users
BEGIN
    UPDATE user_counts SET n = n - 1 WHERE account_id = OLD.account_id AND type = OLD.type AND status = OLD.status;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER users_count_update AFTER UPDATE OF account_id, type, status ON users
FOR EACH ROW WHEN OLD.account_id <> NEW.account_id OR OLD.type <> NEW.type OR OLD.status <> NEW.status
BEGIN
    UPDATE user_counts SET n = n - 1 WHERE account_id = OLD.account_id AND type = OLD.type AND status = OLD.status;
    INSERT INTO user_counts (account_id, type, status, n) VALUES (NEW.account_id, NEW.type, NEW.status, 1)
    ON CONFLICT (account_id, type, status) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd
-- dialect-specific: end

-- +goose Down
-- dialect-specific: begin
DROP TRIGGER users_count_update;
DROP TRIGGER users_count_delete;
DROP TRIGGER users_count_insert;
-- dialect-specific: end
DROP TABLE user_counts;
