-- +goose Up
-- What a visit recorded of itself for its claim (docs/design-notes.md,
-- "Visit facts"): how the patient took part (video or audio), where they
-- were (state, at home or not: asked at check-in), the provider's state,
-- when the call had both sides and when it ended, and who took part
-- (a JSON array of {user_id, role, name}) and how often someone joined
-- again. One row per visit, written as the call and the check-in happen.
CREATE TABLE visit_facts (
    account_id     BIGINT NOT NULL REFERENCES accounts (id),
    visit_id       BIGINT NOT NULL REFERENCES visits (id),
    modality       TEXT   NOT NULL DEFAULT '',
    patient_state  TEXT   NOT NULL DEFAULT '',
    patient_home   TEXT   NOT NULL DEFAULT '',
    provider_state TEXT   NOT NULL DEFAULT '',
    call_start     BIGINT NOT NULL DEFAULT 0,
    call_end       BIGINT NOT NULL DEFAULT 0,
    participants   TEXT   NOT NULL DEFAULT '[]',
    rejoins        INTEGER NOT NULL DEFAULT 0,
    updated        BIGINT NOT NULL,
    PRIMARY KEY (account_id, visit_id)
);
-- The clinic's numbers add up the payments of a range by their day.
CREATE INDEX invoices_account_created ON invoices (account_id, created);
-- And the calls of a range by when their facts were last written.
CREATE INDEX visit_facts_updated ON visit_facts (account_id, updated);

-- +goose Down
DROP INDEX visit_facts_updated;
DROP INDEX invoices_account_created;
DROP TABLE visit_facts;
