-- +goose Up
-- The ICD-10-CM releases loaded with `teleclinic codes import` (or the
-- admin's upload): the server's, not a clinic's, since the code set is
-- public and the same for every clinic. One release is current; earlier
-- ones stay, so a code a new year retired keeps its description on the
-- notes and claims that hold it.
CREATE TABLE dx_releases (
    year       TEXT PRIMARY KEY,
    codes      INTEGER NOT NULL,
    billable   INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    loaded     INTEGER NOT NULL,
    loaded_by  TEXT NOT NULL,
    is_current INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX dx_releases_one_current ON dx_releases (is_current) WHERE is_current = 1;
CREATE TABLE dx_codes (
    year        TEXT NOT NULL REFERENCES dx_releases (year),
    code        TEXT NOT NULL,
    billable    INTEGER NOT NULL,
    short       TEXT NOT NULL,
    description TEXT NOT NULL,
    PRIMARY KEY (year, code)
);

-- +goose Down
DROP TABLE dx_codes;
DROP TABLE dx_releases;
