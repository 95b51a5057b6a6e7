-- +goose Up
-- The clinic's interpreters (docs/design-notes.md, "Interpreters"): a
-- person or an agency, for one language (a BCP 47 tag: es, vi, ase for
-- American Sign Language), reached by email or text. A removed one is
-- kept, inactive, for the visits that name it.
CREATE TABLE interpreters (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    name       TEXT    NOT NULL,
    language   TEXT    NOT NULL,
    email      TEXT    NOT NULL DEFAULT '',
    phone      TEXT    NOT NULL DEFAULT '',
    agency     INTEGER NOT NULL DEFAULT 0,
    active     INTEGER NOT NULL DEFAULT 1,
    created    BIGINT  NOT NULL
);
CREATE INDEX interpreters_account ON interpreters (account_id, active, language);
-- An invitation, and the guest who accepted it, name the interpreter
-- they bring (0: a guest, not an interpreter).
ALTER TABLE call_invites ADD COLUMN interpreter_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE call_guests ADD COLUMN interpreter_id BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE call_guests DROP COLUMN interpreter_id;
ALTER TABLE call_invites DROP COLUMN interpreter_id;
DROP INDEX interpreters_account;
DROP TABLE interpreters;
