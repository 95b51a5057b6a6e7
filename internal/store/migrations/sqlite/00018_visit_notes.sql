-- +goose Up
-- A provider's note of a visit (one per visit): the SOAP sections, the
-- diagnoses (JSON: [{code, description}]) and what the patient is given
-- as the visit's summary. A draft until signed; signed, it is locked and
-- changes are dated addenda.
CREATE TABLE visit_notes (
    id              INTEGER PRIMARY KEY,
    account_id      BIGINT  NOT NULL REFERENCES accounts (id),
    visit_id        BIGINT  NOT NULL REFERENCES visits (id),
    author_id       BIGINT  NOT NULL,
    subjective      TEXT    NOT NULL DEFAULT '',
    objective       TEXT    NOT NULL DEFAULT '',
    assessment      TEXT    NOT NULL DEFAULT '',
    plan            TEXT    NOT NULL DEFAULT '',
    diagnoses       TEXT    NOT NULL DEFAULT '[]',
    patient_summary TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL DEFAULT 'draft',
    signed_by       BIGINT  NOT NULL DEFAULT 0,
    signed_at       BIGINT  NOT NULL DEFAULT 0,
    created         BIGINT  NOT NULL,
    modified        BIGINT  NOT NULL
);
CREATE UNIQUE INDEX visit_notes_visit ON visit_notes (account_id, visit_id);

CREATE TABLE visit_note_addenda (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    note_id    BIGINT NOT NULL REFERENCES visit_notes (id),
    author_id  BIGINT NOT NULL,
    body       TEXT   NOT NULL,
    created    BIGINT NOT NULL
);
CREATE INDEX visit_note_addenda_note ON visit_note_addenda (account_id, note_id, id);

-- +goose Down
DROP TABLE visit_note_addenda;
DROP TABLE visit_notes;
