-- +goose Up
-- A slot group is one publication of availability: the rule the slots were
-- made from, kept as the provider wrote it (local dates and times and zone).
CREATE TABLE slot_groups (
    id           INTEGER PRIMARY KEY,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id),
    provider_id  BIGINT  NOT NULL REFERENCES users (id),
    room_id      BIGINT  NOT NULL REFERENCES rooms (id),
    date_start   TEXT    NOT NULL,
    date_end     TEXT    NOT NULL,
    time_start   TEXT    NOT NULL,
    time_end     TEXT    NOT NULL,
    timezone     TEXT    NOT NULL,
    repeats      INTEGER NOT NULL DEFAULT 0,
    repeat_day   TEXT    NOT NULL DEFAULT '[]',
    repeat_week  INTEGER NOT NULL DEFAULT 1,
    visit_type   TEXT    NOT NULL DEFAULT '',
    consultation TEXT    NOT NULL DEFAULT '{}',
    duration     INTEGER NOT NULL,
    created      BIGINT  NOT NULL,
    modified     BIGINT  NOT NULL
);

-- Slots: status 10 open, 20 booked. One provider never has two slots that
-- start at the same instant.
CREATE TABLE slots (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id),
    provider_id BIGINT  NOT NULL REFERENCES users (id),
    room_id     BIGINT  NOT NULL REFERENCES rooms (id),
    group_id    BIGINT  NOT NULL REFERENCES slot_groups (id),
    starts_at   BIGINT  NOT NULL,
    ends_at     BIGINT  NOT NULL,
    status      INTEGER NOT NULL DEFAULT 10,
    visit_id    BIGINT  NOT NULL DEFAULT 0,
    created     BIGINT  NOT NULL,
    modified    BIGINT  NOT NULL,
    UNIQUE (provider_id, starts_at)
);
CREATE INDEX slots_account_start ON slots (account_id, starts_at);
CREATE INDEX slots_group ON slots (group_id);
CREATE INDEX slots_visit ON slots (visit_id);

-- +goose Down
DROP TABLE slots;
DROP TABLE slot_groups;
