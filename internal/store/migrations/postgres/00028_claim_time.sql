-- +goose Up
-- The claims report reads a date range of visits by when they took place
-- (store.claimWhen: started, else scheduled, else created), then id. On
-- this expression the range is a range of the index, read in its order,
-- where it read every visit of the clinic and sorted them.
CREATE INDEX visits_claim_time ON visits (account_id, (CASE WHEN COALESCE(actual_start, 0) > 0 THEN actual_start WHEN starts_at > 0 THEN starts_at ELSE created END), id);

-- +goose Down
DROP INDEX visits_claim_time;
