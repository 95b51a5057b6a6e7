-- +goose Up
-- A signed note binds the hash of what was signed (clinic.VisitNote's
-- ContentHash: its sections, diagnoses, service, summary, author, signer
-- and time), so a change to the row after signing shows.
ALTER TABLE visit_notes ADD COLUMN signed_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE visit_notes DROP COLUMN signed_hash;
