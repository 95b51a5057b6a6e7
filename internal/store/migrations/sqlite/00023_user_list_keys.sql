-- +goose Up
-- Keyset pages of GET /users (store.UserFilter.After): the clinic's users in
-- id order, by full name and by creation are each read in the order of one
-- of these indexes, so a page reads its own rows and sorts nothing however
-- many patients the clinic has. The other sort columns sort the matching
-- rows (documented in openapi.yaml).
CREATE INDEX users_account_id ON users (account_id, id);
CREATE INDEX users_account_full_name ON users (account_id, (lower(trim(first_name || ' ' || last_name))), id);
CREATE INDEX users_account_created ON users (account_id, created, id);

-- +goose Down
DROP INDEX users_account_created;
DROP INDEX users_account_full_name;
DROP INDEX users_account_id;
