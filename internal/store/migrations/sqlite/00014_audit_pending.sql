-- +goose Up
-- The pending audit entries (seq -1: a PostgreSQL message post's, chained
-- later): the background pass finds the clinics that have some without
-- reading the whole trail.
CREATE INDEX audit_pending ON audit (account_id) WHERE seq = -1;

-- +goose Down
DROP INDEX audit_pending;
