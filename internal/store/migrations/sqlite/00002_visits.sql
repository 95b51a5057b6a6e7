-- +goose Up
-- Intakes: what a patient tells the clinic before a visit.
CREATE TABLE intakes (
    id               INTEGER PRIMARY KEY,
    account_id       BIGINT  NOT NULL REFERENCES accounts (id),
    room_id          BIGINT  NOT NULL REFERENCES rooms (id),
    member_id        BIGINT  NOT NULL REFERENCES users (id),
    creator_user_id  BIGINT  NOT NULL REFERENCES users (id),
    provider_id      BIGINT  NOT NULL DEFAULT 0,
    type             INTEGER NOT NULL,
    reason_for_visit TEXT    NOT NULL DEFAULT '',
    location         TEXT    NOT NULL DEFAULT '',
    phone            TEXT    NOT NULL DEFAULT '',
    custom           TEXT    NOT NULL DEFAULT '{}',
    attachments      TEXT    NOT NULL DEFAULT '[]',
    visit_id         BIGINT  NOT NULL DEFAULT 0,
    created          BIGINT  NOT NULL,
    modified         BIGINT  NOT NULL
);
CREATE INDEX intakes_account_member ON intakes (account_id, member_id);

-- Visits get the rest of their columns.
ALTER TABLE visits ADD COLUMN code TEXT NOT NULL DEFAULT '';
ALTER TABLE visits ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE visits ADD COLUMN intake_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE visits ADD COLUMN slot_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE visits ADD COLUMN actual_start BIGINT;
ALTER TABLE visits ADD COLUMN actual_end BIGINT;
ALTER TABLE visits ADD COLUMN cancel_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE visits ADD COLUMN meeting TEXT NOT NULL DEFAULT '{}';
CREATE INDEX visits_account_room_status ON visits (account_id, room_id, status);

-- +goose Down
DROP INDEX visits_account_room_status;
DROP TABLE intakes;
