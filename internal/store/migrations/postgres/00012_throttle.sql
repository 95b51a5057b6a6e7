-- +goose Up
-- Failed sign-in attempts (docs/design-notes.md, "Throttling"): a counter
-- per bucket and window, shared by every process of the database. A bucket
-- is a clinic's user name, a clinic's API key checks or a client address
-- (account_id 0: an address is throttled across clinics).
CREATE TABLE throttle (
    account_id   BIGINT  NOT NULL,
    bucket       TEXT    NOT NULL,
    window_start BIGINT  NOT NULL,
    failures     INTEGER NOT NULL,
    PRIMARY KEY (account_id, bucket)
);
CREATE INDEX throttle_window ON throttle (window_start);

-- +goose Down
DROP TABLE throttle;
