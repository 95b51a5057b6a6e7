-- +goose Up
-- A patient's signed consent: the room's consent text of a version,
-- signed with their typed name at a time, with the intake it came with.
CREATE TABLE consents (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts (id),
    user_id     BIGINT NOT NULL,
    room_id     BIGINT NOT NULL,
    intake_id   BIGINT NOT NULL DEFAULT 0,
    version     TEXT   NOT NULL,
    body        TEXT   NOT NULL,
    signed_name TEXT   NOT NULL,
    signed_at   BIGINT NOT NULL
);
CREATE INDEX consents_user ON consents (account_id, user_id, id);

-- +goose Down
DROP TABLE consents;
