-- +goose Up
-- A patient may turn off the reminder emails of a booked visit.
ALTER TABLE visits ADD COLUMN reminders_off INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE visits DROP COLUMN reminders_off;
