-- +goose Up
-- How far each user has read each visit's thread (the place of the last
-- message they were shown): the dashboard's unread counts.
CREATE TABLE thread_reads (
    account_id BIGINT  NOT NULL,
    visit_id   BIGINT  NOT NULL,
    user_id    BIGINT  NOT NULL,
    seen       INTEGER NOT NULL,
    PRIMARY KEY (account_id, user_id, visit_id)
);

-- +goose Down
DROP TABLE thread_reads;
