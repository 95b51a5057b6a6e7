-- +goose Up
-- Clinics. The three credentials are stored only as SHA-256 hashes.
CREATE TABLE accounts (
    id               INTEGER PRIMARY KEY,
    code             TEXT    NOT NULL UNIQUE,
    name             TEXT    NOT NULL,
    domain           TEXT    NOT NULL,
    sso_enabled      INTEGER NOT NULL DEFAULT 0,
    admin_token_hash TEXT    NOT NULL UNIQUE,
    api_key_hash     TEXT    NOT NULL UNIQUE,
    api_secret_hash  TEXT    NOT NULL,
    features         TEXT    NOT NULL DEFAULT '[]',
    created          BIGINT  NOT NULL,
    modified         BIGINT  NOT NULL
);

CREATE TABLE users (
    id             INTEGER PRIMARY KEY,
    account_id     BIGINT  NOT NULL REFERENCES accounts (id),
    code           TEXT    NOT NULL,
    username       TEXT    NOT NULL,
    first_name     TEXT    NOT NULL DEFAULT '',
    last_name      TEXT    NOT NULL DEFAULT '',
    email          TEXT    NOT NULL DEFAULT '',
    password_hash  TEXT    NOT NULL DEFAULT '',
    dob            TEXT    NOT NULL DEFAULT '',
    gender         INTEGER NOT NULL DEFAULT 0,
    type           INTEGER NOT NULL,
    subtype        TEXT    NOT NULL DEFAULT '',
    status         INTEGER NOT NULL DEFAULT 1,
    active         INTEGER NOT NULL DEFAULT 1,
    tos            INTEGER NOT NULL DEFAULT 0,
    timezone       TEXT    NOT NULL DEFAULT '',
    email_verified INTEGER NOT NULL DEFAULT 0,
    signup_step    INTEGER NOT NULL DEFAULT 0,
    svcid          TEXT    NOT NULL,
    nationality    TEXT    NOT NULL DEFAULT '',
    phone          TEXT    NOT NULL DEFAULT '',
    street_addr    TEXT    NOT NULL DEFAULT '',
    city           TEXT    NOT NULL DEFAULT '',
    state          TEXT    NOT NULL DEFAULT '',
    zip            TEXT    NOT NULL DEFAULT '',
    pcp_name       TEXT    NOT NULL DEFAULT '',
    pcp_phone      TEXT    NOT NULL DEFAULT '',
    photo_file_id  BIGINT,
    extra          TEXT    NOT NULL DEFAULT '{}',
    disable_emails INTEGER NOT NULL DEFAULT 0,
    is_hidden      INTEGER NOT NULL DEFAULT 0,
    is_admin       INTEGER NOT NULL DEFAULT 0,
    roles          TEXT    NOT NULL DEFAULT '',
    user_group     TEXT    NOT NULL DEFAULT '',
    last_login     BIGINT  NOT NULL DEFAULT 0,
    created        BIGINT  NOT NULL,
    modified       BIGINT  NOT NULL,
    UNIQUE (account_id, code),
    UNIQUE (account_id, username),
    UNIQUE (svcid)
);
CREATE INDEX users_account_type ON users (account_id, type);
CREATE INDEX users_account_email ON users (account_id, email);

-- Access and refresh tokens. A family is one login: every rotation stays in
-- it, so a reused refresh token can revoke all of it.
CREATE TABLE tokens (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    kind       TEXT    NOT NULL,
    hash       TEXT    NOT NULL UNIQUE,
    family     TEXT    NOT NULL,
    created    BIGINT  NOT NULL,
    last_used  BIGINT  NOT NULL,
    expires    BIGINT  NOT NULL,
    used       BIGINT,
    revoked    BIGINT
);
CREATE INDEX tokens_family ON tokens (family);
CREATE INDEX tokens_user ON tokens (user_id);

-- Single-use secrets mailed to a user: account activation and password reset.
CREATE TABLE user_secrets (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    purpose    TEXT    NOT NULL,
    hash       TEXT    NOT NULL UNIQUE,
    created    BIGINT  NOT NULL,
    expires    BIGINT  NOT NULL,
    used       BIGINT
);

