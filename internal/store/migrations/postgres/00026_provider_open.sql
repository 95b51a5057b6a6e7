-- +goose Up
-- A provider's open visits (pending, confirmed, in progress) by start:
-- their dashboard reads these, and through the provider's index it read
-- every visit they ever had to find them (store.ProviderOpenVisits). Only
-- open visits are in it, so it stays as small as a provider's day.
CREATE INDEX visits_provider_open ON visits (account_id, provider_id, starts_at, id) WHERE status IN (10, 20, 25);

-- +goose Down
DROP INDEX visits_provider_open;
