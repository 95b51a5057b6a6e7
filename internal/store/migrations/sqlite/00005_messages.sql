-- +goose Up
-- Visit threads. seq numbers a visit's messages 1, 2, 3… in commit order:
-- it is taken from visits.message_count, which the posting transaction
-- increments (a row lock on PostgreSQL), so every reader sees one order and
-- a reader that skips the count it has seen never misses a message.
ALTER TABLE visits ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
CREATE TABLE visit_messages (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id),
    visit_id    BIGINT  NOT NULL REFERENCES visits (id),
    seq         INTEGER NOT NULL,
    author_id   BIGINT  NOT NULL REFERENCES users (id),
    actor_type  INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    attachments TEXT    NOT NULL DEFAULT '[]',
    created_us  BIGINT  NOT NULL,
    UNIQUE (visit_id, seq)
);

-- Where a clinic's webhook goes; the signing secret is sealed with the server key.
ALTER TABLE accounts ADD COLUMN webhook_url TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN webhook_secret TEXT NOT NULL DEFAULT '';

-- The receiver's last answer to a delivery, for the deliveries list.
ALTER TABLE outbox ADD COLUMN last_status INTEGER NOT NULL DEFAULT 0;
CREATE INDEX outbox_account_topic ON outbox (account_id, topic, id);

-- Push and email endpoints of a user's devices.
CREATE TABLE endpoints (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    type       INTEGER NOT NULL,
    address    TEXT    NOT NULL,
    created    BIGINT  NOT NULL,
    modified   BIGINT  NOT NULL,
    UNIQUE (account_id, type, address)
);
CREATE INDEX endpoints_user ON endpoints (account_id, user_id);

-- What a user is told: mtime_ms pages the list; is_new counts toward the
-- badge until the badge is reset; read is set by the user.
CREATE TABLE notifications (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    type       TEXT    NOT NULL,
    title      TEXT    NOT NULL,
    image      TEXT    NOT NULL DEFAULT '',
    visit_id   BIGINT  NOT NULL DEFAULT 0,
    is_new     INTEGER NOT NULL DEFAULT 1,
    is_read    INTEGER NOT NULL DEFAULT 0,
    created    BIGINT  NOT NULL,
    mtime_ms   BIGINT  NOT NULL
);
CREATE INDEX notifications_user ON notifications (account_id, user_id, mtime_ms);

-- +goose Down
DROP TABLE notifications;
DROP TABLE endpoints;
DROP INDEX outbox_account_topic;
ALTER TABLE outbox DROP COLUMN last_status;
ALTER TABLE accounts DROP COLUMN webhook_secret;
ALTER TABLE accounts DROP COLUMN webhook_url;
DROP TABLE visit_messages;
ALTER TABLE visits DROP COLUMN message_count;
