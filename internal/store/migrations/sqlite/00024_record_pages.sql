-- +goose Up
-- A page of a patient's device readings newest first (FHIR's Observation
-- search, store.ReadingsWindow) is read in this index's order, and their
-- count from it alone, so a page does not read the patient's other
-- readings.
CREATE INDEX health_readings_user_time ON health_readings (account_id, user_id, time, id);

-- +goose Down
DROP INDEX health_readings_user_time;