-- Who touched which object, never what it held. Append-only.
CREATE TABLE audit (
    id            INTEGER PRIMARY KEY,
    account_id    BIGINT  NOT NULL REFERENCES accounts (id),
    actor_kind    TEXT    NOT NULL,
    actor_user_id BIGINT,
    action        TEXT    NOT NULL,
    object_type   TEXT    NOT NULL,
    object_id     TEXT    NOT NULL,
    outcome       TEXT    NOT NULL,
    request_id    TEXT    NOT NULL,
    created       BIGINT  NOT NULL
);
CREATE INDEX audit_account_created ON audit (account_id, created);
CREATE INDEX audit_account_object ON audit (account_id, object_type, object_id);
CREATE INDEX audit_account_actor ON audit (account_id, actor_user_id);

-- Side effects written in the same transaction as the change that causes
-- them and delivered by workers after commit.
CREATE TABLE outbox (
    id            INTEGER PRIMARY KEY,
    account_id    BIGINT  NOT NULL REFERENCES accounts (id),
    topic         TEXT    NOT NULL,
    payload       TEXT    NOT NULL,
    created       BIGINT  NOT NULL,
    due           BIGINT  NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_until BIGINT  NOT NULL DEFAULT 0,
    done          BIGINT,
    last_error    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX outbox_due ON outbox (done, due);

CREATE TABLE rooms (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    code       TEXT    NOT NULL,
    slug       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    domain     TEXT    NOT NULL,
    active     INTEGER NOT NULL DEFAULT 1,
    settings   TEXT    NOT NULL DEFAULT '{}',
    created    BIGINT  NOT NULL,
    modified   BIGINT  NOT NULL,
    UNIQUE (account_id, code),
    UNIQUE (domain, slug)
);

CREATE TABLE user_rooms (
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    room_id    BIGINT  NOT NULL REFERENCES rooms (id),
    is_default INTEGER NOT NULL DEFAULT 0,
    added_time BIGINT  NOT NULL,
    source     TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, room_id)
);
CREATE INDEX user_rooms_room ON user_rooms (room_id);

-- Visits: the columns user access rules need now; the visits feature adds the rest.
CREATE TABLE visits (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id),
    member_id   BIGINT  NOT NULL REFERENCES users (id),
    provider_id BIGINT  NOT NULL DEFAULT 0,
    room_id     BIGINT  REFERENCES rooms (id),
    status      INTEGER NOT NULL,
    type        INTEGER NOT NULL,
    starts_at   BIGINT  NOT NULL DEFAULT 0,
    ends_at     BIGINT  NOT NULL DEFAULT 0,
    created     BIGINT  NOT NULL,
    modified    BIGINT  NOT NULL
);
CREATE INDEX visits_account_member ON visits (account_id, member_id);
CREATE INDEX visits_account_provider ON visits (account_id, provider_id);

-- Files: the columns the profile photo needs now; the files feature adds the rest.
CREATE TABLE files (
    id              INTEGER PRIMARY KEY,
    account_id      BIGINT  NOT NULL REFERENCES accounts (id),
    creator_user_id BIGINT  NOT NULL REFERENCES users (id),
    category        TEXT    NOT NULL,
    target_type     TEXT    NOT NULL,
    target_id       BIGINT  NOT NULL,
    name            TEXT    NOT NULL,
    size            BIGINT  NOT NULL DEFAULT 0,
    ext             TEXT    NOT NULL DEFAULT '',
    created         BIGINT  NOT NULL
);
CREATE INDEX files_account_target ON files (account_id, target_type, target_id);

-- +goose Down
DROP TABLE files;
DROP TABLE visits;
DROP TABLE user_rooms;
DROP TABLE rooms;
DROP TABLE outbox;
DROP TABLE audit;
DROP TABLE user_secrets;
DROP TABLE tokens;
DROP TABLE users;
DROP TABLE accounts;
