-- +goose Up
-- A time held for a patient while they pay for it: no one else books an
-- open slot while held_until is ahead; held_by is the intake it is held for.
ALTER TABLE slots ADD COLUMN held_by BIGINT NOT NULL DEFAULT 0;
ALTER TABLE slots ADD COLUMN held_until BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE slots DROP COLUMN held_until;
ALTER TABLE slots DROP COLUMN held_by;
