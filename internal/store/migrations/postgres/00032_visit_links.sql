-- +goose Up
-- A token may open one visit only: the link an email carries (kind
-- visitlink, single use) and the portal session it starts (an access
-- token that reads that visit and nothing else). NULL for every other
-- token.
ALTER TABLE tokens ADD COLUMN visit_id BIGINT;
CREATE INDEX tokens_visit ON tokens (visit_id) WHERE visit_id IS NOT NULL;

-- +goose Down
DROP INDEX tokens_visit;
ALTER TABLE tokens DROP COLUMN visit_id;
