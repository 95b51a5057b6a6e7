-- +goose Up
-- A cancelled visit's outcome, when it is one a clinic counts apart:
-- no_show (the patient did not come) or late_cancel (cancelled inside the
-- room's window); '' for any other. The status stays 40 (the spec's
-- codes are the contract); this says which kind of 40 it is.
ALTER TABLE visits ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
-- The no-show sweep reads the booked visits not yet started by their
-- start time.
CREATE INDEX visits_booked_unstarted ON visits (starts_at) WHERE kind = 'appointment' AND status IN (10, 20);
-- A provider's dashboard lists the day's no-shows and late cancellations.
CREATE INDEX visits_provider_outcome ON visits (account_id, provider_id, starts_at) WHERE outcome <> '';
-- An invoice is a visit's price ('visit') or a fee of the clinic's
-- policy ('no_show_fee', 'late_cancel_fee'). An intake has one visit
-- invoice that did not fail, and a visit one fee of each kind: the
-- indexes make a repeated charge write nothing.
ALTER TABLE invoices ADD COLUMN kind TEXT NOT NULL DEFAULT 'visit';
DROP INDEX invoices_one_per_intake;
CREATE UNIQUE INDEX invoices_one_per_intake ON invoices (account_id, intake_id) WHERE status <> 'failed' AND kind = 'visit';
CREATE UNIQUE INDEX invoices_one_fee ON invoices (account_id, visit_id, kind) WHERE status <> 'failed' AND kind <> 'visit';

-- +goose Down
DROP INDEX invoices_one_fee;
DROP INDEX invoices_one_per_intake;
DELETE FROM invoices WHERE kind <> 'visit';
CREATE UNIQUE INDEX invoices_one_per_intake ON invoices (account_id, intake_id) WHERE status <> 'failed';
ALTER TABLE invoices DROP COLUMN kind;
DROP INDEX visits_provider_outcome;
DROP INDEX visits_booked_unstarted;
ALTER TABLE visits DROP COLUMN outcome;
