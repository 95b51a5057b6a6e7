-- +goose Up
-- Recordings of visit calls; the bytes are in blob storage under blob_key.
CREATE TABLE recordings (
    id           INTEGER PRIMARY KEY,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id),
    visit_id     BIGINT  NOT NULL REFERENCES visits (id),
    blob_key     TEXT    NOT NULL,
    size         BIGINT  NOT NULL,
    content_type TEXT    NOT NULL,
    starts_at    BIGINT  NOT NULL,
    ends_at      BIGINT  NOT NULL,
    version      INTEGER NOT NULL DEFAULT 1,
    participants TEXT    NOT NULL DEFAULT '[]',
    created      BIGINT  NOT NULL
);
CREATE INDEX recordings_account_visit ON recordings (account_id, visit_id);

-- +goose Down
DROP TABLE recordings;
