-- +goose Up
-- SMART App Launch: the apps a clinic admin registered (public and
-- confidential apps a person signs in to, backend services that sign
-- their own assertions), the authorize requests in flight, the tokens
-- issued, and the server's token signing key (sealed with the server key).
CREATE TABLE oauth_clients (
    id            INTEGER PRIMARY KEY,
    account_id    BIGINT NOT NULL REFERENCES accounts (id),
    client_id     TEXT   NOT NULL UNIQUE,
    name          TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    secret_hash   TEXT   NOT NULL DEFAULT '',
    redirect_uris TEXT   NOT NULL DEFAULT '',
    jwks          TEXT   NOT NULL DEFAULT '',
    scopes        TEXT   NOT NULL DEFAULT '',
    revoked       BIGINT NOT NULL DEFAULT 0,
    created       BIGINT NOT NULL
);
CREATE INDEX oauth_clients_account ON oauth_clients (account_id, id);
-- An authorize request, from the app's redirect to the code's exchange:
-- done once the person approved it (auth_time), and then its code.
CREATE TABLE oauth_requests (
    id         TEXT   PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    client_id  TEXT   NOT NULL,
    params     TEXT   NOT NULL,
    user_id    BIGINT NOT NULL DEFAULT 0,
    patient_id BIGINT NOT NULL DEFAULT 0,
    scopes     TEXT   NOT NULL DEFAULT '',
    auth_time  BIGINT NOT NULL DEFAULT 0,
    code_hash  TEXT   UNIQUE,
    expires    BIGINT NOT NULL
);
CREATE INDEX oauth_requests_expires ON oauth_requests (expires);
-- An access token (its id is the JWT's jti) and, for offline_access, its
-- refresh token's hash: a refresh revokes the row it used and adds one.
CREATE TABLE oauth_tokens (
    id              TEXT   PRIMARY KEY,
    account_id      BIGINT NOT NULL REFERENCES accounts (id),
    client_id       TEXT   NOT NULL,
    user_id         BIGINT NOT NULL DEFAULT 0,
    patient_id      BIGINT NOT NULL DEFAULT 0,
    scopes          TEXT   NOT NULL,
    auth_time       BIGINT NOT NULL,
    expires         BIGINT NOT NULL,
    refresh_hash    TEXT   UNIQUE,
    refresh_expires BIGINT NOT NULL DEFAULT 0,
    revoked         BIGINT NOT NULL DEFAULT 0,
    created         BIGINT NOT NULL
);
CREATE INDEX oauth_tokens_client ON oauth_tokens (client_id);
-- A backend service's assertion ids (client id and jti), kept until the
-- assertion expires: an assertion is used once.
CREATE TABLE oauth_assertions (
    id      TEXT   PRIMARY KEY,
    expires BIGINT NOT NULL
);
CREATE TABLE oauth_keys (
    id      TEXT   PRIMARY KEY,
    sealed  TEXT   NOT NULL,
    created BIGINT NOT NULL
);

-- +goose Down
DROP TABLE oauth_keys;
DROP TABLE oauth_assertions;
DROP TABLE oauth_tokens;
DROP TABLE oauth_requests;
DROP TABLE oauth_clients;
