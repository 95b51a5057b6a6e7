-- +goose Up
-- Keyset lists (store.ListVisits): each way the visits are listed — the
-- clinic's, a patient's, a provider's, a room's — is read in the order of
-- one of these indexes, newest id first, so a page reads its own rows and
-- sorts nothing, at a thousand visits or a hundred thousand. They replace
-- the (account_id, member_id) and (account_id, provider_id) indexes, which
-- left PostgreSQL to sort every visit of the patient or provider.
DROP INDEX visits_account_member;
DROP INDEX visits_account_provider;
CREATE INDEX visits_account_id ON visits (account_id, id);
CREATE INDEX visits_account_member_id ON visits (account_id, member_id, id);
CREATE INDEX visits_account_provider_id ON visits (account_id, provider_id, id);
CREATE INDEX visits_account_room_id ON visits (account_id, room_id, id);
-- A room's unassigned visits (a provider's list shows those of their rooms).
CREATE INDEX visits_room_unassigned ON visits (account_id, room_id, id) WHERE provider_id = 0;

-- The audit trail, newest first by (created, id), paged by keyset after
-- an entry (store.AuditFilter.After).
DROP INDEX audit_account_created;
CREATE INDEX audit_account_created_id ON audit (account_id, created, id);

-- +goose Down
DROP INDEX audit_account_created_id;
CREATE INDEX audit_account_created ON audit (account_id, created);
DROP INDEX visits_room_unassigned;
DROP INDEX visits_account_room_id;
DROP INDEX visits_account_provider_id;
DROP INDEX visits_account_member_id;
DROP INDEX visits_account_id;
CREATE INDEX visits_account_member ON visits (account_id, member_id);
CREATE INDEX visits_account_provider ON visits (account_id, provider_id);
