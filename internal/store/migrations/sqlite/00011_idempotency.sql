-- +goose Up
-- Idempotency keys (docs/design-notes.md, "Idempotency keys"): the answer
-- to a POST, PUT or DELETE sent with an Idempotency-Key header, kept for
-- 24 hours so that a retry with the same key replays it (the answers are
-- JSON text). status is 0 while the first request is in flight; the
-- primary key lets one request of a caller's key run, on any process.
CREATE TABLE idempotency_keys (
    account_id   BIGINT NOT NULL REFERENCES accounts (id),
    caller       TEXT   NOT NULL,
    idem_key     TEXT   NOT NULL,
    fingerprint  TEXT   NOT NULL,
    status       INTEGER NOT NULL DEFAULT 0,
    content_type TEXT   NOT NULL DEFAULT '',
    body         TEXT   NOT NULL DEFAULT '',
    created      BIGINT NOT NULL,
    PRIMARY KEY (account_id, caller, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (account_id, created);

-- +goose Down
DROP TABLE idempotency_keys;
