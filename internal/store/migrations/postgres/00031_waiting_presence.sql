-- +goose Up
-- When the patient of a waiting walk-in last had its page open (the
-- visit's event stream): a patient whose page has been gone for a while
-- has left the waiting room (app.LeftAfter) and is not counted ahead of
-- others nor alerted about; NULL for a visit no page has followed.
ALTER TABLE visits ADD COLUMN seen_at BIGINT;
-- The sweep that announces who has just left reads the waiting walk-ins
-- by the time they were last seen.
CREATE INDEX visits_waiting_seen ON visits (seen_at) WHERE seen_at IS NOT NULL AND status = 10 AND provider_id = 0;

-- +goose Down
DROP INDEX visits_waiting_seen;
ALTER TABLE visits DROP COLUMN seen_at;
