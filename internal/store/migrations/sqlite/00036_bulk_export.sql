-- +goose Up
-- FHIR Bulk Data exports: a job per kick-off, run by a worker (outbox
-- topic 'export'), its NDJSON files in the blob store until it expires.
-- output is the manifest's list: each file's type, count and blob key.
CREATE TABLE export_jobs (
    id         TEXT   PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    client_id  TEXT   NOT NULL DEFAULT '',
    level      TEXT   NOT NULL,
    group_id   BIGINT NOT NULL DEFAULT 0,
    types      TEXT   NOT NULL,
    since      BIGINT NOT NULL DEFAULT 0,
    request    TEXT   NOT NULL,
    status     TEXT   NOT NULL,
    progress   TEXT   NOT NULL DEFAULT '',
    output     TEXT   NOT NULL DEFAULT '[]',
    error      TEXT   NOT NULL DEFAULT '',
    created    BIGINT NOT NULL,
    finished   BIGINT NOT NULL DEFAULT 0,
    expires    BIGINT NOT NULL
);
CREATE INDEX export_jobs_account ON export_jobs (account_id, created);

-- +goose Down
DROP TABLE export_jobs;
