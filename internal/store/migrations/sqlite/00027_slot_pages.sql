-- +goose Up
-- The slot lists page by (start, id) (store.SlotFilter.After): with the id
-- in the index, a page is read in the index's order on both engines, where
-- PostgreSQL sorted the slots sharing a start.
CREATE INDEX slots_account_start_id ON slots (account_id, starts_at, id);
DROP INDEX slots_account_start;

-- +goose Down
CREATE INDEX slots_account_start ON slots (account_id, starts_at);
DROP INDEX slots_account_start_id;
