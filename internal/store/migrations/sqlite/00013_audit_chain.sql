-- +goose Up
-- The audit trail as a hash chain per clinic (docs/design-notes.md, "A
-- tamper-evident audit trail"): each entry's hash covers its content, its
-- place (seq) and the hash before it, keyed with the server key, so an
-- entry edited, removed or inserted in the table breaks the chain from
-- there. audit_chain holds each clinic's last place and hash; appends take
-- its row's lock, so one clinic's entries are chained in one order across
-- processes. Entries written before this migration have seq 0 and stand
-- outside the chain.
ALTER TABLE audit ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit ADD COLUMN hash TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_account_seq ON audit (account_id, seq);
CREATE TABLE audit_chain (
    account_id BIGINT NOT NULL PRIMARY KEY REFERENCES accounts (id),
    seq        BIGINT NOT NULL DEFAULT 0,
    head       TEXT   NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE audit_chain;
DROP INDEX audit_account_seq;
ALTER TABLE audit DROP COLUMN hash;
ALTER TABLE audit DROP COLUMN seq;
