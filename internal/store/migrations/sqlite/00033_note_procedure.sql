-- +goose Up
-- The service a visit's note bills (a code of the clinic's procedure
-- list: HCPCS built in, CPT where the clinic loads its licensed list),
-- which signing makes the visit's first procedure; '' for none.
ALTER TABLE visit_notes ADD COLUMN procedure TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE visit_notes DROP COLUMN procedure;
