-- +goose Up
-- How far each process's audit journal is in the audit table: the last
-- segment inserted. A segment is inserted with its row's update in one
-- transaction, so a replay after a crash skips what is in already. Only
-- SQLite keeps a journal; on PostgreSQL the table stays empty.
CREATE TABLE audit_journal (
    journal TEXT   NOT NULL PRIMARY KEY,
    segment BIGINT NOT NULL
);

-- +goose Down
DROP TABLE audit_journal;
