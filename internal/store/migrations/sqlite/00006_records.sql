-- +goose Up
-- dialect-specific: begin
-- Files get their content: where the bytes are, the type read from them, a
-- title and description. The table is rebuilt with AUTOINCREMENT so that a
-- deleted file's id is never given to another file: view links sign the id.
CREATE TABLE files_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id      BIGINT  NOT NULL REFERENCES accounts (id),
    creator_user_id BIGINT  NOT NULL REFERENCES users (id),
    category        TEXT    NOT NULL,
    target_type     TEXT    NOT NULL,
    target_id       BIGINT  NOT NULL,
    name            TEXT    NOT NULL,
    size            BIGINT  NOT NULL DEFAULT 0,
    ext             TEXT    NOT NULL DEFAULT '',
    created         BIGINT  NOT NULL,
    title           TEXT    NOT NULL DEFAULT '',
    description     TEXT    NOT NULL DEFAULT '',
    blob_key        TEXT    NOT NULL DEFAULT '',
    content_type    TEXT    NOT NULL DEFAULT '',
    intake_id       BIGINT
);
INSERT INTO files_new (id, account_id, creator_user_id, category, target_type, target_id, name, size, ext, created)
    SELECT id, account_id, creator_user_id, category, target_type, target_id, name, size, ext, created FROM files;
DROP TABLE files;
ALTER TABLE files_new RENAME TO files;
CREATE INDEX files_account_target ON files (account_id, target_type, target_id);

-- dialect-specific: end

-- Medical-record sections: one row per user and section, data as JSON.
CREATE TABLE emr_sections (
    account_id        BIGINT  NOT NULL REFERENCES accounts (id),
    user_id           BIGINT  NOT NULL REFERENCES users (id),
    name              TEXT    NOT NULL,
    data              TEXT    NOT NULL,
    data_not_reported INTEGER NOT NULL DEFAULT 0,
    modified          BIGINT  NOT NULL,
    modified_by       BIGINT  NOT NULL REFERENCES users (id),
    PRIMARY KEY (account_id, user_id, name)
);

-- Health devices and their readings. A device id is the vendor's, unique
-- per user; readings keep their typed values as JSON beside the indexed keys.
CREATE TABLE devices (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id),
    user_id     BIGINT  NOT NULL REFERENCES users (id),
    device_id   TEXT    NOT NULL,
    device_name TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    created     BIGINT  NOT NULL,
    UNIQUE (account_id, user_id, device_id)
);
CREATE TABLE health_readings (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    device_id  TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    data_type  TEXT    NOT NULL,
    data_class TEXT    NOT NULL,
    date       TEXT    NOT NULL,
    time       BIGINT  NOT NULL,
    reading    TEXT    NOT NULL,
    created    BIGINT  NOT NULL
);
CREATE INDEX health_readings_user ON health_readings (account_id, user_id, data_type, time);

-- Insurance cards: at most one per user and card type, by the key.
-- check_started is when the last eligibility check of the card started; the
-- conditional UPDATE on it is what answers 429 across processes.
CREATE TABLE insurance_cards (
    account_id    BIGINT  NOT NULL REFERENCES accounts (id),
    user_id       BIGINT  NOT NULL REFERENCES users (id),
    card_type     TEXT    NOT NULL,
    fields        TEXT    NOT NULL,
    modified      BIGINT  NOT NULL,
    check_started BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, user_id, card_type)
);
CREATE TABLE eligibility_jobs (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    card_type  TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    details    TEXT    NOT NULL DEFAULT '{}',
    started    BIGINT  NOT NULL,
    finished   BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX eligibility_jobs_user ON eligibility_jobs (account_id, user_id, card_type, id);

-- A visit's claim codes (diagnoses and procedures), as JSON.
ALTER TABLE visits ADD COLUMN claim_codes TEXT NOT NULL DEFAULT '';

-- Pharmacies a patient chose; at most one default, by a partial unique index.
CREATE TABLE pharmacies (
    id           INTEGER PRIMARY KEY,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id),
    user_id      BIGINT  NOT NULL REFERENCES users (id),
    code         TEXT    NOT NULL,
    fields       TEXT    NOT NULL,
    is_default   INTEGER NOT NULL DEFAULT 0,
    created      BIGINT  NOT NULL,
    UNIQUE (account_id, user_id, code)
);
CREATE UNIQUE INDEX pharmacies_one_default ON pharmacies (account_id, user_id) WHERE is_default = 1;

-- Prescriptions written by a provider for a patient.
CREATE TABLE prescriptions (
    id            INTEGER PRIMARY KEY,
    account_id    BIGINT  NOT NULL REFERENCES accounts (id),
    user_id       BIGINT  NOT NULL REFERENCES users (id),
    prescriber_id BIGINT  NOT NULL REFERENCES users (id),
    visit_id      BIGINT  REFERENCES visits (id),
    drug_id       TEXT    NOT NULL DEFAULT '',
    ndc           TEXT    NOT NULL DEFAULT '',
    drug          TEXT    NOT NULL,
    directions    TEXT    NOT NULL,
    qty           INTEGER NOT NULL,
    refills       INTEGER NOT NULL DEFAULT 0,
    pharmacy_code TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL,
    created       BIGINT  NOT NULL,
    modified      BIGINT  NOT NULL
);
CREATE INDEX prescriptions_user ON prescriptions (account_id, user_id, status);

-- +goose Down
DROP TABLE prescriptions;
DROP TABLE pharmacies;
DROP TABLE eligibility_jobs;
DROP TABLE insurance_cards;
DROP TABLE health_readings;
DROP TABLE devices;
DROP TABLE emr_sections;
ALTER TABLE visits DROP COLUMN claim_codes;
-- dialect-specific: begin
-- dialect-specific: end
