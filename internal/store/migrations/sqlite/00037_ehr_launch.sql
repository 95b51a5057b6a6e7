-- +goose Up
-- SMART EHR launch, Teleclinic as the app: the EHRs a clinic admin
-- connected (the EHR's FHIR base, unique across the server: a launch's iss
-- names its clinic; Teleclinic's client id there and its secret, sealed;
-- the room its visits are held in), the EHR users linked to providers,
-- the launches in flight, and the visit each EHR appointment became.
CREATE TABLE ehr_connections (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    iss        TEXT   NOT NULL UNIQUE,
    client_id  TEXT   NOT NULL,
    secret     TEXT   NOT NULL DEFAULT '',
    room_id    BIGINT NOT NULL REFERENCES rooms (id),
    created    BIGINT NOT NULL
);
CREATE INDEX ehr_connections_account ON ehr_connections (account_id, id);
CREATE TABLE ehr_links (
    connection_id BIGINT NOT NULL REFERENCES ehr_connections (id) ON DELETE CASCADE,
    fhir_user     TEXT   NOT NULL,
    account_id    BIGINT NOT NULL REFERENCES accounts (id),
    user_id       BIGINT NOT NULL REFERENCES users (id),
    created       BIGINT NOT NULL,
    PRIMARY KEY (connection_id, fhir_user)
);
CREATE TABLE ehr_launches (
    state         TEXT   PRIMARY KEY,
    account_id    BIGINT NOT NULL REFERENCES accounts (id),
    connection_id BIGINT NOT NULL REFERENCES ehr_connections (id) ON DELETE CASCADE,
    verifier      TEXT   NOT NULL,
    issuer        TEXT   NOT NULL,
    token_url     TEXT   NOT NULL,
    expires       BIGINT NOT NULL
);
CREATE TABLE ehr_visits (
    connection_id BIGINT NOT NULL REFERENCES ehr_connections (id) ON DELETE CASCADE,
    ehr_ref       TEXT   NOT NULL,
    account_id    BIGINT NOT NULL REFERENCES accounts (id),
    visit_id      BIGINT NOT NULL REFERENCES visits (id),
    PRIMARY KEY (connection_id, ehr_ref)
);

-- +goose Down
DROP TABLE ehr_visits;
DROP TABLE ehr_launches;
DROP TABLE ehr_links;
DROP TABLE ehr_connections;
